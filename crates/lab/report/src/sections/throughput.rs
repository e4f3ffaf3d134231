//! The closed-loop cells: each variant on each workload at each concurrency level, its throughput,
//! capacity and latency, and their columns.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::{BASELINE, ThroughputCell};

use super::{
    CAPACITY_HEAD, Conditional, Ratio, Saturation, busy, connection_levels, pace_flag, ratio,
};
use crate::format::{fmt_errors, fmt_ms, fmt_rps, percent, thousands};
use crate::table::{Column, Shows, Value, figure, text};
/// One closed-loop cell: a variant on a workload at a concurrency level, over its runs.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Throughput {
    pub variant: String,
    pub workload: String,
    pub connections: usize,
    /// req/s: mean [95% CI] n.
    pub rps: String,
    /// The mean alone.
    pub rps_mean: String,
    /// The share of its CPUs the variant kept busy (mean over the runs).
    pub server_busy: String,
    /// Responses per CPU-second of the server over native's, where both were saturated.
    pub capacity: Conditional,
    /// req/s over native's.
    pub ratio: Ratio,
    pub p50: String,
    pub p99: String,
    /// Responses, all runs together.
    pub responses: String,
    /// Errors in all, with their classes; and the total alone.
    pub errors: String,
    pub errors_total: String,
    /// The share of the time the load generator was busy.
    pub busy: String,
    pub saturation: Option<Saturation>,
}

/// Every closed-loop cell: by workload, then variant, then concurrency level.
pub(crate) fn throughput(a: &ServerAnalysis) -> Vec<Throughput> {
    let mut rows = Vec::new();
    for w in &a.workloads {
        for v in &a.variants {
            let mut cells: Vec<&ThroughputCell> = a
                .throughput
                .iter()
                .filter(|c| &c.workload == w && &c.variant == v)
                .collect();
            cells.sort_by_key(|c| c.connections);
            rows.extend(cells.into_iter().map(|c| Throughput {
                variant: c.variant.clone(),
                workload: c.workload.clone(),
                connections: c.connections,
                rps: c.rps.show(fmt_rps),
                rps_mean: fmt_rps(c.rps.value),
                server_busy: busy(a, v, c.utilization),
                capacity: capacity(a, c),
                ratio: Ratio::of(v, c.ratio_to_native.as_ref()),
                p50: fmt_ms(c.latency.p50),
                p99: fmt_ms(c.latency.p99),
                responses: thousands(c.responses as f64),
                errors: fmt_errors(&c.errors),
                errors_total: thousands(c.errors.total() as f64),
                busy: percent(c.generator_busy),
                saturation: Saturation::of(c, None),
            }));
        }
    }
    rows
}

/// A closed-loop cell's capacity over native's, where both servers were saturated.
pub(crate) fn capacity(a: &ServerAnalysis, c: &ThroughputCell) -> Conditional {
    if !a.observable(&c.variant) {
        return Conditional::not_observable();
    }
    if c.variant == BASELINE && c.saturated_runs() > 0 {
        // Native's own runs: the baseline where it was saturated, flagged where it was not.
        let mut baseline = Conditional::words("1 (baseline)".into(), "1 (baseline)".into());
        baseline.flags = c
            .capacity_notes
            .iter()
            .map(|n| pace_flag(n, &c.variant))
            .collect();
        return baseline;
    }
    if c.paces.is_empty() {
        // Results older than the CPU plan: how busy the server was is not known.
        return Conditional::words("not recorded".into(), "not recorded".into());
    }
    Conditional::of(c.capacity_ratio.as_ref(), &c.capacity_notes, &c.variant)
}

/// The closed-loop cells' columns. The terminal shows every cell, summary.md each workload's
/// at the reference level, report.html each workload's; the narrow terminal their level only
/// when the run measured several.
pub(crate) fn throughput_columns<'a>(a: &ServerAnalysis) -> Vec<Column<'a, Throughput>> {
    let levels = match connection_levels(a).len() {
        1 => Shows::WIDE.and(Shows::HTML),
        _ => Shows::TERMINAL.and(Shows::HTML),
    };
    vec![
        text("Variant", Shows::ALL, |r: &Throughput| {
            Value::variant(&r.variant)
        }),
        text("Workload", Shows::TERMINAL, |r: &Throughput| {
            r.workload.as_str().into()
        }),
        figure("Conns", levels, |r: &Throughput| {
            r.connections.to_string().into()
        }),
        figure(
            "req/s mean [95% CI] n",
            Shows::DETAILED,
            |r: &Throughput| r.rps.as_str().into(),
        ),
        // The mean alone; a saturated generator marked, the note below the table.
        figure("req/s", Shows::NARROW, |r: &Throughput| {
            match r.saturation {
                Some(_) => format!("{} ⚠", r.rps_mean),
                None => r.rps_mean.clone(),
            }
            .into()
        }),
        figure("Server busy", Shows::ALL, |r: &Throughput| {
            r.server_busy.as_str().into()
        }),
        figure(CAPACITY_HEAD, Shows::DETAILED, |r: &Throughput| {
            r.capacity.value()
        }),
        figure(CAPACITY_HEAD, Shows::NARROW, |r: &Throughput| {
            r.capacity.short.as_str().into()
        }),
        figure(
            "× native req/s [95% CI] n",
            Shows::DETAILED,
            |r: &Throughput| ratio(&r.ratio),
        ),
        figure("p50 ms", Shows::DETAILED, |r: &Throughput| {
            r.p50.as_str().into()
        }),
        figure("p99 ms", Shows::ALL, |r: &Throughput| r.p99.as_str().into()),
        figure("Responses (all runs)", Shows::HTML, |r: &Throughput| {
            r.responses.as_str().into()
        }),
        figure("Errors", Shows::DETAILED, |r: &Throughput| {
            r.errors.as_str().into()
        }),
        figure("Errors", Shows::NARROW, |r: &Throughput| {
            r.errors_total.as_str().into()
        }),
        figure("Generator busy", Shows::HTML, |r: &Throughput| {
            r.busy.as_str().into()
        }),
        figure("Flags", Shows::DETAILED, |r: &Throughput| {
            Value::flags(r.saturation.iter().map(Saturation::flag).collect())
        }),
    ]
}
