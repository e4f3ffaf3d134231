//! Two server runs compared figure by figure (`wasmlab compare A B`): for every figure either
//! measured (throughput, capacity where the server was saturated, CPU per request at equal load,
//! warm and open-loop latency, cold start), each side's runs and the change B/A with its
//! interval, and whether it is a significant change for the better or the worse; and the two
//! runs' headlines side by side ([`headline`]): each variant's cost × native as each run's lead
//! gives it, and whether it held from one run to the other.

use std::collections::BTreeMap;

use wasmlab_model::sample::{Kind, Pace, Sample, rate_label};

use crate::servers::{Cost, ServerAnalysis};
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
    /// The rate each side offered, for an equal-load figure (`what` ends with them).
    pub rates: [Option<f64>; 2],
}

/// A figure of one run: its description, unit, whether lower is better, its equal-load rate, and
/// its value, or what set the pace of a capacity's unsaturated run instead.
type Figure = (String, &'static str, bool, Option<f64>, Result<f64, Pace>);

/// Two runs' equal-load rates, each a share of what that run's probe measured, rarely match to
/// the request: a figure at a rate one run offered is compared with the other run's figure of the
/// same variant and workload at the nearest rate within this share of it (CPU per request moves
/// far less than the rate: 9% from 20,000 to 50,000 req/s for native hello, docs/method.md).
pub const NEAR_RATE: f64 = 0.10;

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
                    None,
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
                        None,
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
                        format!("CPU per request {} {w}", s.variant),
                        "µs",
                        true,
                        Some(s.rate.unwrap_or(0.0)),
                        Ok(cpu),
                    ));
                }
            }
            (Kind::Warm, Some(l), _) => out.push((
                format!("warm p50 {} {w}", s.variant),
                "ms",
                true,
                None,
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
                None,
                Ok(l.latency_ms.p99),
            )),
            (Kind::ColdStart, _, Some(t)) => out.push((
                format!("cold start {}", s.variant),
                "ms",
                true,
                None,
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
        for (what, unit, lower, rate, v) in figures(samples) {
            let same = |c: &Compared| c.what == what && c.rates.contains(&rate);
            let i = match out.iter().position(same) {
                Some(i) => i,
                None => {
                    out.push(Compared {
                        what,
                        unit,
                        a: Vec::new(),
                        b: Vec::new(),
                        lower_is_better: lower,
                        note: String::new(),
                        rates: [None; 2],
                    });
                    left_out.push(Default::default());
                    out.len() - 1
                }
            };
            // Each side's own rate: None where that side did not measure the figure.
            out[i].rates[side] = rate;
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
    pair_near_rates(&mut out);
    for c in &mut out {
        match c.rates {
            [Some(a), Some(b)] if a == b => c.what += &format!(" at {} req/s", rate_label(a)),
            [Some(a), Some(b)] => {
                c.what += &format!(" at {} (B at {}) req/s", rate_label(a), rate_label(b))
            }
            [Some(r), None] | [None, Some(r)] => c.what += &format!(" at {} req/s", rate_label(r)),
            [None, None] => {}
        }
    }
    out
}

/// An equal-load figure of A only and one of B only, of the same variant and workload at rates
/// within [`NEAR_RATE`] of each other (the nearest first), become one figure whose description
/// gives both rates.
fn pair_near_rates(out: &mut Vec<Compared>) {
    // (index, rate) of the figures only one side measured at an equal-load rate.
    let only = |out: &[Compared], side: usize| -> Vec<(usize, f64)> {
        out.iter()
            .enumerate()
            .filter_map(|(i, c)| match c.rates {
                [Some(r), None] if side == 0 => Some((i, r)),
                [None, Some(r)] if side == 1 => Some((i, r)),
                _ => None,
            })
            .collect()
    };
    let mut in_b = only(out, 1);
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (i, rate) in only(out, 0) {
        let nearest = in_b
            .iter()
            .enumerate()
            .filter(|(_, (j, r))| {
                out[*j].what == out[i].what && r.max(rate) / r.min(rate) <= 1.0 + NEAR_RATE + 1e-9
            })
            .min_by(|x, y| (x.1.1 - rate).abs().total_cmp(&(y.1.1 - rate).abs()))
            .map(|(k, _)| k);
        if let Some(k) = nearest {
            pairs.push((i, in_b.remove(k).0));
        }
    }
    for &(i, j) in &pairs {
        out[i].b = std::mem::take(&mut out[j].b);
        out[i].rates[1] = out[j].rates[1];
    }
    let gone: Vec<usize> = pairs.iter().map(|p| p.1).collect();
    *out = std::mem::take(out)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !gone.contains(i))
        .map(|(_, c)| c)
        .collect();
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

/// How far apart two runs' headline figures may be and still count as the same: B within 10% of
/// A (the stability the method asks of two quick runs in a row, docs/method.md).
pub const STEADY_WITHIN: f64 = 0.10;

/// Which of the lead's two figures of a variant's cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Footing {
    /// CPU per request × native's at the same offered rate.
    EqualLoad,
    /// Native's capacity over the variant's, where both servers were saturated.
    Saturated,
}

impl Footing {
    /// As a gate or `wasmlab history --json` names it.
    pub fn name(self) -> &'static str {
        match self {
            Footing::EqualLoad => "equal_load",
            Footing::Saturated => "saturated",
        }
    }

    /// As a reader reads it.
    pub fn label(self) -> &'static str {
        match self {
            Footing::EqualLoad => "equal load",
            Footing::Saturated => "saturated",
        }
    }
}

