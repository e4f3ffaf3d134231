//! `wasmlab`: the command line on top of the lab's phases. It parses the arguments into plain
//! requests and runs the pipeline (plan → build → measure and record → analyse → report); every
//! phase below it is a crate of its own that knows nothing of the command line.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod history;
mod image;
mod load;
mod merge;
mod results;
mod run;
mod signals;
mod stdout;
mod variants;

/// The exit status of a run, load or gate that crossed a threshold (k6's).
const THRESHOLD_EXIT: u8 = 99;

#[derive(Parser)]
#[command(
    version,
    about = "wasmlab: what does WebAssembly cost an HTTP server, against native code?"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

const RUN_EXAMPLES: &str = "\
Examples:
  Every variant ready here on every workload, with intervals (about 6 minutes once built):
    wasmlab run --suite quick
  Two variants of a suite, at two concurrency levels, 5 s cells:
    wasmlab run --suite isolation --variant native --variant wasmtime-pooled --connections 50,100 --duration 5s
  Your own core-module guest in the pooled gateway, on your own routes:
    wasmlab run --suite my.toml --wasm my-guest.wasm
  Your own server, from a variant file (docs/variants.md):
    wasmlab run --variant-file my-server.toml --variant native --variant my-server
  What a suite measures, to start your own from:
    wasmlab show-suite quick";

const LOAD_EXAMPLES: &str = "\
Examples:
  Closed loop, 50 connections for 10 s (like wrk):
    wasmlab load http://127.0.0.1:8080/ -c 50 -d 10s
  Open loop at 20,000 req/s, latency corrected for coordinated omission (like wrk2):
    wasmlab load http://127.0.0.1:8080/ -c 50 -d 10s -R 20000
  A POST over HTTP/2, 10 streams per connection, failing a pipeline past a threshold (like k6):
    wasmlab load https://example.internal/echo -m POST -b hello --h2 --streams 10 --fail-if 'p99>50ms'
  One part of a load from many machines, started together, then merged:
    wasmlab load http://10.0.0.12:8080/ -c 100 -d 30s --start-at 2026-11-27T12:00:00Z --out part-1.json
    wasmlab merge part-*.json";

#[derive(Subcommand)]
enum Command {
    /// Run a suite: build, start and verify each variant; measure cold start, throughput, warm and
    /// open-loop latency and resources (or, for a program suite, run its programs in every
    /// engine); write results/<run-id>/ with report.html.
    #[command(after_help = RUN_EXAMPLES)]
    Run(run::RunArgs),
    /// Rebuild a results directory's CSVs, summary.md and report.html from its raw samples.
    Report(results::ReportArgs),
    /// Compare two results directories cell by cell, with confidence intervals, then their
    /// headlines: each variant's cost × native in both, and whether it held (within 10%, intervals
    /// overlapping).
    Compare(results::CompareArgs),
    /// Every run of an HTTP suite in a results directory: each headline figure (a variant's cost
    /// × native, per workload, at equal load and saturated) run after run, per suite and
    /// machine, where a tool's version changed and where a figure moved beyond its interval;
    /// written as one offline page, DIR/history.html (or --json).
    History(history::HistoryArgs),
    /// Load against any http:// or https:// URL over keep-alive HTTP/1.1 (or HTTP/2 with --h2):
    /// closed loop (like wrk, oha) or open loop at a constant rate with --rate (like wrk2), with
    /// thresholds that fail a pipeline (--fail-if).
    #[command(after_help = LOAD_EXAMPLES)]
    Load(load::LoadArgs),
    /// Merge the parts several `wasmlab load --out` runs wrote (on one machine or many) into one
    /// report: percentiles from the added histograms, req/s over the interval all parts were
    /// running, the parts that did not run together named, thresholds on the whole.
    Merge(merge::MergeArgs),
    /// Serve the upstream echo server that /proxy forwards to (the lab starts it itself).
    Upstream {
        /// The address to listen on (loopback unless you say otherwise).
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// 0 takes an ephemeral port, printed on stdout.
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// List every variant with its state here: ready, needs setup (the command, about how long),
    /// or unavailable (why).
    Variants(variants::VariantsArgs),
    /// Install what variants need into the project's tools directory (the Wasmtime CLI from
    /// crates.io, ...), idempotently, with progress.
    Setup(variants::SetupArgs),
    /// Print a suite's TOML (a built-in suite's name, or a file) with the definitions of the
    /// workloads it names inline: a starting point for your own --suite FILE.toml.
    ShowSuite {
        /// A built-in suite's name (quick, isolation, wasmcloud, ...) or a suite file's path.
        name: String,
    },
    /// Package a static executable or a Wasm program as an OCI image archive (an OCI image
    /// layout in a tar file) for `ctr images import`, `podman load` or `skopeo copy
    /// oci-archive:`; a Wasm program in the layout runwasi's containerd shims read.
    Image(image::ImageArgs),
    /// Remove what an earlier wasmlab killed before it could clean up (SIGKILL, a crash, a power
    /// cut) left running or mounted: its containerd, the shims, their mounts and its directory;
    /// its podman or docker containers, and the lab's images when no other run is under way.
    /// `wasmlab run` does it first too.
    Clean,
}

/// A run's recorded command line (run.json's `command`) read again as `wasmlab run`'s arguments.
pub(crate) fn recorded_run_args(command: &[String]) -> anyhow::Result<run::RunArgs> {
    match Cli::try_parse_from(command)?.command {
        Command::Run(args) => Ok(args),
        _ => anyhow::bail!("not a `wasmlab run` command"),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The load generator holds one socket per connection (1,200 in the gateway-study suite).
    wasmlab_gateway::cli::raise_fd_limit();
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Report(args) => results::report(args),
        Command::Compare(args) => results::compare(args),
        Command::History(args) => history::history(args),
        Command::Load(args) => load::load(args),
        Command::Merge(args) => merge::merge(args),
        Command::Upstream { host, port } => serve_upstream(host, port),
        Command::Variants(args) => variants::list(args),
        Command::Setup(args) => variants::setup(args),
        Command::ShowSuite { name } => wasmlab_model::suite::show(&name).map(stdout::show),
        Command::Image(args) => image::image(args),
        Command::Clean => {
            let mut said = wasmlab_plan::containerd::clean_leftovers();
            said.extend(wasmlab_plan::containers::clean_leftovers());
            if said.is_empty() {
                eprintln!("wasmlab: nothing left behind by an earlier run");
            }
            for line in said {
                eprintln!("{line}");
            }
            Ok(())
        }
    };
    // The containerd a run or a listing started for its variants, with what it ran.
    if let Err(e) = wasmlab_plan::containerd::stop() {
        eprintln!("wasmlab: stopping the lab's containerd: {e}");
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wasmlab: error: {e:#}");
            let code = e
                .downcast_ref::<wasmlab_model::run::Ending>()
                .map_or(2, |end| end.exit_code);
            ExitCode::from(code)
        }
    }
}

fn serve_upstream(host: std::net::IpAddr, port: u16) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind((host, port)).await?;
        println!("listening on http://{}", listener.local_addr()?);
        use std::io::Write;
        std::io::stdout().flush()?;
        wasmlab_upstream::serve(listener).await?;
        Ok(())
    })
}
