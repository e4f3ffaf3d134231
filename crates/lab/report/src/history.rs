//! `wasmlab history`: a suite's headline figures run after run. In the terminal, per suite and
//! machine, what changed between runs and a line per figure (its first and latest value, and
//! the runs where it moved beyond its interval); history.html adds a plot and a table of every
//! run per workload and footing (`view::history`); `crate::render_history` makes both.

use wasmlab_analysis::compare::Footing;
use wasmlab_analysis::history::{Group, History, Moved, Point, Series};
use wasmlab_analysis::stats::Estimate;

use crate::format::SERVER_RATIO;
use crate::table;

/// What every form says of the figures and the marks on them.
pub(crate) fn legend() -> &'static str {
    "Each figure is a variant's cost × native: its CPU per request over native's at the same \
     offered rate (equal load), or native's capacity over its own where both were saturated; \
     lower is cheaper. ▲ marks a figure worse than in the last run before it that had it, ▼ \
     better, each beyond both runs' 95% intervals; within them, the runs cannot tell the \
     figures apart."
}

/// How a group is headed: `quick on AMD EPYC, 2 CPUs: 5 runs from A to B`.
pub(crate) fn group_title(g: &Group) -> String {
    format!("{} on {}", g.suite, g.machine)
}

pub(crate) fn group_span(g: &Group) -> String {
    let first = &g.runs[0].run_id;
    match g.runs.last().map(|r| &r.run_id) {
        Some(last) if last != first => format!("{} runs, {first} to {last}", g.runs.len()),
        _ => format!("1 run, {first}"),
    }
}

/// `hello, equal load`.
pub(crate) fn footing_label(s: &Series) -> &'static str {
    if s.footing == Footing::EqualLoad.name() {
        Footing::EqualLoad.label()
    } else {
        Footing::Saturated.label()
    }
}

/// A move as a mark: ▲ worse, ▼ better.
pub(crate) fn mark(m: Moved) -> &'static str {
    match m {
        Moved::Worse => "▲",
        Moved::Better => "▼",
    }
}

/// Where a series moved, run by run: `▲ run 3 (+35%), ▼ run 5 (-30%)`; `–` where never.
pub(crate) fn moves(s: &Series) -> String {
    let mut out = Vec::new();
    let mut last: Option<f64> = None;
    for (i, p) in s.points.iter().enumerate() {
        let Some(e) = p.as_ref().and_then(|p| p.estimate) else {
            continue;
        };
        if let (Some(m), Some(before)) = (p.as_ref().and_then(|p| p.moved), last) {
            out.push(format!(
                "{} run {} ({:+.0}%)",
                mark(m),
                i + 1,
                (e.value / before - 1.0) * 100.0
            ));
        }
        last = Some(e.value);
    }
    if out.is_empty() {
        "–".into()
    } else {
        out.join(", ")
    }
}

pub(crate) fn terminal(h: &History) -> String {
    let mut out = String::new();
    if h.groups.is_empty() {
        out += &format!(
            "no run of an HTTP suite with a figure in {}: `wasmlab run` writes its runs there\n",
            h.root
        );
    }
    for g in &h.groups {
        out += &format!("{}: {}\n", group_title(g), group_span(g));
        for (i, r) in g.runs.iter().enumerate() {
            if !r.changed.is_empty() {
                out += &format!(
                    "  run {} ({}) changed: {}\n",
                    i + 1,
                    r.run_id,
                    r.changed.join(", ")
                );
            }
        }
        if g.series.is_empty() {
            out += "  no headline figure in these runs (native was not measured beside the \
                    variants, or no run finished a repetition)\n";
            continue;
        }
        let mut t = table::comfy([
            "workload",
            "variant",
            "figure",
            "runs",
            "first",
            "last run × native [95% CI] n",
            "moves",
        ]);
        let mut moved = Vec::new();
        t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
            .set_width(crate::terminal::COLUMNS);
        for s in &g.series {
            let had: Vec<Estimate> = s
                .points
                .iter()
                .filter_map(|p| p.as_ref().and_then(|p| p.estimate))
                .collect();
            let last = match s.points.last() {
                Some(Some(Point {
                    estimate: Some(e), ..
                })) => SERVER_RATIO.estimate(Some(e)),
                Some(Some(_)) => "none (the page says why)".into(),
                _ => "not measured".into(),
            };
            let moves = moves(s);
            let count = s
                .points
                .iter()
                .flatten()
                .filter(|p| p.moved.is_some())
                .count();
            if count > 0 {
                moved.push(format!(
                    "  {} {} {}: {moves}",
                    s.workload,
                    s.variant,
                    footing_label(s)
                ));
            }
            t.add_row([
                s.workload.clone(),
                s.variant.clone(),
                footing_label(s).to_owned(),
                format!("{}/{}", had.len(), s.points.len()),
                had.first()
                    .map_or("–".into(), |e| SERVER_RATIO.point(e.value)),
                last,
                if count > 0 {
                    count.to_string()
                } else {
                    "–".into()
                },
            ]);
        }
        out += &format!("{t}\n");
        if !moved.is_empty() {
            out += &format!("moved beyond the intervals:\n{}\n", moved.join("\n"));
        }
    }
    if !h.groups.is_empty() {
        out += &format!("{}\n", legend());
    }
    for p in &h.passed_over {
        out += &format!("passed over {}: {}\n", p.dir, p.why);
    }
    out
}
