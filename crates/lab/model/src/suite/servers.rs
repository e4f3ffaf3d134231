//! A server suite: which server variants, workloads and concurrency levels a run measures, and
//! for how long.

use serde::{Deserialize, Serialize};

use crate::variant::Catalog;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSuite {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub variants: Vec<String>,
    pub workloads: Vec<String>,
    pub connections: Vec<usize>,
    pub duration_secs: f64,
    #[serde(default)]
    pub warmup_secs: f64,
    #[serde(default = "default_load_threads")]
    pub load_threads: usize,
    /// Give the load generator its own `load_threads` CPUs and confine the servers to the others
    /// (see `cpus.rs`); off, both share every CPU.
    #[serde(default = "default_cpu_partition")]
    pub cpu_partition: bool,
    #[serde(default = "default_echo_body_bytes")]
    pub echo_body_bytes: usize,
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: f64,
    #[serde(default = "default_start_timeout_secs")]
    pub start_timeout_secs: f64,
    /// Independent runs of every measured cell, the variants in a shuffled order each time.
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    /// Seed of the shuffled orders (default: taken from the clock, and recorded in run.json).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Cold starts, measured before anything else (absent: none).
    #[serde(default)]
    pub cold_start: Option<ColdStart>,
    /// Warm latency on one connection (absent: none).
    #[serde(default)]
    pub warm: Option<Warm>,
    /// Open loop at fractions of each variant's closed-loop maximum (absent: none).
    #[serde(default)]
    pub open_loop: Option<OpenLoop>,
    /// Variants defined in the suite itself (`[[variant]]` tables, the variant file's shape).
    #[serde(default, rename = "variant", skip_serializing_if = "Vec::is_empty")]
    pub inline_variants: Vec<crate::variant::VariantSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColdStart {
    /// Launches per variant.
    pub runs: u32,
    /// Variants to launch (default: the suite's); may add cold-start-only variants such as
    /// wasmtime-pooled-cwasm.
    #[serde(default)]
    pub variants: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warm {
    pub duration_secs: f64,
    #[serde(default)]
    pub warmup_secs: f64,
    /// Default: the suite's workloads.
    #[serde(default)]
    pub workloads: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenLoop {
    /// Offered loads as fractions of the variant's own closed-loop maximum for the workload.
    pub fractions: Vec<f64>,
    pub duration_secs: f64,
    /// Connections available to the schedule: enough to keep the rate when responses are slow.
    pub connections: usize,
    /// Default: the suite's workloads.
    #[serde(default)]
    pub workloads: Vec<String>,
}

fn default_load_threads() -> usize {
    1
}
fn default_cpu_partition() -> bool {
    true
}
fn default_echo_body_bytes() -> usize {
    1024
}
fn default_timeout_secs() -> f64 {
    10.0
}
fn default_start_timeout_secs() -> f64 {
    20.0
}
fn default_repetitions() -> u32 {
    1
}

impl ServerSuite {
    /// Parses and checks a server suite's TOML text.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let suite: ServerSuite = toml::from_str(text)?;
        suite.validate()?;
        Ok(suite)
    }

    /// The variants launched for cold starts.
    pub fn cold_start_variants(&self) -> Vec<String> {
        match &self.cold_start {
            Some(c) if !c.variants.is_empty() => c.variants.clone(),
            Some(_) => self.variants.clone(),
            None => Vec::new(),
        }
    }

    pub fn warm_workloads(&self) -> Vec<String> {
        match &self.warm {
            Some(w) if !w.workloads.is_empty() => w.workloads.clone(),
            Some(_) => self.workloads.clone(),
            None => Vec::new(),
        }
    }

    pub fn open_loop_workloads(&self) -> Vec<String> {
        match &self.open_loop {
            Some(o) if !o.workloads.is_empty() => o.workloads.clone(),
            Some(_) => self.workloads.clone(),
            None => Vec::new(),
        }
    }

    /// The variants this suite can name: the built-in ones, the user's files, and its own
    /// `[[variant]]` tables.
    pub fn catalog(&self, files: &[std::path::PathBuf]) -> anyhow::Result<Catalog> {
        let mut catalog = Catalog::with_files(files)?;
        for v in &self.inline_variants {
            catalog.add(
                v.clone(),
                format!("suite {}'s [[variant]] {}", self.name, v.name),
            )?;
        }
        Ok(catalog)
    }

    /// Checks that every variant the suite names is in `catalog`.
    pub fn check_variants(&self, catalog: &Catalog) -> anyhow::Result<()> {
        for v in self.variants.iter().chain(&self.cold_start_variants()) {
            anyhow::ensure!(
                !catalog.find(v)?.is_engine(),
                "{v} is an engine for program suites (such as libsodium), not a server"
            );
        }
        Ok(())
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(!self.variants.is_empty(), "`variants` is empty");
        anyhow::ensure!(!self.workloads.is_empty(), "`workloads` is empty");
        for w in self
            .workloads
            .iter()
            .chain(&self.warm_workloads())
            .chain(&self.open_loop_workloads())
        {
            anyhow::ensure!(
                wasmlab_handlers::ROUTES.iter().any(|r| r.workload == w),
                "unknown workload {w:?}: known workloads are {}",
                wasmlab_handlers::ROUTES
                    .iter()
                    .map(|r| r.workload)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        anyhow::ensure!(!self.connections.is_empty(), "`connections` is empty");
        anyhow::ensure!(
            self.connections.iter().all(|&c| (1..=100_000).contains(&c)),
            "every `connections` level must be in 1..=100000"
        );
        let positive = |v: f64| v.is_finite() && v > 0.0;
        anyhow::ensure!(positive(self.duration_secs), "`duration_secs` must be > 0");
        anyhow::ensure!(
            self.warmup_secs.is_finite() && self.warmup_secs >= 0.0,
            "`warmup_secs` must be >= 0"
        );
        anyhow::ensure!(positive(self.timeout_secs), "`timeout_secs` must be > 0");
        anyhow::ensure!(
            positive(self.start_timeout_secs),
            "`start_timeout_secs` must be > 0"
        );
        anyhow::ensure!(self.load_threads >= 1, "`load_threads` must be >= 1");
        anyhow::ensure!(self.repetitions >= 1, "`repetitions` must be >= 1");
        if let Some(c) = &self.cold_start {
            anyhow::ensure!(c.runs >= 1, "`cold_start.runs` must be >= 1");
        }
        if let Some(w) = &self.warm {
            anyhow::ensure!(
                positive(w.duration_secs),
                "`warm.duration_secs` must be > 0"
            );
            anyhow::ensure!(
                w.warmup_secs.is_finite() && w.warmup_secs >= 0.0,
                "`warm.warmup_secs` must be >= 0"
            );
        }
        if let Some(o) = &self.open_loop {
            anyhow::ensure!(!o.fractions.is_empty(), "`open_loop.fractions` is empty");
            anyhow::ensure!(
                o.fractions.iter().all(|f| *f > 0.0 && *f <= 2.0),
                "every `open_loop.fractions` entry must be in (0, 2]"
            );
            anyhow::ensure!(
                positive(o.duration_secs),
                "`open_loop.duration_secs` must be > 0"
            );
            anyhow::ensure!(
                (1..=100_000).contains(&o.connections),
                "`open_loop.connections` must be in 1..=100000"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_suites_say_why() {
        let base = r#"name = "t"
variants = ["native"]
workloads = ["hello"]
connections = [1]
duration_secs = 1.0
"#;
        assert!(ServerSuite::parse(base).is_ok());
        let err = |text: String| {
            let checked =
                ServerSuite::parse(&text).and_then(|s| s.check_variants(&s.catalog(&[])?));
            format!("{:#}", checked.unwrap_err())
        };
        assert!(err(base.replace("\"native\"", "\"nope\"")).contains("unknown variant \"nope\""));
        assert!(err(base.replace("\"hello\"", "\"hi\"")).contains("unknown workload \"hi\""));
        assert!(err(base.replace("[1]", "[0]")).contains("connections"));
        assert!(err(base.replace("1.0", "-1.0")).contains("duration_secs"));
        assert!(err(format!("{base}colour = 1\n")).contains("colour"));
        assert!(err(base.replace("duration_secs = 1.0\n", "")).contains("duration_secs"));
        assert!(err(format!("{base}repetitions = 0\n")).contains("repetitions"));
        assert!(
            err(format!(
                "{base}[cold_start]\nruns = 3\nvariants = [\"x\"]\n"
            ))
            .contains("unknown variant \"x\"")
        );
        assert!(
            err(format!(
                "{base}[open_loop]\nfractions = [0.5, 3.0]\nduration_secs = 1\nconnections = 4\n"
            ))
            .contains("fractions")
        );
        assert!(
            err(format!(
                "{base}[warm]\nduration_secs = 1\nworkloads = [\"z\"]\n"
            ))
            .contains("\"z\"")
        );
    }
}
