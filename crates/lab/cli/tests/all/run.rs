//! `wasmlab run` end to end: a tiny suite against the real gateway binaries, every file it
//! writes and the report rebuilt from them; each isolation model of the Wasm gateway, sync and
//! async, as its variant; the built-in variants that need a container engine or the Wasmtime
//! CLI, where they can run; and the errors a user gets for a bad suite.

use std::path::Path;
use std::process::Command;

use crate::support;

use support::*;

const THROUGHPUT_COLUMNS: &str = "variant,workload,connections,rps,p50_ms,p90_ms,p99_ms,p99_9_ms,max_ms,responses,errors,errors_connect,errors_read_write,errors_timeout,errors_non_2xx,duration_s,repetition,ttfb_p50_ms,generator_busy,generator_saturated,rss_peak_kib,rss_mean_kib,cpu_secs,protocol,tcp_connections,streams,cpu_us_per_response,wall_s,server_cpus,utilization,busiest_thread,upstream_cpu_secs,pace";

/// With at least 2 CPUs the load generator and the servers ran on disjoint CPUs, and each gateway
/// (whose default worker count is the CPUs it may use) started one worker per server CPU.
fn assert_servers_ran_on_their_own_cpus(run: &serde_json::Value, dir: &Path) {
    let cpus = |k: &str| -> Vec<u64> {
        run["cpus"][k]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect()
    };
    let (load, server) = (cpus("load"), cpus("server"));
    assert!(!load.is_empty(), "{}", run["cpus"]);
    if run["cpus"]["shared_because"].is_string() {
        assert!(server.is_empty(), "{}", run["cpus"]);
        support::skipped_not_installable(&format!(
            "the servers' own CPUs' check: {}",
            run["cpus"]["shared_because"]
        ));
        return;
    }
    assert!(!server.is_empty() && server.iter().all(|c| !load.contains(c)));
    assert_eq!(
        run["machine"]["cores"].as_u64().unwrap(),
        (load.len() + server.len()) as u64,
        "the machine is described before the lab pins itself"
    );
    let log = std::fs::read_to_string(dir.join("native.log")).unwrap();
    assert!(
        log.contains(&format!("threads={} ", server.len())),
        "native.log: {log}"
    );
}

#[test]
fn tiny_suite_writes_results_with_expected_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, results) = run_suite(
        tmp.path(),
        r#"name = "tiny"
variants = ["native", "wasmtime-pooled", "wasmtime-naive"]
workloads = ["hello", "proxy", "echo"]
connections = [2]
duration_secs = 0.3
warmup_secs = 0.1
repetitions = 2
seed = 7

[cold_start]
runs = 2
variants = ["native", "wasmtime-pooled", "wasmtime-pooled-cwasm"]

[warm]
duration_secs = 0.2

[open_loop]
fractions = [0.25, 0.5]
duration_secs = 0.3
connections = 4
workloads = ["hello"]

[equal_load]
duration_secs = 0.2
connections = 4
rates = { echo = [300] }
"#,
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stderr: {stderr}\nstdout: {stdout}");
    assert!(stdout.contains("× native"), "table printed: {stdout}");

    let dir = only_run_dir(&results);
    assert_run_json(&dir);
    assert_csvs(&dir);
    assert_samples(&dir);
    assert_equal_load(&dir);
    assert_files_parse(&dir);
    assert_eq!(leftover_tmp_files(&dir), 0);
    assert_report_complete(&dir);

    assert_the_report_rebuilds_the_same(&dir);
}

/// The Wasm gateway's variants the tiny suite above does not start, each started by the lab,
/// verified on every route and measured for a moment: a recycled and a shared instance, and the
/// three isolation models called asynchronously (the isolation suite's).
#[test]
fn wasmtime_recycled() {
    verified_and_measured("wasmtime-recycled");
}

#[test]
fn wasmtime_shared() {
    verified_and_measured("wasmtime-shared");
}

#[test]
fn wasmtime_pooled_async() {
    verified_and_measured("wasmtime-pooled-async");
}

#[test]
fn wasmtime_recycled_async() {
    verified_and_measured("wasmtime-recycled-async");
}

