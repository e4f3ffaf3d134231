//! The sections of a server run's report.html that show its cells: throughput, latency (warm
//! and under load), cold start and open loop, each with its plots and tables.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::ThroughputCell;
use wasmlab_model::sample::Kind;

use super::plots::{self, swatch_of};
use crate::sections;
use crate::view::{Figure, Table};

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
    /// Its rows at the reference concurrency alone (summary.md's table).
    at_reference: Option<Table>,
}

pub(super) fn throughput(a: &ServerAnalysis) -> Option<Throughput> {
    if a.throughput.is_empty() {
        return None;
    }
    let rows = sections::throughput(a);
    let columns = sections::throughput_columns(a);
    let swatch = |v: &str| swatch_of(a, v);
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
        let mine: Vec<sections::Throughput> =
            rows.iter().filter(|r| &r.workload == w).cloned().collect();
        let table = Table::laid(&columns, &mine, &swatch);
        let at_reference: Vec<sections::Throughput> = mine
            .iter()
            .filter(|r| Some(r.connections) == a.reference_connections)
            .cloned()
            .collect();
        workloads.push(Workload {
            name: w.clone(),
            figure,
            table,
            at_reference: (!at_reference.is_empty())
                .then(|| Table::laid(&columns, &at_reference, &swatch)),
        });
    }
    Some(Throughput {
        duration_secs: a.info.suite.duration_secs.to_string(),
        warmup_secs: a.info.suite.warmup_secs.to_string(),
        workloads,
        saturation_note: rows.iter().any(|r| r.saturation.is_some()),
    })
}

// --- Equal load ------------------------------------------------------------------------------

#[derive(Serialize)]
pub(super) struct EqualLoad {
    duration_secs: String,
    connections: usize,
    /// How each workload's rates were chosen.
    rates: Vec<String>,
    workloads: Vec<Workload>,
}

pub(super) fn equal_load(a: &ServerAnalysis) -> Option<EqualLoad> {
    let rows = sections::equal_load(a);
    if rows.is_empty() {
        return None;
    }
    let columns = sections::equal_load_columns();
    let swatch = |v: &str| swatch_of(a, v);
    let workloads = a
        .workloads
        .iter()
        .filter_map(|w| {
            let mine: Vec<sections::EqualLoad> =
                rows.iter().filter(|r| &r.workload == w).cloned().collect();
            if mine.is_empty() {
                return None;
            }
            // None where no variant's CPU was read (remote targets): the figure says so.
            let plot = plots::equal_load(a, w).unwrap_or_else(|| {
                crate::plot::Plot::new(
                    crate::plot::Axis::new("", crate::plot::Scale::Linear),
                    crate::plot::Axis::new("", crate::plot::Scale::Linear),
                )
            });
            Some(Workload {
                name: w.clone(),
                figure: Figure::new(
                    format!("{w}: CPU µs per request against the offered rate (whiskers: 95% CI)"),
                    &plot,
                ),
                table: Table::laid(&columns, &mine, &swatch),
                at_reference: None,
            })
        })
        .collect();
    let e = a.info.suite.equal_load.as_ref();
    Some(EqualLoad {
        duration_secs: e.map_or_else(String::new, |e| e.duration_secs.to_string()),
        connections: e.map_or(0, |e| e.connections),
        rates: crate::sections::equal_load_rates(a),
        workloads,
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
    Some(Latency {
        warm_figures: plots::spectra(a, Kind::Warm, |w, _, n| {
            format!("{w}: warm latency spectrum ({n} requests)")
        }),
        loaded_connections: a.reference_connections,
        loaded_figures: plots::spectra(a, Kind::Throughput, |w, conns, n| {
            format!("{w}: latency spectrum at {conns} connections ({n} responses)")
        }),
        warm: Some(sections::warm(a))
            .filter(|rows| !rows.is_empty())
            .map(|rows| Table::laid(&sections::warm_columns(), &rows, &|v| swatch_of(a, v))),
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
    Some(ColdStart {
        until: a.info.suite.cold_start_answer(),
        figure: Figure::new(
            "Cold start: distribution of spawn → first 200 (ECDF)".into(),
            &plots::cold_start(a),
        ),
        table: Table::laid(
            &sections::cold_start_columns(),
            &sections::cold_starts(a),
            &|v| swatch_of(a, v),
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
    let table = Table::laid(
        &sections::open_loop_columns(),
        &sections::open_loop(a),
        &|v| swatch_of(a, v),
    );
    Some(OpenLoop {
        plots,
        table,
        late_after_ms: wasmlab_load_data::LATE_AFTER.as_millis().to_string(),
    })
}
