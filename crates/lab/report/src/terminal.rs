//! The terminal's tables, laid out from the report's sections. By default each fits 120
//! columns: the figures a reader compares first, the rest in the CSVs, summary.md and
//! report.html, or here with `wide` (`--wide`).

use comfy_table::ContentArrangement;
use wasmlab_analysis::compare::{
    Change, Footing, HeadlineChange, HeadlineFigure, STEADY_WITHIN, Verdict,
};
use wasmlab_analysis::programs::EngineSummary;
use wasmlab_analysis::servers::{BASELINE, plus_minus};
use wasmlab_analysis::{ProgramAnalysis, ServerAnalysis, stats};

use crate::format::SERVER_RATIO;
use crate::notes::{capacity_note, equal_load_note, saturation_note, spread_note};
use crate::programs::{engine_columns, measured};
use crate::sections;
use crate::table;

/// The width a default table keeps within.
pub const COLUMNS: u16 = 120;

/// A server suite's tables: throughput (with each ratio to native and its CI), cold start, warm
/// latency and open loop, whichever the run measured, then what was not measured and why.
pub fn servers(a: &ServerAnalysis, wide: bool) -> String {
    let mut out = String::new();
    throughput(&mut out, a, wide);
    if let Some(n) = sections::not_observable(a) {
        out += &format!("{n}\n");
    }
    if let Some(n) = sections::other_compute_code(a) {
        out += &format!("{n}\n");
    }
    equal_load(&mut out, a, wide);
    cold_start(&mut out, a, wide);
    warm(&mut out, a, wide);
    open_loop(&mut out, a, wide);
    costs(&mut out, a, wide);
    for line in crate::yours::sentences(a) {
        out += &format!("{line}\n");
    }
    not_measured(&mut out, a);
    out
}

fn throughput(out: &mut String, a: &ServerAnalysis, wide: bool) {
    let rows = sections::throughput(a);
    if rows.is_empty() {
        return;
    }
    let t = table::terminal(&sections::throughput_columns(a), &rows, wide);
    *out += &format!("throughput (closed loop)\n{t}\n{}\n", capacity_note());
    if rows.iter().any(|r| r.saturation.is_some()) {
        *out += &format!("{}\n", saturation_note());
    }
}

/// The answer after `done` of `total` repetitions, while a run goes on: the answer's table with
/// the intervals so far, said to be provisional. None while it has no row.
pub fn answer_so_far(a: &ServerAnalysis, done: u32, total: u32) -> Option<String> {
    let rows = sections::costs(a);
    if rows.is_empty() {
        return None;
    }
    let t = table::terminal(&sections::cost_columns(), &rows, false);
    Some(format!(
        "provisional answer, after {done} of {total} repetitions (the intervals narrow with each; \
         the final answer, every table and report.html come at the end; Ctrl-C keeps what is \
         measured):\n{}{}\n{t}",
        models(a),
        costs_title()
    ))
}

/// The isolation models' lead and sentences, a line each, or nothing.
fn models(a: &ServerAnalysis) -> String {
    let Some((lead, sentences)) = crate::isolation::answer(a) else {
        return String::new();
    };
    let lines: Vec<String> = sentences.iter().map(|s| format!("  {s}\n")).collect();
    format!("{lead}\n{}", lines.concat())
}

/// A table per workload: every variant at each rate.
fn equal_load(out: &mut String, a: &ServerAnalysis, wide: bool) {
    let rows = sections::equal_load(a);
    if rows.is_empty() {
        return;
    }
    let columns = sections::equal_load_columns();
    for w in &a.workloads {
        let mine: Vec<sections::EqualLoad> =
            rows.iter().filter(|r| &r.workload == w).cloned().collect();
        if !mine.is_empty() {
            let t = table::terminal(&columns, &mine, wide);
            *out += &format!("equal load: {w}\n{t}\n");
        }
    }
    *out += &format!("{}\n", equal_load_note());
}

