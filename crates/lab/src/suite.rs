//! Suites: which variants, workloads and concurrency levels a run measures, and for how long.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::variant;

const BUILTIN: &[(&str, &str)] = &[
    ("quick", include_str!("../../../suites/quick.toml")),
    (
        "gateway-study",
        include_str!("../../../suites/gateway-study.toml"),
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
    #[serde(default = "default_echo_body_bytes")]
    pub echo_body_bytes: usize,
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: f64,
    #[serde(default = "default_start_timeout_secs")]
    pub start_timeout_secs: f64,
}

fn default_load_threads() -> usize {
    1
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

/// Loads `spec`: a built-in suite's name, or a path to a TOML file.
pub fn load(spec: &str) -> anyhow::Result<Suite> {
    let path = Path::new(spec);
    let (text, origin) = if path.is_file() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read suite file {spec}: {e}"))?;
        (text, format!("suite file {spec}"))
    } else if spec.ends_with(".toml") || spec.contains('/') {
        anyhow::bail!("suite file {spec} does not exist");
    } else {
        (builtin(spec)?.to_owned(), format!("built-in suite {spec}"))
    };
    parse(&text).map_err(|e| anyhow::anyhow!("{origin}: {e:#}"))
}

pub fn parse(text: &str) -> anyhow::Result<Suite> {
    let suite: Suite = toml::from_str(text)?;
    suite.validate()?;
    Ok(suite)
}

impl Suite {
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(!self.variants.is_empty(), "`variants` is empty");
        for v in &self.variants {
            variant::find(v)?;
        }
        anyhow::ensure!(!self.workloads.is_empty(), "`workloads` is empty");
        for w in &self.workloads {
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
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse() {
        for (name, text) in BUILTIN {
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
        let err = |text: String| format!("{:#}", parse(&text).unwrap_err());
        assert!(err(base.replace("\"native\"", "\"nope\"")).contains("unknown variant \"nope\""));
        assert!(err(base.replace("\"hello\"", "\"hi\"")).contains("unknown workload \"hi\""));
        assert!(err(base.replace("[1]", "[0]")).contains("connections"));
        assert!(err(base.replace("1.0", "-1.0")).contains("duration_secs"));
        assert!(err(format!("{base}colour = 1\n")).contains("colour"));
        assert!(err(base.replace("duration_secs = 1.0\n", "")).contains("duration_secs"));
        let e = format!("{:#}", load("no-such-suite").unwrap_err());
        assert!(e.contains("unknown suite") && e.contains("quick"), "{e}");
        assert!(format!("{:#}", load("missing.toml").unwrap_err()).contains("does not exist"));
    }
}
