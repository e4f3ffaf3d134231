//! `wasmlab run`: build what is needed, then for each variant launch → verify → measure → stop,
//! writing results as they come.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use wasmlab_load::{LoadConfig, LoadReport, parse_duration};

use crate::machine;
use crate::results::{CsvRow, ResultsDir, SAMPLES_SCHEMA};
use crate::suite::{self, Suite};
use crate::variant::{self, LaunchContext, Running, StartTimes, Variant};
use crate::verify::{self, Check};

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

/// One row of throughput.csv (the gateway study's columns, plus error classes).
#[derive(Debug, Clone, Serialize)]
pub struct ThroughputRow {
    pub variant: String,
    pub workload: String,
    pub connections: usize,
    pub rps: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p99_9_ms: f64,
    pub max_ms: f64,
    pub responses: u64,
    pub errors: u64,
    pub errors_connect: u64,
    pub errors_read_write: u64,
    pub errors_timeout: u64,
    pub errors_non_2xx: u64,
    pub duration_s: f64,
}

impl CsvRow for ThroughputRow {
    const HEADER: &'static [&'static str] = &[
        "variant",
        "workload",
        "connections",
        "rps",
        "p50_ms",
        "p90_ms",
        "p99_ms",
        "p99_9_ms",
        "max_ms",
        "responses",
        "errors",
        "errors_connect",
        "errors_read_write",
        "errors_timeout",
        "errors_non_2xx",
        "duration_s",
    ];

    fn fields(&self) -> Vec<String> {
        vec![
            self.variant.clone(),
            self.workload.clone(),
            self.connections.to_string(),
            format!("{:.1}", self.rps),
            format!("{:.4}", self.p50_ms),
            format!("{:.4}", self.p90_ms),
            format!("{:.4}", self.p99_ms),
            format!("{:.4}", self.p99_9_ms),
            format!("{:.4}", self.max_ms),
            self.responses.to_string(),
            self.errors.to_string(),
            self.errors_connect.to_string(),
            self.errors_read_write.to_string(),
            self.errors_timeout.to_string(),
            self.errors_non_2xx.to_string(),
            format!("{:.3}", self.duration_s),
        ]
    }
}

impl ThroughputRow {
    fn new(variant: &str, workload: &str, r: &LoadReport) -> Self {
        Self {
            variant: variant.to_owned(),
            workload: workload.to_owned(),
            connections: r.connections,
            rps: r.rps,
            p50_ms: r.latency_ms.p50,
            p90_ms: r.latency_ms.p90,
            p99_ms: r.latency_ms.p99,
            p99_9_ms: r.latency_ms.p99_9,
            max_ms: r.latency_ms.max,
            responses: r.responses,
            errors: r.errors.total(),
            errors_connect: r.errors.connect,
            errors_read_write: r.errors.read_write,
            errors_timeout: r.errors.timeout,
            errors_non_2xx: r.errors.non_2xx,
            duration_s: r.elapsed_secs,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
struct VariantOutcome {
    name: String,
    /// measured | failed | interrupted
    status: &'static str,
    reason: Option<String>,
    start: Option<StartTimes>,
    checks: Vec<Check>,
}

#[derive(Debug, Serialize)]
struct RunInfo<'a> {
    schema: u32,
    run_id: &'a str,
    command: Vec<String>,
    started_utc: String,
    finished_utc: Option<String>,
    /// running | complete | interrupted
    state: &'static str,
    git_sha: Option<String>,
    /// The core-module guest given with --wasm, if any (else the built-in one ran).
    core_guest: Option<String>,
    machine: machine::Machine,
    suite: &'a Suite,
    variants: &'a [VariantOutcome],
}

#[derive(Serialize)]
struct Sample<'a, T: Serialize> {
    schema: u32,
    kind: &'static str,
    variant: &'a str,
    workload: Option<&'a str>,
    connections: Option<usize>,
    repetition: u32,
    data: T,
}

/// Set by SIGINT/SIGTERM; everything long-running polls it.
fn cancel_flag() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe. OnceLock is initialised before the handler is set.
    if let Some(f) = CANCEL.get() {
        f.store(true, Ordering::SeqCst);
    }
}

static CANCEL: OnceLock<Arc<AtomicBool>> = OnceLock::new();

