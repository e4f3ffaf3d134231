//! A server suite: which server variants, workloads and concurrency levels a run measures, and
//! for how long.

use std::path::Path;

use serde::{Deserialize, Serialize};

use wasmlab_load_data::Threshold;

use crate::idle::IdlePolicy;
use crate::sample::Kind;
use crate::variant::{Catalog, Protocol};
use crate::workload::{self, Workload};

mod cold_start;
mod equal_load;
mod open_loop;
mod throughput;
mod warm;

pub use cold_start::ColdStart;
pub use equal_load::{EqualLoad, Rates};
pub use open_loop::OpenLoop;
pub use warm::Warm;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSuite {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The variants measured; may be empty in the file of a run that gives `--component` (its
    /// hosts are added), checked by [`Self::check_variants`].
    #[serde(default)]
    pub variants: Vec<String>,
    /// The workloads measured, by name: the suite's own `[[workload]]` definitions, else
    /// wasmlab's (`suites/workloads.toml`). The first is the one a cold start waits for.
    pub workloads: Vec<String>,
    /// Workloads checked on every launch but not measured (wasmlab's suites check that unknown
    /// routes answer 404 and wrong methods 405).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify_only: Vec<String>,
    pub connections: Vec<usize>,
    pub duration_secs: f64,
    #[serde(default)]
    pub warmup_secs: f64,
    #[serde(default = "default_load_threads")]
    pub load_threads: usize,
    /// Load generators per load cell (throughput, equal load, open loop; warm latency has one
    /// connection, one generator): this many local `wasmlab load` processes, each with
    /// `load_threads` CPUs of its own when the machine has them, started together; the cell's
    /// figures are their parts merged exactly (`wasmlab merge`). 1: the lab's own generator.
    #[serde(default = "default_generators", skip_serializing_if = "is_one")]
    pub generators: usize,
    /// Commands that each run one more generator elsewhere, e.g. `ssh load1 wasmlab` or
    /// `kubectl exec -i gen-0 -- wasmlab`: the lab runs `COMMAND load --config - --start-at
    /// TIME --out -` with `sh -c`, sends the cell's configuration on stdin and reads the part
    /// from stdout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generator_commands: Vec<String>,
    /// Give the load generator its own `load_threads` CPUs and confine the servers to the others
    /// (see `cpus.rs`); off, both share every CPU.
    #[serde(default = "default_cpu_partition")]
    pub cpu_partition: bool,
    /// Whether idle CPUs poll while the run measures (the default) or idle as the system has
    /// them (see `idle.rs`).
    #[serde(default)]
    pub cpu_idle: IdlePolicy,
    /// Gone (the echo workload's `body_size` says it now); read from the run.json of runs made
    /// before, refused in a suite file.
    #[serde(default, skip_serializing)]
    pub echo_body_bytes: Option<usize>,
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: f64,
    #[serde(default = "default_start_timeout_secs")]
    pub start_timeout_secs: f64,
    /// Independent runs of every measured cell, the variants in a shuffled order each time.
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    /// When set, the run may add repetitions up to this many when its first `repetitions` leave
    /// the lead's intervals wide (a noisy machine): Stein's two-stage rule, see
    /// `wasmlab_measure`'s `ServerRun::add_repetitions`. Absent: exactly `repetitions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repetitions: Option<u32>,
    /// The median relative half-width of the lead's 95% intervals that `max_repetitions` adds
    /// repetitions for (default: 0.05, where a machine is said to be noisy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_target: Option<f64>,
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
    /// Equal load: every variant offered the same rates, to compare what a request costs each
    /// at the same load (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equal_load: Option<EqualLoad>,
    /// The published study whose figures the report sets beside this run's: a built-in one
    /// (`gateway-study`, the default, `net-limits` or `wasi-test`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study: Option<String>,
    /// The HTTP/2 axis: each variant that can serve HTTP/2 measured over it too, as `NAME-h2`
    /// (absent: HTTP/1.1 only, unless an `-h2` variant is named).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2>,
    /// A wasi:http component of the user's (`component = "PATH"`, relative to the suite file), put
    /// in every host the suite names as `wasmlab run --component` does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// Variants defined in the suite itself (`[[variant]]` tables, the variant file's shape).
    #[serde(default, rename = "variant", skip_serializing_if = "Vec::is_empty")]
    pub inline_variants: Vec<crate::variant::VariantSpec>,
    /// The workloads' definitions (`[[workload]]` tables): the suite's own, and once read, those
    /// it names from wasmlab's, so a run's record says what each workload sent and checked.
    #[serde(default, rename = "workload", skip_serializing_if = "Vec::is_empty")]
    pub definitions: Vec<Workload>,
    /// Conditions that fail the run (exit 99) when a measured cell meets them (`[[threshold]]`).
    #[serde(default, rename = "threshold", skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdRule>,
}

/// A `[[threshold]]` table: conditions checked against every load cell of the variants and
/// workloads it names (default: all), each run of each.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdRule {
    /// Each fails the run when it holds: `errors>1%`, `p99>50ms`, `rps<1000`.
    pub fail_if: Vec<Threshold>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<String>,
    /// Which kinds of load cell: `throughput`, `warm`, `open_loop` (default: all three).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<Kind>,
}

