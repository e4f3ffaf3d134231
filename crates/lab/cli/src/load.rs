//! `wasmlab load`: the load generator on the command line.

use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use wasmlab_load::{LoadConfig, LoadReport, Threshold, parse_duration};
use wasmlab_model::run::Ending;

use crate::stdout::show;

#[derive(Debug, clap::Args)]
pub struct LoadArgs {
    /// Target URL, e.g. http://127.0.0.1:8080/ or https://example.test/
    pub url: String,
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
}

pub fn load(args: LoadArgs) -> anyhow::Result<()> {
    let mut c = LoadConfig::new(&args.url)?;
    c.connections = args.connections;
    c.threads = args.threads;
    c.requests = args.requests;
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
    c.body = Bytes::from(args.body.unwrap_or_default());
    for h in &args.headers {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| anyhow::anyhow!("header {h:?} is not `Name: value`"))?;
        c.headers.push((
            HeaderName::from_bytes(k.trim().as_bytes())?,
            HeaderValue::from_str(v.trim())?,
        ));
    }
    let report = wasmlab_load::run(c)?;
    if args.json {
        show(serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    judge(&report, &args.fail_if)
}

/// A run with no successful answer fails (exit 1), whatever was asked; then each `--fail-if`
/// that held is named with its measured value (exit 99).
fn judge(report: &LoadReport, fail_if: &[Threshold]) -> anyhow::Result<()> {
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
        exit_code: crate::run::THRESHOLD_EXIT,
        message: format!("threshold crossed: {}", crossed.join("; ")),
    }
    .into())
}

/// The report as a reader of wrk or oha expects it.
fn print_report(r: &LoadReport) {
    use std::fmt::Write as _;
    let mut out = String::new();
    let protocol = match r.http2 {
        true => format!("HTTP/2 with {} streams each", r.streams),
        false => "HTTP/1.1".into(),
    };
    let _ = writeln!(
        out,
        "{} {}  {} connections ({protocol}), {} threads, {:.2}s",
        r.method, r.url, r.connections, r.threads, r.elapsed_secs
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
    show(out.trim_end());
}
