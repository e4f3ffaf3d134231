//! A server suite's run analysed: each cell's throughput, capacity and latency over its
//! repetitions with every ratio to native, the cost of a request at equal load, cold starts,
//! warm and open-loop latency, and the latency spectra, from the samples of the variants that
//! did not fail.

use std::collections::{BTreeMap, BTreeSet};

use hdrhistogram::Histogram;
use serde::Serialize;
use wasmlab_load_data::{ErrorCounts, histogram_from_buckets, new_histogram};
use wasmlab_model::run::ServerRunInfo;
use wasmlab_model::sample::{Kind, Sample};
use wasmlab_model::study::Study;

mod cold_start;
mod equal_load;
mod open_loop;
mod throughput;
mod warm;
mod yours;

pub use cold_start::{ColdStartRow, Quantiles};
pub use equal_load::EqualLoadPoint;
pub use open_loop::{OpenLoopPoint, OpenLoopRuns};
pub use throughput::{CellResources, PaceNote, ThroughputCell, describe};
pub use warm::WarmRow;
pub use yours::HandlerCost;

use crate::stats::{self, Estimate};

pub use wasmlab_model::variant::BASELINE;

/// What a request of a workload costs a variant, as a multiple of its CPU per request over
/// native's: at equal load, and where both were saturated.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    pub variant: String,
    pub workload: String,
    /// At the highest equal-load rate at which both kept up: (the rate, the ratio).
    pub equal_load: Option<(f64, Estimate)>,
    /// Why there is none at equal load, when the run measured equal load.
    pub equal_load_note: Option<String>,
    /// Native's mean share of its CPUs busy at that rate: the lower, the more its CPU per
    /// request is its wake-ups' and the host's rather than its work's (docs/method.md, "Native
    /// at low load").
    pub native_busy: Option<f64>,
    /// Where both servers were saturated, at the reference level: native's capacity over the
    /// variant's.
    pub saturated: Option<Estimate>,
    /// Why there is none at saturation (what set the pace instead), or why it leaves runs out.
    pub saturated_note: Option<String>,
}

/// How wide the lead's 95% intervals are (every variant's cost × native at equal load and
/// saturated, every workload): how steady the machine was while it measured. A figure's interval
/// is the spread of its own run's repetitions, so when the machine is noisy, figures move from
/// one run to the next by about their intervals' width.
#[derive(Debug, Clone, Serialize)]
pub struct Spread {
    /// The median of the figures' relative half-widths (see [`Estimate::relative_half_width`]).
    pub median: f64,
    /// How many figures with an interval it is over.
    pub figures: usize,
    /// The widest: the figure (variant, workload and footing) and its relative half-width.
    pub widest: (String, f64),
}

/// The median relative half-width of the lead's intervals above which a run is said to have been
/// measured on a noisy machine. Quick runs on the team's 2-core VM (4 repetitions) fell on either
/// side of it, never near: ±2.6–3.9% in quiet periods, ±6.7–10.2% in noisy ones, when figures
/// moved by up to 14% from one run to the next (docs/method.md, "Comparing runs").
pub const NOISY_SPREAD: f64 = 0.05;

impl Spread {
    /// Whether the run's intervals say the machine was noisy (wider than [`NOISY_SPREAD`]).
    pub fn noisy(&self) -> bool {
        self.median > NOISY_SPREAD
    }
}

/// A relative half-width as every output says it: `±4.7%`.
pub fn plus_minus(half_width: f64) -> String {
    format!("±{:.1}%", half_width * 100.0)
}

/// A latency percentile spectrum: (percentile as a fraction, latency ms) points.
#[derive(Debug, Clone, Serialize)]
pub struct Spectrum {
    pub kind: Kind,
    pub variant: String,
    pub workload: String,
    pub connections: usize,
    pub count: u64,
    pub points: Vec<(f64, f64)>,
}

