//! The commands on results: `wasmlab report` from a committed fixture, `wasmlab compare`, and
//! `wasmlab load` with its JSON report.

mod support;

use support::*;

#[test]
fn report_from_a_fixture_holds_every_section() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixture_copy(tmp.path(), "run");
    let out = rebuild_report(&dir);
    assert_files_parse(&dir);
    // Cold starts of all three launched variants, and the ratio of the run's throughput to
    // native, are in the summary.
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    for v in ["native", "wasmtime-pooled", "wasmtime-pooled-cwasm"] {
        assert!(
            md.contains(&format!("| {v} |")),
            "{v} missing from summary.md"
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("× native per CPU [95% CI]"), "{stdout}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.len() < 2_000_000,
        "report.html is {} bytes",
        html.len()
    );

    assert_fails_with(&["report", tmp.path().to_str().unwrap()], "run.json");
}

#[test]
fn compare_marks_significant_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let a = fixture_copy(tmp.path(), "a");
    let b = fixture_copy(tmp.path(), "b");
    // B: wasmtime-pooled served half as much in every throughput run, for twice the CPU; native
    // is unchanged.
    let samples = std::fs::read_to_string(b.join("samples.jsonl")).unwrap();
    let halved: Vec<String> = samples
        .lines()
        .map(|l| {
            let mut s: serde_json::Value = serde_json::from_str(l).unwrap();
            if s["kind"] == "throughput" && s["variant"] == "wasmtime-pooled" {
                let rps = s["load"]["rps"].as_f64().unwrap();
                s["load"]["rps"] = serde_json::json!(rps / 2.0);
                let cpu = s["resources"]["cpu_secs"].as_f64().unwrap();
                s["resources"]["cpu_secs"] = serde_json::json!(cpu * 2.0);
            }
            s.to_string()
        })
        .collect();
    std::fs::write(b.join("samples.jsonl"), halved.join("\n") + "\n").unwrap();

    let out = wasmlab(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = |needle: &str| {
        stdout
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // req/s, and the headline's figure too: responses per CPU-second.
    for figure in ["throughput", "capacity"] {
        let pooled = row(&format!("{figure} wasmtime-pooled hello"));
        assert_eq!(pooled.len(), 2, "{stdout}");
        assert!(
            pooled
                .iter()
                .all(|l| l.contains("yes: worse") && l.contains("0.500")),
            "{stdout}"
        );
    }
    let native = row("throughput native hello");
    assert_eq!(native.len(), 2, "{stdout}");
    assert!(native.iter().all(|l| l.contains(" no ")), "{stdout}");
    assert!(
        stdout.contains("0 significantly better in B, 4 significantly worse"),
        "{stdout}"
    );
}

#[test]
fn load_command_reports_json() {
    let up = Listening::upstream();
    let url = up.url.clone();
    let out = wasmlab(&[
        "load",
        &format!("{url}/x"),
        "-c",
        "4",
        "-n",
        "300",
        "--json",
    ]);
    drop(up);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["responses"], 300);
    assert_eq!(r["ok"], 300);
    assert_eq!(r["errors"]["connect"], 0);
    assert_eq!(r["body_bytes"], 300 * "GET /x".len());

    assert_fails_with(
        &["load", "ftp://127.0.0.1/", "-n", "1"],
        "the scheme must be http:// or https://",
    );
}
