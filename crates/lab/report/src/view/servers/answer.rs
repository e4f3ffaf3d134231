//! The section report.html leads with: what Wasm costs here. First a sentence per isolation model
//! and a chart of the main workload (each variant's CPU per request × native at equal load,
//! cheapest first); then, for every workload, each variant's cost at equal load and, where both
//! servers were saturated, at capacity, each with its interval, in two tables and two plots; the
//! cold start; and what was not measured and why.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::{BASELINE, Cost, describe};
use wasmlab_model::run::Status;

use super::plots;
use crate::format::{fmt_ms, times};
use crate::sections;
use crate::view::{Cell, Figure, Table};

#[derive(Serialize)]
pub(in crate::view) struct Answer {
    /// The concurrency level the saturated figures are at.
    connections: Option<usize>,
    /// The native baseline was measured: without it there is no ratio to give.
    baseline: bool,
    /// The workloads with a cost, each with why variants have none saturated.
    workloads: Vec<WorkloadAnswer>,
    /// The isolation models' lead line and a sentence each (see `crate::isolation`).
    models_lead: Option<String>,
    models: Vec<String>,
    /// The main workload's costs at equal load, a bar a variant, cheapest first.
    chart: Option<Figure>,
    /// The user's components (`--component`): a sentence a component and workload.
    yours: Vec<String>,
    /// Every variant's costs at equal load, and saturated: a row a variant, a column a workload.
    equal_costs: Option<Table>,
    saturated_costs: Option<Table>,
    /// The same costs a row a variant and workload, each with its rate (summary.md's table).
    cost_rows: Option<Table>,
    /// How the equal-load rates were chosen, a line a workload.
    rates: Vec<String>,
    /// How wide the costs' intervals are, and whether that says the machine was noisy.
    spread: Option<String>,
    noisy: bool,
    /// Whether, when and how the run was resumed after an interruption.
    resumed: Option<String>,
    /// The cold start, in a sentence.
    cold_start: Option<String>,
    figures: Vec<Figure>,
    /// What each variant shown is: (name, its variant file's `about`).
    about: Vec<(String, String)>,
    /// The variants left out, each with why: skipped (cannot run here) or failed.
    left_out: Vec<String>,
}

/// A workload with a cost, and why a variant has no saturated figure on it.
#[derive(Serialize)]
struct WorkloadAnswer {
    name: String,
    unsaturated: Vec<String>,
}

