//! `wasmlab load`: the load generator on the command line.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use wasmlab_load::{LoadConfig, LoadReport, PartFile, Threshold, parse_duration};
use wasmlab_model::run::Ending;

use crate::stdout::show;

#[derive(Debug, clap::Args)]
pub(crate) struct LoadArgs {
    /// Target URL, e.g. http://127.0.0.1:8080/ or https://example.test/
    #[arg(required_unless_present = "config", conflicts_with = "config")]
    pub url: Option<String>,
    /// The run's whole configuration as JSON (FILE, or `-` for stdin) instead of a URL and the
    /// options below: what `wasmlab run` sends each generator of a cell (`generators`,
    /// `generator_commands` in a suite). --start-at, --out, --quiet, --json and --fail-if still
    /// apply.
    #[arg(long, value_name = "FILE", conflicts_with_all = [
        "h2", "streams", "cacert", "insecure", "connections", "duration", "requests", "threads",
        "rate", "spin", "timeout", "method", "body", "headers", "warm_up",
    ])]
    pub config: Option<PathBuf>,
    /// HTTP/2: by prior knowledge over cleartext (h2c), by ALPN over TLS; a server that does not
    /// speak it fails every connection, with the reason.
    #[arg(long)]
    pub h2: bool,
    /// HTTP/2: concurrent streams per connection (h2load's -m); the concurrency is
    /// connections x streams.
    #[arg(long, default_value_t = 1, requires = "h2")]
    pub streams: usize,
    /// HTTPS: trust the certificates of this PEM file instead of the system's roots.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<std::path::PathBuf>,
    /// HTTPS: accept any certificate, for any name (the handshake is otherwise the same).
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Concurrent keep-alive connections.
    #[arg(short = 'c', long, default_value_t = 50)]
    pub connections: usize,
    /// How long to send (e.g. 10s, 500ms, 1m). Default 10s unless -n is given.
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Stop after this many requests in all.
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// Send for this long first (e.g. 1s), on the same connections and at the same pace, and
    /// count none of it: the report covers the --duration after it, on open, warm connections.
    #[arg(long, value_parser = parse_duration, conflicts_with = "requests")]
    pub warm_up: Option<Duration>,
    /// Worker threads (each a single-threaded runtime). One leaves the other core to the server
    /// on a 2-core machine, like `wrk -t1`.
    #[arg(short = 't', long, default_value_t = 1)]
    pub threads: usize,
    /// Open loop: send at this constant rate (requests per second, all threads together), like
    /// wrk2's -R. Latency is then counted from each request's intended send time; sends that
    /// could not be made in time are reported as late or dropped.
    #[arg(short = 'R', long)]
    pub rate: Option<f64>,
    /// Spin while waiting (for responses, and with --rate for send times) instead of sleeping,
    /// so the generator's CPU never idles and a server never pays to wake it. Takes each worker
    /// thread's CPU whole: only for a generator pinned to CPUs of its own (e.g. `taskset -c 0
    /// wasmlab load -t1 --spin` with the server on other CPUs).
    #[arg(long)]
    pub spin: bool,
    /// Per-request timeout.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Request body.
    #[arg(short = 'b', long)]
    pub body: Option<String>,
    /// Extra header, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Fail (exit 99, after the report) when this holds: METRIC OP VALUE, e.g. 'errors>1%',
    /// 'errors>0', 'p99>50ms', 'rps<1000' (repeatable). Metrics: errors (a count, or a % of the
    /// requests sent), rps, mean, p50, p90, p99, p99.9, max (ms, or with us/ms/s).
    #[arg(long = "fail-if", value_name = "CONDITION")]
    pub fail_if: Vec<Threshold>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the run whole to FILE for `wasmlab merge`: every HDR histogram, counts by
    /// status and error class, wall-clock start and end, the generator's host and CPU. `-`
    /// writes it to stdout (the report then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print no report and no progress (errors still go to stderr): with `--out -`, stdout and
    /// stderr then hold only the part, as `kubectl logs` of a generator's pod must.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Begin at this wall-clock time, so generators on several machines start together: RFC
    /// 3339 (2026-11-27T10:00:00Z) or Unix seconds. A part that began late is named by
    /// `wasmlab merge`.
    #[arg(long, value_name = "TIME", value_parser = wasmlab_load::parse_time)]
    pub start_at: Option<SystemTime>,
}

