//! Planning a run, the lab's first phase: from a plain request (a suite, the command line's
//! overrides, the user's files) to what the run will do. The suite with its overrides, the
//! variants it names (built-in, the user's files, the suite's own) and whether each can run here,
//! what the machine is, how its CPUs are shared between the load generator and what is measured,
//! the seed of every shuffled order, and the earlier run whose equal-load rates a server run
//! keeps. Nothing is built or measured yet. The helpers that ready processes for the later
//! phases (a tool's probe and install, a server's CPU affinity) live here too, and measuring
//! uses them.

pub mod component;
pub mod containerd;
pub mod containers;
pub mod cpus;
pub mod earlier;
pub mod environment;
pub mod exec;
pub mod idle;
pub mod machine;
pub mod setup;
pub mod tools;

use std::path::{Path, PathBuf};

use wasmlab_model::component::UserComponent;
use wasmlab_model::cpus::CpuPlan;
use wasmlab_model::idle::IdlePolicy;
use wasmlab_model::machine::Machine;
use wasmlab_model::suite::{ProgramSuite, ServerSuite, Suite};
use wasmlab_model::variant::{Catalog, VariantSpec};

use tools::State;

/// What the user asked of a run, from the command line or any other front end.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// A built-in suite's name or a suite file's path.
    pub suite: String,
    /// Measure only these variants (default: the suite's).
    pub variants: Vec<String>,
    /// The suite's concurrency levels, replaced.
    pub connections: Vec<usize>,
    /// The suite's measured seconds per cell, replaced.
    pub duration_secs: Option<f64>,
    pub repetitions: Option<u32>,
    /// The most repetitions a server run may grow to when its intervals come out wide.
    pub max_repetitions: Option<u32>,
    /// The suite's idle policy, replaced (server suites only).
    pub cpu_idle: Option<IdlePolicy>,
    /// Seed of the shuffled orders (default: the suite's, else the clock).
    pub seed: Option<u64>,
    /// A core-module guest to run instead of the built-in one.
    pub wasm: Option<PathBuf>,
    /// The user's wasi:http components, each put in every component host the run names.
    pub components: Vec<PathBuf>,
    /// `--component-env`: the environment every host gives the user's components.
    pub component_env: Vec<(String, String)>,
    /// Variant files of the user's.
    pub variant_files: Vec<PathBuf>,
    /// Set up, before planning, what a variant needs when that takes a minute at most.
    pub quick_setup: bool,
    /// Where wasmlab's own binaries are (default: beside this executable).
    pub bin_dir: Option<PathBuf>,
    /// Where a server run's equal-load rates come from when its suite names none.
    pub rates_from: RatesFrom,
}

/// Where a server run's equal-load rates come from when its suite names none: the capacities its
/// probes measure, or, for each variant whose probe agrees with it, an earlier run's, so that
/// two runs compare a variant at the same rates (CPU per request depends on the rate: a rate
/// chosen afresh from a probe that moved by 15% moves the figure with it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RatesFrom {
    /// The newest earlier run of the same suite on this machine in this results directory.
    LastRunIn(PathBuf),
    /// That run's (a run directory named on the command line).
    Run(PathBuf),
    /// This run's probes alone (the default of a request made in code: no history).
    #[default]
    New,
}

/// A variant the run names, and whether it can run here.
#[derive(Debug, Clone)]
pub struct Planned {
    pub spec: VariantSpec,
    pub state: State,
}

impl Planned {
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// What a run will do, before it does anything.
pub struct Plan {
    /// The suite, with the request's overrides.
    pub suite: Suite,
    pub catalog: Catalog,
    /// Every variant the run names, in order: a server suite's measured variants, then those
    /// only cold-started; a program suite's engines.
    pub variants: Vec<Planned>,
    /// `--wasm`: the core guest to run instead of the built-in one.
    pub core_guest: Option<PathBuf>,
    /// `--component`: the user's components, as read (their hosts' twins are in `variants`).
    pub components: Vec<UserComponent>,
    /// Where wasmlab's own binaries are.
    pub bin_dir: PathBuf,
    /// The wasmlab source tree, when wasmlab runs from it (it builds what it needs there).
    pub workspace: Option<PathBuf>,
    /// The project's tools directory (`wasmlab setup` installs there).
    pub tools: PathBuf,
    pub cpus: CpuPlan,
    /// Described before the lab pins itself: pinned, it would count only the generator's CPUs.
    pub machine: Machine,
    /// Seed of every shuffled order, recorded in run.json.
    pub seed: u64,
    /// The earlier run whose equal-load capacities this run keeps where its probes agree.
    pub earlier_rates: Option<earlier::EarlierRates>,
    /// What to say of it (a run named on the command line that differs from this one).
    pub earlier_rates_said: Vec<String>,
}

impl Plan {
    /// The variants that can run here.
    pub fn ready(&self) -> impl Iterator<Item = &Planned> {
        self.variants
            .iter()
            .filter(|p| matches!(p.state, State::Ready { .. }))
    }

