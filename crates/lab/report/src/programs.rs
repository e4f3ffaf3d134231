//! The sections of a program suite's report as data: each engine's figures formatted once, the
//! program × engine table, and the charts of each engine's median ratio over programs.

use serde::Serialize;
use wasmlab_analysis::ProgramAnalysis as Analysis;
use wasmlab_analysis::programs::{Cell, EngineSummary};
use wasmlab_analysis::stats::Estimate;
use wasmlab_model::run::Status;

use crate::format::PROGRAM_RATIO;
use crate::plot::{Axis, LegendEntry, Scale, Stroke, bars};
use crate::table::{Column, Shows, Value, figure, text};

/// The engines' table, declared once for every output: each engine the run measured (the others
/// follow it, with why), its ratios over programs with their intervals, its phases and state.
pub(crate) fn engine_columns<'a>() -> Vec<Column<'a, EngineSummary>> {
    let ratio = |pick: fn(&EngineSummary) -> &Option<Estimate>| {
        move |e: &EngineSummary| Value::ratio(PROGRAM_RATIO, pick(e).as_ref())
    };
    let point = |pick: fn(&EngineSummary) -> &Option<Estimate>| {
        move |e: &EngineSummary| {
            Value::from(
                pick(e)
                    .as_ref()
                    .map_or_else(|| "–".into(), |e| PROGRAM_RATIO.point(e.value)),
            )
        }
    };
    vec![
        text("Engine", Shows::ALL, |e: &EngineSummary| {
            Value::variant(&e.engine)
        }),
        text("Version", Shows::HTML, |e: &EngineSummary| {
            e.version.as_str().into()
        }),
        figure(
            "× native, median [95% CI]",
            Shows::ALL,
            ratio(|e| &e.median),
        ),
        figure("geomean", Shows::NARROW, point(|e| &e.geomean)),
        figure("geomean [95% CI]", Shows::DETAILED, ratio(|e| &e.geomean)),
        figure("body only", Shows::NARROW, point(|e| &e.body_median)),
        figure(
            "body only, median [95% CI]",
            Shows::DETAILED,
            ratio(|e| &e.body_median),
        ),
        figure(
            "body only, geomean [95% CI]",
            Shows::DETAILED,
            ratio(|e| &e.body_geomean),
        ),
        figure("compile", Shows::ALL, |e: &EngineSummary| {
            ms(e.compile_ms).into()
        }),
        figure("instantiate", Shows::DETAILED, |e: &EngineSummary| {
            ms(e.instantiate_ms).into()
        }),
        figure("study 2023", Shows::NARROW, |e: &EngineSummary| {
            e.study
                .as_ref()
                .map_or_else(|| "–".into(), |(_, r)| PROGRAM_RATIO.point(*r))
                .into()
        }),
        figure("study 2023", Shows::DETAILED, |e: &EngineSummary| {
            e.study
                .as_ref()
                .map_or_else(
                    || "–".into(),
                    |(s, r)| format!("{} ({s})", PROGRAM_RATIO.point(*r)),
                )
                .into()
        }),
        text("state", Shows::NARROW, |e: &EngineSummary| {
            short_state(e).into()
        }),
        text("state", Shows::DETAILED, |e: &EngineSummary| {
            state(e).into()
        }),
    ]
}

/// A phase's median time.
fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.1} ms"))
}

/// What became of the engine: the programs it ran, or why it ran none.
fn state(e: &EngineSummary) -> String {
    match e.status {
        Status::Measured if e.failed_programs.is_empty() => format!("{} programs", e.programs),
        Status::Measured => format!(
            "{} programs; {} failed their check",
            e.programs,
            e.failed_programs.len()
        ),
        Status::Interrupted => format!("{} programs, until the run was interrupted", e.programs),
        _ => format!("{}: {}", e.status, e.reason),
    }
}

