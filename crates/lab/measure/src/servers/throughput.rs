//! Throughput: a workload's closed-loop cells, one at each of the suite's concurrency levels,
//! measured first so that the open loop's fractions have their maximum.

use wasmlab_model::sample::Kind;
use wasmlab_model::suite::ServerSuite;

use super::cells::Planned;

/// The closed-loop cells of `workload`.
pub(super) fn planned(suite: &ServerSuite, workload: &str) -> Vec<Planned> {
    suite
        .connections
        .iter()
        .map(|&connections| {
            Planned::new(
                Kind::Throughput,
                workload,
                connections,
                suite.duration_secs,
                suite.warmup_secs,
            )
        })
        .collect()
}
