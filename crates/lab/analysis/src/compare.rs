//! Two server runs compared figure by figure (`wasmlab compare A B`): for every figure either
//! measured (throughput, capacity where the server was saturated, CPU per request at equal load,
//! warm and open-loop latency, cold start), each side's runs and the change B/A with its
//! interval, and whether it is a significant change for the better or the worse.

use std::collections::BTreeMap;

use wasmlab_model::sample::{Kind, Pace, Sample};

use crate::stats::{self, Estimate};

/// What a change of one figure amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Significantly better in B.
    Better,
    /// Significantly worse in B.
    Worse,
    /// The interval holds 1.
    NotSignificant,
    /// A side has fewer than two runs: a point, no interval.
    TooFewRuns,
    /// Measured in one run only.
    OnlyInOne,
    /// A capacity whose server was saturated in no run of a side: the note says what set the
    /// pace.
    NotSaturated,
}

/// One side of a comparison: a run's samples, and the CPUs its servers could use (its CPU plan's,
/// for samples that do not record their own).
pub struct Side<'a> {
    pub samples: &'a [Sample],
    pub server_cpus: usize,
}

/// One figure's change from A to B.
pub struct Change {
    pub figure: Compared,
    /// B/A with its interval; None when only one side measured it.
    pub ratio: Option<Estimate>,
    pub verdict: Verdict,
}

/// Every figure either run measured, with its change.
pub fn compare(a: &Side<'_>, b: &Side<'_>) -> Vec<Change> {
    collect(a, b)
        .into_iter()
        .map(|c| {
            if (c.a.is_empty() || c.b.is_empty()) && !c.note.is_empty() {
                return Change {
                    figure: c,
                    ratio: None,
                    verdict: Verdict::NotSaturated,
                };
            }
            let (ratio, verdict) = match change(&c) {
                Some((e, true)) if (e.value < 1.0) == c.lower_is_better => {
                    (Some(e), Verdict::Better)
                }
                Some((e, true)) => (Some(e), Verdict::Worse),
                Some((e, false)) if c.a.len() < 2 || c.b.len() < 2 => {
                    (Some(e), Verdict::TooFewRuns)
                }
                Some((e, false)) => (Some(e), Verdict::NotSignificant),
                None => (None, Verdict::OnlyInOne),
            };
            Change {
                figure: c,
                ratio,
                verdict,
            }
        })
        .collect()
}

/// One compared figure: the per-run values of each side.
pub struct Compared {
    /// The figure and its cell, e.g. `throughput native hello c=50`.
    pub what: String,
    pub unit: &'static str,
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    /// Lower is better (latency), else higher is better (throughput).
    pub lower_is_better: bool,
    /// Runs of a capacity left out because their server was not saturated, by side: what set
    /// their pace (`A: generator-limited in 3 runs`); empty otherwise.
    pub note: String,
}

