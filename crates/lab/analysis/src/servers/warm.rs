//! Warm latency: one connection, sequential requests, per (variant, workload), with its p50's
//! ratio to native's over the repetitions.

use serde::Serialize;
use wasmlab_load_data::{ErrorCounts, LatencyMs};
use wasmlab_model::sample::{Kind, Sample};

use super::{BASELINE, errors, merged, of_kind, utilization};
use crate::stats::{Estimate, mean_ci, paired_ratio};

/// Warm latency (one connection, sequential requests) of one (variant, workload).
#[derive(Debug, Clone, Serialize)]
pub struct WarmRow {
    pub variant: String,
    pub workload: String,
    /// Runs.
    pub n: usize,
    pub requests: u64,
    /// Over all runs' requests together.
    pub latency: LatencyMs,
    /// Mean over runs of each run's p50, ms, CI.
    pub p50: Estimate,
    /// Mean of run p50s over the baseline's, paired by repetition.
    pub ratio_to_native: Option<Estimate>,
    pub errors: ErrorCounts,
    /// Mean share of its CPUs the variant kept busy.
    pub utilization: Option<f64>,
}

/// Warm latency per (variant, workload), with its p50's ratio to native's.
pub(super) fn warm(
    variants: &[String],
    workloads: &[String],
    samples: &[&Sample],
    server_cpus: usize,
) -> Vec<WarmRow> {
    let mut rows: Vec<WarmRow> = Vec::new();
    for v in variants {
        for w in workloads {
            let ss: Vec<&Sample> = of_kind(samples, Kind::Warm)
                .filter(|s| &s.variant == v && s.workload.as_ref() == Some(w))
                .collect();
            if ss.is_empty() {
                continue;
            }
            let runs: Vec<(u32, f64)> = ss
                .iter()
                .map(|s| {
                    (
                        s.repetition,
                        s.load.as_ref().map_or(0.0, |l| l.latency_ms.p50),
                    )
                })
                .collect();
            rows.push(WarmRow {
                variant: v.clone(),
                workload: w.clone(),
                n: ss.len(),
                requests: ss
                    .iter()
                    .map(|s| s.load.as_ref().map_or(0, |l| l.responses))
                    .sum(),
                latency: LatencyMs::from_histogram(&merged(&ss, false)),
                p50: mean_ci(&runs.iter().map(|r| r.1).collect::<Vec<_>>()),
                ratio_to_native: warm_runs(samples, BASELINE, w)
                    .and_then(|base| paired_ratio(&runs, &base)),
                errors: errors(&ss),
                utilization: utilization(&ss, server_cpus),
            });
        }
    }
    rows
}

fn warm_runs(samples: &[&Sample], variant: &str, workload: &str) -> Option<Vec<(u32, f64)>> {
    let runs: Vec<(u32, f64)> = samples
        .iter()
        .filter(|s| {
            s.kind == Kind::Warm && s.variant == variant && s.workload.as_deref() == Some(workload)
        })
        .filter_map(|s| Some((s.repetition, s.load.as_ref()?.latency_ms.p50)))
        .collect();
    (!runs.is_empty()).then_some(runs)
}
