//! The suites' HTTP/2 axis end to end: `[http2]` adds each gateway's twin (`NAME-h2`), verified
//! and measured over HTTP/2 at the same requests in flight, said so in every output; a server
//! declared to speak HTTP/2 that does not fails its verification with the reason.

use std::path::Path;

use crate::support;

use support::*;

#[test]
fn the_http2_axis_measures_each_gateway_over_both_protocols_at_the_same_levels() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = r#"name = "h2"
variants = ["native", "native-close"]
workloads = ["hello", "echo"]
verify_only = ["not-found"]
connections = [1, 4]
duration_secs = 0.3
warmup_secs = 0.1

[http2]
streams = 4

[warm]
duration_secs = 0.2
workloads = ["hello"]

[[threshold]]
fail_if = ["errors>0"]
variants = ["native-h2"]
"#;
    let (out, results) = run_suite(tmp.path(), suite, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert!(
        stderr.contains(
            "HTTP/2: native-h2 over HTTP/2 (prior knowledge), 4 streams per connection: a level's requests in flight on level/4 connections; HTTP/1.1 only: native-close"
        ),
        "{stderr}"
    );
    // The cell line says how the level travels.
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("native-h2") && l.contains("c=4 (1×4)")),
        "{stderr}"
    );
    assert!(stdout.contains("thresholds: none of 1 crossed"), "{stdout}");

    let dir = only_run_dir(&results);
    assert_files_parse(&dir);
    let run = read_json(&dir.join("run.json"));
    let verified = outcome(&run, "native-h2");
    assert!(
        verified["checks"].as_array().unwrap().len() == 3
            && verified["checks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["ok"] == true),
        "{verified}"
    );
    let log = std::fs::read_to_string(dir.join("native-h2.log")).unwrap();
    assert!(log.contains("protocols=http/1.1,h2c"), "{log}");

    // Every native-h2 cell went over HTTP/2, its level split into streams; native's did not.
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    let mut h2_cells = 0;
    for line in samples.lines() {
        let s: serde_json::Value = serde_json::from_str(line).unwrap();
        let Some(load) = s.get("load") else { continue };
        let level = s["connections"].as_u64().unwrap();
        let (tcp, streams) = (
            load["connections"].as_u64().unwrap(),
            // Left out of the JSON at their HTTP/1.1 values.
            load["streams"].as_u64().unwrap_or(1),
        );
        match s["variant"].as_str().unwrap() {
            "native-h2" => {
                h2_cells += 1;
                assert_eq!(load["http2"].as_bool(), Some(true), "{line}");
                assert_eq!((tcp, streams), (1, level), "{line}");
                assert!(load["ok"].as_u64().unwrap() > 0, "{line}");
            }
            _ => assert_eq!(
                (load["http2"].as_bool(), tcp, streams),
                (None, level, 1),
                "{line}"
            ),
        }
    }
    assert_eq!(
        h2_cells,
        2 * 2 + 1,
        "2 workloads x 2 levels, and warm hello"
    );
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    let row = throughput
        .lines()
        .find(|l| l.starts_with("native-h2,hello,4,"))
        .unwrap_or_else(|| panic!("{throughput}"));
    assert!(
        row.contains(",h2,1,4,"),
        "protocol, TCP connections, streams: {row}"
    );
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("- HTTP/2: native-h2 over HTTP/2"),
        "{summary}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<th>HTTP/2</th>") && html.contains("native-h2"));
}

#[test]
fn a_server_said_to_speak_http2_that_does_not_fails_verification_alone() {
    let bin = Path::new(WASMLAB).with_file_name("wasmlab-gateway-native");
    // HTTP/1.1 only: no --http2.
    let server = Listening::spawn(bin, &["--port", "0", "--upstream", "http://127.0.0.1:9"]);
    let tmp = tempfile::tempdir().unwrap();
    let suite = format!(
        r#"name = "h2-refused"
variants = ["native", "elsewhere"]
workloads = ["hello"]
connections = [2]
duration_secs = 0.2

[[variant]]
name = "elsewhere"
about = "an HTTP/1.1 server declared to speak HTTP/2"
url = "http://localhost:{}"
protocol = "h2"
"#,
        server.port()
    );
    let (out, results) = run_suite(tmp.path(), &suite, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}\n{stdout}");
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    let failed = outcome(&run, "elsewhere");
    let check = &failed["checks"][0];
    assert_eq!(check["ok"], false, "{failed}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("(no HTTP/2 answer: does the server speak it by prior knowledge, h2c?)"),
        "{failed}"
    );
    // native was measured all the same.
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    assert!(
        throughput.lines().any(|l| l.starts_with("native,hello,2,")),
        "{throughput}"
    );
    assert!(!throughput.contains("elsewhere"), "{throughput}");
}
