//! Program suites: the runtime benchmark. A program set (libsodium's own test programs, built
//! once for wasm32-wasi and natively: `set.rs`) is run to completion in every engine the suite
//! names (engine variants, `[program]` in docs/variants.md; runners in docs/engines.md). Each
//! program's output is checked against its expected output in every engine before any of its
//! times count; then every (engine, program) pair is run `repetitions` times in a shuffled order,
//! timed as a whole process and, through the runner, by phase (compile, instantiate, execute).
//! The analysis gives each engine's time relative to the native baseline, per program and as a
//! geometric mean and median over programs, with bootstrap intervals.

pub mod analyze;
pub mod execute;
pub mod report;
pub mod set;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::plan::tools::{FoundTool, State};
use crate::plan::variants::Catalog;
use crate::record::results::ResultsDir;

/// The builds of a program set an engine may run (`[program] build`).
pub const BUILDS: &[&str] = &["wasm", "native-portable", "native"];

/// A program suite's file (`kind = "programs"`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramSuite {
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The program set: `libsodium` (built by scripts/build-libsodium.sh into
    /// target/libsodium), or a path to a directory holding a built set.
    pub program_set: String,
    /// How many times a benchmark build runs its test body (the `libsodium` set; the 2023 study
    /// and libsodium's own wasm32-wasi.sh --bench use 200).
    #[serde(default = "default_iterations")]
    pub iterations: u32,
    /// The programs to run (default: every program of the set).
    #[serde(default)]
    pub programs: Vec<String>,
    /// The engines (engine variants), the baseline among them.
    pub variants: Vec<String>,
    /// The engine every ratio is relative to.
    pub baseline: String,
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    /// Untimed runs of every (engine, program) pair before the repetitions (hyperfine's
    /// --warmup): an engine that compiles ahead of time and caches the result (wasm2c, WAMR's
    /// AOT) pays its compilation there, and every engine finds its files in the page cache.
    #[serde(default = "default_warmup")]
    pub warmup: u32,
    #[serde(default)]
    pub seed: Option<u64>,
    /// A run taking longer than this is stopped and counted as failed.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: f64,
    /// Published figures to set beside ours (`studies/NAME.toml`).
    #[serde(default)]
    pub study: Option<String>,
}

fn default_repetitions() -> u32 {
    3
}
fn default_warmup() -> u32 {
    1
}
fn default_iterations() -> u32 {
    200
}
fn default_timeout_secs() -> f64 {
    600.0
}

impl ProgramSuite {
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<Self> {
        let s: ProgramSuite = toml::from_str(text).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        anyhow::ensure!(s.kind == "programs", "{origin}: kind must be \"programs\"");
        anyhow::ensure!(!s.variants.is_empty(), "{origin}: `variants` is empty");
        anyhow::ensure!(
            s.variants.contains(&s.baseline),
            "{origin}: the baseline {:?} must be one of the suite's variants",
            s.baseline
        );
        anyhow::ensure!(
            s.repetitions >= 1,
            "{origin}: `repetitions` must be at least 1"
        );
        anyhow::ensure!(
            s.timeout_secs.is_finite() && s.timeout_secs > 0.0,
            "{origin}: `timeout_secs` must be > 0"
        );
        Ok(s)
    }
}

/// One timed run of one program in one engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProgramSample {
    pub engine: String,
    pub program: String,
    pub repetition: u32,
    /// Exec to exit, as the 2023 study timed.
    pub wall_ms: f64,
    /// From the engine's runner (docs/engines.md); none for a native program.
    #[serde(default)]
    pub phases: Option<execute::Phases>,
    /// The time the program itself measured around its test body, per iteration (libsodium's
    /// benchmark mode prints it), in microseconds: the code's speed without start-up.
    #[serde(default)]
    pub body_us: Option<f64>,
    /// Empty when the run succeeded; else what went wrong (its time does not count).
    #[serde(default)]
    pub error: String,
}

