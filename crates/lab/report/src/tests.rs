//! The reports of a run made up here: every section, escaping, sizes and degenerate figures.

use wasmlab_analysis::servers::{BASELINE, Spectrum, analyse};
use wasmlab_analysis::stats::Estimate;
use wasmlab_analysis::{ProgramAnalysis, ServerAnalysis};
use wasmlab_load::{ErrorCounts, LatencyMs, LoadReport, OpenLoop};
use wasmlab_model::cpus::CpuPlan;
use wasmlab_model::machine::{Machine, Tools};
use wasmlab_model::run::{Artifact, RunHeader, RunState, ServerRunInfo, Status, VariantOutcome};
use wasmlab_model::sample::{Kind, Resources, SAMPLES_SCHEMA, Sample, StartTimes};
use wasmlab_model::study::Study;
use wasmlab_model::suite::ServerSuite;

use crate::format::{fmt_bytes, fmt_errors, fmt_ms, fmt_ratio_est, thousands};
use crate::html::servers as render_html;
use crate::markdown::servers as render_summary_md;

const SECTION_IDS: [&str; 11] = [
    "answer",
    "summary",
    "ratios",
    "throughput",
    "latency",
    "cold-start",
    "open-loop",
    "resources",
    "capacity",
    "environment",
    "method",
];

const SUITE: &str = r#"
name = "t"
description = "a <test> suite & co"
variants = ["native", "wasmtime-pooled"]
workloads = ["hello", "compute"]
connections = [10, 100]
duration_secs = 1.0
warmup_secs = 0.5
repetitions = 2

[cold_start]
runs = 3

[warm]
duration_secs = 1.0

[open_loop]
fractions = [0.5, 0.9]
duration_secs = 1.0
connections = 10
workloads = ["hello"]
"#;

pub(crate) fn info(state: RunState) -> ServerRunInfo {
    ServerRunInfo {
        header: RunHeader {
            schema: SAMPLES_SCHEMA,
            run_id: "20250101T000000Z-t".into(),
            command: vec!["wasmlab".into(), "run".into(), "--suite".into(), "t".into()],
            started_utc: "2025-01-01T00:00:00Z".into(),
            finished_utc: Some("2025-01-01T00:05:00Z".into()),
            state,
            git_sha: Some("0123456789abcdef".into()),
            seed: 42,
            machine: machine(),
        },
        core_guest: None,
        orders: vec![
            vec!["native".into(), "wasmtime-pooled".into()],
            vec!["wasmtime-pooled".into(), "native".into()],
        ],
        cpus: CpuPlan::new(&[0, 1], 1, true),
        suite: ServerSuite::parse(SUITE).expect("test suite parses"),
        artifacts: vec![Artifact {
            name: "guest.wasm".into(),
            path: "target/guests/guest.wasm".into(),
            bytes: 3 * 1024 * 1024 + 17,
        }],
        variants: vec![
            outcome("native", Status::Measured, None),
            outcome("wasmtime-pooled", Status::Measured, None),
            outcome(
                "wasmtime-naive",
                Status::Failed,
                Some("build failed: <linker> & such"),
            ),
            outcome(
                "wasmedge-cli",
                Status::Skipped,
                Some("unavailable here: `wasmedge` is not installed"),
            ),
        ],
        variant_specs: Vec::new(),
        variant_tools: Vec::new(),
        container_engine: None,
    }
}

fn outcome(name: &str, status: Status, reason: Option<&str>) -> VariantOutcome {
    VariantOutcome {
        name: name.into(),
        status,
        reason: reason.map(str::to_owned),
        checks: Vec::new(),
    }
}

/// The analysis of the run made up here.
pub(crate) fn analysis() -> ServerAnalysis {
    analyse(&info(RunState::Complete), &samples())
}

fn machine() -> Machine {
    Machine {
        cpu_model: "Test CPU <3GHz>".into(),
        cores: 2,
        memory_kib: Some(8 * 1024 * 1024),
        kernel: "6.1.0".into(),
        cpu_sha_extensions: false,
        compute_sha256: "portable".into(),
        native_code: "x86_64 with avx2 <bmi2>".into(),
        tools: Tools {
            wasmlab: "0.1.0".into(),
            rustc: Some("rustc 1.95.0".into()),
            wasmtime: Some("48.0.8".into()),
            hyper: None,
            tokio: Some("1.45.0".into()),
        },
    }
}