/// A figure of one run: its description, unit, whether lower is better, and its value, or what
/// set the pace of a capacity's unsaturated run instead.
type Figure = (String, &'static str, bool, Result<f64, Pace>);

/// Per-run values of each measured figure, keyed by a description of the cell.
fn figures(side: &Side<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    for s in side.samples {
        let w = s.workload.as_deref().unwrap_or("");
        match (s.kind, &s.load, &s.start) {
            (Kind::Throughput, Some(l), _) => {
                out.push((
                    format!("throughput {} {w} c={}", s.variant, l.connections),
                    "req/s",
                    false,
                    Ok(l.rps),
                ));
                // Responses per CPU-second of the variant's processes: a capacity only where
                // the server set the pace.
                let cpus = s.cpus_or(side.server_cpus);
                if let (Some(capacity), Some(pace)) = (s.capacity(), s.pace(cpus)) {
                    out.push((
                        format!("capacity {} {w} c={}", s.variant, l.connections),
                        "resp/CPU-s",
                        false,
                        match pace {
                            Pace::Server => Ok(capacity),
                            other => Err(other),
                        },
                    ));
                }
            }
            (Kind::EqualLoad, Some(_), _) if !s.over_capacity() => {
                if let Some(cpu) = s.cpu_us_per_response() {
                    out.push((
                        format!(
                            "CPU per request {} {w} at {} req/s",
                            s.variant,
                            wasmlab_model::sample::rate_label(s.rate.unwrap_or(0.0))
                        ),
                        "µs",
                        true,
                        Ok(cpu),
                    ));
                }
            }
            (Kind::Warm, Some(l), _) => out.push((
                format!("warm p50 {} {w}", s.variant),
                "ms",
                true,
                Ok(l.latency_ms.p50),
            )),
            (Kind::OpenLoop, Some(l), _) => out.push((
                format!(
                    "open-loop p99 {} {w} at {:.0}%",
                    s.variant,
                    s.load_fraction.unwrap_or(0.0) * 100.0
                ),
                "ms",
                true,
                Ok(l.latency_ms.p99),
            )),
            (Kind::ColdStart, _, Some(t)) => out.push((
                format!("cold start {}", s.variant),
                "ms",
                true,
                Ok(t.first_200_ms),
            )),
            _ => {}
        }
    }
    out
}

fn collect(a: &Side<'_>, b: &Side<'_>) -> Vec<Compared> {
    let mut out: Vec<Compared> = Vec::new();
    // Per figure, the paces of each side's unsaturated runs.
    let mut left_out: Vec<[BTreeMap<Pace, usize>; 2]> = Vec::new();
    for (side, samples) in [(0, a), (1, b)] {
        for (what, unit, lower, v) in figures(samples) {
            let i = match out.iter().position(|c| c.what == what) {
                Some(i) => i,
                None => {
                    out.push(Compared {
                        what,
                        unit,
                        a: Vec::new(),
                        b: Vec::new(),
                        lower_is_better: lower,
                        note: String::new(),
                    });
                    left_out.push(Default::default());
                    out.len() - 1
                }
            };
            match (v, side) {
                (Ok(v), 0) => out[i].a.push(v),
                (Ok(v), _) => out[i].b.push(v),
                (Err(pace), _) => *left_out[i][side].entry(pace).or_default() += 1,
            }
        }
    }
    for (c, paces) in out.iter_mut().zip(&left_out) {
        let sides: Vec<String> = ["A", "B"]
            .iter()
            .zip(paces)
            .filter(|(_, p)| !p.is_empty())
            .map(|(name, p)| {
                let each: Vec<String> = p
                    .iter()
                    .map(|(pace, n)| format!("{pace} in {n} run(s)"))
                    .collect();
                format!("{name}: {}", each.join(", "))
            })
            .collect();
        if !sides.is_empty() {
            c.note = format!("not saturated, left out: {}", sides.join("; "));
        }
    }
    out
}

/// The change B/A of one figure: mean ratio with an unpaired bootstrap CI (cold starts: ratio of
/// medians), significant when the CI excludes 1 and both sides have at least 2 runs.
fn change(c: &Compared) -> Option<(Estimate, bool)> {
    let e = if c.what.starts_with("cold start") {
        stats::median_ratio(&c.b, &c.a)?
    } else {
        stats::ratio_of_means(&c.b, &c.a, false)?
    };
    let significant = c.a.len() >= 2 && c.b.len() >= 2 && e.excludes(1.0);
    Some((e, significant))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compared(a: &[f64], b: &[f64]) -> Compared {
        Compared {
            what: "throughput native hello c=50".into(),
            unit: "req/s",
            a: a.to_vec(),
            b: b.to_vec(),
            lower_is_better: false,
            note: String::new(),
        }
    }

    #[test]
    fn significance_needs_separation_and_runs() {
        let (e, sig) = change(&compared(&[100.0, 102.0, 98.0], &[80.0, 81.0, 79.0])).unwrap();
        assert!(sig && (e.value - 0.8).abs() < 1e-9, "{e:?}");
        let (_, sig) = change(&compared(&[100.0, 110.0, 90.0], &[101.0, 95.0, 108.0])).unwrap();
        assert!(!sig);
        // One run a side: a point interval, never called significant.
        let (_, sig) = change(&compared(&[100.0], &[50.0])).unwrap();
        assert!(!sig);
        assert!(change(&compared(&[], &[50.0])).is_none());
    }
}
