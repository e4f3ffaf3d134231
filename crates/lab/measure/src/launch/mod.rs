//! Starting a variant from its spec, knowing when it is ready, and stopping it. Everything
//! downstream (verification, measurement, results) only sees a [`Running`] server.

pub mod live;
pub mod prepare;
pub mod vars;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use vars::Vars;

use crate::requests::SentRequest;
use wasmlab_model::cpus::CpuPlan;
use wasmlab_model::sample::StartTimes;
use wasmlab_model::tools::{ContainerEngine, Containerd, FoundTool};
use wasmlab_model::variant::{Address, Protocol, RemoteTarget, VariantSpec};
use wasmlab_plan::exec::run_with_timeout;

/// A variant ready to launch: its spec and this run's values for its templates.
#[derive(Debug, Clone)]
pub struct Launchable {
    pub spec: VariantSpec,
    pub vars: Vars,
}

/// The values every variant of a run shares (see `wasmlab_model::variant::PLACEHOLDERS`).
pub struct RunValues<'a> {
    pub bin: &'a Path,
    pub workspace: Option<&'a Path>,
    pub tools: &'a Path,
    /// The run's results directory: `{prepared}` is `prepared/<variant>` in it.
    pub results: &'a Path,
    pub core_guest: Option<&'a Path>,
    pub upstream: &'a str,
    pub server_cpus: String,
    pub run_id: &'a str,
    pub host_triple: &'a str,
}

impl Launchable {
    /// `spec` with this run's values, the tools it found, and the container engine or the
    /// containerd it uses.
    pub fn new(
        spec: &VariantSpec,
        run: &RunValues<'_>,
        tools: &[FoundTool],
        (engine, containerd): (Option<&ContainerEngine>, Option<&Containerd>),
    ) -> Self {
        let mut vars = Vars::default();
        let path = |p: &Path| p.display().to_string();
        vars.set("bin", path(run.bin));
        if let Some(ws) = run.workspace {
            vars.set("workspace", path(ws));
        }
        vars.set("tools", path(run.tools));
        // Absolute: a prepare step with a `cwd` (`go build -o {prepared}/x` in the source's
        // directory) would otherwise write beside its sources, under a results directory given
        // relative (the default `results`), and the start would not find it.
        let prepared = run.results.join("prepared").join(&spec.name);
        vars.set(
            "prepared",
            path(&std::path::absolute(&prepared).unwrap_or(prepared)),
        );
        vars.set(
            "core_guest",
            run.core_guest
                .map_or_else(|| wasmlab_guest_artifacts::CORE_PATH.to_owned(), path),
        );
        vars.set("command_guest", wasmlab_guest_artifacts::COMMAND_PATH);
        vars.set("pipe_guest", wasmlab_guest_artifacts::PIPE_PATH);
        vars.set("proxy_wasm_guest", wasmlab_guest_artifacts::PROXY_WASM_PATH);
        // A variant that runs a user's component (`--component`) has it in place of both.
        let user = spec.component.as_deref();
        vars.set(
            "http_guest",
            user.unwrap_or(wasmlab_guest_artifacts::HTTP_PATH),
        );
        vars.set(
            "http_p3_guest",
            user.unwrap_or(wasmlab_guest_artifacts::HTTP_P3_PATH),
        );
        vars.set("upstream", run.upstream);
        // Its address apart, for a configuration that names a host and a port (Envoy's clusters).
        if let Some(Ok(addr)) = run
            .upstream
            .strip_prefix("http://")
            .map(|a| a.trim_end_matches('/').parse::<SocketAddr>())
        {
            vars.set("upstream_host", addr.ip().to_string());
            vars.set("upstream_port", addr.port().to_string());
        }
        // `--component-env`: as it is, and as a quoted string for a configuration language.
        for (k, v) in &spec.component_env {
            vars.set(&format!("env:{k}"), v.clone());
            vars.set(
                &format!("env-quoted:{k}"),
                serde_json::to_string(v).unwrap_or_default(),
            );
        }
        vars.set("server_cpus", run.server_cpus.clone());
        vars.set("run_id", run.run_id);
        vars.set("variant", spec.name.clone());
        vars.set("host_triple", run.host_triple);
        for t in tools {
            vars.set(&format!("tool:{}", t.name), t.path.clone());
        }
        if let Some(e) = engine {
            vars.set_container(e.command.clone(), e.env.clone());
        }
        if let Some(c) = containerd {
            vars.set("ctr", c.ctr.clone());
            vars.add_env(&c.env);
        }
        if let Ok(me) = wasmlab_plan::exec::own_exe() {
            vars.set("wasmlab", path(&me));
        }
        Self {
            spec: spec.clone(),
            vars,
        }
    }
}

