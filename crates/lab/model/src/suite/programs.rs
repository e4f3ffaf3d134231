//! A program suite (`kind = "programs"`): the runtime benchmark. A program set is run to
//! completion in every engine the suite names, against a baseline engine.

use serde::{Deserialize, Serialize};

/// A program suite's file (`kind = "programs"`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramSuite {
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The program set: `libsodium` (built by scripts/build-libsodium.sh into
    /// target/libsodium), or a path to a directory holding a built set.
    pub program_set: String,
    /// How many times a benchmark build runs its test body (the `libsodium` set; the 2023 study
    /// and libsodium's own wasm32-wasi.sh --bench use 200).
    #[serde(default = "default_iterations")]
    pub iterations: u32,
    /// The programs to run (default: every program of the set).
    #[serde(default)]
    pub programs: Vec<String>,
    /// The engines (engine variants), the baseline among them.
    pub variants: Vec<String>,
    /// The engine every ratio is relative to.
    pub baseline: String,
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    /// Untimed runs of every (engine, program) pair before the repetitions (hyperfine's
    /// --warmup): an engine that compiles ahead of time and caches the result (wasm2c, WAMR's
    /// AOT) pays its compilation there, and every engine finds its files in the page cache.
    #[serde(default = "default_warmup")]
    pub warmup: u32,
    #[serde(default)]
    pub seed: Option<u64>,
    /// A run taking longer than this is stopped and counted as failed.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: f64,
    /// Published figures to set beside ours (`studies/NAME.toml`).
    #[serde(default)]
    pub study: Option<String>,
}

fn default_repetitions() -> u32 {
    3
}
fn default_warmup() -> u32 {
    1
}
fn default_iterations() -> u32 {
    200
}
fn default_timeout_secs() -> f64 {
    600.0
}

impl ProgramSuite {
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<Self> {
        let s: ProgramSuite = toml::from_str(text).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        anyhow::ensure!(s.kind == "programs", "{origin}: kind must be \"programs\"");
        anyhow::ensure!(!s.variants.is_empty(), "{origin}: `variants` is empty");
        anyhow::ensure!(
            s.variants.contains(&s.baseline),
            "{origin}: the baseline {:?} must be one of the suite's variants",
            s.baseline
        );
        anyhow::ensure!(
            s.repetitions >= 1,
            "{origin}: `repetitions` must be at least 1"
        );
        anyhow::ensure!(
            s.timeout_secs.is_finite() && s.timeout_secs > 0.0,
            "{origin}: `timeout_secs` must be > 0"
        );
        Ok(s)
    }
}