/// Everything derived from a server suite's run.
#[derive(Debug, Clone, Serialize)]
pub struct ServerAnalysis {
    pub info: ServerRunInfo,
    /// Variants in the suite's order (the order tables and legends use).
    pub variants: Vec<String>,
    pub workloads: Vec<String>,
    pub throughput: Vec<ThroughputCell>,
    /// Each (variant, workload, rate) offered the same rate as every other variant.
    pub equal_load: Vec<EqualLoadPoint>,
    pub cold_start: Vec<ColdStartRow>,
    pub warm: Vec<WarmRow>,
    pub open_loop: Vec<OpenLoopPoint>,
    /// Warm spectra, and throughput spectra at `reference_connections`.
    pub spectra: Vec<Spectrum>,
    /// The concurrency level closest to 100 (the gateway study's headline level).
    pub reference_connections: Option<usize>,
    /// The study set beside the run: the suite's `study`, the gateway study by default.
    pub study: Study,
    /// Its figures beside this run's.
    pub beside_study: Vec<crate::beside::Comparison>,
    /// Its sizing rule beside this run's capacity, when it gave one.
    pub capacity_planning: Option<crate::beside::CapacityPlanning>,
    /// What the user's components (`--component`) cost in each host over the host's floor.
    pub yours: Vec<HandlerCost>,
    /// What each variant that adds Wasm to another's path (`adds_to`: Envoy's filters to Envoy
    /// alone) costs over it, at the same rates.
    pub additions: Vec<HandlerCost>,
}

impl ServerAnalysis {
    /// Whether the lab could see `variant`'s processes (not for a remote target).
    pub fn observable(&self, variant: &str) -> bool {
        !self
            .info
            .variant_specs
            .iter()
            .any(|s| s.name == variant && s.is_remote())
    }

    /// The measured variants whose processes the lab could not see (remote targets): their CPU,
    /// memory, capacity and cold start are not observable.
    pub fn not_observable(&self) -> Vec<&str> {
        self.variants
            .iter()
            .filter(|v| !self.observable(v))
            .map(String::as_str)
            .collect()
    }

    /// The measured variants whose `/compute` runs other code than wasmlab's portable SHA-256,
    /// with what it runs (see `VariantSpec::compute_code`), when the run measured `compute`.
    pub fn other_compute_code(&self) -> Vec<(&str, &str)> {
        if !self.workloads.iter().any(|w| w == "compute") {
            return Vec::new();
        }
        self.variants
            .iter()
            .filter_map(|v| {
                let spec = self.info.variant_specs.iter().find(|s| &s.name == v)?;
                Some((v.as_str(), spec.compute_code.as_deref()?))
            })
            .collect()
    }

    pub fn throughput_cell(
        &self,
        variant: &str,
        workload: &str,
        conns: usize,
    ) -> Option<&ThroughputCell> {
        self.throughput
            .iter()
            .find(|c| c.variant == variant && c.workload == workload && c.connections == conns)
    }

    /// The equal-load points of a workload at a rate, in the variants' order.
    pub fn equal_load_at(&self, workload: &str, rate: f64) -> Vec<&EqualLoadPoint> {
        self.equal_load
            .iter()
            .filter(|p| p.workload == workload && p.rate == rate)
            .collect()
    }

    /// The rates a workload was measured at equal load, ascending.
    pub fn equal_load_rates(&self, workload: &str) -> Vec<f64> {
        let mut rates: Vec<f64> = self
            .equal_load
            .iter()
            .filter(|p| p.workload == workload)
            .map(|p| p.rate)
            .collect();
        rates.sort_by(f64::total_cmp);
        rates.dedup();
        rates
    }

    /// What a request of `workload` costs each variant but native, against native: the
    /// headline, in the variants' order; empty without a native baseline.
    pub fn costs(&self, workload: &str) -> Vec<Cost> {
        if !self.variants.iter().any(|v| v == BASELINE) {
            return Vec::new();
        }
        let measured_equal = self.equal_load.iter().any(|p| p.workload == workload);
        self.variants
            .iter()
            .filter(|v| *v != BASELINE)
            .filter_map(|v| {
                let mut points: Vec<&EqualLoadPoint> = self
                    .equal_load
                    .iter()
                    .filter(|p| &p.variant == v && p.workload == workload)
                    .collect();
                points.sort_by(|a, b| a.rate.total_cmp(&b.rate));
                let cell = self
                    .reference_connections
                    .and_then(|c| self.throughput_cell(v, workload, c));
                if points.is_empty() && cell.is_none() {
                    return None;
                }
                let top = points
                    .iter()
                    .rev()
                    .find_map(|p| Some((p.rate, p.cost_ratio?)));
                let equal_load_note = match (top, measured_equal) {
                    (None, true) if !self.observable(v) => Some("not observable".to_owned()),
                    (None, true) => Some(
                        points
                            .iter()
                            .rev()
                            .find_map(|p| p.ratio_note.clone())
                            .unwrap_or_else(|| "not measured".to_owned()),
                    ),
                    _ => None,
                };
                let native_busy = top.and_then(|(rate, _)| {
                    self.equal_load_at(workload, rate)
                        .into_iter()
                        .find(|p| p.variant == BASELINE)?
                        .utilization
                });
                Some(Cost {
                    variant: v.clone(),
                    workload: workload.to_owned(),
                    equal_load: top,
                    equal_load_note,
                    native_busy,
                    saturated: cell.and_then(|c| c.capacity_ratio?.inverse()),
                    saturated_note: match cell {
                        Some(_) if !self.observable(v) => Some("not observable".to_owned()),
                        Some(c) => describe(&c.capacity_notes),
                        None => Some("not measured".to_owned()),
                    },
                })
            })
            .collect()
    }