/// What every launch needs to know.
pub struct LaunchContext<'a> {
    /// The CPUs servers run on.
    pub cpus: &'a CpuPlan,
    pub start_timeout: Duration,
    /// The server's stderr (and, when it does not print its address, its stdout) goes here.
    pub log_path: PathBuf,
    /// A launch is ready when this request is answered with its expected status: the suite's
    /// first workload's first request, unless the variant names a `ready_path`.
    pub ready: &'a SentRequest,
}

/// A started server (or a remote one reached); stopped (and killed if need be) when dropped.
pub struct Running {
    pub addr: SocketAddr,
    /// `host:port` as requests name it in `Host` (a remote target's own name; else `addr`).
    pub authority: String,
    /// An https remote target: the TLS the lab speaks to it.
    pub tls: Option<RemoteTls>,
    /// What the lab speaks to it in verification and under load (the readiness probe speaks
    /// HTTP/1.1, which every variant serves).
    pub protocol: Protocol,
    pub start: StartTimes,
    /// The process the lab started; None for a remote target.
    child: Option<Child>,
    /// The process group it was started in (0 for a remote target).
    group: i32,
    /// The environment it was started with (empty for a remote target).
    pub env: std::collections::BTreeMap<String, String>,
    /// Run before SIGTERM (e.g. removing a container), with the variant's environment.
    stop_command: Option<Command>,
    /// Prints more process ids of the variant (see `Start::processes`); run once, on first use.
    processes_command: Option<Command>,
    /// The process roots, once known (they do not change while the variant runs).
    roots: Option<Vec<u32>>,
    /// Only what `processes_command` prints is the variant's (see `Start::processes_only`).
    processes_only: bool,
    /// The parents of what it prints are the roots (see `Start::processes_parents`).
    processes_parents: bool,
}

/// Launches so far, for unique instance names.
static LAUNCHES: AtomicU32 = AtomicU32::new(0);

impl Launchable {
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Starts the variant and waits until it is ready (see [`LaunchContext::ready`]); a remote
    /// target is only waited for.
    pub fn launch(&self, ctx: &LaunchContext<'_>) -> anyhow::Result<Running> {
        if let Some(url) = &self.spec.url {
            let s = &self.spec;
            let mut running = reach(&s.name, (url, s.cacert.as_deref(), s.insecure), ctx)?;
            running.protocol = s.protocol;
            return Ok(running);
        }
        let start = self.spec.start.as_ref().ok_or_else(|| {
            anyhow::anyhow!(
                "{} is an engine for program suites ([program]), not a server",
                self.spec.name
            )
        })?;
        let port = match start.address {
            Address::Stdout => 0,
            Address::Port => free_port()?,
        };
        let n = LAUNCHES.fetch_add(1, Ordering::Relaxed);
        // The lab's process id first: what a killed lab left (a container conmon keeps running)
        // is told from what a live one runs (`wasmlab clean`).
        let instance = format!(
            "wasmlab-{}-{}-{}-{n}",
            std::process::id(),
            self.vars
                .get("run_id")
                .unwrap_or("run")
                .to_ascii_lowercase(),
            self.spec.name
        );
        let vars = self
            .vars
            .with("port", port.to_string())
            .with("instance", instance);
        let mut cmd = vars.command(&start.command)?;
        for (k, v) in &start.env {
            cmd.env(k, vars.expand_one(v)?);
        }
        let known = match start.address {
            Address::Stdout => None,
            Address::Port => Some(SocketAddr::from(([127, 0, 0, 1], port))),
        };
        let own = start.ready_path.as_deref().map(SentRequest::get);
        let ready = own.as_ref().unwrap_or(ctx.ready);
        let grace = start
            .ready_grace_secs
            .map_or(WRONG_STATUS_GRACE, Duration::from_secs_f64);
        let stop = start.stop.as_ref().map(|s| vars.command(s)).transpose()?;
        let mut running = spawn_server(&self.spec.name, cmd, ctx, ready, known, grace, stop)?;
        running.protocol = self.spec.protocol;
        running.processes_command = start
            .processes
            .as_ref()
            .map(|p| vars.command(p))
            .transpose()?;
        running.processes_only = start.processes_only;
        running.processes_parents = start.processes_parents;
        Ok(running)
    }
}