    /// The names of wasmlab's own binaries the ready variants run, each once.
    pub fn own_binaries(&self) -> Vec<String> {
        let mut own = Vec::new();
        for b in self.ready().flat_map(|p| p.spec.own_binaries()) {
            if !own.contains(&b) {
                own.push(b);
            }
        }
        own
    }

    /// After the build step: a ready variant whose own binaries are not in `bin_dir` could only
    /// fail when started, so it is unavailable here instead, with `what_to_do` to build them.
    pub fn require_built(&mut self, what_to_do: &str) {
        let bin_dir = &self.bin_dir;
        for p in &mut self.variants {
            if !matches!(p.state, State::Ready { .. }) {
                continue;
            }
            let missing: Vec<String> = p
                .spec
                .own_binaries()
                .into_iter()
                .map(|b| bin_dir.join(b))
                .filter(|b| !b.is_file())
                .map(|b| b.display().to_string())
                .collect();
            if !missing.is_empty() {
                p.state = State::Unavailable {
                    reason: format!(
                        "not built: {} is not there ({what_to_do})",
                        missing.join(", ")
                    ),
                };
            }
        }
    }

    /// The order of repetition `r`: `items` shuffled by the run's seed, so every run with the
    /// same seed measures in the same order and drift of the machine favours no variant.
    pub fn order<T: Clone>(&self, items: &[T], r: u32) -> Vec<T> {
        shuffled(items, self.seed.wrapping_add(u64::from(r)))
    }

    /// The order of cold-start round `i` (a seed of its own, apart from the repetitions').
    pub fn cold_start_order<T: Clone>(&self, items: &[T], i: u32) -> Vec<T> {
        shuffled(items, self.seed ^ 0xc01d ^ u64::from(i))
    }
}

/// `items` in an order shuffled by `seed`: the same seed always gives the same order.
pub fn shuffled<T: Clone>(items: &[T], seed: u64) -> Vec<T> {
    let mut v = items.to_vec();
    fastrand::Rng::with_seed(seed).shuffle(&mut v);
    v
}

/// Plans the run `req` asks for.
pub fn plan(req: &RunRequest) -> anyhow::Result<Plan> {
    let workspace = workspace_dir();
    let tools = exec::tools_dir();
    // Each component read first: a wrong file is refused before anything else is looked at.
    let mut components = req
        .components
        .iter()
        .map(|p| component::inspect(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (suite, catalog, names, core_guest) = match Suite::read(&req.suite)? {
        Suite::Servers(s) => {
            if let Some(c) = &s.component {
                let what = format!("suite {}: component = {c:?}", s.name);
                components.push(component::inspect_as(Path::new(c), &what)?);
            }
            if !req.component_env.is_empty() {
                anyhow::ensure!(
                    !components.is_empty(),
                    "--component-env: no component to give it to (give one with --component, or \
                     component = \"PATH\" in the suite)"
                );
                let env = wasmlab_model::component::environment(&req.component_env)
                    .map_err(anyhow::Error::msg)?;
                for c in &mut components {
                    c.env = env.clone();
                }
            }
            let (s, catalog, names, core_guest) = servers(req, s, &components)?;
            (Suite::Servers(s), catalog, names, core_guest)
        }
        Suite::Programs(p) => {
            anyhow::ensure!(
                components.is_empty(),
                "--component: suite {} runs programs; a component is served by the server suites \
                 (without --suite, the component suite)",
                p.name
            );
            let (p, catalog) = programs(req, p)?;
            let names = p.variants.clone();
            (Suite::Programs(p), catalog, names, None)
        }
    };
    let mut variants = Vec::new();
    for name in &names {
        let spec = catalog.find(name)?.clone();
        let state = setup::assess_with_quick_setup(&spec, &tools, req.quick_setup)?;
        variants.push(Planned { spec, state });
    }
    let bin_dir = match &req.bin_dir {
        Some(d) => d.clone(),
        None => std::env::current_exe()?
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| anyhow::anyhow!("cannot tell where wasmlab's executable is"))?,
    };
    let allowed = cpus::allowed()
        .map_err(|e| anyhow::anyhow!("cannot read this process's CPU affinity: {e}"))?;
    let cpus = match &suite {
        // Each local generator process has `load_threads` CPUs of its own.
        Suite::Servers(s) => CpuPlan::new(
            &allowed,
            s.load_threads * s.generators.max(1),
            s.cpu_partition,
        ),
        // Programs run one at a time, on the CPUs a server would have.
        Suite::Programs(_) => CpuPlan::new(&allowed, 1, true),
    };
    let suite_seed = match &suite {
        Suite::Servers(s) => s.seed,
        Suite::Programs(p) => p.seed,
    };
    let seed = req.seed.or(suite_seed).unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    });
    let machine = machine::describe(workspace.as_deref());
    let (earlier_rates, earlier_rates_said) = match &suite {
        Suite::Servers(s) => earlier::find(&req.rates_from, s, &machine)?,
        Suite::Programs(p) => {
            anyhow::ensure!(
                !matches!(req.rates_from, RatesFrom::Run(_)),
                "--rates-from: suite {} runs programs, which are measured at no equal load",
                p.name
            );
            (None, Vec::new())
        }
    };
    Ok(Plan {
        machine,
        suite,
        catalog,
        variants,
        core_guest,
        components,
        bin_dir,
        workspace,
        tools,
        cpus,
        seed,
        earlier_rates,
        earlier_rates_said,
    })
}

