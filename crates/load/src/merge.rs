//! Several generators' parts as one run: counts summed, histograms added (so every percentile is
//! the one a single histogram of all the samples gives), req/s counted over the interval every
//! part was running, and the parts that did not run together named.

use serde::{Deserialize, Serialize};

use crate::part::{Part, rfc3339, unix_ns};
use crate::report::{self, Shape, WorkerStats};
use wasmlab_load_data::{LoadReport, SATURATED_SHARE};

/// A part that ran together with the others for less than this share of its own run is named:
/// its load and theirs were not one load (a late start, a skewed clock, a short run).
pub const MIN_OVERLAP: f64 = 0.9;
/// A part that began more than this after the `--start-at` it was given began late.
pub const LATE_START_MS: f64 = 100.0;

/// The wall-clock interval all parts were running.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Interval {
    pub start: String,
    pub end: String,
    pub secs: f64,
}

/// One part as the merge saw it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartSummary {
    /// The file it came from (or the name it was given).
    pub name: String,
    pub host: String,
    pub started_at: String,
    pub ended_at: String,
    /// How long after the earliest part it began.
    pub offset_ms: f64,
    /// How long after its `--start-at` (and its warm-up, which follows it) its measured part
    /// began (absent when it was given none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_ms: Option<f64>,
    pub elapsed_secs: f64,
    /// The share of its own run inside the common interval.
    pub overlap: f64,
    pub connections: usize,
    pub responses: u64,
    pub errors: u64,
    /// Over its own run.
    pub rps: f64,
    /// Over the common interval (absent when there is none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rps_common: Option<f64>,
    pub p99_ms: f64,
    pub generator_cpu_secs: f64,
    pub generator_busy: f64,
    pub generator_saturated: bool,
}

/// The merge of several parts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Merged {
    /// The whole, as one run's report: counts and histograms of every part; `rps` and
    /// `elapsed_secs` over the common interval (over the union when there is none).
    pub report: LoadReport,
    pub common: Option<Interval>,
    pub parts: Vec<PartSummary>,
    /// The parts did not run together (too little overlap, a late start): what `--strict`
    /// refuses.
    pub warnings: Vec<String>,
    /// What else a reader should know (saturated generators, differing targets).
    pub notes: Vec<String>,
}

