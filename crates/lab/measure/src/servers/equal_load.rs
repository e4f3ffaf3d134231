//! Equal load: the cells at each rate a variant is offered, the probe of its capacity when it is
//! verified, and the rates chosen from those capacities, recorded and said.
//!
//! Where a workload's equal-load rates come from when its suite names none: shares of the
//! variants' capacities, each probed when the variant is verified, or, where its probe agrees
//! with it, an earlier run's capacity, so that two runs offer the variant the same rates. CPU
//! per request depends on the rate (most where a server is far from busy), so a rate set afresh
//! from a probe that moved by 15% moved the figure by as much (docs/method.md, "Rates kept
//! from the last run").

use std::time::Duration;

use wasmlab_model::run::{EqualLoadRates, KeptCapacities, ServerRunInfo};
use wasmlab_model::sample::{Kind, rate_label};
use wasmlab_model::suite::ServerSuite;
use wasmlab_model::variant::Protocol;
use wasmlab_record::{Recorder, Servers};

use super::ServerRun;
use super::cells::{Planned, load_config};
use crate::launch::Running;
use crate::requests::Workloads;

/// How far this run's probe may read from an earlier run's capacity for that capacity to be
/// kept: from 20% below it to 50% above. Within that, a rate set at 60% of the earlier capacity
/// is 40–75% of the capacity probed now, still a load the server carries with room to spare;
/// beyond it, the variant or the machine changed, and its rates are set afresh.
const KEEP_BELOW: f64 = 0.8;
const KEEP_ABOVE: f64 = 1.5;

/// A workload's rates from this run's `probed` capacities (variant, req/s), each replaced by the
/// `earlier` run's (its id and capacities) where the probe agrees with it, then [`ladder`]. Also
/// the lines to say of each variant whose earlier capacity was not kept. None without a capacity.
pub(crate) fn choose(
    workload: &str,
    probed: Vec<(String, f64)>,
    earlier: Option<(&str, Vec<(String, f64)>)>,
    fractions: &[f64],
    common: bool,
) -> Option<(EqualLoadRates, Vec<String>)> {
    let mut capacities = probed.clone();
    let mut kept = Vec::new();
    let mut said = Vec::new();
    if let Some((run_id, earlier)) = &earlier {
        for (variant, cap) in &mut capacities {
            let Some((_, before)) = earlier.iter().find(|(v, _)| v == variant) else {
                continue;
            };
            let ratio = *cap / before;
            if (KEEP_BELOW..=KEEP_ABOVE).contains(&ratio) {
                *cap = *before;
                kept.push((variant.clone(), *before));
            } else {
                said.push(format!(
                    "{workload}: {variant}'s rates set afresh: probed at {} req/s, {:+.0}% from \
                     run {run_id}'s {} (kept only from 20% below to 50% above)",
                    rate_label(*cap),
                    (ratio - 1.0) * 100.0,
                    rate_label(*before),
                ));
            }
        }
    }
    let mut e = ladder(workload, capacities, fractions, common)?;
    e.probed = probed;
    if let (Some((run_id, _)), false) = (&earlier, kept.is_empty()) {
        e.kept = Some(KeptCapacities {
            run_id: (*run_id).to_owned(),
            capacities: kept,
        });
    }
    Some((e, said))
}