/// The TLS spoken to an https remote target: the lab's own client configuration (for the
/// readiness probe and verification) and what the load generator builds its own from.
pub struct RemoteTls {
    pub config: std::sync::Arc<rustls::ClientConfig>,
    pub server_name: rustls::pki_types::ServerName<'static>,
    pub ca_file: Option<PathBuf>,
    pub insecure: bool,
}

/// A remote target, resolved and waited for until it answers the ready request.
fn reach(
    name: &str,
    (url, ca_file, insecure): (&str, Option<&str>, bool),
    ctx: &LaunchContext<'_>,
) -> anyhow::Result<Running> {
    use std::net::ToSocketAddrs;
    let target = RemoteTarget::parse(url)?;
    let addrs: Vec<SocketAddr> = target
        .authority
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("{name}: cannot resolve {}: {e}", target.authority))?
        .collect();
    // The first address that accepts a connection (a name may resolve to ::1 and 127.0.0.1
    // with the server on one of them), else the first, waited for below.
    let addr = addrs
        .iter()
        .find(|a| std::net::TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| anyhow::anyhow!("{name}: {} resolves to no address", target.authority))?;
    let tls = match target.tls {
        true => Some(RemoteTls {
            config: wasmlab_load::tls::client_config(ca_file.map(Path::new), insecure, false)
                .map_err(|e| anyhow::anyhow!("{name}: {e:#}"))?,
            server_name: wasmlab_load::tls::server_name(&target.host)?,
            ca_file: ca_file.map(PathBuf::from),
            insecure,
        }),
        false => None,
    };
    let mut running = Running {
        addr,
        authority: target.authority,
        tls,
        protocol: Protocol::Http1,
        start: StartTimes::default(),
        child: None,
        group: 0,
        env: Default::default(),
        stop_command: None,
        processes_command: None,
        roots: None,
        processes_only: false,
        processes_parents: false,
    };
    let t0 = Instant::now();
    wait_ready(name, &mut running, ctx.ready, ctx, t0, WRONG_STATUS_GRACE)?;
    Ok(running)
}

/// A free loopback port (bound and released: the server binds it next).
fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| anyhow::anyhow!("cannot find a free port: {e}"))?;
    Ok(l.local_addr()?.port())
}

/// Spawns a server, learns its address (from `known`, else from the `listening on http://ADDR`
/// line it prints on stdout), then waits until `ready` is answered with its expected status.
/// `stop` is run before the server is signalled when it stops, a failed start included.
pub fn spawn_server(
    name: &str,
    mut cmd: Command,
    ctx: &LaunchContext<'_>,
    ready: &SentRequest,
    known: Option<SocketAddr>,
    grace: Duration,
    stop: Option<Command>,
) -> anyhow::Result<Running> {
    let log = File::create(&ctx.log_path)
        .map_err(|e| anyhow::anyhow!("create {}: {e}", ctx.log_path.display()))?;
    let stdout = match known {
        Some(_) => Stdio::from(log.try_clone()?),
        None => Stdio::piped(),
    };
    cmd.stdin(Stdio::null()).stdout(stdout).stderr(log);
    let env = wasmlab_plan::environment::minimal(&mut cmd);
    // A process group of its own: stopping the server signals the group, so a process it started
    // and does not stop itself (`jco serve`'s Node server) goes with it; and the watchdog kills
    // the group if wasmlab ends without stopping it, from before the spawn (`live::Group`).
    let group = live::Group::new()
        .map_err(|e| anyhow::anyhow!("start {name}: a process group for it: {e}"))?;
    cmd.process_group(group.id());
    let t0 = Instant::now();
    let mut child = wasmlab_plan::cpus::spawn_confined(ctx.cpus, &mut cmd)
        .map_err(|e| anyhow::anyhow!("start {name} ({:?}): {e}", cmd.get_program()))?;
    let group = group.joined(stop.as_ref());
    let (tx, rx) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = line.strip_prefix("listening on http://") {
                    let _ = tx.send(addr.trim().to_owned());
                }
            }
        });
    }
    let mut running = Running {
        addr: known.unwrap_or(SocketAddr::from(([127, 0, 0, 1], 0))),
        authority: String::new(),
        tls: None,
        protocol: Protocol::Http1,
        start: StartTimes::default(),
        child: Some(child),
        group,
        env,
        stop_command: stop,
        processes_command: None,
        roots: None,
        processes_only: false,
        processes_parents: false,
    };
    let deadline = t0 + ctx.start_timeout;
    let addr = match known {
        Some(addr) => addr,
        None => {
            let addr = printed_address(name, &mut running, &rx, ctx, deadline)?;
            running.start.listening_ms = t0.elapsed().as_secs_f64() * 1e3;
            addr
        }
    };
    running.addr = addr;
    running.authority = addr.to_string();
    wait_ready(name, &mut running, ready, ctx, t0, grace)?;
    Ok(running)
}

