//! `wasmlab run`: the pipeline, top to bottom. Plan (suite, variants and whether each can run
//! here, CPUs, machine) → build and prepare → verify every variant → cold starts → repetitions of
//! every variant's load cells → analysis, report. Every sample is appended as it is measured; the
//! CSVs are rewritten after each; summary.md and report.html come at the end (and from
//! `wasmlab report` at any time).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use wasmlab_load::parse_duration;

use crate::launch::prepare;
use crate::launch::{LaunchContext, Launchable, RunValues};
use crate::measure::{self, verify};
use crate::plan::tools::State;
use crate::plan::{Plan, cpus, machine};
use crate::record::Recorder;
use crate::record::model::{RunInfo, SAMPLES_SCHEMA};
use crate::record::results::ResultsDir;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// A built-in suite (quick, gateway-study) or a path to a suite TOML file.
    #[arg(long, default_value = "quick")]
    pub suite: String,
    /// Measure only these variants (repeatable); default: the suite's list.
    #[arg(long = "variant")]
    pub variants: Vec<String>,
    /// Override the suite's concurrency levels (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub connections: Vec<usize>,
    /// Override the suite's measured duration per cell (e.g. 5s).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Override the suite's number of repetitions.
    #[arg(long)]
    pub repetitions: Option<u32>,
    /// Seed of the shuffled variant order (default: the suite's, else the clock; recorded).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where run directories are created.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Where the gateway binaries are (default: beside this executable).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Do not run `cargo build` for the gateway binaries first.
    #[arg(long)]
    pub no_build: bool,
    /// Run this core-module guest (docs/guest-abi.md) in the variants that run one
    /// (wasmtime-pooled) instead of the built-in guest. It is verified like any variant.
    #[arg(long, value_name = "PATH")]
    pub wasm: Option<PathBuf>,
    /// A variant file of your own (repeatable; docs/variants.md): name it in --variant or the
    /// suite. It is verified like any variant before it is measured.
    #[arg(long = "variant-file", value_name = "PATH")]
    pub variant_files: Vec<PathBuf>,
    /// Do not install anything: a variant that needs setup is skipped even when its setup is quick.
    #[arg(long)]
    pub no_setup: bool,
}

/// Set by SIGINT/SIGTERM; everything long-running polls it.
static CANCEL: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe. The OnceLock is set before the handler.
    if let Some(f) = CANCEL.get() {
        f.store(true, Ordering::SeqCst);
    }
}

/// The flag SIGINT/SIGTERM set, with the handlers installed.
pub fn cancel_flag() -> Arc<AtomicBool> {
    install_signal_handlers()
}

