//! What a user's component (`wasmlab run --component`) costs in each host: its CPU per request
//! beside the host's floor (the same host running wasmlab's minimal component) at the same
//! equal-load rate, the difference (what the user's handler adds there), and its ratio to
//! native's hello at that rate.

use serde::Serialize;
use wasmlab_model::run::ServerRunInfo;
use wasmlab_model::variant::VariantSpec;

use super::EqualLoadPoint;
use crate::stats::{Estimate, mean_ci};

/// One variant running the user's component, on one workload, against its host's floor.
#[derive(Debug, Clone, Serialize)]
pub struct HandlerCost {
    pub variant: String,
    /// The host's floor: the variant running wasmlab's own component in the same host.
    pub floor: String,
    pub workload: String,
    /// The highest equal-load rate at which both kept up, req/s; without its floor there, the
    /// highest the variant kept up with (`note` says why, and None where it kept up with none).
    pub rate: Option<f64>,
    /// CPU µs per request of the variant, and of the floor, at that rate.
    pub cpu_us: Option<Estimate>,
    pub floor_cpu_us: Option<Estimate>,
    /// The variant's CPU per request less the floor's, paired by repetition: what the user's
    /// handler adds in this host.
    pub adds_us: Option<Estimate>,
    /// The variant's CPU per request over native's at that rate.
    pub over_native: Option<Estimate>,
    pub note: Option<String>,
}

/// A [`HandlerCost`] for each measured variant with a floor (`floor_of` its spec: a user's
/// component's host floor, or the host path a variant adds Wasm to; `floor_is` says what it is
/// before its name, in a note), on each workload it was measured on at equal load, in the
/// analysis' order.
pub(super) fn handler_costs(
    info: &ServerRunInfo,
    variants: &[String],
    workloads: &[String],
    points: &[EqualLoadPoint],
    floor_of: fn(&VariantSpec) -> Option<&String>,
    floor_is: &str,
) -> Vec<HandlerCost> {
    let mut out = Vec::new();
    for v in variants {
        let Some(floor) = info
            .variant_specs
            .iter()
            .find(|s| &s.name == v)
            .and_then(|s| floor_of(s).cloned())
        else {
            continue;
        };
        for w in workloads {
            let at = |who: &str| -> Vec<&EqualLoadPoint> {
                points
                    .iter()
                    .filter(|p| p.variant == who && &p.workload == w && !p.cpu_runs.is_empty())
                    .collect()
            };
            if !points.iter().any(|p| &p.variant == v && &p.workload == w) {
                continue;
            }
            let (mine, theirs) = (at(v.as_str()), at(floor.as_str()));
            let both = mine
                .iter()
                .filter_map(|m| Some((*m, *theirs.iter().find(|t| t.rate == m.rate)?)))
                .max_by(|a, b| a.0.rate.total_cmp(&b.0.rate));
            let mut cost = HandlerCost {
                variant: v.clone(),
                floor: floor.clone(),
                workload: w.clone(),
                rate: None,
                cpu_us: None,
                floor_cpu_us: None,
                adds_us: None,
                over_native: None,
                note: None,
            };
            match both {
                Some((m, t)) => {
                    cost.rate = Some(m.rate);
                    cost.cpu_us = Some(m.cpu_us);
                    cost.floor_cpu_us = Some(t.cpu_us);
                    cost.adds_us = paired_difference(&m.cpu_runs, &t.cpu_runs);
                    cost.over_native = m.cost_ratio;
                }
                None => {
                    // Without its floor at that rate, the component's own figures still stand,
                    // at the highest rate it kept up with; only the difference is missing.
                    if let Some(m) = mine.iter().max_by(|a, b| a.rate.total_cmp(&b.rate)) {
                        cost.rate = Some(m.rate);
                        cost.cpu_us = Some(m.cpu_us);
                        cost.over_native = m.cost_ratio;
                    }
                    cost.note = Some(match (mine.is_empty(), theirs.is_empty()) {
                        (true, _) => format!("{v} kept up with no equal-load rate of {w}"),
                        (false, true) => {
                            format!(
                                "its floor ({floor_is}{floor}) not measured at equal load on {w}"
                            )
                        }
                        (false, false) => format!("{v} and {floor} kept up at no common rate"),
                    });
                }
            }
            out.push(cost);
        }
    }
    out
}

/// The mean of `a`'s values less `b`'s, paired by repetition, with its bootstrap 95% interval.
fn paired_difference(a: &[(u32, f64)], b: &[(u32, f64)]) -> Option<Estimate> {
    let d: Vec<f64> = a
        .iter()
        .filter_map(|(r, va)| Some(va - b.iter().find(|(rb, _)| rb == r)?.1))
        .collect();
    (!d.is_empty()).then(|| mean_ci(&d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_difference_is_paired_by_repetition() {
        let a = [(0, 30.0), (1, 32.0), (2, 31.0)];
        let b = [(1, 20.0), (0, 21.0), (3, 99.0)];
        let d = paired_difference(&a, &b).unwrap();
        assert_eq!(d.n, 2);
        assert!((d.value - 10.5).abs() < 1e-9, "{d:?}");
        assert!(paired_difference(&a, &[]).is_none());
    }
}
