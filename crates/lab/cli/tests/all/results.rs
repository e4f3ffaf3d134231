//! The commands on results: `wasmlab report` from a committed fixture, `wasmlab compare`,
//! `wasmlab history` and `wasmlab load` with its JSON report.

use crate::support;

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
    assert!(stdout.contains("capacity × native [95% CI] n"), "{stdout}");
    // Older than the CPU plan and utilization: no capacity said to be one, none shown as zero.
    let row = stdout
        .lines()
        .find(|l| l.contains("wasmtime-pooled ┆ hello    ┆ 4 "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("not recorded") && !row.contains("n="), "{row}");
    assert!(
        md.contains("## What a request costs against native"),
        "{md}"
    );
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
    // Every server saturated at 4 connections, and at 1 the generator set native's pace in A.
    // B: wasmtime-pooled served half as much in every throughput run, for twice the CPU; native
    // is unchanged. Each run also gets equal-load cells (copies of the 4-connection runs before
    // B's edit), offered 1,050 req/s in A and 1,000 in B, as two runs' probes would set them,
    // where native was 7% busy in A and 5% in B.
    let edit =
        |dir: &std::path::Path, rate: f64, native_busy: f64, f: &dyn Fn(&mut serde_json::Value)| {
            let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
            let mut edited: Vec<String> = Vec::new();
            for l in samples.lines() {
                let mut s: serde_json::Value = serde_json::from_str(l).unwrap();
                if s["kind"] == "throughput" {
                    let at_4 = s["connections"] == 4;
                    s["resources"]["utilization"] =
                        serde_json::json!(if at_4 { 0.99 } else { 0.5 });
                    if !at_4 {
                        s["load"]["generator_saturated"] = serde_json::json!(true);
                    }
                    if at_4 {
                        let mut equal = s.clone();
                        equal["kind"] = serde_json::json!("equal_load");
                        equal["rate"] = serde_json::json!(rate);
                        if equal["variant"] == "native" {
                            equal["resources"]["utilization"] = serde_json::json!(native_busy);
                        }
                        edited.push(equal.to_string());
                    }
                    f(&mut s);
                }
                edited.push(s.to_string());
            }
            std::fs::write(dir.join("samples.jsonl"), edited.join("\n") + "\n").unwrap();
        };
    edit(&a, 1050.0, 0.07, &|_| {});
    edit(&b, 1000.0, 0.05, &|s| {
        if s["variant"] == "wasmtime-pooled" {
            let rps = s["load"]["rps"].as_f64().unwrap();
            s["load"]["rps"] = serde_json::json!(rps / 2.0);
            let cpu = s["resources"]["cpu_secs"].as_f64().unwrap();
            s["resources"]["cpu_secs"] = serde_json::json!(cpu * 2.0);
        }
    });

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
    // req/s at both levels; responses per CPU-second only where the servers were saturated.
    // Halved at both, but at 1 connection the fixture's two runs differ so much (generator-
    // limited) that two runs a side cannot tell a halving from their spread; at 4 they can.
    let pooled = row("throughput wasmtime-pooled hello");
    assert_eq!(pooled.len(), 2, "{stdout}");
    assert!(pooled.iter().all(|l| l.contains("0.500")), "{stdout}");
    assert!(
        pooled[0].contains("c=1") && pooled[0].contains(" no "),
        "{stdout}"
    );
    assert!(
        pooled[1].contains("c=4") && pooled[1].contains("yes: worse"),
        "{stdout}"
    );
    let saturated = row("capacity wasmtime-pooled hello c=4");
    assert_eq!(saturated.len(), 1, "{stdout}");
    assert!(
        saturated[0].contains("yes: worse") && saturated[0].contains("0.500"),
        "{stdout}"
    );
    let idle = row("capacity native hello c=1");
    assert_eq!(idle.len(), 1, "{stdout}");
    assert!(
        idle[0].contains("cannot tell: no saturated run")
            && idle[0].contains("generator-limited in 2 run(s)")
            && !idle[0].contains("0.500"),
        "no capacity ratio where the generator set the pace: {stdout}"
    );
    let native = row("throughput native hello");
    assert_eq!(native.len(), 2, "{stdout}");
    assert!(native.iter().all(|l| l.contains(" no ")), "{stdout}");
    assert!(
        stdout.contains("0 significantly better in B, 2 significantly worse"),
        "{stdout}"
    );
    // Equal-load cells at rates within 10% of each other are compared, both rates said.
    let equal = row("CPU per request native hello at 1050 (B at 1000) req/s");
    assert_eq!(equal.len(), 1, "{stdout}");
    assert!(equal[0].contains(" no "), "{stdout}");
    assert!(!stdout.contains("only in one run"), "{stdout}");
    // The headline: the pooled gateway's cost at equal load held; saturated, it cost twice
    // native's in B (as many responses for twice the CPU): the two runs' intervals overlap (two
    // runs a side), but the change is beyond 10%.
    let headline = row("│ hello    ┆ wasmtime-pooled ┆");
    assert_eq!(headline.len(), 2, "{stdout}");
    assert!(
        headline[0].contains("equal load")
            && headline[0].contains("at 1,050")
            && headline[0].contains("at 1,000")
            && headline[0].contains("+0.0%")
            && headline[0].contains("7% / 5%")
            && headline[0].contains("yes"),
        "{stdout}"
    );
    assert!(
        headline[1].contains("saturated")
            && headline[1].contains("+100.0%")
            && headline[1].contains("overlap")
            && headline[1].contains(" no "),
        "{stdout}"
    );
    assert!(
        stdout.contains("hello 1 of 1 at equal load, 0 of 1 saturated"),
        "{stdout}"
    );
    // And how wide each run's intervals were, noisy above ±5%.
    let spreads = row("the lead's 95% intervals at the median: A ±");
    assert_eq!(spreads.len(), 1, "{stdout}");
    for side in ["A ±", "B ±"] {
        let at = spreads[0].find(side).unwrap() + side.len();
        let rest = &spreads[0][at..];
        let end = rest.find('%').unwrap();
        let median: f64 = rest[..end].parse().unwrap();
        assert_eq!(
            rest[end..].starts_with("% (noisy)"),
            median > 5.0,
            "{stdout}"
        );
    }
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

/// `wasmlab compare A B --fail-if`: a regression planted in a copied run (the pooled gateway's
/// CPU at equal load tripled) is caught, exit 99 with the figure named; a change of a few percent
/// crosses no gate; a gate naming a figure the runs do not have, or written wrongly, is refused.
#[test]
fn a_regression_planted_in_a_copied_run_is_caught_by_the_gate() {
    let tmp = tempfile::tempdir().unwrap();
    let with_equal_load = |name: &str, cpu: f64| copy_with_equal_load(tmp.path(), name, cpu, 0.01);
    let a = with_equal_load("a", 1.0);
    let worse = with_equal_load("b", 3.0);
    let near = with_equal_load("c", 1.03);
    let (a, worse, near) = (path(&a), path(&worse), path(&near));
    let gate = "wasmtime-pooled.hello.equal_load > +10%";
    let out = wasmlab(&["compare", &a, &worse, "--fail-if", gate]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{stderr}");
    assert!(
        stderr.contains("gates crossed (B worse than A):\n  wasmtime-pooled.hello.equal_load: ")
            && stderr.contains(
                "(+200.0%, the intervals apart; --fail-if wasmtime-pooled.hello.equal_load > +10%)"
            ),
        "{stderr}"
    );
    // Everything else printed first.
    assert!(String::from_utf8_lossy(&out.stdout).contains("wasmtime-pooled"));
    let out = wasmlab(&["compare", &a, &near, "--fail-if", "any > +10%"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("gates: none of 1 crossed over"), "{stdout}");
    assert_fails_with(
        &[
            "compare",
            &a,
            &worse,
            "--fail-if",
            "wasmtime-shared.hello.equal_load > +10%",
        ],
        "names no headline figure of these runs (they have: ",
    );
    assert_fails_with(
        &[
            "compare",
            &a,
            &worse,
            "--fail-if",
            "wasmtime-pooled.hello > +10%",
        ],
        "is not VARIANT.WORKLOAD.FOOTING",
    );
    assert_fails_with(
        &["compare", &a, &worse, "--fail-if", "any > 10%"],
        "\"10%\" is not +N%",
    );
}

/// `wasmlab history`: a suite's runs in time order (whatever their directories' names), kept
/// apart from another machine's, a version change said at the run it happened, a regression
/// planted in the third run marked ▲ and its return ▼ (the unit tests hold the moves within the
/// intervals), the fixture's older run.json layout
/// read; a broken run.json and a directory without one passed over with a warning; the page
/// offline; a directory that cannot be read and a suite with no run refused.
#[test]
fn history_follows_a_suite_run_after_run_and_passes_over_what_it_cannot_read() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results");
    std::fs::create_dir(&root).unwrap();
    let edit = |dir: &std::path::Path, f: &dyn Fn(&mut serde_json::Value)| {
        let file = dir.join("run.json");
        let mut j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        f(&mut j);
        std::fs::write(&file, j.to_string()).unwrap();
    };
    for (name, started, cpu, wasmtime) in [
        ("e", "20261101T000000Z", 1.0, "48.0.8"),
        ("d", "20261102T000000Z", 1.0, "48.0.8"),
        ("c", "20261103T000000Z", 3.0, "50.0.0"),
        ("b", "20261104T000000Z", 1.0, "50.0.0"),
        ("a", "20261105T000000Z", 1.0, "50.0.0"),
    ] {
        let dir = copy_with_equal_load(&root, name, cpu, 0.01);
        edit(&dir, &|j| {
            j["run_id"] = started.into();
            j["started_utc"] = started.into();
            j["machine"]["tools"]["wasmtime"] = wasmtime.into();
        });
    }
    let other = copy_with_equal_load(&root, "f", 1.0, 0.01);
    edit(&other, &|j| {
        j["started_utc"] = "20261103T120000Z".into();
        j["machine"]["cpu_model"] = "Other CPU".into();
    });
    std::fs::create_dir(root.join("g-broken")).unwrap();
    std::fs::write(root.join("g-broken/run.json"), "{\"run_id\": ").unwrap();
    std::fs::create_dir(root.join("notes")).unwrap();
    let root_s = path(&root);
    let out = wasmlab(&["history", &root_s, "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for passed in ["g-broken/run.json: EOF while parsing", "notes: no run.json"] {
        assert!(
            stderr.contains("wasmlab: passed over ") && stderr.contains(passed),
            "{stderr}"
        );
    }
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let groups = h["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{h:#}");
    assert_eq!(groups[0]["machine"], "AMD EPYC, 2 CPUs");
    assert_eq!(groups[1]["machine"], "Other CPU, 2 CPUs");
    let runs = groups[0]["runs"].as_array().unwrap();
    let started: Vec<&str> = runs
        .iter()
        .map(|r| r["started_utc"].as_str().unwrap())
        .collect();
    assert_eq!(
        started,
        [
            "20261101T000000Z",
            "20261102T000000Z",
            "20261103T000000Z",
            "20261104T000000Z",
            "20261105T000000Z"
        ]
    );
    assert_eq!(runs[1]["changed"], serde_json::json!([]));
    assert_eq!(
        runs[2]["changed"],
        serde_json::json!(["wasmtime (crate) 48.0.8 → 50.0.0"])
    );
    let pooled = groups[0]["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["variant"] == "wasmtime-pooled"
                && s["workload"] == "hello"
                && s["footing"] == "equal_load"
        })
        .unwrap_or_else(|| panic!("{h:#}"));
    let moved: Vec<&serde_json::Value> = pooled["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["moved"])
        .collect();
    assert_eq!(
        moved,
        [
            &serde_json::Value::Null,
            &serde_json::Value::Null,
            &"worse".into(),
            &"better".into(),
            &serde_json::Value::Null
        ],
        "{pooled:#}"
    );
    assert_eq!(h["passed_over"].as_array().unwrap().len(), 2);
    // The tables and the page.
    let out = wasmlab(&["history", &root_s]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout
            .contains("fixture on AMD EPYC, 2 CPUs: 5 runs, 20261101T000000Z to 20261105T000000Z")
            && stdout
                .contains("run 3 (20261103T000000Z) changed: wasmtime (crate) 48.0.8 → 50.0.0")
            && stdout.contains(
                "moved beyond the intervals:\n  hello wasmtime-pooled equal load: ▲ run 3 (+200%), \
                 ▼ run 4 (-67%)\n"
            ),
        "{stdout}"
    );
    let html = std::fs::read_to_string(root.join("history.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("▲ 6.000") && html.contains("g-broken"),
        "{html}"
    );
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"));
    assert_fails_with(
        &["history", &path(&tmp.path().join("none"))],
        "cannot be read",
    );
    assert_fails_with(
        &["history", &root_s, "--suite", "nosuch"],
        "no run of suite nosuch in ",
    );
}

/// A copy of the fixture run named `name` under `tmp` with equal-load cells: copies of its
/// 4-connection runs, offered 1,000 req/s, where native takes 10 µs of CPU a request and the
/// pooled gateway 20 µs times `cpu`, `jitter` apart from one repetition to the next: one
/// headline figure at equal load per variant, with an interval as narrow as the jitter.
fn copy_with_equal_load(
    tmp: &std::path::Path,
    name: &str,
    cpu: f64,
    jitter: f64,
) -> std::path::PathBuf {
    let dir = fixture_copy(tmp, name);
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    let mut edited: Vec<String> = Vec::new();
    for l in samples.lines() {
        let s: serde_json::Value = serde_json::from_str(l).unwrap();
        if s["kind"] == "throughput" && s["connections"] == 4 {
            let mut equal = s.clone();
            equal["kind"] = serde_json::json!("equal_load");
            equal["rate"] = serde_json::json!(1000.0);
            equal["resources"]["utilization"] = serde_json::json!(0.3);
            let per_request = match equal["variant"] == "wasmtime-pooled" {
                true => 20e-6 * cpu,
                false => 10e-6,
            };
            let jitter = 1.0 + jitter * equal["repetition"].as_f64().unwrap();
            let responses = equal["load"]["responses"].as_f64().unwrap();
            equal["resources"]["cpu_secs"] = serde_json::json!(responses * per_request * jitter);
            edited.push(equal.to_string());
        }
        edited.push(s.to_string());
    }
    std::fs::write(dir.join("samples.jsonl"), edited.join("\n") + "\n").unwrap();
    dir
}

fn path(p: &std::path::Path) -> String {
    p.to_str().unwrap().to_owned()
}