fn install_signal_handlers() -> Arc<AtomicBool> {
    let flag = CANCEL
        .get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone();
    // SAFETY: the handler only performs an atomic store.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    flag
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    // A program suite (the runtime benchmark) has its own pipeline.
    let (text, origin) = crate::plan::suite::text(&args.suite)?;
    if crate::plan::suite::kind(&text).as_deref() == Some("programs") {
        return crate::programs::run(&args, &text, &origin);
    }
    // Plan: what to run, whether each variant can run here, and on which CPUs.
    let plan = Plan::new(&args)?;
    let states = assess(&plan, !args.no_setup)?;
    let runnable: Vec<&str> = states
        .iter()
        .filter(|(_, s)| matches!(s, State::Ready { .. }))
        .map(|(n, _)| n.as_str())
        .collect();
    if !args.no_build {
        let mut own = Vec::new();
        for n in &runnable {
            for b in plan.catalog.find(n)?.own_binaries() {
                if !own.contains(&b) {
                    own.push(b);
                }
            }
        }
        prepare::build_binaries(plan.workspace.as_deref(), &plan.bin_dir, &own)?;
    }
    let allowed = cpus::allowed()
        .map_err(|e| anyhow::anyhow!("cannot read this process's CPU affinity: {e}"))?;
    let cpus = cpus::CpuPlan::new(&allowed, plan.suite.load_threads, plan.suite.cpu_partition);
    // Described before the lab pins itself: pinned, it would count only the generator's CPUs.
    let machine = machine::describe(plan.workspace.as_deref());
    // Before the lab starts any thread of its own: they all inherit the generator's CPUs.
    cpus.pin_lab()
        .map_err(|e| anyhow::anyhow!("cannot pin the load generator ({}): {e}", cpus.describe()))?;

    // Record: the results directory and run.json, with every variant's outcome so far.
    let mut lab = start_recording(&args, &plan, &cpus, machine)?;
    for (name, state) in &states {
        lab.outcome(name);
        if !matches!(state, State::Ready { .. }) {
            lab.skip(name, state.describe(name))?;
        }
    }
    lab.save_info()?;
    crate::record::csv::write_csvs(&lab.dir, &lab.info, &lab.samples)?;

    // Launch: the upstream echo server for /proxy, then every variant's preparation.
    let start_timeout = Duration::from_secs_f64(plan.suite.start_timeout_secs);
    let ctx = |name: &str| LaunchContext {
        cpus: &cpus,
        start_timeout,
        log_path: lab.dir.file(&format!("{name}.log")),
    };
    let upstream = start_upstream(&ctx("upstream"))?;
    let upstream_url = format!("http://{}", upstream.addr);
    let host_triple = crate::plan::host_triple();
    let values = RunValues {
        bin: &plan.bin_dir,
        workspace: plan.workspace.as_deref(),
        tools: &plan.tools,
        results: &lab.dir.path.clone(),
        core_guest: plan.core_guest.as_deref(),
        upstream: &upstream_url,
        server_cpus: cpus.server_list(),
        run_id: &lab.info.run_id.clone(),
        host_triple: &host_triple,
    };
    let variants = prepare_all(&mut lab, &plan, &states, &values)?;
    let by_name = |names: &[String]| -> Vec<&Launchable> {
        names
            .iter()
            .filter_map(|n| variants.iter().find(|v| v.name() == n))
            .collect()
    };
    let everything = by_name(&plan.names);
    let measured = by_name(&plan.suite.variants);
    let cold = by_name(&plan.suite.cold_start_variants());

    // Measure: verification, cold starts, repetitions.
    let log_dir = lab.dir.path.clone();
    let ctx = |name: &str| LaunchContext {
        cpus: &cpus,
        start_timeout,
        log_path: log_dir.join(format!("{name}.log")),
    };
    let client = verify::Client::new()?;
    let seed = lab.info.seed;
    measure::verify_all(&mut lab, &everything, &ctx, &client, &plan.suite)?;
    if let Some(c) = plan.suite.cold_start.as_ref() {
        measure::cold_starts(&mut lab, &cold, c.runs, seed, &ctx)?;
    }
    measure::repetitions(&mut lab, &measured, &plan.suite, seed, &ctx, &client)?;
    lab.pb.finish_and_clear();
    upstream.stop();
    for v in &variants {
        prepare::finish(v, &lab.dir.file(&format!("{}.log", v.name())), &|m| {
            lab.say(m)
        });
    }

    // Analyse and report.
    finish_recording(lab)
}

/// Each variant's state here. A variant whose setup is quick (a minute at most) is set up first,
/// unless `setup` is off; the terminal says so.
fn assess(plan: &Plan, setup: bool) -> anyhow::Result<Vec<(String, State)>> {
    let mut out = Vec::new();
    for name in &plan.names {
        let spec = plan.catalog.find(name)?;
        out.push((name.clone(), assess_one(spec, &plan.tools, setup)?));
    }
    Ok(out)
}

/// One variant's state here, after its quick setup if it has one and `setup` is on.
pub fn assess_one(
    spec: &crate::plan::variants::VariantSpec,
    tools: &std::path::Path,
    setup: bool,
) -> anyhow::Result<State> {
    let name = &spec.name;
    let mut state = crate::plan::tools::assess(spec, tools);
    if let State::NeedsSetup { minutes, .. } = &state
        && setup
        && *minutes <= 1.0
    {
        eprintln!("wasmlab: {name} needs a quick setup; running it (`wasmlab setup {name}`)");
        for r in spec.requires.iter().filter(|r| r.install.is_some()) {
            if crate::plan::tools::probe(r, tools).is_err() {
                crate::cmd::setup::install_tool(r, tools, &|m| eprintln!("wasmlab: {m}"))?;
            }
        }
        state = crate::plan::tools::assess(spec, tools);
    }
    Ok(state)
}

/// Creates the results directory and run.json, the progress line, and the signal handlers.
fn start_recording(
    args: &RunArgs,
    plan: &Plan,
    cpus: &cpus::CpuPlan,
    machine: machine::Machine,
) -> anyhow::Result<Recorder> {
    let cancel = install_signal_handlers();
    let dir = ResultsDir::create(&args.results)?;
    eprintln!(
        "wasmlab: suite {}; results in {}; {}",
        plan.suite.name,
        dir.path.display(),
        cpus.describe()
    );
    let seed = args.seed.or(plan.suite.seed).unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    });
    let info = RunInfo {
        schema: SAMPLES_SCHEMA,
        run_id: dir.run_id.clone(),
        command: std::env::args().collect(),
        started_utc: crate::record::results::utc_stamp(),
        finished_utc: None,
        state: "running".into(),
        git_sha: machine::git_sha(plan.workspace.as_deref()),
        core_guest: plan.core_guest.as_ref().map(|p| p.display().to_string()),
        seed,
        orders: Vec::new(),
        machine,
        cpus: cpus.clone(),
        suite: plan.suite.clone(),
        artifacts: Vec::new(),
        variants: Vec::new(),
        variant_specs: plan
            .names
            .iter()
            .filter_map(|n| plan.catalog.find(n).ok().cloned())
            .collect(),
        variant_tools: Vec::new(),
        container_engine: None,
    };
    let pb = ProgressBar::new(planned_steps(plan) as u64);
    pb.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} steps  {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    Ok(Recorder {
        dir,
        info,
        samples: Vec::new(),
        cancel,
        pb,
    })
}

