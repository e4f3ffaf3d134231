//! `wasmlab`: builds and starts every variant, verifies it, measures it and writes the results.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

// The pipeline of `wasmlab run`, in the order data flows through it.
mod analyze;
mod launch;
mod measure;
mod plan;
mod programs;
mod record;
mod report;

mod cmd;
mod run;

#[derive(Parser)]
#[command(
    version,
    about = "wasmlab: what does WebAssembly cost an HTTP server, against native code?"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a suite: build, start and verify each variant; measure cold start, throughput, warm and
    /// open-loop latency and resources; write results/<run-id>/ with report.html.
    Run(run::RunArgs),
    /// Rebuild a results directory's CSVs, summary.md and report.html from its raw samples.
    Report(cmd::report::ReportArgs),
    /// Compare two results directories cell by cell, with confidence intervals.
    Compare(cmd::report::CompareArgs),
    /// HTTP/1.1 keep-alive load against any URL: closed loop (like wrk, oha) or open loop at a
    /// constant rate with --rate (like wrk2).
    Load(cmd::load::LoadArgs),
    /// Serve the upstream echo server that /proxy forwards to (the lab starts it itself).
    Upstream {
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// 0 takes an ephemeral port, printed on stdout.
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// List every variant with its state here: ready, needs setup (the command, about how long),
    /// or unavailable (why).
    Variants(cmd::variants::VariantsArgs),
    /// Install what variants need into the project's tools directory (the Wasmtime CLI from
    /// crates.io, ...), idempotently, with progress.
    Setup(cmd::setup::SetupArgs),
    /// Print a built-in suite's TOML (a starting point for your own --suite FILE.toml).
    ShowSuite { name: String },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The load generator holds one socket per connection (1,200 in the gateway-study suite).
    wasmlab_gateway::cli::raise_fd_limit();
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Report(args) => cmd::report::report(args),
        Command::Compare(args) => cmd::report::compare(args),
        Command::Load(args) => cmd::load::load(args),
        Command::Upstream { host, port } => serve_upstream(host, port),
        Command::Variants(args) => cmd::variants::list(args),
        Command::Setup(args) => cmd::setup::setup(args),
        Command::ShowSuite { name } => plan::suite::builtin(&name).map(|text| print!("{text}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wasmlab: error: {e:#}");
            let code = e.downcast_ref::<run::RunEnded>().map_or(2, |r| r.exit_code);
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

/// Where the workspace is, when wasmlab runs from its source tree (used to build what it needs).
fn workspace_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    dir.join("Cargo.toml")
        .is_file()
        .then(|| dir.canonicalize().unwrap_or(dir))
}
