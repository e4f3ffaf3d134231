//! A program suite's run: the runtime benchmark. A program set (libsodium's own test programs,
//! built once for wasm32-wasi and natively: `set.rs`) is run to completion in every engine the
//! suite names (engine variants, `[program]` in docs/variants.md; runners in docs/engines.md).
//! Each program's output is checked against its expected output in every engine before any of
//! its times count; then every (engine, program) pair is run `repetitions` times in a shuffled
//! order, timed as a whole process and, through the runner, by phase (compile, instantiate,
//! execute).

pub(crate) mod engine;
pub(crate) mod set;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use wasmlab_model::run::{EngineOutcome, PROGRAMS_KIND, ProgramRunInfo, Run, Status};
use wasmlab_model::sample::ProgramSample;
use wasmlab_model::suite::ProgramSuite;
use wasmlab_plan::Plan;
use wasmlab_plan::tools::State;
use wasmlab_record::{Programs, Recorder, ResultsDir};

use engine::Engine;
use set::ProgramSet;

/// Measures a program suite's run of `programs` of `set`, recorded into a new directory under
/// `results`, or on into `resume`'s (the runs it recorded kept; each engine's outputs checked
/// again, its warm-up run again).
pub(crate) fn run(
    plan: &Plan,
    suite: &ProgramSuite,
    set: &ProgramSet,
    programs: &[String],
    results: &Path,
    resume: Option<crate::Resume<ProgramRunInfo, ProgramSample>>,
    cancel: Arc<AtomicBool>,
) -> anyhow::Result<(ResultsDir, Run)> {
    let (dir, recorded) = match resume {
        None => (ResultsDir::create(results)?, None),
        Some(r) => (r.dir, Some((r.info, r.samples))),
    };
    eprintln!(
        "wasmlab: suite {} ({} programs of {}, {} engines, {} repetitions); {} {}{}; {}",
        suite.name,
        programs.len(),
        set.describe(),
        suite.variants.len(),
        suite.repetitions,
        if recorded.is_some() {
            "resuming"
        } else {
            "results in"
        },
        dir.path.display(),
        recorded
            .as_ref()
            .map_or(String::new(), |(_, s)| format!(" ({} runs kept)", s.len())),
        plan.cpus.describe()
    );
    let (mut info, engines) = engines(plan, suite, set, programs, &dir)?;
    let total = programs.len() * engines.len() * (suite.repetitions + suite.warmup) as usize;
    let progress = crate::progress_bar(total as u64, "runs");
    let mut rec = match recorded {
        None => Recorder::start(dir, info, cancel, progress)?,
        // The engines' outcomes as this start finds them (their outputs are checked again);
        // the rest as the run recorded it.
        Some((was, samples)) => {
            info.header = was.header;
            info.resumed = was.resumed;
            Recorder::resume(dir, info, samples, cancel, progress)?
        }
    };
    // Absolute: each run's working directory is inside it, and the runner gets paths in it.
    let scratch = std::path::absolute(rec.dir.file("scratch"))?;
    let mut run = ProgramRun {
        plan,
        suite,
        rec: &mut rec,
        engines: &engines,
        scratch,
    };
    let pairs = run.verify(programs)?;
    let runs = pairs.len() * (suite.repetitions + suite.warmup) as usize;
    run.rec.progress.set_length(runs as u64);
    run.warm_up(&pairs);
    run.repetitions(&pairs)?;
    let _ = std::fs::remove_dir_all(&run.scratch);
    rec.finish()
}

/// run.json as it starts, with every engine's outcome (skipped ones with why), and the engines
/// that can run here.
fn engines(
    plan: &Plan,
    suite: &ProgramSuite,
    set: &ProgramSet,
    programs: &[String],
    dir: &ResultsDir,
) -> anyhow::Result<(ProgramRunInfo, Vec<Engine>)> {
    let mut info = ProgramRunInfo {
        kind: PROGRAMS_KIND.into(),
        header: crate::header(plan, &dir.run_id),
        cpus: plan.cpus.describe(),
        suite: suite.clone(),
        program_set: set.build_info.clone(),
        programs: programs.to_vec(),
        engines: Vec::new(),
        resumed: Vec::new(),
    };
    let mut engines = Vec::new();
    let host_triple = wasmlab_plan::machine::host_triple();
    for p in &plan.variants {
        let mut outcome = EngineOutcome {
            engine: p.spec.name.clone(),
            about: p.spec.about.clone(),
            status: Status::Measured,
            reason: String::new(),
            tools: Vec::new(),
            failed_programs: Vec::new(),
        };
        match &p.state {
            State::Ready { tools, .. } => {
                outcome.tools = tools.clone();
                let values = crate::launch::RunValues {
                    bin: &plan.tools,
                    workspace: plan.workspace.as_deref(),
                    tools: &plan.tools,
                    results: &dir.path,
                    core_guest: None,
                    upstream: "",
                    server_cpus: plan.cpus.server_list(),
                    run_id: &dir.run_id,
                    host_triple: &host_triple,
                };
                let l = crate::launch::Launchable::new(&p.spec, &values, tools, (None, None));
                engines.push(Engine::new(l, set, &plan.cpus, suite.timeout_secs)?);
            }
            other => {
                outcome.status = Status::Skipped;
                outcome.reason = other.describe(p.name());
                eprintln!("wasmlab: {}: {}", p.name(), outcome.reason);
            }
        }
        info.engines.push(outcome);
    }
    Ok((info, engines))
}