/// The title of the answer's table.
fn costs_title() -> String {
    format!(
        "what a request costs against {BASELINE}: the server's CPU per request × {BASELINE}'s, at equal load (the variant and native at the same rate, the highest both kept up with) and where both servers were saturated"
    )
}

/// The answer: what a request costs each variant against native, at equal load and saturated.
fn costs(out: &mut String, a: &ServerAnalysis, wide: bool) {
    let rows = sections::costs(a);
    if rows.is_empty() {
        return;
    }
    let t = table::terminal(&sections::cost_columns(), &rows, wide);
    *out += &format!("{}{}\n{t}\n", models(a), costs_title());
    if let Some(s) = a.spread() {
        let added = a.info.repetitions_added();
        let stopped = a.info.header.state == wasmlab_model::run::RunState::Interrupted;
        *out += &format!("{}\n", spread_note(&s, added, stopped));
    }
    if let Some(note) = crate::notes::resumed_note(&a.info.resumed) {
        *out += &format!("{note}\n");
    }
}

fn cold_start(out: &mut String, a: &ServerAnalysis, wide: bool) {
    let rows = sections::cold_starts(a);
    if rows.is_empty() {
        return;
    }
    let t = table::terminal(&sections::cold_start_columns(), &rows, wide);
    *out += &format!(
        "cold start (exec to the first complete {})\n{t}\n",
        a.info.suite.cold_start_answer()
    );
}

fn warm(out: &mut String, a: &ServerAnalysis, wide: bool) {
    let rows = sections::warm(a);
    if rows.is_empty() {
        return;
    }
    let t = table::terminal(&sections::warm_columns(), &rows, wide);
    *out += &format!("warm latency (one connection)\n{t}\n");
}

fn open_loop(out: &mut String, a: &ServerAnalysis, wide: bool) {
    let rows = sections::open_loop(a);
    if rows.is_empty() {
        return;
    }
    let t = table::terminal(&sections::open_loop_columns(), &rows, wide);
    *out += &format!("open loop (latency from the intended send time)\n{t}\n");
}

/// The variants not measured, with why and what would enable them: a table, then one line each,
/// whole, for grep and logs.
fn not_measured(out: &mut String, a: &ServerAnalysis) {
    for line in crate::notes::unserved(a) {
        *out += &format!("{line}\n");
    }
    let rows: Vec<sections::Outcome> = sections::outcomes(a)
        .into_iter()
        .filter(|o| o.status.is_out())
        .collect();
    if rows.is_empty() {
        return;
    }
    let mut t = table::comfy(["variant", "status", "why (and what would enable it)"]);
    t.set_content_arrangement(ContentArrangement::Dynamic);
    if t.width().is_none() {
        t.set_width(COLUMNS);
    }
    for o in &rows {
        t.add_row([o.name.clone(), o.status.to_string(), o.why().to_owned()]);
    }
    *out += &format!("not measured (in no table above)\n{t}\n");
    for o in &rows {
        *out += &format!("{}: not measured ({}): {}\n", o.name, o.status, o.why());
    }
}

/// A program suite's table: each engine's time relative to the baseline, then the engines not
/// measured and the programs that failed their check, one line each.
pub fn programs(a: &ProgramAnalysis, wide: bool) -> String {
    let rows: Vec<EngineSummary> = measured(a).cloned().collect();
    let t = table::terminal(&engine_columns(), &rows, wide);
    let mut out = format!(
        "{} ({} programs, {} repetitions): time relative to {}, medians over the programs; whole process, and body only (the programs' own timing of their test body); compile: the runner's median\n{t}\n",
        a.suite,
        a.programs.len(),
        a.repetitions,
        a.baseline
    );
    for e in a.engines.iter().filter(|e| e.status.is_out()) {
        out += &format!("{}: not measured ({}): {}\n", e.engine, e.status, e.reason);
    }
    for e in measured(a) {
        for (p, why) in &e.failed_programs {
            out += &format!("{} {p}: {}\n", e.engine, why.replace('\n', " "));
        }
    }
    out
}