impl ThresholdRule {
    /// Whether the rule applies to a cell of this kind, variant and workload.
    pub fn covers(&self, kind: Kind, variant: &str, workload: &str) -> bool {
        let named = |list: &[String], x: &str| list.is_empty() || list.iter().any(|n| n == x);
        kind != Kind::ColdStart
            && (self.cells.is_empty() || self.cells.contains(&kind))
            && named(&self.variants, variant)
            && named(&self.workloads, workload)
    }
}

/// The `[http2]` table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Http2 {
    /// Streams per connection. A cell's `connections` level is the requests in flight, for both
    /// protocols: over HTTP/2 they share `level / streams` connections (one connection with
    /// `level` streams below `streams`), so each level must be a multiple of it.
    #[serde(default = "default_http2_streams")]
    pub streams: usize,
    /// The variants also measured over HTTP/2 (default: each of the suite's that can be).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<String>,
    /// Written by a run (run.json), refused in a suite file: the variants covered that serve
    /// HTTP/1.1 only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http1_only: Vec<String>,
}

/// The built-in studies of servers a suite may name.
pub(super) const SERVER_STUDIES: &[&str] = &[
    "gateway-study",
    "net-limits",
    "wasi-test",
    "wasmcloud",
    "envoy-wasm",
];

/// Streams per connection over HTTP/2 when a suite does not say.
pub(super) const DEFAULT_HTTP2_STREAMS: usize = 10;

fn default_http2_streams() -> usize {
    DEFAULT_HTTP2_STREAMS
}

