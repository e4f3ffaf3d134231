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
        super::check_timing("warm.", self.duration_secs, Some(self.warmup_secs))
    }
}
