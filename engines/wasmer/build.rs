//! Reads the version of the `wasmer` crate this runner is built with from Cargo.lock (Cargo writes the lock
//! file before it runs build scripts), so that `--version` cannot drift from the embedded engine.

use std::path::Path;
use std::{env, fs};

fn main() {
    let lock = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("Cargo.lock");
    println!("cargo::rerun-if-changed={}", lock.display());
    let text =
        fs::read_to_string(&lock).unwrap_or_else(|e| panic!("cannot read {}: {e}", lock.display()));
    let mut versions = text.split("[[package]]").filter_map(|package| {
        let mut lines = package.lines().map(str::trim);
        lines.find(|l| *l == r#"name = "wasmer""#)?;
        let version = lines
            .next()?
            .strip_prefix("version = \"")?
            .strip_suffix('"')?;
        Some(version.to_owned())
    });
    let version = versions.next().expect("Cargo.lock has no `wasmer` package");
    assert!(
        versions.next().is_none(),
        "Cargo.lock has more than one `wasmer` package"
    );
    println!("cargo::rustc-env=WASMLAB_WASMER_VERSION={version}");
}
