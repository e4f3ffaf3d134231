//! The sections of a server run's report.html that show its cells: throughput, latency (warm
//! and under load), cold start and open loop, each with its plots and tables.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::ThroughputCell;
use wasmlab_model::sample::Kind;

use super::plots;
use super::variant;
use crate::html::{Cell, Figure, Table};
use crate::sections;

#[derive(Serialize)]
pub(super) struct Throughput {
    duration_secs: String,
    warmup_secs: String,
    workloads: Vec<Workload>,
    saturation_note: bool,
}

/// A workload's plot and table.
#[derive(Serialize)]
pub(super) struct Workload {
    name: String,
    figure: Figure,
    table: Table,
}

pub(super) fn throughput(a: &ServerAnalysis) -> Option<Throughput> {
    if a.throughput.is_empty() {
        return None;
    }
    let rows = sections::throughput(a);
    let mut workloads = Vec::new();
    for w in &a.workloads {
        let cells: Vec<&ThroughputCell> =
            a.throughput.iter().filter(|c| &c.workload == w).collect();
        if cells.is_empty() {
            continue;
        }
        let figure = Figure::new(
            format!("{w}: req/s vs connections"),
            &plots::throughput(a, &cells),
        );
        let table = Table::new(
            &[
                "Variant",
                "Connections",
                "req/s mean [95% CI] n",
                "× native per CPU [95% CI] n",
                "× native req/s [95% CI] n",
                "p50 ms",
                "p99 ms",
                "Responses (all runs)",
                "Errors",
                "Generator busy",
                "Flag",
            ],
            1,
            rows.iter()
                .filter(|r| &r.workload == w)
                .map(|r| {
                    vec![
                        variant(a, &r.variant),
                        r.connections.to_string().into(),
                        r.rps.as_str().into(),
                        Cell::ratio(r.capacity.clone()),
                        Cell::ratio(r.ratio.clone()),
                        r.p50.as_str().into(),
                        r.p99.as_str().into(),
                        r.responses.as_str().into(),
                        r.errors.as_str().into(),
                        r.busy.as_str().into(),
                        Cell {
                            flags: r.saturation.into_iter().collect(),
                            ..Cell::default()
                        },
                    ]
                })
                .collect(),
        );
        workloads.push(Workload {
            name: w.clone(),
            figure,
            table,
        });
    }
    Some(Throughput {
        duration_secs: a.info.suite.duration_secs.to_string(),
        warmup_secs: a.info.suite.warmup_secs.to_string(),
        workloads,
        saturation_note: rows.iter().any(|r| r.saturation.is_some()),
    })
}

// --- Latency ---------------------------------------------------------------------------------

#[derive(Serialize)]
pub(super) struct Latency {
    /// One spectrum per workload; none drawn says so.
    warm_figures: Vec<Figure>,
    loaded_connections: Option<usize>,
    loaded_figures: Vec<Figure>,
    warm: Option<Table>,
}

pub(super) fn latency(a: &ServerAnalysis) -> Option<Latency> {
    if a.spectra.is_empty() && a.warm.is_empty() {
        return None;
    }
    let rows: Vec<Vec<Cell>> = sections::warm(a)
        .into_iter()
        .map(|r| {
            vec![
                variant(a, &r.variant),
                r.workload.into(),
                r.n.to_string().into(),
                r.requests.into(),
                r.p50.into(),
                r.p90.into(),
                r.p99.into(),
                r.p99_9.into(),
                r.max.into(),
                r.mean_p50.into(),
                Cell::ratio(r.ratio),
                r.errors.into(),
            ]
        })
        .collect();
    Some(Latency {
        warm_figures: plots::spectra(a, Kind::Warm, |w, _, n| {
            format!("{w}: warm latency spectrum ({n} requests)")
        }),
        loaded_connections: a.reference_connections,
        loaded_figures: plots::spectra(a, Kind::Throughput, |w, conns, n| {
            format!("{w}: latency spectrum at {conns} connections ({n} responses)")
        }),
        warm: Table::some(
            &[
                "Variant",
                "Workload",
                "Runs n",
                "Requests",
                "p50 ms",
                "p90 ms",
                "p99 ms",
                "p99.9 ms",
                "max ms",
                "Mean of run p50s ms [95% CI] n",
                "× native p50 [95% CI] n",
                "Errors",
            ],
            2,
            rows,
        ),
    })
}

