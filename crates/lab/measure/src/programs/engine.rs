//! Running one program in one engine: the output check, and a timed run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Deserialize;
use wasmlab_model::cpus::CpuPlan;
use wasmlab_model::sample::{Phases, ProgramSample, SAMPLES_SCHEMA};

use super::set::ProgramSet;
use crate::launch::Launchable;

/// The runner's file: integer nanoseconds.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PhasesFile {
    compile_ns: u64,
    instantiate_ns: u64,
    execute_ns: u64,
}

/// An engine ready to run programs of a set.
pub(crate) struct Engine {
    launchable: Launchable,
    set: ProgramSet,
    cpus: CpuPlan,
    timeout: Duration,
}

/// One finished process.
struct Exit {
    wall: Duration,
    code: Option<i32>,
    stdout: String,
    stderr: String,
    timed_out: bool,
    phases_file: PathBuf,
}

static RUNS: AtomicU64 = AtomicU64::new(0);

impl Engine {
    pub(crate) fn new(
        launchable: Launchable,
        set: &ProgramSet,
        cpus: &CpuPlan,
        timeout_secs: f64,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(
            launchable.spec.program.is_some(),
            "{} has no [program]",
            launchable.spec.name
        );
        Ok(Self {
            launchable,
            set: set.clone(),
            cpus: cpus.clone(),
            timeout: Duration::from_secs_f64(timeout_secs),
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.launchable.spec.name
    }

    fn build(&self) -> &str {
        &self
            .launchable
            .spec
            .program
            .as_ref()
            .expect("checked in new")
            .build
    }

    /// Runs `module` in a fresh directory holding the program's .exp (libsodium's check-mode
    /// programs read `./NAME.exp`), on the servers' CPUs, and waits for it (killing it at the
    /// timeout).
    fn run(&self, program: &str, module: &Path, scratch: &Path) -> anyhow::Result<Exit> {
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        let work = scratch.join(format!("{}-{program}-{n}", self.name()));
        std::fs::create_dir_all(&work)?;
        let exp = self.set.dir.join("exp").join(format!("{program}.exp"));
        if exp.is_file() {
            std::fs::copy(&exp, work.join(format!("{program}.exp")))?;
        }
        let phases_file = work.join("phases.json");
        let vars = self
            .launchable
            .vars
            .with("module", module.display().to_string())
            .with("phases", phases_file.display().to_string());
        let spec = self
            .launchable
            .spec
            .program
            .as_ref()
            .expect("checked in new");
        let mut cmd: Command = vars.command(&spec.command)?;
        for (k, v) in &spec.env {
            cmd.env(k, vars.expand_one(v)?);
        }
        let out_path = work.join("stdout");
        let err_path = work.join("stderr");
        cmd.current_dir(&work)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_path)?)
            .stderr(std::fs::File::create(&err_path)?);
        // Measured as a server is: the lab's minimal environment and the engine's own.
        wasmlab_plan::environment::minimal(&mut cmd);
        let t0 = Instant::now();
        let mut child = wasmlab_plan::cpus::spawn_confined(&self.cpus, &mut cmd)
            .map_err(|e| anyhow::anyhow!("cannot run {:?}: {e}", cmd.get_program()))?;
        // A watchdog ends a run past the timeout; the wait itself stays a plain blocking wait so
        // that the time measured is the process's.
        let pid = child.id() as libc::pid_t;
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let timeout = self.timeout;
        let watchdog = std::thread::spawn(move || {
            if done_rx.recv_timeout(timeout).is_err() {
                // SAFETY: signals the child we spawned; it has not been reaped (we wait below).
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return true;
            }
            false
        });
        let status = child.wait()?;
        let wall = t0.elapsed();
        let _ = done_tx.send(());
        let timed_out = watchdog.join().unwrap_or(false);
        let read =
            |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
        Ok(Exit {
            wall,
            code: status.code(),
            stdout: read(&out_path),
            stderr: read(&err_path),
            timed_out,
            phases_file,
        })
    }