/// One side's headline figure: its estimate (and rate, at equal load), or why it has none.
#[derive(Debug, Clone)]
pub struct HeadlineFigure {
    pub estimate: Option<Estimate>,
    pub rate: Option<f64>,
    /// At equal load, how busy native was at the figure's rate ([`Cost::native_busy`]): a figure
    /// where native was nearly idle moves with the host from run to run.
    pub native_busy: Option<f64>,
    pub note: Option<String>,
}

/// One headline figure of a workload and variant in both runs.
#[derive(Debug, Clone)]
pub struct HeadlineChange {
    pub workload: String,
    pub variant: String,
    pub footing: Footing,
    pub a: HeadlineFigure,
    pub b: HeadlineFigure,
}

impl HeadlineChange {
    /// B's figure over A's, when both runs have one.
    pub fn change(&self) -> Option<f64> {
        let (a, b) = (self.a.estimate?, self.b.estimate?);
        (a.value > 0.0).then(|| b.value / a.value)
    }

    /// Whether the two runs' 95% intervals overlap (None unless both have an interval).
    pub fn overlap(&self) -> Option<bool> {
        self.a.estimate?.overlaps(&self.b.estimate?)
    }

    /// Whether the figure held from A to B: within [`STEADY_WITHIN`] and intervals overlapping.
    /// None when a side has no figure or no interval.
    pub fn holds(&self) -> Option<bool> {
        let overlap = self.overlap()?;
        Some(overlap && (self.change()? - 1.0).abs() < STEADY_WITHIN)
    }
}

/// The two runs' headlines side by side: every variant's cost × native on every workload, at
/// equal load and saturated, that either run's lead gives (figures neither run has are left
/// out), in A's order of workloads and variants, then B's.
pub fn headline(a: &ServerAnalysis, b: &ServerAnalysis) -> Vec<HeadlineChange> {
    let mut workloads: Vec<&String> = a.workloads.iter().collect();
    workloads.extend(b.workloads.iter().filter(|w| !a.workloads.contains(w)));
    let mut out = Vec::new();
    for w in workloads {
        let (ca, cb) = (a.costs(w), b.costs(w));
        let mut variants: Vec<&String> = ca.iter().map(|c| &c.variant).collect();
        variants.extend(
            cb.iter()
                .map(|c| &c.variant)
                .filter(|v| !ca.iter().any(|c| &c.variant == *v)),
        );
        for v in variants {
            let find = |costs: &[Cost]| costs.iter().find(|c| &c.variant == v).cloned();
            let (fa, fb) = (find(&ca), find(&cb));
            for footing in [Footing::EqualLoad, Footing::Saturated] {
                let (a, b) = (figure(fa.as_ref(), footing), figure(fb.as_ref(), footing));
                if a.estimate.is_none() && b.estimate.is_none() {
                    continue;
                }
                out.push(HeadlineChange {
                    workload: w.clone(),
                    variant: v.clone(),
                    footing,
                    a,
                    b,
                });
            }
        }
    }
    out
}

/// A run's figure of one footing, from its cost (None: the run did not measure the variant).
fn figure(cost: Option<&Cost>, footing: Footing) -> HeadlineFigure {
    let Some(c) = cost else {
        return HeadlineFigure {
            estimate: None,
            rate: None,
            native_busy: None,
            note: Some("not in this run".to_owned()),
        };
    };
    match footing {
        Footing::EqualLoad => HeadlineFigure {
            estimate: c.equal_load.map(|(_, e)| e),
            rate: c.equal_load.map(|(r, _)| r),
            native_busy: c.native_busy,
            note: c.equal_load_note.clone(),
        },
        Footing::Saturated => HeadlineFigure {
            estimate: c.saturated,
            rate: None,
            native_busy: None,
            note: c.saturated_note.clone(),
        },
    }
}

