//! A run in progress: the [`Recorder`] a run writes through as it goes. Every sample is appended
//! to samples.jsonl as it is measured and the CSVs rewritten; run.json is rewritten whenever an
//! outcome changes; the run's state and end time are written when it finishes. One recorder
//! serves both kinds of suite ([`RunKind`]): only what they record differs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::ProgressBar;
use serde::Serialize;
use wasmlab_model::run::{
    EngineOutcome, ProgramRunInfo, Run, RunHeader, RunState, ServerRunInfo, Status, VariantOutcome,
};
use wasmlab_model::sample::{ProgramSample, Sample};

use crate::dir::{ResultsDir, utc_stamp};

/// What a run of one suite's kind records: its run.json and its lines of samples.jsonl.
pub trait RunKind {
    type Info: Serialize;
    type Sample: Serialize;
    fn header(info: &mut Self::Info) -> &mut RunHeader;
    /// Rewrites the kind's CSV files from the samples.
    fn write_csvs(
        dir: &ResultsDir,
        info: &Self::Info,
        samples: &[Self::Sample],
    ) -> anyhow::Result<()>;
    /// Whether the CSVs are rewritten, and samples.jsonl synced to disk, after every sample
    /// (else when the run finishes).
    const CSVS_AS_IT_GOES: bool;
    /// Marks what was being measured as interrupted.
    fn interrupt(info: &mut Self::Info);
    fn into_run(info: Self::Info, samples: Vec<Self::Sample>) -> Run;
}

/// A server suite's run: throughput.csv, warm.csv, open_loop.csv and cold_start.csv.
pub enum Servers {}

impl RunKind for Servers {
    type Info = ServerRunInfo;
    type Sample = Sample;
    /// A cell lasts seconds: its line and CSV rows are on disk before the next one starts.
    const CSVS_AS_IT_GOES: bool = true;

    fn header(info: &mut ServerRunInfo) -> &mut RunHeader {
        &mut info.header
    }

    fn write_csvs(
        dir: &ResultsDir,
        info: &ServerRunInfo,
        samples: &[Sample],
    ) -> anyhow::Result<()> {
        crate::csv::write_server_csvs(dir, info, samples)
    }

    fn interrupt(info: &mut ServerRunInfo) {
        for o in &mut info.variants {
            if o.status == Status::Measured {
                o.status = Status::Interrupted;
            }
        }
    }

    fn into_run(info: ServerRunInfo, samples: Vec<Sample>) -> Run {
        Run::Servers {
            info: Box::new(info),
            samples,
        }
    }
}

/// A program suite's run: programs.csv.
pub enum Programs {}

impl RunKind for Programs {
    type Info = ProgramRunInfo;
    type Sample = ProgramSample;
    /// Runs are milliseconds apart: rewriting and syncing the CSV after each would cost O(n²) and
    /// put disk I/O right before the next timed process. samples.jsonl holds every run as it ends
    /// (on disk once the page cache writes it back: a reboot may lose the last seconds' runs).
    const CSVS_AS_IT_GOES: bool = false;

    fn header(info: &mut ProgramRunInfo) -> &mut RunHeader {
        &mut info.header
    }

    fn write_csvs(
        dir: &ResultsDir,
        _info: &ProgramRunInfo,
        samples: &[ProgramSample],
    ) -> anyhow::Result<()> {
        crate::csv::write_programs_csv(dir, samples)
    }

    fn interrupt(info: &mut ProgramRunInfo) {
        for o in &mut info.engines {
            if o.status == Status::Measured {
                o.status = Status::Interrupted;
            }
        }
    }

    fn into_run(info: ProgramRunInfo, samples: Vec<ProgramSample>) -> Run {
        Run::Programs {
            info: Box::new(info),
            samples,
        }
    }
}

/// A run in progress: where it writes, what it has measured so far, its progress line, and
/// whether it was asked to stop.
pub struct Recorder<K: RunKind> {
    pub dir: ResultsDir,
    pub info: K::Info,
    pub samples: Vec<K::Sample>,
    /// The progress line (hidden when stderr is not a terminal).
    pub progress: ProgressBar,
    cancel: Arc<AtomicBool>,
}

impl<K: RunKind> Recorder<K> {
    /// Starts recording into `dir`: run.json and the CSVs are written at once, so even a run
    /// stopped before its first sample leaves a complete directory.
    pub fn start(
        dir: ResultsDir,
        info: K::Info,
        cancel: Arc<AtomicBool>,
        progress: ProgressBar,
    ) -> anyhow::Result<Self> {
        let rec = Self {
            dir,
            info,
            samples: Vec::new(),
            progress,
            cancel,
        };
        rec.save_info()?;
        K::write_csvs(&rec.dir, &rec.info, &rec.samples)?;
        Ok(rec)
    }

