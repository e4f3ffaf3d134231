//! The statistics behind every figure: percentiles of samples, means, bootstrap confidence
//! intervals over independent runs, and seeded shuffles.

use serde::{Deserialize, Serialize};

/// The `q` quantile (0..=1) of `values`, by linear interpolation between order statistics
/// (Hyndman & Fan type 7, the default of R and NumPy). `None` when empty.
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let h = (v.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    Some(v[lo] + (h - lo as f64) * (v[hi] - v[lo]))
}

pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// An estimate with its 95% confidence interval and the number of runs behind it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
    pub n: usize,
}

impl Estimate {
    /// `value [lo–hi] n=N`, each number formatted by `f`; with fewer than two runs there is no
    /// interval to show (`value n=1`), and "–" when there is no value.
    pub fn show(&self, f: impl Fn(f64) -> String) -> String {
        if !self.value.is_finite() || self.n == 0 {
            return "–".into();
        }
        if self.n >= 2 && self.lo.is_finite() && self.hi.is_finite() {
            format!(
                "{} [{}–{}] n={}",
                f(self.value),
                f(self.lo),
                f(self.hi),
                self.n
            )
        } else {
            format!("{} n={}", f(self.value), self.n)
        }
    }

    /// `1 / value`, the interval's ends turned over (a capacity ratio of 0.5 [0.4–0.625] is a
    /// cost of 2.00× [1.60–2.50]); None unless the value is positive.
    pub fn inverse(&self) -> Option<Estimate> {
        (self.value > 0.0 && self.value.is_finite()).then(|| Estimate {
            value: 1.0 / self.value,
            lo: 1.0 / self.hi,
            hi: 1.0 / self.lo,
            n: self.n,
        })
    }

    /// Half the interval's width as a share of the figure, on the scale the interval is
    /// symmetric on for a ratio or a time: √(hi / lo) − 1 (±5% for 1.0 [0.952–1.050]). None
    /// without an interval (fewer than two runs) or with an end at or below zero.
    pub fn relative_half_width(&self) -> Option<f64> {
        (self.n >= 2 && self.lo > 0.0 && self.hi >= self.lo && self.hi.is_finite())
            .then(|| (self.hi / self.lo).sqrt() - 1.0)
    }

    /// Whether the interval excludes `x` (for a ratio, 1.0: a significant change). Without an
    /// interval (fewer than two runs) nothing is excluded: one run shows no significance.
    pub fn excludes(&self, x: f64) -> bool {
        self.n >= 2 && (x < self.lo || x > self.hi)
    }

    /// Whether the two intervals share a point; None unless both have one (two runs or more).
    pub fn overlaps(&self, other: &Estimate) -> Option<bool> {
        (self.n >= 2 && other.n >= 2).then_some(self.lo <= other.hi && other.lo <= self.hi)
    }
}

/// Stein's two-stage rule: how many runs in all give a 95% interval of relative half-width
/// `target`, when the first `first` runs gave `half_width` (both as [`Estimate::relative_half_width`]
/// gives them); at least `first`, at most `max`.
///
/// The intervals are t intervals on the log scale, log-half-width t₍ₙ₋₁₎·s/√n: keeping the first
/// stage's t and its s, the half-width falls to the target at n = first·(ln(1+w)/ln(1+target))².
/// Stein (1945) keeps them for the final interval too, which then has exactly the width asked
/// for; the lab computes its intervals afresh from all the runs, so here the rule plans rather
/// than guarantees, and keeping the first stage's t (3.18 for four runs, not the total's 2.2–2.4)
/// asks for more runs than the total's t would: a busy host's repetitions are not independent,
/// and narrow more slowly than t predicts (docs/method.md, "Repetitions added on a noisy
/// machine").
pub fn stein_total(first: u32, half_width: f64, target: f64, max: u32) -> u32 {
    if first == 0 || !(half_width.is_finite() && target > 0.0) || half_width <= target {
        return first;
    }
    let ratio = (1.0 + half_width).ln() / (1.0 + target).ln();
    let needed = (f64::from(first) * ratio * ratio).ceil();
    needed.min(f64::from(max)).max(f64::from(first)) as u32
}

