//! The view model of a server run's report.html: each section's tables from the report's
//! sections, its plots from `plots`, the lead section from `answer`.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::{BASELINE, ThroughputCell};
use wasmlab_model::run::Status;

mod answer;
mod cells;
mod environment;
mod plots;
mod resources;

use answer::Answer;
use cells::{ColdStart, EqualLoad, Latency, OpenLoop, Throughput};
use environment::Environment;
use plots::swatch_of;
use resources::{Capacity, Resources};

use super::{Cell, Table, shell_join};
use crate::notes;
use crate::sections::{self, Saturation, connection_levels};

/// The whole page; a section that is `None` says it was not measured.
#[derive(Serialize)]
pub(super) struct Report {
    suite: String,
    run_id: String,
    answer: Answer,
    summary: Summary,
    ratios: Option<Ratios>,
    study: Study,
    throughput: Option<Throughput>,
    equal_load: Option<EqualLoad>,
    latency: Option<Latency>,
    cold_start: Option<ColdStart>,
    open_loop: Option<OpenLoop>,
    resources: Resources,
    capacity: Option<Capacity>,
    environment: Environment,
    /// What of remote targets is not observable (they are left out where it is needed).
    not_observable: Option<String>,
    /// Which variants' compute runs a library's SHA-256 (their compute cells are marked).
    other_compute_code: Option<String>,
    /// The variant every ratio is to.
    baseline: &'static str,
    /// The sentences every output shares (see `notes`): what the generator's saturation flag, a
    /// capacity ratio (and its absence) and the cost at equal load mean, what the costs' table
    /// holds, how a core's capacity sizes a fleet.
    saturation_note: String,
    capacity_note: String,
    equal_load_note: String,
    cost_lead: String,
    per_core_note: &'static str,
}

impl Report {
    pub(super) fn new(a: &ServerAnalysis) -> Self {
        Self {
            suite: a.info.suite.name.clone(),
            run_id: a.info.header.run_id.clone(),
            answer: answer::answer(a),
            summary: summary(a),
            ratios: ratios(a),
            study: study(a),
            throughput: cells::throughput(a),
            equal_load: cells::equal_load(a),
            latency: cells::latency(a),
            cold_start: cells::cold_start(a),
            open_loop: cells::open_loop(a),
            resources: resources::resources(a),
            capacity: resources::capacity(a),
            environment: environment::environment(a),
            not_observable: crate::sections::not_observable(a),
            other_compute_code: crate::sections::other_compute_code(a),
            baseline: BASELINE,
            saturation_note: notes::saturation_note(),
            capacity_note: notes::capacity_note(),
            equal_load_note: notes::equal_load_note(),
            cost_lead: notes::cost_lead(),
            per_core_note: notes::PER_CORE,
        }
    }
}

/// A variant's name with its swatch.
pub(super) fn variant(a: &ServerAnalysis, v: &str) -> Cell {
    Cell::swatch(v, swatch_of(a, v))
}

// --- Summary ---------------------------------------------------------------------------------

#[derive(Serialize)]
struct Summary {
    state: String,
    description: String,
    started: String,
    finished: Option<String>,
    repetitions: u32,
    seed: u64,
    git_sha: Option<String>,
    core_guest: Option<String>,
    command: String,
    /// None when the run recorded no variant.
    variants: Option<Table>,
    unmeasured: Vec<Unmeasured>,
}

/// A variant in the "not (fully) measured" box.
#[derive(Serialize)]
struct Unmeasured {
    name: String,
    status: String,
    reason: Option<String>,
}

fn summary(a: &ServerAnalysis) -> Summary {
    let info = &a.info;
    let h = &info.header;
    let outcomes = sections::outcomes(a);
    let rows: Vec<Vec<Cell>> = outcomes
        .iter()
        .map(|o| {
            vec![
                variant(a, &o.name),
                if o.status == Status::Measured {
                    o.status.as_str().into()
                } else {
                    Cell::flagged(format!("⚠ {}", o.status))
                },
                Cell::wrapping(o.reason.as_deref().unwrap_or("")),
                o.checks.as_str().into(),
                Cell::wrapping(&o.failed_checks),
            ]
        })
        .collect();
    Summary {
        state: h.state.to_string(),
        description: info.suite.description.clone(),
        started: h.started_utc.clone(),
        finished: h.finished_utc.clone(),
        repetitions: info.suite.repetitions,
        seed: h.seed,
        git_sha: h.git_sha.clone(),
        core_guest: info.core_guest.clone(),
        command: shell_join(&h.command),
        variants: Table::some(
            &["Variant", "Status", "Reason", "Checks", "Failed checks"],
            5,
            rows,
        ),
        // Failed and skipped ones, as the terminal lists them: a variant interrupted with the run
        // is in the tables with what it measured, and the run's banner says it stopped.
        unmeasured: outcomes
            .into_iter()
            .filter(|o| o.status.is_out())
            .map(|o| Unmeasured {
                name: o.name,
                status: o.status.to_string(),
                reason: o.reason,
            })
            .collect(),
    }
}