/// Merges `parts` (named for messages). Refuses an empty list and parts that cannot be one run
/// (HTTP/1.1 with HTTP/2, open loop with closed: their latencies mean different things).
pub fn merge(parts: &[(String, Part)]) -> anyhow::Result<Merged> {
    let Some((first_name, first)) = parts.first() else {
        anyhow::bail!("no parts to merge");
    };
    let r0 = &first.report;
    for (name, p) in &parts[1..] {
        let r = &p.report;
        anyhow::ensure!(
            r.http2 == r0.http2,
            "{name} used {} and {first_name} {}: not one load",
            protocol(r),
            protocol(r0)
        );
        anyhow::ensure!(
            r.open_loop.is_some() == r0.open_loop.is_some(),
            "{name} ran {} and {first_name} {}: their latencies mean different things (from the \
             intended send in the open loop), so they are not merged",
            pace(r),
            pace(r0)
        );
    }
    let spans: Vec<(i128, i128)> = parts
        .iter()
        .map(|(name, p)| p.span_ns().map_err(|e| anyhow::anyhow!("{name}: {e}")))
        .collect::<anyhow::Result<_>>()?;
    let earliest = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let (common_start, common_end) = (
        spans.iter().map(|s| s.0).max().unwrap_or(0),
        spans.iter().map(|s| s.1).min().unwrap_or(0),
    );
    let union_secs = secs(spans.iter().map(|s| s.1).max().unwrap_or(0) - earliest);
    let common_secs = secs(common_end - common_start);
    let common = (common_end > common_start).then(|| Interval {
        start: rfc3339_ns(common_start),
        end: rfc3339_ns(common_end),
        secs: common_secs,
    });

    let mut stats = WorkerStats::default();
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let mut summaries = Vec::new();
    let (mut threads, mut connections, mut rate) = (0, 0, 0.0);
    let (mut span, mut achieved) = (0.0, 0.0);
    let mut in_common = 0.0;
    for ((name, p), &(start, end)) in parts.iter().zip(&spans) {
        let r = &p.report;
        stats.add(&p.stats());
        threads += r.threads;
        connections += r.connections;
        rate += r.open_loop.map_or(0.0, |o| o.target_rate);
        achieved += r.open_loop.map_or(0.0, |o| o.achieved_rate);
        span += r.elapsed_secs * r.threads as f64;
        let own = secs(end - start);
        let counted = common
            .as_ref()
            .map(|_| responses_between(p, start, common_start, common_end));
        in_common += counted.unwrap_or(0.0);
        let overlap = match own > 0.0 {
            true => (common_secs.max(0.0) / own).min(1.0),
            false => 0.0,
        };
        let late_ms = p
            .generator
            .start_at
            .as_deref()
            .map(unix_ns)
            .transpose()
            .map_err(|e| anyhow::anyhow!("{name}: its start_at: {e}"))?
            .map(|at| (secs(start - at) - r.warm_up_secs.unwrap_or(0.0)) * 1e3);
        if overlap < MIN_OVERLAP {
            warnings.push(format!(
                "{name} ran together with the others for {:.0}% of its {own:.2} s (it began \
                 {:.0} ms after the first part): its load and theirs were not one load",
                overlap * 100.0,
                secs(start - earliest) * 1e3
            ));
        }
        if let Some(late) = late_ms.filter(|l| *l > LATE_START_MS) {
            warnings.push(format!(
                "{name} began {late:.0} ms after its --start-at {}",
                p.generator.start_at.as_deref().unwrap_or("")
            ));
        }
        if r.generator_saturated {
            notes.push(format!(
                "{name}'s generator was busy {:.0}% of its run (saturated at {:.0}%): the server \
                 may be faster than measured; add generators or threads",
                r.generator_busy * 100.0,
                SATURATED_SHARE * 100.0
            ));
        }
        if r.url != r0.url || r.method != r0.method {
            notes.push(format!(
                "{name} sent {} {} where {first_name} sent {} {}",
                r.method, r.url, r0.method, r0.url
            ));
        }
        summaries.push(PartSummary {
            name: name.clone(),
            host: p.generator.host.clone(),
            started_at: p.generator.started_at.clone(),
            ended_at: p.generator.ended_at.clone(),
            offset_ms: secs(start - earliest) * 1e3,
            late_ms,
            elapsed_secs: r.elapsed_secs,
            overlap,
            connections: r.connections,
            responses: r.responses,
            errors: r.errors.total(),
            rps: r.rps,
            rps_common: counted.map(|n| n / common_secs),
            p99_ms: r.latency_ms.p99,
            generator_cpu_secs: r.generator_cpu_secs,
            generator_busy: r.generator_busy,
            generator_saturated: r.generator_saturated,
        });
    }
    if common.is_none() && parts.len() > 1 {
        warnings.push(
            "the parts never ran at the same time: req/s below is the sum of each part's own, a \
             load no server saw at once"
                .into(),
        );
    }
    let all_spin = parts.iter().all(|(_, p)| p.report.generator_spin);
    let shape = Shape {
        url: r0.url.clone(),
        method: r0.method.clone(),
        connections,
        http2: r0.http2,
        streams: r0.streams,
        rate: r0.open_loop.map(|_| rate),
        duration: None,
        // Every part warmed up at least this long (none when one did not).
        warm_up: parts
            .iter()
            .map(|(_, p)| p.report.warm_up_secs)
            .collect::<Option<Vec<f64>>>()
            .and_then(|w| w.into_iter().reduce(f64::min))
            .map(std::time::Duration::from_secs_f64),
        spin: all_spin,
    };
    let idle = stats.idle_spin.as_secs_f64();
    let cpu = stats.cpu.as_secs_f64();
    let elapsed = common.as_ref().map_or(union_secs, |c| c.secs);
    let mut report = report::assemble(&shape, stats, elapsed, threads);
    report.generators = parts.len();
    report.rps = match &common {
        Some(c) => in_common / c.secs,
        None => summaries.iter().map(|s| s.rps).sum(),
    };
    report.generator_busy = report::busy_share(span, all_spin, cpu, idle);
    report.generator_saturated = summaries.iter().any(|s| s.generator_saturated);
    if let Some(o) = report.open_loop.as_mut() {
        o.achieved_rate = achieved;
    }
    Ok(Merged {
        report,
        common,
        parts: summaries,
        warnings,
        notes,
    })
}

