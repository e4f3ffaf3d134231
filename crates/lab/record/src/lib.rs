//! Recording a run: the results directory (`results/<run-id>/`) and what is in it. run.json
//! and the samples as they are measured, through a [`Recorder`]; the CSVs, rewritten after each
//! sample; every file replaced atomically but samples.jsonl, appended line by line; and the one
//! reader that gives a directory back as a [`wasmlab_model::run::Run`].

pub mod csv;
mod dir;
mod read;
mod recorder;

pub use dir::{ResultsDir, utc_stamp, write_atomic};
pub use read::{RunInfo, read_info, read_run, read_samples, read_server_info};
pub use recorder::{Programs, Recorder, RunKind, Servers};

use wasmlab_model::run::Run;

/// Rewrites the CSVs of a recorded run from its samples.
pub fn write_csvs(dir: &ResultsDir, run: &Run) -> anyhow::Result<()> {
    match run {
        Run::Servers { info, samples } => csv::write_server_csvs(dir, info, samples),
        Run::Programs { samples, .. } => csv::write_programs_csv(dir, samples),
    }
}

/// The CSV files a run of this kind writes.
pub fn csv_files(run: &Run) -> &'static [&'static str] {
    match run {
        Run::Servers { .. } => &[
            "throughput.csv",
            "warm.csv",
            "open_loop.csv",
            "cold_start.csv",
        ],
        Run::Programs { .. } => &["programs.csv"],
    }
}
