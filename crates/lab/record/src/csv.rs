//! The CSV files: one row per measured cell or program run, from the raw samples.

use wasmlab_model::run::ServerRunInfo;
use wasmlab_model::sample::{Kind, ProgramSample, Sample};

use crate::dir::ResultsDir;

/// The columns of every load cell's row (throughput.csv and warm.csv; open_loop.csv adds
/// [`OPEN_LOOP_EXTRA`]). `throughput.csv` starts with the gateway study's columns.
/// `connections` is the level, the requests in flight; over HTTP/2 they travel on
/// `tcp_connections` of `streams` each.
const LOAD_HEADER: &[&str] = &[
    "variant",
    "workload",
    "connections",
    "rps",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p99_9_ms",
    "max_ms",
    "responses",
    "errors",
    "errors_connect",
    "errors_read_write",
    "errors_timeout",
    "errors_non_2xx",
    "duration_s",
    "repetition",
    "ttfb_p50_ms",
    "generator_busy",
    "generator_saturated",
    "rss_peak_kib",
    "rss_mean_kib",
    "cpu_secs",
    "protocol",
    "tcp_connections",
    "streams",
    "cpu_us_per_response",
    "wall_s",
    "server_cpus",
    "utilization",
    "busiest_thread",
    "upstream_cpu_secs",
    "pace",
];

const OPEN_LOOP_EXTRA: &[&str] = &[
    "load_fraction",
    "target_rps",
    "achieved_rps",
    "intended",
    "sent",
    "dropped",
    "late",
    "uncorrected_p50_ms",
    "uncorrected_p99_ms",
    "uncorrected_max_ms",
];

const EQUAL_LOAD_EXTRA: &[&str] = &[
    "rate",
    "achieved_rps",
    "intended",
    "sent",
    "dropped",
    "late",
    "uncorrected_p50_ms",
    "uncorrected_p99_ms",
    "over_capacity",
];

const COLD_START_HEADER: &[&str] = &[
    "variant",
    "launch",
    "listening_ms",
    "connected_ms",
    "first_byte_ms",
    "first_200_ms",
    "rss_kib",
];

fn f(v: f64, decimals: usize) -> String {
    format!("{v:.decimals$}")
}

/// A load cell's values, in [`LOAD_HEADER`]'s order; `server_cpus` is what the variant could
/// use where the sample does not say (the run's CPU plan).
fn load_values(s: &Sample, server_cpus: usize) -> Vec<String> {
    let l = s.load.as_ref().expect("load samples only");
    let lat = &l.latency_ms;
    let e = &l.errors;
    // Not sampled (a remote target's processes): said, not written as zeros.
    let (rss_peak, rss_mean, cpu) = match &s.resources {
        Some(r) => (
            r.rss_peak_kib.to_string(),
            f(r.rss_mean_kib, 0),
            f(r.cpu_secs, 3),
        ),
        None => [
            "not observable".to_owned(),
            "not observable".into(),
            "not observable".into(),
        ]
        .into(),
    };
    let mut values = vec![
        s.variant.clone(),
        s.workload.clone().unwrap_or_default(),
        // The level: the requests in flight, over either protocol.
        s.connections.unwrap_or(l.connections).to_string(),
        f(l.rps, 1),
        f(lat.p50, 4),
        f(lat.p90, 4),
        f(lat.p99, 4),
        f(lat.p99_9, 4),
        f(lat.max, 4),
        l.responses.to_string(),
        e.total().to_string(),
        e.connect.to_string(),
        e.read_write.to_string(),
        e.timeout.to_string(),
        e.non_2xx.to_string(),
        f(l.elapsed_secs, 3),
        s.repetition.to_string(),
        f(l.phases.wait.p50, 4),
        f(l.generator_busy, 3),
        l.generator_saturated.to_string(),
        rss_peak,
        rss_mean,
        cpu,
        if l.http2 { "h2" } else { "http/1.1" }.to_owned(),
        l.connections.to_string(),
        l.streams.max(1).to_string(),
    ];
    let cpus = s.cpus_or(server_cpus);
    // Not read (a remote target's processes): said; not recorded (older results): empty.
    let unobserved = if s.resources.is_some() {
        String::new()
    } else {
        "not observable".to_owned()
    };
    let opt = |v: Option<f64>, d: usize| v.map_or_else(|| unobserved.clone(), |v| f(v, d));
    let r = s.resources.as_ref();
    values.extend([
        opt(s.cpu_us_per_response(), 3),
        opt(r.map(|r| r.wall_secs).filter(|w| *w > 0.0), 3),
        r.map_or_else(|| unobserved.clone(), |_| cpus.to_string()),
        opt(s.utilization(cpus), 4),
        opt(r.and_then(|r| r.busiest_thread), 4),
        opt(r.and_then(|r| r.upstream_cpu_secs), 4),
        match s.kind {
            // An open loop's pace is its schedule's.
            Kind::OpenLoop | Kind::EqualLoad => "offered".to_owned(),
            _ => s
                .pace(cpus)
                .map_or_else(|| unobserved.clone(), |p| p.as_str().to_owned()),
        },
    ]);
    values
}