pub(super) fn answer(a: &ServerAnalysis) -> Answer {
    let baseline = a.variants.iter().any(|v| v == BASELINE);
    let workloads: Vec<WorkloadAnswer> = a
        .workloads
        .iter()
        .filter_map(|w| workload(a, w, &a.costs(w)))
        .collect();
    let figures = if workloads.is_empty() {
        Vec::new()
    } else {
        vec![
            Figure::new(
                "CPU per request × native at equal load: the variant's over native's at the highest rate both kept up with (> 1: costlier than native; whiskers: 95% CI)".into(),
                &plots::costs(a, |c| c.equal_load.map(|(_, e)| e)),
            ),
            Figure::new(
                format!(
                    "CPU per request × native where both servers were saturated{}: native's capacity over the variant's (whiskers: 95% CI; a workload without a dot had no saturated pair)",
                    a.reference_connections
                        .map(|c| format!(" at {c} connections"))
                        .unwrap_or_default()
                ),
                &plots::costs(a, |c| c.saturated),
            ),
        ]
    };
    let cost_rows = sections::costs(a);
    let spread = a.spread();
    let models = crate::isolation::answer(a);
    let chart = crate::isolation::main_workload(a).and_then(|(w, costs)| {
        Some(Figure::new(
            format!(
                "{w}: CPU per request × {BASELINE}'s at equal load, the variant's over {BASELINE}'s at the highest rate both kept up with, cheapest first (> 1: costlier than {BASELINE}; whiskers: 95% CI)"
            ),
            &plots::cheapest_first(a, &costs)?,
        ))
    });
    Answer {
        models_lead: models.as_ref().map(|m| m.0.clone()),
        models: models.map(|m| m.1).unwrap_or_default(),
        chart,
        cost_rows: (!cost_rows.is_empty()).then(|| {
            Table::laid(&sections::cost_columns(), &cost_rows, &|v| {
                plots::swatch_of(a, v)
            })
        }),
        connections: a.reference_connections,
        baseline,
        equal_costs: (!workloads.is_empty())
            .then(|| costs_table(a, Footing::EqualLoad))
            .flatten(),
        saturated_costs: (!workloads.is_empty())
            .then(|| costs_table(a, Footing::Saturated))
            .flatten(),
        workloads,
        yours: crate::yours::sentences(a),
        rates: crate::sections::equal_load_rates(a),
        spread: spread.as_ref().map(|s| {
            let stopped = a.info.header.state == wasmlab_model::run::RunState::Interrupted;
            crate::notes::spread_note(s, a.info.repetitions_added(), stopped)
        }),
        noisy: spread.is_some_and(|s| s.noisy()),
        resumed: crate::notes::resumed_note(&a.info.resumed),
        cold_start: cold_start(a),
        figures,
        about: a
            .variants
            .iter()
            .filter(|v| {
                a.throughput.iter().any(|c| &c.variant == *v)
                    || a.cold_start.iter().any(|r| &r.variant == *v)
            })
            .filter_map(|v| {
                let spec = a.info.variant_specs.iter().find(|s| &s.name == v)?;
                Some((v.clone(), spec.about.clone()))
            })
            .collect(),
        left_out: sections::outcomes(a)
            .iter()
            .filter(|o| o.status.is_out())
            .map(|o| match o.status {
                Status::Failed => format!("{} failed, so it is in no figure: {}", o.name, o.why()),
                _ => format!("{} was skipped: {}", o.name, o.why()),
            })
            .chain(crate::notes::unserved(a))
            .collect(),
    }
}

/// A workload with a cost at equal load or saturated; None without any.
fn workload(a: &ServerAnalysis, w: &str, costs: &[Cost]) -> Option<WorkloadAnswer> {
    costs
        .iter()
        .any(|c| c.equal_load.is_some() || c.saturated.is_some())
        .then(|| WorkloadAnswer {
            name: w.to_owned(),
            unsaturated: unsaturated(a, w, costs),
        })
}

/// Which of a cost's two figures a table shows.
#[derive(Clone, Copy, PartialEq)]
enum Footing {
    EqualLoad,
    Saturated,
}

/// The costs of every variant on every workload, a row a variant and a column a workload: at
/// equal load (the ratio, its interval and rate in small type) or saturated (or why not). Two
/// tables, not one, so that neither is wider than a page.
fn costs_table(a: &ServerAnalysis, footing: Footing) -> Option<Table> {
    let at_equal = footing == Footing::EqualLoad;
    let costs: Vec<(&String, Vec<Cost>)> = a
        .workloads
        .iter()
        .map(|w| (w, a.costs(w)))
        .filter(|(_, cs)| {
            cs.iter().any(|c| match at_equal {
                true => c.equal_load.is_some(),
                false => c.saturated.is_some(),
            })
        })
        .collect();
    let mut rows = Vec::new();
    for v in a.variants.iter().filter(|v| *v != BASELINE) {
        let mine: Vec<Option<&Cost>> = costs
            .iter()
            .map(|(_, cs)| cs.iter().find(|c| &c.variant == v))
            .collect();
        if mine.iter().all(Option::is_none) {
            continue;
        }
        let mut row = vec![super::variant(a, v)];
        for c in mine {
            let Some(c) = c else {
                row.push(Cell::from("–"));
                continue;
            };
            if at_equal {
                row.push(match &c.equal_load {
                    Some((rate, e)) => {
                        let mut cell = Cell::compact_ratio(Some(e));
                        cell.note = Some(
                            [
                                cell.note.take(),
                                Some(format!("at {}", crate::format::rate_short(*rate))),
                            ]
                            .into_iter()
                            .flatten()
                            .collect::<Vec<_>>()
                            .join(" "),
                        );
                        cell.below = c
                            .native_busy
                            .map(|b| format!("{BASELINE} {} busy", crate::format::percent(b)));
                        cell
                    }
                    None => "–".into(),
                });
                continue;
            }
            row.push(match &c.saturated {
                Some(e) => Cell::compact_ratio(Some(e)),
                None => {
                    let cell = a
                        .reference_connections
                        .and_then(|conns| a.throughput_cell(v, &c.workload, conns));
                    match cell {
                        Some(t) => crate::sections::capacity(a, t).short.into(),
                        None => "–".into(),
                    }
                }
            });
        }
        rows.push(row);
    }
    let head: Vec<String> = std::iter::once("Variant".to_owned())
        .chain(costs.iter().map(|(w, _)| (*w).clone()))
        .collect();
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    Table::some(&head, 1, rows)
}

