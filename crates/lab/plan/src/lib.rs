//! Planning a run: the suite, the variants it names (built-in, the user's files, the suite's
//! own) and whether each can run here, how the machine's CPUs are split between the load
//! generator and the servers, and what the machine is.

pub mod containers;
pub mod cpus;
pub mod machine;
pub mod suite;
pub mod tools;
pub mod variants;

use std::path::{Path, PathBuf};

use crate::run::RunArgs;
use suite::Suite;
use variants::Catalog;

/// What a run will do, before it does anything.
pub struct Plan {
    pub suite: Suite,
    pub catalog: Catalog,
    /// Every variant the run names: the measured ones, then those only cold-started.
    pub names: Vec<String>,
    /// `--wasm`: the core guest to run instead of the built-in one.
    pub core_guest: Option<PathBuf>,
    /// Where wasmlab's own binaries are.
    pub bin_dir: PathBuf,
    pub workspace: Option<PathBuf>,
    pub tools: PathBuf,
}

impl Plan {
    /// The suite with the command line's overrides, and the variants it names.
    pub fn new(args: &RunArgs) -> anyhow::Result<Self> {
        let mut suite = suite::load(&args.suite)?;
        if !args.variants.is_empty() {
            suite.variants = args.variants.clone();
            if let Some(c) = &mut suite.cold_start {
                c.variants.retain(|v| args.variants.contains(v));
                if c.variants.is_empty() {
                    c.variants = args.variants.clone();
                }
            }
        }
        if !args.connections.is_empty() {
            suite.connections = args.connections.clone();
        }
        if let Some(d) = args.duration {
            suite.duration_secs = d.as_secs_f64();
        }
        if let Some(r) = args.repetitions {
            suite.repetitions = r;
        }
        suite.validate()?;
        let catalog = suite.catalog(&args.variant_files)?;
        suite.check_variants(&catalog)?;
        let core_guest = match &args.wasm {
            Some(p) => {
                anyhow::ensure!(p.is_file(), "--wasm {}: no such file", p.display());
                Some(p.canonicalize()?)
            }
            None => None,
        };
        let mut names = suite.variants.clone();
        for v in suite.cold_start_variants() {
            if !names.contains(&v) {
                names.push(v);
            }
        }
        if let Some(g) = &core_guest {
            anyhow::ensure!(
                names
                    .iter()
                    .any(|n| catalog.find(n).is_ok_and(|s| s.runs_core_guest())),
                "--wasm {}: none of the variants run a core-module guest (wasmtime-pooled does)",
                g.display()
            );
        }
        let bin_dir = match &args.bin_dir {
            Some(d) => d.clone(),
            None => std::env::current_exe()?
                .parent()
                .map(Path::to_path_buf)
                .ok_or_else(|| anyhow::anyhow!("cannot tell where wasmlab's executable is"))?,
        };
        Ok(Self {
            suite,
            catalog,
            names,
            core_guest,
            bin_dir,
            workspace: crate::workspace_dir(),
            tools: tools::tools_dir(),
        })
    }
}

/// The host's Rust target triple (for builds of a variant's own), from rustc when it is there.
pub fn host_triple() -> String {
    machine::command_line("rustc", &["-vV"])
        .and_then(|out| {
            out.lines()
                .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        })
        .unwrap_or_else(|| format!("{}-unknown-linux-gnu", std::env::consts::ARCH))
}
