//! The section report.html leads with: what Wasm costs here. For every workload, each variant's
//! CPU per request as a multiple of native's at equal load and, where both servers were
//! saturated, at capacity, each with its interval, in a few sentences written from the data and
//! in two plots; the cold start; and what was not measured and why.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::{BASELINE, Cost, describe};
use wasmlab_analysis::stats::Estimate;
use wasmlab_model::run::Status;

use super::plots;
use crate::format::{fmt_ms, fmt_rps, times};
use crate::sections;
use crate::view::{Cell, Figure, Table};

#[derive(Serialize)]
pub(in crate::view) struct Answer {
    /// The concurrency level the saturated figures are at.
    connections: Option<usize>,
    /// The native baseline was measured: without it there is no ratio to give.
    baseline: bool,
    /// One sentence a workload.
    workloads: Vec<WorkloadAnswer>,
    /// The user's components (`--component`): a sentence a component and workload.
    yours: Vec<String>,
    /// Every variant's costs: a row a variant, two columns a workload (equal load, saturated).
    costs: Option<Table>,
    /// The same costs a row a variant and workload, each with its rate (summary.md's table).
    cost_rows: Option<Table>,
    /// How the equal-load rates were chosen, a line a workload.
    rates: Vec<String>,
    /// How wide the costs' intervals are, and whether that says the machine was noisy.
    spread: Option<String>,
    noisy: bool,
    /// The cold start, in a sentence.
    cold_start: Option<String>,
    figures: Vec<Figure>,
    /// What each variant shown is: (name, its variant file's `about`).
    about: Vec<(String, String)>,
    /// The variants left out, each with why: skipped (cannot run here) or failed.
    left_out: Vec<String>,
}

/// A workload's costs in a sentence: the cheapest and the dearest variant at equal load and
/// saturated (the table beside has every variant), and why a variant has no saturated figure.
#[derive(Serialize)]
struct WorkloadAnswer {
    name: String,
    sentence: String,
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
    Answer {
        cost_rows: (!cost_rows.is_empty()).then(|| {
            Table::laid(&sections::cost_columns(), &cost_rows, &|v| {
                plots::swatch_of(a, v)
            })
        }),
        connections: a.reference_connections,
        baseline,
        costs: (!workloads.is_empty()).then(|| costs_table(a)).flatten(),
        workloads,
        yours: crate::yours::sentences(a),
        rates: crate::sections::equal_load_rates(a),
        spread: spread
            .as_ref()
            .map(|s| crate::notes::spread_note(s, a.info.repetitions_added())),
        noisy: spread.is_some_and(|s| s.noisy()),
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
            .collect(),
    }
}

/// A workload's costs in sentences, cheapest first; None without any figure.
fn workload(a: &ServerAnalysis, w: &str, costs: &[Cost]) -> Option<WorkloadAnswer> {
    if costs.is_empty() {
        return None;
    }
    let equal: Vec<(&str, Estimate, f64)> = costs
        .iter()
        .filter_map(|c| Some((c.variant.as_str(), c.equal_load?.1, c.equal_load?.0)))
        .collect();
    let saturated: Vec<(&str, Estimate, f64)> = costs
        .iter()
        .filter_map(|c| Some((c.variant.as_str(), c.saturated?, 0.0)))
        .collect();
    let mut parts = Vec::new();
    if let Some(range) = span(&equal) {
        let (lo, hi) = rates(&equal);
        let at = if lo == hi {
            format!("{} req/s", fmt_rps(lo))
        } else {
            format!(
                "{}–{} req/s, each variant near its own capacity",
                fmt_rps(lo),
                fmt_rps(hi)
            )
        };
        parts.push(format!("at equal load ({at}) {range}"));
    }
    if let Some(range) = span(&saturated) {
        parts.push(format!("saturated {range}"));
    }
    if parts.is_empty() {
        return None;
    }
    Some(WorkloadAnswer {
        name: w.to_owned(),
        sentence: format!("{} native's CPU per request.", parts.join("; ")),
        unsaturated: unsaturated(a, w, costs),
    })
}

/// The costs of every variant on every workload: at equal load (the ratio, its interval and
/// rate in small type) and saturated (or why not), a row a variant.
fn costs_table(a: &ServerAnalysis) -> Option<Table> {
    let costs: Vec<(&String, Vec<Cost>)> = a
        .workloads
        .iter()
        .map(|w| (w, a.costs(w)))
        .filter(|(_, cs)| {
            cs.iter()
                .any(|c| c.equal_load.is_some() || c.saturated.is_some())
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
                row.extend([Cell::from("–"), Cell::from("–")]);
                continue;
            };
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
        .chain(
            costs
                .iter()
                .flat_map(|(w, _)| [format!("{w}: equal load"), format!("{w}: saturated")]),
        )
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

/// `from a 1.05× [1.01–1.09] to b 1.88× [1.85–1.92]`, or `a 1.05× [1.01–1.09]` alone.
fn span(costs: &[(&str, Estimate, f64)]) -> Option<String> {
    let cheapest = costs
        .iter()
        .min_by(|x, y| x.1.value.total_cmp(&y.1.value))?;
    let dearest = costs
        .iter()
        .max_by(|x, y| x.1.value.total_cmp(&y.1.value))?;
    let one = |(v, e, _): &(&str, Estimate, f64)| format!("{v} {}", times(e));
    Some(match costs.len() {
        1 => one(cheapest),
        _ => format!("from {} to {}", one(cheapest), one(dearest)),
    })
}

/// The lowest and highest rate of `costs`.
fn rates(costs: &[(&str, Estimate, f64)]) -> (f64, f64) {
    costs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), c| {
        (lo.min(c.2), hi.max(c.2))
    })
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
        let hello = &ans.workloads[0];
        assert_eq!(hello.name, "hello");
        assert!(
            hello
                .sentence
                .starts_with("at equal load (2,000 req/s) wasmtime-pooled 1.30×")
                && hello.sentence.contains("saturated wasmtime-pooled 1."),
            "{}",
            hello.sentence
        );
        assert!(ans.costs.is_some());
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
