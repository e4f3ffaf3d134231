//! A load cell made by several generators: local `wasmlab load` processes, each pinned to CPUs
//! of its own when the run's CPU plan has them, and commands that run one elsewhere (`ssh HOST
//! wasmlab`), all told to start at the same wall-clock time, their parts merged exactly.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use wasmlab_load::{LoadConfig, LoadSpec, Merged, Part};
use wasmlab_model::cpus::CpuPlan;

/// The generators of a cell.
pub(crate) struct Fleet<'a> {
    /// Local processes.
    pub local: usize,
    /// Commands that run one generator each, elsewhere.
    pub commands: &'a [String],
    pub cpus: &'a CpuPlan,
    pub cancel: Arc<AtomicBool>,
}

/// How long before the common start the generators are started: enough for a local process;
/// a command that logs in elsewhere (ssh, kubectl) gets longer.
const LEAD_LOCAL: Duration = Duration::from_millis(500);
const LEAD_REMOTE: Duration = Duration::from_secs(3);

/// A generator's process that outlives its run by this much is killed, its cell failed.
const GRACE: Duration = Duration::from_secs(30);

impl Fleet<'_> {
    pub(crate) fn size(&self) -> usize {
        self.local + self.commands.len()
    }

    /// Runs `config` split over the fleet (connections and rate shared evenly) and merges the
    /// parts.
    pub(crate) fn run(&self, config: &LoadConfig) -> anyhow::Result<Merged> {
        let n = self.size();
        anyhow::ensure!(
            config.connections >= n,
            "{n} generators need at least {n} connections; this cell opens {}",
            config.connections
        );
        let lead = match self.commands.is_empty() {
            true => LEAD_LOCAL,
            false => LEAD_REMOTE,
        };
        let start_at = SystemTime::now() + lead;
        let at = format!(
            "{:.6}",
            start_at
                .duration_since(SystemTime::UNIX_EPOCH)?
                .as_secs_f64()
        );
        let longest = config.duration.unwrap_or(Duration::ZERO) + config.timeout + lead + GRACE;
        let mut running = Vec::with_capacity(n);
        for i in 0..n {
            let mut part = config.clone();
            part.connections = config.connections / n + usize::from(i < config.connections % n);
            part.threads = config.threads.min(part.connections);
            part.rate = config.rate.map(|r| r / n as f64);
            let (name, mut cmd, cpus) = match i.checked_sub(self.local) {
                None => self.local_command(i, &mut part, &at)?,
                Some(k) => {
                    let command = &self.commands[k];
                    // Its machine is not ours: whether it may spin is not ours to say.
                    part.spin = false;
                    let mut cmd = Command::new("sh");
                    cmd.arg("-c")
                        .arg(format!("{command} load --config - --start-at {at} --out -"));
                    (format!("generator {} ({command})", i + 1), cmd, None)
                }
            };
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let child = match &cpus {
                Some(cpus) => wasmlab_plan::cpus::spawn_on(cpus, &mut cmd),
                None => cmd.spawn(),
            };
            let mut child = child.map_err(|e| anyhow::anyhow!("{name}: cannot start it: {e}"))?;
            let spec = serde_json::to_vec(&LoadSpec::of(&part))?;
            let mut stdin = child.stdin.take().expect("piped");
            // A generator that exits at once (a bad command) closes its stdin: its own
            // message says why, below.
            let _ = stdin.write_all(&spec);
            drop(stdin);
            running.push(Generator::watch(name, child));
        }
        let deadline = Instant::now() + longest;
        let mut parts = Vec::with_capacity(n);
        let mut failures = Vec::new();
        for g in running {
            match g.finish(deadline, &self.cancel) {
                Ok(part) => parts.push(part),
                Err(e) => failures.push(format!("{e:#}")),
            }
        }
        anyhow::ensure!(failures.is_empty(), "{}", failures.join("; "));
        wasmlab_load::merge(&parts)
    }

    /// Local generator `i`: this wasmlab, and the CPUs of its own to start it on when the plan
    /// gives the generators some (it then spins, as the lab's own generator does).
    fn local_command(
        &self,
        i: usize,
        part: &mut LoadConfig,
        at: &str,
    ) -> anyhow::Result<(String, Command, Option<Vec<usize>>)> {
        let exe = wasmlab_plan::exec::own_exe()?;
        let mut cmd = Command::new(exe);
        cmd.args(["load", "--config", "-", "--start-at", at, "--out", "-"]);
        let per = self.cpus.load.len() / self.local.max(1);
        let (name, cpus) = match self.cpus.apart() && per >= part.threads {
            true => {
                let cpus = self.cpus.load[i * per..(i + 1) * per].to_vec();
                let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
                let name = format!("generator {} (local, CPU {})", i + 1, list.join(","));
                (name, Some(cpus))
            }
            false => {
                part.spin = false;
                (format!("generator {} (local, CPUs shared)", i + 1), None)
            }
        };
        Ok((name, cmd, cpus))
    }
}

/// A started generator: its output read as it comes, so a full pipe never stops it.
struct Generator {
    name: String,
    child: Child,
    stdout: std::thread::JoinHandle<Vec<u8>>,
    stderr: std::thread::JoinHandle<Vec<u8>>,
}

impl Generator {
    fn watch(name: String, mut child: Child) -> Self {
        let drain = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = r.read_to_end(&mut buf);
                buf
            })
        };
        let stdout = drain(Box::new(child.stdout.take().expect("piped")));
        let stderr = drain(Box::new(child.stderr.take().expect("piped")));
        Self {
            name,
            child,
            stdout,
            stderr,
        }
    }

    /// Waits for the generator (stopping it when the run is cancelled, killing it past
    /// `deadline`) and reads its part.
    fn finish(mut self, deadline: Instant, cancel: &AtomicBool) -> anyhow::Result<(String, Part)> {
        let mut asked_to_stop = false;
        let status = loop {
            if let Some(status) = self.child.try_wait()? {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                anyhow::bail!("{}: still running long after its run, killed", self.name);
            }
            if cancel.load(Ordering::Relaxed) && !asked_to_stop {
                // SAFETY: a signal to a child we started and have not reaped.
                unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
                asked_to_stop = true;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = self.stdout.join().unwrap_or_default();
        let err = self.stderr.join().unwrap_or_default();
        let err = String::from_utf8_lossy(&err);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        anyhow::ensure!(
            status.success() || !out.is_empty(),
            "{} failed ({status}): {last}",
            self.name
        );
        let part = Part::parse(&String::from_utf8_lossy(&out)).map_err(|e| {
            anyhow::anyhow!(
                "{} ({status}) wrote no part: {e}{}",
                self.name,
                match last {
                    "" => String::new(),
                    l => format!("; it said: {l}"),
                }
            )
        })?;
        Ok((self.name, part))
    }
}
