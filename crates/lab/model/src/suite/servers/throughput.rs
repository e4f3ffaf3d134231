//! Throughput, the closed loop: its settings are the suite's own fields (`connections`, the
//! levels measured for every workload; `duration_secs`; `warmup_secs`), which the other
//! measurements' tables fall back on.

use super::ServerSuite;

impl ServerSuite {
    pub(super) fn validate_throughput(&self) -> anyhow::Result<()> {
        anyhow::ensure!(!self.connections.is_empty(), "`connections` is empty");
        anyhow::ensure!(
            self.connections.iter().all(|&c| (1..=100_000).contains(&c)),
            "every `connections` level must be in 1..=100000"
        );
        super::check_timing("", self.duration_secs, Some(self.warmup_secs))
    }
}
