//! The cost of a request × native's, at equal load and saturated: the answer's rows and columns.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;

use super::{Conditional, Ratio};
use crate::format::{SERVER_RATIO, fmt_rps, percent};
use crate::table::{Column, Shows, Value, figure, text};
/// The answer for one variant on one workload: what a request costs it, as a multiple of what
/// it costs native, at equal load and where both were saturated.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Cost {
    pub workload: String,
    pub variant: String,
    /// CPU per request × native's at the highest equal-load rate both kept up with, or why none.
    pub equal_load: Conditional,
    /// That rate.
    pub at: String,
    /// Native's share of its CPU busy at that rate.
    pub native_busy: String,
    /// CPU per request × native's where both were saturated (capacity turned over), or why none.
    pub saturated: Conditional,
}

/// Every workload's costs, workload by workload, each in the variants' order.
pub(crate) fn costs(a: &ServerAnalysis) -> Vec<Cost> {
    let mut rows = Vec::new();
    for w in &a.workloads {
        for c in a.costs(w) {
            let cell = a
                .reference_connections
                .and_then(|conns| a.throughput_cell(&c.variant, w, conns));
            let saturated = match (a.observable(&c.variant), cell) {
                (false, _) => Conditional::not_observable(),
                (true, Some(cell)) => {
                    Conditional::of(c.saturated.as_ref(), &cell.capacity_notes, &c.variant)
                }
                (true, None) => Conditional::words("not measured".into(), "–".into()),
            };
            let equal_load = match (&c.equal_load, &c.equal_load_note) {
                _ if !a.observable(&c.variant) => Conditional::not_observable(),
                (Some((_, e)), _) => Conditional {
                    ratio: Ratio::plain(Some(e)),
                    short: SERVER_RATIO.estimate(Some(e)),
                    flags: Vec::new(),
                },
                (None, Some(why)) => {
                    let short = match why.contains("over capacity") {
                        true => "none: over capacity".to_owned(),
                        false => format!("none: {why}"),
                    };
                    Conditional::words(format!("none: {why}"), short)
                }
                (None, None) => Conditional::words("not measured".into(), "–".into()),
            };
            rows.push(Cost {
                workload: w.clone(),
                variant: c.variant.clone(),
                equal_load,
                at: c
                    .equal_load
                    .as_ref()
                    .map_or_else(|| "–".into(), |(rate, _)| fmt_rps(*rate)),
                native_busy: c.native_busy.map_or_else(|| "–".into(), percent),
                saturated,
            });
        }
    }
    rows
}

/// The costs' columns.
pub(crate) fn cost_columns<'a>() -> Vec<Column<'a, Cost>> {
    let (equal, saturated) = (
        "CPU × native, equal load [95% CI] n",
        "CPU × native, saturated [95% CI] n",
    );
    vec![
        text("Workload", Shows::ALL, |r: &Cost| {
            r.workload.as_str().into()
        }),
        text("Variant", Shows::ALL, |r: &Cost| Value::variant(&r.variant)),
        figure(equal, Shows::DETAILED, |r: &Cost| r.equal_load.value()),
        figure(equal, Shows::NARROW, |r: &Cost| {
            r.equal_load.short.as_str().into()
        }),
        figure("At req/s", Shows::ALL, |r: &Cost| r.at.as_str().into()),
        // Not on the narrow terminal, which the lead already fills: the lines of the cells as
        // they were measured say how busy native was.
        figure("Native busy", Shows::DETAILED, |r: &Cost| {
            r.native_busy.as_str().into()
        }),
        figure(saturated, Shows::DETAILED, |r: &Cost| r.saturated.value()),
        figure(saturated, Shows::NARROW, |r: &Cost| {
            r.saturated.short.as_str().into()
        }),
    ]
}
