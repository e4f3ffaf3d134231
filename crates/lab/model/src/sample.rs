//! What a results directory holds: the lines of `samples.jsonl` and `run.json`. The writer
//! (`wasmlab run`) and the readers (`wasmlab report`, `wasmlab compare`) share these types, so the
//! raw data alone rebuilds every table and plot.

use std::path::Path;

use serde::{Deserialize, Serialize};
use wasmlab_load::LoadReport;

use crate::measure::verify::Check;
use crate::plan::machine::Machine;
use crate::plan::suite::Suite;

/// Version of the samples.jsonl line format and of run.json.
pub const SAMPLES_SCHEMA: u32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// One launch: exec to the first complete 200.
    ColdStart,
    /// Closed loop: C connections for D seconds.
    Throughput,
    /// One connection, sequential requests.
    Warm,
    /// Constant arrival rate at a fraction of the variant's closed-loop maximum.
    OpenLoop,
}

/// Start-up timings of one launch, each from the spawn of the process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StartTimes {
    /// The server printed `listening on ...` (its socket is bound).
    pub listening_ms: f64,
    /// The first TCP connect to it succeeded.
    #[serde(default)]
    pub connected_ms: f64,
    /// The first byte of the first 200 response arrived.
    #[serde(default)]
    pub first_byte_ms: f64,
    /// The first complete 200 on `GET /` (the cold-start figure).
    pub first_200_ms: f64,
    /// RSS of the variant's process trees right after that 200, KiB: what a fresh start holds
    /// before any load (0 in results older than this figure).
    #[serde(default)]
    pub rss_kib: u64,
}

/// The variant's whole process tree while a cell was measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// Highest sum of RSS over the tree, KiB.
    pub rss_peak_kib: u64,
    /// Mean of the sampled sums, KiB.
    pub rss_mean_kib: f64,
    /// User + system CPU seconds of the tree over the cell, children that exited included.
    pub cpu_secs: f64,
    /// Most processes seen in the tree at once.
    pub processes_peak: usize,
    /// RSS samples taken.
    pub samples: u32,
}

/// One line of samples.jsonl: one measured cell of one repetition (or one launch).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sample {
    pub schema: u32,
    pub kind: Kind,
    pub variant: String,
    /// The repetition (0-based); for cold starts, the launch's index.
    pub repetition: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<usize>,
    /// Open loop: the offered rate as a fraction of the variant's closed-loop maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_fraction: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<StartTimes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadReport>,
    /// The latency histogram of `load`, nanoseconds, as `wasmlab_load::histogram_buckets`
    /// encodes it: `[first value, its count, distance to the next value, its count, ...]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histogram: Vec<u64>,
    /// Open loop: the histogram of latency from the actual send (same encoding).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncorrected_histogram: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
}

impl Sample {
    pub fn new(kind: Kind, variant: &str, repetition: u32) -> Self {
        Self {
            schema: SAMPLES_SCHEMA,
            kind,
            variant: variant.to_owned(),
            repetition,
            workload: None,
            connections: None,
            load_fraction: None,
            start: None,
            load: None,
            histogram: Vec::new(),
            uncorrected_histogram: Vec::new(),
            resources: None,
        }
    }

    /// Responses per CPU-second of the variant's processes (the headline's figure), where the
    /// cell measured both.
    pub fn capacity(&self) -> Option<f64> {
        let (l, r) = (self.load.as_ref()?, self.resources.as_ref()?);
        (r.cpu_secs > 0.0).then(|| l.responses as f64 / r.cpu_secs)
    }

    /// Attaches a load report and its histograms.
    pub fn with_load(mut self, r: LoadReport) -> Self {
        if let Some(h) = &r.histogram {
            self.histogram = wasmlab_load::histogram_buckets(h);
        }
        if let Some(h) = &r.uncorrected_histogram {
            self.uncorrected_histogram = wasmlab_load::histogram_buckets(h);
        }
        self.connections = Some(r.connections);
        self.load = Some(r);
        self
    }
}

/// How a variant fared in the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantOutcome {
    pub name: String,
    /// measured | failed | interrupted | skipped (could not run here: the reason says why and
    /// what would enable it)
    pub status: String,
    pub reason: Option<String>,
    pub checks: Vec<Check>,
}

/// A file whose size the report shows (binaries, guests, precompiled modules).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Artifact {
    pub name: String,
    pub path: String,
    pub bytes: u64,
}

/// run.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub schema: u32,
    pub run_id: String,
    pub command: Vec<String>,
    pub started_utc: String,
    pub finished_utc: Option<String>,
    /// running | complete | interrupted
    pub state: String,
    pub git_sha: Option<String>,
    /// The core-module guest given with --wasm, if any (else the built-in one ran).
    pub core_guest: Option<String>,
    /// Seed of the shuffled variant order (each repetition r uses seed + r).
    pub seed: u64,
    /// The variant order of each repetition, as run.
    #[serde(default)]
    pub orders: Vec<Vec<String>>,
    pub machine: Machine,
    /// Which CPUs the load generator and the servers ran on.
    #[serde(default)]
    pub cpus: crate::plan::cpus::CpuPlan,
    pub suite: Suite,
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    pub variants: Vec<VariantOutcome>,
    /// The variant files the run used, as they were (built-in, the user's, the suite's).
    #[serde(default)]
    pub variant_specs: Vec<crate::plan::variants::VariantSpec>,
    /// The tools the variants ran, with the versions they printed.
    #[serde(default)]
    pub variant_tools: Vec<crate::plan::tools::FoundTool>,
    /// The container engine and settings used, if a variant needed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_engine: Option<crate::plan::containers::Engine>,
}

impl RunInfo {
    /// Whether `variant` failed in this run (see [`crate::analyze::tabled`]).
    pub fn failed(&self, variant: &str) -> bool {
        self.variants
            .iter()
            .any(|o| o.name == variant && o.status == "failed")
    }
}

/// Reads samples.jsonl. A last line cut short (a run killed mid-write) is skipped with a warning;
/// any other bad line is an error naming it.
pub fn read_samples(path: &Path) -> anyhow::Result<Vec<Sample>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("read {}: {e}", path.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Sample>(line) {
            Ok(s) => {
                anyhow::ensure!(
                    s.schema == SAMPLES_SCHEMA,
                    "{}:{}: schema {} (this wasmlab reads schema {SAMPLES_SCHEMA})",
                    path.display(),
                    i + 1,
                    s.schema
                );
                out.push(s);
            }
            Err(e) if i + 1 == lines.len() && !text.ends_with('\n') => {
                eprintln!(
                    "wasmlab: {}:{}: skipping a line cut short ({e})",
                    path.display(),
                    i + 1
                );
            }
            Err(e) => anyhow::bail!("{}:{}: {e}", path.display(), i + 1),
        }
    }
    Ok(out)
}

pub fn read_run_info(dir: &Path) -> anyhow::Result<RunInfo> {
    let path = dir.join("run.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        anyhow::anyhow!(
            "{} is not a wasmlab results directory: read {}: {e}",
            dir.display(),
            path.display()
        )
    })?;
    let info: RunInfo =
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    anyhow::ensure!(
        info.schema == SAMPLES_SCHEMA,
        "{}: schema {} (this wasmlab reads schema {SAMPLES_SCHEMA})",
        path.display(),
        info.schema
    );
    Ok(info)
}