/// A program suite's run in progress.
struct ProgramRun<'a> {
    plan: &'a Plan,
    suite: &'a ProgramSuite,
    rec: &'a mut Recorder<Programs>,
    engines: &'a [Engine],
    /// Where each run gets a working directory of its own.
    scratch: PathBuf,
}

impl ProgramRun<'_> {
    /// Checks each program's output in each engine, before any time counts: the (engine,
    /// program) pairs that passed. An engine none of whose programs passed has failed.
    fn verify(&mut self, programs: &[String]) -> anyhow::Result<Vec<(usize, String)>> {
        let mut pairs = Vec::new();
        for (i, e) in self.engines.iter().enumerate() {
            let mut ok = 0;
            for p in programs {
                if self.rec.cancelled() {
                    break;
                }
                match e.verify(p, &self.scratch) {
                    Ok(()) => {
                        pairs.push((i, p.clone()));
                        ok += 1;
                    }
                    Err(why) => {
                        self.rec.say(format!(
                            "wasmlab: {} {p}: output check failed: {why}",
                            e.name()
                        ));
                        if let Some(o) = self.rec.engine(e.name()) {
                            o.failed_programs.push((p.clone(), why));
                        }
                    }
                }
            }
            if ok == 0
                && let Some(o) = self.rec.engine(e.name())
            {
                o.status = Status::Failed;
                o.reason = "no program passed its output check".into();
            }
            self.rec.say(format!(
                "wasmlab: {}: {ok} of {} programs' output checked",
                e.name(),
                programs.len()
            ));
        }
        self.rec.save_info()?;
        Ok(pairs)
    }

    /// Runs every pair `warmup` times, not recorded: an engine that compiles ahead of time and
    /// caches the result pays its compilation here, and every engine finds its files in the
    /// page cache. A failure shows again in the timed runs.
    fn warm_up(&mut self, pairs: &[(usize, String)]) {
        for w in 0..self.suite.warmup {
            self.rec.say(format!(
                "wasmlab: warm-up {}/{}: {} runs, not recorded",
                w + 1,
                self.suite.warmup,
                pairs.len()
            ));
            for (i, program) in pairs {
                if self.rec.cancelled() {
                    return;
                }
                let e = &self.engines[*i];
                self.rec
                    .progress
                    .set_message(format!("warm-up: {} {program}", e.name()));
                let _ = e.time(program, 0, &self.scratch);
                self.rec.progress.inc(1);
            }
        }
    }

    /// Every repetition runs every (engine, program) pair once, in a shuffled order.
    fn repetitions(&mut self, pairs: &[(usize, String)]) -> anyhow::Result<()> {
        let (plan, count) = (self.plan, self.suite.repetitions);
        crate::repetitions(
            plan,
            pairs,
            0..count,
            self,
            |run| run.rec.cancelled(),
            |run, r, order| {
                run.rec.say(format!(
                    "wasmlab: repetition {}/{count}: {} runs in a shuffled order",
                    r + 1,
                    order.len()
                ));
                Ok(())
            },
            |run, (i, program), r| {
                let e = &run.engines[*i];
                // A resumed run's runs already recorded.
                if run
                    .rec
                    .samples
                    .iter()
                    .any(|s| s.repetition == r && s.engine == e.name() && s.program == *program)
                {
                    run.rec.progress.inc(1);
                    return Ok(());
                }
                run.rec
                    .progress
                    .set_message(format!("{} {program}", e.name()));
                let sample = e.time(program, r, &run.scratch);
                if !sample.error.is_empty() {
                    run.rec.say(format!(
                        "wasmlab: {} {program} (repetition {}): {}",
                        e.name(),
                        r + 1,
                        sample.error
                    ));
                }
                run.rec.record(sample)?;
                run.rec.progress.inc(1);
                Ok(())
            },
        )
    }
}
