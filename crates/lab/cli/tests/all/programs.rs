//! A program suite end to end on a tiny program set made here: a program checked and timed in two
//! engines (native and Node's WASI), a deliberately wrong .exp that is a failed cell with the
//! diff, a program that traps, and an engine that is missing, reported while the run goes on.

use std::path::Path;
use std::process::Command;

use crate::support;

const WASMLAB: &str = env!("CARGO_BIN_EXE_wasmlab");

/// A WASI command that writes `text` to stdout.
fn printing_module(text: &str) -> Vec<u8> {
    let escaped: String = text.bytes().map(|b| format!("\\{b:02x}")).collect();
    wat::parse_str(format!(
        r#"(module
          (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
          (memory (export "memory") 1)
          (data (i32.const 64) "{escaped}")
          (func (export "_start")
            (i32.store (i32.const 0) (i32.const 64))
            (i32.store (i32.const 4) (i32.const {len}))
            (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 32)))))"#,
        len = text.len()
    ))
    .unwrap()
}

fn write(path: &Path, bytes: &[u8], executable: bool) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// hello: right everywhere; wrong: its .exp is deliberately wrong; trap: traps in Wasm (and
/// exits 3 natively).
fn program_set(dir: &Path) {
    write(&dir.join("programs.txt"), b"hello\nwrong\ntrap\n", false);
    write(&dir.join("exp/hello.exp"), b"hello\n", false);
    write(&dir.join("exp/wrong.exp"), b"not what it prints\n", false);
    write(&dir.join("exp/trap.exp"), b"", false);
    let trap = wat::parse_str(
        r#"(module (memory (export "memory") 1) (func (export "_start") unreachable))"#,
    )
    .unwrap();
    for sub in ["wasm", "wasm-verify"] {
        write(
            &dir.join(sub).join("hello.wasm"),
            &printing_module("hello\n"),
            false,
        );
        write(
            &dir.join(sub).join("wrong.wasm"),
            &printing_module("hello\n"),
            false,
        );
        write(&dir.join(sub).join("trap.wasm"), &trap, false);
    }
    for sub in ["native-portable", "native-portable-verify"] {
        write(
            &dir.join(sub).join("hello"),
            b"#!/bin/sh\necho hello\n",
            true,
        );
        write(
            &dir.join(sub).join("wrong"),
            b"#!/bin/sh\necho hello\n",
            true,
        );
        write(
            &dir.join(sub).join("trap"),
            b"#!/bin/sh\necho oops >&2\nexit 3\n",
            true,
        );
    }
}

fn node_available() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_program_suite_checks_outputs_times_runs_and_reports_failures_and_missing_engines() {
    if !node_available() {
        support::skipped(
            "node is not installed here (apt-get install nodejs): the test needs a second engine",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    program_set(&set);
    let missing = tmp.path().join("missing.toml");
    std::fs::write(
        &missing,
        r#"name = "no-such-engine"
about = "an engine that is not installed"
[[requires]]
tool = "no-such-engine-runner"
hint = "it does not exist"
[program]
build = "wasm"
command = ["{tool:no-such-engine-runner}", "{module}"]
"#,
    )
    .unwrap();
    let suite = tmp.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            r#"kind = "programs"
name = "tiny"
program_set = "{}"
variants = ["native-portable", "node", "no-such-engine"]
baseline = "native-portable"
repetitions = 2
seed = 1
timeout_secs = 30
"#,
            set.display()
        ),
    )
    .unwrap();
    let results = tmp.path().join("results");
    let out = Command::new(WASMLAB)
        .args(["run", "--no-setup", "--suite"])
        .arg(&suite)
        .arg("--variant-file")
        .arg(&missing)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Failed output checks make the run fail, after everything else was measured and written.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("no-such-engine: unavailable here"),
        "{stderr}"
    );
    assert!(stdout.contains("node"), "{stdout}");
    let dir = std::fs::read_dir(&results)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_engines(&dir);
    assert_samples(&dir);
    assert_files_and_report(&dir);
}

