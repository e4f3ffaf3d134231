//! The environment what the lab measures runs in: the lab's choice, not its caller's.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::process::Command;

/// What a server (and a program engine) is started with of the lab's own environment: where
/// programs are, whose home, locale and time zone, where temporary files and a rootless container
/// engine's runtime files go. Nothing else of the caller's shell reaches what is measured (its
/// `RUST_BACKTRACE=1` made one platform 100 times slower); a variant sets more with `env`.
pub const INHERITED: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "TZ",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
];

/// Gives `cmd` the lab's minimal environment ([`INHERITED`] from the lab's own) under what
/// was set on it already (the variant's and its container engine's), and returns the whole of
/// it, for run.json.
pub fn minimal(cmd: &mut Command) -> BTreeMap<String, String> {
    let set: Vec<(OsString, Option<OsString>)> = cmd
        .get_envs()
        .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
        .collect();
    cmd.env_clear();
    let mut env = BTreeMap::new();
    for k in INHERITED {
        if let Some(v) = std::env::var_os(k) {
            env.insert((*k).to_owned(), v);
        }
    }
    for (k, v) in set {
        let k = k.to_string_lossy().into_owned();
        match v {
            Some(v) => env.insert(k, v),
            None => env.remove(&k),
        };
    }
    cmd.envs(&env);
    env.into_iter()
        .map(|(k, v)| (k, v.to_string_lossy().into_owned()))
        .collect()
}

/// Removes from `cmd`'s environment what cargo sets for the crate it runs or tests (`cargo
/// run`, `cargo test`, whose tests run wasmlab): a cargo started with them takes them for a change
/// of its environment, since build scripts track some (ring's tracks `CARGO_MANIFEST_DIR` and
/// `CARGO_PKG_*`), and rebuilds ring and all that depends on it, as the next build without them
/// does again: minutes each way on 2 cores. For every build the lab starts.
pub fn without_cargo_crate_vars(cmd: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if is_cargo_crate_var(&name.to_string_lossy()) {
            cmd.env_remove(&name);
        }
    }
}

/// Whether `name` is one of the variables cargo sets for a crate it compiles, runs or tests
/// (<https://doc.rust-lang.org/cargo/reference/environment-variables.html>), not one of its
/// configuration (`CARGO_HOME`, `CARGO_TARGET_DIR`, `CARGO_BUILD_*`, …) nor `CARGO` itself.
fn is_cargo_crate_var(name: &str) -> bool {
    ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_"]
        .iter()
        .any(|p| name.starts_with(p))
        || matches!(
            name,
            "CARGO_CRATE_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "CARGO_RUSTC_CURRENT_DIR"
                | "OUT_DIR"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_started_by_the_lab_gets_none_of_the_crate_variables_cargo_set_for_it() {
        // The tests run under cargo, which set them for this process.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
        let mut cmd = Command::new("/usr/bin/env");
        cmd.env("CARGO_TARGET_DIR", "/t");
        without_cargo_crate_vars(&mut cmd);
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        let names: Vec<&str> = out.lines().filter_map(|l| l.split('=').next()).collect();
        for gone in [
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_PKG_NAME",
            "CARGO_CRATE_NAME",
        ] {
            assert!(!names.contains(&gone), "{gone} reached the build: {out}");
        }
        for kept in ["PATH", "CARGO_TARGET_DIR"] {
            assert!(
                names.contains(&kept),
                "{kept} did not reach the build: {out}"
            );
        }
        assert!(is_cargo_crate_var("CARGO_BIN_EXE_wasmlab"));
        for config in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_JOBS",
            "CARGO_INCREMENTAL",
        ] {
            assert!(!is_cargo_crate_var(config), "{config}");
        }
    }

    #[test]
    fn only_the_minimal_environment_and_what_was_set_reach_the_command() {
        let mut cmd = Command::new("/usr/bin/env");
        cmd.env("WASMLAB_SET", "1").env_remove("PATH");
        let env = minimal(&mut cmd);
        assert_eq!(env.get("WASMLAB_SET").map(String::as_str), Some("1"));
        assert!(!env.contains_key("PATH"), "removed by the variant");
        assert!(!env.contains_key("RUST_BACKTRACE"));
        assert!(
            env.keys()
                .all(|k| k == "WASMLAB_SET" || INHERITED.contains(&k.as_str()))
        );
        // What the child sees is exactly that (`env` prints its environment).
        let out = cmd.output().unwrap();
        let seen: BTreeMap<String, String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(seen, env);
    }
}
