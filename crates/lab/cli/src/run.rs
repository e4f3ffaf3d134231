//! `wasmlab run`: the pipeline, top to bottom, for a suite of either kind. Plan (the suite with
//! the command line's overrides, each variant's state here, the machine and its CPUs) → build
//! (wasmlab's own binaries, or the program set) → measure, recording every sample as it is
//! measured → analyse → report. summary.md and report.html come at the end (and from `wasmlab
//! report` at any time).

use std::path::{Path, PathBuf};
use std::time::Duration;

use wasmlab_load::parse_duration;
use wasmlab_measure::{Resume, Resumed};
use wasmlab_model::idle::IdlePolicy;
use wasmlab_model::run::{Ending, Resumption, Run, RunState};
use wasmlab_model::suite::Suite;
use wasmlab_plan::{RatesFrom, RunRequest};
use wasmlab_record::RunInfo;

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// A built-in suite (quick, gateway-study, isolation, component, libsodium-quick, ...) or a
    /// path to a suite TOML file. Default: quick; with --component, component.
    #[arg(long)]
    pub suite: Option<String>,
    /// Measure only these variants (repeatable); default: the suite's list. With --component,
    /// NAME-in-HOST is your component NAME (its file's stem) in HOST alone, without the host's
    /// floor (a host named alone gets your component beside it).
    #[arg(long = "variant")]
    pub variants: Vec<String>,
    /// Override the suite's concurrency levels (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub connections: Vec<usize>,
    /// Override the suite's measured duration per cell (e.g. 5s).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Override the suite's number of repetitions: exactly this many (as hyperfine's --runs),
    /// unless --max-repetitions lets the run add more.
    #[arg(long)]
    pub repetitions: Option<u32>,
    /// Let an HTTP suite's run add repetitions, up to this many in all, when its first ones leave
    /// the lead's 95% intervals wider than a quiet machine's (±5% at the median): Stein's
    /// two-stage rule sets how many (docs/method.md, "Repetitions added on a noisy machine").
    /// The quick suite allows 12.
    #[arg(long, value_name = "N")]
    pub max_repetitions: Option<u32>,
    /// How idle CPUs wait while an HTTP suite measures: `poll` (the suites' default: the lab
    /// holds a 0 µs wake-up latency request, so that a server below saturation is charged its
    /// own work, not the hypervisor's wake-ups; needs root) or `system` (as the machine has them).
    #[arg(long, value_name = "POLICY", value_parser = IdlePolicy::parse)]
    pub cpu_idle: Option<IdlePolicy>,
    /// Seed of the shuffled variant order (default: the suite's, else the clock; recorded).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where run directories are created.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Offer each variant the equal-load rates this earlier run (its directory) offered it,
    /// wherever this run's probe of its capacity agrees with that run's (from 20% below to 50%
    /// above). Default: the last run of the same suite on this machine in --results, so that two
    /// runs in a row compare each variant at the same rates.
    #[arg(long, value_name = "RUN_DIR", conflicts_with = "new_rates")]
    pub rates_from: Option<PathBuf>,
    /// Set the equal-load rates from this run's probes alone, keeping no earlier run's.
    #[arg(long)]
    pub new_rates: bool,
    /// Where the gateway binaries are (default: beside this executable).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Do not run `cargo build` for the gateway binaries first (a variant whose binary is not
    /// there is then skipped, saying so).
    #[arg(long)]
    pub no_build: bool,
    /// Run this core-module guest (docs/guest-abi.md) in the variants that run one
    /// (wasmtime-pooled) instead of the built-in guest. It is verified like any variant.
    #[arg(long, value_name = "PATH")]
    pub wasm: Option<PathBuf>,
    /// Your wasi:http component (WASI 0.2 or 0.3; repeatable): put in every component host the
    /// suite names, each beside the same host running wasmlab's minimal component (the host's
    /// floor). Without --suite, the component suite: every host, on `GET /` (any 2xx answer with
    /// a body).
    #[arg(long = "component", value_name = "PATH")]
    pub components: Vec<PathBuf>,
    /// An environment variable for your components (repeatable), in every host: each gives it
    /// where it gives wasmlab's component the upstream's URL (WASMLAB_UPSTREAM). The run's
    /// parameters (run.json, the report) record it.
    #[arg(long = "component-env", value_name = "KEY=VALUE", value_parser = key_value)]
    pub component_env: Vec<(String, String)>,
    /// A variant file of your own (repeatable; docs/variants.md): name it in --variant or the
    /// suite. It is verified like any variant before it is measured.
    #[arg(long = "variant-file", value_name = "PATH")]
    pub variant_files: Vec<PathBuf>,
    /// Do not install anything: a variant that needs setup is skipped even when its setup is quick.
    #[arg(long)]
    pub no_setup: bool,
    /// Print every column of the terminal's tables, not only those that fit 120 columns (the
    /// others are in the CSVs, summary.md and report.html).
    #[arg(long)]
    pub wide: bool,
    /// Measure on an interrupted run (its directory): its command line, suite, seed, shuffled
    /// orders and equal-load rates as it recorded them; the cells (a program suite's runs) it
    /// recorded kept, the rest measured; its report then covers the whole. Refused where the suite, the
    /// machine, the commit or the tools differ from the run's start (--force).
    #[arg(
        long,
        value_name = "RUN_DIR",
        conflicts_with_all = [
            "suite", "variants", "connections", "duration", "repetitions", "max_repetitions",
            "cpu_idle", "seed", "rates_from", "new_rates", "bin_dir", "wasm", "components",
            "component_env", "variant_files", "baseline", "gates",
        ]
    )]
    pub resume: Option<PathBuf>,
    /// At the end, compare this run's headline with an earlier run's (its directory, checked
    /// before anything is measured) and exit 99 when a figure is worse beyond a gate, as
    /// `wasmlab compare RUN_DIR THIS --fail-if GATE` does; the gates by --gate, else `any > +10%`.
    /// `last`: the newest complete run of the suite on this machine in --results (none yet: no
    /// gate, said), as a CI job that runs the suite on every change wants.
    #[arg(long, value_name = "RUN_DIR")]
    pub baseline: Option<PathBuf>,
    /// With --baseline: a gate (repeatable), `VARIANT.WORKLOAD.FOOTING > +N%` as `wasmlab compare
    /// --fail-if` reads it.
    #[arg(
        long = "gate",
        value_name = "FIGURE > +N%",
        requires = "baseline",
        value_parser = wasmlab_analysis::compare::Gate::parse
    )]
    pub gates: Vec<wasmlab_analysis::compare::Gate>,
    /// With --resume: measure on even where the machine, the commit or the tools differ from the
    /// run's start (what differed is recorded in run.json and said in the report's notes).
    #[arg(long, requires = "resume")]
    pub force: bool,
}

