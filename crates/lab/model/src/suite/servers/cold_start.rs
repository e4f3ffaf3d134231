//! `[cold_start]`: how many times each variant is launched, and which, for its time to the
//! first answer.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColdStart {
    /// Launches per variant.
    pub runs: u32,
    /// Variants to launch (default: the suite's); may add cold-start-only variants such as
    /// wasmtime-pooled-cwasm.
    #[serde(default)]
    pub variants: Vec<String>,
}

impl ColdStart {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.runs >= 1, "`cold_start.runs` must be >= 1");
        Ok(())
    }
}
