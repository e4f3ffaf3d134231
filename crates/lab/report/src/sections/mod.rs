//! The sections of a server run's report as data: each row's figures formatted once, here, and
//! laid out by each output (terminal, summary.md, report.html), which choose the rows and
//! columns they show. An output that shows a figure shows it as written here.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::{BASELINE, PaceNote, ThroughputCell, describe};
use wasmlab_analysis::stats::Estimate;
use wasmlab_model::run::Status;

use crate::format::{SERVER_RATIO, percent};
use crate::table::{Flag, Mark, Value};

mod cold_start;
mod cost;
mod equal_load;
mod open_loop;
mod resources;
mod study;
mod throughput;
mod warm;

pub(crate) use cold_start::{cold_start_columns, cold_starts};
pub(crate) use cost::{cost_columns, costs};
pub(crate) use equal_load::{EqualLoad, equal_load, equal_load_columns, equal_load_rates};
pub(crate) use open_loop::{open_loop, open_loop_columns};
pub(crate) use resources::{Resources, capacity_columns, resources, resources_columns};
pub(crate) use study::{capacity_plan, study, study_measured};
pub(crate) use throughput::{Throughput, capacity, throughput, throughput_columns};
pub(crate) use warm::{warm, warm_columns};

/// A ratio to native as shown: `0.652 [0.611–0.690] n=3`, `1 (baseline)` in native's own row,
/// `–` without one.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Ratio {
    pub text: String,
    /// The interval excludes 1.
    pub significant: bool,
}

impl Ratio {
    /// `variant`'s ratio, or `1 (baseline)` when it is the baseline.
    pub(crate) fn of(variant: &str, e: Option<&Estimate>) -> Self {
        if variant == BASELINE {
            Self {
                text: "1 (baseline)".into(),
                significant: false,
            }
        } else {
            Self::plain(e)
        }
    }

    /// The ratio alone.
    pub(crate) fn plain(e: Option<&Estimate>) -> Self {
        Self {
            text: SERVER_RATIO.estimate(e),
            significant: matches!(e, Some(r) if r.value.is_finite() && r.excludes(1.0)),
        }
    }

    /// Words in place of a ratio (why there is none).
    fn words(text: String) -> Self {
        Self {
            text,
            significant: false,
        }
    }
}

/// A figure that holds only where a condition did (a capacity: where the servers set the pace),
/// as its cells show it: the figure, flagged with the runs it leaves out; or in its place why
/// there is none, in full and in short (the narrow terminal's).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Conditional {
    pub ratio: Ratio,
    pub short: String,
    pub flags: Vec<Flag>,
}

impl Conditional {
    /// `e` where there is one, the notes as flags; else `none: ` and the notes.
    fn of(e: Option<&Estimate>, notes: &[PaceNote], row_variant: &str) -> Self {
        match e.filter(|e| e.value.is_finite()) {
            Some(e) => Self {
                ratio: Ratio::plain(Some(e)),
                short: SERVER_RATIO.estimate(Some(e)),
                flags: notes.iter().map(|n| pace_flag(n, row_variant)).collect(),
            },
            None if notes.is_empty() => Self::words("–".into(), "–".into()),
            None => Self::words(
                format!("none: {}", describe(notes).unwrap_or_default()),
                short_why(notes, row_variant),
            ),
        }
    }

    fn words(text: String, short: String) -> Self {
        Self {
            ratio: Ratio::words(text),
            short,
            flags: Vec::new(),
        }
    }

    /// Not observable: a remote target's processes.
    fn not_observable() -> Self {
        Self::words(NOT_OBSERVABLE.into(), NOT_OBSERVABLE.into())
    }

    /// The cell in full: the ratio (bold where significant), flagged.
    fn value(&self) -> Value {
        Value {
            flags: self.flags.clone(),
            ..ratio(&self.ratio)
        }
    }
}

/// `native: ⚠ generator-limited in 1/3 runs` (no `whose` on the row's own runs).
fn pace_flag(n: &PaceNote, row_variant: &str) -> Flag {
    Flag {
        whose: (n.variant != row_variant).then(|| n.variant.clone()),
        what: n.pace.as_str().into(),
        count: n.runs,
        runs: n.of,
    }
}

/// Why there is no figure, in a few words (the narrow terminal's; the full reason is in the wide
/// one and the files): what set the row's own pace (`none: latency-bound`), else native's
/// (`none: native generator-limited`).
fn short_why(notes: &[PaceNote], row_variant: &str) -> String {
    let paces = |own: bool| {
        let mut paces: Vec<&str> = notes
            .iter()
            .filter(|n| (n.variant == row_variant) == own)
            .map(|n| n.pace.as_str())
            .collect();
        paces.sort_unstable();
        paces.dedup();
        paces.join(", ")
    };
    match paces(true) {
        own if own.is_empty() => format!("none: {BASELINE} {}", paces(false)),
        own if row_variant == BASELINE => format!("none: {BASELINE} {own}"),
        own => format!("none: {own}"),
    }
}

