//! `wasmlab run`: build what is needed, then measure cold starts, and, for each repetition, each
//! variant in a shuffled order: launch → verify → closed loop → warm latency → open loop → stop.
//! Every sample is appended as it is measured; the CSVs are rewritten after each; the analysis,
//! summary.md and report.html come at the end (and from `wasmlab report` at any time).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use wasmlab_load::{LoadConfig, LoadReport, parse_duration};

use crate::analyze::stats;
use crate::launch::{self, LaunchContext, Running, Variant};
use crate::measure::resources::Sampler;
use crate::measure::verify::{self, WorkloadRequest};
use crate::plan::machine;
use crate::plan::suite::{self, Suite};
use crate::record::model::{Artifact, Kind, RunInfo, SAMPLES_SCHEMA, Sample, VariantOutcome};
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
}

/// Set by SIGINT/SIGTERM; everything long-running polls it.
static CANCEL: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe. The OnceLock is set before the handler.
    if let Some(f) = CANCEL.get() {
        f.store(true, Ordering::SeqCst);
    }
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

/// A run in progress: where it writes, and what it has measured so far.
struct Lab {
    dir: ResultsDir,
    info: RunInfo,
    samples: Vec<Sample>,
    cancel: Arc<AtomicBool>,
    pb: ProgressBar,
}

