//! A remote target end to end: a variant file with a `url` and no start command, verified and
//! measured like any other, with what needs its processes (CPU, memory, capacity, cold start)
//! said to be not observable in every output. The "remote" server is wasmlab's native gateway,
//! started by the test itself on a loopback port and declared by name (`localhost`).

use std::path::Path;

use crate::support;

use support::*;

/// The native gateway on an ephemeral loopback port, stopped when dropped.
fn elsewhere() -> Listening {
    let bin = Path::new(WASMLAB).with_file_name("wasmlab-gateway-native");
    Listening::spawn(bin, &["--port", "0", "--upstream", "http://127.0.0.1:9"])
}

#[test]
fn a_remote_url_is_verified_and_measured_with_what_it_hides_said() {
    let server = elsewhere();
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

[equal_load]
duration_secs = 0.2
connections = 2
workloads = ["hello"]

[[variant]]
name = "elsewhere"
about = "the native gateway, started by the test, measured as a server on another machine"
url = "http://localhost:{}"
"#,
        server.port()
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
    // The throughput table comes first; with one connection level it has no level column.
    let row = stdout
        .lines()
        .skip_while(|l| !l.starts_with("throughput (closed loop)"))
        .find(|l| l.contains("│ elsewhere ┆ hello "))
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
            row.contains(",not observable,not observable,not observable,http/1.1,2,1,")
                && row.ends_with(&[",not observable"; 7].concat()),
            "RSS, CPU, CPU per response, wall time, CPUs, utilization, busiest thread, upstream, \
             pace: {row}"
        );
        let cols: Vec<&str> = row.split(',').collect();
        assert!(cols[3].parse::<f64>().unwrap() > 0.0, "{row}");
        assert_eq!(cols[10], "0", "errors in {row}");
    }
    // At equal load too: offered the rates, its CPU not observable, so no ratio to native.
    let equal = std::fs::read_to_string(dir.join("equal_load.csv")).unwrap();
    let row = equal
        .lines()
        .find(|l| l.starts_with("elsewhere,hello,"))
        .unwrap_or_else(|| panic!("{equal}"));
    assert!(row.contains(",not observable,"), "{row}");
    let cost = stdout
        .lines()
        .find(|l| l.contains("┆ elsewhere ") && l.contains("hello"))
        .filter(|l| l.matches("not observable").count() >= 2)
        .unwrap_or_else(|| panic!("the cost table says why: {stdout}"));
    assert!(
        !cost.contains(" n="),
        "no figure that looks like one: {cost}"
    );
    let cold = std::fs::read_to_string(dir.join("cold_start.csv")).unwrap();
    assert!(cold.contains("\nnative,"), "{cold}");
    assert!(!cold.contains("elsewhere"), "{cold}");
    let warm = std::fs::read_to_string(dir.join("warm.csv")).unwrap();
    assert!(warm.contains("elsewhere,hello"), "{warm}");
    let run = read_json(&dir.join("run.json"));
    let elsewhere = outcome(&run, "elsewhere");
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
    for (lines, want) in [
        (
            "url = \"ftp://host/\"",
            "the scheme must be http:// or https://",
        ),
        ("url = \"http://host/api\"", "give the server's root"),
        ("url = \"http//nope\"", "is not a URL"),
        (
            "url = \"http://host/\"\ninsecure = true",
            "`cacert` and `insecure` are for an https:// url",
        ),
        (
            "url = \"https://host/\"\ninsecure = true\ncacert = \"ca.pem\"",
            "give `cacert` or `insecure`, not both",
        ),
        (
            "url = \"http://host/\"\n[variant.start]\ncommand = [\"true\"]",
            "it has no [start] or [program]",
        ),
    ] {
        let suite = format!(
            "name = \"r\"\nvariants = [\"x\"]\nworkloads = [\"hello\"]\nconnections = [1]\nduration_secs = 0.2\n\n[[variant]]\nname = \"x\"\nabout = \"x\"\n{lines}\n"
        );
        let (out, results) = run_suite(tmp.path(), &suite, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{lines}: {stderr}");
        assert!(stderr.contains(want), "{lines}: {stderr}");
        assert!(!results.exists());
    }
}

#[test]
fn an_https_remote_target_is_measured_over_tls_and_a_bad_certificate_fails_it_alone() {
    let server = wasmlab_test_support::https_server(true, |path| match path {
        "/" => (200, "hello"),
        _ => (404, "nope"),
    });
    let (port, pem) = (server.port, server.cert_pem);
    let tmp = tempfile::tempdir().unwrap();
    let ca = write(tmp.path(), "ca.pem", &pem);
    let suite = format!(
        r#"name = "tls"
variants = ["trusted", "untrusted", "anything"]
workloads = ["hello"]
connections = [2]
duration_secs = 0.3

[[variant]]
name = "trusted"
about = "the test's HTTPS server, its certificate trusted through cacert"
url = "https://localhost:{port}"
cacert = "{ca}"

[[variant]]
name = "untrusted"
about = "the same, against the system's roots, which do not know it"
url = "https://localhost:{port}"

[[variant]]
name = "anything"
about = "the same, any certificate accepted"
url = "https://localhost:{port}"
insecure = true
"#
    );
    let (out, results) = run_suite(tmp.path(), &suite, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "untrusted: TLS with localhost:{port}: invalid peer certificate"
        )),
        "{stderr}"
    );
    let dir = only_run_dir(&results);
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    for variant in ["trusted", "anything"] {
        let row = throughput
            .lines()
            .find(|l| l.starts_with(&format!("{variant},hello,2,")))
            .unwrap_or_else(|| panic!("no {variant} row: {throughput}"));
        assert_eq!(row.split(',').nth(10), Some("0"), "errors in {row}");
    }
    assert!(!throughput.contains("untrusted"), "{throughput}");
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    assert!(
        samples.contains("\"tls_handshakes\":2"),
        "each connection handshakes once"
    );
}