/// A cell whose load generator saturated in some of its runs.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Saturation {
    /// Whose cell it is, when not the row's own (native's, under a variant's ratio).
    pub whose: Option<&'static str>,
    pub saturated: usize,
    pub runs: usize,
}

impl Saturation {
    pub(crate) fn of(c: &ThroughputCell, whose: Option<&'static str>) -> Option<Self> {
        (c.generator_saturated_runs > 0).then_some(Self {
            whose,
            saturated: c.generator_saturated_runs,
            runs: c.runs.len(),
        })
    }

    /// The flag: `⚠ generator saturated in k/n runs`, after `whose: ` when another cell's.
    pub(crate) fn flag(&self) -> Flag {
        Flag {
            whose: self.whose.map(str::to_owned),
            what: "generator saturated".into(),
            count: self.saturated,
            runs: self.runs,
        }
    }
}

/// A ratio's cell: bold in report.html when its interval excludes 1.
fn ratio(r: &Ratio) -> Value {
    match r.significant {
        true => Value::marked(r.text.clone(), Mark::Significant),
        false => r.text.as_str().into(),
    }
}

/// The head of a capacity ratio's column.
pub(crate) const CAPACITY_HEAD: &str = "capacity × native [95% CI] n";

/// What a figure that needs a variant's processes shows for a remote target.
pub(crate) const NOT_OBSERVABLE: &str = "not observable";

/// The measured remote targets and what of them is not observable, or None.
pub(crate) fn not_observable(a: &ServerAnalysis) -> Option<String> {
    let names = a.not_observable();
    (!names.is_empty()).then(|| {
        format!(
            "{}: CPU, memory, capacity and cold start {NOT_OBSERVABLE} (a remote target: the lab starts none of its processes and sees none)",
            names.join(", ")
        )
    })
}

/// The sentence marking the compute cells whose SHA-256 is a library's, or None.
pub(crate) fn other_compute_code(a: &ServerAnalysis) -> Option<String> {
    let others = a.other_compute_code();
    (!others.is_empty()).then(|| {
        let list: Vec<String> = others
            .iter()
            .map(|(v, code)| format!("{v} ({code})"))
            .collect();
        format!(
            "compute is not the same code everywhere: {} hash with a crypto library, where the Rust builds run portable SHA-256; their compute cells measure that library as much as the runtime",
            list.join(", ")
        )
    })
}

/// How a variant fared.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Outcome {
    pub name: String,
    pub status: Status,
    pub reason: Option<String>,
    /// `3/5 passed`, or `–` without checks.
    pub checks: String,
    /// The checks that failed, with what came back.
    pub failed_checks: String,
}

impl Outcome {
    /// The reason, or that none was recorded.
    pub(crate) fn why(&self) -> &str {
        self.reason.as_deref().unwrap_or("no reason recorded")
    }
}

pub(crate) fn outcomes(a: &ServerAnalysis) -> Vec<Outcome> {
    a.info
        .variants
        .iter()
        .map(|v| {
            let passed = v.checks.iter().filter(|c| c.ok).count();
            let failed: Vec<String> = v
                .checks
                .iter()
                .filter(|c| !c.ok)
                .map(|c| format!("{}: {}", c.what, c.detail))
                .collect();
            Outcome {
                name: v.name.clone(),
                status: v.status,
                reason: v.reason.clone(),
                checks: if v.checks.is_empty() {
                    "–".into()
                } else {
                    format!("{passed}/{} passed", v.checks.len())
                },
                failed_checks: failed.join("; "),
            }
        })
        .collect()
}

/// The share of its CPUs a variant kept busy: `98%`; not observable for a remote target.
fn busy(a: &ServerAnalysis, variant: &str, utilization: Option<f64>) -> String {
    match (a.observable(variant), utilization) {
        (false, _) => NOT_OBSERVABLE.into(),
        (true, Some(u)) => percent(u),
        (true, None) => "–".into(),
    }
}

/// Concurrency levels measured, ascending.
pub(crate) fn connection_levels(a: &ServerAnalysis) -> Vec<usize> {
    let mut v: Vec<usize> = a.throughput.iter().map(|c| c.connections).collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmlab_model::sample::Pace;

    fn note(variant: &str, pace: Pace) -> PaceNote {
        PaceNote {
            variant: variant.into(),
            pace,
            runs: 3,
            of: 3,
        }
    }

    #[test]
    fn the_short_why_says_the_rows_own_pace_else_natives_within_a_narrow_column() {
        let both = [
            note("sleepy", Pace::Latency),
            note(BASELINE, Pace::Generator),
        ];
        let natives = [note(BASELINE, Pace::Upstream)];
        let cases = [
            (&both[..], "sleepy", "none: latency-bound"),
            (&natives[..], "sleepy", "none: native upstream-limited"),
            (&natives[..], BASELINE, "none: native upstream-limited"),
            (&both[1..], BASELINE, "none: native generator-limited"),
        ];
        for (notes, row, want) in cases {
            let short = short_why(notes, row);
            assert_eq!(short, want);
            assert!(short.chars().count() <= 30, "{short}");
        }
    }
}