impl Lab {
    fn say(&self, msg: String) {
        if self.pb.is_hidden() {
            eprintln!("{msg}");
        } else {
            self.pb.println(msg);
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// Appends a sample to samples.jsonl and rewrites the CSVs.
    fn record(&mut self, sample: Sample) -> anyhow::Result<()> {
        self.dir.append_sample(&sample)?;
        self.samples.push(sample);
        crate::record::csv::write_csvs(&self.dir, &self.info, &self.samples)
    }

    fn save_info(&self) -> anyhow::Result<()> {
        self.dir.write_json("run.json", &self.info)
    }

    fn outcome(&mut self, name: &str) -> &mut VariantOutcome {
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

    fn failed(&self, name: &str) -> bool {
        self.info.failed(name)
    }

    /// Launches `v` and verifies its answers; a variant that does not start or answers wrongly is
    /// marked failed (and `None` returned).
    fn launch_verified(
        &mut self,
        v: &Variant,
        ctx: &LaunchContext<'_>,
        client: &verify::Client,
        suite: &Suite,
    ) -> anyhow::Result<Option<Running>> {
        let running = match v.launch(ctx) {
            Ok(running) => running,
            Err(e) => {
                self.fail(v.name, format!("{e:#}"))?;
                return Ok(None);
            }
        };
        self.pb.set_message(format!("{}: verifying", v.name));
        let checks = verify::verify(
            client,
            running.addr,
            &suite.workloads,
            suite.echo_body_bytes,
        );
        let failed: Vec<String> = checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{}: {}", c.what, c.detail))
            .collect();
        self.outcome(v.name).checks = checks;
        if !failed.is_empty() {
            running.stop();
            self.fail(
                v.name,
                format!("verification failed ({})", failed.join("; ")),
            )?;
            return Ok(None);
        }
        Ok(Some(running))
    }

    /// Marks a variant failed: it is measured no further and left out of every table (its rows
    /// leave the CSVs now; its raw samples stay in samples.jsonl).
    fn fail(&mut self, name: &str, reason: String) -> anyhow::Result<()> {
        self.say(format!("{name}: FAILED: {reason}"));
        let o = self.outcome(name);
        o.status = "failed".into();
        o.reason = Some(reason);
        self.save_info()?;
        crate::record::csv::write_csvs(&self.dir, &self.info, &self.samples)
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let mut suite = suite::load(&args.suite)?;
    if !args.variants.is_empty() {
        suite.variants = args.variants.clone();
        if let Some(c) = &mut suite.cold_start {
            c.variants.retain(|v| args.variants.contains(v));
            if c.variants.is_empty() {
                c.variants = args.variants.clone();
            }
        }
    }
    if !args.connections.is_empty() {
        suite.connections = args.connections.clone();
    }
    if let Some(d) = args.duration {
        suite.duration_secs = d.as_secs_f64();
    }
    if let Some(r) = args.repetitions {
        suite.repetitions = r;
    }
    suite.validate()?;
    let core_guest = match &args.wasm {
        Some(p) => {
            anyhow::ensure!(p.is_file(), "--wasm {}: no such file", p.display());
            Some(p.canonicalize()?)
        }
        None => None,
    };
    let find = |names: &[String]| -> anyhow::Result<Vec<&'static Variant>> {
        names.iter().map(|v| launch::find(v)).collect()
    };
    let variants = find(&suite.variants)?;
    let cold_variants = find(&suite.cold_start_variants())?;

    let bin_dir = match &args.bin_dir {
        Some(d) => d.clone(),
        None => std::env::current_exe()?
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| anyhow::anyhow!("cannot tell where wasmlab's executable is"))?,
    };
    let workspace = crate::workspace_dir();
    let mut everything: Vec<&Variant> = variants.clone();
    for v in &cold_variants {
        if !everything.iter().any(|e| e.name == v.name) {
            everything.push(v);
        }
    }
    if !args.no_build {
        build_binaries(
            workspace.as_deref(),
            &bin_dir,
            &launch::binaries(everything.iter().copied()),
        )?;
    }

    let allowed = crate::plan::cpus::allowed()
        .map_err(|e| anyhow::anyhow!("cannot read this process's CPU affinity: {e}"))?;
    let cpus = crate::plan::cpus::CpuPlan::new(&allowed, suite.load_threads, suite.cpu_partition);
    // Described before the lab pins itself: pinned, it would count only the generator's CPUs.
    let machine = machine::describe(workspace.as_deref());
    // Before the lab starts any thread of its own: they all inherit the generator's CPUs.
    cpus.pin_lab()
        .map_err(|e| anyhow::anyhow!("cannot pin the load generator ({}): {e}", cpus.describe()))?;
    let cancel = install_signal_handlers();
    let dir = ResultsDir::create(&args.results)?;
    eprintln!(
        "wasmlab: suite {}; results in {}; {}",
        suite.name,
        dir.path.display(),
        cpus.describe()
    );
    let seed = args.seed.or(suite.seed).unwrap_or_else(|| {
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
        git_sha: machine::git_sha(workspace.as_deref()),
        core_guest: core_guest.as_ref().map(|p| p.display().to_string()),
        seed,
        orders: Vec::new(),
        machine,
        cpus: cpus.clone(),
        suite: suite.clone(),
        artifacts: Vec::new(),
        variants: Vec::new(),
    };
    let pb = ProgressBar::new(planned_steps(&suite) as u64);
    pb.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} steps  {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let mut lab = Lab {
        dir,
        info,
        samples: Vec::new(),
        cancel,
        pb,
    };
    // Outcomes in the suite's order, whatever order the variants run in.
    for v in &everything {
        lab.outcome(v.name);
    }
    lab.save_info()?;
    crate::record::csv::write_csvs(&lab.dir, &lab.info, &lab.samples)?;

    // The upstream echo server for /proxy, as a child process like the variants.
    let exe = std::env::current_exe()?;
    let mut up_cmd = std::process::Command::new(&exe);
    up_cmd.args(["upstream", "--port", "0"]);
    let start_timeout = Duration::from_secs_f64(suite.start_timeout_secs);
    let upstream = launch::spawn_server(
        "upstream",
        up_cmd,
        &LaunchContext {
            bin_dir: &bin_dir,
            cpus: &cpus,
            upstream: "",
            start_timeout,
            log_path: lab.dir.file("upstream.log"),
            core_guest: None,
            precompiled_guest: None,
        },
        "/",
    )?;
    let upstream_url = format!("http://{}", upstream.addr);

    lab.info.artifacts = artifacts(&bin_dir, &everything, core_guest.as_deref());
    let cwasm = lab.dir.file("guest.cwasm");
    let precompiled = if everything.iter().any(|v| v.needs_precompiled()) {
        match precompile(&bin_dir, core_guest.as_deref(), &cwasm) {
            Ok(()) => {
                lab.info.artifacts.push(Artifact {
                    name: "core guest, precompiled (.cwasm)".into(),
                    path: cwasm.display().to_string(),
                    bytes: std::fs::metadata(&cwasm).map_or(0, |m| m.len()),
                });
                Some(cwasm.as_path())
            }
            Err(e) => {
                for v in everything.iter().filter(|v| v.needs_precompiled()) {
                    lab.fail(v.name, format!("{e:#}"))?;
                }
                None
            }
        }
    } else {
        None
    };
    lab.save_info()?;
    let ctx = |name: &str, lab: &Lab| LaunchContext {
        bin_dir: &bin_dir,
        cpus: &cpus,
        upstream: &upstream_url,
        start_timeout,
        log_path: lab.dir.file(&format!("{name}.log")),
        core_guest: core_guest.as_deref(),
        precompiled_guest: precompiled,
    };

    // Verification first: a variant that answers wrongly is measured in no way at all, its cold
    // starts included.
    let client = verify::Client::new()?;
    for v in &everything {
        if lab.cancelled() {
            break;
        }
        lab.pb.inc(1);
        if lab.failed(v.name) {
            continue;
        }
        if let Some(running) = lab.launch_verified(v, &ctx(v.name, &lab), &client, &suite)? {
            running.stop();
        }
    }
    lab.save_info()?;

    // Cold starts: each launch in a shuffled order, on an otherwise idle machine.
    if let Some(cold) = suite.cold_start.clone() {
        for i in 0..cold.runs {
            for v in stats::shuffled(&cold_variants, seed ^ 0xc01d ^ u64::from(i)) {
                if lab.cancelled() {
                    break;
                }
                lab.pb.inc(1);
                if lab.failed(v.name) {
                    continue;
                }
                lab.pb
                    .set_message(format!("{}: cold start {}/{}", v.name, i + 1, cold.runs));
                match v.launch(&ctx(v.name, &lab)) {
                    Ok(running) => {
                        let mut s = Sample::new(Kind::ColdStart, v.name, i);
                        s.start = Some(running.start);
                        running.stop();
                        lab.outcome(v.name);
                        lab.record(s)?;
                    }
                    Err(e) => lab.fail(v.name, format!("{e:#}"))?,
                }
            }
        }
    }

    'reps: for r in 0..suite.repetitions {
        let order = stats::shuffled(&variants, seed.wrapping_add(u64::from(r)));
        lab.info
            .orders
            .push(order.iter().map(|v| v.name.to_owned()).collect());
        lab.save_info()?;
        for v in order {
            if lab.cancelled() {
                break 'reps;
            }
            let steps = variant_steps(&suite);
            let done_before = lab.pb.position();
            if lab.failed(v.name) {
                lab.pb.set_position(done_before + steps);
                continue;
            }
            lab.pb
                .set_message(format!("{}: starting (run {})", v.name, r + 1));
            let ctx = ctx(v.name, &lab);
            // Each launch is verified again: it is a new process.
            let Some(mut running) = lab.launch_verified(v, &ctx, &client, &suite)? else {
                lab.pb.set_position(done_before + steps);
                continue;
            };
            let mut subject = Subject {
                v,
                r,
                running: &mut running,
                log: &ctx.log_path,
            };
            match measure_variant(&mut lab, &suite, &mut subject) {
                Ok(()) => {}
                Err(e) if e.is::<VariantDied>() => {
                    lab.fail(v.name, format!("{e:#}"))?;
                    lab.pb.set_position(done_before + steps);
                }
                Err(e) => return Err(e),
            }
            running.stop();
            lab.save_info()?;
        }
    }
    lab.pb.finish_and_clear();
    upstream.stop();

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
    for o in lab.info.variants.iter().filter(|o| o.status == "failed") {
        println!(
            "{}: not measured: {}",
            o.name,
            o.reason.as_deref().unwrap_or("unknown reason")
        );
    }
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
    let failed = lab
        .info
        .variants
        .iter()
        .filter(|o| o.status == "failed")
        .count();
    if failed > 0 {
        return Err(RunEnded {
            exit_code: 1,
            message: format!("{failed} variant(s) failed; see above and run.json"),
        }
        .into());
    }
    Ok(())
}

/// Progress steps: verification of each variant, cold launches, then per repetition and variant
/// its cells.
fn planned_steps(suite: &Suite) -> usize {
    let cold = suite
        .cold_start
        .as_ref()
        .map_or(0, |c| c.runs as usize * suite.cold_start_variants().len());
    let mut verified = suite.variants.clone();
    for v in suite.cold_start_variants() {
        if !verified.contains(&v) {
            verified.push(v);
        }
    }
    verified.len()
        + cold
        + suite.repetitions as usize * suite.variants.len() * variant_steps(suite) as usize
}

fn variant_steps(suite: &Suite) -> u64 {
    let fractions = suite.open_loop.as_ref().map_or(0, |o| o.fractions.len());
    (suite.workloads.len() * suite.connections.len()
        + suite.warm_workloads().len()
        + suite.open_loop_workloads().len() * fractions) as u64
}

/// The variant's process died while being measured.
#[derive(Debug)]
struct VariantDied(String);

impl std::fmt::Display for VariantDied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for VariantDied {}

/// One load cell against a running variant, its process tree sampled meanwhile.
struct Cell<'a> {
    kind: Kind,
    workload: &'a str,
    req: &'a WorkloadRequest,
    connections: usize,
    duration: f64,
    warmup: f64,
    rate: Option<f64>,
    load_fraction: Option<f64>,
}

/// What is being measured: a running variant in repetition `r`, its stderr in `log`.
struct Subject<'a> {
    v: &'a Variant,
    r: u32,
    running: &'a mut Running,
    log: &'a Path,
}

