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