fn default_load_threads() -> usize {
    1
}
fn default_generators() -> usize {
    1
}
fn is_one(n: &usize) -> bool {
    *n == 1
}
fn default_cpu_partition() -> bool {
    true
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
    /// Parses and checks a server suite's TOML text; body files are relative to the current
    /// directory.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        Self::parse_in(text, Path::new("."))
    }

    /// Parses and checks a server suite's TOML text, its workloads' body files relative to `dir`.
    /// The workloads it names from wasmlab's are added to its definitions.
    pub fn parse_in(text: &str, dir: &Path) -> anyhow::Result<Self> {
        check_each_workload_table(text)?;
        let mut suite: ServerSuite = toml::from_str(text)?;
        anyhow::ensure!(
            suite.echo_body_bytes.is_none(),
            "`echo_body_bytes` is gone: the echo workload's request says its body's size \
             (`body_size`; `wasmlab show-suite quick` shows it)"
        );
        for w in &mut suite.definitions {
            w.resolve_paths(dir);
        }
        if let Some(c) = &mut suite.component {
            *c = dir.join(&*c).display().to_string();
        }
        anyhow::ensure!(
            suite.http2.as_ref().is_none_or(|h| h.http1_only.is_empty()),
            "`http2.http1_only` is written by a run, not read from a suite"
        );
        suite.add_named_definitions()?;
        suite.validate()?;
        suite.check_thresholds()?;
        Ok(suite)
    }

    /// Checks the `[[threshold]]` tables against the suite as written (a `--variant` on the command
    /// line may measure fewer variants later; a rule naming another then simply never applies).
    fn check_thresholds(&self) -> anyhow::Result<()> {
        for (i, rule) in self.thresholds.iter().enumerate() {
            let at = format!("[[threshold]] number {}", i + 1);
            anyhow::ensure!(!rule.fail_if.is_empty(), "{at}: `fail_if` is empty");
            for v in &rule.variants {
                // An HTTP/2 twin is added once the catalog is known (`add_http2_twins`).
                let twin_of_one = self.http2.is_some()
                    && v.strip_suffix(crate::variant::HTTP2_SUFFIX)
                        .is_some_and(|base| self.variants.iter().any(|n| n == base));
                anyhow::ensure!(
                    self.variants.contains(v) || twin_of_one,
                    "{at}: variant {v:?} is not one the suite measures ({})",
                    self.variants.join(", ")
                );
            }
            for w in &rule.workloads {
                anyhow::ensure!(
                    self.named_workloads().contains(w),
                    "{at}: workload {w:?} is not one the suite measures"
                );
            }
            anyhow::ensure!(
                !rule.cells.contains(&Kind::ColdStart),
                "{at}: thresholds apply to load cells (throughput, warm, open_loop), not cold starts"
            );
        }
        Ok(())
    }

    /// The suite as a variant that does not serve `unserved` (workload → why) meets it: those
    /// workloads left out of what it is verified and measured on. `None` when it serves none of
    /// the suite's measured workloads.
    pub fn served_by(
        &self,
        unserved: &std::collections::BTreeMap<String, String>,
    ) -> Option<std::borrow::Cow<'_, ServerSuite>> {
        if !self
            .named_workloads()
            .iter()
            .any(|w| unserved.contains_key(w))
        {
            return Some(std::borrow::Cow::Borrowed(self));
        }
        let served = |list: &[String]| -> Vec<String> {
            list.iter()
                .filter(|w| !unserved.contains_key(*w))
                .cloned()
                .collect()
        };
        let mut own = self.clone();
        own.workloads = served(&self.workloads);
        if own.workloads.is_empty() {
            return None;
        }
        own.verify_only = served(&self.verify_only);
        // An empty list means the suite's workloads: a table whose every workload is left out
        // measures nothing for this variant.
        let (warm, open, equal) = (
            self.warm_workloads(),
            self.open_loop_workloads(),
            self.equal_load_workloads(),
        );
        narrow(&mut own.warm, |w| &mut w.workloads, served(&warm));
        narrow(&mut own.open_loop, |o| &mut o.workloads, served(&open));
        narrow(&mut own.equal_load, |e| &mut e.workloads, served(&equal));
        Some(std::borrow::Cow::Owned(own))
    }

    /// Every workload the suite names, measured or only verified, each once.
    pub fn named_workloads(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for w in self
            .workloads
            .iter()
            .chain(&self.verify_only)
            .chain(&self.warm_workloads())
            .chain(&self.open_loop_workloads())
        {
            if !names.contains(w) {
                names.push(w.clone());
            }
        }
        names
    }

    /// Adds wasmlab's definition of each named workload the suite does not define itself.
    fn add_named_definitions(&mut self) -> anyhow::Result<()> {
        for name in self.named_workloads() {
            if self.workload(&name).is_some() {
                continue;
            }
            let w = workload::library()
                .iter()
                .find(|w| w.name == name)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "unknown workload {name:?}: define it in a [[workload]] table or name one of wasmlab's: {}",
                        workload::library_names()
                    )
                })?;
            self.definitions.push(w.clone());
        }
        Ok(())
    }

    /// What ends a cold start, in words: `200 answer to GET /`.
    pub fn cold_start_answer(&self) -> String {
        match self.first_workload() {
            Some(w) => {
                let r = w.first_request();
                format!(
                    "{} answer to {} {}",
                    w.expect_for(r).status,
                    r.method,
                    r.path
                )
            }
            // A run recorded before workloads were data: it always waited for this.
            None => "200 answer to GET /".into(),
        }
    }

    /// A workload's definition.
    pub fn workload(&self, name: &str) -> Option<&Workload> {
        self.definitions.iter().find(|w| w.name == name)
    }

    /// The first measured workload: a launch is ready, and a cold start over, when it answers
    /// this workload's first request with its expected status.
    pub fn first_workload(&self) -> Option<&Workload> {
        self.workloads.first().and_then(|w| self.workload(w))
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

    /// The workloads measured at equal load, in the suite's order.
    pub fn equal_load_workloads(&self) -> Vec<String> {
        match &self.equal_load {
            Some(e) if !e.workloads.is_empty() => self
                .workloads
                .iter()
                .filter(|w| e.workloads.contains(w))
                .cloned()
                .collect(),
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

    /// Checks that every variant the suite names is in `catalog`, and that the connection
    /// levels split into HTTP/2 streams evenly if any variant speaks it.
    pub fn check_variants(&self, catalog: &Catalog) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.variants.is_empty(),
            "suite {}: `variants` is empty: name the variants to measure (or give --component: your \
             component in every component host)",
            self.name
        );
        let mut http2 = false;
        for v in self.variants.iter().chain(&self.cold_start_variants()) {
            let spec = catalog.find(v)?;
            anyhow::ensure!(
                !spec.is_engine(),
                "{v} is an engine for program suites (such as libsodium), not a server"
            );
            http2 |= spec.protocol == Protocol::Http2 && self.variants.contains(v);
        }
        if http2 {
            let streams = self.http2_streams();
            let levels = self
                .connections
                .iter()
                .chain(self.open_loop.as_ref().map(|o| &o.connections))
                .chain(self.equal_load.as_ref().map(|e| &e.connections));
            for &level in levels {
                anyhow::ensure!(
                    level % streams.min(level) == 0,
                    "{level} connections is not a multiple of the {streams} HTTP/2 streams per connection: \
                     over HTTP/2 a level is the requests in flight, on level/streams connections \
                     (give levels that are multiples, or `[http2] streams`)"
                );
            }
        }
        Ok(())
    }

    /// Adds the HTTP/2 twin (`NAME-h2`) of each variant the `[http2]` table covers, right after
    /// it, and notes in the table those it covers that serve HTTP/1.1 only (a variant it names
    /// without a twin is an error).
    pub fn add_http2_twins(&mut self, catalog: &Catalog) -> anyhow::Result<()> {
        let Some(axis) = &self.http2 else {
            return Ok(());
        };

        let named = !axis.variants.is_empty();
        let bases = if named {
            axis.variants.clone()
        } else {
            self.variants.clone()
        };
        let mut http1_only = Vec::new();
        for base in bases {
            let spec = catalog.find(&base)?;
            let Some(twin) = catalog.http2_twin(&base) else {
                anyhow::ensure!(
                    !named || spec.protocol == Protocol::Http2,
                    "[http2] variants: {base} does not say how it serves HTTP/2 (`http2_args` in its [start])"
                );
                if spec.protocol == Protocol::Http1 {
                    http1_only.push(base);
                }
                continue;
            };
            if self.variants.contains(&twin.name) {
                continue;
            }
            match self.variants.iter().position(|v| *v == base) {
                Some(i) => self.variants.insert(i + 1, twin.name.clone()),
                None => self.variants.push(twin.name.clone()),
            }
        }
        if let Some(axis) = &mut self.http2 {
            axis.http1_only = http1_only;
        }
        Ok(())
    }

    /// The HTTP/2 axis in words (None without one): which variants are measured over it, how,
    /// and which serve HTTP/1.1 only.
    pub fn http2_axis(&self) -> Option<String> {
        let axis = self.http2.as_ref()?;
        let twins: Vec<&str> = self
            .variants
            .iter()
            .filter(|v| v.ends_with(crate::variant::HTTP2_SUFFIX))
            .map(String::as_str)
            .collect();
        let mut line = match twins.is_empty() {
            true => "no variant measured over HTTP/2".to_owned(),
            false => format!(
                "{} over HTTP/2 (prior knowledge), {} streams per connection: a level's requests in flight on level/{} connections",
                twins.join(", "),
                axis.streams,
                axis.streams
            ),
        };
        if !axis.http1_only.is_empty() {
            line += &format!("; HTTP/1.1 only: {}", axis.http1_only.join(", "));
        }
        Some(line)
    }

    /// The study set beside the run (`study`, else the gateway study).
    pub fn study(&self) -> anyhow::Result<crate::study::Study> {
        let name = self.study.as_deref().unwrap_or("gateway-study");
        anyhow::ensure!(
            SERVER_STUDIES.contains(&name),
            "study {name:?}: a server suite sets one of {} beside its run",
            SERVER_STUDIES.join(", ")
        );
        crate::study::Study::load(name)
    }

    /// Streams per HTTP/2 connection.
    pub fn http2_streams(&self) -> usize {
        self.http2
            .as_ref()
            .map_or(DEFAULT_HTTP2_STREAMS, |h| h.streams)
    }

    /// How `in_flight` requests travel over HTTP/2: (connections, streams on each).
    pub fn http2_split(&self, in_flight: usize) -> (usize, usize) {
        let streams = self.http2_streams().min(in_flight).max(1);
        (in_flight.div_ceil(streams), streams)
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(!self.workloads.is_empty(), "`workloads` is empty");
        for (i, w) in self.definitions.iter().enumerate() {
            anyhow::ensure!(
                !self.definitions[..i].iter().any(|d| d.name == w.name),
                "workload {:?} is defined twice",
                w.name
            );
            w.validate()?;
        }
        for w in self.named_workloads() {
            anyhow::ensure!(
                self.workload(&w).is_some(),
                "unknown workload {w:?}: define it in a [[workload]] table or name one of wasmlab's: {}",
                workload::library_names()
            );
        }
        self.validate_throughput()?;
        let positive = |v: f64| v.is_finite() && v > 0.0;
        anyhow::ensure!(positive(self.timeout_secs), "`timeout_secs` must be > 0");
        anyhow::ensure!(
            positive(self.start_timeout_secs),
            "`start_timeout_secs` must be > 0"
        );
        anyhow::ensure!(self.load_threads >= 1, "`load_threads` must be >= 1");
        anyhow::ensure!(self.repetitions >= 1, "`repetitions` must be >= 1");
        if let Some(max) = self.max_repetitions {
            anyhow::ensure!(
                max >= self.repetitions,
                "`max_repetitions` ({max}) must be >= `repetitions` ({})",
                self.repetitions
            );
            anyhow::ensure!(
                self.repetitions >= 2 || max == self.repetitions,
                "`max_repetitions` needs `repetitions` >= 2: one repetition gives no interval to \
                 judge the machine by"
            );
        }
        if let Some(t) = self.interval_target {
            anyhow::ensure!(
                t.is_finite() && t > 0.0,
                "`interval_target` must be a positive share (0.05 for ±5%), not {t}"
            );
            anyhow::ensure!(
                self.max_repetitions.is_some(),
                "`interval_target` is what `max_repetitions` adds repetitions for: set both"
            );
        }
        if let Some(c) = &self.cold_start {
            c.validate()?;
        }
        if let Some(w) = &self.warm {
            w.validate()?;
        }
        self.study()?;
        if let Some(h) = &self.http2 {
            anyhow::ensure!(
                (1..=1000).contains(&h.streams),
                "`http2.streams` must be in 1..=1000"
            );
            for v in &h.variants {
                anyhow::ensure!(
                    self.variants.contains(v),
                    "[http2] variants: {v:?} is not one the suite measures ({})",
                    self.variants.join(", ")
                );
            }
        }
        if let Some(e) = &self.equal_load {
            self.validate_equal_load(e)?;
        }
        if let Some(o) = &self.open_loop {
            o.validate()?;
        }
        self.validate_generators()
    }
}