pub(crate) fn load(args: LoadArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        !(args.json && args.out.as_deref() == Some(std::path::Path::new("-"))),
        "--json and --out - would both write to stdout: give --out a file, or drop --json"
    );
    let c = config(&args)?;
    // Made before any load is sent: a path that cannot be written fails now, not after the run.
    let out = args.out.as_deref().map(PartFile::create).transpose()?;
    if let Some(at) = c.start_at.filter(|_| !args.quiet) {
        say_when(at);
    }
    let to_stderr = out.as_ref().is_some_and(PartFile::is_stdout);
    let report = match out {
        None => wasmlab_load::run(c)?,
        Some(file) => match wasmlab_load::run_part(c) {
            Ok(part) => {
                // Kept before the report is judged: what was measured is never lost.
                file.commit(&part)?;
                part.report
            }
            Err(e) => {
                file.abandon();
                return Err(e);
            }
        },
    };
    let text = match args.json {
        true => serde_json::to_string_pretty(&report)?,
        false => report_text(&report),
    };
    match (args.quiet, to_stderr) {
        (true, _) => {}
        (false, true) => eprintln!("{text}"),
        (false, false) => show(text),
    }
    if cancelled() {
        eprintln!("wasmlab: interrupted: the report covers what finished before");
    }
    judge(&report, &args.fail_if)
}

/// Whether SIGINT or SIGTERM stopped the run.
fn cancelled() -> bool {
    crate::signals::cancel_flag().load(std::sync::atomic::Ordering::Relaxed)
}

/// Says on stderr how long the run waits for its start (or that it has passed).
fn say_when(at: SystemTime) {
    let when = wasmlab_load::rfc3339(at);
    match at.duration_since(SystemTime::now()) {
        Ok(wait) => eprintln!(
            "wasmlab: starting at {when}, in {:.1} s",
            wait.as_secs_f64()
        ),
        Err(past) => eprintln!(
            "wasmlab: the start {when} passed {:.1} s ago: starting now (a merge names this part late)",
            past.duration().as_secs_f64()
        ),
    }
}

/// The load generator's configuration from the command line.
fn config(args: &LoadArgs) -> anyhow::Result<LoadConfig> {
    let mut c = match (&args.config, &args.url) {
        (Some(file), _) => spec_config(file)?,
        (None, Some(url)) => options_config(args, url)?,
        (None, None) => anyhow::bail!("give a URL, or --config FILE"),
    };
    c.start_at = args.start_at;
    c.cancel = Some(crate::signals::cancel_flag());
    Ok(c)
}

/// A configuration as `wasmlab run` writes it for its generators.
fn spec_config(file: &std::path::Path) -> anyhow::Result<LoadConfig> {
    let text = match file == std::path::Path::new("-") {
        true => std::io::read_to_string(std::io::stdin())
            .map_err(|e| anyhow::anyhow!("reading the configuration from stdin: {e}"))?,
        false => std::fs::read_to_string(file)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?,
    };
    let name = match file == std::path::Path::new("-") {
        true => "the configuration on stdin".to_owned(),
        false => file.display().to_string(),
    };
    let spec: wasmlab_load::LoadSpec = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{name} is not a load configuration: {e}"))?;
    spec.config().map_err(|e| anyhow::anyhow!("{name}: {e:#}"))
}

/// The configuration the command line's options give.
fn options_config(args: &LoadArgs, url: &str) -> anyhow::Result<LoadConfig> {
    let mut c = LoadConfig::new(url)?;
    c.connections = args.connections;
    c.threads = args.threads;
    c.requests = args.requests;
    c.warm_up = args.warm_up;
    c.rate = args.rate;
    c.spin = args.spin;
    c.duration = match (args.duration, args.requests) {
        (Some(d), _) => Some(d),
        (None, Some(_)) => None,
        (None, None) => Some(Duration::from_secs(10)),
    };
    c.timeout = args.timeout;
    c.ca_file = args.cacert.clone();
    c.http2 = args.h2;
    c.streams = args.streams;
    c.insecure = args.insecure;
    c.method = args
        .method
        .parse()
        .map_err(|_| anyhow::anyhow!("{:?} is not an HTTP method", args.method))?;
    c.body = Bytes::from(args.body.clone().unwrap_or_default());
    for h in &args.headers {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| anyhow::anyhow!("header {h:?} is not `Name: value`"))?;
        c.headers.push((
            HeaderName::from_bytes(k.trim().as_bytes())?,
            HeaderValue::from_str(v.trim())?,
        ));
    }
    Ok(c)
}

