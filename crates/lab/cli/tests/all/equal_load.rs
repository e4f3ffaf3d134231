//! Equal load end to end where it matters most: a server that never saturates (it sleeps on every
//! request) gets a cost at equal load and, in place of a capacity, what set its pace; and a rate a
//! suite names above a variant's capacity is measured and marked over capacity, never lowered.

use crate::support;

use support::*;

/// A server of the test's that answers `GET /` with `hello` after sleeping 20 ms, on threads:
/// busy a few percent of its CPU at any load it can serve.
const SLEEPY: &str = r#"
import sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Hello(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        time.sleep(0.02)
        body = b"hello" if self.path == "/" else b"not found"
        self.send_response(200 if self.path == "/" else 404)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Hello).serve_forever()
"#;

/// The suite `head` (its name, variants, workloads and sections) with the sleeper as variant
/// `sleepy`, its script written into `dir`; None, said, where python3 is missing.
fn with_sleepy(dir: &std::path::Path, head: &str) -> Option<String> {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        skipped("python3 is not installed: the sleeping server of this test is Python");
        return None;
    }
    let script = write(dir, "sleepy.py", SLEEPY);
    Some(format!(
        r#"{head}
[[variant]]
name = "sleepy"
about = "a Python server that sleeps 20 ms a request"
[variant.start]
command = ["python3", "{script}", "{{port}}"]
address = "port"
"#
    ))
}