impl RunArgs {
    /// What the command line asks of the planner.
    fn request(&self) -> RunRequest {
        RunRequest {
            suite: self.suite.clone().unwrap_or_else(|| {
                let suite = match self.components.is_empty() {
                    true => "quick",
                    false => wasmlab_plan::component::SUITE,
                };
                suite.to_owned()
            }),
            variants: self.variants.clone(),
            connections: self.connections.clone(),
            duration_secs: self.duration.map(|d| d.as_secs_f64()),
            repetitions: self.repetitions,
            max_repetitions: self.max_repetitions,
            cpu_idle: self.cpu_idle,
            seed: self.seed,
            wasm: self.wasm.clone(),
            components: self.components.clone(),
            component_env: self.component_env.clone(),
            variant_files: self.variant_files.clone(),
            quick_setup: !self.no_setup,
            bin_dir: self.bin_dir.clone(),
            rates_from: match (&self.rates_from, self.new_rates) {
                (_, true) => RatesFrom::New,
                (Some(dir), false) => RatesFrom::Run(dir.clone()),
                (None, false) => RatesFrom::LastRunIn(self.results.clone()),
            },
        }
    }
}

/// `KEY=VALUE`, split at the first `=`.
fn key_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{s:?} is not KEY=VALUE"))
}