// --- Cold start ------------------------------------------------------------------------------

#[derive(Serialize)]
pub(super) struct ColdStart {
    /// The answer a launch waits for: `200 answer to GET /`.
    until: String,
    figure: Figure,
    table: Table,
}

pub(super) fn cold_start(a: &ServerAnalysis) -> Option<ColdStart> {
    if a.cold_start.is_empty() {
        return None;
    }
    let rows: Vec<Vec<Cell>> = sections::cold_starts(a)
        .into_iter()
        .map(|r| {
            vec![
                variant(a, &r.variant),
                r.n.to_string().into(),
                r.p50.into(),
                r.p90.into(),
                r.p99.into(),
                r.min.into(),
                r.max.into(),
                r.listening.into(),
                r.connected.into(),
                r.first_byte.into(),
                Cell::ratio(r.ratio),
                r.rss_after.into(),
            ]
        })
        .collect();
    Some(ColdStart {
        until: a.info.suite.cold_start_answer(),
        figure: Figure::new(
            "Cold start: distribution of spawn → first 200 (ECDF)".into(),
            &plots::cold_start(a),
        ),
        table: Table::new(
            &[
                "Variant",
                "Launches n",
                "first 200 p50 ms",
                "p90 ms",
                "p99 ms",
                "min ms",
                "max ms",
                "listening p50 ms",
                "connected p50 ms",
                "first byte p50 ms",
                "× native p50 [95% CI] n",
                "RSS after p50 MiB",
            ],
            1,
            rows,
        ),
    })
}

// --- Open loop -------------------------------------------------------------------------------

#[derive(Serialize)]
pub(super) struct WorkloadPlot {
    name: String,
    figure: Figure,
}

#[derive(Serialize)]
pub(super) struct OpenLoop {
    /// A plot per workload; one table holds them all.
    plots: Vec<WorkloadPlot>,
    table: Table,
    late_after_ms: String,
}

pub(super) fn open_loop(a: &ServerAnalysis) -> Option<OpenLoop> {
    if a.open_loop.is_empty() {
        return None;
    }
    let plots = a
        .workloads
        .iter()
        .filter_map(|w| {
            let p = plots::open_loop(a, w)?;
            Some(WorkloadPlot {
                name: w.clone(),
                figure: Figure::new(format!("{w}: p99 latency vs offered load"), &p),
            })
        })
        .collect();
    let rows = sections::open_loop(a)
        .into_iter()
        .map(|o| {
            vec![
                variant(a, &o.variant),
                o.workload.into(),
                o.load.into(),
                o.n.to_string().into(),
                o.connections.to_string().into(),
                o.offered.into(),
                o.achieved.into(),
                o.p50.into(),
                o.p99.into(),
                o.max.into(),
                o.uncorrected_p50.into(),
                o.uncorrected_p99.into(),
                o.intended.into(),
                o.sent.into(),
                o.dropped.into(),
                o.late.into(),
                o.errors.into(),
            ]
        })
        .collect();
    let table = Table::new(
        &[
            "Variant",
            "Workload",
            "Load (of max)",
            "Runs n",
            "Connections",
            "Offered req/s",
            "Achieved req/s",
            "Corrected p50 ms",
            "Corrected p99 ms",
            "Corrected max ms",
            "Uncorrected p50 ms",
            "Uncorrected p99 ms",
            "Intended",
            "Sent",
            "Dropped",
            "Late",
            "Errors",
        ],
        2,
        rows,
    );
    Some(OpenLoop {
        plots,
        table,
        late_after_ms: wasmlab_load::LATE_AFTER.as_millis().to_string(),
    })
}
