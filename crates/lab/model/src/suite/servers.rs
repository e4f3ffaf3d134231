//! Suites: which variants, workloads and concurrency levels a run measures, and for how long.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::plan::variants::Catalog;

const BUILTIN: &[(&str, &str)] = &[
    ("quick", include_str!("../../../../suites/quick.toml")),
    (
        "gateway-study",
        include_str!("../../../../suites/gateway-study.toml"),
    ),
    (
        "isolation",
        include_str!("../../../../suites/isolation.toml"),
    ),
    (
        "libsodium",
        include_str!("../../../../suites/libsodium.toml"),
    ),
    (
        "libsodium-compilers",
        include_str!("../../../../suites/libsodium-compilers.toml"),
    ),
    (
        "libsodium-quick",
        include_str!("../../../../suites/libsodium-quick.toml"),
    ),
];

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
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
    pub inline_variants: Vec<crate::plan::variants::VariantSpec>,
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

/// The TOML text of a built-in suite.
pub fn builtin(name: &str) -> anyhow::Result<&'static str> {
    BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "unknown suite {name:?}: use one of {} or a path to a .toml file",
                builtin_names()
            )
        })
}

fn builtin_names() -> String {
    BUILTIN
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A suite's text and where it came from: a built-in suite's name, or a path to a TOML file.
pub fn text(spec: &str) -> anyhow::Result<(String, String)> {
    let path = Path::new(spec);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read suite file {spec}: {e}"))?;
        Ok((text, format!("suite file {spec}")))
    } else if spec.ends_with(".toml") || spec.contains('/') {
        anyhow::bail!("suite file {spec} does not exist");
    } else {
        Ok((builtin(spec)?.to_owned(), format!("built-in suite {spec}")))
    }
}

/// The suite's `kind` (`programs` for a program suite; HTTP suites have none).
pub fn kind(text: &str) -> Option<String> {
    let value: toml::Table = toml::from_str(text).ok()?;
    value.get("kind")?.as_str().map(str::to_owned)
}

/// Loads `spec` as an HTTP suite: a built-in suite's name, or a path to a TOML file.
pub fn load(spec: &str) -> anyhow::Result<Suite> {
    let (text, origin) = text(spec)?;
    anyhow::ensure!(
        kind(&text).is_none(),
        "{origin} is a program suite; run it with `wasmlab run --suite {spec}`"
    );
    parse(&text).map_err(|e| anyhow::anyhow!("{origin}: {e:#}"))
}

pub fn parse(text: &str) -> anyhow::Result<Suite> {
    let suite: Suite = toml::from_str(text)?;
    suite.validate()?;
    Ok(suite)
}

impl Suite {
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
        let mut catalog = Catalog::builtin();
        for f in files {
            catalog.add_file(f)?;
        }
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
    fn builtins_parse() {
        for (name, text) in BUILTIN {
            if kind(text).as_deref() == Some("programs") {
                let s = crate::programs::ProgramSuite::parse(text, name).unwrap();
                assert_eq!(&s.name, name);
                continue;
            }
            let s = parse(text).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert_eq!(&s.name, name);
        }
        let study = load("gateway-study").unwrap();
        assert_eq!(study.connections, [10, 50, 100, 200, 400, 800, 1200]);
        assert_eq!(study.workloads, ["hello", "compute", "proxy", "state"]);
    }

    #[test]
    fn bad_suites_say_why() {
        let base = r#"name = "t"
variants = ["native"]
workloads = ["hello"]
connections = [1]
duration_secs = 1.0
"#;
        assert!(parse(base).is_ok());
        let err = |text: String| {
            let checked = parse(&text).and_then(|s| s.check_variants(&s.catalog(&[])?));
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
        let e = format!("{:#}", load("no-such-suite").unwrap_err());
        assert!(e.contains("unknown suite") && e.contains("quick"), "{e}");
        assert!(format!("{:#}", load("missing.toml").unwrap_err()).contains("does not exist"));
    }
}