    /// How wide the lead's intervals are; None when no figure of it has an interval.
    pub fn spread(&self) -> Option<Spread> {
        let mut widths: Vec<(String, f64)> = Vec::new();
        for w in &self.workloads {
            for c in self.costs(w) {
                let footings = [
                    ("at equal load", c.equal_load.map(|(_, e)| e)),
                    ("saturated", c.saturated),
                ];
                for (footing, e) in footings {
                    if let Some(h) = e.as_ref().and_then(Estimate::relative_half_width) {
                        widths.push((format!("{} {w} {footing}", c.variant), h));
                    }
                }
            }
        }
        let widest = widths.iter().max_by(|a, b| a.1.total_cmp(&b.1))?.clone();
        let halves: Vec<f64> = widths.iter().map(|(_, h)| *h).collect();
        Some(Spread {
            median: stats::percentile(&halves, 0.5)?,
            figures: widths.len(),
            widest,
        })
    }

    /// The cell where the variant served the most for a workload (its closed-loop maximum).
    pub fn best_cell(&self, variant: &str, workload: &str) -> Option<&ThroughputCell> {
        self.throughput
            .iter()
            .filter(|c| c.variant == variant && c.workload == workload)
            .max_by(|a, b| a.rps.value.total_cmp(&b.rps.value))
    }
}

/// Latency percentile spectrum points: p = 1 - 10^(-k/10) for k = 0, 1, ... while the histogram
/// holds enough samples to tell that percentile, then the maximum.
pub fn spectrum_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut pts = Vec::new();
    for k in 0..=60 {
        let p = 1.0 - 10f64.powf(-f64::from(k) / 10.0);
        if 1.0 / (1.0 - p) > h.len() as f64 {
            break;
        }
        pts.push((p, h.value_at_quantile(p) as f64 / 1e6));
    }
    pts.push((1.0, h.max() as f64 / 1e6));
    pts
}

pub(super) fn merged(samples: &[&Sample], uncorrected: bool) -> Histogram<u64> {
    let mut h = new_histogram();
    for s in samples {
        let b = if uncorrected {
            &s.uncorrected_histogram
        } else {
            &s.histogram
        };
        h.add(histogram_from_buckets(b)).expect("same bounds");
    }
    h
}

/// A server suite's run's own figures; [`crate::analyse_servers`] adds the study's beside them.
pub fn own_figures(info: &ServerRunInfo, samples: &[Sample]) -> ServerAnalysis {
    let samples = info.tabled(samples);
    let (variants, workloads) = order(info, &samples);
    let cpus = info.cpus.server_count();
    let throughput = throughput::throughput(&variants, &workloads, &samples, cpus);
    let equal_load = equal_load::equal_load(&variants, &workloads, &samples, cpus);
    let cold_start = cold_start::cold_starts(&variants, &samples);
    let warm = warm::warm(&variants, &workloads, &samples, cpus);
    let open_loop = open_loop::open_loop(&variants, &workloads, &samples, cpus);
    let levels: BTreeSet<usize> = throughput.iter().map(|c| c.connections).collect();
    let reference_connections = levels.iter().copied().min_by_key(|c| (c.abs_diff(100), *c));
    let spectra = spectra(&variants, &workloads, &samples, reference_connections);
    let yours = yours::handler_costs(
        info,
        &variants,
        &workloads,
        &equal_load,
        |s| s.floor.as_ref(),
        "wasmlab's component in ",
    );
    let additions = yours::handler_costs(
        info,
        &variants,
        &workloads,
        &equal_load,
        |s| s.adds_to.as_ref(),
        "",
    );
    ServerAnalysis {
        info: info.clone(),
        variants,
        workloads,
        throughput,
        equal_load,
        cold_start,
        warm,
        open_loop,
        spectra,
        reference_connections,
        // Checked when the suite was read; a run.json edited since falls back to the default.
        study: info
            .suite
            .study()
            .or_else(|_| Study::load("gateway-study"))
            .expect("the built-in gateway study loads (tested)"),
        // Filled above the analyses (`crate::analyse_servers`).
        beside_study: Vec::new(),
        capacity_planning: None,
        yours,
        additions,
    }
}

