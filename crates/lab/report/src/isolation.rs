//! The answer's first lines: what each isolation model costs (a fresh instance per request,
//! recycled, shared, a component, a CLI process, a container...), a sentence each, from the
//! model's cheapest variant at equal load on the run's main workload: how small the cost of that
//! model can be made here. The terminal, summary.md and report.html say the same.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::{BASELINE, Cost};
use wasmlab_analysis::stats::Estimate;
use wasmlab_model::variant::{Catalog, Isolation};

use crate::format::{fmt_rps, fmt_us, times};
use crate::yours::signed_us;

/// The workload the answer leads with, and its costs: the suite's first with a cost at equal load.
pub(crate) fn main_workload(a: &ServerAnalysis) -> Option<(&str, Vec<Cost>)> {
    a.workloads.iter().find_map(|w| {
        let costs = a.costs(w);
        costs
            .iter()
            .any(|c| c.equal_load.is_some())
            .then_some((w.as_str(), costs))
    })
}

/// The isolation model of `variant`, as its spec in the run says; for wasmlab's own variants in
/// a run recorded before specs had one, as the built-in file of that name says. None for a user's
/// component in a host: its own sentence answers for it (`crate::yours`).
fn model_of(a: &ServerAnalysis, variant: &str) -> Option<Isolation> {
    static BUILTIN: OnceLock<Catalog> = OnceLock::new();
    let spec = a.info.variant_specs.iter().find(|s| s.name == variant)?;
    if spec.component.is_some() {
        return None;
    }
    spec.isolation.or_else(|| {
        (spec.family != "yours")
            .then(|| {
                BUILTIN
                    .get_or_init(Catalog::builtin)
                    .find(variant)
                    .ok()?
                    .isolation
            })
            .flatten()
    })
}

/// The lead line and a sentence per isolation model, in the models' order, then one per variant
/// that adds Wasm to another's path (`adds_to`); None without a cost at equal load of any
/// variant that has a model.
pub(crate) fn answer(a: &ServerAnalysis) -> Option<(String, Vec<String>)> {
    let (w, costs) = main_workload(a)?;
    let mut cheapest: BTreeMap<Isolation, (&str, f64, Estimate)> = BTreeMap::new();
    for c in &costs {
        let Some((rate, e)) = c.equal_load else {
            continue;
        };
        let Some(model) = model_of(a, &c.variant) else {
            continue;
        };
        let entry = cheapest.entry(model).or_insert((&c.variant, rate, e));
        if cheaper(a, w, (&c.variant, rate), (entry.0, entry.1)) {
            *entry = (&c.variant, rate, e);
        }
    }
    if cheapest.is_empty() {
        return None;
    }
    let lead = format!(
        "On {w}, what each way of keeping requests apart costs, in CPU per request against \
         {BASELINE}'s at the same rate (its cheapest variant here, with the 95% interval):"
    );
    let mut sentences: Vec<String> = cheapest
        .into_iter()
        .map(|(model, (v, rate, e))| {
            let phrase = model.phrase();
            let mut first = phrase.chars();
            let capital: String = first
                .next()
                .into_iter()
                .flat_map(char::to_uppercase)
                .collect();
            format!(
                "{capital}{} ({v}): {} {BASELINE}'s CPU at {} req/s.",
                first.as_str(),
                times(&e),
                fmt_rps(rate)
            )
        })
        .collect();
    sentences.extend(additions(a, w));
    sentences.extend(beside_others(a, w));
    Some((lead, sentences))
}