/// A load report whose latencies spread from `base_ms` upwards.
fn load(conns: usize, rps: f64, base_ms: f64, saturated: bool, rate: Option<f64>) -> LoadReport {
    let mut h = wasmlab_load::new_histogram();
    let mut u = wasmlab_load::new_histogram();
    for i in 0..2_000u64 {
        let ns = (base_ms * 1e6) as u64 + i * i * 50;
        h.record(ns).unwrap();
        u.record(ns / 2 + 1).unwrap();
    }
    let responses = (rps * 1.0) as u64;
    LoadReport {
        url: "/".into(),
        method: "GET".into(),
        connections: conns,
        threads: 1,
        responses,
        ok: responses,
        errors: ErrorCounts {
            connect: 0,
            read_write: u64::from(saturated),
            timeout: 0,
            non_2xx: 0,
        },
        elapsed_secs: 1.0,
        rps,
        latency_ms: LatencyMs::from_histogram(&h),
        phases: Default::default(),
        open_loop: rate.map(|r| OpenLoop {
            target_rate: r,
            intended: r as u64,
            sent: r as u64 - 3,
            dropped: 3,
            late: 7,
            achieved_rate: r * 0.99,
            send_lag_ms: LatencyMs::default(),
            uncorrected_ms: LatencyMs::from_histogram(&u),
        }),
        generator_cpu_secs: 0.5,
        generator_spin: false,
        generator_idle_spin_secs: 0.0,
        generator_busy: if saturated { 0.95 } else { 0.5 },
        generator_saturated: saturated,
        body_bytes: 0,
        status_counts: Default::default(),
        first_error: None,
        histogram: Some(h),
        uncorrected_histogram: rate.map(|_| u),
    }
}

pub(super) fn samples() -> Vec<Sample> {
    let mut out = Vec::new();
    for (vi, v) in ["native", "wasmtime-pooled"].iter().enumerate() {
        let slow = 1.0 + vi as f64 * 0.5;
        for i in 0..3u32 {
            let mut s = Sample::new(Kind::ColdStart, v, i);
            let t = 5.0 * slow + f64::from(i);
            s.start = Some(StartTimes {
                listening_ms: t * 0.6,
                connected_ms: t * 0.7,
                first_byte_ms: t * 0.9,
                first_200_ms: t,
                rss_kib: 4096 * (1 + vi as u64),
            });
            out.push(s);
        }
        for rep in 0..2u32 {
            for w in ["hello", "compute"] {
                for conns in [10usize, 100] {
                    let rps = 10_000.0 / slow * (1.0 + f64::from(rep) * 0.03) * conns as f64 / 50.0;
                    let saturated = vi == 0 && conns == 100 && rep == 1;
                    let mut s = Sample::new(Kind::Throughput, v, rep).with_load(load(
                        conns,
                        rps,
                        0.2 * slow,
                        saturated,
                        None,
                    ));
                    s.workload = Some(w.into());
                    s.resources = Some(Resources {
                        rss_peak_kib: 20_000 + 30_000 * vi as u64,
                        rss_mean_kib: 18_000.0 + 30_000.0 * vi as f64,
                        cpu_secs: 0.8 + 0.1 * f64::from(rep),
                        processes_peak: 1,
                        samples: 10,
                    });
                    out.push(s);
                }
                let mut s = Sample::new(Kind::Warm, v, rep).with_load(load(
                    1,
                    5_000.0,
                    0.05 * slow + 0.001 * f64::from(rep),
                    false,
                    None,
                ));
                s.workload = Some(w.into());
                out.push(s);
            }
            for f in [0.5, 0.9] {
                let mut s = Sample::new(Kind::OpenLoop, v, rep).with_load(load(
                    10,
                    8_000.0 * f,
                    0.3 * slow * (1.0 + f),
                    false,
                    Some(9_000.0 * f / slow),
                ));
                s.workload = Some("hello".into());
                s.load_fraction = Some(f);
                out.push(s);
            }
        }
    }
    out
}

fn assert_offline(html: &str) {
    for bad in [
        "<script",
        "<link",
        "href=\"http",
        "src=\"http",
        "http://",
        "https://",
        "<iframe",
        "@import",
        "url(",
    ] {
        assert!(!html.contains(bad), "report.html contains {bad:?}");
    }
}

