//! Open-loop latency: requests sent at a fixed rate (a fraction of the variant's capacity),
//! latency from each request's intended send, per (variant, workload, offered load).

use serde::Serialize;
use wasmlab_load_data::{ErrorCounts, LatencyMs};
use wasmlab_model::sample::{Kind, Sample};

use super::{errors, grouped, merged, utilization};
use crate::stats;

/// Open-loop latency of one (variant, workload) at one offered load.
#[derive(Debug, Clone, Serialize)]
pub struct OpenLoopPoint {
    pub variant: String,
    pub workload: String,
    /// Fraction of the variant's own closed-loop maximum.
    pub fraction: f64,
    pub n: usize,
    pub connections: usize,
    /// Mean offered (target) rate, req/s.
    pub offered_rps: f64,
    /// Mean achieved send rate, req/s.
    pub achieved_rps: f64,
    /// Latency, sends and errors of all runs together.
    #[serde(flatten)]
    pub runs: OpenLoopRuns,
    /// Mean share of its CPUs the variant kept busy.
    pub utilization: Option<f64>,
}

/// What the runs of an open-loop cell saw together.
#[derive(Debug, Clone, Serialize)]
pub struct OpenLoopRuns {
    /// From the intended send time (corrected), all runs merged.
    pub corrected: LatencyMs,
    /// From the actual send time (uncorrected), all runs merged.
    pub uncorrected: LatencyMs,
    pub intended: u64,
    pub sent: u64,
    pub dropped: u64,
    pub late: u64,
    pub errors: ErrorCounts,
}

impl OpenLoopRuns {
    pub(super) fn of(ss: &[&Sample]) -> Self {
        let ol: Vec<wasmlab_load_data::OpenLoop> = ss
            .iter()
            .filter_map(|s| s.load.as_ref()?.open_loop)
            .collect();
        let sum = |f: fn(&wasmlab_load_data::OpenLoop) -> u64| ol.iter().map(f).sum();
        Self {
            corrected: LatencyMs::from_histogram(&merged(ss, false)),
            uncorrected: LatencyMs::from_histogram(&merged(ss, true)),
            intended: sum(|o| o.intended),
            sent: sum(|o| o.sent),
            dropped: sum(|o| o.dropped),
            late: sum(|o| o.late),
            errors: errors(ss),
        }
    }
}

/// One point per (variant, workload, offered load).
pub(super) fn open_loop(
    variants: &[String],
    workloads: &[String],
    samples: &[&Sample],
    server_cpus: usize,
) -> Vec<OpenLoopPoint> {
    grouped(samples, Kind::OpenLoop, variants, workloads, |s| {
        (s.load_fraction.unwrap_or(0.0) * 1e6).round() as u64
    })
    .iter()
    .map(|(&(v, w, f), ss)| {
        let ol: Vec<_> = ss
            .iter()
            .filter_map(|s| s.load.as_ref()?.open_loop)
            .collect();
        let mean_of = |f: fn(&wasmlab_load_data::OpenLoop) -> f64| {
            stats::mean(&ol.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0)
        };
        OpenLoopPoint {
            variant: variants[v].clone(),
            workload: workloads[w].clone(),
            fraction: f as f64 / 1e6,
            n: ss.len(),
            connections: ss[0].connections.unwrap_or(0),
            offered_rps: mean_of(|o| o.target_rate),
            achieved_rps: mean_of(|o| o.achieved_rate),
            runs: OpenLoopRuns::of(ss),
            utilization: utilization(ss, server_cpus),
        }
    })
    .collect()
}