/// Each variant set beside others (its `compare_with`) on `w`, at the highest equal-load rate
/// it and at least one of them were measured at: `fastly-viceroy: 5.21× [4.90–5.53] native's
/// CPU at 8,000 req/s, against wasmtime-pooled 1.74× [1.66–1.83] and component-pooled 3.10×
/// [2.95–3.24] at the same rate.`
fn beside_others(a: &ServerAnalysis, w: &str) -> Vec<String> {
    let ratio = |v: &str, rate: f64| {
        a.equal_load_at(w, rate)
            .into_iter()
            .find(|p| p.variant == v)
            .and_then(|p| p.cost_ratio)
    };
    let rates = a.equal_load_rates(w);
    a.variants
        .iter()
        .filter_map(|v| a.info.variant_specs.iter().find(|s| &s.name == v))
        .filter(|s| !s.compare_with.is_empty())
        .filter_map(|s| {
            let (rate, mine, others) = rates.iter().rev().find_map(|&rate| {
                let mine = ratio(&s.name, rate)?;
                let others: Vec<String> = s
                    .compare_with
                    .iter()
                    .filter_map(|o| Some(format!("{o} {}", times(&ratio(o, rate)?))))
                    .collect();
                (!others.is_empty()).then_some((rate, mine, others))
            })?;
            let others = match others.split_last() {
                Some((last, [])) => last.clone(),
                Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                None => unreachable!("not empty"),
            };
            Some(format!(
                "{}: {} {BASELINE}'s CPU at {} req/s, against {others} at the same rate.",
                s.name,
                times(&mine),
                fmt_rps(rate)
            ))
        })
        .collect()
}

/// What each variant that adds Wasm to another's path costs over it on `w`, at the highest rate
/// both kept up with: `envoy-wasm-v8 adds 29.4 µs [27.0–31.8] of CPU to each request over
/// envoy-native (42.6 against 13.2 µs, 3.23×) at 20,000 req/s.`
fn additions(a: &ServerAnalysis, w: &str) -> Vec<String> {
    a.additions
        .iter()
        .filter(|h| h.workload == w)
        .map(|h| match (h.adds_us, h.cpu_us, h.floor_cpu_us, h.rate) {
            (Some(d), Some(mine), Some(theirs), Some(rate)) => format!(
                "{} adds {} µs of CPU to each request over {} ({} against {} µs, {:.2}×) at {} req/s.",
                h.variant,
                signed_us(&d),
                h.floor,
                fmt_us(mine.value),
                fmt_us(theirs.value),
                mine.value / theirs.value,
                fmt_rps(rate)
            ),
            _ => format!(
                "What {} adds over {}: not measured ({}).",
                h.variant,
                h.floor,
                h.note.as_deref().unwrap_or("no equal-load rate")
            ),
        })
        .collect()
}

