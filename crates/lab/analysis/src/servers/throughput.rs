//! The closed-loop cells of a server run: each (variant, workload, connections) over its
//! repetitions, its throughput with its ratio to native's cell, what set each run's pace, its
//! capacity (responses per CPU-second) where the server was saturated with its ratio to native's,
//! its latency, errors and resources.

use std::collections::BTreeMap;

use serde::Serialize;
use wasmlab_load_data::{ErrorCounts, LatencyMs};
use wasmlab_model::sample::{Kind, Pace, Resources, Sample};

use super::{BASELINE, errors, grouped, merged, utilization};
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
    /// (repetition, what set its pace) of each run whose processes were read; empty for a remote
    /// target.
    #[serde(default)]
    pub paces: Vec<(u32, Pace)>,
    /// Mean share of its CPUs the variant kept busy over those runs.
    #[serde(default)]
    pub utilization: Option<f64>,
    /// (repetition, responses per CPU-second of the variant's processes) of each run whose
    /// server was saturated: its capacity.
    #[serde(default)]
    pub capacity_runs: Vec<(u32, f64)>,
    /// Mean capacity over the baseline's in the same cell, paired by repetition over the runs in
    /// which both servers were saturated (see docs/method.md): None where there were none.
    #[serde(default)]
    pub capacity_ratio: Option<Estimate>,
    /// Why the capacity ratio leaves runs out, or why there is none: the runs of either side
    /// whose server did not set the pace, and what did.
    #[serde(default)]
    pub capacity_notes: Vec<PaceNote>,
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

/// Runs of a cell whose server did not set the pace, and what did instead.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaceNote {
    pub variant: String,
    pub pace: Pace,
    pub runs: usize,
    /// The runs read in all.
    pub of: usize,
}

impl std::fmt::Display for PaceNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} in {}/{} runs",
            self.variant, self.pace, self.runs, self.of
        )
    }
}

/// Notes in words, `; ` between them; None without any.
pub fn describe(notes: &[PaceNote]) -> Option<String> {
    (!notes.is_empty()).then(|| {
        notes
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })
}

impl ThroughputCell {
    /// Runs in which the server set the pace.
    pub fn saturated_runs(&self) -> usize {
        self.paces
            .iter()
            .filter(|(_, p)| *p == Pace::Server)
            .count()
    }

    /// What set the pace of the runs the server did not (none when it did in every run read,
    /// or none was read).
    pub fn unsaturated(&self) -> Vec<PaceNote> {
        let mut by: BTreeMap<Pace, usize> = BTreeMap::new();
        for (_, p) in self.paces.iter().filter(|(_, p)| *p != Pace::Server) {
            *by.entry(*p).or_default() += 1;
        }
        by.into_iter()
            .map(|(pace, runs)| PaceNote {
                variant: self.variant.clone(),
                pace,
                runs,
                of: self.paces.len(),
            })
            .collect()
    }
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
    /// Responses per CPU-second of the server over the runs in which it was saturated: the
    /// req/s one core sustains (the wasmCloud study's sizing rule), mean, CI; n = 0 where it
    /// was saturated in none.
    pub rps_per_core: Estimate,
}

/// One cell per (variant, workload, connections), each with its ratios to native's cell;
/// `server_cpus` is what a variant may use where its samples do not say (older results).
pub(super) fn throughput(
    variants: &[String],
    workloads: &[String],
    samples: &[&Sample],
    server_cpus: usize,
) -> Vec<ThroughputCell> {
    let groups = grouped(samples, Kind::Throughput, variants, workloads, |s| {
        s.connections.unwrap_or(0)
    });
    let mut cells: Vec<ThroughputCell> = groups
        .iter()
        .map(|(&(v, w, c), ss)| throughput_cell(&variants[v], &workloads[w], c, ss, server_cpus))
        .collect();
    let natives: Vec<ThroughputCell> = cells
        .iter()
        .filter(|c| c.variant == BASELINE)
        .cloned()
        .collect();
    for cell in &mut cells {
        let base = natives
            .iter()
            .find(|n| n.workload == cell.workload && n.connections == cell.connections);
        if let Some(base) = base {
            cell.ratio_to_native = paired_ratio(&cell.runs, &base.runs);
        }
        if cell.variant != BASELINE {
            cell.capacity_ratio =
                base.and_then(|b| paired_ratio(&cell.capacity_runs, &b.capacity_runs));
        }
        let mut notes = cell.unsaturated();
        if cell.variant != BASELINE && !cell.paces.is_empty() {
            notes.extend(base.map(ThroughputCell::unsaturated).unwrap_or_default());
        }
        cell.capacity_notes = notes;
    }
    cells
}

fn throughput_cell(
    variant: &str,
    workload: &str,
    conns: usize,
    ss: &[&Sample],
    server_cpus: usize,
) -> ThroughputCell {
    let runs: Vec<(u32, f64)> = ss
        .iter()
        .map(|s| (s.repetition, s.load.as_ref().map_or(0.0, |l| l.rps)))
        .collect();
    let mut responses = 0;
    let mut saturated = 0;
    let mut busy = 0.0;
    for s in ss {
        let l = s
            .load
            .as_ref()
            .expect("throughput samples carry a load report");
        responses += l.responses;
        saturated += usize::from(l.generator_saturated);
        busy += l.generator_busy;
    }
    let cpus = |s: &Sample| s.cpus_or(server_cpus);
    let paces: Vec<(u32, Pace)> = ss
        .iter()
        .filter_map(|s| Some((s.repetition, s.pace(cpus(s))?)))
        .collect();
    let capacity_runs: Vec<(u32, f64)> = ss
        .iter()
        .filter_map(|s| Some((s.repetition, s.saturated_capacity(cpus(s))?)))
        .collect();
    let with_res: Vec<(&Resources, u64)> = ss
        .iter()
        .filter_map(|s| Some((s.resources.as_ref()?, s.load.as_ref()?.responses)))
        .collect();
    let resources = (!with_res.is_empty()).then(|| {
        let per_1k: Vec<f64> = with_res
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| r.cpu_secs / *n as f64 * 1000.0)
            .collect();
        let values = |f: fn(&Resources) -> f64| with_res.iter().map(|r| f(r.0)).collect::<Vec<_>>();
        CellResources {
            rss_peak_kib: with_res.iter().map(|r| r.0.rss_peak_kib).max().unwrap_or(0),
            rss_mean_kib: stats::mean(&values(|r| r.rss_mean_kib)).unwrap_or(0.0),
            cpu_secs: stats::mean(&values(|r| r.cpu_secs)).unwrap_or(0.0),
            cpu_secs_per_1k: mean_ci(&per_1k),
            rps_per_core: mean_ci(&capacity_runs.iter().map(|r| r.1).collect::<Vec<_>>()),
        }
    });
    ThroughputCell {
        variant: variant.to_owned(),
        workload: workload.to_owned(),
        connections: conns,
        rps: mean_ci(&runs.iter().map(|r| r.1).collect::<Vec<_>>()),
        runs,
        ratio_to_native: None,
        paces,
        utilization: utilization(ss, server_cpus),
        capacity_runs,
        capacity_ratio: None,
        capacity_notes: Vec::new(),
        latency: LatencyMs::from_histogram(&merged(ss, false)),
        responses,
        errors: errors(ss),
        generator_saturated_runs: saturated,
        generator_busy: busy / ss.len().max(1) as f64,
        resources,
    }
}
