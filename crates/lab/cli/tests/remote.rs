//! A remote target end to end: a variant file with a `url` and no start command, verified and
//! measured like any other, with what needs its processes (CPU, memory, capacity, cold start)
//! said to be not observable in every output. The "remote" server is wasmlab's native gateway,
//! started by the test itself on a loopback port and declared by name (`localhost`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

mod support;

use support::*;

/// The native gateway on an ephemeral loopback port, stopped when dropped.
struct Elsewhere {
    child: std::process::Child,
    port: u16,
}

impl Elsewhere {
    fn start() -> Self {
        let bin = Path::new(WASMLAB).with_file_name("wasmlab-gateway-native");
        let mut child = Command::new(bin)
            .args(["--port", "0", "--upstream", "http://127.0.0.1:9"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let line = stdout
            .lines()
            .map(|l| l.unwrap())
            .find(|l| l.starts_with("listening on http://"))
            .unwrap();
        let port = line.rsplit(':').next().unwrap().trim().parse().unwrap();
        Self { child, port }
    }
}

impl Drop for Elsewhere {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_remote_url_is_verified_and_measured_with_what_it_hides_said() {
    let server = Elsewhere::start();
    let tmp = tempfile::tempdir().unwrap();
    let suite = format!(
        r#"name = "remote"
variants = ["native", "elsewhere"]
workloads = ["hello", "echo"]
connections = [2]
duration_secs = 0.3
warmup_secs = 0.1

[cold_start]
runs = 2

[warm]
duration_secs = 0.2
workloads = ["hello"]

[[variant]]
name = "elsewhere"
about = "the native gateway, started by the test, measured as a server on another machine"
url = "http://localhost:{}"
"#,
        server.port
    );
    let (out, results) = run_suite(tmp.path(), &suite, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert!(
        stderr.contains("elsewhere: cold start not observable (a remote target"),
        "{stderr}"
    );
    assert!(
        stdout.contains(
            "elsewhere: CPU, memory, capacity and cold start not observable (a remote target"
        ),
        "{stdout}"
    );
    let row = stdout
        .lines()
        .find(|l| l.contains("elsewhere") && l.contains("hello") && l.contains("┆ 2 "))
        .unwrap_or_else(|| panic!("no throughput row: {stdout}"));
    assert!(row.contains("not observable"), "{row}");

    let dir = only_run_dir(&results);
    assert_files_parse(&dir);
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    for workload in ["hello", "echo"] {
        let row = throughput
            .lines()
            .find(|l| l.starts_with(&format!("elsewhere,{workload},2,")))
            .unwrap_or_else(|| panic!("no elsewhere {workload} row: {throughput}"));
        assert!(
            row.ends_with("not observable,not observable,not observable"),
            "{row}"
        );
        let cols: Vec<&str> = row.split(',').collect();
        assert!(cols[3].parse::<f64>().unwrap() > 0.0, "{row}");
        assert_eq!(cols[10], "0", "errors in {row}");
    }
    let cold = std::fs::read_to_string(dir.join("cold_start.csv")).unwrap();
    assert!(cold.contains("\nnative,"), "{cold}");
    assert!(!cold.contains("elsewhere"), "{cold}");
    let warm = std::fs::read_to_string(dir.join("warm.csv")).unwrap();
    assert!(warm.contains("elsewhere,hello"), "{warm}");
    let run = read_json(&dir.join("run.json"));
    let elsewhere = run["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "elsewhere")
        .unwrap();
    assert_eq!(elsewhere["status"], "measured", "{elsewhere}");
    assert!(
        elsewhere["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["ok"] == true)
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.matches("capacity and cold start not observable")
            .count()
            >= 4,
        "the lead, cold start, resources and capacity sections say it"
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("not observable"), "{md}");
    rebuild_report(&dir);
}

#[test]
fn a_bad_remote_url_is_refused_before_anything_starts() {
    let tmp = tempfile::tempdir().unwrap();
    for (url, want) in [
        ("ftp://host/", "the scheme must be http://"),
        ("https://host/", "https targets are not supported yet"),
        ("http://host/api", "give the server's root"),
        ("http//nope", "is not a URL"),
    ] {
        let suite = format!(
            "name = \"r\"\nvariants = [\"x\"]\nworkloads = [\"hello\"]\nconnections = [1]\nduration_secs = 0.2\n\n[[variant]]\nname = \"x\"\nabout = \"x\"\nurl = \"{url}\"\n"
        );
        let (out, results) = run_suite(tmp.path(), &suite, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
        assert!(stderr.contains(want), "{url}: {stderr}");
        assert!(!results.exists());
    }
}