/// Whether variant `x` costs less than `y` on `w`, each given with the highest equal-load rate
/// it kept up with: compared at the highest rate both have a multiple of native's at, since
/// native's CPU per request falls as its rate rises and multiples at different rates do not rank
/// variants; without a shared rate, the one that kept up with the higher rate (on the same CPUs,
/// the one that does less a request).
fn cheaper(a: &ServerAnalysis, w: &str, x: (&str, f64), y: (&str, f64)) -> bool {
    let ratio = |v: &str, rate: f64| {
        a.equal_load_at(w, rate)
            .into_iter()
            .find(|p| p.variant == v)
            .and_then(|p| p.cost_ratio)
    };
    let shared = a
        .equal_load_rates(w)
        .into_iter()
        .rev()
        .find_map(|rate| Some((ratio(x.0, rate)?, ratio(y.0, rate)?)));
    match shared {
        Some((rx, ry)) => rx.value < ry.value,
        None => x.1 > y.1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cost ratio of `value`, ±10%, from two runs.
    fn ratio(value: f64) -> Estimate {
        Estimate {
            value,
            lo: value * 0.9,
            hi: value * 1.1,
            n: 2,
        }
    }

    #[test]
    fn a_sentence_per_model_from_its_cheapest_variant() {
        let mut a = crate::tests::analysis();
        let (w, costs) = main_workload(&a).unwrap();
        let (w, measured) = (w.to_owned(), costs[0].variant.clone());
        // Without a model, no sentence.
        assert!(answer(&a).is_none());
        let mut spec = crate::tests::spec(&measured);
        a.info.variant_specs.push(spec.clone());
        assert!(answer(&a).is_none());
        spec.isolation = Some(Isolation::Recycled);
        a.info.variant_specs = vec![spec];
        let (lead, said) = answer(&a).unwrap();
        assert!(lead.starts_with(&format!("On {w}, ")), "{lead}");
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with(&format!(
                "An instance reset to a fresh one's state after each request ({measured}): "
            )) && said[0].ends_with("× native's CPU at 2,000 req/s."),
            "{said:?}"
        );
        // A user's component in a host is not one of wasmlab's models.
        for s in &mut a.info.variant_specs {
            if s.name == measured {
                s.component = Some("/mine.wasm".into());
            }
        }
        assert!(answer(&a).is_none());
    }

    /// A model's cheapest variant is the one cheaper at a rate both kept up with, not the one with
    /// the lower multiple at its own highest rate: native's CPU per request falls as its rate
    /// rises, so a variant that keeps up only with a lower rate has the lower multiple there.
    #[test]
    fn variants_of_a_model_are_ranked_at_a_shared_rate() {
        let mut a = crate::tests::analysis();
        let (w, costs) = main_workload(&a).unwrap();
        let w = w.to_owned();
        let fast = costs[0].variant.clone();
        let rates = a.equal_load_rates(&w);
        let (low, high) = (rates[0], *rates.last().unwrap());
        assert!(low < high, "{rates:?}");
        // The slow variant: measured only at the lower rate, where it costs more than the fast
        // one, though less than the fast one does at the higher rate.
        let mut slow_points = Vec::new();
        for p in &mut a.equal_load {
            if p.variant == fast && p.workload == w {
                p.cost_ratio = Some(ratio(if p.rate == low { 1.5 } else { 2.0 }));
                if p.rate == low {
                    let mut slow = p.clone();
                    slow.variant = "slow".into();
                    slow.cost_ratio = Some(ratio(1.8));
                    slow_points.push(slow);
                }
            }
        }
        a.equal_load.extend(slow_points);
        a.variants.push("slow".into());
        let mut specs = vec![crate::tests::spec(&fast), crate::tests::spec("slow")];
        for s in &mut specs {
            s.isolation = Some(Isolation::Fresh);
        }
        a.info.variant_specs = specs;
        let (_, said) = answer(&a).unwrap();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains(&format!("({fast}): 2.00×")), "{said:?}");
        // Without a rate in common, the one that kept up with the higher rate.
        a.equal_load
            .retain(|p| !(p.variant == fast && p.rate == low));
        let (_, said) = answer(&a).unwrap();
        assert!(said[0].contains(&format!("({fast}): ")), "{said:?}");
    }

    /// A variant set beside others (`compare_with`): a sentence at the highest rate it and one of
    /// them share, naming those measured there, even when another variant is its model's
    /// cheapest; none where it shares no rate with any of them.
    #[test]
    fn a_variant_set_beside_others_is_said_at_a_rate_they_share() {
        let mut a = crate::tests::analysis();
        let (w, costs) = main_workload(&a).unwrap();
        let w = w.to_owned();
        let base = costs[0].variant.clone();
        let rates = a.equal_load_rates(&w);
        let (low, high) = (rates[0], *rates.last().unwrap());
        // viceroy measured at both rates; the gateway's component only at the lower one.
        let mut added = Vec::new();
        for p in &a.equal_load {
            if p.variant == base && p.workload == w {
                let mut v = p.clone();
                v.variant = "viceroy".into();
                v.cost_ratio = Some(ratio(if p.rate == low { 5.0 } else { 4.0 }));
                added.push(v);
                if p.rate == low {
                    let mut c = p.clone();
                    c.variant = "component".into();
                    c.cost_ratio = Some(ratio(3.0));
                    added.push(c);
                }
            }
        }
        a.equal_load.extend(added);
        a.variants.extend(["viceroy".into(), "component".into()]);
        let mut viceroy = crate::tests::spec("viceroy");
        viceroy.compare_with = vec![base.clone(), "component".into(), "absent".into()];
        let mut others = vec![crate::tests::spec(&base), crate::tests::spec("component")];
        for s in &mut others {
            s.isolation = Some(Isolation::Fresh);
        }
        others.push(viceroy);
        a.info.variant_specs = others;
        let said_of_viceroy = |a: &ServerAnalysis| {
            let (_, said) = answer(a).unwrap();
            said.into_iter().find(|l| l.starts_with("viceroy: "))
        };
        let line = said_of_viceroy(&a).expect("said");
        // At the higher rate: the base variant alone was measured there beside it.
        assert!(
            line.starts_with(&format!(
                "viceroy: 4.00× [3.60–4.40] native's CPU at {} req/s, against {base} ",
                crate::format::fmt_rps(high)
            )) && !line.contains("component")
                && line.ends_with(" at the same rate."),
            "{line}"
        );
        // Without the base at the higher rate: the lower one, both named.
        a.equal_load
            .retain(|p| !(p.variant == base && p.rate == high));
        let line = said_of_viceroy(&a).expect("said");
        assert!(
            line.contains(&format!(
                "5.00× [4.50–5.50] native's CPU at {} req/s",
                crate::format::fmt_rps(low)
            )) && line.contains(&format!("against {base} "))
                && line.contains(" and component 3.00× [2.70–3.30] at the same rate."),
            "{line}"
        );
        // Nothing in common: no sentence.
        a.equal_load
            .retain(|p| !(p.variant == "viceroy" && p.rate == low));
        assert_eq!(said_of_viceroy(&a), None);
    }

    /// A variant that adds Wasm to another's path: a sentence after the models', what it adds in
    /// µs and as a multiple at the rate both kept up with; without that rate, why not.
    #[test]
    fn what_a_variant_adds_to_its_host_s_path_is_said_after_the_models() {
        let mut a = crate::tests::analysis();
        let (w, costs) = main_workload(&a).unwrap();
        let (w, measured) = (w.to_owned(), costs[0].variant.clone());
        let mut spec = crate::tests::spec(&measured);
        spec.isolation = Some(Isolation::Shared);
        a.info.variant_specs = vec![spec];
        let est = |value: f64, lo: f64, hi: f64| Estimate {
            value,
            lo,
            hi,
            n: 4,
        };
        let cost = |workload: &str| wasmlab_analysis::servers::HandlerCost {
            variant: "envoy-wasm-v8".into(),
            floor: "envoy-native".into(),
            workload: workload.into(),
            rate: Some(20_000.0),
            cpu_us: Some(est(43.2, 40.0, 46.0)),
            floor_cpu_us: Some(est(32.4, 30.0, 35.0)),
            adds_us: Some(est(10.8, 7.9, 14.7)),
            over_native: None,
            note: None,
        };
        a.additions = vec![cost(&w), cost("another-workload")];
        let (_, said) = answer(&a).unwrap();
        assert_eq!(said.len(), 2, "{said:?}");
        assert_eq!(
            said[1],
            "envoy-wasm-v8 adds +10.80 [7.900–14.70] µs of CPU to each request over envoy-native \
             (43.20 against 32.40 µs, 1.33×) at 20,000 req/s."
        );
        a.additions = vec![wasmlab_analysis::servers::HandlerCost {
            adds_us: None,
            floor_cpu_us: None,
            note: Some("its floor (envoy-native) not measured at equal load on hello".into()),
            ..cost(&w)
        }];
        let (_, said) = answer(&a).unwrap();
        assert_eq!(
            said[1],
            "What envoy-wasm-v8 adds over envoy-native: not measured (its floor (envoy-native) \
             not measured at equal load on hello)."
        );
    }

    /// A variant's unserved workloads are said where its cells are empty.
    #[test]
    fn what_a_variant_does_not_serve_is_said() {
        let mut a = crate::tests::analysis();
        let v = a.variants[0].clone();
        let w = a.workloads[0].clone();
        let mut spec = crate::tests::spec(&v);
        spec.unserved = [
            (w.clone(), "no way to".to_owned()),
            ("elsewhere".into(), "x".into()),
        ]
        .into();
        a.info.variant_specs = vec![spec];
        assert_eq!(
            crate::notes::unserved(&a),
            [format!(
                "{v} does not serve {w} (no way to), so its cells there are empty."
            )]
        );
    }
}