pub(crate) fn run(args: RunArgs) -> anyhow::Result<()> {
    // From here a signal stops the run: at once until it measures (with what it started),
    // gracefully from then on.
    crate::signals::before_measuring();
    for line in wasmlab_plan::containerd::clean_leftovers()
        .into_iter()
        .chain(wasmlab_plan::containers::clean_leftovers())
    {
        eprintln!("{line}");
    }
    if let Some(dir) = &args.resume {
        return resume(dir, &args);
    }
    let plan = wasmlab_plan::plan(&args.request())?;
    measure(plan, &args, None)
}

/// The run `--baseline` names, read before anything is measured: a wrong directory is said at
/// once, not after the run. `last` (where no such directory is) is the newest complete run of the
/// suite on this machine in --results; with none yet, the run is gated against nothing, said.
fn baseline(
    args: &RunArgs,
    plan: &wasmlab_plan::Plan,
) -> anyhow::Result<
    Option<(
        PathBuf,
        wasmlab_model::run::ServerRunInfo,
        Vec<wasmlab_model::sample::Sample>,
    )>,
> {
    let Some(dir) = &args.baseline else {
        return Ok(None);
    };
    let dir = if dir.as_os_str() == "last" && !dir.exists() {
        let suite = plan.suite.name();
        match wasmlab_plan::earlier::last_complete_run(&args.results, suite, &plan.machine) {
            Some((dir, _)) => {
                eprintln!(
                    "wasmlab: --baseline last: {}, the last complete {suite} run on this machine",
                    dir.display()
                );
                dir
            }
            None => {
                eprintln!(
                    "wasmlab: --baseline last: no complete {suite} run on this machine in {} yet: \
                     this run is gated against none (the next one is gated against it)",
                    args.results.display()
                );
                return Ok(None);
            }
        }
    } else {
        dir.clone()
    };
    match wasmlab_record::read_run(&dir).map_err(|e| anyhow::anyhow!("--baseline: {e:#}"))? {
        Run::Servers { info, samples } => Ok(Some((dir, *info, samples))),
        Run::Programs { .. } => anyhow::bail!(
            "--baseline {} is a program suite's run: the gate compares HTTP suites' headlines",
            dir.display()
        ),
    }
}

