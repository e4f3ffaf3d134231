//! wasmlab's containerd shim for Wasm: the runtime `io.containerd.wasmlab.v1`.
//!
//! runwasi's `containerd-shim-wasm` does the containerd side (the shim API, the task's lifecycle, the
//! OCI image's Wasm layers, precompiled layers cached in containerd's content store) and runs the
//! workload inside the container with youki's `libcontainer` (namespaces, cgroup, root file system).
//! This file is the engine: Wasmtime, at the version the gateway embeds, running what the image holds:
//!
//! - a WASI preview 2 command component (`wasi:cli/run`), with the network of the container
//!   (`wasi:sockets`): a server that owns its socket, as the `wasm-socket-wasmtime` variant runs it with
//!   `wasmtime run -S inherit-network`;
//! - a WASI preview 1 module, its entry point `_start` or the function after `#` in the entry point.
//!
//! The container's arguments are the program's (the entry point first, as `argv[0]`), its environment
//! the program's, its stdio the task's, and its root directory is preopened as `/`.
//! Exit status: the program's `exit` code, 0 when it returns, 1 when `wasi:cli/run` returns an error;
//! runwasi reports 137 when this returns an error (a trap, a module it cannot compile or link).

use std::hash::Hash;

use anyhow::{Context, Result, bail};
use containerd_shim_wasm::sandbox::Sandbox;
use containerd_shim_wasm::sandbox::context::{RuntimeContext, WasmBinaryType, WasmLayer};
use containerd_shim_wasm::shim::{Cli, Compiler, Config as ShimConfig, Shim, Version};
use wasmtime::component::{Component, Linker as ComponentLinker, ResourceTable};
use wasmtime::{Config, Engine, Linker, Module, Precompiled, Store};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::bindings::Command;
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// What `--version` prints; the lab checks that it names the Wasmtime the gateway embeds.
const VERSION: &str = concat!(
    "containerd-shim-wasmlab-v1 ",
    env!("CARGO_PKG_VERSION"),
    " (wasmtime ",
    env!("WASMLAB_WASMTIME_VERSION"),
    ", containerd-shim-wasm 1.0.1)"
);

struct WasmlabShim;

impl Shim for WasmlabShim {
    type Sandbox = WasmtimeSandbox;

    fn name() -> &'static str {
        "wasmlab"
    }

    fn version() -> Version {
        Version {
            version: env!("CARGO_PKG_VERSION"),
            revision: concat!("wasmtime ", env!("WASMLAB_WASMTIME_VERSION")),
        }
    }

    async fn compiler() -> Option<impl Compiler> {
        match engine() {
            Ok(engine) => Some(WasmtimeCompiler(engine)),
            Err(e) => {
                log::error!("no Wasmtime engine to precompile with: {e:#}");
                None
            }
        }
    }
}

/// The engine's configuration: the `wasmtime` CLI's defaults (Cranelift, parallel compilation).
fn engine() -> Result<Engine> {
    Ok(Engine::new(&Config::new())?)
}

/// Precompiles an image's Wasm layers the first time it runs; runwasi keeps the result in
/// containerd's content store under a label holding `cache_key`, so later containers of the image
/// skip compilation (what runwasi's own Wasmtime shim does).
struct WasmtimeCompiler(Engine);

impl Compiler for WasmtimeCompiler {
    fn cache_key(&self) -> impl Hash {
        // Changes with the Wasmtime version and every setting that makes compiled code incompatible.
        self.0.precompile_compatibility_hash()
    }

    async fn compile(&self, layers: &[WasmLayer]) -> Result<Vec<Option<Vec<u8>>>> {
        layers
            .iter()
            .map(|layer| match WasmBinaryType::from_bytes(&layer.layer) {
                Some(WasmBinaryType::Component) => {
                    Ok(Some(self.0.precompile_component(&layer.layer)?))
                }
                Some(WasmBinaryType::Module) => Ok(Some(self.0.precompile_module(&layer.layer)?)),
                // Not Wasm (a configuration layer): left as it is.
                None => Ok(None),
            })
            .collect()
    }
}