/// Resamples drawn for every bootstrap interval.
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;

/// The seed of every bootstrap, so a report rebuilt from the same samples shows the same
/// intervals.
const BOOTSTRAP_SEED: u64 = 0x5eed_f00d_b007;

/// Bootstrap 95% interval of `statistic` over `values` (runs resampled with replacement; see
/// [`interval`] for how the draws become an interval).
pub fn bootstrap(values: &[f64], statistic: impl Fn(&[f64]) -> f64) -> Option<Estimate> {
    if values.is_empty() {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(BOOTSTRAP_SEED);
    let mut draws = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    let mut buf = vec![0.0; values.len()];
    for _ in 0..BOOTSTRAP_RESAMPLES {
        resample(&mut rng, values, &mut buf);
        draws.push(statistic(&buf));
    }
    interval(statistic(values), &draws, values.len())
}

/// The ratio of means `mean(a) / mean(b)` with a bootstrap 95% interval.
///
/// `paired`: a and b were measured in the same runs (a[i] beside b[i], as the variants of one
/// repetition), so runs are resampled together and run-to-run drift of the machine cancels.
/// Otherwise (two different result directories) each side is resampled on its own, and the
/// interval is Welch's: each side's error, t on the Welch–Satterthwaite degrees of freedom.
pub fn ratio_of_means(a: &[f64], b: &[f64], paired: bool) -> Option<Estimate> {
    if a.is_empty() || b.is_empty() || (paired && a.len() != b.len()) {
        return None;
    }
    ratio_bootstrap(a, b, paired, |v| mean(v).unwrap_or(0.0), BOOTSTRAP_SEED)
}

/// `statistic(a) / statistic(b)` with a bootstrap 95% interval over `seed`'s resamples, paired
/// or each side on its own (see [`ratio_of_means`]); None when the ratio is not finite.
fn ratio_bootstrap(
    a: &[f64],
    b: &[f64],
    paired: bool,
    statistic: impl Fn(&[f64]) -> f64,
    seed: u64,
) -> Option<Estimate> {
    let ratio = |x: &[f64], y: &[f64]| {
        let d = statistic(y);
        if d == 0.0 { f64::NAN } else { statistic(x) / d }
    };
    let value = ratio(a, b);
    if !value.is_finite() {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut draws = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    // Unpaired, each side's own draws too: their errors are combined as Welch's test does.
    let (mut side_a, mut side_b) = (Vec::new(), Vec::new());
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        if paired {
            for i in 0..a.len() {
                let j = rng.usize(..a.len());
                ra[i] = a[j];
                rb[i] = b[j];
            }
        } else {
            resample(&mut rng, a, &mut ra);
            resample(&mut rng, b, &mut rb);
            side_a.push(statistic(&ra));
            side_b.push(statistic(&rb));
        }
        let r = ratio(&ra, &rb);
        if r.is_finite() {
            draws.push(r);
        }
    }
    if !paired
        && a.len() >= 2
        && b.len() >= 2
        && value > 0.0
        && let (Some(va), Some(vb)) = (log_variance(&side_a), log_variance(&side_b))
    {
        // Each side's plug-in error widened as in [`interval`]; the degrees of freedom
        // Welch–Satterthwaite's, between the fewer side's runs less one and both sides' less two.
        let (na, nb) = (a.len() as f64, b.len() as f64);
        let (va, vb) = (va * na / (na - 1.0), vb * nb / (nb - 1.0));
        let freedom = if va + vb > 0.0 {
            (va + vb).powi(2) / (va.powi(2) / (na - 1.0) + vb.powi(2) / (nb - 1.0))
        } else {
            na + nb - 2.0
        };
        return Some(t_interval(
            value,
            va + vb,
            freedom,
            a.len().min(b.len()),
            true,
            0.0,
        ));
    }
    interval(value, &draws, a.len().min(b.len()))
}

/// The plug-in variance of the logs of `draws`; None unless every one is positive and finite.
fn log_variance(draws: &[f64]) -> Option<f64> {
    if draws.is_empty() || !draws.iter().all(|d| d.is_finite() && *d > 0.0) {
        return None;
    }
    let logs: Vec<f64> = draws.iter().map(|d| d.ln()).collect();
    Some(plugin_variance(&logs))
}

/// The variance of `values` over their number (the bootstrap's plug-in estimate).
fn plugin_variance(values: &[f64]) -> f64 {
    let m = values.iter().sum::<f64>() / values.len() as f64;
    values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / values.len() as f64
}

/// Fills `into` with values of `from` drawn with replacement.
fn resample(rng: &mut fastrand::Rng, from: &[f64], into: &mut [f64]) {
    for x in into.iter_mut() {
        *x = from[rng.usize(..from.len())];
    }
}

/// `value` with a 95% interval from its bootstrap `draws`; n runs behind it.
///
/// The draws give the statistic's standard error, and the interval is Student's t on n − 1
/// degrees of freedom times that error, on a log scale where the statistic and all its draws are
/// positive (a ratio, a time: the interval stays positive and is symmetric in ratio), else as it
/// is. Not the draws' 2.5th and 97.5th percentiles: with the few runs a suite repeats (4 in the
/// quick suite) those cannot reach beyond the runs themselves and cover the true value about
/// four times in five, not 95 in 100. The bootstrap's error is a plug-in one (variance over n,
/// not n − 1), so it is widened by √(n / (n − 1)); for the mean of normal runs this is exactly
/// the t interval.
fn interval(value: f64, draws: &[f64], n: usize) -> Option<Estimate> {
    let draws: Vec<f64> = draws.iter().copied().filter(|d| d.is_finite()).collect();
    if draws.is_empty() || !value.is_finite() {
        return None;
    }
    if n < 2 {
        return Some(Estimate {
            value,
            lo: value,
            hi: value,
            n,
        });
    }
    // On the log scale where the figure and every draw are positive.
    let (var, log) = match (value > 0.0).then(|| log_variance(&draws)).flatten() {
        Some(var) => (var, true),
        None => (plugin_variance(&draws), false),
    };
    let var = var * n as f64 / (n - 1) as f64;
    // A figure that cannot be negative (a count, a rate) keeps a lower end of zero at least.
    let floor = if draws.iter().all(|d| *d >= 0.0) {
        0.0
    } else {
        f64::NEG_INFINITY
    };
    Some(t_interval(value, var, (n - 1) as f64, n, log, floor))
}

/// `value` ± Student's t on `freedom` degrees of freedom times the error √`var`: on the log scale
/// (`var` then that of the logs) or as it is, the lower end not below `floor`.
fn t_interval(value: f64, var: f64, freedom: f64, n: usize, log: bool, floor: f64) -> Estimate {
    let half = t_975(freedom) * var.sqrt();
    let (lo, hi) = if log {
        (value * (-half).exp(), value * half.exp())
    } else {
        ((value - half).max(floor), value + half)
    };
    Estimate { value, lo, hi, n }
}

/// The 97.5th percentile of Student's t on `freedom` degrees of freedom (12.71 for 1, 3.18 for
/// 3, 1.96 as they grow).
fn t_975(freedom: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    StudentsT::new(0.0, 1.0, freedom)
        .map(|t| t.inverse_cdf(0.975))
        .unwrap_or(1.959_964)
}

/// Paired ratio of per-repetition values `a` over `b`, over the repetitions both have: runs
/// resampled together, so drift of the machine between repetitions cancels.
pub fn paired_ratio(a: &[(u32, f64)], b: &[(u32, f64)]) -> Option<Estimate> {
    let (mut xa, mut xb) = (Vec::new(), Vec::new());
    for (r, va) in a {
        if let Some((_, vb)) = b.iter().find(|(rb, _)| rb == r) {
            xa.push(*va);
            xb.push(*vb);
        }
    }
    ratio_of_means(&xa, &xb, true)
}

/// The mean with its bootstrap 95% interval; n = 0 (and no value) when there are no values.
pub fn mean_ci(values: &[f64]) -> Estimate {
    bootstrap(values, |v| mean(v).unwrap_or(0.0)).unwrap_or(Estimate {
        value: 0.0,
        lo: 0.0,
        hi: 0.0,
        n: 0,
    })
}

/// Ratio of medians with a bootstrap CI, each side resampled on its own (launches are not
/// paired).
pub fn median_ratio(a: &[f64], b: &[f64]) -> Option<Estimate> {
    let median = |v: &[f64]| percentile(v, 0.5).unwrap_or(f64::NAN);
    ratio_bootstrap(a, b, false, median, MEDIAN_RATIO_SEED)
}

/// The seed of the cold starts' median ratios (of their own since they were first reported).
const MEDIAN_RATIO_SEED: u64 = 0x00c0_1d57;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_r_type_7() {
        let v = [15.0, 20.0, 35.0, 40.0, 50.0];
        assert_eq!(percentile(&v, 0.0), Some(15.0));
        assert_eq!(percentile(&v, 1.0), Some(50.0));
        assert_eq!(percentile(&v, 0.5), Some(35.0));
        // R: quantile(c(15,20,35,40,50), 0.4) = 29
        assert!((percentile(&v, 0.4).unwrap() - 29.0).abs() < 1e-12);
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[7.0], 0.99), Some(7.0));
        // Order of input does not matter.
        assert_eq!(
            percentile(&[50.0, 15.0, 40.0, 20.0, 35.0], 0.4),
            percentile(&v, 0.4)
        );
    }

    /// Deterministic standard normal draws (Box-Muller over a seeded generator).
    fn normals(n: usize, mu: f64, sigma: f64, seed: u64) -> Vec<f64> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..n)
            .map(|_| {
                let (u1, u2) = (1.0 - rng.f64(), rng.f64());
                mu + sigma * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
            })
            .collect()
    }

    #[test]
    fn percentiles_of_known_distributions() {
        // Uniform 0..1: the q quantile is q.
        let mut rng = fastrand::Rng::with_seed(1);
        let u: Vec<f64> = (0..100_000).map(|_| rng.f64()).collect();
        for q in [0.1, 0.5, 0.9, 0.99] {
            assert!((percentile(&u, q).unwrap() - q).abs() < 0.01, "q={q}");
        }
        // Normal(10, 2): median 10, p90 = 10 + 1.2816 * 2.
        let n = normals(100_000, 10.0, 2.0, 2);
        assert!((percentile(&n, 0.5).unwrap() - 10.0).abs() < 0.03);
        assert!((percentile(&n, 0.9).unwrap() - 12.563).abs() < 0.05);
    }

    #[test]
    fn bootstrap_interval_of_a_mean_matches_theory() {
        // The mean of 400 draws of Normal(100, 10) has standard error 0.5: the 95% interval is
        // about ±0.98 wide around the sample mean, and covers the true mean.
        let v = normals(400, 100.0, 10.0, 3);
        let e = bootstrap(&v, |x| mean(x).unwrap()).unwrap();
        assert_eq!(e.n, 400);
        assert!(e.lo < e.value && e.value < e.hi);
        assert!(e.lo < 100.0 && 100.0 < e.hi, "{e:?}");
        let half = (e.hi - e.lo) / 2.0;
        assert!((half - 0.98).abs() < 0.15, "half width {half}");
    }

    #[test]
    fn intervals_of_four_runs_cover_the_true_value_95_times_in_100() {
        // Many samples of 4 runs, as the quick suite repeats: the interval of the mean holds the
        // true mean in about 95% of them, and so does the paired ratio's its true ratio. The
        // draws' own 2.5th–97.5th percentiles (the interval before) held it about 4 times in 5.
        let trials = 1_000;
        let (mut mean_hits, mut ratio_hits, mut unpaired_hits, mut percentile_hits) = (0, 0, 0, 0);
        for t in 0..trials {
            let v = normals(4, 100.0, 10.0, 1_000 + t);
            let e = bootstrap(&v, |x| mean(x).unwrap()).unwrap();
            mean_hits += usize::from(e.lo < 100.0 && 100.0 < e.hi);
            // The same draws, read as percentiles.
            let mut rng = fastrand::Rng::with_seed(BOOTSTRAP_SEED);
            let mut buf = [0.0; 4];
            let draws: Vec<f64> = (0..2_000)
                .map(|_| {
                    resample(&mut rng, &v, &mut buf);
                    mean(&buf).unwrap()
                })
                .collect();
            let (lo, hi) = (
                percentile(&draws, 0.025).unwrap(),
                percentile(&draws, 0.975).unwrap(),
            );
            percentile_hits += usize::from(lo < 100.0 && 100.0 < hi);
            // A variant costing 2.5× a baseline whose runs drift together by ±10%, each side
            // with 4% noise of its own.
            let drift = normals(4, 1.0, 0.1, 50_000 + t);
            let na = normals(4, 1.0, 0.04, 60_000 + t);
            let nb = normals(4, 1.0, 0.04, 70_000 + t);
            let a: Vec<f64> = (0..4).map(|i| 25.0 * drift[i] * na[i]).collect();
            let b: Vec<f64> = (0..4).map(|i| 10.0 * drift[i] * nb[i]).collect();
            let r = ratio_of_means(&a, &b, true).unwrap();
            ratio_hits += usize::from(r.lo < 2.5 && 2.5 < r.hi);
            // Two runs of 4 repetitions each, compared (`wasmlab compare`): unpaired.
            let u = ratio_of_means(
                &normals(4, 25.0, 1.0, 80_000 + t),
                &normals(4, 10.0, 0.6, 90_000 + t),
                false,
            )
            .unwrap();
            unpaired_hits += usize::from(u.lo < 2.5 && 2.5 < u.hi);
        }
        let share = |hits: usize| hits as f64 / trials as f64;
        assert!(
            (0.93..=0.975).contains(&share(mean_hits)),
            "mean {}",
            share(mean_hits)
        );
        assert!(
            (0.93..=0.975).contains(&share(ratio_hits)),
            "ratio {}",
            share(ratio_hits)
        );
        // Welch's on resampled sides errs a little to the wide side (97% here).
        assert!(
            (0.93..=0.985).contains(&share(unpaired_hits)),
            "unpaired {}",
            share(unpaired_hits)
        );
        assert!(
            share(percentile_hits) < 0.85,
            "percentiles {}",
            share(percentile_hits)
        );
    }

    #[test]
    fn t_quantiles() {
        for (df, t) in [(1.0, 12.706), (3.0, 3.182), (9.0, 2.262), (1_000.0, 1.962)] {
            assert!((t_975(df) - t).abs() < 1e-3, "{df}: {}", t_975(df));
        }
        // One run: a value, no spread.
        let one = bootstrap(&[5.0], |x| mean(x).unwrap()).unwrap();
        assert_eq!((one.lo, one.hi, one.n), (5.0, 5.0, 1));
        // Counts never get a negative lower end; a difference may.
        let counts = bootstrap(&[0.0, 0.0, 0.0, 4.0], |x| mean(x).unwrap()).unwrap();
        assert_eq!(counts.lo, 0.0);
        let diffs = bootstrap(&[-1.0, 1.0, -2.0, 2.5], |x| mean(x).unwrap()).unwrap();
        assert!(diffs.lo < -1.0 && diffs.hi > 1.0, "{diffs:?}");
    }

    #[test]
    fn ratio_intervals() {
        // b is exactly twice a in every run: the paired ratio is 0.5 with no spread at all,
        // because run-to-run drift is shared.
        let a = [10.0, 20.0, 30.0, 40.0];
        let b = [20.0, 40.0, 60.0, 80.0];
        let p = ratio_of_means(&a, &b, true).unwrap();
        assert!(
            (p.value - 0.5).abs() < 1e-12 && (p.hi - p.lo).abs() < 1e-12,
            "{p:?}"
        );
        // Unpaired, the same numbers leave a wide interval that still holds 0.5.
        let u = ratio_of_means(&a, &b, false).unwrap();
        assert!(u.lo < 0.5 && 0.5 < u.hi && u.hi - u.lo > 0.3, "{u:?}");
        // Two clearly different samples: the interval excludes 1.
        let x = normals(30, 100.0, 5.0, 4);
        let y = normals(30, 80.0, 5.0, 5);
        let r = ratio_of_means(&y, &x, false).unwrap();
        assert!(r.excludes(1.0) && (r.value - 0.8).abs() < 0.03, "{r:?}");
        // Same distribution: not significant.
        let z = normals(30, 100.0, 5.0, 6);
        assert!(!ratio_of_means(&z, &x, false).unwrap().excludes(1.0));
        assert!(ratio_of_means(&a, &[0.0], false).is_none());
        assert!(ratio_of_means(&a, &b[..2], true).is_none());
        // One run has no interval, so it is never shown as significant.
        let one = ratio_of_means(&[50.0], &[100.0], true).unwrap();
        assert!(
            (one.value - 0.5).abs() < 1e-12 && !one.excludes(1.0),
            "{one:?}"
        );
    }

    #[test]
    fn steins_rule_adds_runs_by_the_square_of_the_width_over_the_target() {
        // Narrow enough: nothing added.
        assert_eq!(stein_total(4, 0.03, 0.05, 12), 4);
        assert_eq!(stein_total(4, 0.05, 0.05, 12), 4);
        // ±8.1% after 4 → 4·(ln 1.081 / ln 1.05)² = 10.2 → 11; ±6% → 5.8 → 6.
        assert_eq!(stein_total(4, 0.081, 0.05, 12), 11);
        assert_eq!(stein_total(4, 0.06, 0.05, 12), 6);
        // Capped at the most allowed, and never below the first stage.
        assert_eq!(stein_total(4, 0.20, 0.05, 12), 12);
        assert_eq!(stein_total(4, 0.081, 0.05, 4), 4);
        assert_eq!(stein_total(4, f64::NAN, 0.05, 12), 4);
        // The rule holds what it promises: with the first stage's t and spread, the total's
        // half-width is the target (to rounding up).
        for (first, w) in [(3u32, 0.12), (4, 0.081), (6, 0.07), (4, 0.051)] {
            let n = stein_total(first, w, 0.05, 1000);
            let h = (1.0 + w).ln() * (f64::from(first) / f64::from(n)).sqrt();
            assert!(h <= (1.05f64).ln() + 1e-12, "{first} {w} → {n}");
            let fewer = (1.0 + w).ln() * (f64::from(first) / f64::from(n - 1)).sqrt();
            assert!(
                n == first || fewer > (1.05f64).ln(),
                "{first} {w} → {n}: one fewer would do"
            );
        }
    }

    #[test]
    fn paired_ratios_use_the_repetitions_both_sides_have() {
        let a = [(0, 10.0), (1, 20.0), (2, 99.0)];
        let b = [(1, 40.0), (0, 20.0)];
        let r = paired_ratio(&a, &b).unwrap();
        assert!((r.value - 0.5).abs() < 1e-12 && r.n == 2, "{r:?}");
        assert!(paired_ratio(&a, &[]).is_none());
    }

    #[test]
    fn relative_half_width_is_symmetric_in_ratio() {
        let e = |value: f64, lo: f64, hi: f64, n: usize| Estimate { value, lo, hi, n };
        // 2.0 [1.6–2.5]: ×/÷ 1.25 around 2, so ±25%; its inverse just as wide.
        let r = e(2.0, 1.6, 2.5, 4);
        assert!((r.relative_half_width().unwrap() - 0.25).abs() < 1e-12);
        let inv = r.inverse().unwrap().relative_half_width().unwrap();
        assert!((inv - 0.25).abs() < 1e-12);
        assert_eq!(e(3.0, 3.0, 3.0, 4).relative_half_width(), Some(0.0));
        // No interval, or an end at zero: no width to give.
        assert_eq!(e(3.0, 3.0, 3.0, 1).relative_half_width(), None);
        assert_eq!(e(1.0, 0.0, 2.0, 4).relative_half_width(), None);
    }
}
