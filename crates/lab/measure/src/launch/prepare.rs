//! Once per run, before any variant starts: wasmlab's own binaries built, each variant's
//! `prepare` steps run (an image built, a guest precompiled), and the sizes of what the variants
//! run recorded; at the end of the run, their `finish` steps.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use wasmlab_model::run::Artifact;
use wasmlab_model::variant::Step;
use wasmlab_plan::exec::run_with_timeout;

use super::Launchable;
use super::vars::Vars;

/// Builds wasmlab's own binaries when wasmlab runs from its source tree, with the profile of the
/// directory they are expected in: `cargo build-wasmlab` (.cargo/config.toml), the lab and every
/// gateway in the one invocation ./wasmlab also runs, so that dependencies keep the features
/// they were built with and nothing is compiled twice.
pub fn build_binaries(
    workspace: Option<&Path>,
    bin_dir: &Path,
    binaries: &[String],
) -> anyhow::Result<()> {
    let Some(ws) = workspace else {
        return Ok(());
    };
    if binaries.is_empty() {
        return Ok(());
    }
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
    cmd.current_dir(ws).arg("build-wasmlab").args(profile);
    wasmlab_plan::environment::without_cargo_crate_vars(&mut cmd);
    eprintln!(
        "wasmlab: building {} (cargo build-wasmlab: wasmlab and its gateways in one build)",
        binaries.join(", ")
    );
    let status = cmd.status().map_err(|e| {
        anyhow::anyhow!("run cargo to build the gateways: {e} (or pass --no-build)")
    })?;
    anyhow::ensure!(status.success(), "building the gateways failed");
    Ok(())
}

/// Runs a variant's `prepare` steps in order, their output appended to `log`. The first that
/// fails fails the variant, with the end of its output as the reason.
pub fn prepare(v: &Launchable, log: &Path, say: &dyn Fn(String)) -> anyhow::Result<()> {
    if let Some(dir) = v
        .vars
        .get("prepared")
        .filter(|_| !v.spec.prepare.is_empty())
    {
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("create {dir}: {e}"))?;
    }
    for step in &v.spec.prepare {
        let t = Instant::now();
        say(format!("{}: {}", v.name(), step.about));
        run_step(&v.vars, step, log)
            .map_err(|e| anyhow::anyhow!("preparing ({}) failed: {e:#}", step.about))?;
        say(format!(
            "{}: {} took {:.1} s",
            v.name(),
            step.about,
            t.elapsed().as_secs_f64()
        ));
    }
    Ok(())
}

/// Runs a variant's `finish` steps; a failure is reported, not fatal (the run's data is safe).
pub fn finish(v: &Launchable, log: &Path, say: &dyn Fn(String)) {
    for step in &v.spec.finish {
        if let Err(e) = run_step(&v.vars, step, log) {
            say(format!("{}: {} failed: {e:#}", v.name(), step.about));
        }
    }
}

fn run_step(vars: &Vars, step: &Step, log: &Path) -> anyhow::Result<()> {
    let mut cmd = vars.command(&step.run)?;
    if let Some(cwd) = &step.cwd {
        cmd.current_dir(vars.expand_one(cwd)?);
    }
    // A step may build (cargo, or cargo under rustup, npm, a script).
    wasmlab_plan::environment::without_cargo_crate_vars(&mut cmd);
    for (k, v) in &step.env {
        cmd.env(k, vars.expand_one(v)?);
    }
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| anyhow::anyhow!("open {}: {e}", log.display()))?;
    writeln!(out, "$ {}", vars.show(&step.run))?;
    cmd.stdout(out.try_clone()?).stderr(out.try_clone()?);
    cmd.stdin(if step.stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", vars.show(&step.run)))?;
    if let (Some(text), Some(mut stdin)) = (&step.stdin, child.stdin.take()) {
        stdin.write_all(vars.expand_one(text)?.as_bytes())?;
    }
    let status = child.wait()?;
    anyhow::ensure!(
        status.success(),
        "`{}` exited with {status}: {}",
        vars.show(&step.run),
        tail_of(log)
    );
    Ok(())
}

/// The last lines of a log, for a reason.
fn tail_of(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    format!("{tail} (log: {})", log.display())
}

/// The sizes of what a variant declares as its artifacts.
pub fn artifacts(v: &Launchable) -> Vec<Artifact> {
    let mut out = Vec::new();
    for a in &v.spec.artifacts {
        let (path, bytes) = if let Some(p) = &a.path {
            let Ok(p) = v.vars.expand_one(p) else {
                continue;
            };
            let bytes = std::fs::metadata(&p).map_or(None, |m| Some(m.len()));
            (p, bytes)
        } else if let Some(c) = &a.size_command {
            let shown = v.vars.show(c);
            let bytes = v.vars.command(c).ok().and_then(|mut cmd| {
                run_with_timeout(&mut cmd, std::time::Duration::from_secs(30))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            });
            (shown, bytes)
        } else {
            continue;
        };
        let version = a.version_command.as_ref().and_then(|c| {
            let mut cmd = v.vars.command(c).ok()?;
            let printed = run_with_timeout(&mut cmd, std::time::Duration::from_secs(30)).ok()?;
            Some(printed.lines().next()?.trim().to_owned()).filter(|l| !l.is_empty())
        });
        if let Some(bytes) = bytes {
            out.push(Artifact {
                name: a.name.clone(),
                path,
                bytes,
                version,
            });
        }
    }
    out
}

/// wasmlab's own binaries the run uses, and its guests.
pub fn own_artifacts(
    bin_dir: &Path,
    binaries: &[String],
    core_guest: Option<&Path>,
) -> Vec<Artifact> {
    let mut out = Vec::new();
    let mut add = |name: String, path: &Path| {
        if let Ok(m) = std::fs::metadata(path) {
            out.push(Artifact {
                name,
                path: path.display().to_string(),
                bytes: m.len(),
                version: None,
            });
        }
    };
    for b in binaries {
        add(format!("{b} (binary)"), &bin_dir.join(b));
    }
    match core_guest {
        Some(p) => add("core guest, --wasm (.wasm)".into(), p),
        None => add(
            "core guest (.wasm)".into(),
            Path::new(wasmlab_guest_artifacts::CORE_PATH),
        ),
    }
    add(
        "WASI command guest (.wasm)".into(),
        Path::new(wasmlab_guest_artifacts::COMMAND_PATH),
    );
    add(
        "pipe command guest, for CLIs (.wasm)".into(),
        Path::new(wasmlab_guest_artifacts::PIPE_PATH),
    );
    add(
        "wasi:http component guest (.wasm)".into(),
        Path::new(wasmlab_guest_artifacts::HTTP_PATH),
    );
    out
}
