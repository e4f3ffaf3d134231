//! Compiles the guests to Wasm with a nested `cargo build`, so that building the workspace builds
//! them too (no manual step). Their bytes and paths are exposed by `src/lib.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Guest {
    /// Name of the constant prefix in the generated code.
    name: &'static str,
    package: &'static str,
    target: &'static str,
    /// Which target of the package: `--lib` or `--bin NAME`.
    select: &'static [&'static str],
    /// The file cargo writes under `<target>/guest/`.
    file: &'static str,
    /// Cargo features of the package to build with.
    features: &'static [&'static str],
    /// Whether the package's default features are on too.
    default_features: bool,
    rustflags: &'static [&'static str],
    /// A target directory of its own (under `target/guests/`), or none for the shared one. The
    /// hostile guest needs one: it links the other guests' glue without their exports, and a
    /// cdylib's file carries no hash, so building it beside them would overwrite theirs.
    own_target_dir: Option<&'static str>,
    /// Whether the core module cargo writes is made a component here (by wit-component, from the
    /// WIT its bindings embed), as wasm32-wasip2's linker does for a std program.
    componentize: bool,
}

const GUESTS: &[Guest] = &[
    Guest {
        name: "CORE",
        package: "wasmlab-guest-core",
        target: "wasm32-unknown-unknown",
        select: &["--lib"],
        file: "wasmlab_guest_core.wasm",
        features: &[],
        default_features: true,
        // A small stack keeps the per-request instance small (pooling resets what was touched).
        rustflags: &["-Clink-arg=-zstack-size=16384"],
        own_target_dir: None,
        componentize: false,
    },
    Guest {
        name: "COMMAND",
        package: "wasmlab-guest-command",
        target: "wasm32-wasip1",
        select: &["--bin", "wasmlab-guest-command"],
        file: "wasmlab-guest-command.wasm",
        features: &[],
        default_features: true,
        // Default stack: this is the gateway study's guest as it built it.
        rustflags: &[],
        own_target_dir: None,
        componentize: false,
    },
    Guest {
        name: "PIPE",
        package: "wasmlab-guest-command",
        target: "wasm32-wasip1",
        select: &["--bin", "wasmlab-guest-pipe"],
        file: "wasmlab-guest-pipe.wasm",
        features: &[],
        default_features: true,
        // For engines' CLIs: imports only WASI; the host's capabilities over stdin and stdout.
        rustflags: &[],
        own_target_dir: None,
        componentize: false,
    },
    // The handlers as a wasi:http/proxy component. Built for wasm32-unknown-unknown and made a
    // component here rather than built for wasm32-wasip2, whose std links wasi-libc: that adds
    // 20 imports (stdio, terminals, environment, exit) which every instance resolves and the
    // handlers never call (docs/pooled-cost.md, "A leaner component").
    Guest {
        name: "HTTP",
        package: "wasmlab-guest-http",
        target: "wasm32-unknown-unknown",
        select: &["--lib"],
        file: "wasmlab_guest_http.wasm",
        features: &[],
        default_features: true,
        // As the core guest, a small stack: its memory starts at one 64 KiB page, all of which the
        // pooling allocator resets by memset (a 1 MiB default stack would put the top of the
        // stack, where every call starts, a megabyte above the data).
        rustflags: &["-Clink-arg=-zstack-size=16384"],
        own_target_dir: None,
        componentize: true,
    },
    // The same handlers as a WASI 0.3 component (wasi:http/service, async): a host may serve many
    // requests in one instance, as `wasmtime serve` does for such components. Its own target
    // directory: the same package and file as HTTP's, with other features.
    Guest {
        name: "HTTP_P3",
        package: "wasmlab-guest-http",
        target: "wasm32-unknown-unknown",
        select: &["--lib"],
        file: "wasmlab_guest_http.wasm",
        features: &["p3", "handler-exports"],
        default_features: false,
        rustflags: &["-Clink-arg=-zstack-size=16384"],
        own_target_dir: Some("p3"),
        componentize: true,
    },
    // The handlers as a proxy-wasm HTTP filter, for Envoy's Wasm runtimes. No WASI: the
    // proxy-wasm ABI's own imports only, which every runtime Envoy embeds gives.
    Guest {
        name: "PROXY_WASM",
        package: "wasmlab-guest-proxy-wasm",
        target: "wasm32-unknown-unknown",
        select: &["--lib"],
        file: "wasmlab_guest_proxy_wasm.wasm",
        features: &[],
        default_features: true,
        rustflags: &[],
        own_target_dir: None,
        componentize: false,
    },
    // The misbehaving guest of the hardening tests, in both shapes.
    Guest {
        name: "HOSTILE_CORE",
        package: "wasmlab-guest-hostile",
        target: "wasm32-unknown-unknown",
        select: &["--lib"],
        file: "wasmlab_guest_hostile.wasm",
        features: &[],
        default_features: true,
        rustflags: &[],
        own_target_dir: Some("hostile"),
        componentize: false,
    },
    Guest {
        name: "HOSTILE_COMMAND",
        package: "wasmlab-guest-hostile",
        target: "wasm32-wasip1",
        select: &["--bin", "wasmlab-guest-hostile"],
        file: "wasmlab-guest-hostile.wasm",
        features: &[],
        default_features: true,
        rustflags: &[],
        own_target_dir: Some("hostile"),
        componentize: false,
    },
    // The same as a WASI 0.3 component, for the executor that reuses instances. Its own target
    // directory: the same target and file as HOSTILE_CORE's, with other features.
    Guest {
        name: "HOSTILE_HTTP_P3",
        package: "wasmlab-guest-hostile",
        target: "wasm32-unknown-unknown",
        select: &["--lib"],
        file: "wasmlab_guest_hostile.wasm",
        features: &["component-p3"],
        default_features: true,
        rustflags: &["-Clink-arg=-zstack-size=16384"],
        own_target_dir: Some("hostile-p3"),
        componentize: true,
    },
    Guest {
        name: "HOSTILE_HTTP",
        package: "wasmlab-guest-hostile",
        target: "wasm32-wasip2",
        select: &["--lib"],
        file: "wasmlab_guest_hostile.wasm",
        features: &["component"],
        default_features: true,
        rustflags: &["-Clink-arg=-zstack-size=16384"],
        own_target_dir: Some("hostile"),
        componentize: false,
    },
];

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let workspace = manifest_dir
        .ancestors()
        .nth(2)
        .expect("crates/<name>")
        .to_path_buf();
    let out_dir = PathBuf::from(env("OUT_DIR"));
    // Shared by debug and release builds of the workspace, apart from the outer target dir's lock.
    let target_dir = workspace.join("target").join("guests");

    for dir in [
        "handlers",
        "guest-abi",
        "guest-core",
        "guest-command",
        "guest-http",
        "guest-hostile",
        "guest-proxy-wasm",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join("crates").join(dir).display()
        );
    }
    println!(
        "cargo:rerun-if-changed={}",
        workspace.join("Cargo.lock").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        workspace.join("Cargo.toml").display()
    );

    let mut code = String::new();
    for g in GUESTS {
        ensure_target(g.target);
        let target_dir = match g.own_target_dir {
            Some(dir) => target_dir.join(dir),
            None => target_dir.clone(),
        };
        build(&workspace, &target_dir, g);
        let built = target_dir.join(g.target).join("guest").join(g.file);
        // Named by the guest, not the file: two guests may be files of the same name.
        let dest = out_dir.join(format!("{}.wasm", g.name.to_lowercase()));
        if g.componentize {
            let module =
                std::fs::read(&built).unwrap_or_else(|e| panic!("read {}: {e}", built.display()));
            let component = wit_component::ComponentEncoder::default()
                .module(&module)
                .and_then(|encoder| encoder.validate(true).encode())
                .unwrap_or_else(|e| panic!("make a component of {}: {e:#}", built.display()));
            std::fs::write(&dest, component)
                .unwrap_or_else(|e| panic!("write {}: {e}", dest.display()));
        } else {
            std::fs::copy(&built, &dest)
                .unwrap_or_else(|e| panic!("copy {} to {}: {e}", built.display(), dest.display()));
        }
        code += &format!(
            "/// Path of the `{pkg}` guest ({target}) as built.\n\
             pub const {n}_PATH: &str = {path:?};\n\
             /// Bytes of the `{pkg}` guest ({target}).\n\
             pub static {n}: &[u8] = include_bytes!({path:?});\n",
            pkg = g.package,
            target = g.target,
            n = g.name,
            path = dest.display().to_string(),
        );
    }
    std::fs::write(out_dir.join("artifacts.rs"), code).expect("write artifacts.rs");
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("{key} is set by cargo"))
}