    fn cleanup(exit: &Exit) {
        if let Some(dir) = exit.phases_file.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    fn failure(&self, exit: &Exit) -> Option<String> {
        if exit.timed_out {
            return Some(format!("stopped after the timeout ({:?})", self.timeout));
        }
        match exit.code {
            Some(0) => None,
            code => Some(format!(
                "{}: {}",
                code.map_or_else(
                    || "killed by a signal".into(),
                    |c| format!("exit status {c}")
                ),
                tail(&exit.stderr, 6)
            )),
        }
    }

    /// Runs the program's verify build and compares its output with the expected one.
    pub(crate) fn verify(&self, program: &str, scratch: &Path) -> Result<(), String> {
        let module = self.set.file(self.build(), program, true);
        if !module.is_file() {
            return Err(format!("{} is missing", module.display()));
        }
        let expected = self.set.expected(program).map_err(|e| format!("{e:#}"))?;
        let exit = self
            .run(program, &module, scratch)
            .map_err(|e| format!("{e:#}"))?;
        // A self-checking program wrote what it printed to ./NAME.res: when it says they differ,
        // the diff shows where.
        let written = exit.phases_file.with_file_name(format!("{program}.res"));
        let written = std::fs::read_to_string(written).ok();
        Self::cleanup(&exit);
        if self.set.self_checking() {
            return match (self.failure(&exit), written) {
                (None, _) => Ok(()),
                (Some(f), Some(res)) if res != expected => {
                    Err(format!("{}; {f}", diff(&expected, &res)))
                }
                (Some(f), _) => Err(f),
            };
        }
        if let Some(f) = self.failure(&exit) {
            return Err(f);
        }
        if exit.stdout != expected {
            return Err(diff(&expected, &exit.stdout));
        }
        Ok(())
    }

    /// One timed run of the program's timed build.
    pub(crate) fn time(&self, program: &str, repetition: u32, scratch: &Path) -> ProgramSample {
        let mut sample = ProgramSample {
            schema: SAMPLES_SCHEMA,
            engine: self.name().to_owned(),
            program: program.to_owned(),
            repetition,
            wall_ms: f64::NAN,
            phases: None,
            body_us: None,
            error: String::new(),
        };
        let module = self.set.file(self.build(), program, false);
        let exit = match self.run(program, &module, scratch) {
            Ok(e) => e,
            Err(e) => {
                sample.error = format!("{e:#}");
                return sample;
            }
        };
        sample.wall_ms = exit.wall.as_secs_f64() * 1e3;
        if let Some(f) = self.failure(&exit) {
            sample.error = f;
        } else if self
            .launchable
            .spec
            .program
            .as_ref()
            .is_some_and(|p| p.command.iter().any(|a| a.contains("{phases}")))
        {
            match read_phases(&exit.phases_file) {
                Ok(p) => sample.phases = Some(p),
                Err(e) => sample.error = format!("the runner's phases: {e}"),
            }
        }
        sample.body_us = exit
            .stdout
            .lines()
            .last()
            .and_then(|l| l.trim().parse::<u64>().ok())
            .map(|ps| ps as f64 / 1e6);
        Self::cleanup(&exit);
        sample
    }
}

fn read_phases(path: &Path) -> anyhow::Result<Phases> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("{} not written: {e}", path.display()))?;
    let f: PhasesFile =
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let ms = |ns: u64| ns as f64 / 1e6;
    Ok(Phases {
        compile_ms: ms(f.compile_ns),
        instantiate_ms: ms(f.instantiate_ns),
        execute_ms: ms(f.execute_ns),
    })
}

/// The last `n` non-empty lines of `text`, joined with " | ".
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let t = lines[lines.len().saturating_sub(n)..].join(" | ");
    if t.is_empty() {
        "(no message)".into()
    } else {
        t
    }
}

/// Where the output first differs from the expected one, with a few lines of each.
pub(crate) fn diff(expected: &str, got: &str) -> String {
    let e: Vec<&str> = expected.lines().collect();
    let g: Vec<&str> = got.lines().collect();
    let at = e
        .iter()
        .zip(&g)
        .position(|(a, b)| a != b)
        .unwrap_or(e.len().min(g.len()));
    let show = |v: &[&str]| {
        let s: Vec<String> = v
            .iter()
            .skip(at)
            .take(3)
            .map(|l| format!("{l:?}"))
            .collect();
        if s.is_empty() {
            "(end of output)".into()
        } else {
            s.join(", ")
        }
    };
    format!(
        "output differs from the expected at line {} (expected {} lines, got {}): expected {}; got {}",
        at + 1,
        e.len(),
        g.len(),
        show(&e),
        show(&g)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_names_the_first_differing_line() {
        let d = diff("a\nb\nc\n", "a\nx\nc\n");
        assert!(d.contains("at line 2"), "{d}");
        assert!(d.contains("expected \"b\""), "{d}");
        assert!(d.contains("got \"x\""), "{d}");
        let d = diff("a\nb\n", "a\n");
        assert!(
            d.contains("at line 2") && d.contains("(end of output)"),
            "{d}"
        );
    }
}
