//! A server suite's run analysed: each cell's throughput, capacity and latency over its
//! repetitions with every ratio to native, cold starts, warm and open-loop latency, and the
//! latency spectra, from the samples of the variants that did not fail.

use std::collections::{BTreeMap, BTreeSet};

use hdrhistogram::Histogram;
use serde::Serialize;
use wasmlab_load::{ErrorCounts, LatencyMs, histogram_from_buckets, new_histogram};
use wasmlab_model::run::ServerRunInfo;
use wasmlab_model::sample::{Kind, Sample, StartTimes};
use wasmlab_model::study::Study;

mod throughput;

pub use throughput::{CellResources, ThroughputCell};

use crate::stats::{self, Estimate, mean_ci, paired_ratio};

/// The variant every ratio is taken against.
pub const BASELINE: &str = "native";

/// Cold start of one variant over its launches.
#[derive(Debug, Clone, Serialize)]
pub struct ColdStartRow {
    pub variant: String,
    pub n: usize,
    /// Exec to the first complete 200, ms: p50 / p90 / p99 over launches.
    pub first_200: Quantiles,
    /// Exec to the `listening` line, ms; None for a variant that does not print its address.
    pub listening: Option<Quantiles>,
    /// Exec to the first successful TCP connect, ms.
    pub connected: Quantiles,
    /// Exec to the first byte of the first 200, ms.
    pub first_byte: Quantiles,
    /// p50 of first_200 against the baseline's, with a bootstrap CI over launches (unpaired).
    pub ratio_to_native: Option<Estimate>,
    /// Every launch's first_200, ms (for the distribution plot).
    pub values_ms: Vec<f64>,
    /// RSS of the process trees right after the first 200, MiB, over the launches that
    /// recorded it (None for older results).
    pub rss_mib: Option<Quantiles>,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Quantiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
}

impl Quantiles {
    pub fn of(values: &[f64]) -> Self {
        let q = |p| stats::percentile(values, p).unwrap_or(0.0);
        Self {
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            min: q(0.0),
            max: q(1.0),
            mean: stats::mean(values).unwrap_or(0.0),
        }
    }
}

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
}

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
    pub beside_study: Vec<crate::study::Comparison>,
    /// Its sizing rule beside this run's capacity, when it gave one.
    pub capacity_planning: Option<crate::study::CapacityPlanning>,
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

/// Analyses a server suite's run: every table and plot shows this, so they always agree.
pub fn analyse(info: &ServerRunInfo, samples: &[Sample]) -> ServerAnalysis {
    let samples = info.tabled(samples);
    let (variants, workloads) = order(info, &samples);
    let throughput = throughput::throughput(&variants, &workloads, &samples);
    let cold_start = cold_starts(&variants, &samples);
    let warm = warm(&variants, &workloads, &samples);
    let open_loop = open_loop(&variants, &workloads, &samples);
    let levels: BTreeSet<usize> = throughput.iter().map(|c| c.connections).collect();
    let reference_connections = levels.iter().copied().min_by_key(|c| (c.abs_diff(100), *c));
    let spectra = spectra(&variants, &workloads, &samples, reference_connections);
    let mut a = ServerAnalysis {
        info: info.clone(),
        variants,
        workloads,
        throughput,
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
        beside_study: Vec::new(),
        capacity_planning: None,
    };
    a.beside_study = crate::study::beside_servers(&a, &a.study);
    a.capacity_planning = crate::study::capacity_planning(&a, &a.study);
    a
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

/// Each variant's launches, with its median's ratio to native's.
fn cold_starts(variants: &[String], samples: &[&Sample]) -> Vec<ColdStartRow> {
    let mut rows: Vec<ColdStartRow> = Vec::new();
    for v in variants {
        let starts: Vec<StartTimes> = samples
            .iter()
            .filter(|s| s.kind == Kind::ColdStart && &s.variant == v)
            .filter_map(|s| s.start)
            .collect();
        if starts.is_empty() {
            continue;
        }
        let col = |f: fn(&StartTimes) -> f64| -> Vec<f64> { starts.iter().map(f).collect() };
        let values = col(|s| s.first_200_ms);
        let printed: Vec<f64> = col(|s| s.listening_ms)
            .into_iter()
            .filter(|v| *v > 0.0)
            .collect();
        let rss: Vec<f64> = starts
            .iter()
            .filter(|s| s.rss_kib > 0)
            .map(|s| s.rss_kib as f64 / 1024.0)
            .collect();
        rows.push(ColdStartRow {
            variant: v.clone(),
            n: starts.len(),
            first_200: Quantiles::of(&values),
            listening: (!printed.is_empty()).then(|| Quantiles::of(&printed)),
            connected: Quantiles::of(&col(|s| s.connected_ms)),
            first_byte: Quantiles::of(&col(|s| s.first_byte_ms)),
            ratio_to_native: None,
            values_ms: values,
            rss_mib: (!rss.is_empty()).then(|| Quantiles::of(&rss)),
        });
    }
    if let Some(base) = rows
        .iter()
        .find(|r| r.variant == BASELINE)
        .map(|r| r.values_ms.clone())
    {
        for r in &mut rows {
            r.ratio_to_native = stats::median_ratio(&r.values_ms, &base);
        }
    }
    rows
}

/// Warm latency per (variant, workload), with its p50's ratio to native's.
fn warm(variants: &[String], workloads: &[String], samples: &[&Sample]) -> Vec<WarmRow> {
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
            let mut errors = ErrorCounts::default();
            for s in &ss {
                errors.add(&s.load.as_ref().expect("filtered").errors);
            }
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
                errors,
            });
        }
    }
    rows
}

/// One point per (variant, workload, offered load).
fn open_loop(variants: &[String], workloads: &[String], samples: &[&Sample]) -> Vec<OpenLoopPoint> {
    let mut groups: BTreeMap<(usize, usize, u64), Vec<&Sample>> = BTreeMap::new();
    for s in of_kind(samples, Kind::OpenLoop) {
        let v = variants.iter().position(|x| *x == s.variant).unwrap_or(0);
        let w = workloads
            .iter()
            .position(|x| Some(x) == s.workload.as_ref())
            .unwrap_or(0);
        let f = (s.load_fraction.unwrap_or(0.0) * 1e6).round() as u64;
        groups.entry((v, w, f)).or_default().push(s);
    }
    groups
        .iter()
        .map(|(&(v, w, f), ss)| {
            let ol: Vec<_> = ss
                .iter()
                .filter_map(|s| s.load.as_ref()?.open_loop)
                .collect();
            let mut errors = ErrorCounts::default();
            for s in ss {
                errors.add(&s.load.as_ref().expect("filtered").errors);
            }
            let mean_of = |f: fn(&wasmlab_load::OpenLoop) -> f64| {
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
                corrected: LatencyMs::from_histogram(&merged(ss, false)),
                uncorrected: LatencyMs::from_histogram(&merged(ss, true)),
                intended: ol.iter().map(|o| o.intended).sum(),
                sent: ol.iter().map(|o| o.sent).sum(),
                dropped: ol.iter().map(|o| o.dropped).sum(),
                late: ol.iter().map(|o| o.late).sum(),
                errors,
            }
        })
        .collect()
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
}
