//! The studies' published figures beside a run's own. For a server run (the gateway study), each
//! figure the study reported (req/s of a workload at a concurrency level, cold start, warm
//! latency, memory): the study's value and ours for the same variant, each as a ratio to the
//! study's baseline server (the gateway study's native, `native-close` here; the net-limits
//! study's C -O3, `c-O3`), and whether the study's ratio holds in this run.
//! For a program run (the libsodium study), each runtime's published median beside ours. The
//! figures live in `studies/*.toml`, with their source named.

use wasmlab_model::study::{FigureKind, Study};

use crate::programs::ProgramAnalysis;
use crate::servers::{ServerAnalysis, describe};
use crate::stats::Estimate;

pub use crate::beside::{
    CapacityPlanning, CapacityRow, ComparedRow, Comparison, ProgramComparison, PublishedRow,
};

/// The variant standing for the study's baseline server when the study names none.
pub const STUDY_BASELINE: &str = "native-close";

/// The variant that stands for `study`'s baseline.
pub fn baseline_of(study: &Study) -> &str {
    study.baseline_variant().unwrap_or(STUDY_BASELINE)
}

/// The columns of a comparison table, in every output: the study's value and ours, each as a
/// ratio to its baseline server; ours also to `native` when that is not the baseline; for a
/// throughput figure, ours as capacity (responses per CPU-second of the server, which the studies
/// did not publish) with the same ratios; then the verdict.
pub fn columns(study: &Study, c: &Comparison) -> Vec<String> {
    let base = baseline_of(study);
    let mut cols = vec![
        "variant".to_owned(),
        "study".to_owned(),
        "this run".to_owned(),
        format!(
            "study × its {}",
            study.baseline.as_deref().unwrap_or("native")
        ),
        format!("this run × {base}"),
    ];
    if c.shows_native_ratio() {
        cols.push("this run × native".to_owned());
    }
    if c.shows_capacity() {
        cols.push("resp/CPU-s".to_owned());
        cols.push(format!("resp/CPU-s × {base}"));
        if c.shows_native_ratio() {
            cols.push("resp/CPU-s × native".to_owned());
        }
    }
    cols.push("the study's ratio here".to_owned());
    cols
}

/// The study's ratio "holds" when ours is within a factor of two of it either way; otherwise the
/// gap is that many times smaller (or larger) here.
pub fn verdict(study: f64, ours: f64, higher_is_better: bool) -> String {
    // Express both as "times worse than native" so that the words read the same for every
    // figure.
    let worse = |r: f64| if higher_is_better { 1.0 / r } else { r };
    let (s, o) = (worse(study), worse(ours));
    if o <= s * 2.0 && o >= s / 2.0 {
        "holds".into()
    } else if o < s {
        format!("gap {:.1}× smaller here", s / o)
    } else {
        format!("gap {:.1}× larger here", o / s)
    }
}

