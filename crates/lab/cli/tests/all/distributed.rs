//! Load from several generators, merged exactly: `wasmlab load --out` parts, `wasmlab merge`
//! (percentiles from added histograms, req/s over the common interval, parts that did not run
//! together named and refused under --strict, thresholds on the whole, bad input refused), the
//! Kubernetes Job that runs the parts, and a suite whose cells several generators make.

use crate::support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use support::*;

/// A wall-clock time `secs` from now, as Unix seconds for --start-at.
fn unix_in(secs: f64) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    format!("{:.3}", now.as_secs_f64() + secs)
}

/// Starts `wasmlab load` with `args` (not waited for).
fn spawn_load(args: &[&str]) -> std::process::Child {
    Command::new(WASMLAB)
        .arg("load")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(child: std::process::Child) -> Output {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_owned()
}

fn merge_json(parts: &[&str], extra: &[&str]) -> (Output, serde_json::Value) {
    let out = Command::new(WASMLAB)
        .arg("merge")
        .args(parts)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out, json)
}

#[test]
fn two_generators_started_together_merge_exactly() {
    let upstream = Listening::upstream();
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (path(tmp.path(), "a.json"), path(tmp.path(), "b.json"));
    let at = unix_in(0.7);
    let url = format!("{}/", upstream.url);
    let common = [
        "-c",
        "2",
        "-d",
        "1s",
        "--warm-up",
        "0.1s",
        "--start-at",
        &at,
    ];
    let first = spawn_load(&[&[url.as_str()][..], &common, &["--out", &a]].concat());
    // The second part on stdout (its report then on stderr).
    let second = spawn_load(&[&[url.as_str()][..], &common, &["--out", "-"]].concat());
    let first = finish(first);
    let second = finish(second);
    assert!(String::from_utf8_lossy(&first.stdout).contains("req/s"));
    assert!(String::from_utf8_lossy(&first.stdout).contains("after a 0.10s warm-up (not counted)"));
    assert!(String::from_utf8_lossy(&second.stderr).contains("req/s"));
    std::fs::write(&b, &second.stdout).unwrap();
    assert_eq!(leftover_tmp_files(tmp.path()), 0);

    let parts: Vec<wasmlab_load::Part> = [&a, &b]
        .iter()
        .map(|p| wasmlab_load::Part::read(Path::new(p)).unwrap())
        .collect();
    let (out, m) = merge_json(&[&a, &b], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = &m["report"];
    let responses: u64 = parts.iter().map(|p| p.report.responses).sum();
    assert!(responses > 100, "{responses}");
    assert_eq!(r["responses"], responses);
    assert_eq!(r["generators"], 2);
    assert_eq!(r["warm_up_secs"], 0.1);
    assert_eq!(r["connections"], 4);
    // Every percentile is that of one histogram holding every sample.
    let mut all = wasmlab_load::new_histogram();
    for p in &parts {
        all.add(wasmlab_load::histogram_from_buckets(&p.histograms.latency))
            .unwrap();
    }
    let whole = wasmlab_load::LatencyMs::from_histogram(&all);
    assert_eq!(r["latency_ms"]["p99"].as_f64().unwrap(), whole.p99);
    assert_eq!(r["latency_ms"]["max"].as_f64().unwrap(), whole.max);
    // They ran together: no warning; req/s over their common second is about the sum of theirs.
    assert_eq!(m["warnings"], serde_json::json!([]), "{m}");
    let together = m["common"]["secs"].as_f64().unwrap();
    assert!(together > 0.9, "{together}");
    let own: f64 = parts.iter().map(|p| p.report.rps).sum();
    let merged = r["rps"].as_f64().unwrap();
    assert!((merged / own - 1.0).abs() < 0.1, "merged {merged} vs {own}");
    // The text report says the same.
    let text = wasmlab(&["merge", &a, &b]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("in 2 generators")
            && text.contains("together:")
            && text.contains("after a 0.10s warm-up"),
        "{text}"
    );
}

#[test]
fn parts_that_did_not_run_together_are_named_and_refused_under_strict() {
    let upstream = Listening::upstream();
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (path(tmp.path(), "a.json"), path(tmp.path(), "b.json"));
    let url = format!("{}/", upstream.url);
    // One after the other, the second told a start that has passed: late, and barely together.
    finish(spawn_load(&[&url, "-c", "1", "-d", "0.5s", "--out", &a]));
    let past = unix_in(-1.0);
    let late = finish(spawn_load(&[
        &url,
        "-c",
        "1",
        "-d",
        "0.5s",
        "--start-at",
        &past,
        "--out",
        &b,
    ]));
    assert!(String::from_utf8_lossy(&late.stderr).contains("passed"));
    let (out, m) = merge_json(&[&a, &b], &[]);
    assert!(out.status.success());
    let warnings = m["warnings"].to_string();
    assert!(
        warnings.contains("b.json began") && warnings.contains("after its --start-at"),
        "{warnings}"
    );
    assert!(
        warnings.contains("never ran at the same time"),
        "{warnings}"
    );
    let strict = wasmlab(&["merge", &a, &b, "--strict"]);
    assert_eq!(strict.status.code(), Some(2));
    assert!(strict.stdout.is_empty());
    let err = String::from_utf8_lossy(&strict.stderr);
    assert!(err.contains("--strict") && err.contains("b.json"), "{err}");
}

#[test]
fn thresholds_judge_the_whole_and_a_merge_with_no_success_fails() {
    let upstream = Listening::upstream();
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (path(tmp.path(), "a.json"), path(tmp.path(), "b.json"));
    let url = format!("{}/", upstream.url);
    finish(spawn_load(&[&url, "-c", "1", "-n", "200", "--out", &a]));
    finish(spawn_load(&[&url, "-c", "1", "-n", "300", "--out", &b]));
    let ok = wasmlab(&[
        "merge",
        &a,
        &b,
        "--fail-if",
        "errors>0",
        "--fail-if",
        "rps<1",
    ]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("500 responses"));
    let crossed = wasmlab(&["merge", &a, &b, "--fail-if", "p99>1us"]);
    assert_eq!(crossed.status.code(), Some(99));
    assert!(String::from_utf8_lossy(&crossed.stderr).contains("p99>1us (measured p99"));

    // Parts against a closed port: written (what was measured is kept), and their merge fails.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let dead = format!("http://127.0.0.1:{port}/");
    let (c, d) = (path(tmp.path(), "c.json"), path(tmp.path(), "d.json"));
    for p in [&c, &d] {
        let out = wasmlab(&["load", &dead, "-c", "1", "-n", "5", "--out", p]);
        assert_eq!(out.status.code(), Some(1));
        assert!(Path::new(p).exists(), "the failed run's part is kept");
    }
    let none = wasmlab(&["merge", &c, &d]);
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no request succeeded"));
}

#[test]
fn bad_input_is_refused_with_the_reason_and_nothing_half_written() {
    let upstream = Listening::upstream();
    let tmp = tempfile::tempdir().unwrap();
    let good = path(tmp.path(), "good.json");
    let url = format!("{}/", upstream.url);
    finish(spawn_load(&[&url, "-c", "1", "-n", "50", "--out", &good]));
    let text = std::fs::read_to_string(&good).unwrap();

    let truncated = write(tmp.path(), "truncated.json", &text[..text.len() / 2]);
    let newer = write(
        tmp.path(),
        "newer.json",
        &text.replacen("\"version\":1", "\"version\":2", 1),
    );
    let report = wasmlab(&["load", &url, "-c", "1", "-n", "5", "--json"]);
    let report = write(
        tmp.path(),
        "report.json",
        &String::from_utf8_lossy(&report.stdout),
    );
    let tampered = write(
        tmp.path(),
        "tampered.json",
        &text.replacen("\"responses\":50", "\"responses\":49", 1),
    );
    for (file, why) in [
        (&truncated, "truncated"),
        (&newer, "format version 2"),
        (&report, "not a wasmlab load part"),
        (&tampered, "samples for 49 responses"),
        (&path(tmp.path(), "missing.json"), "cannot read it"),
    ] {
        let out = wasmlab(&["merge", &good, file]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert!(out.stdout.is_empty(), "{file}: printed a half merge");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(file.as_str()) && err.contains(why),
            "{file}: {err}"
        );
    }
    let empty = wasmlab(&["merge"]);
    assert!(!empty.status.success());
    assert!(String::from_utf8_lossy(&empty.stderr).contains("FILE"));

    // `load`: a part that cannot be written fails before any load; a bad start; two outputs
    // on stdout.
    assert_fails_with(
        &["load", &url, "-n", "1", "--out", "/nonexistent/dir/p.json"],
        "cannot write /nonexistent/dir/p.json",
    );
    assert_fails_with(&["load", &url, "--start-at", "tomorrow"], "RFC 3339");
    assert_fails_with(
        &["load", &url, "-n", "1", "--json", "--out", "-"],
        "both write to stdout",
    );
    assert_fails_with(&["load", "--config", "nope.json"], "cannot read nope.json");
    assert_eq!(leftover_tmp_files(tmp.path()), 0);
}

/// The Job of docs/distributed.md decoded strictly into k8s.io/api's own types by
/// deploy/kubernetes/validate (Go, from the module proxy), a broken copy refused, and the
/// arguments its pods run run here: two generators, their parts merged.
#[test]
fn the_kubernetes_job_is_valid_and_its_command_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let validate = root.join("deploy/kubernetes/validate");
    let manifest = root.join("deploy/kubernetes/load-job.yaml");
    if Command::new("go").arg("version").output().is_err() {
        return skipped("go is not installed: the manifest's validator is Go (k8s.io/api)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("validate");
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(&validate)
        .output()
        .unwrap();
    if !built.status.success() {
        let err = String::from_utf8_lossy(&built.stderr);
        if err.contains("dial tcp") || err.contains("proxy.golang.org") || err.contains("lookup") {
            return skipped(&format!(
                "the Go module proxy cannot be reached to fetch k8s.io/api: {}",
                err.lines().last().unwrap_or("")
            ));
        }
        panic!("building the validator: {err}");
    }
    let checked = Command::new(&bin).arg(&manifest).output().unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let jobs: serde_json::Value = serde_json::from_slice(&checked.stdout).unwrap();
    let job = &jobs[0];
    assert_eq!(job["name"], "wasmlab-load");

    // The validator refuses what the API server would.
    let text = std::fs::read_to_string(&manifest).unwrap();
    for (broken, why) in [
        (
            text.replacen("  completions:", "  completion:", 1),
            "unknown field \"completion\"",
        ),
        (
            text.replacen("completionMode: Indexed", "completionMode: NonIndexed", 1),
            "Indexed",
        ),
        (
            text.replacen("backoffLimit: 0", "backoffLimit: 6", 1),
            "backoffLimit",
        ),
        (text.replacen("- --quiet", "- --json", 1), "--quiet"),
    ] {
        let f = write(tmp.path(), "broken.yaml", &broken);
        let out = Command::new(&bin).arg(&f).output().unwrap();
        assert!(!out.status.success(), "accepted: {why}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{why}: {err}");
    }

    // Its pods' arguments, as the kubelet expands them, against a server here, shortened.
    let upstream = Listening::upstream();
    let at = unix_in(0.7);
    let host_port = upstream.url.trim_start_matches("http://").to_owned();
    let (host, port) = host_port.rsplit_once(':').unwrap();
    let args: Vec<String> = job["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            a.as_str()
                .unwrap()
                .replace("$(WASMLAB_NATIVE_SERVICE_HOST)", host)
                .replace("$(WASMLAB_NATIVE_SERVICE_PORT)", port)
                .replace("$(START_AT)", &at)
                .replace("--duration=30s", "--duration=1s")
                .replace("--connections=50", "--connections=2")
                .replace("--threads=2", "--threads=1")
        })
        .collect();
    assert_eq!(args[0], "load");
    let pods: Vec<_> = (0..2)
        .map(|_| {
            Command::new(WASMLAB)
                .args(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut files = Vec::new();
    for (i, pod) in pods.into_iter().enumerate() {
        let out = finish(pod);
        // --quiet: the log (stdout and stderr together, as `kubectl logs` shows) is the part.
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        files.push(write(
            tmp.path(),
            &format!("part-{i}.json"),
            &String::from_utf8_lossy(&out.stdout),
        ));
    }
    let (out, m) = merge_json(
        &[&files[0], &files[1]],
        &["--strict", "--fail-if", "errors>0"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(m["report"]["generators"], 2);
}

/// A suite whose load cells two local generators and a command make (the command runs this
/// wasmlab, as `ssh HOST wasmlab` would elsewhere): each cell's sample is their merge.
#[test]
fn a_suite_cell_made_by_several_generators_is_their_merge() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = format!(
        r#"name = "generators"
variants = ["native"]
workloads = ["hello"]
connections = [6]
duration_secs = 0.5
warmup_secs = 0.1
generators = 2
generator_commands = ["{WASMLAB}"]

[warm]
duration_secs = 0.3

[open_loop]
fractions = [0.25]
duration_secs = 0.5
connections = 6
"#
    );
    let (out, results) = run_suite(tmp.path(), &suite, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("(3 gen.)"), "{err}");
    let dir = only_run_dir(&results);
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    let mut kinds = Vec::new();
    for line in samples.lines() {
        let s: serde_json::Value = serde_json::from_str(line).unwrap();
        let Some(load) = s.get("load") else { continue };
        let kind = s["kind"].as_str().unwrap().to_owned();
        let generators = load["generators"].as_u64().unwrap_or(1);
        match kind.as_str() {
            "warm" => assert_eq!(generators, 1, "{line}"),
            _ => {
                assert_eq!(generators, 3, "{line}");
                assert_eq!(load["connections"], 6, "{line}");
                assert!(load["responses"].as_u64().unwrap() > 0);
                assert!(!s["histogram"].as_array().unwrap().is_empty());
            }
        }
        kinds.push(kind);
    }
    assert!(kinds.iter().any(|k| k == "throughput") && kinds.iter().any(|k| k == "open_loop"));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("3 per load cell (2 local processes"),
        "report"
    );

    // A suite that gives a generator no connection of its own is refused before anything runs.
    let bad = suite.replace("connections = [6]", "connections = [2]");
    let bad_dir = tmp.path().join("bad");
    std::fs::create_dir(&bad_dir).unwrap();
    let (out, _) = run_suite(&bad_dir, &bad, &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("3 generators need at least 3 connections"),
        "{err}"
    );
}
