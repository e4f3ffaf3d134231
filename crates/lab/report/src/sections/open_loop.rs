//! Open loop: each variant at offered loads that are shares of its own capacity, and their columns.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;

use super::busy;
use crate::format::{fmt_errors, fmt_ms, fmt_rps, percent, thousands};
use crate::table::{Column, Shows, Value, figure, text};
/// A variant on a workload at one offered load (a fraction of its own maximum).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct OpenLoop {
    pub variant: String,
    pub workload: String,
    /// The offered load as a share of the variant's maximum.
    pub load: String,
    pub n: usize,
    pub connections: usize,
    pub offered: String,
    pub achieved: String,
    /// From each request's intended send time, ms.
    pub p50: String,
    pub p99: String,
    pub max: String,
    /// From its actual send time, ms.
    pub uncorrected_p50: String,
    pub uncorrected_p99: String,
    pub intended: String,
    pub sent: String,
    pub dropped: String,
    pub late: String,
    pub errors: String,
    pub server_busy: String,
}

pub(crate) fn open_loop(a: &ServerAnalysis) -> Vec<OpenLoop> {
    a.open_loop
        .iter()
        .map(|o| OpenLoop {
            variant: o.variant.clone(),
            workload: o.workload.clone(),
            load: percent(o.fraction),
            n: o.n,
            connections: o.connections,
            offered: fmt_rps(o.offered_rps),
            achieved: fmt_rps(o.achieved_rps),
            p50: fmt_ms(o.runs.corrected.p50),
            p99: fmt_ms(o.runs.corrected.p99),
            max: fmt_ms(o.runs.corrected.max),
            uncorrected_p50: fmt_ms(o.runs.uncorrected.p50),
            uncorrected_p99: fmt_ms(o.runs.uncorrected.p99),
            intended: thousands(o.runs.intended as f64),
            sent: thousands(o.runs.sent as f64),
            dropped: thousands(o.runs.dropped as f64),
            late: thousands(o.runs.late as f64),
            errors: fmt_errors(&o.runs.errors),
            server_busy: busy(a, &o.variant, o.utilization),
        })
        .collect()
}

/// The open-loop cells' columns.
pub(crate) fn open_loop_columns<'a>() -> Vec<Column<'a, OpenLoop>> {
    let cell = |head: &str, shows, f: fn(&OpenLoop) -> &String| {
        figure(head, shows, move |r: &OpenLoop| f(r).as_str().into())
    };
    let late = format!("Late (> {:?})", wasmlab_load_data::LATE_AFTER);
    let (html, detail) = (Shows::HTML, Shows::DETAILED);
    vec![
        text("Variant", Shows::ALL, |r: &OpenLoop| {
            Value::variant(&r.variant)
        }),
        text("Workload", Shows::ALL, |r: &OpenLoop| {
            r.workload.as_str().into()
        }),
        cell("Load", Shows::ALL, |r| &r.load),
        figure("Runs n", Shows::MARKDOWN.and(html), |r: &OpenLoop| {
            r.n.to_string().into()
        }),
        figure("Connections", html, |r: &OpenLoop| {
            r.connections.to_string().into()
        }),
        cell("Offered req/s", Shows::ALL, |r| &r.offered),
        cell("Achieved req/s", detail, |r| &r.achieved),
        cell("Server busy", Shows::WIDE.and(html), |r| &r.server_busy),
        // Corrected: from each request's intended send time.
        cell("p50 ms", Shows::ALL, |r| &r.p50),
        cell("p99 ms", Shows::ALL, |r| &r.p99),
        cell("max ms", Shows::WIDE.and(html), |r| &r.max),
        cell("p50 uncorrected ms", html, |r| &r.uncorrected_p50),
        cell("p99 uncorrected ms", Shows::ALL, |r| &r.uncorrected_p99),
        cell("Intended", html, |r| &r.intended),
        cell("Sent", html, |r| &r.sent),
        cell("Dropped", Shows::ALL, |r| &r.dropped),
        cell(&late, Shows::TERMINAL.and(html), |r| &r.late),
        cell("Errors", detail, |r| &r.errors),
    ]
}