/// A regression gate on the headline (`wasmlab compare A B --fail-if 'VARIANT.WORKLOAD.FOOTING >
/// +N%'`): crossed by a figure of B worse than A's (a higher cost × native) by more than N%, with
/// the two runs' 95% intervals apart. Any part of the name may be `*`, and `any` stands for
/// `*.*.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// As the user wrote it.
    pub text: String,
    variant: Option<String>,
    workload: Option<String>,
    footing: Option<Footing>,
    /// The share B may be worse by: 0.10 for +10%.
    worse_by: f64,
}

impl Gate {
    pub fn parse(text: &str) -> Result<Self, String> {
        let form = "a gate reads VARIANT.WORKLOAD.FOOTING > +N% (FOOTING: equal_load or \
                    saturated; `*` for any part, `any` for every figure), e.g. \
                    'component-pooled.hello.equal_load > +10%'";
        let (name, bound) = text
            .split_once('>')
            .ok_or_else(|| format!("{text:?}: no `>`: {form}"))?;
        let bound = bound.trim();
        let worse_by = bound
            .strip_prefix('+')
            .and_then(|b| b.strip_suffix('%'))
            .and_then(|n| n.trim().parse::<f64>().ok())
            .filter(|n| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| format!("{text:?}: {bound:?} is not +N%: {form}"))?
            / 100.0;
        let name = name.trim();
        let parts: Vec<&str> = match name {
            "any" => vec!["*", "*", "*"],
            _ => name.split('.').collect(),
        };
        let [variant, workload, footing] = parts[..] else {
            return Err(format!(
                "{text:?}: {name:?} is not VARIANT.WORKLOAD.FOOTING: {form}"
            ));
        };
        let any = |p: &str| (p != "*").then(|| p.to_owned());
        let footing = match footing {
            "*" => None,
            "equal_load" => Some(Footing::EqualLoad),
            "saturated" => Some(Footing::Saturated),
            other => return Err(format!("{text:?}: no footing {other:?}: {form}")),
        };
        if variant.is_empty() || workload.is_empty() {
            return Err(format!("{text:?}: an empty part: {form}"));
        }
        Ok(Self {
            text: text.to_owned(),
            variant: any(variant),
            workload: any(workload),
            footing,
            worse_by,
        })
    }

    /// Whether the gate names this figure.
    pub fn names(&self, c: &HeadlineChange) -> bool {
        self.variant.as_ref().is_none_or(|v| *v == c.variant)
            && self.workload.as_ref().is_none_or(|w| *w == c.workload)
            && self.footing.is_none_or(|f| f == c.footing)
    }

    /// Whether it names one figure only, which the runs must then have.
    pub fn names_one(&self) -> bool {
        self.variant.is_some() && self.workload.is_some() && self.footing.is_some()
    }