#[test]
fn report_full_run() {
    let a = analysis();
    assert_eq!(a.reference_connections, Some(100));
    let html = render_html(&a).unwrap();
    for id in SECTION_IDS {
        assert!(
            html.contains(&format!("<h2 id=\"{id}\"")),
            "missing section {id}"
        );
    }
    assert_offline(&html);
    // Plots, section by section: throughput and loaded spectra one a workload, warm spectra one
    // a warm workload, cold start one, open loop one a workload, resources RSS and CPU one a
    // workload, capacity one a workload.
    let plots_in = |id: &str| {
        let from = html.find(&format!("<h2 id=\"{id}\"")).unwrap();
        let to = html[from + 1..]
            .find("<h2 id=")
            .map_or(html.len(), |i| from + 1 + i);
        html[from..to].matches("<svg").count()
    };
    let workloads = a.workloads.len();
    for (id, at_least) in [
        ("throughput", workloads),
        ("latency", workloads),
        ("cold-start", 1),
        ("open-loop", 1),
        ("resources", 1 + workloads),
        ("capacity", workloads),
    ] {
        assert!(plots_in(id) >= at_least, "{id}: {} plots", plots_in(id));
    }
    assert!(html.contains("<text"), "plots carry their text");
    assert!(!html.contains("not measured"), "every section has data");
    // Data strings are escaped.
    assert!(html.contains("a &lt;test&gt; suite &amp; co"));
    assert!(html.contains("build failed: &lt;linker&gt; &amp; such"));
    assert!(!html.contains("<linker>") && !html.contains("<test>"));
    // The saturated cell is flagged and the flag explained.
    assert!(html.contains("⚠ generator saturated in 1/2 runs"));
    assert!(html.contains("generator saturated in k/n runs:"));
    assert!(html.len() < 400_000, "{} bytes", html.len());

    // Every ratio appears with its CI in both outputs.
    let md = render_summary_md(&a);
    let cell = a.throughput_cell("wasmtime-pooled", "hello", 100).unwrap();
    let r = fmt_ratio_est(cell.ratio_to_native.as_ref());
    assert!(r.contains('[') && r.contains("n=2"), "{r}");
    assert!(md.contains(&r), "summary.md lacks {r}:\n{md}");
    assert!(html.contains(&r));
    let cold = a
        .cold_start
        .iter()
        .find(|c| c.variant == "wasmtime-pooled")
        .unwrap();
    let r = fmt_ratio_est(cold.ratio_to_native.as_ref());
    assert!(
        r.starts_with("1.") && md.contains(&r) && html.contains(&r),
        "{r}"
    );
    let warm = a
        .warm
        .iter()
        .find(|w| w.variant == "wasmtime-pooled" && w.workload == "compute")
        .unwrap();
    let r = fmt_ratio_est(warm.ratio_to_native.as_ref());
    assert!(md.contains(&r) && html.contains(&r), "{r}");
    for section in [
        "## Throughput at 100 connections",
        "## Cold start",
        "## Warm latency",
        "## Open loop",
        "## Resources at 100 connections",
        "## Environment",
    ] {
        assert!(md.contains(section), "summary.md lacks {section}");
    }
    assert!(!md.contains("Not measured"), "{md}");
    assert!(md.contains("⚠ generator saturated in 1/2 runs"));
    assert!(md.contains("⚠ Variant **wasmtime-naive** failed"));
}

#[test]
fn report_without_samples() {
    let mut i = info(RunState::Interrupted);
    i.header.finished_utc = None;
    i.orders.clear();
    i.artifacts.clear();
    let a = analyse(&i, &[]);
    let html = render_html(&a).unwrap();
    for id in SECTION_IDS {
        assert!(
            html.contains(&format!("<h2 id=\"{id}\"")),
            "missing section {id}"
        );
    }
    assert_offline(&html);
    assert!(html.contains("not measured in this run"));
    assert!(html.contains("This run is <b>interrupted</b>"));
    let md = render_summary_md(&a);
    assert!(md.to_lowercase().contains("not measured"), "{md}");
    assert!(md.contains("not complete"));
}

