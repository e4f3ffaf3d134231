//! A published study's figures, to set beside a run's own: its systems (and the variant of ours
//! that stands for each), and for each figure the study's value per system. The built-in studies
//! are the files in `studies/`, with their source named; a program suite may name a file of its
//! own of the same shape.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The built-in studies: (name, file text).
const BUILTIN: &[(&str, &str)] = &[
    (
        "gateway-study",
        include_str!("../../../../studies/gateway-study.toml"),
    ),
    (
        "net-limits",
        include_str!("../../../../studies/net-limits.toml"),
    ),
    (
        "wasi-test",
        include_str!("../../../../studies/wasi-test.toml"),
    ),
    (
        "wasmcloud",
        include_str!("../../../../studies/wasmcloud.toml"),
    ),
    (
        "envoy-wasm",
        include_str!("../../../../studies/envoy-wasm.toml"),
    ),
    (
        "libsodium",
        include_str!("../../../../studies/libsodium-study.toml"),
    ),
    // The name program suites gave it before there were two.
    (
        "libsodium-study",
        include_str!("../../../../studies/libsodium-study.toml"),
    ),
];

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    pub name: String,
    pub source: String,
    /// Where and how it was measured, in a few words.
    #[serde(default)]
    pub machine: String,
    /// How many times each benchmark build ran its test body (a program study): a run with
    /// another count weighs start-up and the body otherwise in its whole-process ratios.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u32>,
    /// How the study's method differs from wasmlab's.
    #[serde(default)]
    pub method_differences: Vec<String>,
    /// A server study: the system its ratios are taken against (the gateway study's `native`,
    /// the net-limits study's `C -O3`); it must name one of ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// The study's systems, in its order.
    pub systems: Vec<System>,
    /// Variants of ours that the study had no system for, shown beside its figures with ours
    /// alone when a run measured them (the wasi-test study's Rust server natively and as Wasm,
    /// each on one thread); `native` and `wasmtime-pooled` are always.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beside: Vec<String>,
    pub figures: Vec<Figure>,
    /// A sizing rule the study gave (the wasmCloud study's req/s per node and cores per node):
    /// the report sets every variant's req/s per core and the cores it needs for a target load
    /// beside the study's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityPlan>,
}

/// How to size a deployment, as the study put it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityPlan {
    /// The rule in the study's words.
    pub rule: String,
    /// The cell whose capacity ours is taken from (the closest level measured).
    pub workload: String,
    pub connections: usize,
    /// The load to plan for, req/s.
    pub target_rps: f64,
    /// The study's own figures: req/s per node, on nodes of so many cores.
    pub published: Vec<PublishedCapacity>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedCapacity {
    /// One of the study's systems.
    pub system: String,
    /// req/s one node served.
    pub rps: f64,
    /// The node's cores: one count, or the fewest and the most when the study gave a range.
    pub cores: Vec<u32>,
}