/// The address `running` prints (`listening on http://ADDR`), waited for until `deadline`.
fn printed_address(
    name: &str,
    running: &mut Running,
    rx: &mpsc::Receiver<String>,
    ctx: &LaunchContext<'_>,
    deadline: Instant,
) -> anyhow::Result<SocketAddr> {
    let addr = loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(a) => break a,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {}
        }
        if let Some(status) = running.exited() {
            return Err(Exited(format!(
                "{name} exited ({status}) before listening: {}",
                log_tail(&ctx.log_path)
            ))
            .into());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{name} did not print its address within {:?}; see {}",
            ctx.start_timeout,
            ctx.log_path.display()
        );
    };
    addr.parse()
        .map_err(|e| anyhow::anyhow!("{name} printed a bad address {addr:?}: {e}"))
}

/// How long a server that answers, but with another status than the ready request expects, is
/// given to come round (one still loading its routes) before the launch fails, unless its
/// variant says otherwise (`[start] ready_grace_secs`).
pub const WRONG_STATUS_GRACE: Duration = Duration::from_secs(2);

/// Waits until `ready` is answered with its expected status, timing the first connect, the
/// first byte and the whole response from `t0`; a server answering another status fails after
/// `grace`.
fn wait_ready(
    name: &str,
    running: &mut Running,
    ready: &SentRequest,
    ctx: &LaunchContext<'_>,
    t0: Instant,
    grace: Duration,
) -> anyhow::Result<()> {
    let deadline = t0 + ctx.start_timeout;
    let request = ready.closing_bytes(&running.authority);
    let want = ready.expect.status;
    // The first answer with another status, and when it came.
    let mut wrong: Option<(u16, Instant)> = None;
    loop {
        // A tight retry loop with a raw request: the first expected answer is timed here, with no
        // shell, curl or client library in the window.
        if let Some(answer) = probe(running.addr, &request, running.tls.as_ref(), t0) {
            if running.start.connected_ms == 0.0 {
                running.start.connected_ms = answer.connected_ms;
            }
            if let Some(why) = answer.tls_failed {
                anyhow::bail!("{name}: TLS with {}: {why}", running.authority);
            }
            match answer.status {
                Some(s) if want.accepts(s) => {
                    running.start.first_byte_ms = answer.first_byte_ms;
                    break;
                }
                Some(s) => {
                    let (_, since) = *wrong.get_or_insert((s, Instant::now()));
                    anyhow::ensure!(
                        since.elapsed() < grace,
                        "{name} answers {} with {s}, expected {want} (the suite's first workload, \
                         or the variant's ready_path, must be served)",
                        ready.describe()
                    );
                }
                None => {}
            }
        }
        if let Some(status) = running.exited() {
            return Err(Exited(format!(
                "{name} exited ({status}) before answering: {}",
                log_tail(&ctx.log_path)
            ))
            .into());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{name} did not answer {} with {want} within {:?}",
            ready.describe(),
            ctx.start_timeout
        );
        // A server that answers another status is up but not ready (a platform deploying its
        // component): probed every 200 µs it would spend its CPU on answering and logging them
        // (wash dev logged 80,000 404s while it compiled a JavaScript component, for over a
        // minute); every 5 ms keeps the first right answer's time to within 5 ms.
        let pause = match wrong {
            Some(_) => Duration::from_millis(5),
            None => Duration::from_micros(200),
        };
        std::thread::sleep(pause);
    }
    running.start.first_200_ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok(())
}

/// A probe's stream: plain TCP, or TLS over it.
trait ReadWrite: std::io::Read + std::io::Write {}
impl<T: std::io::Read + std::io::Write> ReadWrite for T {}

struct Probe {
    connected_ms: f64,
    first_byte_ms: f64,
    /// The status of a complete response; None when it did not complete.
    status: Option<u16>,
    /// The TLS handshake failed (a certificate that does not verify): no use waiting.
    tls_failed: Option<String>,
}