// --- The gateway study -----------------------------------------------------------------------

#[derive(Serialize)]
struct Study {
    name: String,
    source: String,
    machine: String,
    /// The study's baseline server, and the variant of ours that stands for it.
    baseline: String,
    baseline_variant: String,
    /// How its figures are set beside ours.
    intro: String,
    /// This run measured at least one of the study's variants and cells.
    measured: bool,
    comparisons: Vec<StudyTable>,
    /// Its sizing rule beside this run's capacity (the wasmCloud study's).
    capacity_plan: Option<CapacityPlan>,
    /// (the study's system, why no variant of ours reproduces it)
    not_reproduced: Vec<(String, String)>,
    method_differences: Vec<String>,
}

#[derive(Serialize)]
struct CapacityPlan {
    title: String,
    rule: String,
    /// The rule beside ours, in a sentence.
    intro: String,
    table: Table,
}

#[derive(Serialize)]
struct StudyTable {
    title: String,
    ours_at: Option<String>,
    table: Table,
}

/// The study's published figures beside this run's, with its method's differences.
fn study(a: &ServerAnalysis) -> Study {
    let comparisons = sections::study(a)
        .into_iter()
        .map(|f| StudyTable {
            title: f.title,
            ours_at: f.ours_at,
            table: Table::new(
                &f.columns.iter().map(String::as_str).collect::<Vec<_>>(),
                1,
                f.rows
                    .into_iter()
                    .map(|r| {
                        std::iter::once(variant(a, &r.variant))
                            .chain(r.values.into_iter().map(Into::into))
                            .collect()
                    })
                    .collect(),
            ),
        })
        .collect();
    let capacity_plan = sections::capacity_plan(a).map(|p| CapacityPlan {
        title: p.title,
        intro: notes::sizing_rule(&p.rule),
        rule: p.rule,
        table: Table::new(
            &p.columns.iter().map(String::as_str).collect::<Vec<_>>(),
            2,
            p.rows
                .into_iter()
                .map(|(study, cells)| {
                    let mut cells = cells.into_iter();
                    let first = cells.next().unwrap_or_default();
                    let first = if study {
                        first.into()
                    } else {
                        variant(a, &first)
                    };
                    std::iter::once(first)
                        .chain(cells.map(Into::into))
                        .collect()
                })
                .collect(),
        ),
    });
    let baseline = a.study.baseline.clone().unwrap_or_else(|| "native".into());
    let baseline_variant = wasmlab_analysis::study::baseline_of(&a.study).to_owned();
    Study {
        intro: notes::study_intro(&a.study.machine, &baseline, &baseline_variant),
        measured: sections::study_measured(a),
        comparisons,
        capacity_plan,
        not_reproduced: a
            .study
            .not_reproduced()
            .map(|(s, why)| (s.to_owned(), why.to_owned()))
            .collect(),
        method_differences: a.study.method_differences.clone(),
        name: a.study.name.clone(),
        source: a.study.source.clone(),
        machine: a.study.machine.clone(),
        baseline,
        baseline_variant,
    }
}

// --- Ratios to native ------------------------------------------------------------------------

#[derive(Serialize)]
struct Ratios {
    /// The native baseline was measured.
    baseline: bool,
    capacity: Option<Table>,
    throughput: Option<Table>,
    /// Explain the saturation flags of the throughput ratios.
    saturation_note: bool,
    warm: Option<Table>,
    cold_start: Option<Table>,
}

/// Which ratios a matrix shows.
enum MatrixOf {
    /// Capacity: needs the variant's CPU, not observable for a remote target.
    Capacity,
    /// Throughput, with the load generator's saturation flags (which bias it).
    Throughput,
}

