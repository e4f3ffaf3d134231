//! The CSV files (one row per measured run, from the raw samples) and the terminal tables (from
//! the analysis).

use crate::analysis::{Analysis, BASELINE};
use crate::model::{Kind, RunInfo, Sample};
use crate::results::ResultsDir;
use crate::stats::Estimate;

/// The columns of every load cell's row (throughput.csv and warm.csv; open_loop.csv adds
/// [`OPEN_LOOP_EXTRA`]). `throughput.csv` starts with the gateway study's columns.
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

const COLD_START_HEADER: &[&str] = &[
    "variant",
    "launch",
    "listening_ms",
    "connected_ms",
    "first_byte_ms",
    "first_200_ms",
];

fn f(v: f64, decimals: usize) -> String {
    format!("{v:.decimals$}")
}

/// A load cell's values, in [`LOAD_HEADER`]'s order.
fn load_values(s: &Sample) -> Vec<String> {
    let l = s.load.as_ref().expect("load samples only");
    let lat = &l.latency_ms;
    let e = &l.errors;
    let r = s.resources.unwrap_or_default();
    vec![
        s.variant.clone(),
        s.workload.clone().unwrap_or_default(),
        l.connections.to_string(),
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
        r.rss_peak_kib.to_string(),
        f(r.rss_mean_kib, 0),
        f(r.cpu_secs, 3),
    ]
}

/// Writes throughput.csv, warm.csv, open_loop.csv and cold_start.csv from the samples.
/// Writes the CSVs from the samples of the variants that did not fail (see
/// [`crate::analysis::tabled`]).
pub fn write_csvs(dir: &ResultsDir, info: &RunInfo, samples: &[Sample]) -> anyhow::Result<()> {
    let samples = crate::analysis::tabled(info, samples);
    let of = |k: Kind| {
        samples
            .iter()
            .copied()
            .filter(move |s| s.kind == k && s.load.is_some())
    };
    let throughput: Vec<Vec<String>> = of(Kind::Throughput).map(load_values).collect();
    dir.write_csv("throughput.csv", LOAD_HEADER, &throughput)?;
    let warm: Vec<Vec<String>> = of(Kind::Warm).map(load_values).collect();
    dir.write_csv("warm.csv", LOAD_HEADER, &warm)?;
    let open: Vec<Vec<String>> = of(Kind::OpenLoop)
        .filter_map(|s| {
            let o = s.load.as_ref()?.open_loop?;
            let mut row = load_values(s);
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
            ])
        })
        .collect();
    dir.write_csv("cold_start.csv", COLD_START_HEADER, &cold)?;
    Ok(())
}

/// `0.652 [0.611–0.690] n=3` with `decimals` decimals (see [`Estimate::show`]).
pub fn with_ci(e: &Estimate, decimals: usize) -> String {
    e.show(|v| format!("{v:.decimals$}"))
}

fn table() -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t
}

/// The terminal tables: throughput (with each ratio to native and its CI), warm latency, cold
/// start and open loop, whichever the run measured.
pub fn terminal(a: &Analysis) -> String {
    let mut out = String::new();
    if !a.throughput.is_empty() {
        let mut t = table();
        t.set_header([
            "variant",
            "workload",
            "conns",
            "req/s mean [95% CI] n",
            "× native [95% CI]",
            "p50 ms",
            "p99 ms",
            "errors",
            "",
        ]);
        for c in &a.throughput {
            let ratio = match (&c.ratio_to_native, c.variant == BASELINE) {
                (_, true) => "1".into(),
                (Some(r), false) => with_ci(r, 3),
                (None, false) => "–".into(),
            };
            t.add_row([
                c.variant.clone(),
                c.workload.clone(),
                c.connections.to_string(),
                with_ci(&c.rps, 0),
                ratio,
                format!("{:.3}", c.latency.p50),
                format!("{:.3}", c.latency.p99),
                c.errors.total().to_string(),
                if c.generator_saturated_runs > 0 {
                    format!(
                        "generator saturated {}/{}",
                        c.generator_saturated_runs, c.rps.n
                    )
                } else {
                    String::new()
                },
            ]);
        }
        out += &format!("throughput (closed loop)\n{t}\n");
    }
    if !a.cold_start.is_empty() {
        let mut t = table();
        t.set_header([
            "variant",
            "n",
            "first 200 p50 ms",
            "p90",
            "p99",
            "listening p50",
            "× native p50 [95% CI]",
        ]);
        for r in &a.cold_start {
            t.add_row([
                r.variant.clone(),
                r.n.to_string(),
                format!("{:.2}", r.first_200.p50),
                format!("{:.2}", r.first_200.p90),
                format!("{:.2}", r.first_200.p99),
                format!("{:.2}", r.listening.p50),
                r.ratio_to_native
                    .as_ref()
                    .map_or("–".into(), |e| with_ci(e, 2)),
            ]);
        }
        out += &format!("cold start (exec to first complete 200)\n{t}\n");
    }
    if !a.warm.is_empty() {
        let mut t = table();
        t.set_header([
            "variant",
            "workload",
            "runs",
            "requests",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "× native p50 [95% CI]",
        ]);
        for r in &a.warm {
            t.add_row([
                r.variant.clone(),
                r.workload.clone(),
                r.n.to_string(),
                r.requests.to_string(),
                format!("{:.4}", r.latency.p50),
                format!("{:.4}", r.latency.p99),
                format!("{:.4}", r.latency.p99_9),
                r.ratio_to_native
                    .as_ref()
                    .map_or("–".into(), |e| with_ci(e, 3)),
            ]);
        }
        out += &format!("warm latency (one connection)\n{t}\n");
    }
    if !a.open_loop.is_empty() {
        let mut t = table();
        t.set_header([
            "variant",
            "workload",
            "load",
            "offered req/s",
            "p50 ms",
            "p99 ms",
            "p99 uncorrected",
            "dropped",
            "late",
        ]);
        for p in &a.open_loop {
            t.add_row([
                p.variant.clone(),
                p.workload.clone(),
                format!("{:.0}%", p.fraction * 100.0),
                format!("{:.0}", p.offered_rps),
                format!("{:.3}", p.corrected.p50),
                format!("{:.3}", p.corrected.p99),
                format!("{:.3}", p.uncorrected.p99),
                p.dropped.to_string(),
                p.late.to_string(),
            ]);
        }
        out += &format!("open loop (latency from the intended send time)\n{t}\n");
    }
    out
}