/// `wasmlab compare`'s second table: each run's headline figure, variant by variant, whether it
/// held from A to B, and how many did.
pub fn headline(changes: &[HeadlineChange]) -> String {
    if changes.is_empty() {
        return format!(
            "the headline: no cost × {BASELINE} in either run (it needs {BASELINE} measured beside the variants)\n"
        );
    }
    let mut t = table::comfy([
        "workload",
        "variant",
        "figure",
        "A × native [95% CI] n",
        "B × native [95% CI] n",
        "native busy, A / B",
        "B / A",
        "intervals",
        "holds",
    ]);
    let side = |f: &HeadlineFigure| match (&f.estimate, f.rate) {
        (Some(e), Some(rate)) => format!(
            "{} at {}",
            SERVER_RATIO.estimate(Some(e)),
            crate::format::fmt_rps(rate)
        ),
        (Some(e), None) => SERVER_RATIO.estimate(Some(e)),
        (None, _) => format!("none: {}", f.note.as_deref().unwrap_or("not measured")),
    };
    for c in changes {
        t.add_row([
            c.workload.clone(),
            c.variant.clone(),
            c.footing.label().to_owned(),
            side(&c.a),
            side(&c.b),
            native_busy(c),
            c.change()
                .map_or_else(|| "–".into(), |r| format!("{:+.1}%", (r - 1.0) * 100.0)),
            match c.overlap() {
                Some(true) => "overlap",
                Some(false) => "apart",
                None => "–",
            }
            .to_owned(),
            match c.holds() {
                Some(true) => "yes",
                Some(false) => "no",
                None if c.a.estimate.is_none() || c.b.estimate.is_none() => "in one run only",
                None => "n < 2: cannot tell",
            }
            .to_owned(),
        ]);
    }
    // Per workload, in the table's order: how many of the figures both runs have held.
    let mut workloads: Vec<&str> = Vec::new();
    for c in changes {
        if !workloads.contains(&c.workload.as_str()) {
            workloads.push(&c.workload);
        }
    }
    // (held, of) among the figures of a workload and footing that both runs have.
    let count = |w: &str, footing: Footing| {
        let of: Vec<&HeadlineChange> = changes
            .iter()
            .filter(|c| c.workload == w && c.footing == footing && c.holds().is_some())
            .collect();
        let held = of.iter().filter(|c| c.holds() == Some(true)).count();
        (held, of.len())
    };
    let counts: Vec<String> = workloads
        .iter()
        .filter_map(|w| {
            let (equal, saturated) = (count(w, Footing::EqualLoad), count(w, Footing::Saturated));
            (equal.1 + saturated.1 > 0).then(|| {
                format!(
                    "{w} {} of {} at equal load, {} of {} saturated",
                    equal.0, equal.1, saturated.0, saturated.1
                )
            })
        })
        .collect();
    let counts = match counts.is_empty() {
        true => "no figure is in both runs".to_owned(),
        false => counts.join("; "),
    };
    format!(
        "the headline, A against B: each variant's cost × {BASELINE} as each run's lead gives it\n{t}\nheld from A to B (B within {:.0}% of A and the 95% intervals overlapping; docs/method.md, \"Comparing runs\"): {counts}\n",
        STEADY_WITHIN * 100.0,
    )
}

/// How busy native was at an equal-load figure's rate in each run ("7% / 5%"): where it was
/// nearly idle the figure follows the host more than the variant (docs/method.md, "Native at
/// low load"), so a miss there says less about the variant. "–" for a saturated figure.
fn native_busy(c: &HeadlineChange) -> String {
    if c.footing != Footing::EqualLoad {
        return "–".into();
    }
    // A run's figure carries native's busy share exactly when it has an equal-load figure.
    let side = |f: &HeadlineFigure| {
        f.native_busy
            .map_or_else(|| "–".into(), crate::format::percent)
    };
    format!("{} / {}", side(&c.a), side(&c.b))
}