/// One request (its bytes ask for `Connection: close`) on a fresh connection (TLS over it for
/// an https remote target), read to the end, timed from `t0`. None when the connection is
/// refused.
fn probe(addr: SocketAddr, request: &[u8], tls: Option<&RemoteTls>, t0: Instant) -> Option<Probe> {
    use std::io::{Read, Write};
    let ms = || t0.elapsed().as_secs_f64() * 1e3;
    let tcp = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    let connected_ms = ms();
    let _ = tcp.set_nodelay(true);
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
    let mut s: Box<dyn ReadWrite> = match tls {
        None => Box::new(tcp),
        Some(t) => {
            let conn =
                rustls::ClientConnection::new(t.config.clone(), t.server_name.clone()).ok()?;
            Box::new(rustls::StreamOwned::new(conn, tcp))
        }
    };
    let mut p = Probe {
        connected_ms,
        first_byte_ms: 0.0,
        status: None,
        tls_failed: None,
    };
    if let Err(e) = s.write_all(request) {
        if tls.is_some() && e.kind() == std::io::ErrorKind::InvalidData {
            p.tls_failed = Some(e.to_string());
        }
        return Some(p);
    }
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                if buf.is_empty() {
                    p.first_byte_ms = ms();
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            // A TLS peer that closes without close_notify after a whole answer (common, and
            // harmless with `Connection: close`).
            Err(e) if tls.is_some() && e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(_) => return Some(p),
        }
    }
    // "HTTP/1.1 200 OK": a complete response (the server closed after it).
    p.status = std::str::from_utf8(buf.get(9..12)?).ok()?.parse().ok();
    Some(p)
}

/// A server that exited before it served: its own last words (a host refusing a component says
/// why there), as against one that is still running but does not answer.
#[derive(Debug)]
pub struct Exited(pub String);

impl std::fmt::Display for Exited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Exited {}

/// The last lines of a server's log, to say why it stopped.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    // From the last line that reports an error, else the last three lines.
    let from = lines
        .iter()
        .rposition(|l| l.to_ascii_lowercase().contains("error"))
        .unwrap_or(lines.len().saturating_sub(3));
    let tail = lines[from..(from + 3).min(lines.len())].join(" | ");
    if tail.is_empty() {
        format!("no output; see {}", path.display())
    } else {
        format!("{tail} (log: {})", path.display())
    }
}

impl Running {
    /// `http://host:port`, or `https://` for a remote target reached over TLS.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.authority)
    }

    /// The process the lab started (None for a remote target).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(std::process::Child::id)
    }

    /// `None` while running; the exit status once it has died.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// The roots of the variant's process trees: the process the lab started (unless
    /// `processes_only`), and those its `processes` command names (a container's conmon and main
    /// process, a containerd task's shim), asked once per launch. None for a remote target: its
    /// processes are not observable from here.
    pub fn process_roots(&mut self) -> Option<Vec<u32>> {
        if let Some(roots) = &self.roots {
            return Some(roots.clone());
        }
        let launched = self.child.as_ref()?.id();
        let mut roots = if self.processes_only {
            Vec::new()
        } else {
            vec![launched]
        };
        if let Some(cmd) = self.processes_command.as_mut()
            && let Ok(out) = run_with_timeout(cmd, Duration::from_secs(10))
        {
            for pid in out.split_whitespace().filter_map(|p| p.parse::<u32>().ok()) {
                let pid = match self.processes_parents {
                    true => crate::resources::parent(pid).unwrap_or(0),
                    false => pid,
                };
                if pid > 1 && !roots.contains(&pid) {
                    roots.push(pid);
                }
            }
        }
        if roots.is_empty() {
            // `processes` printed nothing yet: asked again next time.
            return None;
        }
        self.roots = Some(roots.clone());
        Some(roots)
    }

    /// The stop command if any, then SIGTERM, then SIGKILL after a grace period.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        if let Some(mut cmd) = self.stop_command.take() {
            let _ = run_with_timeout(&mut cmd, Duration::from_secs(15));
        }
        // Taken: a second call (Drop after `stop`) signals nothing.
        let Some(mut child) = self.child.take() else {
            return;
        };
        // The server's own process group (`spawn_server`), negated to signal the whole group.
        let group = -self.group;
        let exited = |c: &mut Child| c.try_wait().ok().flatten().is_some();
        if !exited(&mut child) {
            // SAFETY: signalling the process group of our own child.
            unsafe {
                libc::kill(group, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline && !exited(&mut child) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        // What is left of its group, the server gone: processes it started and left behind.
        // SAFETY: as above; ESRCH when none is left.
        unsafe {
            libc::kill(group, libc::SIGKILL);
        }
        // Listed until now: a run stopped at once meanwhile kills it without waiting out the
        // grace above.
        live::stopping(-group);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.terminate();
    }
}