/// A run with no successful answer fails (exit 1), whatever was asked; then each `--fail-if`
/// that held is named with its measured value (exit 99).
pub(crate) fn judge(report: &LoadReport, fail_if: &[Threshold]) -> anyhow::Result<()> {
    if report.ok == 0 {
        let why = report
            .first_error
            .as_deref()
            .unwrap_or("no request was sent");
        return Err(Ending {
            exit_code: 1,
            message: format!("no request succeeded ({why})"),
        }
        .into());
    }
    let crossed: Vec<String> = fail_if
        .iter()
        .filter_map(|t| t.check(report))
        .map(|c| c.to_string())
        .collect();
    if crossed.is_empty() {
        return Ok(());
    }
    Err(Ending {
        exit_code: crate::THRESHOLD_EXIT,
        message: format!("threshold crossed: {}", crossed.join("; ")),
    }
    .into())
}

/// The report as a reader of wrk or oha expects it.
pub(crate) fn report_text(r: &LoadReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let protocol = match r.http2 {
        true => format!("HTTP/2 with {} streams each", r.streams),
        false => "HTTP/1.1".into(),
    };
    let span = match r.generators {
        1 => format!("{} threads, {:.2}s", r.threads, r.elapsed_secs),
        n => format!(
            "{} threads in {n} generators, {:.2}s together",
            r.threads, r.elapsed_secs
        ),
    };
    // The warm-up is in no figure below: named where the run is.
    let warm_up = r
        .warm_up_secs
        .map(|w| format!(" after a {w:.2}s warm-up (not counted)"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{} {}  {} connections ({protocol}), {span}{warm_up}",
        r.method, r.url, r.connections
    );
    let _ = writeln!(
        out,
        "  requests: {} responses ({} 2xx), {:.0} req/s, {:.2} MB body",
        r.responses,
        r.ok,
        r.rps,
        r.body_bytes as f64 / 1e6
    );
    let l = &r.latency_ms;
    let _ = writeln!(
        out,
        "  latency ms: mean {:.3}  p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}",
        l.mean, l.p50, l.p90, l.p99, l.p99_9, l.max
    );
    if let Some(o) = &r.open_loop {
        let u = &o.uncorrected_ms;
        let _ = writeln!(
            out,
            "  (latency above is from each request's intended send time; uncorrected p50 {:.3}  p99 {:.3}  max {:.3})",
            u.p50, u.p99, u.max
        );
        let _ = writeln!(
            out,
            "  open loop: target {:.0} req/s, achieved {:.0}; {} due, {} sent, {} dropped, {} late (> {} ms)",
            o.target_rate,
            o.achieved_rate,
            o.intended,
            o.sent,
            o.dropped,
            o.late,
            wasmlab_load::LATE_AFTER.as_millis()
        );
    }
    let p = &r.phases;
    let tls = match p.tls_handshakes {
        0 => String::new(),
        n => format!(
            "  tls {:.3} ({n} handshakes, {} resumed)",
            p.tls.p50, p.tls_resumed
        ),
    };
    let _ = writeln!(
        out,
        "  phases p50 ms: connect {:.3} ({} opened){tls}  send {:.3}  wait {:.3}  receive {:.3}",
        p.connect.p50, p.connections_opened, p.send.p50, p.wait.p50, p.receive.p50
    );
    let _ = writeln!(
        out,
        "  generator: {:.2} CPU s{}, busy {:.0}%{}",
        r.generator_cpu_secs,
        if r.generator_spin {
            format!(
                " spinning ({:.2} s of it idle polls)",
                r.generator_idle_spin_secs
            )
        } else {
            String::new()
        },
        r.generator_busy * 100.0,
        if r.generator_saturated {
            " — SATURATED: the server may be faster than measured; add threads (-t)"
        } else {
            ""
        }
    );
    let e = &r.errors;
    let _ = writeln!(
        out,
        "  errors: connect {}, read/write {}, timeout {}, non-2xx {}",
        e.connect, e.read_write, e.timeout, e.non_2xx
    );
    let statuses: Vec<String> = r
        .status_counts
        .iter()
        .map(|(code, n)| format!("{code}: {n}"))
        .collect();
    let _ = writeln!(out, "  status codes: {}", statuses.join(", "));
    if let Some(msg) = &r.first_error {
        let _ = writeln!(out, "  first error: {msg}");
    }
    out.trim_end().to_owned()
}