/// Measures all of a variant's cells for its repetition. Returns early (Ok) when cancelled.
fn measure_variant(lab: &mut Lab, suite: &Suite, sub: &mut Subject<'_>) -> anyhow::Result<()> {
    let v = sub.v;
    let mut best_rps: Vec<(String, f64)> = Vec::new();
    for workload in &suite.workloads {
        let req = verify::workload_request(workload, suite.echo_body_bytes)?;
        for &conns in &suite.connections {
            let cell = Cell {
                kind: Kind::Throughput,
                workload,
                req: &req,
                connections: conns,
                duration: suite.duration_secs,
                warmup: suite.warmup_secs,
                rate: None,
                load_fraction: None,
            };
            let Some(report) = measure_cell(lab, suite, sub, &cell)? else {
                return Ok(());
            };
            match best_rps.iter_mut().find(|(w, _)| w == workload) {
                Some((_, best)) => *best = best.max(report.rps),
                None => best_rps.push((workload.clone(), report.rps)),
            }
        }
    }
    if let Some(warm) = &suite.warm {
        for workload in suite.warm_workloads() {
            let req = verify::workload_request(&workload, suite.echo_body_bytes)?;
            let cell = Cell {
                kind: Kind::Warm,
                workload: &workload,
                req: &req,
                connections: 1,
                duration: warm.duration_secs,
                warmup: warm.warmup_secs,
                rate: None,
                load_fraction: None,
            };
            if measure_cell(lab, suite, sub, &cell)?.is_none() {
                return Ok(());
            }
        }
    }
    if let Some(open) = &suite.open_loop {
        for workload in suite.open_loop_workloads() {
            let req = verify::workload_request(&workload, suite.echo_body_bytes)?;
            let Some(max) = best_rps
                .iter()
                .find(|(w, _)| *w == workload)
                .map(|(_, m)| *m)
                .filter(|m| *m > 0.0)
            else {
                lab.say(format!(
                    "{} {workload}: no closed-loop maximum measured, open loop skipped",
                    v.name
                ));
                continue;
            };
            for &fraction in &open.fractions {
                let cell = Cell {
                    kind: Kind::OpenLoop,
                    workload: &workload,
                    req: &req,
                    connections: open.connections,
                    duration: open.duration_secs,
                    warmup: 0.0,
                    rate: Some(max * fraction),
                    load_fraction: Some(fraction),
                };
                if measure_cell(lab, suite, sub, &cell)?.is_none() {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// Warms up, measures one cell and records it. None when cancelled (nothing recorded).
fn measure_cell(
    lab: &mut Lab,
    suite: &Suite,
    sub: &mut Subject<'_>,
    cell: &Cell<'_>,
) -> anyhow::Result<Option<LoadReport>> {
    let (v, r) = (sub.v, sub.r);
    if lab.cancelled() {
        return Ok(None);
    }
    let what = match (cell.kind, cell.load_fraction) {
        (Kind::OpenLoop, Some(f)) => format!("open loop {:.0}%", f * 100.0),
        (Kind::Warm, _) => "warm".into(),
        _ => format!("c={}", cell.connections),
    };
    lab.pb.set_message(format!(
        "{} {} {what} (run {}/{})",
        v.name,
        cell.workload,
        r + 1,
        suite.repetitions
    ));
    let mut config = LoadConfig::new(&format!("http://{}{}", sub.running.addr, cell.req.target))?;
    config.method = cell.req.method.parse()?;
    config.body = cell.req.body.clone();
    config.connections = cell.connections;
    config.threads = suite.load_threads.min(cell.connections);
    config.timeout = Duration::from_secs_f64(suite.timeout_secs);
    config.cancel = Some(lab.cancel.clone());
    if cell.warmup > 0.0 {
        config.duration = Some(Duration::from_secs_f64(cell.warmup));
        wasmlab_load::run(config.clone())?;
    }
    config.duration = Some(Duration::from_secs_f64(cell.duration));
    config.rate = cell.rate;
    let sampler = Sampler::start(sub.running.pid());
    let report = wasmlab_load::run(config)?;
    let resources = sampler.finish();
    if lab.cancelled() {
        // Cut short: not a measurement of the configured duration.
        return Ok(None);
    }
    if let Some(status) = sub.running.exited() {
        return Err(VariantDied(format!(
            "exited during measurement ({status}); see {}",
            sub.log.display()
        ))
        .into());
    }
    let line = match &report.open_loop {
        Some(o) => format!(
            "{:<22} {:<8} {what:<16} {:>9.0} req/s offered, p50 {:.3} ms p99 {:.3} ms (uncorrected p99 {:.3}), dropped {}, errors {}",
            v.name,
            cell.workload,
            o.target_rate,
            report.latency_ms.p50,
            report.latency_ms.p99,
            o.uncorrected_ms.p99,
            o.dropped,
            report.errors.total()
        ),
        None => format!(
            "{:<22} {:<8} {what:<16} {:>9.0} req/s  p50 {:.3} ms  p99 {:.3} ms  errors {}{}",
            v.name,
            cell.workload,
            report.rps,
            report.latency_ms.p50,
            report.latency_ms.p99,
            report.errors.total(),
            if report.generator_saturated {
                "  (generator saturated)"
            } else {
                ""
            }
        ),
    };
    lab.say(line);
    let mut s = Sample::new(cell.kind, v.name, r);
    s.workload = Some(cell.workload.to_owned());
    s.load_fraction = cell.load_fraction;
    s.resources = Some(resources);
    let s = s.with_load(report.clone());
    lab.record(s)?;
    lab.pb.inc(1);
    Ok(Some(report))
}

/// Sizes of what the variants run: gateway binaries and guests.
fn artifacts(bin_dir: &Path, variants: &[&Variant], core_guest: Option<&Path>) -> Vec<Artifact> {
    let mut out = Vec::new();
    let mut add = |name: String, path: &Path| {
        if let Ok(m) = std::fs::metadata(path) {
            out.push(Artifact {
                name,
                path: path.display().to_string(),
                bytes: m.len(),
            });
        }
    };
    for b in launch::binaries(variants.iter().copied()) {
        add(format!("{b} (binary)"), &bin_dir.join(b));
    }
    match core_guest {
        Some(p) => add("core guest, --wasm (.wasm)".into(), p),
        None => add(
            "core guest (.wasm)".into(),
            Path::new(wasmlab_guest_artifacts::CORE_PATH),
        ),
    }
    add(
        "WASI command guest (.wasm)".into(),
        Path::new(wasmlab_guest_artifacts::COMMAND_PATH),
    );
    out
}

/// Compiles the core guest to `out` with the Wasm gateway's own settings.
fn precompile(bin_dir: &Path, core_guest: Option<&Path>, out: &Path) -> anyhow::Result<()> {
    let gateway = bin_dir.join(launch::WASM_GATEWAY);
    let mut cmd = std::process::Command::new(&gateway);
    cmd.args(["--executor", "pooled", "--precompile"]).arg(out);
    if let Some(g) = core_guest {
        cmd.arg("--wasm").arg(g);
    }
    let o = cmd
        .output()
        .map_err(|e| anyhow::anyhow!("precompile with {}: {e}", gateway.display()))?;
    anyhow::ensure!(
        o.status.success(),
        "precompiling the guest failed: {}",
        String::from_utf8_lossy(&o.stderr).trim()
    );
    Ok(())
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

/// Runs `cargo build` for the gateway binaries when wasmlab runs from its source tree, with the
/// profile of the directory they are expected in.
fn build_binaries(
    workspace: Option<&Path>,
    bin_dir: &Path,
    binaries: &[&str],
) -> anyhow::Result<()> {
    let Some(ws) = workspace else {
        return Ok(());
    };
    let profile = match bin_dir.file_name().and_then(|n| n.to_str()) {
        Some("release") => Some("--release"),
        Some("debug") => None,
        _ => {
            eprintln!(
                "wasmlab: not building: {} is not a cargo target directory",
                bin_dir.display()
            );
            return Ok(());
        }
    };
    let mut cmd =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(ws).arg("build").args(profile);
    for b in binaries {
        cmd.args(["--bin", b]);
    }
    eprintln!("wasmlab: building {}", binaries.join(", "));
    let status = cmd.status().map_err(|e| {
        anyhow::anyhow!("run cargo to build the gateways: {e} (or pass --no-build)")
    })?;
    anyhow::ensure!(status.success(), "building the gateways failed");
    Ok(())
}