#[test]
fn a_server_that_never_saturates_is_costed_at_equal_load_and_a_rate_above_it_is_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(suite) = with_sleepy(
        tmp.path(),
        r#"name = "sleepy"
variants = ["native", "sleepy"]
workloads = ["hello"]
connections = [4]
duration_secs = 0.3
warmup_secs = 0.1
repetitions = 2

[equal_load]
rates = [100, 2000]
duration_secs = 0.3
warmup_secs = 0.05
connections = 32
"#,
    ) else {
        return;
    };
    let (out, results) = run_suite(tmp.path(), &suite, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    let dir = only_run_dir(&results);
    assert_files_parse(&dir);
    assert_report_complete(&dir);

    // Closed loop: the sleeps, not the CPU, set its pace.
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    for row in throughput.lines().filter(|l| l.starts_with("sleepy,")) {
        assert!(row.ends_with(",latency-bound"), "{row}");
    }
    // At 100 req/s both keep up; at 2,000 the sleeper cannot (32 connections of 20 ms each, at
    // most 1,600 a second; with 8, native on a machine busy with other tests stalled for 4 ms
    // at the end of a cell, dropped its last 8 sends, 1.3%, and was marked over capacity):
    // measured, dropped sends counted, marked over capacity.
    let equal = Csv::read(&dir.join("equal_load.csv"));
    assert_eq!(
        equal.rows.len(),
        2 * 2 * 2,
        "2 variants × 2 rates × 2 runs: {}",
        equal.text
    );
    for r in &equal.rows {
        let col = |name| equal.cell(r, name);
        let over = col("variant") == "sleepy" && col("rate") == "2000.0";
        assert_eq!(col("over_capacity"), over.to_string(), "{r:?}");
        if over {
            assert!(col("dropped").parse::<u64>().unwrap() > 0, "{r:?}");
        }
    }
    // The answer: the cost at 100 req/s, the highest rate both kept up with, and no capacity,
    // with why; at 2,000 req/s no ratio, with why.
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let cost = summary
        .lines()
        .find(|l| l.starts_with("| hello | sleepy |"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        cost.contains("| 100 |") && cost.contains("none: sleepy latency-bound in 2/2 runs"),
        "{cost}"
    );
    assert!(
        cost.split('|').nth(3).unwrap().contains(" n=2"),
        "a ratio with its interval at 100 req/s: {cost}"
    );
    let over = summary
        .lines()
        .find(|l| l.starts_with("| sleepy | 2,000 |"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        over.contains("none: sleepy over capacity in 2/2 runs")
            && over.contains("⚠ over capacity in 2/2 runs"),
        "{over}"
    );
    assert!(
        stdout.contains("none: latency-bound") || stdout.contains("none: sleepy"),
        "the terminal says why: {stdout}"
    );
}

/// Two runs in a row into one results directory: the second offers each variant the rates the
/// first did wherever its probe agrees with the first's (the sleeper's capacity is set by its
/// sleeps, so its probe always agrees), and says so; `--new-rates` keeps none; `--rates-from`
/// names the run to keep them from, and a directory that is not a run is refused before
/// anything is measured.
#[test]
fn a_second_run_offers_each_variant_the_first_runs_rates_where_its_probe_agrees() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(suite) = with_sleepy(
        tmp.path(),
        r#"name = "pair"
variants = ["native", "sleepy"]
workloads = ["hello"]
connections = [4]
duration_secs = 0.2
warmup_secs = 0.05
repetitions = 1

[equal_load]
duration_secs = 0.2
warmup_secs = 0.05
connections = 4
"#,
    ) else {
        return;
    };
    let run = |extra: &[&str]| {
        let (out, results) = run_suite(tmp.path(), &suite, extra);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{extra:?}: {stderr}");
        let mut dirs: Vec<_> = std::fs::read_dir(&results)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        dirs.sort();
        let dir = dirs.pop().unwrap();
        (read_json(&dir.join("run.json")), dir, stderr)
    };
    let equal = |run: &serde_json::Value| run["equal_load"][0].clone();
    let offered = |e: &serde_json::Value, v: &str| {
        e["offered"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o[0] == v)
            .map(|o| o[1].clone())
            .unwrap()
    };

    let (first, first_dir, said) = run(&[]);
    assert!(equal(&first)["kept"].is_null(), "nothing to keep: {first}");
    assert!(!said.contains("kept from run"), "{said}");
    let first_id = first["run_id"].as_str().unwrap();

    let (second, _, said) = run(&[]);
    let e = equal(&second);
    assert_eq!(e["kept"]["run_id"], first_id, "{e}");
    assert!(
        said.contains(&format!("each variant's capacity kept from run {first_id} (the last pair run on this machine in ")),
        "{said}"
    );
    let kept = e["kept"]["capacities"].as_array().unwrap();
    let first_probed = equal(&first)["probed"].as_array().unwrap().clone();
    for v in ["native", "sleepy"] {
        let was = first_probed.iter().find(|p| p[0] == v).unwrap()[1]
            .as_f64()
            .unwrap();
        let now = e["probed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p[0] == v)
            .unwrap()[1]
            .as_f64()
            .unwrap();
        let agrees = (0.8..=1.5).contains(&(now / was));
        // Kept exactly where the probe agreed, and then offered the first run's rates; else set
        // afresh, and said.
        assert_eq!(
            kept.iter().any(|k| k[0] == v && k[1] == was),
            agrees,
            "{v}: {e}"
        );
        if agrees {
            assert_eq!(offered(&e, v), offered(&equal(&first), v), "{v}");
        } else {
            assert!(
                said.contains(&format!("hello: {v}'s rates set afresh")),
                "{said}"
            );
        }
    }
    assert!(
        kept.iter().any(|k| k[0] == "sleepy"),
        "the sleeper's capacity is its sleeps': {e}"
    );

    let (fresh, _, said) = run(&["--new-rates"]);
    assert!(equal(&fresh)["kept"].is_null(), "{fresh}");
    assert!(!said.contains("kept from run"), "{said}");

    let named = first_dir.to_str().unwrap();
    let (from, _, said) = run(&["--rates-from", named]);
    assert_eq!(equal(&from)["kept"]["run_id"], first_id);
    assert!(said.contains(&format!("(--rates-from {named})")), "{said}");

    // Refused before anything is measured: no run directory is added.
    let count = || {
        std::fs::read_dir(tmp.path().join("results"))
            .unwrap()
            .count()
    };
    let before = count();
    let (args, _) = run_args(tmp.path(), &suite);
    let mut bad = args.clone();
    bad.extend(["--rates-from".into(), tmp.path().to_str().unwrap().into()]);
    let bad: Vec<&str> = bad.iter().map(String::as_str).collect();
    assert_fails_with(&bad, "--rates-from: ");
    assert_fails_with(&bad, "is not a wasmlab results directory");
    let mut both = args.clone();
    both.extend(["--rates-from".into(), named.into(), "--new-rates".into()]);
    let both: Vec<&str> = both.iter().map(String::as_str).collect();
    assert_fails_with(&both, "cannot be used with");
    assert_eq!(count(), before);
}