/// Builds, measures (on into `resume`'s directory, if given) and reports a planned run.
fn measure(
    mut plan: wasmlab_plan::Plan,
    args: &RunArgs,
    resume: Option<Resumed>,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.baseline.is_none() || matches!(plan.suite, Suite::Servers(_)),
        "--baseline compares HTTP suites' headlines; this is a program suite"
    );
    let baseline = baseline(args, &plan)?;
    let built = wasmlab_measure::build(&plan, !args.no_build)?;
    plan.require_built(if args.no_build {
        "--no-build was given: without it `wasmlab run` builds what its variants need"
    } else {
        "build it in wasmlab's source tree with `cargo build --release`, or point --bin-dir at it"
    });
    // Before the lab starts any thread of its own: they all inherit the generator's CPUs.
    wasmlab_plan::cpus::pin_lab(&plan.cpus).map_err(|e| {
        anyhow::anyhow!(
            "cannot pin the load generator ({}): {e}",
            plan.cpus.describe()
        )
    })?;
    crate::signals::measuring();
    let (dir, run) = wasmlab_measure::measure(
        &plan,
        &built,
        &args.results,
        resume,
        crate::signals::cancel_flag(),
        &wasmlab_report::terminal::answer_so_far,
    )?;
    let written = crate::results::report_files(&dir, &run, args.wide);
    crate::stdout::show(format!("results: {}", dir.path.display()));
    written?;
    let crossed = crossed_thresholds(&run);
    let gated = match (&baseline, &run) {
        (
            Some((baseline_dir, info, samples)),
            Run::Servers {
                info: mine,
                samples: ours,
            },
        ) => {
            let a = wasmlab_analysis::analyse_servers(info, samples);
            let b = wasmlab_analysis::analyse_servers(mine, ours);
            let headline = wasmlab_analysis::compare::headline(&a, &b);
            crate::stdout::show(format!(
                "against the baseline {} ({}):",
                baseline_dir.display(),
                info.header.run_id
            ));
            crate::stdout::show(wasmlab_report::terminal::headline(&headline).trim_end());
            let default = [wasmlab_analysis::compare::Gate::parse("any > +10%")
                .map_err(|e| anyhow::anyhow!(e))?];
            let gates = match args.gates.is_empty() {
                true => &default[..],
                false => &args.gates[..],
            };
            crate::results::gate(gates, &headline).err()
        }
        _ => None,
    };
    // A failed or interrupted run says so first: its thresholds judged an incomplete run; then
    // the thresholds, then the baseline's gates.
    match (run.ending(&dir.path), crossed, gated) {
        (Some(ending), _, _) => Err(ending.into()),
        (None, Some(ending), _) => Err(ending.into()),
        (None, None, Some(e)) => Err(e),
        (None, None, None) => Ok(()),
    }
}

/// `wasmlab run --resume DIR`: the interrupted run's own command line planned again, checked to
/// plan the same suite on the same machine, commit and tools, then measured on.
fn resume(dir: &Path, given: &RunArgs) -> anyhow::Result<()> {
    let info = wasmlab_record::read_info(dir)?;
    let (header, recorded_suite) = match &info {
        RunInfo::Servers(i) => {
            // The suite as the run planned it, before it added repetitions.
            let mut suite = i.suite.clone();
            if let Some(a) = &i.added_repetitions {
                suite.repetitions = a.after;
            }
            (&i.header, serde_json::to_value(&suite)?)
        }
        RunInfo::Programs(i) => (&i.header, serde_json::to_value(&i.suite)?),
    };
    anyhow::ensure!(
        header.state != RunState::Complete,
        "{} is a complete run: nothing to resume",
        dir.display()
    );
    let command = header.command.join(" ");
    let mut args = crate::recorded_run_args(&header.command).map_err(|e| {
        anyhow::anyhow!(
            "{}: its command line ({command}) cannot be read again: {e}",
            dir.display()
        )
    })?;
    // Its relative paths, from where it ran.
    if let Some(cwd) = header.cwd.as_deref().map(Path::new) {
        let from = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = cwd.join(&*p);
            }
        };
        args.wasm.iter_mut().for_each(from);
        args.components.iter_mut().for_each(from);
        args.variant_files.iter_mut().for_each(from);
        args.bin_dir.iter_mut().for_each(from);
        args.rates_from.iter_mut().for_each(from);
        if let Some(suite) = &args.suite
            && cwd.join(suite).is_file()
        {
            args.suite = Some(cwd.join(suite).display().to_string());
        }
    }
    args.seed = Some(header.seed);
    args.results = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    args.no_build |= given.no_build;
    args.no_setup |= given.no_setup;
    args.wide |= given.wide;
    let plan = wasmlab_plan::plan(&args.request())?;
    let planned = match &plan.suite {
        Suite::Servers(s) => serde_json::to_value(s)?,
        Suite::Programs(s) => serde_json::to_value(s)?,
    };
    let changed = differing_keys(&planned, &recorded_suite);
    anyhow::ensure!(
        changed.is_empty(),
        "{} cannot be resumed: its command line ({command}) now plans another suite ({} differ); \
         a changed suite is a new run",
        dir.display(),
        changed.join(", ")
    );
    let git_sha = wasmlab_plan::machine::git_sha(plan.workspace.as_deref());
    let mut differences = differing_keys(
        &serde_json::to_value(&header.machine)?,
        &serde_json::to_value(&plan.machine)?,
    )
    .into_iter()
    .map(|k| format!("machine.{k}"))
    .collect::<Vec<_>>();
    if git_sha != header.git_sha {
        differences.push(format!(
            "commit ({} then, {} now)",
            header.git_sha.as_deref().unwrap_or("none"),
            git_sha.as_deref().unwrap_or("none")
        ));
    }
    anyhow::ensure!(
        differences.is_empty() || given.force,
        "{} was measured where not everything is as here: {}; --force measures on and records both",
        dir.display(),
        differences.join(", ")
    );
    let (results, discarded) = wasmlab_record::ResultsDir::resume(dir)?;
    if let Some(d) = &discarded {
        eprintln!("wasmlab: {}: {d}", dir.display());
    }
    if !differences.is_empty() {
        eprintln!(
            "wasmlab: measuring on with --force where {}",
            differences.join(", ")
        );
    }
    let samples = results.file("samples.jsonl");
    let resumption = |before: usize| Resumption {
        utc: wasmlab_record::utc_stamp(),
        samples_before: before,
        git_sha: git_sha.clone(),
        differences: differences.clone(),
        discarded: discarded.clone(),
    };
    let resumed = match info {
        RunInfo::Servers(mut info) => {
            let samples = wasmlab_record::read_samples(&samples)?;
            info.resumed.push(resumption(samples.len()));
            Resumed::Servers(Box::new(Resume {
                dir: results,
                info: *info,
                samples,
            }))
        }
        RunInfo::Programs(mut info) => {
            let samples = wasmlab_record::read_samples(&samples)?;
            info.resumed.push(resumption(samples.len()));
            Resumed::Programs(Box::new(Resume {
                dir: results,
                info: *info,
                samples,
            }))
        }
    };
    measure(plan, &args, Some(resumed))
}