/// What happened to an engine, or to one of its programs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineOutcome {
    pub engine: String,
    pub about: String,
    /// `measured`, `skipped` (cannot run here, with why) or `failed`.
    pub status: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub tools: Vec<FoundTool>,
    /// Programs whose output did not match, or that failed: program → what happened.
    #[serde(default)]
    pub failed_programs: Vec<(String, String)>,
}

/// run.json of a program suite's run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProgramRunInfo {
    pub kind: String,
    pub run_id: String,
    pub command: Vec<String>,
    pub started_utc: String,
    pub finished_utc: Option<String>,
    pub state: String,
    pub git_sha: Option<String>,
    pub seed: u64,
    pub machine: crate::plan::machine::Machine,
    pub cpus: String,
    pub suite: ProgramSuite,
    /// The program set's build.json (versions, flags, checksums).
    pub program_set: serde_json::Value,
    pub programs: Vec<String>,
    pub engines: Vec<EngineOutcome>,
}

/// `wasmlab run` of a program suite.
pub fn run(args: &crate::run::RunArgs, text: &str, origin: &str) -> anyhow::Result<()> {
    let mut suite = ProgramSuite::parse(text, origin)?;
    if !args.variants.is_empty() {
        suite.variants = args.variants.clone();
        if !suite.variants.contains(&suite.baseline) {
            suite.variants.insert(0, suite.baseline.clone());
        }
    }
    if let Some(r) = args.repetitions {
        anyhow::ensure!(r >= 1, "--repetitions must be at least 1");
        suite.repetitions = r;
    }
    anyhow::ensure!(
        args.connections.is_empty() && args.duration.is_none() && args.wasm.is_none(),
        "--connections, --duration and --wasm are for HTTP suites; {} is a program suite",
        suite.name
    );
    let mut catalog = Catalog::builtin();
    for f in &args.variant_files {
        catalog.add_file(f)?;
    }
    for name in &suite.variants {
        let spec = catalog.find(name)?;
        anyhow::ensure!(
            spec.is_engine(),
            "{name} is a server variant; a program suite runs engines ([program] variants): {}",
            catalog
                .all()
                .filter(|s| s.is_engine())
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let workspace = crate::workspace_dir();
    let tools_dir = crate::plan::tools::tools_dir();

    // Plan: which engines can run here, and the program set (built if need be).
    let mut states = Vec::new();
    for name in &suite.variants {
        let spec = catalog.find(name)?;
        let state = crate::run::assess_one(spec, &tools_dir, !args.no_setup)?;
        states.push((spec.clone(), state));
    }
    let set = set::ProgramSet::obtain(&suite.program_set, suite.iterations, workspace.as_deref())?;
    let programs = set.select(&suite.programs)?;
    let allowed = crate::plan::cpus::allowed()?;
    let cpus = crate::plan::cpus::CpuPlan::new(&allowed, 1, true);
    let machine = crate::plan::machine::describe(workspace.as_deref());
    cpus.pin_lab()?;

    let mut dir = ResultsDir::create(&args.results)?;
    let seed = args.seed.or(suite.seed).unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    });
    eprintln!(
        "wasmlab: suite {} ({} programs of {}, {} engines, {} repetitions); results in {}; {}",
        suite.name,
        programs.len(),
        set.describe(),
        suite.variants.len(),
        suite.repetitions,
        dir.path.display(),
        cpus.describe()
    );
    let mut info = ProgramRunInfo {
        kind: "programs".into(),
        run_id: dir.run_id.clone(),
        command: std::env::args().collect(),
        started_utc: crate::record::results::utc_stamp(),
        finished_utc: None,
        state: "running".into(),
        git_sha: crate::plan::machine::git_sha(workspace.as_deref()),
        seed,
        machine,
        cpus: cpus.describe(),
        suite: suite.clone(),
        program_set: set.build_info.clone(),
        programs: programs.clone(),
        engines: Vec::new(),
    };
    let mut engines = Vec::new();
    for (spec, state) in &states {
        let mut outcome = EngineOutcome {
            engine: spec.name.clone(),
            about: spec.about.clone(),
            status: "measured".into(),
            reason: String::new(),
            tools: Vec::new(),
            failed_programs: Vec::new(),
        };
        match state {
            State::Ready { tools, .. } => {
                outcome.tools = tools.clone();
                let values = crate::launch::RunValues {
                    bin: &tools_dir,
                    workspace: workspace.as_deref(),
                    tools: &tools_dir,
                    results: &dir.path.clone(),
                    core_guest: None,
                    upstream: "",
                    server_cpus: cpus.server_list(),
                    run_id: &dir.run_id.clone(),
                    host_triple: &crate::plan::host_triple(),
                };
                let l = crate::launch::Launchable::new(spec, &values, tools, None);
                engines.push(execute::Engine::new(l, &set, &cpus, suite.timeout_secs)?);
            }
            other => {
                outcome.status = "skipped".into();
                outcome.reason = other.describe(&spec.name);
                eprintln!("wasmlab: {}: {}", spec.name, outcome.reason);
            }
        }
        info.engines.push(outcome);
    }
    dir.write_json("run.json", &info)?;
    let cancel = crate::run::cancel_flag();

    // Verify: each program's output in each engine, before any time counts.
    // Absolute: each run's working directory is inside it, and the runner gets paths in it.
    let scratch = std::path::absolute(dir.file("scratch"))?;
    let mut usable: Vec<(usize, Vec<String>)> = Vec::new();
    for (i, e) in engines.iter().enumerate() {
        let mut ok = Vec::new();
        for p in &programs {
            if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            match e.verify(p, &scratch) {
                Ok(()) => ok.push(p.clone()),
                Err(why) => {
                    eprintln!("wasmlab: {} {p}: output check failed: {why}", e.name());
                    let o = info.engines.iter_mut().find(|o| o.engine == e.name());
                    if let Some(o) = o {
                        o.failed_programs.push((p.clone(), why));
                    }
                }
            }
        }
        if ok.is_empty()
            && let Some(o) = info.engines.iter_mut().find(|o| o.engine == e.name())
        {
            o.status = "failed".into();
            o.reason = "no program passed its output check".into();
        }
        eprintln!(
            "wasmlab: {}: {} of {} programs' output checked",
            e.name(),
            ok.len(),
            programs.len()
        );
        usable.push((i, ok));
    }
    dir.write_json("run.json", &info)?;

    // Measure: every repetition runs every (engine, program) pair once, in a shuffled order.
    let mut pairs = Vec::new();
    for (i, ok) in &usable {
        for p in ok {
            pairs.push((*i, p.clone()));
        }
    }
    let total = pairs.len() * (suite.repetitions + suite.warmup) as usize;
    let pb = indicatif::ProgressBar::new(total as u64);
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} runs  {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    // A line at each stage too, for a log (the bar shows on a terminal only).
    let stage = |what: String| pb.suspend(|| eprintln!("wasmlab: {what}"));
    // Warm-up: run, not recorded; a failure shows again in the timed runs.
    for w in 0..suite.warmup {
        stage(format!(
            "warm-up {}/{}: {} runs, not recorded",
            w + 1,
            suite.warmup,
            pairs.len()
        ));
        for (i, program) in &pairs {
            if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            pb.set_message(format!("warm-up: {} {program}", engines[*i].name()));
            let _ = engines[*i].time(program, 0, &scratch);
            pb.inc(1);
        }
    }
    let mut samples = Vec::new();
    'reps: for rep in 0..suite.repetitions {
        let order = crate::analyze::stats::shuffled(&pairs, seed.wrapping_add(u64::from(rep)));
        stage(format!(
            "repetition {}/{}: {} runs in a shuffled order",
            rep + 1,
            suite.repetitions,
            pairs.len()
        ));
        for (i, program) in order {
            if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                break 'reps;
            }
            let e = &engines[i];
            pb.set_message(format!("{} {program}", e.name()));
            let sample = e.time(&program, rep, &scratch);
            if !sample.error.is_empty() {
                pb.suspend(|| {
                    eprintln!(
                        "wasmlab: {} {program} (repetition {}): {}",
                        e.name(),
                        rep + 1,
                        sample.error
                    )
                });
            }
            dir.append_sample(&sample)?;
            samples.push(sample);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    let _ = std::fs::remove_dir_all(&scratch);

    let interrupted = cancel.load(std::sync::atomic::Ordering::Relaxed);
    info.state = if interrupted {
        "interrupted"
    } else {
        "complete"
    }
    .into();
    info.finished_utc = Some(crate::record::results::utc_stamp());
    dir.write_json("run.json", &info)?;
    let study = match &suite.study {
        Some(s) => Some(analyze::Study::load(s)?),
        None => None,
    };
    let analysis = analyze::analyse(&info, &samples, study);
    report::write_all(&dir, &info, &samples, &analysis)?;
    println!("{}", report::terminal(&analysis));
    println!("results: {}", dir.path.display());
    if interrupted {
        return Err(crate::run::RunEnded {
            exit_code: 130,
            message: format!("interrupted; the runs so far are in {}", dir.path.display()),
        }
        .into());
    }
    let failed: Vec<&str> = info
        .engines
        .iter()
        .filter(|o| o.status == "failed" || !o.failed_programs.is_empty())
        .map(|o| o.engine.as_str())
        .collect();
    if !failed.is_empty() {
        return Err(crate::run::RunEnded {
            exit_code: 1,
            message: format!(
                "programs failed their output check or runs failed in: {}; see above and run.json",
                failed.join(", ")
            ),
        }
        .into());
    }
    if samples.iter().any(|s| !s.error.is_empty()) {
        return Err(crate::run::RunEnded {
            exit_code: 1,
            message: "some runs failed; see above and samples.jsonl".into(),
        }
        .into());
    }
    Ok(())
}