#[test]
fn report_survives_degenerate_figures() {
    let mut a = analysis();
    // One point per series, NaN and zero figures, empty spectra, a missing baseline cell.
    a.throughput.retain(|c| c.connections == 100);
    for c in &mut a.throughput {
        c.rps.value = 0.0;
        c.rps.lo = f64::NAN;
        c.latency.p99 = f64::NAN;
        if let Some(r) = &mut c.resources {
            r.rps_per_core.value = f64::NAN;
            r.cpu_secs_per_1k = Estimate {
                value: 0.0,
                lo: 0.0,
                hi: 0.0,
                n: 1,
            };
        }
    }
    a.throughput
        .retain(|c| !(c.variant == "native" && c.workload == "compute"));
    for s in &mut a.spectra {
        s.points.truncate(1);
    }
    a.spectra.push(Spectrum {
        kind: Kind::Warm,
        variant: "native".into(),
        workload: "hello".into(),
        connections: 1,
        count: 0,
        points: Vec::new(),
    });
    for c in &mut a.cold_start {
        c.values_ms = vec![4.0];
    }
    a.cold_start[0].values_ms = vec![f64::NAN, 0.0];
    for o in &mut a.open_loop {
        o.offered_rps = 0.0;
        o.corrected.p99 = 0.0;
        o.uncorrected.p99 = f64::INFINITY;
    }
    a.open_loop.truncate(1);
    for wr in &mut a.warm {
        wr.ratio_to_native = Some(Estimate {
            value: f64::NAN,
            lo: f64::NAN,
            hi: f64::NAN,
            n: 0,
        });
    }
    let html = render_html(&a).unwrap();
    for id in SECTION_IDS {
        assert!(
            html.contains(&format!("<h2 id=\"{id}\"")),
            "missing section {id}"
        );
    }
    assert_offline(&html);
    let _ = render_summary_md(&a);
}