/// The variants and workloads in the order tables and legends use: the suite's lists first
/// (failed variants left out), then anything else the samples hold.
fn order(info: &ServerRunInfo, samples: &[&Sample]) -> (Vec<String>, Vec<String>) {
    let mut variants: Vec<String> = info.suite.variants.clone();
    for v in &info.suite.cold_start_variants() {
        if !variants.contains(v) {
            variants.push(v.clone());
        }
    }
    variants.retain(|v| !info.failed(v));
    let mut workloads: Vec<String> = info.suite.workloads.clone();
    for s in samples {
        if !variants.contains(&s.variant) {
            variants.push(s.variant.clone());
        }
        if let Some(w) = &s.workload
            && !workloads.contains(w)
        {
            workloads.push(w.clone());
        }
    }
    (variants, workloads)
}

/// The samples of `kind` that carry a load report, by (variant, workload, `key`): the variant and
/// workload as their places in the analysis' lists.
pub(super) fn grouped<'a, K: Ord>(
    samples: &'a [&'a Sample],
    kind: Kind,
    variants: &[String],
    workloads: &[String],
    key: impl Fn(&Sample) -> K,
) -> BTreeMap<(usize, usize, K), Vec<&'a Sample>> {
    let mut groups: BTreeMap<(usize, usize, K), Vec<&Sample>> = BTreeMap::new();
    for s in of_kind(samples, kind) {
        let v = variants.iter().position(|x| *x == s.variant).unwrap_or(0);
        let w = workloads
            .iter()
            .position(|x| Some(x) == s.workload.as_ref())
            .unwrap_or(0);
        groups.entry((v, w, key(s))).or_default().push(s);
    }
    groups
}

/// The errors of a group's runs together.
pub(super) fn errors(ss: &[&Sample]) -> ErrorCounts {
    let mut errors = ErrorCounts::default();
    for l in ss.iter().filter_map(|s| s.load.as_ref()) {
        errors.add(&l.errors);
    }
    errors
}

/// The samples of `kind` that carry a load report.
pub(super) fn of_kind<'a>(
    samples: &'a [&'a Sample],
    kind: Kind,
) -> impl Iterator<Item = &'a Sample> {
    samples
        .iter()
        .copied()
        .filter(move |s| s.kind == kind && s.load.is_some())
}

/// The mean share of their CPUs the samples' variant kept busy.
pub(super) fn utilization(ss: &[&Sample], server_cpus: usize) -> Option<f64> {
    let values: Vec<f64> = ss
        .iter()
        .filter_map(|s| s.utilization(s.cpus_or(server_cpus)))
        .collect();
    stats::mean(&values)
}