/// A workload's rates from the capacities `probed` (variant, req/s): each variant offered
/// `fractions` of the lower of its capacity and native's, each rounded down to two significant
/// digits ([`round_down`]), native every such rate, and with `common` every variant the lowest.
/// None without a capacity.
pub(crate) fn ladder(
    workload: &str,
    probed: Vec<(String, f64)>,
    fractions: &[f64],
    common: bool,
) -> Option<EqualLoadRates> {
    let slowest = probed.iter().min_by(|a, b| a.1.total_cmp(&b.1)).cloned()?;
    let native = probed
        .iter()
        .find(|(v, _)| v == wasmlab_model::variant::BASELINE)
        .map(|(_, c)| *c);
    let own = |cap: f64| -> Vec<f64> {
        let cap = native.map_or(cap, |n| n.min(cap));
        fractions
            .iter()
            .map(|f| round_down(cap * f))
            .filter(|r| *r > 0.0)
            .collect()
    };
    let ladder = sorted(probed.iter().flat_map(|(_, c)| own(*c)).collect());
    let offered = probed
        .iter()
        .map(|(v, cap)| {
            let mut mine: Vec<f64> = if v == wasmlab_model::variant::BASELINE {
                ladder.clone()
            } else {
                own(*cap)
            };
            if common {
                mine.push(ladder[0]);
            }
            (v.clone(), sorted(mine))
        })
        .collect();
    Some(EqualLoadRates {
        workload: workload.to_owned(),
        rates: ladder,
        offered,
        slowest: Some(slowest),
        probed,
        kept: None,
    })
}

/// Each variant running a user's component and its host's floor (`pairs`: (variant, floor)):
/// the one with the higher rates is offered the other's too, so that what the user's handler adds
/// over the floor is read at the same loads (CPU per request depends on the load as much as on
/// the handler), and neither is offered a rate set for the faster one.
pub(crate) fn share_with_floors(e: &mut EqualLoadRates, pairs: &[(String, String)]) {
    for (variant, floor) in pairs {
        let of = |e: &EqualLoadRates, v: &str| {
            e.offered
                .iter()
                .find(|(name, _)| name == v)
                .map(|(_, r)| r.clone())
        };
        let (Some(mine), Some(theirs)) = (of(e, variant), of(e, floor)) else {
            continue;
        };
        let top = |r: &[f64]| r.last().copied().unwrap_or(0.0);
        let (faster, slower_rates) = match top(&mine) >= top(&theirs) {
            true => (variant, theirs),
            false => (floor, mine),
        };
        for (name, rates) in &mut e.offered {
            if name == faster {
                *rates = sorted(rates.iter().copied().chain(slower_rates.clone()).collect());
            }
        }
    }
}

/// Ascending, without repeats.
pub(crate) fn sorted(mut rates: Vec<f64>) -> Vec<f64> {
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    rates
}

/// `v` rounded down to two significant digits (4,870 → 4,800; 62,400 → 62,000): readable, and a
/// capacity that moves a little between runs moves the rate as little (steps of 1, 2, 3 or 5 made
/// two runs compare a variant at 30,000 and at 50,000 req/s, and CPU per request depends on the
/// load).
fn round_down(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 0.0;
    }
    let unit = 10f64.powf(v.log10().floor() - 1.0);
    (v / unit * (1.0 + 1e-9)).floor() * unit
}

/// The equal-load cells of `workload` for variant `name`: one at each rate the run offers it.
pub(super) fn planned(
    suite: &ServerSuite,
    info: &ServerRunInfo,
    workload: &str,
    name: &str,
) -> Vec<Planned> {
    let Some(equal) = &suite.equal_load else {
        return Vec::new();
    };
    info.equal_load_rates(workload, name)
        .into_iter()
        .map(|rate| Planned {
            rate: Some(rate),
            ..Planned::new(
                Kind::EqualLoad,
                workload,
                equal.connections,
                equal.duration_secs,
                equal.warmup_secs,
            )
        })
        .collect()
}

