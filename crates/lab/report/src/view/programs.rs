//! The view model of a program run's report.html: the charts lead, then the engines measured
//! (one row each, every figure on one line, its interval under it), the engines not measured
//! and the programs that failed their check (each with why, at full width), the study beside
//! ours, and the program × engine table.

use minijinja::Value;
use serde::Serialize;
use wasmlab_analysis::ProgramAnalysis;
use wasmlab_analysis::programs::{EngineSummary, MIN_BODY_US};
use wasmlab_analysis::stats::Estimate;
use wasmlab_model::run::Status;

use super::{Cell, Table};
use crate::format::PROGRAM_RATIO;
use crate::plot::css_colour;
use crate::programs::{
    chart, engine_colour, engine_columns, iteration_counts, measured, program_rows,
};
use crate::table;

#[derive(Serialize)]
pub(super) struct Report {
    suite: String,
    run_id: String,
    state: String,
    description: String,
    programs: usize,
    repetitions: u32,
    machine: String,
    cpus: String,
    baseline: String,
    /// build.json of the program set, for its versions and flags.
    program_set: serde_json::Value,
    /// This run's and the study's iterations per benchmark run, when they differ.
    iterations: Option<(u64, u64)>,
    /// Whether, when and how the run was resumed after an interruption.
    resumed: Option<String>,
    chart: Option<Value>,
    body_chart: Option<Value>,
    min_body_us: f64,
    engines: Option<Table>,
    /// Engines not measured here, with why.
    not_measured: Vec<(String, String, String)>,
    /// (engine, program, what happened) of every program that failed its check.
    failed: Vec<(String, String, String)>,
    study: Option<Study>,
    per_program: Table,
}

#[derive(Serialize)]
struct Study {
    name: String,
    source: String,
    metric: String,
    method_differences: Vec<String>,
    table: Table,
}

/// A ratio over programs, as a table shows it: `1.64×` over its interval in small type.
fn ratio_cell(e: &Option<Estimate>) -> Cell {
    Cell::of(table::Value::ratio(PROGRAM_RATIO, e.as_ref()), &|_| {
        String::new()
    })
}

impl Report {
    pub(super) fn new(a: &ProgramAnalysis) -> Self {
        let rows: Vec<EngineSummary> = measured(a).cloned().collect();
        let swatch = |e: &str| css_colour(engine_colour(a, e));
        let failed = measured(a)
            .flat_map(|e| {
                e.failed_programs
                    .iter()
                    .map(|(p, why)| (e.engine.clone(), p.clone(), why.clone()))
            })
            .collect();
        Self {
            suite: a.suite.clone(),
            run_id: a.run_id.clone(),
            state: a.state.to_string(),
            description: a.description.clone(),
            programs: a.programs.len(),
            repetitions: a.repetitions,
            machine: a.machine.clone(),
            cpus: a.cpus.clone(),
            baseline: a.baseline.clone(),
            program_set: a.program_set.clone(),
            iterations: iteration_counts(a).filter(|(here, study)| here != study),
            resumed: crate::notes::resumed_note(&a.resumed),
            chart: chart(a, |e| e.median, true).map(Value::from_safe_string),
            body_chart: chart(a, |e| e.body_median, false).map(Value::from_safe_string),
            min_body_us: MIN_BODY_US,
            engines: (!rows.is_empty()).then(|| Table::laid(&engine_columns(), &rows, &swatch)),
            not_measured: a
                .engines
                .iter()
                .filter(|e| e.status == Status::Skipped)
                .map(|e| (e.engine.clone(), e.about.clone(), e.reason.clone()))
                .collect(),
            failed,
            study: study(a),
            per_program: per_program(a),
        }
    }
}

/// The study's runtimes beside our engines, in the study's order.
fn study(a: &ProgramAnalysis) -> Option<Study> {
    let s = a.study.as_ref()?;
    let rows = a
        .beside_study
        .iter()
        .map(|c| {
            let measured = c.median.is_some();
            vec![
                c.study.as_str().into(),
                PROGRAM_RATIO.point(c.published).into(),
                ratio_cell(&c.median),
                ratio_cell(&c.body_median),
                match (&c.engine, measured) {
                    (Some(e), true) => Cell::swatch(e, css_colour(engine_colour(a, e))),
                    (Some(e), false) => format!("{e}: not measured in this run").into(),
                    (None, _) => "no engine of wasmlab's stands for it".into(),
                },
            ]
        })
        .collect();
    Some(Study {
        name: s.name.clone(),
        source: s.source.clone(),
        metric: s
            .figure(wasmlab_model::study::FigureKind::MedianRatio)
            .and_then(|f| f.about.clone())
            .unwrap_or_default(),
        method_differences: s.method_differences.clone(),
        table: Table::new(
            &[
                "Study runtime",
                "2023 median",
                "Here, median",
                "Here, body only",
                "Engine here",
            ],
            1,
            rows,
        ),
    })
}

/// A program's ratio in each engine measured.
fn per_program(a: &ProgramAnalysis) -> Table {
    let head: Vec<String> = std::iter::once("Program".to_owned())
        .chain(measured(a).map(|e| e.engine.clone()))
        .collect();
    let rows = program_rows(a)
        .into_iter()
        .map(|r| {
            std::iter::once(Cell::from(r.program))
                .chain(r.cells.into_iter().map(Cell::from))
                .collect()
        })
        .collect();
    Table::owned(head, 1, rows)
}
