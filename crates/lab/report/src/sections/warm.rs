//! Warm latency: one connection, sequential requests, and its columns.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;

use super::{Ratio, busy, ratio};
use crate::format::{fmt_errors, fmt_ms, thousands};
use crate::table::{Column, Shows, Value, figure, text};
/// Warm latency of a variant on a workload: one connection, sequential requests.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Warm {
    pub variant: String,
    pub workload: String,
    pub n: usize,
    pub requests: String,
    /// Over all runs' requests together, ms.
    pub p50: String,
    pub p90: String,
    pub p99: String,
    pub p99_9: String,
    pub max: String,
    /// The mean of the runs' p50s [95% CI] n, ms.
    pub mean_p50: String,
    pub ratio: Ratio,
    pub errors: String,
    pub server_busy: String,
}

pub(crate) fn warm(a: &ServerAnalysis) -> Vec<Warm> {
    a.warm
        .iter()
        .map(|r| Warm {
            variant: r.variant.clone(),
            workload: r.workload.clone(),
            n: r.n,
            requests: thousands(r.requests as f64),
            p50: fmt_ms(r.latency.p50),
            p90: fmt_ms(r.latency.p90),
            p99: fmt_ms(r.latency.p99),
            p99_9: fmt_ms(r.latency.p99_9),
            max: fmt_ms(r.latency.max),
            mean_p50: r.p50.show(fmt_ms),
            ratio: Ratio::of(&r.variant, r.ratio_to_native.as_ref()),
            errors: fmt_errors(&r.errors),
            server_busy: busy(a, &r.variant, r.utilization),
        })
        .collect()
}

/// The warm cells' columns.
pub(crate) fn warm_columns<'a>() -> Vec<Column<'a, Warm>> {
    let ms = |head: &str, shows, f: fn(&Warm) -> &String| {
        figure(head, shows, move |r: &Warm| f(r).as_str().into())
    };
    let detail = Shows::WIDE.and(Shows::HTML);
    vec![
        text("Variant", Shows::ALL, |r: &Warm| Value::variant(&r.variant)),
        text("Workload", Shows::ALL, |r: &Warm| {
            r.workload.as_str().into()
        }),
        figure("Runs n", Shows::ALL, |r: &Warm| r.n.to_string().into()),
        ms("Requests", detail, |r| &r.requests),
        ms("p50 ms", Shows::ALL, |r| &r.p50),
        ms("p90 ms", detail, |r| &r.p90),
        ms("p99 ms", Shows::ALL, |r| &r.p99),
        ms("p99.9 ms", Shows::TERMINAL.and(Shows::HTML), |r| &r.p99_9),
        ms("max ms", detail, |r| &r.max),
        ms("Mean of run p50s ms [95% CI] n", Shows::HTML, |r| {
            &r.mean_p50
        }),
        figure("× native p50 [95% CI] n", Shows::ALL, |r: &Warm| {
            ratio(&r.ratio)
        }),
        ms("Errors", detail, |r| &r.errors),
    ]
}
