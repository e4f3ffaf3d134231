//! What the closed-loop cells cost the variants' processes (CPU, memory), and capacity's columns.

use serde::Serialize;
use wasmlab_analysis::servers::{ThroughputCell, describe};

use crate::format::{cpu_per_1k, fmt_rps, mib, percent};
use crate::table::{Column, Shows, Value, figure, text};
/// What a closed-loop cell cost the variant's processes.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Resources {
    pub variant: String,
    pub workload: String,
    pub connections: usize,
    pub rps: String,
    /// Of the whole process tree, MiB: the highest over the runs, and the mean.
    pub rss_peak: String,
    pub rss_mean: String,
    /// CPU seconds of the tree per run.
    pub cpu_secs: String,
    /// CPU seconds per 1,000 responses [95% CI] n.
    pub cpu_per_1k: String,
    /// Responses per CPU-second where the server was saturated: the req/s one core sustains
    /// [95% CI] n, or why there is none.
    pub per_core: String,
    pub cores_for_10k: String,
    pub runs: usize,
    pub server_busy: String,
}

/// The resources of a cell, where they were sampled.
pub(crate) fn resources(c: &ThroughputCell) -> Option<Resources> {
    let r = c.resources.as_ref()?;
    let e = &r.rps_per_core;
    Some(Resources {
        variant: c.variant.clone(),
        workload: c.workload.clone(),
        connections: c.connections,
        rps: c.rps.show(fmt_rps),
        rss_peak: mib(r.rss_peak_kib as f64),
        rss_mean: mib(r.rss_mean_kib),
        cpu_secs: format!("{:.2}", r.cpu_secs),
        cpu_per_1k: r.cpu_secs_per_1k.show(cpu_per_1k),
        per_core: match describe(&c.unsaturated()) {
            Some(why) if e.n == 0 => format!("none: {why}"),
            _ => e.show(fmt_rps),
        },
        cores_for_10k: if e.n > 0 && e.value > 0.0 && e.value.is_finite() {
            format!("{:.2}", 10_000.0 / e.value)
        } else {
            "–".into()
        },
        runs: c.runs.len(),
        server_busy: c.utilization.map_or_else(|| "–".into(), percent),
    })
}

/// The resources' columns: summary.md each variant's cells at the reference level, report.html
/// each variant's best cell per workload.
pub(crate) fn resources_columns<'a>() -> Vec<Column<'a, Resources>> {
    let cell = |head: &str, shows, f: fn(&Resources) -> &String| {
        figure(head, shows, move |r: &Resources| f(r).as_str().into())
    };
    let (md, html, both) = (
        Shows::MARKDOWN,
        Shows::HTML,
        Shows::MARKDOWN.and(Shows::HTML),
    );
    vec![
        text("Variant", both, |r: &Resources| Value::variant(&r.variant)),
        text("Workload", both, |r: &Resources| r.workload.as_str().into()),
        figure("At connections", html, |r: &Resources| {
            r.connections.to_string().into()
        }),
        cell("req/s [95% CI] n", html, |r| &r.rps),
        cell("Server busy", html, |r| &r.server_busy),
        cell("RSS peak MiB", both, |r| &r.rss_peak),
        cell("RSS mean MiB", html, |r| &r.rss_mean),
        cell("CPU s per run", html, |r| &r.cpu_secs),
        cell("CPU s per 1k requests [95% CI] n", both, |r| &r.cpu_per_1k),
        cell("req/s per core [95% CI] n", md, |r| &r.per_core),
        figure("Runs n", html, |r: &Resources| r.runs.to_string().into()),
    ]
}

/// The capacity table's columns (report.html): each variant's best cell per workload.
pub(crate) fn capacity_columns<'a>() -> Vec<Column<'a, Resources>> {
    vec![
        text("Variant", Shows::HTML, |r: &Resources| {
            Value::variant(&r.variant)
        }),
        text("Workload", Shows::HTML, |r: &Resources| {
            r.workload.as_str().into()
        }),
        figure("At connections", Shows::HTML, |r: &Resources| {
            r.connections.to_string().into()
        }),
        figure("Server busy", Shows::HTML, |r: &Resources| {
            r.server_busy.as_str().into()
        }),
        figure("req/s per core [95% CI] n", Shows::HTML, |r: &Resources| {
            r.per_core.as_str().into()
        }),
        figure("Cores for 10,000 req/s", Shows::HTML, |r: &Resources| {
            r.cores_for_10k.as_str().into()
        }),
    ]
}
