//! Thresholds that fail a pipeline, as k6's: `wasmlab load --fail-if` and a suite's
//! `[[threshold]]` tables, crossed and not, with their exit codes (99 crossed, 1 when nothing
//! succeeded, 2 for a malformed threshold), every result written first.

use crate::support;

use support::*;

#[test]
fn load_fails_if_a_threshold_holds_and_when_nothing_succeeds() {
    let up = Listening::upstream();
    let url = format!("{}/x", up.url);
    let load = |extra: &[&str]| {
        let mut args = vec!["load", &url, "-c", "2", "-n", "200"];
        args.extend_from_slice(extra);
        wasmlab(&args)
    };
    let out = load(&["--fail-if", "errors>0", "--fail-if", "p99 > 10s"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = load(&[
        "--fail-if",
        "errors>1%",
        "--fail-if",
        "rps<1000000000",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{stderr}");
    assert!(
        stderr.contains("threshold crossed: rps<1000000000 (measured rps "),
        "{stderr}"
    );
    assert!(!stderr.contains("errors>1%"), "{stderr}");
    // The report is printed before the verdict.
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["responses"], 200);

    // Nothing listens: every request fails, and that is never a success.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let out = wasmlab(&["load", &dead, "-c", "1", "-d", "200ms"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no request succeeded (connect to"),
        "{stderr}"
    );

    let out = load(&["--fail-if", "p99>>5ms"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("threshold \"p99>>5ms\""), "{stderr}");
    assert!(stderr.contains("METRIC OP VALUE"), "{stderr}");
}

const SUITE: &str = r#"name = "gated"
variants = ["native"]
workloads = ["hello", "echo"]
connections = [2]
duration_secs = 0.2

[warm]
duration_secs = 0.2
workloads = ["hello"]
"#;

#[test]
fn a_suite_threshold_crossed_exits_99_after_every_result_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = format!(
        "{SUITE}
[[threshold]]
fail_if = [\"errors>0\", \"p99>10s\"]

[[threshold]]
workloads = [\"hello\"]
cells = [\"throughput\"]
fail_if = [\"rps<1000000000\"]
"
    );
    let (out, results) = run_suite(tmp.path(), &suite, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{stderr}");
    assert!(stderr.contains("thresholds crossed:"), "{stderr}");
    assert!(
        stderr.contains("native hello c=2 (run 1): rps<1000000000 (measured rps "),
        "{stderr}"
    );
    // Only the rule's cells: not echo, not the warm cell.
    assert_eq!(
        stderr.matches("rps<1000000000 (measured").count(),
        2,
        "{stderr}"
    );
    let dir = only_run_dir(&results);
    assert_report_complete(&dir);
    assert_files_parse(&dir);

    let passing = format!("{SUITE}\n[[threshold]]\nfail_if = [\"errors>0\", \"p99>10s\"]\n");
    let (out, _) = run_suite(tmp.path(), &passing, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("thresholds: none of 2 crossed"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn malformed_suite_thresholds_are_refused_before_anything_starts() {
    let tmp = tempfile::tempdir().unwrap();
    for (rule, want) in [
        ("fail_if = [\"p99>>1\"]", "threshold \"p99>>1\""),
        ("fail_if = []", "`fail_if` is empty"),
        (
            "fail_if = [\"errors>0\"]\nvariants = [\"wasmtime-pooled\"]",
            "variant \"wasmtime-pooled\" is not one the suite measures",
        ),
        (
            "fail_if = [\"errors>0\"]\ncells = [\"cold_start\"]",
            "not cold starts",
        ),
    ] {
        let (out, results) = run_suite(
            tmp.path(),
            &format!("{SUITE}\n[[threshold]]\n{rule}\n"),
            &[],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{rule}: {stderr}");
        assert!(stderr.contains(want), "{rule}: {stderr}");
        assert!(!results.exists());
    }
}

/// `wasmlab run --baseline DIR`: a wrong baseline is refused before anything is measured; `last`
/// with no run before gates against none and says so, and the next run's `last` is that run: the
/// run ends by comparing its headline with it under the gates (here one no figure can cross);
/// `--gate` needs `--baseline`.
#[test]
fn a_run_is_gated_against_its_baseline_at_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = r#"name = "gated"
variants = ["native", "wasmtime-pooled"]
workloads = ["hello"]
connections = [2]
duration_secs = 0.2
warmup_secs = 0.05
repetitions = 2

[equal_load]
rates = [300]
duration_secs = 0.2
warmup_secs = 0.05
connections = 2
"#;
    let started = std::time::Instant::now();
    let missing = tmp.path().join("no-such-run");
    let (out, _) = run_suite(
        tmp.path(),
        suite,
        &["--baseline", missing.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--baseline: "), "{stderr}");
    assert!(
        !stderr.contains("results in"),
        "measured before refusing: {stderr}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // `last` with no run before: measured, gated against none, said.
    let (out, results) = run_suite(tmp.path(), suite, &["--baseline", "last"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("--baseline last: no complete gated run on this machine in ")
            && stderr.contains("this run is gated against none"),
        "{stderr}"
    );
    let first = only_run_dir(&results);
    let (out, _) = run_suite(
        tmp.path(),
        suite,
        &["--baseline", "last", "--gate", "any > +100000%"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "--baseline last: {}, the last complete gated run on this machine",
            first.display()
        )),
        "{stderr}"
    );
    assert!(
        stdout.contains(&format!("against the baseline {}", first.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("gates: none of 1 crossed over "),
        "{stdout}"
    );
    assert_fails_with(&["run", "--gate", "any > +10%"], "--baseline");
}
