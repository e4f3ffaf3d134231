//! What a study's figures beside a run's are: the rows the analyses hold and every output shows.
//! [`crate::study`] computes them from the analyses; the analyses only hold them, so neither
//! module needs the other's code.

use serde::Serialize;
use wasmlab_model::study::FigureKind;

use crate::stats::Estimate;

/// One figure, the study's and ours, per variant.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// What was measured (its unit follows: ms for latencies).
    pub figure: FigureKind,
    /// e.g. "hello, req/s at 100 connections".
    pub title: String,
    /// Where ours was measured, when it is not the study's cell (e.g. "at 50 connections").
    pub ours_at: Option<String>,
    pub higher_is_better: bool,
    /// The variant the study's baseline stands for here.
    pub baseline: String,
    pub rows: Vec<ComparedRow>,
}

impl Comparison {
    /// Whether ours is also set against `native` (the study's baseline is another server).
    pub fn shows_native_ratio(&self) -> bool {
        self.baseline != "native"
    }

    /// Whether the rows carry capacity (a throughput figure whose run sampled the servers' CPU).
    pub fn shows_capacity(&self) -> bool {
        self.rows
            .iter()
            .any(|r| r.capacity.is_some() || r.capacity_note.is_some())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ComparedRow {
    pub variant: String,
    pub study: Option<f64>,
    pub ours: Option<f64>,
    /// Ours with its 95% interval over the runs, where the figure has one (req/s, warm p50).
    pub ours_estimate: Option<Estimate>,
    /// Each against its own baseline server (see [`crate::study::baseline_of`]).
    pub study_ratio: Option<f64>,
    pub ours_ratio: Option<f64>,
    /// Ours over `native`'s, when the study's baseline is another server.
    pub ours_to_native: Option<f64>,
    /// A throughput figure's capacity here: mean responses per CPU-second of the server's
    /// process tree over the runs in which it was saturated.
    pub capacity: Option<f64>,
    /// The capacity with its 95% interval over the runs in which the server was saturated.
    pub capacity_estimate: Option<Estimate>,
    /// Why there is no capacity: what set the pace of the cell instead.
    #[serde(default)]
    pub capacity_note: Option<String>,
    /// Capacity over the baseline's, and over `native`'s (when that is not the baseline).
    pub capacity_ratio: Option<f64>,
    pub capacity_to_native: Option<f64>,
    /// Whether the study's ratio holds here (see [`crate::study::verdict`]); None without both ratios.
    pub verdict: Option<String>,
}

/// A study's sizing rule beside this run: the study's req/s per core (its req/s per node over the
/// node's cores) and the cores a target load would need, then the same for every variant this
/// run measured in the rule's cell (its resp/CPU-s: what one core of the server sustains).
#[derive(Debug, Clone, Serialize)]
pub struct CapacityPlanning {
    /// The rule in the study's words.
    pub rule: String,
    pub target_rps: f64,
    /// e.g. "hello at 150 connections".
    pub cell: String,
    /// Where ours was measured, when it is not the study's cell.
    pub ours_at: Option<String>,
    pub published: Vec<PublishedRow>,
    pub ours: Vec<CapacityRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PublishedRow {
    pub system: String,
    /// req/s per node, and the node's cores (fewest, most).
    pub rps: f64,
    pub cores: (u32, u32),
    /// req/s per core (fewest, most): from the node's most cores and its fewest.
    pub per_core: (f64, f64),
    /// Cores the target needs (fewest, most).
    pub cores_for_target: (f64, f64),
}

#[derive(Debug, Clone, Serialize)]
pub struct CapacityRow {
    pub variant: String,
    /// Mean responses per CPU-second of the server over the runs in which it was saturated,
    /// bootstrap CI; None where it was saturated in none.
    pub per_core: Option<Estimate>,
    /// The target over it, with the interval the CI gives (None without one).
    pub cores_for_target: Option<f64>,
    pub cores_interval: Option<(f64, f64)>,
    /// Why there is no capacity, or why it leaves runs out: what set the pace instead.
    pub note: Option<String>,
}

/// A program study's runtime beside the engine of ours that stands for it.
#[derive(Debug, Clone, Serialize)]
pub struct ProgramComparison {
    /// The study's name for the runtime.
    pub study: String,
    /// Its published median ratio to native.
    pub published: f64,
    /// The engine of ours that stands for it, if any.
    pub engine: Option<String>,
    /// Our median ratio over programs, whole process and body only; None when not measured.
    pub median: Option<Estimate>,
    pub body_median: Option<Estimate>,
}