#[derive(Default)]
struct WasmtimeSandbox;

impl Sandbox for WasmtimeSandbox {
    async fn run_wasi(&self, ctx: &impl RuntimeContext) -> Result<i32> {
        let entrypoint = ctx.entrypoint();
        let bytes = entrypoint.source.as_bytes()?;
        let engine = engine()?;
        let program = if entrypoint.source.is_precompiled()? {
            // SAFETY: the bytes are what `WasmtimeCompiler::compile` wrote for this engine's
            // configuration (runwasi keys the cached layer by `cache_key`).
            match Engine::detect_precompiled(&bytes) {
                Some(Precompiled::Component) => {
                    Program::Component(unsafe { Component::deserialize(&engine, &bytes)? })
                }
                Some(Precompiled::Module) => {
                    Program::Module(unsafe { Module::deserialize(&engine, &bytes)? })
                }
                None => bail!("a layer marked precompiled is not Wasmtime's precompiled code"),
            }
        } else {
            match WasmBinaryType::from_bytes(&bytes) {
                Some(WasmBinaryType::Component) => {
                    Program::Component(Component::new(&engine, &bytes)?)
                }
                Some(WasmBinaryType::Module) => Program::Module(Module::new(&engine, &bytes)?),
                None => bail!("the entry point is neither a Wasm module nor a component"),
            }
        };
        let mut wasi = WasiCtxBuilder::new();
        wasi.args(ctx.args())
            .envs(&environment(ctx.envs()))
            .inherit_stdio()
            .inherit_network()
            .allow_tcp(true)
            .allow_udp(true)
            .allow_ip_name_lookup(true)
            .preopened_dir("/", "/", FsPerms::ReadWrite)
            .map_err(anyhow::Error::from)
            .context("preopening the container's root directory")?;
        let outcome = match program {
            Program::Component(component) => run_component(&engine, &component, wasi).await,
            Program::Module(module) => run_module(&engine, &module, wasi, &entrypoint.func).await,
        };
        match outcome {
            Ok(code) => Ok(code),
            Err(e) => match e.downcast_ref::<I32Exit>() {
                Some(exit) => Ok(exit.0),
                None => Err(e),
            },
        }
    }
}

enum Program {
    Component(Component),
    Module(Module),
}

/// `KEY=VALUE` pairs, as the OCI spec gives them, split.
fn environment(envs: &[String]) -> Vec<(String, String)> {
    envs.iter()
        .filter_map(|e| e.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

struct CommandCtx {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for CommandCtx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

async fn run_component(
    engine: &Engine,
    component: &Component,
    mut wasi: WasiCtxBuilder,
) -> Result<i32> {
    let mut linker = ComponentLinker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    let mut store = Store::new(
        engine,
        CommandCtx {
            wasi: wasi.build(),
            table: ResourceTable::new(),
        },
    );
    let command = Command::instantiate_async(&mut store, component, &linker)
        .await
        .map_err(anyhow::Error::from)
        .context("instantiating the component as a wasi:cli command")?;
    match command.wasi_cli_run().call_run(&mut store).await? {
        Ok(()) => Ok(0),
        Err(()) => Ok(1),
    }
}

async fn run_module(
    engine: &Engine,
    module: &Module,
    mut wasi: WasiCtxBuilder,
    func: &str,
) -> Result<i32> {
    let mut linker: Linker<WasiP1Ctx> = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_async(&mut linker, |ctx| ctx)?;
    let mut store = Store::new(engine, wasi.build_p1());
    let instance = linker.instantiate_async(&mut store, module).await?;
    let entry = instance
        .get_typed_func::<(), ()>(&mut store, func)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("the module exports no function `{func}` of type () -> ()"))?;
    entry.call_async(&mut store, ()).await?;
    Ok(0)
}

fn main() {
    // containerd-shimkit's `-v` prints several lines; the lab reads the first of `--version`.
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("{VERSION}");
        return;
    }
    WasmlabShim::run(ShimConfig {
        default_log_level: "info".into(),
        ..Default::default()
    });
}