fn build(workspace: &Path, target_dir: &Path, g: &Guest) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace)
        .args([
            "build",
            "--profile",
            "guest",
            "--package",
            g.package,
            "--target",
            g.target,
        ])
        .args(g.select)
        .args((!g.default_features).then_some("--no-default-features"))
        .args(if g.features.is_empty() {
            Vec::new()
        } else {
            vec!["--features".to_owned(), g.features.join(",")]
        })
        .arg("--target-dir")
        .arg(target_dir)
        // The outer build's flags are for the host target, not for the guests.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env("CARGO_ENCODED_RUSTFLAGS", g.rustflags.join("\x1f"));
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("run cargo to build guest {}: {e}", g.package));
    assert!(
        status.success(),
        "building guest {} for {} failed",
        g.package,
        g.target
    );
}

/// rustup installs the targets listed in rust-toolchain.toml when it installs the toolchain, but not
/// when the toolchain was already there: add a missing one here.
fn ensure_target(target: &str) {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let installed = sysroot.as_deref().is_some_and(|s| {
        Path::new(s)
            .join("lib/rustlib")
            .join(target)
            .join("lib")
            .is_dir()
    });
    if installed {
        return;
    }
    let mut add = Command::new("rustup");
    add.args(["target", "add", target]);
    if let Ok(tc) = std::env::var("RUSTUP_TOOLCHAIN") {
        add.args(["--toolchain", &tc]);
    }
    match add.status() {
        Ok(s) if s.success() => {}
        _ => panic!(
            "the Rust target {target} is missing and `rustup target add {target}` failed: install it by hand"
        ),
    }
}