#[test]
fn report_of_a_gateway_sized_study_stays_small() {
    // 5 variants × 4 workloads × 7 levels, by copying the cells of a small analysis.
    let base = analysis();
    let mut a = base.clone();
    let variants: Vec<String> = (0..5).map(|i| format!("variant-{i}")).collect();
    let workloads: Vec<String> = ["hello", "compute", "proxy", "state"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let levels = [10usize, 50, 100, 200, 400, 800, 1200];
    a.variants = variants.clone();
    a.workloads = workloads.clone();
    a.throughput.clear();
    a.spectra.clear();
    a.warm.clear();
    a.open_loop.clear();
    a.cold_start.clear();
    a.reference_connections = Some(100);
    for (vi, v) in variants.iter().enumerate() {
        let mut cs = base.cold_start[0].clone();
        cs.variant = v.clone();
        cs.values_ms = (0..30)
            .map(|i| 5.0 + f64::from(i) * (vi + 1) as f64)
            .collect();
        a.cold_start.push(cs);
        for w in &workloads {
            for (li, &c) in levels.iter().enumerate() {
                let mut cell = base.throughput[0].clone();
                cell.variant = v.clone();
                cell.workload = w.clone();
                cell.connections = c;
                cell.rps.value *= 1.0 + li as f64 * 0.1;
                a.throughput.push(cell);
            }
            let mut wr = base.warm[0].clone();
            wr.variant = v.clone();
            wr.workload = w.clone();
            a.warm.push(wr);
            for s in base.spectra.iter().take(2) {
                let mut s = s.clone();
                s.variant = v.clone();
                s.workload = w.clone();
                a.spectra.push(s);
            }
            for o in base.open_loop.iter().take(4) {
                let mut o = o.clone();
                o.variant = v.clone();
                o.workload = w.clone();
                a.open_loop.push(o);
            }
        }
    }
    let html = render_html(&a).unwrap();
    assert_offline(&html);
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
    let md = render_summary_md(&a);
    assert!(md.len() < 100_000);
}

#[test]
fn report_number_formats() {
    assert_eq!(thousands(1_234_567.4), "1,234,567");
    assert_eq!(thousands(-999.6), "-1,000");
    assert_eq!(thousands(f64::NAN), "–");
    assert_eq!(fmt_ms(0.123_456), "0.123");
    assert_eq!(fmt_ms(12.345), "12.35");
    assert_eq!(fmt_ms(1234.6), "1,235");
    let e = Estimate {
        value: 0.6523,
        lo: 0.611,
        hi: 0.69,
        n: 3,
    };
    assert_eq!(fmt_ratio_est(Some(&e)), "0.652 [0.611–0.690] n=3");
    assert_eq!(fmt_ratio_est(None), "–");
    assert_eq!(fmt_errors(&ErrorCounts::default()), "0");
    let errs = ErrorCounts {
        connect: 2,
        read_write: 0,
        timeout: 1_000,
        non_2xx: 0,
    };
    assert_eq!(fmt_errors(&errs), "1,002 (connect 2, timeout 1,000)");
    assert_eq!(fmt_bytes(3 * 1024 * 1024), "3.00 MiB");
    assert_eq!(fmt_bytes(2048), "2.0 KiB");
}

/// Every table row has as many cells as its table's header; a key-value table, one key and one
/// value per row. Parses the rendered HTML crudely: tables are not nested, and SVG has none.
fn assert_rows_match_headers(html: &str) {
    let count = |s: &str, tag: &str| {
        s.matches(&format!("<{tag}>")).count() + s.matches(&format!("<{tag} ")).count()
    };
    let mut tables = 0;
    for chunk in html.split("<table").skip(1) {
        let table = chunk.split("</table>").next().unwrap();
        let rows: Vec<&str> = table
            .split("<tr>")
            .skip(1)
            .map(|r| r.split("</tr>").next().unwrap())
            .collect();
        assert!(!rows.is_empty(), "a table without rows: {table}");
        if table.starts_with(" class=\"kv\"") {
            for r in &rows {
                assert_eq!((count(r, "th"), count(r, "td")), (1, 1), "{r}");
            }
        } else {
            let head = count(rows[0], "th");
            assert!(head > 0 && count(rows[0], "td") == 0, "{}", rows[0]);
            for r in &rows[1..] {
                assert_eq!(
                    count(r, "td"),
                    head,
                    "a row unlike its header {}: {r}",
                    rows[0]
                );
                assert_eq!(count(r, "th"), 0, "{r}");
            }
        }
        tables += 1;
    }
    assert!(tables >= 3, "{tables} tables");
}

#[test]
fn report_rows_have_as_many_cells_as_headers() {
    let full = analysis();
    let mut i = info(RunState::Interrupted);
    i.header.finished_utc = None;
    i.orders.clear();
    i.artifacts.clear();
    let empty = analyse(&i, &[]);
    let mut no_baseline = full.clone();
    no_baseline.variants.retain(|v| v != BASELINE);
    no_baseline.throughput.retain(|c| c.variant != BASELINE);
    for a in [&full, &empty, &no_baseline] {
        assert_rows_match_headers(&render_html(a).unwrap());
    }
}

#[test]
fn report_escapes_hostile_names() {
    const EVIL: &str = "<script>&\"'";
    const ESCAPED: &str = "&lt;script&gt;&amp;&quot;&#x27;";
    let mut i = info(RunState::Complete);
    i.suite.description = format!("described {EVIL}");
    i.variants[2].reason = Some(format!("failed {EVIL}"));
    // The measured variant's name everywhere it is shown: tables, legends, orders, the suite.
    let mut s = samples();
    for x in &mut s {
        if x.variant == "wasmtime-pooled" {
            x.variant = format!("pooled{EVIL}");
        }
    }
    i.variants[1].name = format!("pooled{EVIL}");
    i.suite.variants[1] = format!("pooled{EVIL}");
    for o in &mut i.orders {
        for v in o.iter_mut().filter(|v| *v == "wasmtime-pooled") {
            *v = format!("pooled{EVIL}");
        }
    }
    let a = analyse(&i, &s);
    assert!(
        a.variants.iter().any(|v| v.contains(EVIL)),
        "{:?}",
        a.variants
    );
    let html = render_html(&a).unwrap();
    assert_offline(&html);
    assert!(!html.contains(EVIL), "unescaped");
    for shown in [
        format!("described {ESCAPED}"),
        format!("failed {ESCAPED}"),
        format!("</span>pooled{ESCAPED}</span></td>"),
    ] {
        assert!(html.contains(&shown), "{shown} missing");
    }
    assert_rows_match_headers(&html);
}

fn program_analysis(iterations: u32) -> ProgramAnalysis {
    ProgramAnalysis {
        run_id: "r".into(),
        suite: "s".into(),
        description: String::new(),
        baseline: "native-portable".into(),
        repetitions: 1,
        programs: vec!["kdf".into()],
        program_set: serde_json::json!({ "iterations": iterations }),
        machine: "m".into(),
        cpus: "c".into(),
        engines: Vec::new(),
        cells: Vec::new(),
        study: Some(Study::load("libsodium").unwrap()),
        beside_study: Vec::new(),
        state: RunState::Complete,
    }
}

#[test]
fn another_iteration_count_than_the_studys_is_said_beside_it() {
    let other = program_analysis(10);
    assert!(crate::markdown::programs(&other).contains("Not the study's iteration count"));
    assert!(
        crate::html::programs(&other)
            .unwrap()
            .contains("Not the study's iteration count")
    );
    let same = program_analysis(200);
    assert!(!crate::markdown::programs(&same).contains("Not the study's iteration count"));
    assert!(
        !crate::html::programs(&same)
            .unwrap()
            .contains("iteration count")
    );
}
