//! The suite's study beside this run: its figures, and its sizing rule beside this run's capacity.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_model::study::FigureKind;

use crate::format::{SERVER_RATIO, fmt_ms, fmt_rps, thousands};
/// A study's figure beside this run's, one row per variant.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StudyFigure {
    pub title: String,
    /// Where ours was measured, when not in the study's cell.
    pub ours_at: Option<String>,
    /// The table's head (`wasmlab_analysis::study::columns`).
    pub columns: Vec<String>,
    pub rows: Vec<StudyRow>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct StudyRow {
    pub variant: String,
    /// The other columns, in the head's order.
    pub values: Vec<String>,
}

/// The suite's study's figures beside this run's.
pub(crate) fn study(a: &ServerAnalysis) -> Vec<StudyFigure> {
    let opt = |v: Option<f64>, f: fn(f64) -> String| v.map_or_else(|| "–".into(), f);
    let times = |v: f64| SERVER_RATIO.point(v);
    a.beside_study
        .iter()
        .map(|c| {
            let value: fn(f64) -> String = match c.figure {
                FigureKind::ColdStartP50 | FigureKind::WarmP50 => fmt_ms,
                _ => thousands,
            };
            let (native, capacity) = (c.shows_native_ratio(), c.shows_capacity());
            StudyFigure {
                title: c.title.clone(),
                ours_at: c.ours_at.clone(),
                columns: wasmlab_analysis::study::columns(&a.study, c),
                rows: c
                    .rows
                    .iter()
                    .map(|r| {
                        let mut values = vec![
                            opt(r.study, value),
                            r.ours_estimate
                                .map_or_else(|| opt(r.ours, value), |e| e.show(value)),
                            opt(r.study_ratio, times),
                            opt(r.ours_ratio, times),
                        ];
                        if native {
                            values.push(opt(r.ours_to_native, times));
                        }
                        if capacity {
                            values.push(match (&r.capacity, &r.capacity_note) {
                                (None, Some(why)) => format!("none: {why}"),
                                _ => r.capacity_estimate.map_or_else(
                                    || opt(r.capacity, thousands),
                                    |e| e.show(thousands),
                                ),
                            });
                            values.push(opt(r.capacity_ratio, times));
                            if native {
                                values.push(opt(r.capacity_to_native, times));
                            }
                        }
                        values.push(r.verdict.clone().unwrap_or_else(|| "–".into()));
                        StudyRow {
                            variant: r.variant.clone(),
                            values,
                        }
                    })
                    .collect(),
            }
        })
        .collect()
}

/// A study's sizing rule beside this run's capacity: its head, then the study's rows (marked so)
/// and every measured variant's; the first two columns (the system or variant, where its figure
/// comes from) are text.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CapacityPlan {
    pub rule: String,
    pub title: String,
    pub columns: Vec<String>,
    /// (whether the row is the study's, its cells).
    pub rows: Vec<(bool, Vec<String>)>,
}

/// The suite's study's sizing rule beside this run, when it gave one and the run measured its cell.
pub(crate) fn capacity_plan(a: &ServerAnalysis) -> Option<CapacityPlan> {
    let p = a.capacity_planning.as_ref()?;
    let range = |(lo, hi): (f64, f64), f: fn(f64) -> String| {
        if f(lo) == f(hi) {
            f(lo)
        } else {
            format!("{}–{}", f(lo), f(hi))
        }
    };
    let cores = |v: f64| format!("{v:.1}");
    let mut rows: Vec<(bool, Vec<String>)> = p
        .published
        .iter()
        .map(|r| {
            let node = if r.cores.0 == r.cores.1 {
                r.cores.0.to_string()
            } else {
                format!("{}–{}", r.cores.0, r.cores.1)
            };
            (
                true,
                vec![
                    format!("the study: {}", r.system),
                    format!(
                        "{} req/s per node of {node} cores, the load generator's CPU included",
                        thousands(r.rps)
                    ),
                    range(r.per_core, thousands),
                    range(r.cores_for_target, cores),
                ],
            )
        })
        .collect();
    rows.extend(p.ours.iter().map(|r| {
        // The interval, where it says more than the value rounded as shown.
        let needed = match (r.cores_for_target, r.cores_interval) {
            (Some(c), Some(i)) if range(i, cores) != cores(c) => {
                format!("{} [{}]", cores(c), range(i, cores))
            }
            (Some(c), _) => cores(c),
            (None, _) => "–".into(),
        };
        let per_core = match (&r.per_core, &r.note) {
            (Some(e), Some(why)) => format!("{} (left out: {why})", e.show(fmt_rps)),
            (Some(e), None) => e.show(fmt_rps),
            (None, Some(why)) => format!("none: {why}"),
            (None, None) => "–".into(),
        };
        (
            false,
            vec![
                r.variant.clone(),
                "responses per CPU-second of the server's processes where it was saturated, this run"
                    .to_owned(),
                per_core,
                needed,
            ],
        )
    }));
    Some(CapacityPlan {
        rule: p.rule.clone(),
        title: format!(
            "Capacity planning: {}{}",
            p.cell,
            p.ours_at
                .as_deref()
                .map(|at| format!(" ({at})"))
                .unwrap_or_default()
        ),
        columns: vec![
            "system".to_owned(),
            "from".to_owned(),
            "req/s per core".to_owned(),
            format!("cores for {} req/s", thousands(p.target_rps)),
        ],
        rows,
    })
}

/// Whether this run measured any of the study's variants and cells.
pub(crate) fn study_measured(a: &ServerAnalysis) -> bool {
    a.beside_study
        .iter()
        .any(|c| c.rows.iter().any(|r| r.ours.is_some()))
}