/// The upstream echo server for /proxy: wasmlab itself, as a child process like the variants.
fn start_upstream(ctx: &LaunchContext<'_>) -> anyhow::Result<crate::launch::Running> {
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["upstream", "--port", "0"]);
    crate::launch::spawn_server("upstream", cmd, ctx, "/", None)
}

/// The runnable variants with this run's values, each prepared (a failed preparation fails the
/// variant), and the sizes of what they run recorded.
fn prepare_all(
    lab: &mut Recorder,
    plan: &Plan,
    states: &[(String, State)],
    values: &RunValues<'_>,
) -> anyhow::Result<Vec<Launchable>> {
    let mut own = Vec::new();
    let mut variants = Vec::new();
    for (name, state) in states {
        let State::Ready { tools, container } = state else {
            continue;
        };
        let spec = plan.catalog.find(name)?;
        for t in tools {
            if !lab.info.variant_tools.contains(t) {
                lab.info.variant_tools.push(t.clone());
            }
        }
        if container.is_some() {
            lab.info.container_engine = container.clone();
        }
        for b in spec.own_binaries() {
            if !own.contains(&b) {
                own.push(b);
            }
        }
        let v = Launchable::new(spec, values, tools, container.as_ref());
        let log = lab.dir.file(&format!("{name}.log"));
        let prepared = prepare::prepare(&v, &log, &|m| lab.say(m));
        match prepared {
            Ok(()) => lab.info.artifacts.extend(prepare::artifacts(&v)),
            Err(e) => lab.fail(name, format!("{e:#}"))?,
        }
        variants.push(v);
    }
    let mut artifacts = prepare::own_artifacts(&plan.bin_dir, &own, plan.core_guest.as_deref());
    artifacts.append(&mut lab.info.artifacts);
    lab.info.artifacts = artifacts;
    lab.save_info()?;
    Ok(variants)
}

/// Ends the run: its state in run.json, the analysis, summary.md and report.html, the terminal
/// tables, and the exit status (130 when interrupted, 1 when a variant failed or none was
/// measured).
fn finish_recording(mut lab: Recorder) -> anyhow::Result<()> {
    let interrupted = lab.cancelled();
    if interrupted {
        for o in &mut lab.info.variants {
            if o.status == "measured" {
                o.status = "interrupted".into();
            }
        }
    }
    lab.info.state = if interrupted {
        "interrupted"
    } else {
        "complete"
    }
    .into();
    lab.info.finished_utc = Some(crate::record::results::utc_stamp());
    lab.save_info()?;
    let analysis = crate::analyze::analyse(lab.info.clone(), &lab.samples);
    let report = crate::cmd::report::write_report(&lab.dir.path, &analysis);
    println!("{}", crate::report::terminal::terminal(&analysis));
    println!("results: {}", lab.dir.path.display());
    report?;
    if interrupted {
        return Err(RunEnded {
            exit_code: 130,
            message: format!(
                "interrupted; the cells finished so far are in {}",
                lab.dir.path.display()
            ),
        }
        .into());
    }
    let count = |status: &str| {
        lab.info
            .variants
            .iter()
            .filter(|o| o.status == status)
            .count()
    };
    if count("failed") > 0 {
        return Err(RunEnded {
            exit_code: 1,
            message: format!(
                "{} variant(s) failed; see above and run.json",
                count("failed")
            ),
        }
        .into());
    }
    if count("measured") == 0 {
        return Err(RunEnded {
            exit_code: 1,
            message: "no variant could be measured; see above".into(),
        }
        .into());
    }
    Ok(())
}

/// Progress steps: verification of each variant, cold launches, then per repetition and variant
/// its cells.
fn planned_steps(plan: &Plan) -> usize {
    let suite = &plan.suite;
    let cold = suite
        .cold_start
        .as_ref()
        .map_or(0, |c| c.runs as usize * suite.cold_start_variants().len());
    plan.names.len()
        + cold
        + suite.repetitions as usize * suite.variants.len() * measure::variant_steps(suite) as usize
}

/// A run that finished its bookkeeping but did not measure everything: interrupted (exit 130, as
/// for SIGINT) or with failed variants (exit 1). Other errors exit 2.
#[derive(Debug)]
pub struct RunEnded {
    pub exit_code: u8,
    pub message: String,
}

impl std::fmt::Display for RunEnded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RunEnded {}
