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

#[cfg(test)]
mod tests {
    use super::*;

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