/// Writes throughput.csv, warm.csv, open_loop.csv and cold_start.csv from the samples of the
/// variants that did not fail (see [`ServerRunInfo::tabled`]).
pub fn write_server_csvs(
    dir: &ResultsDir,
    info: &ServerRunInfo,
    samples: &[Sample],
) -> anyhow::Result<()> {
    let samples = info.tabled(samples);
    let cpus = info.cpus.server_count();
    let of = |k: Kind| {
        samples
            .iter()
            .copied()
            .filter(move |s| s.kind == k && s.load.is_some())
    };
    let values = |s: &Sample| load_values(s, cpus);
    let throughput: Vec<Vec<String>> = of(Kind::Throughput).map(values).collect();
    dir.write_csv("throughput.csv", LOAD_HEADER, &throughput)?;
    let warm: Vec<Vec<String>> = of(Kind::Warm).map(values).collect();
    dir.write_csv("warm.csv", LOAD_HEADER, &warm)?;
    let equal: Vec<Vec<String>> = of(Kind::EqualLoad)
        .filter_map(|s| {
            let l = s.load.as_ref()?;
            let o = l.open_loop?;
            let mut row = values(s);
            row.extend([
                f(s.rate.unwrap_or(o.target_rate), 1),
                f(l.rps, 1),
                o.intended.to_string(),
                o.sent.to_string(),
                o.dropped.to_string(),
                o.late.to_string(),
                f(o.uncorrected_ms.p50, 4),
                f(o.uncorrected_ms.p99, 4),
                s.over_capacity().to_string(),
            ]);
            Some(row)
        })
        .collect();
    dir.write_csv(
        "equal_load.csv",
        &[LOAD_HEADER, EQUAL_LOAD_EXTRA].concat(),
        &equal,
    )?;
    let open: Vec<Vec<String>> = of(Kind::OpenLoop)
        .filter_map(|s| {
            let o = s.load.as_ref()?.open_loop?;
            let mut row = values(s);
            row.extend([
                f(s.load_fraction.unwrap_or(0.0), 3),
                f(o.target_rate, 1),
                f(o.achieved_rate, 1),
                o.intended.to_string(),
                o.sent.to_string(),
                o.dropped.to_string(),
                o.late.to_string(),
                f(o.uncorrected_ms.p50, 4),
                f(o.uncorrected_ms.p99, 4),
                f(o.uncorrected_ms.max, 4),
            ]);
            Some(row)
        })
        .collect();
    dir.write_csv(
        "open_loop.csv",
        &[LOAD_HEADER, OPEN_LOOP_EXTRA].concat(),
        &open,
    )?;
    let cold: Vec<Vec<String>> = samples
        .iter()
        .filter(|s| s.kind == Kind::ColdStart)
        .filter_map(|s| {
            let t = s.start?;
            Some(vec![
                s.variant.clone(),
                s.repetition.to_string(),
                f(t.listening_ms, 3),
                f(t.connected_ms, 3),
                f(t.first_byte_ms, 3),
                f(t.first_200_ms, 3),
                t.rss_kib.to_string(),
            ])
        })
        .collect();
    dir.write_csv("cold_start.csv", COLD_START_HEADER, &cold)?;
    Ok(())
}

/// The columns of programs.csv.
const PROGRAMS_HEADER: &[&str] = &[
    "engine",
    "program",
    "repetition",
    "wall_ms",
    "compile_ms",
    "instantiate_ms",
    "execute_ms",
    "body_us_per_iteration",
    "error",
];

/// Writes programs.csv: one row per program run (repetitions counted from 1).
pub fn write_programs_csv(dir: &ResultsDir, samples: &[ProgramSample]) -> anyhow::Result<()> {
    let f = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.4}"));
    let rows: Vec<Vec<String>> = samples
        .iter()
        .map(|s| {
            vec![
                s.engine.clone(),
                s.program.clone(),
                (s.repetition + 1).to_string(),
                f(Some(s.wall_ms).filter(|v| v.is_finite())),
                f(s.phases.map(|p| p.compile_ms)),
                f(s.phases.map(|p| p.instantiate_ms)),
                f(s.phases.map(|p| p.execute_ms)),
                f(s.body_us),
                s.error.clone(),
            ]
        })
        .collect();
    dir.write_csv("programs.csv", PROGRAMS_HEADER, &rows)
}
