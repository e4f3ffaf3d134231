//! The command-line surface shared by the gateway binaries, and their start-up sequence.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::executor::Executor;
use crate::server::{ServerConfig, serve};
use wasmlab_capabilities::Capabilities;

/// Flags every gateway binary takes.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// Address to bind. Loopback by default: expose the gateway deliberately.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// Port to bind; 0 takes an ephemeral port (printed on stdout).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Runtime worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Answer every request with `Connection: close` and serve one connection at a time per
    /// thread: with `--threads 1`, the gateway study's blocking server.
    #[arg(long)]
    pub connection_close: bool,
    /// Base URL of the upstream that /proxy forwards to, e.g. http://127.0.0.1:9000.
    #[arg(long)]
    pub upstream: Option<String>,
    /// Largest request body accepted (bytes); larger ones get 413.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body_bytes: usize,
    /// Seconds a client has to send a complete request head (and, on an idle keep-alive
    /// connection, to start its next one).
    #[arg(long, default_value_t = 10.0, value_parser = positive_secs)]
    pub header_timeout_secs: f64,
    /// Seconds a client has to send a request's whole body after its head; past it the answer is
    /// 408 and the connection is closed.
    #[arg(long, default_value_t = 10.0, value_parser = positive_secs)]
    pub body_timeout_secs: f64,
    /// Largest request head (request line and headers) in bytes; larger ones get 431.
    #[arg(long, default_value_t = 64 << 10, value_parser = clap::value_parser!(u32).range(1024..))]
    pub max_header_bytes: u32,
    /// Connections open at once; past it the gateway accepts no more until one closes (they wait
    /// in the kernel's accept queue). Bounds the memory connections take (see docs/gateways.md).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Send the diagnosis of a failed request (a trap, a broken ABI) to the client too. Without
    /// it the client gets the status and a generic line with the request id, and only the log
    /// has the diagnosis. For tests and the lab's own verification, not for untrusted clients.
    #[arg(long)]
    pub error_details: bool,
    /// Whether a worker that stays busy lets its other ready requests run before writing a
    /// reply (replies then leave in bursts): `auto` is the executor's choice.
    #[arg(long, value_enum, default_value = "auto")]
    pub defer_replies: DeferReplies,
    /// Serve HTTP/2 beside HTTP/1.1 on the same port: by prior knowledge in cleartext (h2c; a
    /// connection opening with the HTTP/2 preface), by ALPN over TLS. Up to 200 streams per
    /// connection, each request run as a task of its own.
    #[arg(long, conflicts_with = "connection_close")]
    pub http2: bool,
    /// Seconds an HTTP/2 connection may stay open with no stream under way; then it is sent
    /// GOAWAY and closed (an idle HTTP/1.1 connection is closed at --header-timeout-secs).
    #[arg(long, default_value_t = 10.0, value_parser = positive_secs)]
    pub http2_idle_timeout_secs: f64,
    /// Seconds a connection may wait on a client that takes none of its response bytes (or,
    /// over HTTP/2, with none of its responses moving); then it is closed and what it held is
    /// given back.
    #[arg(long, default_value_t = 10.0, value_parser = positive_secs)]
    pub send_timeout_secs: f64,
    /// Response bytes all connections together may hold for clients that have not taken them,
    /// beyond 16 KiB each; past it new responses are answered 503 (Retry-After: 1).
    #[arg(long, default_value_t = 64 << 20, value_parser = clap::value_parser!(u64).range(64 << 10..))]
    pub max_unsent_bytes: u64,
    /// Response bytes one connection may hold (over HTTP/2, all its streams'); past it its new
    /// responses are answered 503. A connection holding nothing may always start one response.
    #[arg(long, default_value_t = 4 << 20, value_parser = clap::value_parser!(u64).range(16 << 10..))]
    pub max_unsent_bytes_per_connection: u64,
    /// Serve HTTPS with this certificate chain (PEM; the server's certificate first).
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Run tokio's multi-thread runtime even with one thread (one worker): set by a binary whose
    /// executor needs `block_in_place` (synchronous Wasm guests), not a flag.
    #[arg(skip)]
    pub multi_thread_runtime: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeferReplies {
    Auto,
    On,
    Off,
}

fn positive_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds between 0 and 86400 (e.g. 10 or 0.5)"
        )),
    }
}

