//! `--version` names the `wasmtime` crate this shim is built with, as Cargo.lock has it; and a
//! missing system library is named with the package that has it, before the link fails obscurely.

fn main() {
    wasmlab_engine_protocol::emit_locked_version("wasmtime", "WASMLAB_WASMTIME_VERSION");
    // youki's libcontainer (through runwasi) links libseccomp.
    let dirs = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
    ];
    let found = dirs
        .iter()
        .any(|d| std::path::Path::new(d).join("libseccomp.so").exists());
    if !found && std::env::var_os("LIBSECCOMP_LINK_PATH").is_none() {
        panic!(
            "libseccomp's development library (libseccomp.so) is not installed: on Debian, apt-get install libseccomp-dev"
        );
    }
}
