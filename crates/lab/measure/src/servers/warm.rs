//! Warm latency: each warm workload on one connection, request after request.

use wasmlab_model::sample::Kind;
use wasmlab_model::suite::ServerSuite;

use super::cells::Planned;

/// The warm-latency cells, one per workload the suite measures so.
pub(super) fn planned(suite: &ServerSuite) -> Vec<Planned> {
    let Some(warm) = &suite.warm else {
        return Vec::new();
    };
    suite
        .warm_workloads()
        .iter()
        .map(|w| Planned::new(Kind::Warm, w, 1, warm.duration_secs, warm.warmup_secs))
        .collect()
}
