//! `[open_loop]`: requests at a fixed rate, each a share of the variant's own capacity, latency
//! from their intended send.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenLoop {
    /// Offered loads as fractions of the variant's own closed-loop maximum for the workload.
    pub fractions: Vec<f64>,
    pub duration_secs: f64,
    /// Connections available to the schedule: enough to keep the rate when responses are slow.
    pub connections: usize,
    /// Default: the suite's workloads.
    #[serde(default)]
    pub workloads: Vec<String>,
}

impl OpenLoop {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(!self.fractions.is_empty(), "`open_loop.fractions` is empty");
        anyhow::ensure!(
            self.fractions.iter().all(|f| *f > 0.0 && *f <= 2.0),
            "every `open_loop.fractions` entry must be in (0, 2]"
        );
        super::check_timing("open_loop.", self.duration_secs, None)?;
        anyhow::ensure!(
            (1..=100_000).contains(&self.connections),
            "`open_loop.connections` must be in 1..=100000"
        );
        Ok(())
    }
}