impl ServerSuite {
    /// How many generators each load cell has: local processes and commands run elsewhere.
    pub fn generator_count(&self) -> usize {
        self.generators + self.generator_commands.len()
    }

    /// Whether a load cell has more generators than the lab's own one (local processes, or
    /// commands that run one elsewhere).
    pub fn has_fleet(&self) -> bool {
        !(self.generators == 1 && self.generator_commands.is_empty())
    }

    fn validate_generators(&self) -> anyhow::Result<()> {
        let n = self.generator_count();
        anyhow::ensure!(
            n >= 1,
            "`generators = 0` needs `generator_commands`: a cell needs at least one generator"
        );
        anyhow::ensure!(
            self.generators <= 64,
            "`generators = {}`: at most 64 local generators",
            self.generators
        );
        for c in &self.generator_commands {
            anyhow::ensure!(
                !c.trim().is_empty(),
                "`generator_commands`: an empty command (give e.g. \"ssh load1 wasmlab\")"
            );
        }
        // Each generator needs a connection of its own.
        let levels = self
            .connections
            .iter()
            .copied()
            .chain(self.equal_load.as_ref().map(|e| e.connections))
            .chain(self.open_loop.as_ref().map(|o| o.connections));
        for c in levels.filter(|_| n > 1) {
            anyhow::ensure!(
                c >= n,
                "{n} generators need at least {n} connections in every load cell; one has {c}"
            );
        }
        Ok(())
    }
}

