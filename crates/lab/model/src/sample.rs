//! The lines of `samples.jsonl`: a server suite's measured cells and launches ([`Sample`]), a
//! program suite's program runs ([`ProgramSample`]). The writer (`wasmlab run`) and the readers
//! (`wasmlab report`, `wasmlab compare`) share these types, so the raw data alone rebuilds every
//! table and plot.

use serde::{Deserialize, Serialize};
use wasmlab_load::LoadReport;

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

/// A load cell as the terminal names it: `c=50`, `warm`, `open loop 90%`.
pub fn cell_label(kind: Kind, connections: usize, load_fraction: Option<f64>) -> String {
    match (kind, load_fraction) {
        (Kind::OpenLoop, Some(f)) => format!("open loop {:.0}%", f * 100.0),
        (Kind::Warm, _) => "warm".into(),
        _ => format!("c={connections}"),
    }
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

/// One timed run of one program in one engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProgramSample {
    /// The line format's version (absent in lines written before it was recorded: those are
    /// this version's too).
    #[serde(default = "schema_now")]
    pub schema: u32,
    pub engine: String,
    pub program: String,
    pub repetition: u32,
    /// Exec to exit, as the 2023 study timed; NaN (null in the file) when it did not run.
    #[serde(deserialize_with = "number_or_nan")]
    pub wall_ms: f64,
    /// From the engine's runner (docs/engines.md); none for a native program.
    #[serde(default)]
    pub phases: Option<Phases>,
    /// The time the program itself measured around its test body, per iteration (libsodium's
    /// benchmark mode prints it), in microseconds: the code's speed without start-up.
    #[serde(default)]
    pub body_us: Option<f64>,
    /// Empty when the run succeeded; else what went wrong (its time does not count).
    #[serde(default)]
    pub error: String,
}

fn schema_now() -> u32 {
    SAMPLES_SCHEMA
}

/// A number, or NaN for the `null` serde_json writes for one.
fn number_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// A runner's phase times (docs/engines.md), in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    pub compile_ms: f64,
    pub instantiate_ms: f64,
    pub execute_ms: f64,
}

/// A line of samples.jsonl, whichever kind: what the one reader checks.
pub trait SampleLine: serde::de::DeserializeOwned {
    /// The line's format version.
    fn schema(&self) -> u32;
}

impl SampleLine for Sample {
    fn schema(&self) -> u32 {
        self.schema
    }
}

impl SampleLine for ProgramSample {
    fn schema(&self) -> u32 {
        self.schema
    }
}