#[test]
fn wasmtime_shared_async() {
    verified_and_measured("wasmtime-shared-async");
}

/// A suite that allows more repetitions looks at its intervals after its own: with a target no
/// interval meets it adds up to the most allowed, with one every interval meets (two repetitions'
/// intervals are ±100% and more, t being 12.7 on one degree of freedom, and on a busy machine
/// ±400,000% was seen: the target is ±10^14%) it adds none, and
/// `--repetitions` alone fixes the count (no look). What it did is in run.json, the samples, the
/// terminal and the outputs' line on the intervals; after each repetition but the last the
/// terminal gives the answer so far.
#[test]
fn a_run_adds_the_repetitions_its_intervals_ask_for() {
    let suite = |target: f64| {
        format!(
            r#"name = "grow"
variants = ["native", "wasmtime-pooled"]
workloads = ["hello"]
connections = [4]
duration_secs = 0.1
warmup_secs = 0.05
repetitions = 2
max_repetitions = 3
interval_target = {target:?}

[equal_load]
rates = [300]
duration_secs = 0.3
warmup_secs = 0.05
connections = 4
"#
        )
    };
    for (target, extra, added) in [
        (0.0001, &[][..], Some(1)),
        (1e12, &[][..], Some(0)),
        (0.0001, &["--repetitions", "2"][..], None),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let (out, results) = run_suite(tmp.path(), &suite(target), extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let dir = only_run_dir(&results);
        let run = read_json(&dir.join("run.json"));
        // A machine so busy that no lead figure had an interval adds none (checked below).
        let judged = added.is_some() && !run["added_repetitions"]["spread"].is_null();
        let total = 2 + if judged { added.unwrap_or(0) } else { 0 };
        assert_eq!(
            run["suite"]["repetitions"], total,
            "{target} {extra:?} {run}"
        );
        assert_eq!(run["orders"].as_array().unwrap().len(), total as usize);
        let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
        for r in 0..3 {
            let measured = samples.contains(&format!("\"repetition\":{r},"));
            assert_eq!(measured, r < total, "repetition {r}: {target} {extra:?}");
        }
        let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        // The answer so far after each repetition but the last, said to be provisional, with the
        // answer's table; the last repetition's is the final answer.
        let so_far = |done: u32, of: u32| {
            let said = format!("provisional answer, after {done} of {of} repetitions");
            stderr.find(&said).inspect(|at| {
                let table = &stderr[*at..];
                assert!(
                    table.contains("what a request costs against native"),
                    "{stderr}"
                );
                assert!(table.contains("wasmtime-pooled"), "{stderr}");
            })
        };
        // Said one way when the intervals are still wide after the added repetition, the other
        // when they are not.
        let said = |text: &str| {
            text.contains(
                "This run measured 3 repetitions, not 2: after those its intervals were ±",
            ) || text.contains("after 3 repetitions, where after the first 2 they were ±")
        };
        match added {
            Some(_) if run["added_repetitions"]["spread"].is_null() => {
                // No lead figure had an interval (a machine so busy that the equal-load cells
                // fell behind and no server saturated): nothing to judge by, nothing added.
                assert_eq!(run["added_repetitions"]["added"], 0, "{run}");
                assert!(
                    stderr.contains("no figure of the lead has an interval"),
                    "{stderr}"
                );
                skipped_not_installable(
                    "the added repetitions' check: no lead figure had an interval here",
                );
            }
            Some(added) => {
                let look = &run["added_repetitions"];
                assert_eq!(look["after"], 2, "{look}");
                assert_eq!(look["added"], added, "{look}");
                assert_eq!(look["max"], 3, "{look}");
                assert!(look["spread"].as_f64().unwrap() > 0.0, "{look}");
                assert!(
                    stderr.contains("wasmlab: after 2 repetitions the lead's 95% intervals are ±"),
                    "{stderr}"
                );
                let (said_here, message) = match added {
                    1 => (true, "aimed for: 1 more (3 in all, at most 3)"),
                    _ => (false, "aimed for: none added (up to 3 in all when wider)"),
                };
                assert!(stderr.contains(message), "{stderr}");
                let first = so_far(1, 2).unwrap_or_else(|| panic!("{stderr}"));
                assert!(first < stderr.find("wasmlab: after 2 repetitions").unwrap());
                assert_eq!(so_far(2, 3).is_some(), added == 1, "{stderr}");
                assert_eq!(said(&summary), said_here, "{summary}");
                assert_eq!(said(&String::from_utf8_lossy(&out.stdout)), said_here);
            }
            None => {
                assert!(run.get("added_repetitions").is_none(), "{run}");
                assert!(!stderr.contains("after 2 repetitions"), "{stderr}");
                assert!(so_far(1, 2).is_some(), "{stderr}");
                assert!(!stderr.contains("after 2 of"), "{stderr}");
                assert!(!said(&summary));
            }
        }
    }
}

/// Equal load: hello's and proxy's rates chosen from the probed capacities, echo's the suite's;
/// each variant offered its own and native every rate; every cell's CPU read; the answer leads
/// summary.md.
fn assert_equal_load(dir: &Path) {
    let run = read_json(&dir.join("run.json"));
    let chosen = run["equal_load"].as_array().unwrap();
    assert_eq!(chosen.len(), 3, "{chosen:?}");
    let samples: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for e in chosen {
        let w = e["workload"].as_str().unwrap();
        let rates: Vec<f64> = e["rates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_f64().unwrap())
            .collect();
        assert!(!rates.is_empty() && rates.iter().all(|r| *r > 0.0), "{e}");
        let offered = |v: &str| -> Vec<f64> {
            match e["offered"].as_array() {
                None => rates.clone(),
                Some(o) => o
                    .iter()
                    .find(|p| p[0] == v)
                    .map(|p| {
                        p[1].as_array()
                            .unwrap()
                            .iter()
                            .map(|r| r.as_f64().unwrap())
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        };
        if w == "echo" {
            assert_eq!(rates, [300.0], "the suite's rates: {e}");
            assert!(e["slowest"].is_null(), "{e}");
        } else {
            // Each capacity probed; native offered every rate, each other variant rates
            // below its capacity.
            assert_eq!(e["probed"].as_array().unwrap().len(), 3, "{e}");
            assert_eq!(offered("native"), rates, "{e}");
            for p in e["probed"].as_array().unwrap() {
                let (v, cap) = (p[0].as_str().unwrap(), p[1].as_f64().unwrap());
                assert!(!offered(v).is_empty(), "{v}: {e}");
                if v != "native" {
                    assert!(offered(v).iter().all(|r| *r <= cap * 0.6), "{v}: {e}");
                }
            }
        }
        for v in ["native", "wasmtime-pooled", "wasmtime-naive"] {
            for rate in offered(v) {
                let cells: Vec<&serde_json::Value> = samples
                    .iter()
                    .filter(|s| {
                        s["kind"] == "equal_load"
                            && s["variant"] == v
                            && s["workload"] == w
                            && s["rate"].as_f64() == Some(rate)
                    })
                    .collect();
                assert_eq!(cells.len(), 2, "{v} {w} at {rate}: one a repetition");
                for c in cells {
                    let r = &c["resources"];
                    assert!(r["cpu_secs"].as_f64().unwrap() > 0.0, "{c}");
                    let busy = r["utilization"].as_f64().unwrap();
                    assert!(busy > 0.0 && busy < 1.05, "{r}");
                    assert_eq!(c["load"]["open_loop"]["target_rate"].as_f64(), Some(rate));
                }
            }
        }
    }
    let csv = Csv::read(&dir.join("equal_load.csv"));
    assert_eq!(
        csv.rows.len(),
        samples.iter().filter(|s| s["kind"] == "equal_load").count()
    );
    for r in &csv.rows {
        let col = |name| csv.cell(r, name);
        assert_eq!(col("pace"), "offered", "{r:?}");
        assert!(
            col("cpu_us_per_response").parse::<f64>().unwrap() > 0.0,
            "{r:?}"
        );
        assert!(col("rate").parse::<f64>().unwrap() > 0.0, "{r:?}");
    }
    // Every closed-loop cell says what set its pace.
    let csv = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    for l in csv.lines().skip(1) {
        let pace = l.rsplit(',').next().unwrap();
        assert!(
            [
                "saturated",
                "generator-limited",
                "upstream-limited",
                "latency-bound"
            ]
            .contains(&pace),
            "{l}"
        );
    }
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let lead = summary
        .find("## What a request costs against native")
        .unwrap();
    assert!(
        lead < summary.find("## Throughput").unwrap(),
        "the answer first"
    );
    assert!(summary.contains("## Equal load"), "{summary}");
    assert!(summary.contains("| hello | wasmtime-pooled |"), "{summary}");
    // The answer's first line, in every output: the isolation model wasmtime-pooled's file names.
    let model = "- A fresh Wasm instance per request (wasmtime-pooled): ";
    let said = summary.find(model).expect(&summary);
    assert!(lead < said && said < summary.find("| hello | wasmtime-pooled |").unwrap());
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let first = html
        .find("A fresh Wasm instance per request (wasmtime-pooled): ")
        .unwrap();
    let chart = html.find("hello: CPU per request × native").unwrap();
    let table = html.find("<h3>At equal load</h3>").unwrap();
    assert!(
        first < chart && chart < table,
        "the sentences, the chart, then the tables"
    );
}

/// run.json: the run, the machine, the CPUs, the orders, the artifacts and every variant's
/// checks.
fn assert_run_json(dir: &Path) {
    let run = read_json(&dir.join("run.json"));
    assert_eq!(run["state"], "complete");
    assert_eq!(run["suite"]["name"], "tiny");
    assert_eq!(run["seed"], 7);
    assert!(run["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(run["machine"]["cpu_model"].is_string());
    assert!(run["machine"]["kernel"].is_string());
    assert!(run["command"].as_array().unwrap().len() > 2);
    assert_servers_ran_on_their_own_cpus(&run, dir);
    assert_idle_recorded(&run, dir);
    // Each repetition ran every variant once, in a seeded order.
    let orders = run["orders"].as_array().unwrap();
    assert_eq!(orders.len(), 2);
    for o in orders {
        assert_eq!(o.as_array().unwrap().len(), 3);
    }
    let artifacts: Vec<&str> = run["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    for want in ["wasmlab-gateway-native", "core guest (.wasm)", ".cwasm"] {
        assert!(artifacts.iter().any(|a| a.contains(want)), "{artifacts:?}");
    }
    let variants = run["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 4);
    for v in variants {
        assert_eq!(v["status"], "measured", "{v}");
        assert!(
            v["checks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["ok"] == true)
        );
    }
}

/// The CSVs: the gateway study's columns first, a row per cell and run.
fn assert_csvs(dir: &Path) {
    let csv = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap(), THROUGHPUT_COLUMNS);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 18, "3 variants x 3 workloads x 2 runs");
    for r in &rows {
        assert_eq!(r.len(), THROUGHPUT_COLUMNS.split(',').count());
        assert_eq!(r[2], "2");
        let rps: f64 = r[3].parse().unwrap();
        assert!(rps > 0.0, "{r:?}");
        assert_eq!(r[10], "0", "no errors expected: {r:?}");
        let rss: u64 = r[20].parse().unwrap();
        assert!(rss > 1000, "the variant's RSS was sampled: {r:?}");
    }
    let cold = std::fs::read_to_string(dir.join("cold_start.csv")).unwrap();
    assert_eq!(cold.lines().count(), 1 + 3 * 2);
    assert_eq!(
        std::fs::read_to_string(dir.join("warm.csv"))
            .unwrap()
            .lines()
            .count(),
        1 + 3 * 3 * 2
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("open_loop.csv"))
            .unwrap()
            .lines()
            .count(),
        1 + 3 * 2 * 2
    );
}

/// samples.jsonl: the schema, every kind of cell, open-loop counts and cold-start phases in
/// order.
fn assert_samples(dir: &Path) {
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    let samples: Vec<serde_json::Value> = samples
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let count = |kind: &str| samples.iter().filter(|s| s["kind"] == kind).count();
    assert_eq!(count("throughput"), 18);
    assert_eq!(count("cold_start"), 6);
    assert!(samples.iter().all(|s| s["schema"] == 2));
    // The cold starts come after the first repetition, whose answer is said then, and before the
    // second; wasmtime-pooled-cwasm, measured only for its cold start, is prepared then.
    let cold = |s: &&serde_json::Value| s["kind"] == "cold_start";
    let in_repetition =
        |r: u64| move |s: &&serde_json::Value| s["kind"] != "cold_start" && s["repetition"] == r;
    let first_cold = samples.iter().position(|s| cold(&s)).unwrap();
    let last_cold = samples.iter().rposition(|s| cold(&s)).unwrap();
    let first_done = samples.iter().rposition(|s| in_repetition(0)(&s)).unwrap();
    let second = samples.iter().position(|s| in_repetition(1)(&s)).unwrap();
    assert!(
        first_done < first_cold && last_cold < second,
        "repetition 0 ends at {first_done}, cold starts {first_cold}..={last_cold}, repetition 1 starts at {second}"
    );
    // A cell's warm-up opens its connections and the server's resources are read over the
    // measured part alone: no connection opened in it, and the readings' wall time is its 0.3 s
    // (less the moment the first reading takes: 6 ms once on a clean clone's CPUs busy with the
    // other tests; the warm-up's 0.1 s would take it past 0.38).
    for s in samples.iter().filter(|s| s["kind"] == "throughput") {
        assert_eq!(s["load"]["phases"]["connections_opened"], 0, "{s}");
        let wall = s["resources"]["wall_secs"].as_f64().unwrap();
        assert!((0.28..0.38).contains(&wall), "read over {wall} s");
    }
    for s in samples.iter().filter(|s| s["kind"] == "open_loop") {
        let o = &s["load"]["open_loop"];
        assert!(o["target_rate"].as_f64().unwrap() > 0.0, "{o}");
        assert!(!s["uncorrected_histogram"].as_array().unwrap().is_empty());
    }
    for s in samples.iter().filter(|s| s["kind"] == "cold_start") {
        let t = &s["start"];
        let ms = |k: &str| t[k].as_f64().unwrap();
        assert!(ms("listening_ms") > 0.0);
        assert!(ms("listening_ms") <= ms("connected_ms"), "{t}");
        assert!(ms("connected_ms") <= ms("first_byte_ms"), "{t}");
        assert!(ms("first_byte_ms") <= ms("first_200_ms"), "{t}");
    }
}

/// `wasmlab report` rebuilds the same tables from the raw samples alone.
fn assert_the_report_rebuilds_the_same(dir: &Path) {
    let before = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    for f in [
        "throughput.csv",
        "warm.csv",
        "open_loop.csv",
        "cold_start.csv",
        "report.html",
        "summary.md",
    ] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    rebuild_report(dir);
    assert_eq!(
        std::fs::read_to_string(dir.join("throughput.csv")).unwrap(),
        before
    );
}

/// The suite's default idle policy was held where the machine lets the lab (root, a cpuidle
/// driver), with most idle entries polling meanwhile; elsewhere run.json says why not. The
/// summary says which.
fn assert_idle_recorded(run: &serde_json::Value, dir: &Path) {
    let idle = &run["idle"];
    assert_eq!(idle["policy"], "poll", "{idle}");
    if idle["held"] == true {
        let polled = idle["polled_share"].as_f64().unwrap_or(1.0);
        assert!(polled > 0.5, "the request did not take: {idle}");
    } else {
        let why = idle["not_held_because"].as_str().unwrap();
        skipped_not_installable(&format!("the idle request's check: not held here ({why})"));
    }
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(summary.contains("- Idle CPUs: idle CPUs "), "{summary}");
}

#[test]
fn bad_suite_file_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = write(tmp.path(), "bad.toml", "name = \"bad\"\nvariants = [\n");
    let results = tmp.path().to_str().unwrap();
    assert_fails_with(
        &["run", "--suite", &suite, "--no-build", "--results", results],
        "bad.toml",
    );

    assert_fails_with(
        &["run", "--suite", "no-such-suite", "--no-build"],
        "unknown suite",
    );
    assert_fails_with(
        &[
            "run",
            "--cpu-idle",
            "halt",
            "--no-build",
            "--results",
            results,
        ],
        "unknown CPU idle policy \"halt\"",
    );
    assert_fails_with(
        &[
            "run",
            "--suite",
            "libsodium-quick",
            "--cpu-idle",
            "system",
            "--no-build",
            "--results",
            results,
        ],
        "--cpu-idle and --max-repetitions are for HTTP suites",
    );
    // The most a run may grow to is at least what it starts with, and it starts with an interval.
    assert_fails_with(
        &[
            "run",
            "--repetitions",
            "4",
            "--max-repetitions",
            "3",
            "--no-build",
            "--results",
            results,
        ],
        "--max-repetitions 3 is below the run's 4 repetitions",
    );
    assert_fails_with(
        &[
            "run",
            "--repetitions",
            "1",
            "--max-repetitions",
            "4",
            "--no-build",
            "--results",
            results,
        ],
        "one gives no interval",
    );
    let suite = write(
        tmp.path(),
        "idle.toml",
        "name = \"idle\"\nvariants = [\"native\"]\nworkloads = [\"hello\"]\n\
         connections = [1]\nduration_secs = 0.1\ncpu_idle = \"halt\"\n",
    );
    assert_fails_with(
        &["run", "--suite", &suite, "--no-build", "--results", results],
        "cpu_idle",
    );
}

#[test]
fn unknown_variant_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().to_str().unwrap();
    assert_fails_with(
        &[
            "run",
            "--variant",
            "no-such-variant",
            "--no-build",
            "--results",
            results,
        ],
        "unknown variant \"no-such-variant\"",
    );
    // Nothing was measured, so no run directory was made.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// Runs one built-in variant alone on a tiny suite (building what it needs); returns its
/// outcome and the run directory, or None (with the reason printed) when it cannot run here.
fn run_builtin_alone(
    variant: &str,
) -> Option<(serde_json::Value, std::path::PathBuf, tempfile::TempDir)> {
    let tmp = tempfile::tempdir().unwrap();
    let suite = format!("variants = [\"{variant}\"]\n{TINY}");
    let (args, results) = run_args(tmp.path(), &suite);
    // Not --no-build: a variant may build (a static gateway for a container image).
    let args: Vec<String> = args.into_iter().filter(|a| a != "--no-build").collect();
    let out = Command::new(WASMLAB)
        .args(&args)
        .arg("--no-setup")
        .output()
        .unwrap();
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    let outcome = run["variants"][0].clone();
    if outcome["status"] == "skipped" {
        support::skipped(&format!("{variant} cannot run here: {}", outcome["reason"]));
        return None;
    }
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    Some((run, dir, tmp))
}

#[test]
fn the_container_variant_runs_end_to_end_where_an_engine_works() {
    let Some((run, dir, _tmp)) = run_builtin_alone("native-container") else {
        return;
    };
    assert_eq!(run["variants"][0]["status"], "measured");
    assert!(
        run["container_engine"]["version"].is_string(),
        "{}",
        run["container_engine"]
    );
    let image = run["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "native-container image")
        .unwrap_or_else(|| panic!("no image size in {}", run["artifacts"]));
    assert!(image["bytes"].as_u64().unwrap() > 100_000, "{image}");
    // The container's own processes (conmon and the gateway) are sampled with `podman run`.
    for line in std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap()
        .lines()
    {
        let s: serde_json::Value = serde_json::from_str(line).unwrap();
        if s["kind"] == "throughput" {
            assert!(
                s["resources"]["processes_peak"].as_u64().unwrap() >= 2,
                "{s}"
            );
        }
    }
    let cold = std::fs::read_to_string(dir.join("cold_start.csv")).unwrap();
    assert_eq!(cold.lines().count(), 3, "{cold}");
}

#[test]
fn the_wasmtime_cli_variant_runs_end_to_end_where_it_is_set_up() {
    let Some((run, dir, _tmp)) = run_builtin_alone("wasmtime-cli") else {
        return;
    };
    assert_eq!(run["variants"][0]["status"], "measured");
    assert!(
        run["variant_tools"][0]["version"]
            .as_str()
            .unwrap()
            .contains("50.0.1")
    );
    let csv = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    assert!(csv.contains("wasmtime-cli,state,"), "{csv}");
}
