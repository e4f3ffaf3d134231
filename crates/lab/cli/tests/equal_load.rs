//! Equal load end to end where it matters most: a server that never saturates (it sleeps on every
//! request) gets a cost at equal load and, in place of a capacity, what set its pace; and a rate a
//! suite names above a variant's capacity is measured and marked over capacity, never lowered.

mod support;

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

#[test]
fn a_server_that_never_saturates_is_costed_at_equal_load_and_a_rate_above_it_is_marked() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        return skipped("python3 is not installed: the sleeping server of this test is Python");
    }
    let tmp = tempfile::tempdir().unwrap();
    let script = write(tmp.path(), "sleepy.py", SLEEPY);
    let suite = format!(
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
connections = 8

[[variant]]
name = "sleepy"
about = "a Python server that sleeps 20 ms a request"
[variant.start]
command = ["python3", "{script}", "{{port}}"]
address = "port"
"#
    );
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
    // At 100 req/s both keep up; at 2,000 the sleeper cannot (8 connections of 20 ms each):
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