/// A study's figures beside a server run's. Variants the run did not measure show the
/// study's value alone; ours the study had no system for ([`Study::extra_variants`]), when the
/// run measured them, are added with ours alone.
pub fn beside_servers(a: &ServerAnalysis, study: &Study) -> Vec<Comparison> {
    let mut out = Vec::new();
    for f in &study.figures {
        let workload = f.workload.as_deref().unwrap_or("hello");
        // Ours at the study's concurrency level if measured, else the closest level measured.
        let conns = f.connections.map(|want| {
            let mut levels: Vec<usize> = a
                .throughput
                .iter()
                .filter(|c| c.workload == workload)
                .map(|c| c.connections)
                .collect();
            levels.sort_unstable();
            levels
                .into_iter()
                .min_by_key(|c| c.abs_diff(want))
                .unwrap_or(want)
        });
        let (title, higher_is_better) = match f.figure {
            FigureKind::Throughput => (
                format!(
                    "{workload}, {} at {} connections",
                    f.unit,
                    f.connections.unwrap_or_default()
                ),
                true,
            ),
            FigureKind::ColdStartP50 => {
                ("cold start, p50 ms (exec to first 200)".to_owned(), false)
            }
            FigureKind::WarmP50 => (format!("{workload}, warm latency p50 ms"), false),
            FigureKind::Rss => (format!("{workload}, memory (RSS KiB)"), false),
            // A program study's figure: nothing of a server run to set beside it.
            FigureKind::MedianRatio => continue,
        };
        let ours_of = |variant: &str| ours(a, f.figure, variant, workload, conns);
        let cell_of = |variant: &str| match f.figure {
            FigureKind::Throughput => a.throughput_cell(variant, workload, conns?),
            _ => None,
        };
        let capacity_of = |variant: &str| cell_of(variant).and_then(|c| mean(&c.capacity_runs));
        let baseline = baseline_of(study);
        let study_base = study.value(f, baseline);
        let ours_base = ours_of(baseline);
        let other_native = baseline != "native";
        let (ours_native, capacity_base, capacity_native) = (
            ours_of("native"),
            capacity_of(baseline),
            capacity_of("native"),
        );
        let mut variants: Vec<&str> = study
            .systems
            .iter()
            .filter_map(|s| s.variant.as_deref())
            .filter(|v| study.value(f, v).is_some())
            .collect();
        // Ours alone where this run measured them (a failed or skipped variant is in no table:
        // a row of dashes says nothing), unless a system of the study stands for one already
        // (the wasi-test study's native).
        let out_of_run = |v: &str| {
            a.info
                .variants
                .iter()
                .any(|o| o.name == v && o.status.is_out())
        };
        for v in study.extra_variants() {
            if a.variants.iter().any(|x| x == v) && !variants.contains(&v) && !out_of_run(v) {
                variants.push(v);
            }
        }
        let rows = variants
            .into_iter()
            .map(|v| {
                let study_value = study.value(f, v);
                let ours = ours_of(v);
                let capacity = capacity_of(v);
                let study_ratio = ratio(study_value, study_base);
                let ours_ratio = ratio(ours, ours_base);
                let verdict = match (study_ratio, ours_ratio) {
                    (Some(s), Some(o)) if v != baseline => Some(verdict(s, o, higher_is_better)),
                    _ => None,
                };
                ComparedRow {
                    variant: v.to_owned(),
                    study: study_value,
                    ours,
                    ours_estimate: ours_estimate(a, f.figure, v, workload, conns),
                    capacity_estimate: capacity
                        .and_then(|_| cell_of(v)?.resources)
                        .map(|r| r.rps_per_core)
                        .filter(|e| e.n > 0),
                    study_ratio,
                    ours_ratio,
                    capacity_note: cell_of(v)
                        .filter(|_| capacity.is_none())
                        .and_then(|c| describe(&c.unsaturated())),
                    ours_to_native: other_native.then(|| ratio(ours, ours_native)).flatten(),
                    capacity,
                    capacity_ratio: ratio(capacity, capacity_base),
                    capacity_to_native: other_native
                        .then(|| ratio(capacity, capacity_native))
                        .flatten(),
                    verdict,
                }
            })
            .collect();
        out.push(Comparison {
            figure: f.figure,
            title,
            ours_at: match (f.connections, conns) {
                (Some(want), Some(got)) if want != got => {
                    Some(format!("ours at {got} connections"))
                }
                _ => None,
            },
            higher_is_better,
            baseline: baseline.to_owned(),
            rows,
        });
    }
    out
}

/// The study's sizing rule beside this run, when it gave one and the run sampled any server's CPU
/// in (or nearest) its cell.
pub fn capacity_planning(a: &ServerAnalysis, study: &Study) -> Option<CapacityPlanning> {
    let plan = study.capacity.as_ref()?;
    let levels = a
        .throughput
        .iter()
        .filter(|c| c.workload == plan.workload)
        .map(|c| c.connections);
    let conns = levels.min_by_key(|c| (c.abs_diff(plan.connections), *c))?;
    let target = plan.target_rps;
    let ours: Vec<CapacityRow> = a
        .variants
        .iter()
        .filter_map(|v| {
            let cell = a.throughput_cell(v, &plan.workload, conns)?;
            let e = cell.resources?.rps_per_core;
            let e = (e.n > 0 && e.value > 0.0).then_some(e);
            Some(CapacityRow {
                variant: v.clone(),
                per_core: e,
                cores_for_target: e.map(|e| target / e.value),
                cores_interval: e
                    .filter(|e| e.n >= 2 && e.lo > 0.0 && e.hi.is_finite())
                    .map(|e| (target / e.hi, target / e.lo)),
                note: describe(&cell.unsaturated()),
            })
        })
        .collect();
    if ours.is_empty() {
        return None;
    }
    let published = plan
        .published
        .iter()
        .map(|p| {
            let per_core = p.per_core();
            let cores = |f: fn(&u32, &u32) -> bool| {
                p.cores
                    .iter()
                    .copied()
                    .reduce(|a, b| if f(&a, &b) { a } else { b })
                    .unwrap_or(1)
            };
            PublishedRow {
                system: p.system.clone(),
                rps: p.rps,
                cores: (cores(|a, b| a <= b), cores(|a, b| a >= b)),
                per_core,
                cores_for_target: (target / per_core.1, target / per_core.0),
            }
        })
        .collect();
    Some(CapacityPlanning {
        rule: plan.rule.clone(),
        target_rps: target,
        cell: format!("{} at {} connections", plan.workload, plan.connections),
        ours_at: (conns != plan.connections).then(|| format!("ours at {conns} connections")),
        published,
        ours,
    })
}