impl ServerArgs {
    pub fn threads(&self) -> usize {
        self.threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1)
    }

    /// The server's settings; fails on unreadable TLS files and limits that contradict each other.
    pub fn server_config(&self) -> anyhow::Result<ServerConfig> {
        anyhow::ensure!(
            self.max_unsent_bytes_per_connection <= self.max_unsent_bytes,
            "--max-unsent-bytes-per-connection {} is more than --max-unsent-bytes {}: no connection could use it (give at most the total)",
            self.max_unsent_bytes_per_connection,
            self.max_unsent_bytes
        );
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(crate::tls::server_config(cert, key, self.http2)?),
            _ => None,
        };
        Ok(ServerConfig {
            keep_alive: !self.connection_close,
            accept_loops: self.threads(),
            max_body_bytes: self.max_body_bytes,
            header_timeout: Duration::from_secs_f64(self.header_timeout_secs),
            body_timeout: Duration::from_secs_f64(self.body_timeout_secs),
            max_header_bytes: self.max_header_bytes as usize,
            max_connections: self.max_connections as usize,
            error_details: self.error_details,
            defer_replies: match self.defer_replies {
                DeferReplies::Auto => None,
                DeferReplies::On => Some(true),
                DeferReplies::Off => Some(false),
            },
            http2: self.http2,
            tls,
            http2_idle_timeout: Duration::from_secs_f64(self.http2_idle_timeout_secs),
            send_timeout: Duration::from_secs_f64(self.send_timeout_secs),
            max_unsent_bytes: self.max_unsent_bytes as usize,
            max_unsent_bytes_per_connection: self.max_unsent_bytes_per_connection as usize,
        })
    }

    /// Builds the runtime, the capabilities and (inside the runtime) the executor, binds, prints
    /// `listening on http://ADDR` and serves until SIGINT/SIGTERM.
    pub fn run<E, F, Fut>(&self, make_executor: F) -> anyhow::Result<()>
    where
        E: Executor,
        F: FnOnce(Arc<Capabilities>) -> Fut,
        Fut: Future<Output = anyhow::Result<E>>,
    {
        raise_fd_limit();
        // Bad TLS files fail before anything is compiled or bound.
        let config = self.server_config()?;
        let threads = self.threads();
        let mut builder = if threads == 1 && !self.multi_thread_runtime {
            tokio::runtime::Builder::new_current_thread()
        } else {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(threads);
            b
        };
        let runtime = builder
            .enable_all()
            .on_thread_park(crate::idle::note_park)
            .build()?;
        runtime.block_on(async {
            let caps = Arc::new(Capabilities::new(self.upstream.as_deref())?);
            let executor = Arc::new(make_executor(caps).await?);
            let addr = SocketAddr::new(self.host, self.port);
            let listener = bind(addr)?;
            let local = listener.local_addr()?;
            eprintln!(
                "executor={} threads={threads} runtime={} protocols={} keep_alive={} max_connections={} max_body_bytes={} max_header_bytes={} header_timeout={:?} body_timeout={:?} http2_idle_timeout={:?} send_timeout={:?} max_unsent_bytes={} max_unsent_bytes_per_connection={} error_details={}",
                executor.name(),
                match tokio::runtime::Handle::current().runtime_flavor() {
                    tokio::runtime::RuntimeFlavor::CurrentThread => "current-thread",
                    _ => "multi-thread",
                },
                match (config.tls.is_some(), config.http2) {
                    (false, false) => "http/1.1",
                    (false, true) => "http/1.1,h2c",
                    (true, false) => "https(http/1.1)",
                    (true, true) => "https(h2,http/1.1)",
                },
                config.keep_alive,
                config.max_connections,
                config.max_body_bytes,
                config.max_header_bytes,
                config.header_timeout,
                config.body_timeout,
                config.http2_idle_timeout,
                config.send_timeout,
                config.max_unsent_bytes,
                config.max_unsent_bytes_per_connection,
                if config.error_details { "to clients" } else { "log only" },
            );
            // The lab and the tests read this line to learn the port.
            let scheme = if config.tls.is_some() { "https" } else { "http" };
            println!("listening on {scheme}://{local}");
            use std::io::Write;
            std::io::stdout().flush()?;
            let served = tokio::select! {
                res = serve(listener, executor, config) => res.map_err(Into::into),
                _ = shutdown_signal() => Ok(()),
            };
            eprintln!("stopping; incidents: {}", crate::log::totals());
            served
        })
    }
}

/// The command line of `wasmlab-gateway-native`: the server's options only.
#[derive(clap::Parser)]
#[command(
    version,
    about = "wasmlab gateway, native executor: the handlers compiled into the server"
)]
struct NativeArgs {
    #[command(flatten)]
    server: ServerArgs,
}

/// `wasmlab-gateway-native`'s whole program: the gateway with the handlers compiled in. Also the
/// statically linked build's (`wasmlab-gateway-native-static`, for container images), so that
/// both are the same program.
pub fn native_main() -> std::process::ExitCode {
    use clap::Parser as _;
    let args = NativeArgs::parse();
    let result = args
        .server
        .run(|caps| async move { Ok(crate::NativeExecutor::new(caps)) });
    exit_code("wasmlab-gateway-native", result)
}

/// Ends a gateway binary: prints an error as one line (no backtrace: the lab shows the last lines
/// of a server's log as the reason it failed) and exits 2.
pub fn exit_code(program: &str, result: anyhow::Result<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{program}: error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

/// Raises the soft limit on open files to the hard limit: a load of 1,200 connections needs more
/// than the common default of 1,024. Returns the limit now in force.
pub fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return raised.rlim_cur;
            }
        }
    }
    lim.rlim_cur
}

/// Binds with a deep accept queue, so a burst of connects (the gateway study's 1,200) is not
/// dropped by the kernel before the server sees it.
pub fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket
        .bind(&addr.into())
        .map_err(|e| anyhow::anyhow!("bind {addr}: {e}"))?;
    socket.listen(4096)?;
    Ok(TcpListener::from_std(socket.into())?)
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