/// Whether `dir` holds a program suite's run (its run.json says `kind = "programs"`).
pub fn is_program_run(dir: &std::path::Path) -> bool {
    std::fs::read_to_string(dir.join("run.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v.get("kind").and_then(|k| k.as_str()) == Some("programs"))
}

/// `wasmlab report DIR` of a program suite's run: the CSV, summary.md and report.html again
/// from run.json and samples.jsonl.
pub fn rebuild(path: &std::path::Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path.join("run.json"))?;
    let info: ProgramRunInfo = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}/run.json: {e}", path.display()))?;
    let mut samples = Vec::new();
    let lines = std::fs::read_to_string(path.join("samples.jsonl")).unwrap_or_default();
    for (i, line) in lines
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        samples.push(serde_json::from_str::<ProgramSample>(line).map_err(|e| {
            anyhow::anyhow!("{}/samples.jsonl line {}: {e}", path.display(), i + 1)
        })?);
    }
    let study = match &info.suite.study {
        Some(s) => Some(analyze::Study::load(s)?),
        None => None,
    };
    let analysis = analyze::analyse(&info, &samples, study);
    let dir = ResultsDir::open(path)?;
    report::write_all(&dir, &info, &samples, &analysis)?;
    println!("{}", report::terminal(&analysis));
    println!(
        "rebuilt from {} runs: programs.csv, summary.md, report.html in {}",
        samples.len(),
        path.display()
    );
    Ok(())
}

/// Where a program set is, or is built.
pub fn default_set_dir(workspace: Option<&std::path::Path>) -> PathBuf {
    workspace.map_or_else(
        || PathBuf::from("target/libsodium"),
        |w| w.join("target/libsodium"),
    )
}