/// `x / base` when both are positive.
fn ratio(x: Option<f64>, base: Option<f64>) -> Option<f64> {
    match (x, base) {
        (Some(x), Some(b)) if b > 0.0 && x > 0.0 => Some(x / b),
        _ => None,
    }
}

fn mean(runs: &[(u32, f64)]) -> Option<f64> {
    (!runs.is_empty()).then(|| runs.iter().map(|(_, v)| v).sum::<f64>() / runs.len() as f64)
}

/// Ours as an estimate over the runs, for the figures that have one.
fn ours_estimate(
    a: &ServerAnalysis,
    figure: FigureKind,
    variant: &str,
    workload: &str,
    conns: Option<usize>,
) -> Option<Estimate> {
    match figure {
        FigureKind::Throughput => a.throughput_cell(variant, workload, conns?).map(|c| c.rps),
        FigureKind::WarmP50 => a
            .warm
            .iter()
            .find(|r| r.variant == variant && r.workload == workload)
            .map(|r| r.p50),
        _ => None,
    }
}

/// This run's figure of a kind for `variant`, in the study's cell (`conns`: the level measured
/// closest to the study's).
fn ours(
    a: &ServerAnalysis,
    figure: FigureKind,
    variant: &str,
    workload: &str,
    conns: Option<usize>,
) -> Option<f64> {
    match figure {
        FigureKind::Throughput | FigureKind::WarmP50 => {
            ours_estimate(a, figure, variant, workload, conns).map(|e| e.value)
        }
        FigureKind::ColdStartP50 => a
            .cold_start
            .iter()
            .find(|r| r.variant == variant)
            .map(|r| r.first_200.p50),
        FigureKind::Rss => a
            .throughput
            .iter()
            .filter(|c| c.variant == variant && c.workload == workload)
            .min_by_key(|c| c.connections.abs_diff(100))
            .and_then(|c| c.resources)
            .map(|r| r.rss_mean_kib),
        FigureKind::MedianRatio => None,
    }
}

/// Each runtime the study published a median for, in its order, beside ours.
pub fn beside_programs(a: &ProgramAnalysis) -> Vec<ProgramComparison> {
    let Some(study) = &a.study else {
        return Vec::new();
    };
    let Some(figure) = study.figure(FigureKind::MedianRatio) else {
        return Vec::new();
    };
    study
        .systems
        .iter()
        .filter_map(|s| {
            let published = *figure.values.get(&s.study)?;
            let ours = s.variant.as_ref().and_then(|v| {
                a.engines
                    .iter()
                    .find(|e| &e.engine == v && e.median.is_some())
            });
            Some(ProgramComparison {
                study: s.study.clone(),
                published,
                engine: s.variant.clone(),
                median: ours.and_then(|e| e.median),
                body_median: ours.and_then(|e| e.body_median),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        // The study: Wasm 6.4x slower; here 1.5x slower: the gap is 4.2x smaller.
        assert_eq!(verdict(1.0 / 6.4, 1.0 / 1.5, true), "gap 4.3× smaller here");
        assert_eq!(verdict(0.5, 0.4, true), "holds");
        // Cold start: the study's container 17.9x native, ours 1.1x.
        assert_eq!(verdict(17.9, 1.1, false), "gap 16.3× smaller here");
        assert_eq!(verdict(2.0, 9.0, false), "gap 4.5× larger here");
    }
}
