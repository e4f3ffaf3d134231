//! Open loop: each open-loop workload at fractions of the variant's own closed-loop maximum in
//! the same repetition (the rate is set when the cell is measured, from that maximum).

use wasmlab_model::sample::Kind;
use wasmlab_model::suite::ServerSuite;

use super::cells::Planned;

/// The open-loop cells: a workload at each of the suite's fractions.
pub(super) fn planned(suite: &ServerSuite) -> Vec<Planned> {
    let Some(open) = &suite.open_loop else {
        return Vec::new();
    };
    let mut cells = Vec::new();
    for workload in suite.open_loop_workloads() {
        for &fraction in &open.fractions {
            // At the cell's own rate, on its connections, so that their set-up is not in the
            // readings.
            cells.push(Planned {
                fraction: Some(fraction),
                ..Planned::new(
                    Kind::OpenLoop,
                    &workload,
                    open.connections,
                    open.duration_secs,
                    suite.warmup_secs,
                )
            });
        }
    }
    cells
}