fn install_signal_handlers() -> Arc<AtomicBool> {
    let flag = cancel_flag().clone();
    let _ = CANCEL.set(flag.clone());
    // SAFETY: the handler only performs an atomic store.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    flag
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let mut suite = suite::load(&args.suite)?;
    if !args.variants.is_empty() {
        suite.variants = args.variants.clone();
    }
    if !args.connections.is_empty() {
        suite.connections = args.connections.clone();
    }
    if let Some(d) = args.duration {
        suite.duration_secs = d.as_secs_f64();
    }
    suite.validate()?;
    let core_guest = match &args.wasm {
        Some(p) => {
            anyhow::ensure!(p.is_file(), "--wasm {}: no such file", p.display());
            Some(p.canonicalize()?)
        }
        None => None,
    };
    let variants: Vec<&'static Variant> = suite
        .variants
        .iter()
        .map(|v| variant::find(v))
        .collect::<anyhow::Result<_>>()?;

    let bin_dir = match &args.bin_dir {
        Some(d) => d.clone(),
        None => std::env::current_exe()?
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| anyhow::anyhow!("cannot tell where wasmlab's executable is"))?,
    };
    let workspace = crate::workspace_dir();
    if !args.no_build {
        build_binaries(
            workspace.as_deref(),
            &bin_dir,
            &variant::binaries(variants.iter().copied()),
        )?;
    }

    let cancel = install_signal_handlers();
    let mut dir = ResultsDir::create(&args.results)?;
    eprintln!(
        "wasmlab: suite {}; results in {}",
        suite.name,
        dir.path.display()
    );
    let started_utc = crate::results::utc_stamp();
    let machine = machine::describe(workspace.as_deref());
    let git_sha = machine::git_sha(workspace.as_deref());
    let mut outcomes: Vec<VariantOutcome> = Vec::new();
    let write_run_info = |dir: &ResultsDir, outcomes: &[VariantOutcome], state, finished| {
        dir.write_json(
            "run.json",
            &RunInfo {
                schema: SAMPLES_SCHEMA,
                run_id: &dir.run_id,
                command: std::env::args().collect(),
                started_utc: started_utc.clone(),
                finished_utc: finished,
                state,
                git_sha: git_sha.clone(),
                core_guest: core_guest.as_ref().map(|p| p.display().to_string()),
                machine: machine.clone(),
                suite: &suite,
                variants: outcomes,
            },
        )
    };
    write_run_info(&dir, &outcomes, "running", None)?;
    let mut rows: Vec<ThroughputRow> = Vec::new();
    dir.write_csv("throughput.csv", &rows)?;

    // The upstream echo server for /proxy, as a child process like the variants.
    let exe = std::env::current_exe()?;
    let mut up_cmd = std::process::Command::new(&exe);
    up_cmd.args(["upstream", "--port", "0"]);
    let start_timeout = Duration::from_secs_f64(suite.start_timeout_secs);
    let upstream = variant::spawn_server(
        "upstream",
        up_cmd,
        &LaunchContext {
            bin_dir: &bin_dir,
            upstream: "",
            start_timeout,
            log_path: dir.file("upstream.log"),
            core_guest: None,
        },
        "/",
    )?;
    let upstream_url = format!("http://{}", upstream.addr);

    let cells = variants.len() * suite.workloads.len() * suite.connections.len();
    let pb = ProgressBar::new(cells as u64);
    pb.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} cells  {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let say = |msg: String| {
        if pb.is_hidden() {
            eprintln!("{msg}");
        } else {
            pb.println(msg);
        }
    };
    let client = verify::Client::new()?;

    'variants: for v in &variants {
        if cancel.load(Ordering::SeqCst) {
            break;
        }
        let cells_of_variant = (suite.workloads.len() * suite.connections.len()) as u64;
        let done_before = pb.position();
        pb.set_message(format!("{}: starting", v.name));
        let ctx = LaunchContext {
            bin_dir: &bin_dir,
            upstream: &upstream_url,
            start_timeout,
            log_path: dir.file(&format!("{}.log", v.name)),
            core_guest: core_guest.as_deref(),
        };
        let mut outcome = VariantOutcome {
            name: v.name.to_owned(),
            status: "measured",
            reason: None,
            start: None,
            checks: Vec::new(),
        };
        let fail = |outcome: &mut VariantOutcome, reason: String| {
            say(format!("{}: FAILED: {reason}", outcome.name));
            outcome.status = "failed";
            outcome.reason = Some(reason);
        };
        let mut running: Running = match v.launch(&ctx) {
            Ok(r) => r,
            Err(e) => {
                fail(&mut outcome, format!("{e:#}"));
                outcomes.push(outcome);
                write_run_info(&dir, &outcomes, "running", None)?;
                pb.set_position(done_before + cells_of_variant);
                continue;
            }
        };
        outcome.start = Some(running.start);
        dir.append_sample(&Sample {
            schema: SAMPLES_SCHEMA,
            kind: "start",
            variant: v.name,
            workload: None,
            connections: None,
            repetition: 0,
            data: running.start,
        })?;

        pb.set_message(format!("{}: verifying", v.name));
        outcome.checks = verify::verify(
            &client,
            running.addr,
            &suite.workloads,
            suite.echo_body_bytes,
        );
        let failed: Vec<String> = outcome
            .checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{}: {}", c.what, c.detail))
            .collect();
        if !failed.is_empty() {
            fail(
                &mut outcome,
                format!("verification failed, not measured ({})", failed.join("; ")),
            );
            running.stop();
            outcomes.push(outcome);
            write_run_info(&dir, &outcomes, "running", None)?;
            pb.set_position(done_before + cells_of_variant);
            continue;
        }

        for workload in &suite.workloads {
            let req = verify::workload_request(workload, suite.echo_body_bytes)?;
            for &conns in &suite.connections {
                if cancel.load(Ordering::SeqCst) {
                    outcome.status = "interrupted";
                    outcomes.push(outcome);
                    break 'variants;
                }
                pb.set_message(format!("{} {workload} c={conns}", v.name));
                let mut config =
                    LoadConfig::new(&format!("http://{}{}", running.addr, req.target))?;
                config.method = req.method.parse()?;
                config.body = req.body.clone();
                config.connections = conns;
                config.threads = suite.load_threads;
                config.timeout = Duration::from_secs_f64(suite.timeout_secs);
                config.cancel = Some(cancel.clone());
                if suite.warmup_secs > 0.0 {
                    config.duration = Some(Duration::from_secs_f64(suite.warmup_secs));
                    wasmlab_load::run(config.clone())?;
                }
                config.duration = Some(Duration::from_secs_f64(suite.duration_secs));
                let report = wasmlab_load::run(config)?;
                if cancel.load(Ordering::SeqCst) {
                    // Cut short: not a measurement of the configured duration.
                    continue;
                }
                if let Some(status) = running.exited() {
                    fail(
                        &mut outcome,
                        format!(
                            "exited during measurement ({status}); see {}",
                            ctx.log_path.display()
                        ),
                    );
                    outcomes.push(outcome);
                    write_run_info(&dir, &outcomes, "running", None)?;
                    pb.set_position(done_before + cells_of_variant);
                    continue 'variants;
                }
                dir.append_sample(&Sample {
                    schema: SAMPLES_SCHEMA,
                    kind: "throughput",
                    variant: v.name,
                    workload: Some(workload),
                    connections: Some(conns),
                    repetition: 0,
                    data: &report,
                })?;
                let row = ThroughputRow::new(v.name, workload, &report);
                say(format!(
                    "{:<16} {:<8} c={:<5} {:>10.0} req/s  p50 {:.3} ms  p99 {:.3} ms  errors {}",
                    v.name, workload, conns, row.rps, row.p50_ms, row.p99_ms, row.errors
                ));
                rows.push(row);
                dir.write_csv("throughput.csv", &rows)?;
                pb.inc(1);
            }
        }
        running.stop();
        outcomes.push(outcome);
        write_run_info(&dir, &outcomes, "running", None)?;
    }
    pb.finish_and_clear();
    upstream.stop();

    let interrupted = cancel.load(Ordering::SeqCst);
    let state = if interrupted {
        "interrupted"
    } else {
        "complete"
    };
    write_run_info(&dir, &outcomes, state, Some(crate::results::utc_stamp()))?;
    println!("{}", table(&rows));
    for o in outcomes.iter().filter(|o| o.status == "failed") {
        println!(
            "{}: not measured: {}",
            o.name,
            o.reason.as_deref().unwrap_or("unknown reason")
        );
    }
    println!("results: {}", dir.path.display());
    if interrupted {
        return Err(RunEnded {
            exit_code: 130,
            message: format!(
                "interrupted; the cells finished so far are in {}",
                dir.path.display()
            ),
        }
        .into());
    }
    let failed = outcomes.iter().filter(|o| o.status == "failed").count();
    if failed > 0 {
        return Err(RunEnded {
            exit_code: 1,
            message: format!("{failed} variant(s) failed; see above and run.json"),
        }
        .into());
    }
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

/// The terminal table: each cell's throughput and its ratio to `native` in the same cell.
pub fn table(rows: &[ThroughputRow]) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header([
        "variant",
        "workload",
        "conns",
        "req/s",
        "× native",
        "p50 ms",
        "p99 ms",
        "errors",
    ]);
    for r in rows {
        let native = rows
            .iter()
            .find(|n| {
                n.variant == "native" && n.workload == r.workload && n.connections == r.connections
            })
            .map(|n| n.rps);
        let ratio = match native {
            Some(n) if n > 0.0 => format!("{:.3}", r.rps / n),
            _ => "–".into(),
        };
        t.add_row([
            r.variant.clone(),
            r.workload.clone(),
            r.connections.to_string(),
            format!("{:.0}", r.rps),
            ratio,
            format!("{:.3}", r.p50_ms),
            format!("{:.3}", r.p99_ms),
            r.errors.to_string(),
        ]);
    }
    t
}
