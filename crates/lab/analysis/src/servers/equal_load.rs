//! The equal-load cells of a server run: every variant offered the same rates (open loop), so
//! that what a request costs each is set against what it costs native at the same load: each
//! (variant, workload, rate) over its repetitions, its CPU per response with its ratio to
//! native's, its latency, sends and errors.

use serde::Serialize;
use wasmlab_model::sample::{Kind, Sample};

use super::{BASELINE, OpenLoopRuns, grouped, utilization};
use crate::stats::{self, Estimate, mean_ci, paired_ratio};

/// One variant on one workload at one offered rate, over its repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct EqualLoadPoint {
    pub variant: String,
    pub workload: String,
    /// The offered rate, req/s.
    pub rate: f64,
    pub n: usize,
    pub connections: usize,
    /// (repetition, CPU µs per response of the variant's processes) of each run that kept up
    /// with the rate; empty for a remote target.
    pub cpu_runs: Vec<(u32, f64)>,
    /// Their mean with its 95% interval (n = 0: none).
    pub cpu_us: Estimate,
    /// CPU per response over native's at the same rate, paired by repetition over the runs in
    /// which both kept up.
    pub cost_ratio: Option<Estimate>,
    /// Why there is no ratio (or why it leaves runs out).
    pub ratio_note: Option<String>,
    /// Mean share of its CPUs the variant kept busy.
    pub utilization: Option<f64>,
    /// Mean responses per second over the runs.
    pub achieved_rps: f64,
    /// Latency, sends and errors of all runs together.
    #[serde(flatten)]
    pub runs: OpenLoopRuns,
    /// Runs that fell short of the rate (dropped sends, fewer answers): the variant's capacity is
    /// below it, and its figures are not at this load.
    pub over_capacity_runs: usize,
}

/// One point per (variant, workload, rate), with its cost ratio to native's at the same rate;
/// `server_cpus` as for [`super::throughput`].
pub(super) fn equal_load(
    variants: &[String],
    workloads: &[String],
    samples: &[&Sample],
    server_cpus: usize,
) -> Vec<EqualLoadPoint> {
    let groups = grouped(samples, Kind::EqualLoad, variants, workloads, |s| {
        (s.rate.unwrap_or(0.0) * 1e3).round() as u64
    });
    let mut points: Vec<EqualLoadPoint> = groups
        .iter()
        .map(|(&(v, w, rate), ss)| {
            point(
                &variants[v],
                &workloads[w],
                rate as f64 / 1e3,
                ss,
                server_cpus,
            )
        })
        .collect();
    let natives: Vec<EqualLoadPoint> = points
        .iter()
        .filter(|p| p.variant == BASELINE)
        .cloned()
        .collect();
    for p in points.iter_mut().filter(|p| p.variant != BASELINE) {
        let base = natives
            .iter()
            .find(|n| n.workload == p.workload && n.rate == p.rate);
        if let Some(b) = base {
            p.cost_ratio = paired_ratio(&p.cpu_runs, &b.cpu_runs);
        }
        p.ratio_note = ratio_note(p, base);
    }
    points
}

/// Why `p`'s ratio to `native`'s leaves runs out or is missing.
fn ratio_note(p: &EqualLoadPoint, native: Option<&EqualLoadPoint>) -> Option<String> {
    let over = |q: &EqualLoadPoint, who: &str| {
        (q.over_capacity_runs > 0).then(|| {
            format!(
                "{who} over capacity in {}/{} runs",
                q.over_capacity_runs, q.n
            )
        })
    };
    let mut why: Vec<String> = over(p, &p.variant).into_iter().collect();
    match native {
        Some(n) => why.extend(over(n, BASELINE)),
        None => why.push(format!("{BASELINE} not measured at this rate")),
    }
    (!why.is_empty()).then(|| why.join("; "))
}

fn point(
    variant: &str,
    workload: &str,
    rate: f64,
    ss: &[&Sample],
    server_cpus: usize,
) -> EqualLoadPoint {
    let cpu_runs: Vec<(u32, f64)> = ss
        .iter()
        .filter(|s| !s.over_capacity())
        .filter_map(|s| Some((s.repetition, s.cpu_us_per_response()?)))
        .collect();
    let rps: Vec<f64> = ss
        .iter()
        .filter_map(|s| Some(s.load.as_ref()?.rps))
        .collect();
    EqualLoadPoint {
        variant: variant.to_owned(),
        workload: workload.to_owned(),
        rate,
        n: ss.len(),
        connections: ss[0].connections.unwrap_or(0),
        cpu_us: mean_ci(&cpu_runs.iter().map(|r| r.1).collect::<Vec<_>>()),
        cpu_runs,
        cost_ratio: None,
        ratio_note: None,
        utilization: utilization(ss, server_cpus),
        achieved_rps: stats::mean(&rps).unwrap_or(0.0),
        runs: OpenLoopRuns::of(ss),
        over_capacity_runs: ss.iter().filter(|s| s.over_capacity()).count(),
    }
}