/// How steady each run's machine was, by the width of its lead's intervals (see
/// [`spread_note`]): a miss between two runs where either was noisy is the machine's.
pub fn spreads(a: &ServerAnalysis, b: &ServerAnalysis) -> String {
    let (sa, sb) = (a.spread(), b.spread());
    let side = |name: &str, s: &Option<wasmlab_analysis::servers::Spread>, x: &ServerAnalysis| {
        let Some(s) = s else {
            return format!("{name} none (no interval)");
        };
        let grown = x.info.repetitions_added().map_or(String::new(), |r| {
            format!(
                " after {} repetitions ({} after the first {}: noisy, measured longer)",
                r.total(),
                plus_minus(r.spread.unwrap_or(f64::NAN)),
                r.after
            )
        });
        let noisy = if s.noisy() { " (noisy)" } else { "" };
        format!("{name} {}{noisy}{grown}", plus_minus(s.median))
    };
    let noisy = [&sa, &sb]
        .iter()
        .any(|s| s.as_ref().is_some_and(|s| s.noisy()));
    format!(
        "the lead's 95% intervals at the median: {}, {}; {}\n",
        side("A", &sa, a),
        side("B", &sb, b),
        match (
            noisy,
            a.info.repetitions_added().is_some() || b.info.repetitions_added().is_some(),
        ) {
            (true, _) => format!(
                "above ±{:.0}% the machine was noisy, and figures move between runs by about their intervals' width or more",
                wasmlab_analysis::servers::NOISY_SPREAD * 100.0
            ),
            (false, true) =>
                "both narrow, a noisy machine's after the repetitions added".to_owned(),
            (false, false) => "both quiet machines".to_owned(),
        }
    )
}

/// `wasmlab compare`'s table: each figure's change B/A with its interval, and a count of the
/// significant ones.
pub fn compare(changes: &[Change]) -> String {
    let notes = changes.iter().any(|c| !c.figure.note.is_empty());
    let head = [
        "figure",
        "A mean",
        "n",
        "B mean",
        "n",
        "B / A [95% CI]",
        "significant",
        "runs left out",
    ];
    let mut t = table::comfy(head[..if notes { 8 } else { 7 }].iter().copied());
    let count = |v: Verdict| changes.iter().filter(|c| c.verdict == v).count();
    for c in changes {
        let f = &c.figure;
        let mean =
            |v: &[f64]| stats::mean(v).map_or("–".into(), |m| format!("{m:.3} {}", f.unit));
        t.add_row(
            [
                f.what.clone(),
                mean(&f.a),
                f.a.len().to_string(),
                mean(&f.b),
                f.b.len().to_string(),
                c.ratio
                    .as_ref()
                    .map_or_else(|| "–".into(), |e| SERVER_RATIO.estimate(Some(e))),
                match c.verdict {
                    Verdict::Better => "yes: better",
                    Verdict::Worse => "yes: worse",
                    Verdict::NotSignificant => "no",
                    Verdict::TooFewRuns => "n < 2: cannot tell",
                    Verdict::OnlyInOne => "only in one run",
                    Verdict::NotSaturated => "cannot tell: no saturated run",
                }
                .to_owned(),
                f.note.clone(),
            ]
            .into_iter()
            .take(head.len() - usize::from(!notes))
            .collect::<Vec<_>>(),
        );
    }
    format!(
        "{t}\n{} figures compared: {} significantly better in B, {} significantly worse, {} in one run only, {} capacities with no saturated run on a side (a capacity counts only where the server set the pace: docs/method.md)\n",
        changes.len(),
        count(Verdict::Better),
        count(Verdict::Worse),
        count(Verdict::OnlyInOne),
        count(Verdict::NotSaturated)
    )
}
