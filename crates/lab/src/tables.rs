//! The CSV files (one row per measured run, from the raw samples) and the terminal tables (from
//! the analysis).

use crate::analysis::{Analysis, BASELINE};
use crate::model::{Kind, Sample};
use crate::results::{CsvRow, ResultsDir};
use crate::stats::Estimate;

/// One row of a CSV file: the header names and one row's fields, in the same order.
struct Row(Vec<(&'static str, String)>);

impl CsvRow for Row {
    fn header(&self) -> Vec<&'static str> {
        self.0.iter().map(|(k, _)| *k).collect()
    }
    fn fields(&self) -> Vec<String> {
        self.0.iter().map(|(_, v)| v.clone()).collect()
    }
}

fn f(v: f64, decimals: usize) -> String {
    format!("{v:.decimals$}")
}

/// The columns common to every load cell.
fn load_columns(s: &Sample) -> Vec<(&'static str, String)> {
    let l = s.load.as_ref().expect("load samples only");
    let lat = &l.latency_ms;
    let e = &l.errors;
    let r = s.resources.unwrap_or_default();
    vec![
        ("variant", s.variant.clone()),
        ("workload", s.workload.clone().unwrap_or_default()),
        ("connections", l.connections.to_string()),
        ("rps", f(l.rps, 1)),
        ("p50_ms", f(lat.p50, 4)),
        ("p90_ms", f(lat.p90, 4)),
        ("p99_ms", f(lat.p99, 4)),
        ("p99_9_ms", f(lat.p99_9, 4)),
        ("max_ms", f(lat.max, 4)),
        ("responses", l.responses.to_string()),
        ("errors", e.total().to_string()),
        ("errors_connect", e.connect.to_string()),
        ("errors_read_write", e.read_write.to_string()),
        ("errors_timeout", e.timeout.to_string()),
        ("errors_non_2xx", e.non_2xx.to_string()),
        ("duration_s", f(l.elapsed_secs, 3)),
        ("repetition", s.repetition.to_string()),
        ("ttfb_p50_ms", f(l.phases.wait.p50, 4)),
        ("generator_busy", f(l.generator_busy, 3)),
        ("generator_saturated", l.generator_saturated.to_string()),
        ("rss_peak_kib", r.rss_peak_kib.to_string()),
        ("rss_mean_kib", f(r.rss_mean_kib, 0)),
        ("cpu_secs", f(r.cpu_secs, 3)),
    ]
}

/// Writes throughput.csv, warm.csv, open_loop.csv and cold_start.csv from the samples.
pub fn write_csvs(dir: &ResultsDir, samples: &[Sample]) -> anyhow::Result<()> {
    let of = |k: Kind| samples.iter().filter(move |s| s.kind == k);
    let throughput: Vec<Row> = of(Kind::Throughput)
        .filter(|s| s.load.is_some())
        .map(|s| Row(load_columns(s)))
        .collect();
    dir.write_csv("throughput.csv", THROUGHPUT_HEADER, &throughput)?;
    let warm: Vec<Row> = of(Kind::Warm)
        .filter(|s| s.load.is_some())
        .map(|s| Row(load_columns(s)))
        .collect();
    dir.write_csv("warm.csv", THROUGHPUT_HEADER, &warm)?;
    let open: Vec<Row> = of(Kind::OpenLoop)
        .filter_map(|s| {
            let o = s.load.as_ref()?.open_loop?;
            let mut cols = load_columns(s);
            cols.extend([
                ("load_fraction", f(s.load_fraction.unwrap_or(0.0), 3)),
                ("target_rps", f(o.target_rate, 1)),
                ("achieved_rps", f(o.achieved_rate, 1)),
                ("intended", o.intended.to_string()),
                ("sent", o.sent.to_string()),
                ("dropped", o.dropped.to_string()),
                ("late", o.late.to_string()),
                ("uncorrected_p50_ms", f(o.uncorrected_ms.p50, 4)),
                ("uncorrected_p99_ms", f(o.uncorrected_ms.p99, 4)),
                ("uncorrected_max_ms", f(o.uncorrected_ms.max, 4)),
            ]);
            Some(Row(cols))
        })
        .collect();
    dir.write_csv("open_loop.csv", OPEN_LOOP_HEADER, &open)?;
    let cold: Vec<Row> = of(Kind::ColdStart)
        .filter_map(|s| {
            let t = s.start?;
            Some(Row(vec![
                ("variant", s.variant.clone()),
                ("launch", s.repetition.to_string()),
                ("listening_ms", f(t.listening_ms, 3)),
                ("connected_ms", f(t.connected_ms, 3)),
                ("first_byte_ms", f(t.first_byte_ms, 3)),
                ("first_200_ms", f(t.first_200_ms, 3)),
            ]))
        })
        .collect();
    dir.write_csv("cold_start.csv", COLD_START_HEADER, &cold)?;
    Ok(())
}

/// Headers of files that may have no rows yet (the columns are known from the row builder).
const THROUGHPUT_HEADER: &[&str] = &[
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

const OPEN_LOOP_HEADER: &[&str] = &[
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

/// `0.652 [0.611, 0.690]`; with fewer than two runs there is no interval: `0.652 (n=1)`.
pub fn with_ci(e: &Estimate, decimals: usize) -> String {
    if e.n < 2 {
        return format!("{:.d$} (n={})", e.value, e.n, d = decimals);
    }
    format!("{:.d$} [{:.d$}, {:.d$}]", e.value, e.lo, e.hi, d = decimals)
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
            "req/s mean [95% CI]",
            "n",
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
                c.rps.n.to_string(),
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