    /// Whether `c` crosses it: worse in B beyond the bound, the intervals apart.
    pub fn crossed_by(&self, c: &HeadlineChange) -> bool {
        self.names(c)
            && c.change().is_some_and(|r| r - 1.0 > self.worse_by)
            && c.overlap() == Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_parse_and_are_crossed_only_beyond_the_bound_with_the_intervals_apart() {
        let g = Gate::parse("component-pooled.hello.equal_load > +10%").unwrap();
        assert!(g.names_one());
        assert!(!Gate::parse("any > +5%").unwrap().names_one());
        assert!(!Gate::parse("*.hello.* > +5%").unwrap().names_one());
        for bad in [
            "component-pooled.hello.equal_load",
            "component-pooled.hello > +10%",
            "component-pooled.hello.fast > +10%",
            "component-pooled.hello.equal_load > 10%",
            "component-pooled.hello.equal_load > +ten%",
            "component-pooled.hello.equal_load > -10%",
            ".hello.saturated > +1%",
        ] {
            assert!(Gate::parse(bad).is_err(), "{bad}");
        }
        let est = |value: f64, lo: f64, hi: f64| Estimate {
            value,
            lo,
            hi,
            n: 3,
        };
        let fig = |e| HeadlineFigure {
            estimate: Some(e),
            rate: None,
            native_busy: None,
            note: None,
        };
        let change = |a, b| HeadlineChange {
            workload: "hello".into(),
            variant: "component-pooled".into(),
            footing: Footing::EqualLoad,
            a: fig(a),
            b: fig(b),
        };
        // +30%, intervals apart: crossed. +30% overlapping, +5% apart, or better: not.
        assert!(g.crossed_by(&change(est(2.0, 1.9, 2.1), est(2.6, 2.5, 2.7))));
        assert!(!g.crossed_by(&change(est(2.0, 1.5, 2.5), est(2.6, 2.2, 3.0))));
        assert!(!g.crossed_by(&change(est(2.0, 1.99, 2.01), est(2.1, 2.09, 2.11))));
        assert!(!g.crossed_by(&change(est(2.6, 2.5, 2.7), est(2.0, 1.9, 2.1))));
        let saturated = Gate::parse("component-pooled.hello.saturated > +10%").unwrap();
        assert!(!saturated.crossed_by(&change(est(2.0, 1.9, 2.1), est(2.6, 2.5, 2.7))));
    }

    fn compared(a: &[f64], b: &[f64]) -> Compared {
        Compared {
            what: "throughput native hello c=50".into(),
            unit: "req/s",
            a: a.to_vec(),
            b: b.to_vec(),
            lower_is_better: false,
            note: String::new(),
            rates: [None; 2],
        }
    }

    #[test]
    fn a_headline_figure_holds_within_ten_percent_with_overlapping_intervals() {
        let e = |value, lo, hi, n| Estimate { value, lo, hi, n };
        let side = |estimate| HeadlineFigure {
            estimate,
            rate: None,
            native_busy: None,
            note: None,
        };
        let holds = |a, b| {
            HeadlineChange {
                workload: "hello".into(),
                variant: "wasmtime-pooled".into(),
                footing: Footing::EqualLoad,
                a: side(a),
                b: side(b),
            }
            .holds()
        };
        let four = |v, lo, hi| Some(e(v, lo, hi, 4));
        assert_eq!(
            holds(four(2.0, 1.9, 2.1), four(2.15, 2.05, 2.25)),
            Some(true)
        );
        assert_eq!(
            holds(four(2.0, 1.9, 2.1), four(1.85, 1.7, 1.95)),
            Some(true)
        );
        // 15% apart though the intervals overlap; 5% apart with intervals apart.
        assert_eq!(holds(four(2.0, 1.5, 2.5), four(2.3, 2.0, 2.6)), Some(false));
        assert_eq!(
            holds(four(2.0, 1.98, 2.02), four(2.1, 2.08, 2.12)),
            Some(false)
        );
        // No figure, or no interval, on a side: cannot tell.
        assert_eq!(holds(four(2.0, 1.9, 2.1), None), None);
        assert_eq!(holds(four(2.0, 1.9, 2.1), Some(e(2.0, 2.0, 2.0, 1))), None);
    }

    #[test]
    fn equal_load_figures_pair_with_the_nearest_rate_within_ten_percent() {
        let figure = |what: &str, rate: f64, a: &[f64], b: &[f64]| Compared {
            what: what.into(),
            unit: "µs",
            a: a.to_vec(),
            b: b.to_vec(),
            lower_is_better: true,
            note: String::new(),
            rates: [
                (!a.is_empty()).then_some(rate),
                (!b.is_empty()).then_some(rate),
            ],
        };
        let hello = "CPU per request native hello";
        let mut out = vec![
            figure(hello, 5000.0, &[30.0], &[]),
            figure(hello, 20000.0, &[15.0], &[]),
            figure(hello, 5400.0, &[], &[29.0]),
            figure(hello, 5200.0, &[], &[28.0]),
            figure(hello, 22500.0, &[], &[14.0]),
            figure("CPU per request native proxy", 5000.0, &[], &[50.0]),
        ];
        pair_near_rates(&mut out);
        let seen: Vec<String> = out
            .iter()
            .map(|c| format!("{} {:?} {:?}", c.what, c.rates, c.b))
            .collect();
        assert_eq!(
            seen,
            [
                format!("{hello} [Some(5000.0), Some(5200.0)] [28.0]"),
                format!("{hello} [Some(20000.0), None] []"),
                format!("{hello} [None, Some(5400.0)] [29.0]"),
                format!("{hello} [None, Some(22500.0)] [14.0]"),
                "CPU per request native proxy [None, Some(5000.0)] [50.0]".to_owned(),
            ]
        );
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
