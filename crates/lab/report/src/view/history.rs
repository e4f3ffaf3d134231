//! history.html's view model: per suite and machine, the runs (what changed between them) and,
//! per workload and footing, a plot of every variant's cost × native run after run with its
//! intervals, and the same figures as a table.

use serde::Serialize;
use wasmlab_analysis::history::{Group, History, Point, Series};

use super::{Cell, Figure, Table};
use crate::format::SERVER_RATIO;
use crate::history::{footing_label, group_span, group_title, legend, mark};
use crate::plot::{self, Axis, LegendEntry, Line, Plot, Scale, Stroke, Whisker};

#[derive(Serialize)]
pub(super) struct Page {
    root: String,
    legend: &'static str,
    groups: Vec<GroupView>,
    passed_over: Vec<(String, String)>,
}

#[derive(Serialize)]
struct GroupView {
    id: String,
    title: String,
    span: String,
    runs: Table,
    figures: Vec<FigureView>,
}

/// One workload at one footing: the plot and the table.
#[derive(Serialize)]
struct FigureView {
    title: String,
    figure: Figure,
    table: Table,
}

pub(super) fn page(h: &History) -> Page {
    Page {
        root: h.root.clone(),
        legend: legend(),
        groups: h
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| group(i, g))
            .collect(),
        passed_over: h
            .passed_over
            .iter()
            .map(|p| (p.dir.clone(), p.why.clone()))
            .collect(),
    }
}

fn group(i: usize, g: &Group) -> GroupView {
    let runs = g
        .runs
        .iter()
        .enumerate()
        .map(|(n, r)| {
            vec![
                Cell::from((n + 1).to_string()),
                Cell::code(&r.dir),
                Cell::from(r.started_utc.as_str()),
                Cell::from(r.state.as_str()),
                Cell::from(r.repetitions.to_string()),
                Cell::wrapping(&r.changed.join(", ")),
            ]
        })
        .collect();
    // The variants in the order they first appear: each keeps its colour in every plot.
    let mut variants: Vec<&str> = Vec::new();
    for s in &g.series {
        if !variants.contains(&s.variant.as_str()) {
            variants.push(&s.variant);
        }
    }
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for s in &g.series {
        if !keys.contains(&(s.workload.as_str(), s.footing)) {
            keys.push((&s.workload, s.footing));
        }
    }
    let figures = keys
        .into_iter()
        .map(|(workload, footing)| {
            let series: Vec<&Series> = g
                .series
                .iter()
                .filter(|s| s.workload == workload && s.footing == footing)
                .collect();
            let title = format!("{workload}, {}", footing_label(series[0]));
            let colour = |v: &str| variants.iter().position(|x| *x == v).unwrap_or(0);
            FigureView {
                figure: Figure::new(
                    "Cost × native run after run, with 95% intervals".to_owned(),
                    &plot(g, &series, &colour),
                ),
                table: table(g, &series, &colour),
                title,
            }
        })
        .collect();
    let mut runs = Table::new(
        &[
            "#",
            "run",
            "started (UTC)",
            "state",
            "repetitions",
            "changed from the run before",
        ],
        2,
        runs,
    );
    // What changed is text, read from the left.
    runs.left[5] = true;
    GroupView {
        id: format!("g{}", i + 1),
        title: group_title(g),
        span: group_span(g),
        runs,
        figures,
    }
}

/// Each variant's figure over the runs (a line through the runs that have it, with whiskers and
/// ▲/▼ where it moved), and a grey dashed line at each run where something changed.
fn plot(g: &Group, series: &[&Series], colour: &dyn Fn(&str) -> usize) -> Plot {
    let n = g.runs.len();
    // At most about 20 labelled ticks.
    let every = n.div_ceil(20).max(1);
    let mut p = Plot::new(
        Axis::new("run", Scale::Linear).ticks(
            (1..=n)
                .filter(|i| (i - 1) % every == 0)
                .map(|i| (i as f64, i.to_string()))
                .collect(),
        ),
        Axis::new("cost × native (log)", Scale::Log),
    );
    let (mut lo, mut hi) = (f64::INFINITY, 0.0_f64);
    for s in series {
        let c = Some(colour(&s.variant));
        let mut points = Vec::new();
        for (i, pt) in s.points.iter().enumerate() {
            let Some((pt, e)) = pt.as_ref().and_then(|p| Some((p, p.estimate?))) else {
                continue;
            };
            let x = (i + 1) as f64;
            points.push((x, e.value));
            lo = lo.min(e.value);
            hi = hi.max(e.value);
            if e.n > 1 && e.lo.is_finite() && e.hi.is_finite() {
                p.whiskers.push(Whisker {
                    colour: c,
                    vertical: true,
                    at: x,
                    lo: e.lo,
                    hi: e.hi,
                });
                lo = lo.min(e.lo);
                hi = hi.max(e.hi);
            }
            if let Some(m) = pt.moved {
                p.labels.push((x + 0.08, e.value, mark(m).to_owned()));
            }
        }
        p.lines.push(Line {
            colour: c,
            points,
            stroke: Stroke::Solid,
            markers: true,
        });
        p.legend.push(LegendEntry {
            colour: c,
            label: s.variant.clone(),
            stroke: Stroke::Solid,
        });
    }
    let changed: Vec<usize> = (1..n).filter(|&i| !g.runs[i].changed.is_empty()).collect();
    if lo > 0.0 && lo.is_finite() && !changed.is_empty() {
        for i in changed {
            p.lines.push(Line {
                colour: None,
                points: vec![((i + 1) as f64 - 0.5, lo), ((i + 1) as f64 - 0.5, hi)],
                stroke: Stroke::Dashed,
                markers: false,
            });
        }
        p.legend.push(LegendEntry {
            colour: None,
            label: "a version changed".into(),
            stroke: Stroke::Dashed,
        });
    }
    // Room on both sides of the first and last run.
    p.extent.extend([(0.5, lo), ((n as f64) + 0.5, hi)]);
    p
}

/// A row per variant, a column per run: the figure (bold, with ▲/▼, where it moved) over its
/// interval.
fn table(g: &Group, series: &[&Series], colour: &dyn Fn(&str) -> usize) -> Table {
    let mut head = vec!["variant".to_owned()];
    head.extend((1..=g.runs.len()).map(|i| format!("run {i}")));
    let rows = series
        .iter()
        .map(|s| {
            let mut row = vec![Cell::swatch(
                &s.variant,
                plot::css_colour(colour(&s.variant)),
            )];
            row.extend(s.points.iter().map(|p| match p {
                None => Cell::from("–"),
                Some(Point {
                    estimate: None,
                    note,
                    ..
                }) => Cell {
                    text: match note {
                        Some(n) => format!("none: {n}"),
                        None => "none".into(),
                    },
                    wrap: true,
                    ..Cell::default()
                },
                Some(
                    p @ Point {
                        estimate: Some(e), ..
                    },
                ) => {
                    let value = SERVER_RATIO.point(e.value);
                    Cell {
                        text: match p.moved {
                            Some(m) => format!("{} {value}", mark(m)),
                            None => value,
                        },
                        span: p.moved.map(|_| "sig"),
                        note: SERVER_RATIO.interval(e),
                        ..Cell::default()
                    }
                }
            }));
            row
        })
        .collect();
    Table::owned(head, 1, rows)
}
