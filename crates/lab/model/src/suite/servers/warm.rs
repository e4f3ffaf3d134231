//! `[warm]`: warm latency, one connection sending requests one after another.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warm {
    pub duration_secs: f64,
    #[serde(default)]
    pub warmup_secs: f64,
    /// Default: the suite's workloads.
    #[serde(default)]
    pub workloads: Vec<String>,
}

impl Warm {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.duration_secs.is_finite() && self.duration_secs > 0.0,
            "`warm.duration_secs` must be > 0"
        );
        anyhow::ensure!(
            self.warmup_secs.is_finite() && self.warmup_secs >= 0.0,
            "`warm.warmup_secs` must be >= 0"
        );
        Ok(())
    }
}