/// Why variants have no cost at saturation: once for all when native's server never set the
/// pace, else each variant's own reason.
fn unsaturated(a: &ServerAnalysis, w: &str, costs: &[Cost]) -> Vec<String> {
    let native = a
        .reference_connections
        .and_then(|c| a.throughput_cell(BASELINE, w, c));
    if let Some(n) = native.filter(|n| n.saturated_runs() == 0 && !n.paces.is_empty()) {
        let why = describe(&n.unsaturated()).unwrap_or_default();
        return vec![format!(
            "No capacity on {w}: {why}, so no variant is set against it saturated."
        )];
    }
    costs
        .iter()
        .filter(|c| c.saturated.is_none())
        .filter_map(|c| {
            Some(format!(
                "{}: no capacity ({}).",
                c.variant,
                c.saturated_note.as_deref()?
            ))
        })
        .collect()
}

/// The cold start of each variant against native's, fastest first.
fn cold_start(a: &ServerAnalysis) -> Option<String> {
    let native = a.cold_start.iter().find(|r| r.variant == BASELINE)?;
    let mut others: Vec<_> = a
        .cold_start
        .iter()
        .filter(|r| r.variant != BASELINE)
        .collect();
    others.sort_by(|x, y| x.first_200.p50.total_cmp(&y.first_200.p50));
    let listed: Vec<String> = others
        .iter()
        .map(|r| match &r.ratio_to_native {
            Some(e) => format!(
                "{} {} ms ({})",
                r.variant,
                fmt_ms(r.first_200.p50),
                times(e)
            ),
            None => format!("{} {} ms", r.variant, fmt_ms(r.first_200.p50)),
        })
        .collect();
    let tail = if listed.is_empty() {
        String::new()
    } else {
        format!("; {}", listed.join(", "))
    };
    Some(format!(
        "From exec to the first {} (median of {} launches): {BASELINE} {} ms{tail}.",
        a.info.suite.cold_start_answer(),
        native.n,
        fmt_ms(native.first_200.p50)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmlab_analysis::stats::Estimate;

    #[test]
    fn a_capacity_ratio_becomes_a_cost_per_request() {
        let e = Estimate {
            value: 0.5,
            lo: 0.4,
            hi: 0.625,
            n: 3,
        };
        let c = e.inverse().unwrap();
        assert_eq!(times(&c), "2.00× [1.60–2.50]");
        let one = Estimate { n: 1, ..e };
        assert_eq!(times(&one.inverse().unwrap()), "2.00×");
        assert!(Estimate { value: 0.0, ..e }.inverse().is_none());
    }

    #[test]
    fn the_answer_names_every_variant_and_what_was_left_out() {
        let a = crate::tests::analysis();
        let ans = answer(&a);
        assert!(ans.baseline);
        assert_eq!(ans.workloads.len(), a.workloads.len());
        assert_eq!(ans.workloads[0].name, "hello");
        assert!(ans.equal_costs.is_some() && ans.saturated_costs.is_some());
        assert!(ans.chart.is_some());
        assert!(
            ans.cold_start
                .as_deref()
                .unwrap()
                .contains("wasmtime-pooled")
        );
        assert_eq!(ans.figures.len(), 2);
        assert!(
            ans.left_out
                .iter()
                .any(|l| l.starts_with("wasmtime-naive failed")),
            "{:?}",
            ans.left_out
        );
        assert!(
            ans.left_out
                .iter()
                .any(|l| l.contains("wasmedge-cli was skipped"))
        );
    }
}