impl PublishedCapacity {
    /// req/s per core: (fewest, most), from the node's most and fewest cores.
    pub fn per_core(&self) -> (f64, f64) {
        let most = self.cores.iter().copied().max().unwrap_or(1).max(1);
        let fewest = self.cores.iter().copied().min().unwrap_or(1).max(1);
        (self.rps / f64::from(most), self.rps / f64::from(fewest))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct System {
    /// The study's name for it.
    pub study: String,
    /// The wasmlab variant that reproduces it; none when wasmlab has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// Why no variant reproduces it, exactly (what cannot be had here, and where it would come
    /// from): reports say it under the study's tables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// What a figure measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// req/s of a workload at a concurrency level.
    Throughput,
    /// Median cold start, ms.
    ColdStartP50,
    /// Median warm latency of a workload, ms.
    WarmP50,
    /// Memory of a workload's server, KiB.
    Rss,
    /// The median over programs of each runtime's whole-process time relative to native.
    MedianRatio,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    pub figure: FigureKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<usize>,
    pub unit: String,
    /// What the figure is, in words, where its kind does not say it all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
    /// The study's value per system (by the study's name for it).
    pub values: BTreeMap<String, f64>,
}

impl Study {
    /// A built-in study (`gateway-study`, `libsodium`), or a study file's path.
    pub fn load(name: &str) -> anyhow::Result<Self> {
        let text = match BUILTIN.iter().find(|(n, _)| *n == name) {
            Some((_, text)) => (*text).to_owned(),
            None => std::fs::read_to_string(name).map_err(|e| {
                anyhow::anyhow!(
                    "study {name}: {e} (built-in: {})",
                    BUILTIN
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?,
        };
        let study: Study =
            toml::from_str(&text).map_err(|e| anyhow::anyhow!("study {name}: {e}"))?;
        study
            .validate()
            .map_err(|e| anyhow::anyhow!("study {name}: {e}"))?;
        Ok(study)
    }

    /// Every figure's values name one of the study's systems, and a system names at most one
    /// variant.
    fn validate(&self) -> anyhow::Result<()> {
        for f in &self.figures {
            for system in f.values.keys() {
                anyhow::ensure!(
                    self.systems.iter().any(|s| &s.study == system),
                    "a {:?} figure has a value for {system:?}, which is not one of its systems",
                    f.figure
                );
            }
        }
        if let Some(plan) = &self.capacity {
            anyhow::ensure!(
                plan.target_rps > 0.0 && plan.target_rps.is_finite(),
                "capacity: target_rps must be a positive number of req/s"
            );
            for p in &plan.published {
                anyhow::ensure!(
                    self.systems.iter().any(|s| s.study == p.system),
                    "capacity: {:?} is not one of its systems",
                    p.system
                );
                anyhow::ensure!(
                    p.rps > 0.0 && (1..=2).contains(&p.cores.len()) && !p.cores.contains(&0),
                    "capacity: {:?} needs a positive rps and one or two core counts (a range)",
                    p.system
                );
            }
        }
        if let Some(b) = &self.baseline {
            anyhow::ensure!(
                self.systems
                    .iter()
                    .any(|s| &s.study == b && s.variant.is_some()),
                "baseline {b:?} is not one of its systems with a variant of ours"
            );
        }
        for (i, s) in self.systems.iter().enumerate() {
            if let Some(v) = &s.variant {
                anyhow::ensure!(
                    !self.systems[..i]
                        .iter()
                        .any(|o| o.variant.as_ref() == Some(v)),
                    "two systems stand for the variant {v:?}"
                );
            }
            anyhow::ensure!(
                !(s.variant.is_some() && s.unavailable.is_some()),
                "system {:?} names both a variant and why there is none",
                s.study
            );
        }
        Ok(())
    }

    /// The variant of ours that stands for the study's baseline system.
    pub fn baseline_variant(&self) -> Option<&str> {
        let b = self.baseline.as_deref()?;
        self.systems
            .iter()
            .find(|s| s.study == b)
            .and_then(|s| s.variant.as_deref())
    }

    /// The study's systems no variant reproduces, each with why.
    pub fn not_reproduced(&self) -> impl Iterator<Item = (&str, &str)> {
        self.systems
            .iter()
            .filter_map(|s| Some((s.study.as_str(), s.unavailable.as_deref()?)))
    }

    /// Ours shown beside the study's systems, where a run measured them.
    pub fn extra_variants(&self) -> impl Iterator<Item = &str> {
        ["native", "wasmtime-pooled"]
            .into_iter()
            .chain(self.beside.iter().map(String::as_str))
    }

    /// The study's system that `variant` stands for.
    pub fn system_of(&self, variant: &str) -> Option<&System> {
        self.systems
            .iter()
            .find(|s| s.variant.as_deref() == Some(variant))
    }

    /// The study's value of `figure` for the system `variant` stands for.
    pub fn value(&self, figure: &Figure, variant: &str) -> Option<f64> {
        figure.values.get(&self.system_of(variant)?.study).copied()
    }

    /// The first figure of a kind.
    pub fn figure(&self, kind: FigureKind) -> Option<&Figure> {
        self.figures.iter().find(|f| f.figure == kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variant::Catalog;

    #[test]
    fn the_built_in_studies_parse_and_name_known_variants() {
        let catalog = Catalog::builtin();
        for (name, _) in BUILTIN {
            let s = Study::load(name).unwrap();
            for v in s.systems.iter().filter_map(|s| s.variant.as_ref()) {
                catalog.find(v).unwrap();
            }
            for v in s.extra_variants() {
                catalog.find(v).unwrap();
            }
        }
        let gateway = Study::load("gateway-study").unwrap();
        assert!(
            gateway.systems.iter().all(|s| s.variant.is_some()),
            "every system of the gateway study has its variant"
        );
        assert!(gateway.figure(FigureKind::ColdStartP50).is_some());
        assert_eq!(gateway.baseline_variant(), Some("native-close"));
        let net = Study::load("net-limits").unwrap();
        assert_eq!(net.baseline_variant(), Some("c-O3"));
        let hello = net.figure(FigureKind::Throughput).unwrap();
        assert_eq!(net.value(hello, "bun-http"), Some(124_700.0));
        let missing: Vec<&str> = net.not_reproduced().map(|(s, _)| s).collect();
        assert_eq!(missing, ["WinterJS"]);
        let wasi = Study::load("wasi-test").unwrap();
        assert_eq!(wasi.baseline_variant(), Some("native"));
        let libsodium = Study::load("libsodium-study").unwrap();
        let median = libsodium.figure(FigureKind::MedianRatio).unwrap();
        assert_eq!(libsodium.value(median, "wasmtime-cranelift"), Some(2.93));
        assert_eq!(libsodium.value(median, "wazero-compiler"), Some(17.3));
        // The study's wazero was its compiler.
        assert_eq!(libsodium.value(median, "wazero-interpreter"), None);
        assert_eq!(libsodium.iterations, Some(200));
        assert!(libsodium.systems.len() >= 10);
        let wasmcloud = Study::load("wasmcloud").unwrap();
        assert_eq!(wasmcloud.baseline_variant(), Some("wasmcloud-host"));
        let plan = wasmcloud.capacity.as_ref().unwrap();
        assert_eq!((plan.workload.as_str(), plan.connections), ("hello", 150));
        // 17,500 req/s per node of 8 to 16 cores.
        let per_node = plan.published.iter().find(|p| p.rps == 17_500.0).unwrap();
        assert_eq!(per_node.per_core(), (17_500.0 / 16.0, 17_500.0 / 8.0));
    }

    #[test]
    fn a_capacity_plan_must_name_the_studys_systems_and_sane_numbers() {
        let dir = std::env::temp_dir().join(format!("wasmlab-study-plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.toml");
        let load = |plan: &str| {
            std::fs::write(
                &file,
                format!(
                    "name = \"s\"\nsource = \"x\"\nsystems = [{{ study = \"a\", variant = \"native\" }}]\n\
                     figures = []\n[capacity]\nrule = \"r\"\nworkload = \"hello\"\nconnections = 1\n{plan}\n"
                ),
            )
            .unwrap();
            Study::load(file.to_str().unwrap()).map_err(|e| format!("{e:#}"))
        };
        let ok = "target_rps = 1000\npublished = [{ system = \"a\", rps = 10, cores = [2] }]";
        assert!(load(ok).is_ok());
        let e = load("target_rps = 1000\npublished = [{ system = \"b\", rps = 10, cores = [2] }]")
            .unwrap_err();
        assert!(e.contains("\"b\" is not one of its systems"), "{e}");
        let e = load("target_rps = 0\npublished = []").unwrap_err();
        assert!(e.contains("target_rps"), "{e}");
        let e = load("target_rps = 9\npublished = [{ system = \"a\", rps = 10, cores = [0] }]")
            .unwrap_err();
        assert!(e.contains("core counts"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_value_for_a_system_the_study_lacks_is_refused() {
        let dir = std::env::temp_dir().join(format!("wasmlab-study-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.toml");
        std::fs::write(
            &file,
            "name = \"s\"\nsource = \"x\"\nsystems = [{ study = \"a\", variant = \"native\" }]\n\
             [[figures]]\nfigure = \"rss\"\nunit = \"KiB\"\nvalues = { b = 1 }\n",
        )
        .unwrap();
        let e = format!("{:#}", Study::load(file.to_str().unwrap()).unwrap_err());
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(e.contains("\"b\""), "{e}");
    }

    #[test]
    fn a_system_with_a_variant_and_a_reason_for_none_is_refused() {
        let dir = std::env::temp_dir().join(format!("wasmlab-study-why-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.toml");
        std::fs::write(
            &file,
            "name = \"s\"\nsource = \"x\"\n\
             systems = [{ study = \"a\", variant = \"native\", unavailable = \"gone\" }]\nfigures = []\n",
        )
        .unwrap();
        let e = format!("{:#}", Study::load(file.to_str().unwrap()).unwrap_err());
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            e.contains("names both a variant and why there is none"),
            "{e}"
        );
    }
}