    /// Records on into an interrupted run's directory (see [`ResultsDir::resume`]), with what it
    /// recorded so far.
    pub fn resume(
        dir: ResultsDir,
        mut info: K::Info,
        samples: Vec<K::Sample>,
        cancel: Arc<AtomicBool>,
        progress: ProgressBar,
    ) -> anyhow::Result<Self> {
        let header = K::header(&mut info);
        header.state = RunState::Running;
        header.finished_utc = None;
        let rec = Self {
            dir,
            info,
            samples,
            progress,
            cancel,
        };
        rec.save_info()?;
        Ok(rec)
    }

    /// A line above the progress bar (or on stderr when there is none).
    pub fn say(&self, msg: String) {
        if self.progress.is_hidden() {
            eprintln!("{msg}");
        } else {
            self.progress.println(msg);
        }
    }

    /// Whether the run was asked to stop (SIGINT, SIGTERM).
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// The flag that says the run was asked to stop, for what polls it itself.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.cancel.clone()
    }

    /// Appends a sample to samples.jsonl (and rewrites the CSVs, for a kind that does so as it
    /// goes).
    pub fn record(&mut self, sample: K::Sample) -> anyhow::Result<()> {
        self.dir.append_sample(&sample, K::CSVS_AS_IT_GOES)?;
        self.samples.push(sample);
        if K::CSVS_AS_IT_GOES {
            K::write_csvs(&self.dir, &self.info, &self.samples)?;
        }
        Ok(())
    }

    pub fn save_info(&self) -> anyhow::Result<()> {
        self.dir.write_json("run.json", &self.info)
    }

    /// Ends the run's bookkeeping: its state (interrupted when it was asked to stop, else
    /// complete) and end time in run.json. Returns the run as recorded.
    pub fn finish(mut self) -> anyhow::Result<(ResultsDir, Run)> {
        self.progress.finish_and_clear();
        let interrupted = self.cancelled();
        if interrupted {
            K::interrupt(&mut self.info);
        }
        let header = K::header(&mut self.info);
        header.state = if interrupted {
            RunState::Interrupted
        } else {
            RunState::Complete
        };
        header.finished_utc = Some(utc_stamp());
        self.dir.sync_samples()?;
        self.save_info()?;
        K::write_csvs(&self.dir, &self.info, &self.samples)?;
        Ok((self.dir, K::into_run(self.info, self.samples)))
    }
}

impl Recorder<Servers> {
    /// The outcome of `name`, created as `measured` the first time.
    pub fn outcome(&mut self, name: &str) -> &mut VariantOutcome {
        let variants = &mut self.info.variants;
        let i = match variants.iter().position(|o| o.name == name) {
            Some(i) => i,
            None => {
                variants.push(VariantOutcome {
                    name: name.to_owned(),
                    status: Status::Measured,
                    reason: None,
                    checks: Vec::new(),
                    env: Default::default(),
                });
                variants.len() - 1
            }
        };
        &mut variants[i]
    }

    /// Whether `name` is out of the run: failed, or skipped.
    pub fn out(&self, name: &str) -> bool {
        self.info
            .variants
            .iter()
            .any(|o| o.name == name && o.status.is_out())
    }

    /// Marks a variant failed: it is measured no further and left out of every table (its rows
    /// leave the CSVs now; its raw samples stay in samples.jsonl).
    pub fn fail(&mut self, name: &str, reason: String) -> anyhow::Result<()> {
        self.say(format!("{name}: FAILED: {reason}"));
        let o = self.outcome(name);
        o.status = Status::Failed;
        o.reason = Some(reason);
        self.save_info()?;
        Servers::write_csvs(&self.dir, &self.info, &self.samples)
    }

    /// Marks a variant skipped: it cannot run here; `reason` says why and what would enable it.
    pub fn skip(&mut self, name: &str, reason: String) -> anyhow::Result<()> {
        self.say(format!("{name}: skipped: {reason}"));
        let o = self.outcome(name);
        o.status = Status::Skipped;
        o.reason = Some(reason);
        self.save_info()
    }
}

impl Recorder<Programs> {
    /// The outcome of engine `name`.
    pub fn engine(&mut self, name: &str) -> Option<&mut EngineOutcome> {
        self.info.engines.iter_mut().find(|o| o.engine == name)
    }
}
