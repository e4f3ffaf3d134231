//! Building, launching and measuring, the lab's second phase: what a run builds first (wasmlab's
//! own binaries, or a program set), then its two kinds of cell, recorded as they are measured.
//! A server suite's cell is a load against a running server (closed loop, warm latency, open
//! loop) or a launch (cold start), each server verified first; a program suite's cell is one run
//! of a program in an engine, each program's output checked first. Both go through one
//! recorder, and the repetitions of both through one loop ([`repetitions`]).

mod generators;
pub mod launch;
mod programs;
mod requests;
mod resources;
mod servers;
pub mod verify;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use indicatif::{ProgressBar, ProgressStyle};
use wasmlab_analysis::ServerAnalysis;
use wasmlab_model::run::{Run, RunHeader, RunState};
use wasmlab_model::sample::SAMPLES_SCHEMA;
use wasmlab_model::suite::Suite;
use wasmlab_plan::Plan;
use wasmlab_record::ResultsDir;

pub use programs::set::ProgramSet;

/// What a run builds before anything is recorded.
pub enum Built {
    /// A server suite: wasmlab's own binaries, built in place.
    Servers,
    /// A program suite: the program set and the programs of it the suite runs.
    Programs {
        set: ProgramSet,
        programs: Vec<String>,
    },
}

/// Builds what the plan's ready variants need: wasmlab's own binaries (when `own_binaries`
/// and wasmlab runs from its source tree), or the program set (built on first use, then cached).
pub fn build(plan: &Plan, own_binaries: bool) -> anyhow::Result<Built> {
    match &plan.suite {
        Suite::Servers(_) => {
            if own_binaries {
                launch::prepare::build_binaries(
                    plan.workspace.as_deref(),
                    &plan.bin_dir,
                    &plan.own_binaries(),
                )?;
            }
            Ok(Built::Servers)
        }
        Suite::Programs(suite) => {
            let set = ProgramSet::obtain(
                &suite.program_set,
                suite.iterations,
                plan.workspace.as_deref(),
            )?;
            let programs = set.select(&suite.programs)?;
            Ok(Built::Programs { set, programs })
        }
    }
}

/// An interrupted run to measure on (`wasmlab run --resume`): its directory, opened with
/// [`ResultsDir::resume`], its run.json (the resumption already added) and its samples.
pub struct Resume<I, S> {
    pub dir: ResultsDir,
    pub info: I,
    pub samples: Vec<S>,
}

/// An interrupted run of either kind of suite.
pub enum Resumed {
    Servers(Box<Resume<wasmlab_model::run::ServerRunInfo, wasmlab_model::sample::Sample>>),
    Programs(Box<Resume<wasmlab_model::run::ProgramRunInfo, wasmlab_model::sample::ProgramSample>>),
}

/// What the caller says of a server run's figures while more repetitions are to come: given the
/// analysis of those done, how many are done and how many are planned, the text printed above the
/// progress line (the answer so far), or None for nothing.
pub type AnswerSoFar<'a> = &'a dyn Fn(&ServerAnalysis, u32, u32) -> Option<String>;

/// Measures a planned and built run, recorded as it goes into a new directory under `results`
/// (or on into `resume`'s: what it recorded is kept, the rest measured); `cancel` is set when
/// the run is asked to stop; `so_far` words a server run's answer after each repetition but the
/// last. Returns the directory and the run as recorded.
pub fn measure(
    plan: &Plan,
    built: &Built,
    results: &Path,
    resume: Option<Resumed>,
    cancel: Arc<AtomicBool>,
    so_far: AnswerSoFar,
) -> anyhow::Result<(ResultsDir, Run)> {
    match (&plan.suite, built, resume) {
        (Suite::Servers(suite), Built::Servers, None) => {
            servers::run(plan, suite, results, None, cancel, so_far)
        }
        (Suite::Servers(suite), Built::Servers, Some(Resumed::Servers(r))) => {
            servers::run(plan, suite, results, Some(*r), cancel, so_far)
        }
        (Suite::Programs(suite), Built::Programs { set, programs }, None) => {
            programs::run(plan, suite, set, programs, results, None, cancel)
        }
        (Suite::Programs(suite), Built::Programs { set, programs }, Some(Resumed::Programs(r))) => {
            programs::run(plan, suite, set, programs, results, Some(*r), cancel)
        }
        _ => anyhow::bail!("the build does not match the suite's kind"),
    }
}

/// run.json's header of a run of `plan`, started now.
fn header(plan: &Plan, run_id: &str) -> RunHeader {
    RunHeader {
        schema: SAMPLES_SCHEMA,
        run_id: run_id.to_owned(),
        command: std::env::args().collect(),
        cwd: std::env::current_dir()
            .ok()
            .map(|d| d.display().to_string()),
        started_utc: wasmlab_record::utc_stamp(),
        finished_utc: None,
        state: RunState::Running,
        git_sha: wasmlab_plan::machine::git_sha(plan.workspace.as_deref()),
        seed: plan.seed,
        machine: plan.machine.clone(),
    }
}

/// The progress line of a run of `len` steps, each a `unit`.
fn progress_bar(len: u64, unit: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{{elapsed_precise}} [{{bar:30}}] {{pos}}/{{len}} {unit}  {{msg}}"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    pb
}

/// Repetitions `rounds` of a run, for both kinds of cell: in repetition r, every unit (a server
/// variant, or an engine and program) in the plan's shuffled order for r. `begin` sees each
/// repetition's order first; `each` measures one unit. Stops as soon as `cancelled` says so.
fn repetitions<S, U: Clone>(
    plan: &Plan,
    units: &[U],
    rounds: std::ops::Range<u32>,
    state: &mut S,
    cancelled: impl Fn(&S) -> bool,
    mut begin: impl FnMut(&mut S, u32, &[U]) -> anyhow::Result<()>,
    mut each: impl FnMut(&mut S, &U, u32) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    for r in rounds {
        let order = plan.order(units, r);
        begin(state, r, &order)?;
        for unit in &order {
            if cancelled(state) {
                return Ok(());
            }
            each(state, unit, r)?;
        }
    }
    Ok(())
}
