//! The terminal tables, from the analysis.

use crate::analyze::stats::Estimate;
use crate::analyze::{Analysis, BASELINE};

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
            "× native per CPU [95% CI]",
            "× native req/s [95% CI]",
            "p50 ms",
            "p99 ms",
            "errors",
            "flags",
        ]);
        for c in &a.throughput {
            let ratio = |r: &Option<Estimate>| match (r, c.variant == BASELINE) {
                (_, true) => "1".into(),
                (Some(r), false) => with_ci(r, 3),
                (None, false) => "–".into(),
            };
            t.add_row([
                c.variant.clone(),
                c.workload.clone(),
                c.connections.to_string(),
                with_ci(&c.rps, 0),
                ratio(&c.capacity_ratio),
                ratio(&c.ratio_to_native),
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
            "p90 ms",
            "p99 ms",
            "listening p50 ms",
            "× native p50 [95% CI]",
            "RSS after p50 MiB",
        ]);
        for r in &a.cold_start {
            t.add_row([
                r.variant.clone(),
                r.n.to_string(),
                format!("{:.2}", r.first_200.p50),
                format!("{:.2}", r.first_200.p90),
                format!("{:.2}", r.first_200.p99),
                r.listening
                    .map_or_else(|| "–".to_owned(), |l| format!("{:.2}", l.p50)),
                r.ratio_to_native
                    .as_ref()
                    .map_or("–".into(), |e| with_ci(e, 2)),
                super::fmt_rss_after(r),
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
        let late = format!("late (> {:?})", wasmlab_load::LATE_AFTER);
        let mut t = table();
        t.set_header([
            "variant",
            "workload",
            "load",
            "offered req/s",
            "p50 ms",
            "p99 ms",
            "p99 uncorrected ms",
            "dropped",
            late.as_str(),
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
    let not_measured: Vec<_> = a
        .info
        .variants
        .iter()
        .filter(|o| o.status == "failed" || o.status == "skipped")
        .collect();
    if !not_measured.is_empty() {
        let mut t = table();
        t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
        if t.width().is_none() {
            t.set_width(120);
        }
        t.set_header(["variant", "status", "why (and what would enable it)"]);
        for o in &not_measured {
            t.add_row([
                o.name.clone(),
                o.status.clone(),
                o.reason
                    .clone()
                    .unwrap_or_else(|| "no reason recorded".into()),
            ]);
        }
        out += &format!("not measured (in no table above)\n{t}\n");
        // One line each too, whole, for grep and logs.
        for o in not_measured {
            out += &format!(
                "{}: not measured ({}): {}\n",
                o.name,
                o.status,
                o.reason.as_deref().unwrap_or("no reason recorded")
            );
        }
    }
    out
}