impl ServerRun<'_> {
    /// Each equal-load workload's rates: the suite's, offered to every variant; else chosen from
    /// the capacities the probes measured among the variants still in the run, or an earlier
    /// run's where they agree (see [`choose`]). Recorded in run.json and said.
    pub(super) fn choose_equal_load_rates(
        &mut self,
        probed: &[(String, String, f64)],
    ) -> anyhow::Result<()> {
        let Some(equal) = &self.suite.equal_load else {
            return Ok(());
        };
        for line in &self.plan.earlier_rates_said {
            self.rec.say(line.clone());
        }
        if let Some(earlier) = &self.plan.earlier_rates {
            self.rec.say(format!(
                "equal load: each variant's capacity kept from run {} ({}) where this run's \
                 probe agrees with it, so that both runs offer it the same rates (--new-rates: \
                 from this run's probes alone)",
                earlier.run_id, earlier.found
            ));
        }
        let mut chosen = Vec::new();
        for workload in self.suite.equal_load_workloads() {
            let mine: Vec<(String, f64)> = probed
                .iter()
                .filter(|(v, w, rps)| *w == workload && !self.rec.out(v) && *rps > 0.0)
                .map(|(v, _, rps)| (v.clone(), *rps))
                .collect();
            let e = match equal.rates.of(&workload) {
                Some(rates) => EqualLoadRates {
                    workload,
                    rates: sorted(rates.to_vec()),
                    offered: Vec::new(),
                    slowest: None,
                    probed: mine,
                    kept: None,
                },
                None => {
                    let earlier = self
                        .plan
                        .earlier_rates
                        .as_ref()
                        .map(|r| (r.run_id.as_str(), r.capacities(&workload)));
                    let chosen = choose(
                        &workload,
                        mine,
                        earlier,
                        &equal.fractions,
                        equal.common_rate,
                    );
                    let Some((e, said)) = chosen else {
                        if !self.rec.cancelled() {
                            self.rec.say(format!(
                                "equal load: no capacity measured for {workload}, so no rates"
                            ));
                        }
                        continue;
                    };
                    for line in said {
                        self.rec.say(format!("equal load: {line}"));
                    }
                    let mut e = e;
                    share_with_floors(&mut e, &self.floors());
                    e
                }
            };
            self.rec
                .say(format!("equal load: {} at {}", e.workload, e.describe()));
            chosen.push(e);
        }
        self.rec.info.equal_load = chosen;
        self.rec.save_info()
    }
}

/// A probe: after its warm-up, this many short closed loops, the highest req/s taken (a machine
/// disturbed while one ran only lowers it: on the 2-core VM one such 0.3 s probe read
/// component-pooled at 18,000 req/s where the others read 30,000–32,000, and halved its rates).
const PROBES: usize = 3;
const PROBE: Duration = Duration::from_millis(150);
const PROBE_WARMUP: Duration = Duration::from_millis(100);

/// The workloads whose equal-load rates are shares of a capacity rather than given: those a
/// variant's capacity is probed for when it is verified (none: nothing to probe).
pub(crate) fn probed_workloads(suite: &ServerSuite) -> Vec<String> {
    let Some(equal) = &suite.equal_load else {
        return Vec::new();
    };
    let mut workloads = suite.equal_load_workloads();
    workloads.retain(|w| equal.rates.of(w).is_none());
    workloads
}

