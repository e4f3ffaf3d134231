//! The reports of a run made up here (this module's fixtures): every section and output
//! (`outputs`), and report.html's markup (`html`): escaping, tables, sizes, degenerate figures.

mod html;
mod outputs;

use wasmlab_analysis::analyse_servers as analyse;
use wasmlab_analysis::servers::{BASELINE, Spectrum};
use wasmlab_analysis::stats::Estimate;
use wasmlab_analysis::{ProgramAnalysis, ServerAnalysis};
use wasmlab_load_data::{ErrorCounts, LatencyMs, LoadReport, OpenLoop};
use wasmlab_model::cpus::CpuPlan;
use wasmlab_model::machine::{Machine, Tools};
use wasmlab_model::run::{
    Artifact, EqualLoadRates, RunHeader, RunState, ServerRunInfo, Status, VariantOutcome,
};
use wasmlab_model::sample::{Kind, Resources, SAMPLES_SCHEMA, Sample, StartTimes};
use wasmlab_model::study::Study;
use wasmlab_model::suite::ServerSuite;

use crate::format::{SERVER_RATIO, fmt_bytes, fmt_errors, fmt_ms, thousands};

pub(crate) const SECTION_IDS: [&str; 12] = [
    "answer",
    "summary",
    "ratios",
    "throughput",
    "equal-load",
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

[equal_load]
duration_secs = 1.0
workloads = ["hello"]

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
            cwd: None,
            started_utc: "2025-01-01T00:00:00Z".into(),
            finished_utc: Some("2025-01-01T00:05:00Z".into()),
            state,
            git_sha: Some("0123456789abcdef".into()),
            seed: 42,
            machine: machine(),
        },
        core_guest: None,
        components: Vec::new(),
        orders: vec![
            vec!["native".into(), "wasmtime-pooled".into()],
            vec!["wasmtime-pooled".into(), "native".into()],
        ],
        cpus: CpuPlan::new(&[0, 1], 1, true),
        idle: None,
        suite: ServerSuite::parse(SUITE).expect("test suite parses"),
        artifacts: vec![Artifact {
            name: "guest.wasm".into(),
            path: "target/guests/guest.wasm".into(),
            bytes: 3 * 1024 * 1024 + 17,
            version: None,
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
        containerd: None,
        equal_load: vec![EqualLoadRates {
            workload: "hello".into(),
            rates: vec![1_000.0, 2_000.0],
            offered: Vec::new(),
            slowest: Some(("wasmtime-pooled".into(), 4_000.0)),
            probed: vec![
                ("native".into(), 9_000.0),
                ("wasmtime-pooled".into(), 4_000.0),
            ],
            kept: None,
        }],
        added_repetitions: None,
        resumed: Vec::new(),
    }
}

pub(crate) fn outcome(name: &str, status: Status, reason: Option<&str>) -> VariantOutcome {
    VariantOutcome {
        name: name.into(),
        status,
        reason: reason.map(str::to_owned),
        checks: Vec::new(),
        env: Default::default(),
    }
}

/// A server variant named `name`, as a test's run records one.
pub(crate) fn spec(name: &str) -> wasmlab_model::variant::VariantSpec {
    wasmlab_model::variant::VariantSpec::parse(
        &format!(
            "name = {name:?}\nabout = \"x\"\n[start]\ncommand = [\"x\"]\naddress = \"port\"\n"
        ),
        "test",
    )
    .unwrap()
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
    let mut h = wasmlab_load_data::new_histogram();
    let mut u = wasmlab_load_data::new_histogram();
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
        generators: 1,
        warm_up_secs: None,
        http2: false,
        streams: 1,
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

pub(crate) fn samples() -> Vec<Sample> {
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
                    // Saturated, but where the generator set the pace (native hello at 100,
                    // second run) and in wasmtime-pooled's compute at 10 connections, where
                    // its requests' latency did.
                    let idle = saturated || (vi == 1 && w == "compute" && conns == 10);
                    let cpu_secs = if idle { 0.6 } else { 0.95 } + 0.02 * f64::from(rep);
                    s.resources = Some(resources(vi, cpu_secs));
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
            // Equal load: hello at 1,000 and 2,000 req/s; native spends 20 µs a request,
            // wasmtime-pooled 26, and falls behind 2,000 in its second run.
            for rate in [1_000.0, 2_000.0] {
                let behind = vi == 1 && rate == 2_000.0 && rep == 1;
                let answered = if behind { rate * 0.8 } else { rate };
                let mut s = Sample::new(Kind::EqualLoad, v, rep).with_load(load(
                    50,
                    answered,
                    0.1 * slow,
                    false,
                    Some(rate),
                ));
                s.workload = Some("hello".into());
                s.rate = Some(rate);
                let per_request = (20.0 + 6.0 * vi as f64) * 1e-6 * (1.0 + 0.01 * f64::from(rep));
                s.resources = Some(resources(vi, answered * per_request));
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

/// A cell's resources: `cpu_secs` over a second on one CPU.
pub(crate) fn resources(vi: usize, cpu_secs: f64) -> Resources {
    Resources {
        rss_peak_kib: 20_000 + 30_000 * vi as u64,
        rss_mean_kib: 18_000.0 + 30_000.0 * vi as f64,
        cpu_secs,
        processes_peak: 1,
        samples: 10,
        wall_secs: 1.0,
        cpus: 1,
        utilization: Some(cpu_secs),
        busiest_thread: Some(cpu_secs * 0.9),
        upstream_cpu_secs: Some(0.0),
    }
}

pub(crate) fn assert_offline(html: &str) {
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

/// A server run's report.html.
pub(crate) fn render_html(a: &ServerAnalysis) -> anyhow::Result<String> {
    crate::view::servers(a).report_html
}

/// A server run's summary.md.
pub(crate) fn render_summary_md(a: &ServerAnalysis) -> String {
    crate::view::servers(a)
        .summary_md
        .expect("summary.md renders")
}
