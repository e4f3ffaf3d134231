//! `wasmlab-gateway-process`: the gateway running a command once per request (the gateway study's
//! CLI method): `wasmlab-gateway-process [FLAGS] -- wasmtime run guest.wasm`. The command speaks
//! the pipe command shape (docs/guest-abi.md): the request on stdin, host calls and the response
//! on stdout.

use std::time::Duration;

use clap::Parser;
use wasmlab_gateway::cli::ServerArgs;
use wasmlab_gateway::process::{ProcessExecutor, ProcessLimits};

#[derive(Parser)]
#[command(
    version,
    about = "wasmlab gateway, process executor: a command spawned once per request"
)]
struct Args {
    #[command(flatten)]
    server: ServerArgs,
    /// Processes alive at once; requests beyond this wait for one to end.
    #[arg(long, default_value_t = ProcessLimits::default().max_processes)]
    max_processes: usize,
    /// Longest a request may take from spawn to exit, in ms; past it the process is killed (504).
    #[arg(long, default_value_t = ProcessLimits::default().deadline.as_millis() as u64)]
    deadline_ms: u64,
    /// Requests allowed to wait for a process slot; more are answered 503 at once.
    #[arg(long, default_value_t = ProcessLimits::default().max_queue)]
    max_queue: usize,
    /// Longest wait for a process slot, in ms, before 503.
    #[arg(long, default_value_t = ProcessLimits::default().queue_timeout.as_millis() as u64)]
    queue_timeout_ms: u64,
    /// The command to run per request, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let limits = ProcessLimits {
        max_processes: args.max_processes.max(1),
        deadline: Duration::from_millis(args.deadline_ms),
        max_queue: args.max_queue,
        queue_timeout: Duration::from_millis(args.queue_timeout_ms),
        ..ProcessLimits::default()
    };
    eprintln!("command={:?} limits: {limits}", args.command);
    let command = args.command;
    let result = args
        .server
        .run(|caps| async move { ProcessExecutor::new(&command, caps, limits) });
    wasmlab_gateway::cli::exit_code("wasmlab-gateway-process", result)
}