/// [`state`] in a few words, for a terminal's column: the details follow the table.
fn short_state(e: &EngineSummary) -> String {
    match e.status {
        Status::Measured if e.failed_programs.is_empty() => format!("{} programs", e.programs),
        Status::Measured => format!("{} ok, {} failed", e.programs, e.failed_programs.len()),
        Status::Interrupted => format!("{} programs, cut short", e.programs),
        other => other.to_string(),
    }
}

/// This run's and the study's iterations per benchmark run, when both are known.
pub(crate) fn iteration_counts(a: &Analysis) -> Option<(u64, u64)> {
    let here = a.program_set.get("iterations")?.as_u64()?;
    Some((here, u64::from(a.study.as_ref()?.iterations?)))
}

/// Bars of each engine's median ratio over programs as `pick` takes it (log scale, from 1 = the
/// baseline), with its interval, and with `study` the study's published median (the same
/// statistic) as a grey bar beneath.
pub(crate) fn chart(
    a: &Analysis,
    pick: fn(&EngineSummary) -> Option<Estimate>,
    study: bool,
) -> Option<String> {
    let mut groups = Vec::new();
    let mut legend = Vec::new();
    for e in &a.engines {
        let Some(g) = pick(e) else { continue };
        let colour = Some(engine_colour(a, &e.engine));
        let mut group = bars::Group {
            label: e.engine.clone(),
            bars: vec![bars::Entry {
                colour,
                value: g.value,
                interval: (g.n > 1).then_some((g.lo, g.hi)),
                text: PROGRAM_RATIO.point(g.value),
            }],
        };
        if let Some((_, r)) = e.study.as_ref().filter(|_| study) {
            group.bars.push(bars::Entry {
                colour: None,
                value: *r,
                interval: None,
                text: format!("{} (2023)", PROGRAM_RATIO.point(*r)),
            });
        }
        groups.push(group);
        legend.push(LegendEntry {
            colour,
            label: e.engine.clone(),
            stroke: Stroke::Box,
        });
    }
    if groups.is_empty() {
        return None;
    }
    if study {
        legend.push(LegendEntry {
            colour: None,
            label: "study 2023, median".into(),
            stroke: Stroke::Box,
        });
    }
    let x = Axis::new(
        &format!("time relative to {} (log scale)", a.baseline),
        Scale::Log,
    );
    let mut p = bars::horizontal(x, 1.0, &groups);
    p.legend = legend;
    p.svg().ok().flatten()
}

/// An engine's palette index: its place among the engines the run measured, so no two of them
/// share a colour and an engine has the same colour in every chart and table.
pub(crate) fn engine_colour(a: &Analysis, engine: &str) -> usize {
    measured(a)
        .position(|e| e.engine == engine)
        .unwrap_or(a.engines.len())
}

/// The engines the run measured (not skipped), in the suite's order.
pub(crate) fn measured(a: &Analysis) -> impl Iterator<Item = &EngineSummary> {
    a.engines.iter().filter(|e| e.status != Status::Skipped)
}

/// A program × engine table row.
#[derive(Serialize)]
pub(crate) struct ProgramRow {
    pub program: String,
    pub cells: Vec<String>,
}

pub(crate) fn program_rows(a: &Analysis) -> Vec<ProgramRow> {
    a.programs
        .iter()
        .map(|p| ProgramRow {
            program: p.clone(),
            cells: measured(a)
                .map(|e| {
                    let c: Option<&Cell> = a
                        .cells
                        .iter()
                        .find(|c| &c.program == p && c.engine == e.engine);
                    match c {
                        Some(c) if c.n > 0 => match c.ratio {
                            Some(r) => format!("{:.2}", r.value),
                            None => format!("{:.0} ms", c.wall_ms.unwrap_or(f64::NAN)),
                        },
                        Some(_) => "failed".into(),
                        None if e.failed_programs.iter().any(|(fp, _)| fp == p) => {
                            "check failed".into()
                        }
                        None => "–".into(),
                    }
                })
                .collect(),
        })
        .collect()
}