/// run.json: the missing engine skipped; each other engine measured, with its two failed
/// programs and why.
fn assert_engines(dir: &Path) {
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    let engine = |name: &str| {
        info["engines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["engine"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(engine("no-such-engine")["status"], "skipped");
    for name in ["native-portable", "node"] {
        let e = engine(name);
        assert_eq!(e["status"], "measured", "{e}");
        let failed: Vec<String> = e["failed_programs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| format!("{} {}", f[0], f[1]))
            .collect();
        assert_eq!(failed.len(), 2, "{failed:?}");
        assert!(
            failed
                .iter()
                .any(|f| f.contains("wrong")
                    && f.contains("output differs from the expected at line 1")),
            "{failed:?}"
        );
        assert!(failed.iter().any(|f| f.contains("trap")), "{failed:?}");
    }
}

/// samples.jsonl: only the program that passed its check was timed, in both engines, each run
/// a success; the runner's phases for Node, none for the native program.
fn assert_samples(dir: &Path) {
    // Only hello was timed: 2 engines x 2 repetitions, each a successful run.
    let samples: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(samples.len(), 4);
    for s in &samples {
        assert_eq!(s["program"], "hello");
        assert_eq!(s["error"], "");
        assert!(s["wall_ms"].as_f64().unwrap() > 0.0);
    }
    // Node's runner reports its phases; the native program has none.
    assert!(
        samples
            .iter()
            .any(|s| s["engine"] == "node" && s["phases"]["compile_ms"].as_f64().is_some())
    );
    assert!(
        samples
            .iter()
            .any(|s| s["engine"] == "native-portable" && s["phases"].is_null())
    );
}

/// programs.csv, report.html with the failed check, and the report rebuilt from the raw files.
fn assert_files_and_report(dir: &Path) {
    let csv = std::fs::read_to_string(dir.join("programs.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "{csv}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("check failed") && html.contains("output differs"),
        "report.html lacks the failed check"
    );
    assert!(html.contains("<svg"), "no chart");
    assert!(!html.contains("<script"), "report.html must be static");
    // The report can be rebuilt from the raw files.
    let again = Command::new(WASMLAB)
        .arg("report")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

#[test]
fn a_server_variant_in_a_program_suite_and_an_engine_in_an_http_suite_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("s.toml");
    std::fs::write(
        &suite,
        "kind = \"programs\"\nname = \"t\"\nprogram_set = \"/nonexistent\"\nvariants = [\"native\"]\nbaseline = \"native\"\n",
    )
    .unwrap();
    let out = Command::new(WASMLAB)
        .args(["run", "--suite"])
        .arg(&suite)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("native is a server variant"));
    let out = Command::new(WASMLAB)
        .args(["run", "--suite", "quick", "--variant", "node", "--no-build"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("node is an engine for program suites"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn self_checking_programs_fail_their_check_with_the_diff_of_what_they_wrote() {
    // As libsodium's `make check` programs: each writes ./NAME.res, compares it with ./NAME.exp
    // and exits 99 when they differ.
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    write(&set.join("programs.txt"), b"good\nbad\n", false);
    write(&set.join("build.json"), br#"{"verify": "self"}"#, false);
    write(&set.join("exp/good.exp"), b"1\n2\n", false);
    write(&set.join("exp/bad.exp"), b"1\n2\n", false);
    for (name, res) in [("good", "1\\n2\\n"), ("bad", "1\\n3\\n")] {
        let script = format!(
            "#!/bin/sh\nprintf '{res}' > {name}.res\ncmp -s {name}.res {name}.exp || exit 99\n"
        );
        for sub in ["native-portable", "native-portable-verify"] {
            write(&set.join(sub).join(name), script.as_bytes(), true);
        }
    }
    let suite = tmp.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "kind = \"programs\"\nname = \"selfcheck\"\nprogram_set = \"{}\"\nvariants = [\"native-portable\"]\nbaseline = \"native-portable\"\nrepetitions = 1\n",
            set.display()
        ),
    )
    .unwrap();
    let results = tmp.path().join("results");
    let out = Command::new(WASMLAB)
        .args(["run", "--suite"])
        .arg(&suite)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = std::fs::read_dir(&results)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    let failed = info["engines"][0]["failed_programs"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0][0], "bad");
    let why = failed[0][1].as_str().unwrap();
    assert!(
        why.contains("at line 2") && why.contains("exit status 99"),
        "{why}"
    );
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    assert_eq!(samples.lines().count(), 1, "only the good program is timed");
}

/// A program suite's run interrupted after some of its runs (its samples cut there, its state
/// not complete, as a kill leaves it) and resumed: the runs it kept stay as they were, the others
/// are run, each once, and the run ends complete with its resumption recorded.
#[test]
fn an_interrupted_program_suite_run_is_resumed() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    program_set(&set);
    let suite = tmp.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "kind = \"programs\"\nname = \"tiny\"\nprogram_set = \"{}\"\nprograms = [\"hello\"]\n\
             variants = [\"native-portable\"]\nbaseline = \"native-portable\"\nrepetitions = 5\n\
             seed = 1\ntimeout_secs = 30\n",
            set.display()
        ),
    )
    .unwrap();
    let results = tmp.path().join("results");
    let out = Command::new(WASMLAB)
        .args(["run", "--no-setup", "--suite"])
        .arg(&suite)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = std::fs::read_dir(&results)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let samples = dir.join("samples.jsonl");
    let whole = std::fs::read_to_string(&samples).unwrap();
    assert_eq!(whole.lines().count(), 5);
    // Interrupted after two runs, with a third cut mid-write.
    let kept: String = whole.lines().take(2).map(|l| format!("{l}\n")).collect();
    let third = whole.lines().nth(2).unwrap();
    std::fs::write(&samples, format!("{kept}{}", &third[..third.len() / 2])).unwrap();
    let run_json = dir.join("run.json");
    let mut run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run_json).unwrap()).unwrap();
    run["state"] = "running".into();
    std::fs::write(&run_json, run.to_string()).unwrap();
    let out = Command::new(WASMLAB)
        .args(["run", "--resume"])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("resuming") && stderr.contains("(2 runs kept)"),
        "{stderr}"
    );
    assert!(stderr.contains("a record cut short, discarded"), "{stderr}");
    let after = std::fs::read_to_string(&samples).unwrap();
    assert!(after.starts_with(&kept), "the kept runs changed");
    let reps: Vec<u64> = after
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["repetition"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let mut sorted = reps.clone();
    sorted.sort();
    assert_eq!(sorted, [0, 1, 2, 3, 4], "{reps:?}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run_json).unwrap()).unwrap();
    assert_eq!(run["state"], "complete");
    assert_eq!(run["resumed"][0]["samples_before"], 2, "{run}");
    assert!(dir.join("programs.csv").is_file());
    for page in ["summary.md", "report.html"] {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        assert!(
            text.contains("This run was interrupted and resumed (at "),
            "{page}"
        );
    }
}