/// The part's responses completed between `from` and `to` (Unix ns), counting a slot of its
/// timeline that straddles a bound by the share of the slot inside.
fn responses_between(p: &Part, start: i128, from: i128, to: i128) -> f64 {
    let tick = i128::from(p.timeline.tick_ms) * 1_000_000;
    let (a, b) = (from - start, to - start);
    p.timeline
        .responses
        .iter()
        .enumerate()
        .map(|(k, &n)| {
            let (lo, hi) = (k as i128 * tick, (k as i128 + 1) * tick);
            let inside = (hi.min(b) - lo.max(a)).max(0);
            n as f64 * inside as f64 / tick as f64
        })
        .sum()
}

fn secs(ns: i128) -> f64 {
    ns as f64 / 1e9
}

fn rfc3339_ns(ns: i128) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns.max(0) as u64);
    rfc3339(t)
}

fn protocol(r: &LoadReport) -> &'static str {
    if r.http2 { "HTTP/2" } else { "HTTP/1.1" }
}

fn pace(r: &LoadReport) -> &'static str {
    if r.open_loop.is_some() {
        "an open loop (--rate)"
    } else {
        "a closed loop"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::part::{FORMAT, Generator, Histograms, Timeline, VERSION};
    use proptest::prelude::*;
    use wasmlab_load_data::{histogram_buckets, new_histogram};

    const T0: i128 = 1_795_773_600_000_000_000;

    /// A part of `samples` (ns latencies) answered evenly over `secs` from `start` (Unix ns).
    fn part(samples: &[u64], start: i128, secs: f64) -> Part {
        let mut st = WorkerStats::default();
        let slots = ((secs * 10.0).ceil() as usize).max(1);
        st.timeline = vec![0; slots];
        for (i, &v) in samples.iter().enumerate() {
            st.latency.record(v).unwrap();
            st.responses += 1;
            st.ok += 1;
            st.by_status[200] += 1;
            st.timeline[i * slots / samples.len()] += 1;
        }
        let shape = Shape {
            url: "http://127.0.0.1:1/".into(),
            method: "GET".into(),
            connections: 2,
            http2: false,
            streams: 1,
            rate: None,
            duration: None,
            warm_up: None,
            spin: false,
        };
        let histograms = Histograms {
            latency: histogram_buckets(&st.latency),
            ..Histograms::default()
        };
        let timeline = Timeline {
            tick_ms: 100,
            responses: st.timeline.clone(),
        };
        Part {
            format: FORMAT.into(),
            version: VERSION,
            generator: Generator {
                host: "gen".into(),
                pid: 1,
                started_at: rfc3339_ns(start),
                ended_at: rfc3339_ns(start + (secs * 1e9) as i128),
                start_at: None,
                program: "test".into(),
            },
            report: report::assemble(&shape, st, secs, 1),
            histograms,
            timeline,
        }
    }

    fn named(parts: Vec<Part>) -> Vec<(String, Part)> {
        parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("part{i}.json"), p))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// However the samples are split among generators, the merged percentiles are those of
        /// one histogram holding them all (and survive the part's JSON).
        #[test]
        fn merged_percentiles_equal_one_histogram_of_every_sample(
            samples in prop::collection::vec(1u64..5_000_000_000, 1..400),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..5),
        ) {
            let mut bounds: Vec<usize> = cuts.iter().map(|c| c.index(samples.len())).collect();
            bounds.push(0);
            bounds.push(samples.len());
            bounds.sort_unstable();
            bounds.dedup();
            let parts: Vec<Part> = bounds
                .windows(2)
                .map(|w| part(&samples[w[0]..w[1]], T0, 1.0))
                .map(|p| Part::parse(&serde_json::to_string(&p).unwrap()).unwrap())
                .collect();
            let merged = merge(&named(parts)).unwrap();
            let mut all = new_histogram();
            for &v in &samples {
                all.record(v).unwrap();
            }
            let whole = crate::LatencyMs::from_histogram(&all);
            prop_assert_eq!(merged.report.latency_ms, whole);
            prop_assert_eq!(merged.report.responses, samples.len() as u64);
            prop_assert_eq!(merged.report.status_counts.get(&200).copied(), Some(samples.len() as u64));
        }
    }

    #[test]
    fn req_per_s_counts_the_interval_all_parts_ran() {
        // Two generators of 1,000 responses each over 2 s; the second began 1 s late.
        let samples = vec![1_000_000u64; 1_000];
        let a = part(&samples, T0, 2.0);
        let b = part(&samples, T0 + 1_000_000_000, 2.0);
        let m = merge(&named(vec![a.clone(), b])).unwrap();
        let common = m.common.as_ref().unwrap();
        assert!((common.secs - 1.0).abs() < 1e-9);
        // Over their common second each answered 500.
        assert!((m.report.rps - 1_000.0).abs() < 1e-6, "{}", m.report.rps);
        assert_eq!(m.report.responses, 2_000);
        assert_eq!(m.report.generators, 2);
        assert_eq!(m.report.connections, 4);
        assert_eq!(m.warnings.len(), 2, "{:?}", m.warnings);
        assert!(
            m.warnings.iter().all(|w| w.contains("50%")),
            "{:?}",
            m.warnings
        );
        assert!(m.warnings[1].contains("part1.json") && m.warnings[1].contains("1000 ms"));
        // Together the whole time: one load, no warning.
        let m = merge(&named(vec![a.clone(), a.clone()])).unwrap();
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
        assert!((m.report.rps - 1_000.0).abs() < 1e-6);
        // Never together: no common interval, said.
        let c = part(&samples, T0 + 5_000_000_000, 2.0);
        let m = merge(&named(vec![a, c])).unwrap();
        assert!(m.common.is_none());
        assert!(
            m.warnings
                .iter()
                .any(|w| w.contains("never ran at the same time"))
        );
    }

    #[test]
    fn a_late_start_is_named() {
        let samples = vec![1_000_000u64; 10];
        let mut p = part(&samples, T0 + 300_000_000, 1.0);
        p.generator.start_at = Some(rfc3339_ns(T0));
        let q = part(&samples, T0 + 300_000_000, 1.0);
        let m = merge(&named(vec![q, p])).unwrap();
        assert_eq!(m.parts[1].late_ms.map(|l| l.round()), Some(300.0));
        assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
        assert!(m.warnings[0].starts_with("part1.json began 300 ms after its --start-at"));
    }

    #[test]
    fn refuses_parts_that_are_not_one_load() {
        assert!(merge(&[]).unwrap_err().to_string().contains("no parts"));
        let samples = vec![1_000_000u64; 10];
        let a = part(&samples, T0, 1.0);
        let mut b = a.clone();
        b.report.http2 = true;
        let e = merge(&named(vec![a.clone(), b])).unwrap_err().to_string();
        assert!(e.contains("HTTP/2") && e.contains("not one load"), "{e}");
        let mut c = a.clone();
        c.report.open_loop = Some(Default::default());
        let e = merge(&named(vec![a, c])).unwrap_err().to_string();
        assert!(e.contains("open loop"), "{e}");
    }
}
