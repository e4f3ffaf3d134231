//! The closed-loop cells of a server run: each (variant, workload, connections) over its
//! repetitions, its throughput and capacity with their ratios to native's cell, its latency,
//! errors and resources.

use std::collections::BTreeMap;

use serde::Serialize;
use wasmlab_load::{ErrorCounts, LatencyMs};
use wasmlab_model::sample::{Kind, Resources, Sample};

use super::{BASELINE, merged, of_kind};
use crate::stats::{self, Estimate, mean_ci, paired_ratio};

/// Throughput of one (variant, workload, connections) cell over its repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct ThroughputCell {
    pub variant: String,
    pub workload: String,
    pub connections: usize,
    /// (repetition, req/s) of each run.
    pub runs: Vec<(u32, f64)>,
    /// Mean req/s over runs, bootstrap 95% CI; `n` runs.
    pub rps: Estimate,
    /// Mean req/s over the baseline's mean in the same cell, paired by repetition.
    pub ratio_to_native: Option<Estimate>,
    /// (repetition, responses per CPU-second of the variant's process tree) of each run that
    /// sampled its resources.
    #[serde(default)]
    pub capacity_runs: Vec<(u32, f64)>,
    /// The headline ratio: mean responses per CPU-second over the baseline's in the same cell,
    /// paired by repetition. Unlike the throughput ratio it measures the server's cost even when
    /// the load generator, not the server, set the pace (see docs/method.md).
    #[serde(default)]
    pub capacity_ratio: Option<Estimate>,
    /// Latency of all runs' responses together (histograms merged).
    pub latency: LatencyMs,
    pub responses: u64,
    pub errors: ErrorCounts,
    /// Runs in which the load generator was saturated (the server may be faster than shown).
    pub generator_saturated_runs: usize,
    /// Mean share of the generator's threads' time on a CPU.
    pub generator_busy: f64,
    /// Resources of the variant's process tree (None when not sampled).
    pub resources: Option<CellResources>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct CellResources {
    /// Highest RSS of the process tree over the runs, KiB.
    pub rss_peak_kib: u64,
    /// Mean RSS over the runs, KiB.
    pub rss_mean_kib: f64,
    /// Mean CPU seconds of the process tree per run.
    pub cpu_secs: f64,
    /// CPU seconds per 1,000 responses (mean over runs, CI).
    pub cpu_secs_per_1k: Estimate,
    /// Responses per CPU-second of the server: the req/s one core sustains (the wasmCloud
    /// study's sizing rule), mean over runs, CI.
    pub rps_per_core: Estimate,
}

/// One cell per (variant, workload, connections), each with its ratios to native's cell.
pub(super) fn throughput(
    variants: &[String],
    workloads: &[String],
    samples: &[&Sample],
) -> Vec<ThroughputCell> {
    let mut groups: BTreeMap<(usize, usize, usize), Vec<&Sample>> = BTreeMap::new();
    for s in of_kind(samples, Kind::Throughput) {
        let v = variants.iter().position(|x| *x == s.variant).unwrap_or(0);
        let w = workloads
            .iter()
            .position(|x| Some(x) == s.workload.as_ref())
            .unwrap_or(0);
        groups
            .entry((v, w, s.connections.unwrap_or(0)))
            .or_default()
            .push(s);
    }
    let mut cells: Vec<ThroughputCell> = groups
        .iter()
        .map(|(&(v, w, c), ss)| throughput_cell(&variants[v], &workloads[w], c, ss))
        .collect();
    let natives: Vec<ThroughputCell> = cells
        .iter()
        .filter(|c| c.variant == BASELINE)
        .cloned()
        .collect();
    for cell in &mut cells {
        if let Some(base) = natives
            .iter()
            .find(|n| n.workload == cell.workload && n.connections == cell.connections)
        {
            cell.ratio_to_native = paired_ratio(&cell.runs, &base.runs);
            cell.capacity_ratio = paired_ratio(&cell.capacity_runs, &base.capacity_runs);
        }
    }
    cells
}

fn throughput_cell(variant: &str, workload: &str, conns: usize, ss: &[&Sample]) -> ThroughputCell {
    let runs: Vec<(u32, f64)> = ss
        .iter()
        .map(|s| (s.repetition, s.load.as_ref().map_or(0.0, |l| l.rps)))
        .collect();
    let mut errors = ErrorCounts::default();
    let mut responses = 0;
    let mut saturated = 0;
    let mut busy = 0.0;
    for s in ss {
        let l = s
            .load
            .as_ref()
            .expect("throughput samples carry a load report");
        errors.add(&l.errors);
        responses += l.responses;
        saturated += usize::from(l.generator_saturated);
        busy += l.generator_busy;
    }
    let with_res: Vec<(&Resources, u64, f64)> = ss
        .iter()
        .filter_map(|s| {
            let l = s.load.as_ref()?;
            Some((s.resources.as_ref()?, l.responses, l.elapsed_secs))
        })
        .collect();
    let resources = (!with_res.is_empty()).then(|| {
        let per_1k: Vec<f64> = with_res
            .iter()
            .filter(|(_, n, _)| *n > 0)
            .map(|(r, n, _)| r.cpu_secs / *n as f64 * 1000.0)
            .collect();
        let per_core: Vec<f64> = ss.iter().filter_map(|s| s.capacity()).collect();
        CellResources {
            rss_peak_kib: with_res.iter().map(|r| r.0.rss_peak_kib).max().unwrap_or(0),
            rss_mean_kib: stats::mean(
                &with_res
                    .iter()
                    .map(|r| r.0.rss_mean_kib)
                    .collect::<Vec<_>>(),
            )
            .unwrap_or(0.0),
            cpu_secs: stats::mean(&with_res.iter().map(|r| r.0.cpu_secs).collect::<Vec<_>>())
                .unwrap_or(0.0),
            cpu_secs_per_1k: mean_ci(&per_1k),
            rps_per_core: mean_ci(&per_core),
        }
    });
    let capacity_runs: Vec<(u32, f64)> = ss
        .iter()
        .filter_map(|s| Some((s.repetition, s.capacity()?)))
        .collect();
    ThroughputCell {
        variant: variant.to_owned(),
        workload: workload.to_owned(),
        connections: conns,
        rps: mean_ci(&runs.iter().map(|r| r.1).collect::<Vec<_>>()),
        runs,
        ratio_to_native: None,
        capacity_runs,
        capacity_ratio: None,
        latency: LatencyMs::from_histogram(&merged(ss, false)),
        responses,
        errors,
        generator_saturated_runs: saturated,
        generator_busy: busy / ss.len().max(1) as f64,
        resources,
    }
}
