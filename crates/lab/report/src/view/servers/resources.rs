//! The sections of a server run's report.html on what the variants cost: the resources of
//! each variant's best cell (RSS, CPU per request), the artifacts' sizes, and capacity (the
//! req/s one core sustains).

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::ThroughputCell;

use super::plots::{self, BarGroup, BarValue, swatch_of};
use crate::format::{fmt_bytes, grouped, thousands};
use crate::sections;
use crate::view::{Cell, Figure, Table};

#[derive(Serialize)]
pub(super) struct Resources {
    /// None when no cell recorded its process tree's resources.
    best: Option<BestCells>,
    /// Every variant's cell per workload at the reference concurrency, where the others' are
    /// too (summary.md's table).
    at_reference: Option<Table>,
    artifacts: Option<Table>,
}

/// Each variant's best closed-loop cell per workload: table, RSS and CPU plots.
#[derive(Serialize)]
struct BestCells {
    table: Table,
    rss: Figure,
    /// One a workload: their CPU per request differs by orders of magnitude (hello, compute).
    cpu: Vec<Figure>,
}

/// Each variant's best cell per workload (its closed-loop maximum), where its resources were
/// sampled: by workload, then variant.
fn best_cells(a: &ServerAnalysis) -> Vec<&ThroughputCell> {
    let mut out = Vec::new();
    for w in &a.workloads {
        for v in &a.variants {
            if let Some(c) = a.best_cell(v, w).filter(|c| c.resources.is_some()) {
                out.push(c);
            }
        }
    }
    out
}

/// Bars per workload of `value` over the cells.
fn bar_groups<'a>(
    a: &'a ServerAnalysis,
    cells: &[&'a ThroughputCell],
    value: impl Fn(&'a ThroughputCell) -> Option<BarValue<'a>>,
) -> Vec<BarGroup<'a>> {
    a.workloads
        .iter()
        .map(|w| BarGroup {
            label: w,
            bars: cells
                .iter()
                .filter(|c| &c.workload == w)
                .filter_map(|c| value(c))
                .collect(),
        })
        .filter(|g| !g.bars.is_empty())
        .collect()
}

pub(super) fn resources(a: &ServerAnalysis) -> Resources {
    let cells = best_cells(a);
    let rows: Vec<sections::Resources> = cells
        .iter()
        .filter_map(|c| sections::resources(c))
        .collect();
    let rss = bar_groups(a, &cells, |c| {
        Some(BarValue {
            variant: &c.variant,
            value: c.resources?.rss_peak_kib as f64 / 1024.0,
            ci: None,
        })
    });
    let cpu = bar_groups(a, &cells, |c| {
        Some(BarValue::of(
            &c.variant,
            &c.resources.as_ref()?.cpu_secs_per_1k,
        ))
    });
    let best = (!rows.is_empty())
        .then(|| Table::laid(&sections::resources_columns(), &rows, &|v| swatch_of(a, v)))
        .map(|table| BestCells {
            table,
            rss: Figure::new(
                "RSS peak of the process tree (MiB), at each variant's best cell".into(),
                &plots::grouped_bars(a, "RSS peak MiB", &rss, |v| grouped(v, 1)),
            ),
            cpu: plots::figure_per_group(
                a,
                &cpu,
                "CPU seconds per 1,000 requests, at each variant's best cell (whiskers: 95% CI)",
                "CPU s per 1k requests",
                crate::format::cpu_per_1k,
            ),
        });
    let at_reference: Vec<sections::Resources> = a
        .reference_connections
        .into_iter()
        .flat_map(|conns| {
            a.workloads.iter().flat_map(move |w| {
                a.variants
                    .iter()
                    .filter_map(move |v| a.throughput_cell(v, w, conns))
            })
        })
        .filter_map(sections::resources)
        .collect();
    let at_reference = (!at_reference.is_empty()).then(|| {
        Table::laid(&sections::resources_columns(), &at_reference, &|v| {
            swatch_of(a, v)
        })
    });
    let artifacts = a
        .info
        .artifacts
        .iter()
        .map(|x| {
            let name = match &x.version {
                Some(v) => format!("{} ({v})", x.name),
                None => x.name.clone(),
            };
            vec![
                name.into(),
                Cell::code(&x.path),
                fmt_bytes(x.bytes).into(),
                thousands(x.bytes as f64).into(),
            ]
        })
        .collect();
    Resources {
        best,
        at_reference,
        artifacts: Table::some(&["Artifact", "Path", "Size", "Bytes"], 2, artifacts),
    }
}

#[derive(Serialize)]
pub(super) struct Capacity {
    /// One a workload, as for CPU per request.
    figures: Vec<Figure>,
    table: Table,
}

pub(super) fn capacity(a: &ServerAnalysis) -> Option<Capacity> {
    let cells: Vec<&ThroughputCell> = best_cells(a)
        .into_iter()
        .filter(|c| c.resources.is_some_and(|r| r.rps_per_core.n > 0))
        .collect();
    let rows: Vec<sections::Resources> = cells
        .iter()
        .filter_map(|c| sections::resources(c))
        .collect();
    let groups = bar_groups(a, &cells, |c| {
        Some(BarValue::of(
            &c.variant,
            &c.resources.as_ref()?.rps_per_core,
        ))
    });
    if rows.is_empty() {
        return None;
    }
    let table = Table::laid(&sections::capacity_columns(), &rows, &|v| swatch_of(a, v));
    Some(Capacity {
        figures: plots::figure_per_group(
            a,
            &groups,
            "req/s one core sustains (whiskers: 95% CI)",
            "req/s per core",
            thousands,
        ),
        table,
    })
}