/// A running variant's capacity for each workload whose equal-load rates are shares of its (and
/// native's) capacity: the highest req/s of [`PROBES`] short closed loops at the equal-load
/// connections. Empty when cancelled.
pub(crate) fn probe(
    lab: &mut Recorder<Servers>,
    suite: &ServerSuite,
    workloads: &Workloads,
    name: &str,
    running: &Running,
) -> anyhow::Result<Vec<(String, f64)>> {
    let Some(equal) = &suite.equal_load else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for workload in probed_workloads(suite) {
        if lab.cancelled() {
            return Ok(Vec::new());
        }
        lab.progress
            .set_message(format!("{name}: probing its capacity for {workload}"));
        let (connections, streams) = match running.protocol {
            Protocol::Http1 => (equal.connections, 1),
            Protocol::Http2 => suite.http2_split(equal.connections),
        };
        let requests = workloads.requests(&workload)?;
        let mut config = load_config(lab, suite, running, requests, connections, streams)?;
        config.duration = Some(PROBE_WARMUP);
        wasmlab_load::run(config.clone())?;
        config.duration = Some(PROBE);
        let mut highest: f64 = 0.0;
        for _ in 0..PROBES {
            highest = highest.max(wasmlab_load::run(config.clone())?.rps);
        }
        out.push((workload, highest));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_s_component_and_its_host_s_floor_are_offered_each_other_s_rates() {
        let probed = vec![
            ("native".to_owned(), 50_000.0),
            ("component-pooled".to_owned(), 30_000.0),
            ("mine-in-component-pooled".to_owned(), 10_000.0),
            ("other".to_owned(), 20_000.0),
        ];
        let mut e = ladder("root", probed, &[0.6], false).unwrap();
        share_with_floors(
            &mut e,
            &[("mine-in-component-pooled".into(), "component-pooled".into())],
        );
        let of = |v: &str| e.offered.iter().find(|(n, _)| n == v).unwrap().1.clone();
        assert_eq!(of("mine-in-component-pooled"), vec![6_000.0]);
        assert_eq!(of("component-pooled"), vec![6_000.0, 18_000.0]);
        assert_eq!(of("other"), vec![12_000.0]);
        assert_eq!(of("native"), vec![6_000.0, 12_000.0, 18_000.0, 30_000.0]);
    }

    #[test]
    fn each_variant_is_offered_shares_of_its_capacity_and_native_every_rate() {
        let probed = vec![
            ("native".to_owned(), 124_000.0),
            ("native-h2".to_owned(), 215_000.0),
            ("wasmtime-pooled".to_owned(), 75_000.0),
            ("wasmtime-shared".to_owned(), 113_000.0),
            ("wasmtime-recycled".to_owned(), 88_000.0),
            ("wasmtime-naive".to_owned(), 5_794.0),
        ];
        let e = ladder("hello", probed, &[0.6], true).unwrap();
        // 60% of each capacity, native's bounding the faster native-h2's, rounded down to two
        // digits: 3,476 → 3,400; 45,000; 52,800 → 52,000; 67,800 → 67,000; 74,400 → 74,000.
        assert_eq!(
            e.rates,
            vec![3_400.0, 45_000.0, 52_000.0, 67_000.0, 74_000.0]
        );
        let of = |v: &str| e.offered_to(v);
        assert_eq!(
            of("native"),
            vec![3_400.0, 45_000.0, 52_000.0, 67_000.0, 74_000.0]
        );
        assert_eq!(of("wasmtime-pooled"), vec![3_400.0, 45_000.0]);
        assert_eq!(of("wasmtime-recycled"), vec![3_400.0, 52_000.0]);
        assert_eq!(of("wasmtime-shared"), vec![3_400.0, 67_000.0]);
        assert_eq!(of("native-h2"), vec![3_400.0, 74_000.0]);
        assert_eq!(of("wasmtime-naive"), vec![3_400.0]);
        assert_eq!(of("not-probed"), Vec::<f64>::new());
        assert_eq!(e.slowest, Some(("wasmtime-naive".to_owned(), 5_794.0)));
        // Without the common rate, each its own; two fractions, two rates each.
        let e = ladder(
            "hello",
            vec![("native".into(), 100_000.0), ("x".into(), 10_000.0)],
            &[0.25, 0.5],
            false,
        )
        .unwrap();
        assert_eq!(e.rates, vec![2_500.0, 5_000.0, 25_000.0, 50_000.0]);
        assert_eq!(e.offered_to("x"), vec![2_500.0, 5_000.0]);
        assert!(ladder("hello", Vec::new(), &[0.5], true).is_none());
    }

    #[test]
    fn an_earlier_capacity_is_kept_where_this_runs_probe_agrees_with_it() {
        let cap = |v: &str, c: f64| (v.to_owned(), c);
        // This run's probes moved: native's by +27% (a generator-limited probe), pooled's by
        // -2%, naive's by +55% (as if the variant had changed), close's by -21%; new is new.
        let probed = vec![
            cap("native", 156_000.0),
            cap("wasmtime-pooled", 100_000.0),
            cap("wasmtime-naive", 9_000.0),
            cap("native-close", 23_600.0),
            cap("new", 40_000.0),
        ];
        let earlier = vec![
            cap("native", 123_000.0),
            cap("wasmtime-pooled", 102_000.0),
            cap("wasmtime-naive", 5_800.0),
            cap("native-close", 30_000.0),
        ];
        let (e, said) = choose(
            "hello",
            probed.clone(),
            Some(("20261128T163408Z", earlier.clone())),
            &[0.6],
            false,
        )
        .unwrap();
        // Kept within 20% below to 50% above, and the rates are those the earlier capacities
        // give: native's 73,800 → 73,000 bounds pooled's 61,200 → 61,000.
        let kept = e.kept.as_ref().unwrap();
        assert_eq!(kept.run_id, "20261128T163408Z");
        assert_eq!(kept.capacities, earlier[..2].to_vec());
        assert_eq!(e.offered_to("wasmtime-pooled"), vec![61_000.0]);
        assert_eq!(e.offered_to("native-close"), vec![14_000.0], "set afresh");
        assert_eq!(e.offered_to("wasmtime-naive"), vec![5_400.0], "set afresh");
        assert_eq!(e.offered_to("new"), vec![24_000.0]);
        assert_eq!(
            e.offered_to("native"),
            vec![5_400.0, 14_000.0, 24_000.0, 61_000.0, 73_000.0]
        );
        // The record keeps the probes as measured and gives the capacities the rates came from.
        assert_eq!(e.probed, probed);
        let used = e.capacities();
        assert_eq!(used[0], cap("native", 123_000.0));
        assert_eq!(used[2], cap("wasmtime-naive", 9_000.0));
        assert_eq!(e.slowest, Some(cap("wasmtime-naive", 9_000.0)));
        assert!(
            e.describe()
                .contains("2 of 5 kept from run 20261128T163408Z")
        );
        // Each capacity not kept is said, with how far the probe moved.
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].starts_with("hello: wasmtime-naive's rates set afresh: probed at 9000 req/s, +55% from run 20261128T163408Z's 5800"), "{}", said[0]);
        assert!(
            said[1].contains("native-close") && said[1].contains("-21%"),
            "{}",
            said[1]
        );
        // Without an earlier run, or with one that probed none of these, nothing is kept: the
        // rates are this run's probes'.
        let fresh = ladder("hello", probed.clone(), &[0.6], false).unwrap();
        let (alone, said) = choose("hello", probed.clone(), None, &[0.6], false).unwrap();
        assert_eq!(
            (alone.rates.clone(), alone.kept.clone()),
            (fresh.rates.clone(), None)
        );
        assert!(said.is_empty());
        let (other, _) = choose(
            "hello",
            probed,
            Some(("x", vec![cap("gone", 1.0)])),
            &[0.6],
            false,
        )
        .unwrap();
        assert_eq!((other.rates, other.kept), (fresh.rates, None));
    }

    #[test]
    fn rates_round_down_to_two_significant_digits() {
        assert_eq!(round_down(2_418.0), 2_400.0);
        assert_eq!(round_down(4_999.0), 4_900.0);
        assert_eq!(round_down(5_000.0), 5_000.0);
        assert_eq!(round_down(62_400.0), 62_000.0);
        assert_eq!(round_down(99.9), 99.0);
        assert_eq!(round_down(1_000.0), 1_000.0);
        assert_eq!(round_down(7.0), 7.0);
        assert!((round_down(0.372) - 0.37).abs() < 1e-12);
        assert_eq!(round_down(0.0), 0.0);
        // Never above the value it rounds.
        for v in [1.0, 9.99, 12.5, 99.0, 123_456.0, 3e-3] {
            assert!(round_down(v) <= v && round_down(v) > 0.89 * v, "{v}");
        }
        assert_eq!(sorted(vec![5.0, 1.0, 5.0]), vec![1.0, 5.0]);
    }
}
