//! Equal load: what a request cost each variant at the rates every variant and native were offered,
//! and its columns.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::{BASELINE, EqualLoadPoint};

use super::{Conditional, NOT_OBSERVABLE, Ratio, busy};
use crate::format::{SERVER_RATIO, fmt_errors, fmt_ms, fmt_rps, fmt_us, thousands};
use crate::table::{Column, Flag, Shows, Value, figure, text};
/// A variant on a workload at an equal-load rate: what a request cost it there, against native.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct EqualLoad {
    pub variant: String,
    pub workload: String,
    pub rate: f64,
    pub n: usize,
    pub offered: String,
    /// Responses a second (mean over the runs).
    pub achieved: String,
    pub server_busy: String,
    /// CPU µs per request of the variant's processes [95% CI] n.
    pub cpu_us: String,
    /// Its ratio to native's at the same rate, or why there is none.
    pub ratio: Conditional,
    /// Corrected latency (from the intended send time), and uncorrected, ms.
    pub p50: String,
    pub p99: String,
    pub uncorrected_p99: String,
    pub dropped: String,
    pub errors: String,
    /// The runs that fell short of the rate.
    pub over_capacity: Option<Flag>,
}

/// Every equal-load point: by workload, then rate, then variant.
pub(crate) fn equal_load(a: &ServerAnalysis) -> Vec<EqualLoad> {
    let mut rows = Vec::new();
    for w in &a.workloads {
        for rate in a.equal_load_rates(w) {
            for p in a.equal_load_at(w, rate) {
                rows.push(equal_load_row(a, p));
            }
        }
    }
    rows
}

fn equal_load_row(a: &ServerAnalysis, p: &EqualLoadPoint) -> EqualLoad {
    let observable = a.observable(&p.variant);
    let ratio = if !observable {
        Conditional::not_observable()
    } else if p.variant == BASELINE {
        match p.over_capacity_runs {
            0 => Conditional::words("1 (baseline)".into(), "1 (baseline)".into()),
            _ => Conditional::words("none: over capacity".into(), "none: over capacity".into()),
        }
    } else {
        match (&p.cost_ratio, &p.ratio_note) {
            (Some(e), _) => Conditional {
                ratio: Ratio::plain(Some(e)),
                short: SERVER_RATIO.estimate(Some(e)),
                flags: Vec::new(),
            },
            (None, Some(why)) => {
                Conditional::words(format!("none: {why}"), "none: over capacity".into())
            }
            (None, None) => Conditional::words("–".into(), "–".into()),
        }
    };
    EqualLoad {
        variant: p.variant.clone(),
        workload: p.workload.clone(),
        rate: p.rate,
        n: p.n,
        offered: fmt_rps(p.rate),
        achieved: fmt_rps(p.achieved_rps),
        server_busy: busy(a, &p.variant, p.utilization),
        cpu_us: match observable {
            true => p.cpu_us.show(fmt_us),
            false => NOT_OBSERVABLE.into(),
        },
        ratio,
        p50: fmt_ms(p.runs.corrected.p50),
        p99: fmt_ms(p.runs.corrected.p99),
        uncorrected_p99: fmt_ms(p.runs.uncorrected.p99),
        dropped: thousands(p.runs.dropped as f64),
        errors: fmt_errors(&p.runs.errors),
        over_capacity: (p.over_capacity_runs > 0).then(|| Flag {
            whose: None,
            what: "over capacity".into(),
            count: p.over_capacity_runs,
            runs: p.n,
        }),
    }
}

/// How each workload's equal-load rates were chosen: `hello: 2000 and 30000 req/s, …`.
pub(crate) fn equal_load_rates(a: &ServerAnalysis) -> Vec<String> {
    a.info
        .equal_load
        .iter()
        .map(|e| format!("{}: {}", e.workload, e.describe()))
        .collect()
}

/// The head of an equal-load CPU ratio's column.
pub(crate) const EQUAL_CPU_HEAD: &str = "CPU × native [95% CI] n";

/// The equal-load points' columns: every output lays out one table per workload.
pub(crate) fn equal_load_columns<'a>() -> Vec<Column<'a, EqualLoad>> {
    let cell = |head: &str, shows, f: fn(&EqualLoad) -> &String| {
        figure(head, shows, move |r: &EqualLoad| f(r).as_str().into())
    };
    vec![
        text("Variant", Shows::ALL, |r: &EqualLoad| {
            Value::variant(&r.variant)
        }),
        cell("Offered req/s", Shows::ALL, |r| &r.offered),
        figure("Runs n", Shows::HTML, |r: &EqualLoad| {
            r.n.to_string().into()
        }),
        cell("Achieved req/s", Shows::DETAILED, |r| &r.achieved),
        cell("Server busy", Shows::ALL, |r| &r.server_busy),
        cell("CPU µs/request [95% CI] n", Shows::ALL, |r| &r.cpu_us),
        figure(EQUAL_CPU_HEAD, Shows::DETAILED, |r: &EqualLoad| {
            r.ratio.value()
        }),
        figure(EQUAL_CPU_HEAD, Shows::NARROW, |r: &EqualLoad| {
            r.ratio.short.as_str().into()
        }),
        cell("p50 ms", Shows::DETAILED, |r| &r.p50),
        cell("p99 ms", Shows::ALL, |r| &r.p99),
        cell("p99 uncorrected ms", Shows::HTML, |r| &r.uncorrected_p99),
        cell("Dropped", Shows::DETAILED, |r| &r.dropped),
        cell("Errors", Shows::DETAILED, |r| &r.errors),
        figure("Flags", Shows::DETAILED, |r: &EqualLoad| {
            Value::flags(r.over_capacity.iter().cloned().collect())
        }),
    ]
}
