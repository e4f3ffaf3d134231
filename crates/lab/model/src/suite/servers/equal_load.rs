//! `[equal_load]`: the rates variants are offered so that each one's CPU per request is set
//! against native's at the same load, and their checks.

use serde::{Deserialize, Serialize};

use super::ServerSuite;

/// The `[equal_load]` table: the rates variants are offered (open loop, corrected for
/// coordinated omission), so that each one's CPU per request is set against native's at the same
/// load. By default a workload's rates come from the variants' capacities for it, which a short
/// closed-loop probe of every variant measures when it is verified: each variant is offered
/// `fractions` of the lower of its own capacity and native's, rounded down to two significant
/// digits, and native every rate any variant is offered, so that each is compared with native at the same load, near its own; and
/// (`common_rate`) every variant the lowest of them, which all can serve. `rates` names absolute
/// rates instead, offered to every variant.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EqualLoad {
    /// Shares of the lower of a variant's capacity and native's, each in (0, 1), before rounding
    /// down (default 0.6: a rate between 36% and 60% of it).
    #[serde(default = "default_equal_load_fractions")]
    pub fractions: Vec<f64>,
    /// Every variant also offered the workload's lowest rate (a share of the slowest variant's
    /// capacity), where all of them compare with each other.
    #[serde(default = "default_true")]
    pub common_rate: bool,
    /// Absolute rates, req/s, offered to every variant: the same for every workload (`rates =
    /// [1000, 5000]`) or by workload (`rates = { hello = [20000, 50000], compute = [100] }`; a
    /// workload not named gets rates from the capacities).
    #[serde(default, skip_serializing_if = "Rates::is_empty")]
    pub rates: Rates,
    pub duration_secs: f64,
    /// Warm-up at the same rate before each cell.
    #[serde(default = "default_equal_load_warmup")]
    pub warmup_secs: f64,
    /// Connections available to the schedule: enough to keep the rate when responses are slow.
    #[serde(default = "default_equal_load_connections")]
    pub connections: usize,
    /// Default: the suite's workloads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<String>,
}

/// A suite's absolute equal-load rates.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Rates {
    /// None: every workload's rates are fractions of its slowest variant's capacity.
    #[default]
    #[serde(skip)]
    Fractions,
    /// The same rates for every workload.
    Every(Vec<f64>),
    /// Rates by workload.
    ByWorkload(std::collections::BTreeMap<String, Vec<f64>>),
}

impl Rates {
    fn is_empty(&self) -> bool {
        matches!(self, Rates::Fractions)
    }

    /// The absolute rates the suite names for `workload`, if it names any.
    pub fn of(&self, workload: &str) -> Option<&[f64]> {
        match self {
            Rates::Fractions => None,
            Rates::Every(r) => Some(r),
            Rates::ByWorkload(m) => m.get(workload).map(Vec::as_slice),
        }
    }
}

impl EqualLoad {
    /// Whether any of `workloads`' rates come from the variants' capacities (and so a probe).
    pub fn probes(&self, workloads: &[String]) -> bool {
        workloads.iter().any(|w| self.rates.of(w).is_none())
    }
}

fn default_equal_load_fractions() -> Vec<f64> {
    vec![0.6]
}
fn default_true() -> bool {
    true
}
fn default_equal_load_warmup() -> f64 {
    0.1
}
fn default_equal_load_connections() -> usize {
    50
}

impl ServerSuite {
    pub(super) fn validate_equal_load(&self, e: &EqualLoad) -> anyhow::Result<()> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        super::check_timing("equal_load.", e.duration_secs, Some(e.warmup_secs))?;
        anyhow::ensure!(
            (1..=100_000).contains(&e.connections),
            "`equal_load.connections` must be in 1..=100000"
        );
        anyhow::ensure!(
            e.fractions.iter().all(|f| *f > 0.0 && *f < 1.0),
            "every `equal_load.fractions` entry must be in (0, 1): a share of the lower of a \
             variant's capacity and native's (absolute rates go in `equal_load.rates`)"
        );
        for w in &e.workloads {
            anyhow::ensure!(
                self.workloads.contains(w),
                "`equal_load.workloads`: {w:?} is not one of the suite's `workloads` (equal load \
                 follows each workload's closed-loop cells)"
            );
        }
        let measured = self.equal_load_workloads();
        let lists: Vec<(String, &Vec<f64>)> = match &e.rates {
            Rates::Fractions => Vec::new(),
            Rates::Every(r) => vec![("`equal_load.rates`".to_owned(), r)],
            Rates::ByWorkload(m) => {
                for w in m.keys() {
                    anyhow::ensure!(
                        measured.contains(w),
                        "`equal_load.rates`: {w:?} is not a workload measured at equal load ({})",
                        measured.join(", ")
                    );
                }
                m.iter()
                    .map(|(w, r)| (format!("`equal_load.rates.{w}`"), r))
                    .collect()
            }
        };
        for (at, rates) in lists {
            anyhow::ensure!(!rates.is_empty(), "{at} is empty");
            anyhow::ensure!(
                rates.iter().all(|r| positive(*r) && *r <= 10_000_000.0),
                "{at}: every rate must be a number of requests per second in (0, 10000000]"
            );
        }
        anyhow::ensure!(
            !e.probes(&measured) || !e.fractions.is_empty(),
            "`equal_load.fractions` is empty and `equal_load.rates` does not name every workload"
        );
        Ok(())
    }
}
