//! Every engine runner a program variant names, held to docs/engines.md's protocol through the
//! variant's own command line: a `proc_exit` status is the exit status (its low 8 bits) with the
//! phases written; a trap is 70 with no phases file; a module the runner cannot read is 71; no
//! `--phases` is a usage error (2); `--version` prints one line. Runners not installed here
//! (`wasmlab setup` builds them) are reported as skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// A WASI command whose `_start` calls `proc_exit(status)`.
fn exiting(status: i32) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(module
          (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
          (memory (export "memory") 1)
          (func (export "_start") (call $exit (i32.const {status}))))"#
    ))
    .unwrap()
}

/// The program variants that run a Wasm module in a runner: (name, command template).
fn runner_variants() -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(workspace().join("variants")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let spec: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Some(program) = spec.get("program").and_then(|p| p.as_table()) else {
            continue;
        };
        if program.get("build").and_then(|b| b.as_str()) != Some("wasm") {
            continue;
        }
        let command = program["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect();
        out.push((spec["name"].as_str().unwrap().to_owned(), command));
    }
    out.sort();
    out
}

/// Where a `{tool:NAME}` is: the project's tools directory, else PATH.
fn find_tool(name: &str) -> Option<PathBuf> {
    let local = support::tools_dir().join("bin").join(name);
    if local.exists() {
        return Some(local);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The variant's command with its placeholders filled in, or why its tool is missing.
fn command_line(template: &[String], module: &Path, phases: &Path) -> Result<Vec<String>, String> {
    template
        .iter()
        .map(|arg| {
            if let Some(tool) = arg.strip_prefix("{tool:").and_then(|t| t.strip_suffix('}')) {
                return find_tool(tool)
                    .map(|p| p.display().to_string())
                    .ok_or_else(|| format!("{tool} is not installed"));
            }
            Ok(arg
                .replace("{workspace}", &workspace().display().to_string())
                .replace("{phases}", &phases.display().to_string())
                .replace("{module}", &module.display().to_string()))
        })
        .collect()
}

struct Ran {
    status: Option<i32>,
    stdout: String,
    stderr: String,
    phases: Option<String>,
}

fn run(argv: &[String], dir: &Path, phases: &Path) -> Ran {
    let _ = std::fs::remove_file(phases);
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(dir)
        .output()
        .unwrap();
    Ran {
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        phases: std::fs::read_to_string(phases).ok(),
    }
}

fn assert_phases(name: &str, case: &str, ran: &Ran) {
    let text = ran
        .phases
        .as_deref()
        .unwrap_or_else(|| panic!("{name} {case}: no phases file; stderr: {}", ran.stderr));
    let json: serde_json::Value = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("{name} {case}: phases file {text:?}: {e}"));
    for key in ["compile_ns", "instantiate_ns", "execute_ns"] {
        assert!(
            json[key].is_u64(),
            "{name} {case}: {key} is not a count of ns in {text}"
        );
    }
}

/// The modules every runner is tried on.
struct Modules {
    exit3: PathBuf,
    exit300: PathBuf,
    trap: PathBuf,
    unreadable: PathBuf,
}

#[test]
fn every_installed_runner_follows_the_protocol_on_exits_traps_and_bad_invocations() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let phases = dir.join("phases.json");
    let module = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let modules = Modules {
        exit3: module("exit3.wasm", &exiting(3)),
        exit300: module("exit300.wasm", &exiting(300)),
        trap: module(
            "trap.wasm",
            &wat::parse_str(
                r#"(module (memory (export "memory") 1) (func (export "_start") unreachable))"#,
            )
            .unwrap(),
        ),
        unreadable: dir.join("no-such-module.wasm"),
    };
    let variants = runner_variants();
    assert!(
        variants.len() >= 10,
        "the program variants were not found: {variants:?}"
    );
    let (mut checked, mut missing) = (Vec::new(), Vec::new());
    for (name, template) in &variants {
        match check_runner(name, template, &modules, dir, &phases) {
            Ok(()) => checked.push(name.as_str()),
            Err(why) => missing.push(format!("{name} ({why})")),
        }
    }
    if !missing.is_empty() {
        support::skipped(&format!(
            "{} of {} runners not checked, not installed here (`wasmlab setup NAME` builds one): {}; checked: {}",
            missing.len(),
            variants.len(),
            missing.join(", "),
            checked.join(", ")
        ));
    }
    assert!(
        !checked.is_empty() || std::env::var_os(wasmlab_test_support::NO_SKIP_VAR).is_none(),
        "no runner checked"
    );
}

/// Holds one runner to the protocol through its variant's command `template`; Err when its tool
/// is not installed here.
fn check_runner(
    name: &str,
    template: &[String],
    m: &Modules,
    dir: &Path,
    phases: &Path,
) -> Result<(), String> {
    let line = |module: &Path| command_line(template, module, phases);
    let argv = line(&m.exit3)?;

    let ran = run(&argv, dir, phases);
    assert_eq!(ran.status, Some(3), "{name} exit(3): {}", ran.stderr);
    assert_phases(name, "exit(3)", &ran);

    let ran = run(&line(&m.exit300)?, dir, phases);
    assert_eq!(
        ran.status,
        Some(300 & 0xff),
        "{name} exit(300) keeps the low 8 bits, as for a native program: {}",
        ran.stderr
    );
    assert_phases(name, "exit(300)", &ran);

    let ran = run(&line(&m.trap)?, dir, phases);
    assert_eq!(ran.status, Some(70), "{name} trap: {}", ran.stderr);
    assert!(ran.phases.is_none(), "{name} wrote phases for a trap");
    assert!(!ran.stderr.is_empty(), "{name} trapped without a word");

    let ran = run(&line(&m.unreadable)?, dir, phases);
    assert_eq!(
        ran.status,
        Some(71),
        "{name} unreadable module: {}",
        ran.stderr
    );
    check_invocations(name, &argv, dir, phases);
    Ok(())
}

/// The runner's command without `--phases FILE` is a usage error; `--version` in place of every
/// option prints one line, "ENGINE VERSION" (and what built it).
fn check_invocations(name: &str, argv: &[String], dir: &Path, phases: &Path) {
    let at = argv.iter().position(|a| a == "--phases").unwrap();
    let mut no_phases = argv.to_vec();
    no_phases.drain(at..at + 2);
    let ran = run(&no_phases, dir, phases);
    assert_eq!(
        ran.status,
        Some(2),
        "{name} without --phases: {}",
        ran.stderr
    );
    let options = argv
        .iter()
        .position(|a| ["--config", "--cache", "--phases"].contains(&a.as_str()))
        .unwrap();
    let mut version = argv[..options].to_vec();
    version.push("--version".into());
    let ran = run(&version, dir, phases);
    assert_eq!(ran.status, Some(0), "{name} --version: {}", ran.stderr);
    assert_eq!(
        ran.stdout.lines().count(),
        1,
        "{name} --version: {:?}",
        ran.stdout
    );
    assert!(
        ran.stdout.split_whitespace().count() >= 2,
        "{name} --version does not start `ENGINE VERSION`: {:?}",
        ran.stdout
    );
}