/// The keys, dotted, where two JSON values differ (the top-level ones of two objects and of the
/// objects they hold; the values themselves for anything else).
fn differing_keys(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    use serde_json::Value::Object;
    match (a, b) {
        (Object(a), Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .flat_map(|k| {
                    let (x, y) = (a.get(k), b.get(k));
                    match (x, y) {
                        (Some(x @ Object(_)), Some(y @ Object(_))) => differing_keys(x, y)
                            .into_iter()
                            .map(|sub| format!("{k}.{sub}"))
                            .collect(),
                        _ if x == y => Vec::new(),
                        _ => vec![k.clone()],
                    }
                })
                .collect()
        }
        _ if a == b => Vec::new(),
        _ => vec!["the whole".to_owned()],
    }
}

/// The suite's thresholds that held, printed one per line; the ending they make (exit 99, as
/// k6's), or None when none held.
fn crossed_thresholds(run: &Run) -> Option<Ending> {
    let Run::Servers { info, samples } = run else {
        return None;
    };
    if info.suite.thresholds.is_empty() {
        return None;
    }
    let crossed = wasmlab_analysis::thresholds::crossed(&info.suite, samples);
    if crossed.is_empty() {
        let n: usize = info.suite.thresholds.iter().map(|t| t.fail_if.len()).sum();
        crate::stdout::show(format!("thresholds: none of {n} crossed"));
        return None;
    }
    let lines: Vec<String> = crossed.iter().map(|c| format!("  {c}")).collect();
    eprintln!("thresholds crossed:\n{}", lines.join("\n"));
    Some(Ending {
        exit_code: crate::THRESHOLD_EXIT,
        message: format!(
            "{} threshold crossing(s), first: {}",
            crossed.len(),
            crossed[0]
        ),
    })
}