/// Reads each `[[workload]]` table on its own first, so a bad one is named in the error (the
/// whole suite's parse would give only a line number).
fn check_each_workload_table(text: &str) -> anyhow::Result<()> {
    let table: toml::Table = toml::from_str(text)?;
    let Some(defs) = table.get("workload") else {
        return Ok(());
    };
    let defs = defs
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("`workload` must be [[workload]] tables"))?;
    for (i, def) in defs.iter().enumerate() {
        let name = def
            .get("name")
            .and_then(|n| n.as_str())
            .map_or_else(|| format!("number {}", i + 1), |n| format!("{n:?}"));
        Workload::deserialize(def.clone())
            .map_err(|e| anyhow::anyhow!("[[workload]] {name}: {}", e.message()))?;
    }
    Ok(())
}

/// A table's workloads narrowed to `served`; the table dropped when none is left.
fn narrow<T>(
    table: &mut Option<T>,
    workloads: fn(&mut T) -> &mut Vec<String>,
    served: Vec<String>,
) {
    if let Some(t) = table {
        *workloads(t) = served;
        if workloads(t).is_empty() {
            *table = None;
        }
    }
}

/// A measurement's cell length and warm-up, as its table (`prefix`, e.g. "warm.") names them:
/// the length positive, the warm-up none or positive.
fn check_timing(prefix: &str, duration: f64, warmup: Option<f64>) -> anyhow::Result<()> {
    anyhow::ensure!(
        duration.is_finite() && duration > 0.0,
        "`{prefix}duration_secs` must be > 0"
    );
    if let Some(w) = warmup {
        anyhow::ensure!(
            w.is_finite() && w >= 0.0,
            "`{prefix}warmup_secs` must be >= 0"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
