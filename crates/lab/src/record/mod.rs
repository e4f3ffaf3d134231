//! Recording what was measured: the data model (run.json, samples.jsonl) and the results directory.

pub mod csv;
pub mod model;
pub mod results;
