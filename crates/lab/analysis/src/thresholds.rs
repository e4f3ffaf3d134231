//! A server suite's `[[threshold]]` rules checked against every load cell measured: each run of
//! each cell a rule covers, so a crossing names the run it happened in.

use std::fmt;

use wasmlab_load_data::Crossed;
use wasmlab_model::sample::{Sample, cell_label};
use wasmlab_model::suite::ServerSuite;

/// A threshold that held in one run of one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossedCell {
    pub variant: String,
    pub workload: String,
    /// `c=50`, `warm`, `open loop 90%`, `at 2400 req/s`.
    pub cell: String,
    pub repetition: u32,
    pub crossed: Crossed,
}

impl fmt::Display for CrossedCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} (run {}): {}",
            self.variant,
            self.workload,
            self.cell,
            self.repetition + 1,
            self.crossed
        )
    }
}

/// Every threshold of `suite` that held in a load cell of `samples`, in the order measured.
pub fn crossed(suite: &ServerSuite, samples: &[Sample]) -> Vec<CrossedCell> {
    let mut out = Vec::new();
    for s in samples {
        let (Some(load), Some(workload)) = (&s.load, &s.workload) else {
            continue;
        };
        for rule in &suite.thresholds {
            if !rule.covers(s.kind, &s.variant, workload) {
                continue;
            }
            for t in &rule.fail_if {
                if let Some(crossed) = t.check(load) {
                    out.push(CrossedCell {
                        variant: s.variant.clone(),
                        workload: workload.clone(),
                        cell: cell_label(
                            s.kind,
                            s.connections.unwrap_or_default(),
                            s.load_fraction,
                            s.rate,
                        ),
                        repetition: s.repetition,
                        crossed,
                    });
                }
            }
        }
    }
    out
}
