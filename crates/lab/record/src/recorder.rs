//! Recording what was measured: the data model (run.json, samples.jsonl), the results directory,
//! the CSVs, and the [`Recorder`] a run writes through as it goes.

pub mod csv;
pub mod model;
pub mod results;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::ProgressBar;

use model::{RunInfo, Sample, VariantOutcome};
use results::ResultsDir;

/// A run in progress: where it writes, what it has measured so far, its progress line, and
/// whether it was asked to stop. Every sample is appended as it is measured and the CSVs
/// rewritten; run.json is rewritten whenever an outcome changes.
pub struct Recorder {
    pub dir: ResultsDir,
    pub info: RunInfo,
    pub samples: Vec<Sample>,
    pub cancel: Arc<AtomicBool>,
    pub pb: ProgressBar,
}

impl Recorder {
    /// A line above the progress bar (or on stderr when there is none).
    pub fn say(&self, msg: String) {
        if self.pb.is_hidden() {
            eprintln!("{msg}");
        } else {
            self.pb.println(msg);
        }
    }

    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// Appends a sample to samples.jsonl and rewrites the CSVs.
    pub fn record(&mut self, sample: Sample) -> anyhow::Result<()> {
        self.dir.append_sample(&sample)?;
        self.samples.push(sample);
        csv::write_csvs(&self.dir, &self.info, &self.samples)
    }

    pub fn save_info(&self) -> anyhow::Result<()> {
        self.dir.write_json("run.json", &self.info)
    }

    /// The outcome of `name`, created as `measured` the first time.
    pub fn outcome(&mut self, name: &str) -> &mut VariantOutcome {
        let i = match self.info.variants.iter().position(|o| o.name == name) {
            Some(i) => i,
            None => {
                self.info.variants.push(VariantOutcome {
                    name: name.to_owned(),
                    status: "measured".into(),
                    reason: None,
                    checks: Vec::new(),
                });
                self.info.variants.len() - 1
            }
        };
        &mut self.info.variants[i]
    }

    /// Whether `name` is out of the run: failed, or skipped.
    pub fn out(&self, name: &str) -> bool {
        self.info
            .variants
            .iter()
            .any(|o| o.name == name && (o.status == "failed" || o.status == "skipped"))
    }

    /// Marks a variant failed: it is measured no further and left out of every table (its rows
    /// leave the CSVs now; its raw samples stay in samples.jsonl).
    pub fn fail(&mut self, name: &str, reason: String) -> anyhow::Result<()> {
        self.say(format!("{name}: FAILED: {reason}"));
        let o = self.outcome(name);
        o.status = "failed".into();
        o.reason = Some(reason);
        self.save_info()?;
        csv::write_csvs(&self.dir, &self.info, &self.samples)
    }

    /// Marks a variant skipped: it cannot run here; `reason` says why and what would enable it.
    pub fn skip(&mut self, name: &str, reason: String) -> anyhow::Result<()> {
        self.say(format!("{name}: skipped: {reason}"));
        let o = self.outcome(name);
        o.status = "skipped".into();
        o.reason = Some(reason);
        self.save_info()
    }
}
