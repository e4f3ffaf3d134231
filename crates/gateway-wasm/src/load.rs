//! How every executor is made from its guest, the same way for each: from Wasm (compiled in
//! this process), from a file precompiled for it (mapped, not read), or precompiled to such a
//! file. An executor implements [`Load`]; the gateway serves any `Load` one way (`main.rs`), so
//! a new executor is its own file and one line there.

use std::path::Path;
use std::sync::Arc;

use wasmlab_gateway::{Capabilities, Executor};
use wasmtime::{Engine, Module};

use crate::limits::{GuestCalls, GuestLimits};

/// A guest as the gateway is given it.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// Wasm, compiled when the executor is made.
    #[cfg(feature = "compiler")]
    Wasm(&'a [u8]),
    /// A file [`Load::precompile`] wrote for this executor (a `.cwasm`).
    Precompiled(&'a Path),
}

/// How an executor is made.
pub trait Load: Executor + Sized {
    /// What it is made with besides its guest, its capabilities and its limits.
    type Options: Send + 'static;

    /// How it calls a core guest unless `--guest-calls` says otherwise; `None` for an executor
    /// that always calls async (WASI's imports wait), which takes no `--guest-calls`.
    const DEFAULT_CALLS: Option<GuestCalls>;

    /// Why it runs no precompiled guest, for one that compiles its Wasm at every start.
    const COMPILES_AT_START: Option<&'static str> = None;

    /// The executor for `source`.
    ///
    /// # Safety
    /// A [`Source::Precompiled`] file must be one [`Load::precompile`] wrote (of any trusted
    /// build): Wasmtime checks that its version and settings match, but trusts the machine code
    /// inside.
    unsafe fn load(
        source: Source<'_>,
        options: Self::Options,
        caps: Arc<Capabilities>,
        limits: GuestLimits,
    ) -> anyhow::Result<Self>;

    /// `wasm` compiled ahead of time with the settings the executor runs it with.
    #[cfg(feature = "compiler")]
    fn precompile(
        wasm: &[u8],
        options: &Self::Options,
        limits: GuestLimits,
    ) -> anyhow::Result<Vec<u8>>;

    /// The last check before it serves, inside the runtime that will serve it.
    fn ready(self) -> impl Future<Output = anyhow::Result<Self>> + Send {
        async { Ok(self) }
    }
}

/// The core module `source` holds, for `engine`.
///
/// # Safety
/// As [`Load::load`].
pub(crate) unsafe fn core_module(engine: &Engine, source: Source<'_>) -> anyhow::Result<Module> {
    Ok(match source {
        #[cfg(feature = "compiler")]
        Source::Wasm(wasm) => Module::new(engine, wasm)?,
        // SAFETY: passed on to the caller.
        Source::Precompiled(path) => unsafe { Module::deserialize_file(engine, path)? },
    })
}