/// A server suite with the request's overrides, its catalog, every variant it names (measured,
/// then cold-started only) and the core guest to run.
fn servers(
    req: &RunRequest,
    mut suite: ServerSuite,
    components: &[UserComponent],
) -> anyhow::Result<(ServerSuite, Catalog, Vec<String>, Option<PathBuf>)> {
    if !req.variants.is_empty() {
        suite.variants = req.variants.clone();
        if let Some(c) = &mut suite.cold_start {
            c.variants.retain(|v| req.variants.contains(v));
            if c.variants.is_empty() {
                c.variants = req.variants.clone();
            }
        }
        if let Some(h) = &mut suite.http2 {
            h.variants.retain(|v| req.variants.contains(v));
        }
    }
    if !req.connections.is_empty() {
        suite.connections = req.connections.clone();
    }
    if let Some(d) = req.duration_secs {
        suite.duration_secs = d;
    }
    if let Some(r) = req.repetitions {
        // A count asked for is the count run, as hyperfine's --runs; --max-repetitions lets it
        // grow.
        suite.repetitions = r;
        suite.max_repetitions = None;
    }
    if let Some(m) = req.max_repetitions {
        anyhow::ensure!(
            m >= suite.repetitions,
            "--max-repetitions {m} is below the run's {} repetitions (the suite's, or \
             --repetitions): the most a run may grow to cannot be fewer than it starts with",
            suite.repetitions
        );
        anyhow::ensure!(
            suite.repetitions >= 2,
            "--max-repetitions needs at least 2 repetitions to start with (--repetitions): one \
             gives no interval to judge the machine by"
        );
        suite.max_repetitions = Some(m);
    }
    if suite.max_repetitions.is_none() {
        // The suite's target has nothing to do once the count is fixed.
        suite.interval_target = None;
    }
    if let Some(p) = req.cpu_idle {
        suite.cpu_idle = p;
    }
    suite.validate()?;
    let mut catalog = suite.catalog(&req.variant_files)?;
    component::put_in_hosts(&mut suite, &mut catalog, components)?;
    suite.add_http2_twins(&catalog)?;
    suite.check_variants(&catalog)?;
    let core_guest = match &req.wasm {
        Some(p) => {
            anyhow::ensure!(p.is_file(), "--wasm {}: no such file", p.display());
            let head = std::fs::read(p)?;
            anyhow::ensure!(
                !wasmparser::Parser::is_component(&head),
                "--wasm {}: a component, not a core module: give it with --component, which puts \
                 it in every component host",
                p.display()
            );
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
    Ok((suite, catalog, names, core_guest))
}

/// A program suite with the request's overrides, and its catalog; every variant it names must
/// be an engine.
fn programs(req: &RunRequest, mut suite: ProgramSuite) -> anyhow::Result<(ProgramSuite, Catalog)> {
    anyhow::ensure!(
        req.connections.is_empty()
            && req.duration_secs.is_none()
            && req.wasm.is_none()
            && req.cpu_idle.is_none()
            && req.max_repetitions.is_none(),
        "--connections, --duration, --wasm, --cpu-idle and --max-repetitions are for HTTP suites; \
         {} is a program suite",
        suite.name
    );
    if !req.variants.is_empty() {
        suite.variants = req.variants.clone();
        if !suite.variants.contains(&suite.baseline) {
            suite.variants.insert(0, suite.baseline.clone());
        }
    }
    if let Some(r) = req.repetitions {
        anyhow::ensure!(r >= 1, "--repetitions must be at least 1");
        suite.repetitions = r;
    }
    let catalog = Catalog::with_files(&req.variant_files)?;
    for name in &suite.variants {
        let spec = catalog.find(name)?;
        anyhow::ensure!(
            spec.is_engine(),
            "{name} is a server variant; a program suite runs engines ([program] variants): {}",
            catalog
                .all()
                .filter(|s| s.is_engine())
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok((suite, catalog))
}

/// Where the workspace is, when wasmlab runs from its source tree (it builds what it needs
/// there).
pub fn workspace_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..");
    dir.join("Cargo.toml")
        .is_file()
        .then(|| dir.canonicalize().unwrap_or(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffles_are_seeded() {
        let items: Vec<u32> = (0..10).collect();
        assert_eq!(shuffled(&items, 7), shuffled(&items, 7));
        assert_ne!(shuffled(&items, 7), shuffled(&items, 8));
        let mut s = shuffled(&items, 7);
        s.sort();
        assert_eq!(s, items);
    }

    #[test]
    fn the_workspace_is_found_from_a_phase_crate() {
        let ws = workspace_dir().expect("the tests run in the source tree");
        assert!(ws.join("crates/lab/plan/Cargo.toml").is_file(), "{ws:?}");
    }
}