/// A matrix of ratios: a row per variant, a column per workload and concurrency level (None
/// without any).
fn matrix(a: &ServerAnalysis, of: MatrixOf) -> Option<Table> {
    let levels = connection_levels(a);
    let columns: Vec<(&String, usize)> = a
        .workloads
        .iter()
        .flat_map(|w| levels.iter().map(move |&c| (w, c)))
        .filter(|(w, c)| {
            a.throughput
                .iter()
                .any(|x| &x.workload == *w && x.connections == *c)
        })
        .collect();
    let mut rows = Vec::new();
    for v in a.variants.iter().filter(|v| *v != BASELINE) {
        let cells: Vec<Option<&ThroughputCell>> = columns
            .iter()
            .map(|(w, c)| a.throughput_cell(v, w, *c))
            .collect();
        if cells.iter().all(Option::is_none) {
            continue;
        }
        let mut row = vec![variant(a, v)];
        for c in cells {
            row.push(match c {
                None => "–".into(),
                Some(_) if matches!(of, MatrixOf::Capacity) && !a.observable(v) => {
                    crate::sections::NOT_OBSERVABLE.into()
                }
                // Not where either server was not saturated: why, instead.
                Some(c) if matches!(of, MatrixOf::Capacity) && c.capacity_ratio.is_none() => {
                    sections::capacity(a, c).short.into()
                }
                Some(c) => {
                    let mut cell = Cell::compact_ratio(match of {
                        MatrixOf::Capacity => c.capacity_ratio.as_ref(),
                        MatrixOf::Throughput => c.ratio_to_native.as_ref(),
                    });
                    if matches!(of, MatrixOf::Capacity) {
                        // The runs it leaves out, and what set their pace.
                        cell.flags = sections::capacity(a, c).flags;
                    }
                    if matches!(of, MatrixOf::Throughput) {
                        cell.flags.extend(Saturation::of(c, None).map(|s| s.flag()));
                        // A saturated baseline understates native, so the ratio too.
                        cell.flags.extend(
                            a.throughput_cell(BASELINE, &c.workload, c.connections)
                                .and_then(|b| Saturation::of(b, Some(BASELINE)))
                                .map(|s| s.flag()),
                        );
                    }
                    cell
                }
            });
        }
        rows.push(row);
    }
    let head: Vec<String> = std::iter::once("Variant".to_owned())
        .chain(columns.iter().map(|(w, c)| {
            if levels.len() > 1 {
                format!("{w}, {c} conns")
            } else {
                (*w).clone()
            }
        }))
        .collect();
    (!rows.is_empty()).then(|| Table::owned(head, 1, rows))
}

fn ratios(a: &ServerAnalysis) -> Option<Ratios> {
    if a.throughput.is_empty() && a.warm.is_empty() && a.cold_start.is_empty() {
        return None;
    }
    // Warm p50: one row per variant, one column per workload.
    let warm_workloads: Vec<&String> = a
        .workloads
        .iter()
        .filter(|w| a.warm.iter().any(|r| &r.workload == *w))
        .collect();
    let mut rows = Vec::new();
    for v in a.variants.iter().filter(|v| *v != BASELINE) {
        if !a.warm.iter().any(|r| &r.variant == v) {
            continue;
        }
        let mut row = vec![variant(a, v)];
        for w in &warm_workloads {
            let r = a.warm.iter().find(|r| &r.variant == v && &r.workload == *w);
            row.push(r.map_or_else(
                || "–".into(),
                |r| Cell::compact_ratio(r.ratio_to_native.as_ref()),
            ));
        }
        rows.push(row);
    }
    let warm_head: Vec<&str> = std::iter::once("Variant")
        .chain(warm_workloads.iter().map(|w| w.as_str()))
        .collect();
    let cold_start = a
        .cold_start
        .iter()
        .filter(|r| r.variant != BASELINE)
        .map(|r| {
            vec![
                variant(a, &r.variant),
                r.n.to_string().into(),
                Cell::compact_ratio(r.ratio_to_native.as_ref()),
            ]
        })
        .collect();
    Some(Ratios {
        baseline: a.variants.iter().any(|v| v == BASELINE),
        capacity: matrix(a, MatrixOf::Capacity),
        throughput: matrix(a, MatrixOf::Throughput),
        saturation_note: a.throughput.iter().any(|c| c.generator_saturated_runs > 0),
        warm: Table::some(&warm_head, 1, rows),
        cold_start: Table::some(&["Variant", "n", "× native p50 [95% CI] n"], 1, cold_start),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_not_in_the_run_has_no_colour_of_the_run() {
        let a = crate::tests::analysis();
        let run = variant(&a, &a.variants[0]);
        let study_only = variant(&a, "a-variant-of-a-study-only");
        assert_eq!(study_only.swatch.as_deref(), Some(plots::NOT_IN_RUN_SWATCH));
        assert_ne!(run.swatch, study_only.swatch);
        let palette: Vec<String> = (0..20).map(crate::plot::css_colour).collect();
        assert!(!palette.contains(&plots::NOT_IN_RUN_SWATCH.to_owned()));
    }

    #[test]
    fn percentile_labels() {
        assert_eq!(plots::percentile_label(0), "0%");
        assert_eq!(plots::percentile_label(3), "99.9%");
        assert_eq!(plots::percentile_label(5), "99.999%");
    }
}