/// Latency spectra: the warm cells, and the throughput cells at the reference concurrency.
fn spectra(
    variants: &[String],
    workloads: &[String],
    samples: &[&Sample],
    reference_connections: Option<usize>,
) -> Vec<Spectrum> {
    let mut spectra = Vec::new();
    for v in variants {
        for w in workloads {
            for (kind, conns) in [
                (Kind::Warm, None),
                (Kind::Throughput, reference_connections),
            ] {
                if kind == Kind::Throughput && conns.is_none() {
                    continue;
                }
                let ss: Vec<&Sample> = samples
                    .iter()
                    .copied()
                    .filter(|s| {
                        s.kind == kind
                            && &s.variant == v
                            && s.workload.as_ref() == Some(w)
                            && (conns.is_none() || s.connections == conns)
                    })
                    .collect();
                if ss.is_empty() {
                    continue;
                }
                let h = merged(&ss, false);
                spectra.push(Spectrum {
                    kind,
                    variant: v.clone(),
                    workload: w.clone(),
                    connections: ss[0].connections.unwrap_or(1),
                    count: h.len(),
                    points: spectrum_points(&h),
                });
            }
        }
    }
    spectra
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spectrum_stops_where_the_samples_do() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let pts = spectrum_points(&h);
        // 1,000 samples tell percentiles up to 99.9% (1 / (1 - p) <= 1000), then the max.
        let last_p = pts[pts.len() - 2].0;
        assert!((last_p - 0.999).abs() < 1e-9, "{pts:?}");
        assert_eq!(pts.last().unwrap().0, 1.0);
        assert!((pts.last().unwrap().1 - 1.0).abs() < 0.01);
        assert!(pts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    }

    /// A cell of `variant` in repetition `r`: `rps` for a second on one CPU at `busy`, the
    /// generator at `generator`; open loop at `rate` when given.
    fn cell(
        variant: &str,
        r: u32,
        rps: f64,
        busy: f64,
        generator: f64,
        rate: Option<f64>,
    ) -> Sample {
        let load: wasmlab_load_data::LoadReport = serde_json::from_value(serde_json::json!({
            "url": "http://127.0.0.1/", "method": "GET", "connections": 50, "threads": 1,
            "responses": rps as u64, "ok": rps as u64,
            "errors": {"connect": 0, "read_write": 0, "timeout": 0, "non_2xx": 0},
            "elapsed_secs": 1.0, "rps": rps,
            "latency_ms": {"mean": 0.1, "p50": 0.1, "p90": 0.1, "p99": 0.1, "p99_9": 0.1, "max": 0.1},
            "generator_busy": generator, "generator_saturated": generator >= 0.9 && rate.is_none(),
            "body_bytes": 0, "status_counts": {}, "first_error": null,
            "open_loop": rate.map(|t| serde_json::json!({
                "target_rate": t, "intended": t as u64, "sent": t as u64, "dropped": 0, "late": 0,
                "achieved_rate": t, "send_lag_ms": {"mean": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0, "p99_9": 0.0, "max": 0.0},
                "uncorrected_ms": {"mean": 0.1, "p50": 0.1, "p90": 0.1, "p99": 0.1, "p99_9": 0.1, "max": 0.1}
            })),
        }))
        .unwrap();
        let kind = if rate.is_some() {
            Kind::EqualLoad
        } else {
            Kind::Throughput
        };
        let mut s = Sample::new(kind, variant, r).with_load(load);
        s.workload = Some("hello".into());
        s.rate = rate;
        s.resources = Some(wasmlab_model::sample::Resources {
            cpu_secs: busy,
            wall_secs: 1.0,
            cpus: 1,
            utilization: Some(busy),
            ..Default::default()
        });
        s
    }

    /// A complete run of native and x on hello at 50 connections.
    fn run_info() -> ServerRunInfo {
        let suite = wasmlab_model::suite::ServerSuite::parse(
            "name = \"t\"\nvariants = [\"native\", \"x\"]\nworkloads = [\"hello\"]\nconnections = [50]\nduration_secs = 1.0\n",
        )
        .unwrap();
        serde_json::from_value(serde_json::json!({
            "run_id": "r", "command": [], "started_utc": "", "finished_utc": null,
            "state": "complete", "git_sha": null, "seed": 1,
            "machine": {
                "cpu_model": "", "cores": 2, "memory_kib": null, "kernel": "",
                "cpu_sha_extensions": false, "compute_sha256": "",
                "tools": {"wasmlab": "", "rustc": null, "wasmtime": null, "hyper": null, "tokio": null}
            },
            "core_guest": null, "suite": serde_json::to_value(&suite).unwrap(), "variants": []
        }))
        .unwrap()
    }

    #[test]
    fn capacity_only_where_both_servers_set_the_pace_and_equal_load_at_the_highest_rate() {
        let info = run_info();
        let mut samples = Vec::new();
        for r in 0..3 {
            // Native costs 10 µs a request saturated, x 15; in run 2 the generator set
            // native's pace (native idled at 60%), so that run gives no capacity ratio.
            let native_busy = if r == 2 { 0.6 } else { 0.99 };
            samples.push(cell(
                "native",
                r,
                native_busy / 10e-6,
                native_busy,
                0.95,
                None,
            ));
            samples.push(cell("x", r, 0.98 / 15e-6, 0.98, 0.7, None));
            // At equal load: 20 µs against 26 at 10,000 req/s, 14 against 21 at 30,000.
            samples.push(cell("native", r, 10_000.0, 0.2, 0.1, Some(10_000.0)));
            samples.push(cell("x", r, 10_000.0, 0.26, 0.1, Some(10_000.0)));
            samples.push(cell("native", r, 30_000.0, 0.42, 0.3, Some(30_000.0)));
            samples.push(cell("x", r, 30_000.0, 0.63, 0.3, Some(30_000.0)));
        }
        let a = own_figures(&info, &samples);
        let x = a.throughput_cell("x", "hello", 50).unwrap();
        let ratio = x.capacity_ratio.unwrap();
        assert_eq!(ratio.n, 2, "the runs both were saturated in");
        assert!((ratio.value - 10.0 / 15.0).abs() < 1e-4, "{ratio:?}");
        assert_eq!(
            describe(&x.capacity_notes).as_deref(),
            Some("native generator-limited in 1/3 runs")
        );
        let costs = a.costs("hello");
        let (rate, e) = costs[0].equal_load.unwrap();
        assert_eq!(rate, 30_000.0, "the highest rate both kept up with");
        assert!((e.value - 1.5).abs() < 1e-4 && e.n == 3, "{e:?}");
        let busy = costs[0].native_busy.unwrap();
        assert!(
            (busy - 0.42).abs() < 1e-9,
            "native's share busy at that rate: {busy}"
        );
        let saturated = costs[0].saturated.unwrap();
        assert!((saturated.value - 1.5).abs() < 1e-4, "{saturated:?}");
        // Native always saturated but for the generator: x's ratio leaves that run out; where
        // native never was, there is none, and it says why.
        for s in samples
            .iter_mut()
            .filter(|s| s.variant == "native" && s.kind == Kind::Throughput)
        {
            s.resources.as_mut().unwrap().utilization = Some(0.6);
        }
        let a = own_figures(&info, &samples);
        let c = &a.costs("hello")[0];
        assert!(c.saturated.is_none(), "{c:?}");
        assert_eq!(
            c.saturated_note.as_deref(),
            Some("native generator-limited in 3/3 runs")
        );
        assert!(c.equal_load.is_some());
    }

    #[test]
    fn spread_is_the_median_width_of_the_leads_intervals() {
        let info = run_info();
        // x costs 1.5× native in every repetition, saturated and at equal load: intervals of
        // zero width, a quiet machine.
        let steady = |x_equal: [f64; 4]| -> Vec<Sample> {
            let mut samples = Vec::new();
            for (r, x_busy) in (0..4).zip(x_equal) {
                samples.push(cell("native", r, 0.99 / 10e-6, 0.99, 0.7, None));
                samples.push(cell("x", r, 0.99 / 15e-6, 0.99, 0.7, None));
                samples.push(cell("native", r, 30_000.0, 0.4, 0.3, Some(30_000.0)));
                samples.push(cell("x", r, 30_000.0, x_busy, 0.3, Some(30_000.0)));
            }
            samples
        };
        let quiet = own_figures(&info, &steady([0.6; 4])).spread().unwrap();
        assert_eq!(quiet.figures, 2);
        assert!(quiet.median.abs() < 1e-9 && !quiet.noisy(), "{quiet:?}");
        // At equal load x's CPU moves by ±20% from one repetition to the next: that interval is
        // wide, the median of the two (one at zero) is half its width, and the run was noisy.
        let run = own_figures(&info, &steady([0.48, 0.72, 0.5, 0.7]));
        let noisy = run.spread().unwrap();
        assert_eq!(noisy.widest.0, "x hello at equal load");
        let e = run.costs("hello")[0].equal_load.unwrap().1;
        let half = (e.hi / e.lo).sqrt() - 1.0;
        assert!((noisy.widest.1 - half).abs() < 1e-12 && half > 0.2, "{e:?}");
        assert!((noisy.median - half / 2.0).abs() < 1e-12 && noisy.noisy());
        // One repetition: no interval, so no spread.
        let one: Vec<Sample> = steady([0.6; 4])
            .into_iter()
            .filter(|s| s.repetition == 0)
            .collect();
        assert!(own_figures(&info, &one).spread().is_none());
    }
}
