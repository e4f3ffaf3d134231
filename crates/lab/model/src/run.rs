//! run.json: what a run was asked to do, what it found on the machine, and how each variant
//! fared. A server suite's run and a program suite's run record different things, so each has its
//! own shape ([`ServerRunInfo`], [`ProgramRunInfo`]); both hold a [`RunHeader`], give every
//! variant a [`Status`], and end by one rule ([`Run::ending`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::cpus::CpuPlan;
use crate::idle::IdleRecord;
use crate::machine::Machine;
use crate::sample::{ProgramSample, SAMPLES_SCHEMA, Sample};
use crate::suite::{ProgramSuite, ServerSuite};
use crate::tools::{ContainerEngine, Containerd, FoundTool};
use crate::variant::VariantSpec;

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    Running,
    Complete,
    Interrupted,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Complete => "complete",
            RunState::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for RunState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a variant (a server, or an engine of a program suite) fared in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Measured (so far, while the run goes on).
    Measured,
    /// Refused by verification, did not start, or died while measured: it is in no table.
    Failed,
    /// Measured until the run was interrupted.
    Interrupted,
    /// Could not run here: the reason says why and what would enable it.
    Skipped,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Measured => "measured",
            Status::Failed => "failed",
            Status::Interrupted => "interrupted",
            Status::Skipped => "skipped",
        }
    }

    /// Out of the run: measured no further, and in no table.
    pub fn is_out(self) -> bool {
        matches!(self, Status::Failed | Status::Skipped)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What every run.json holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunHeader {
    /// The version of run.json's and samples.jsonl's format.
    #[serde(default = "schema_now")]
    pub schema: u32,
    pub run_id: String,
    pub command: Vec<String>,
    /// The directory the command ran in, which its relative paths are relative to (absent in
    /// runs recorded before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    pub started_utc: String,
    pub finished_utc: Option<String>,
    pub state: RunState,
    pub git_sha: Option<String>,
    /// Seed of the shuffled orders (each repetition r uses seed + r).
    pub seed: u64,
    pub machine: Machine,
}

fn schema_now() -> u32 {
    SAMPLES_SCHEMA
}

/// run.json of a server suite's run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerRunInfo {
    #[serde(flatten)]
    pub header: RunHeader,
    /// The core-module guest given with --wasm, if any (else the built-in one ran).
    pub core_guest: Option<String>,
    /// The user's wasi:http components (--component), as read: size, WASI, imports, exports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<crate::component::UserComponent>,
    /// The variant order of each repetition, as run.
    #[serde(default)]
    pub orders: Vec<Vec<String>>,
    /// Which CPUs the load generator and the servers ran on.
    #[serde(default)]
    pub cpus: CpuPlan,
    /// How the CPUs waited while the run measured (None in a run.json from before it was
    /// recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleRecord>,
    pub suite: ServerSuite,
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    pub variants: Vec<VariantOutcome>,
    /// The variant files the run used, as they were (built-in, the user's, the suite's).
    #[serde(default)]
    pub variant_specs: Vec<VariantSpec>,
    /// The tools the variants ran, with the versions they printed.
    #[serde(default)]
    pub variant_tools: Vec<FoundTool>,
    /// The container engine and settings used, if a variant needed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_engine: Option<ContainerEngine>,
    /// The containerd the lab ran, if a variant needed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containerd: Option<Containerd>,
    /// The rates each workload was measured at equal load, and where they came from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub equal_load: Vec<EqualLoadRates>,
    /// Whether the run added repetitions to the suite's, and why (with `max_repetitions`; the
    /// suite's `repetitions` is then the total planned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_repetitions: Option<AddedRepetitions>,
    /// Each time the run was resumed (`wasmlab run --resume`), in order: the samples measured
    /// before it, and what differed from the run's start where `--force` measured on anyway.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<Resumption>,
}

/// A resumption of an interrupted run: the samples after the first `samples_before` of
/// samples.jsonl were measured from `utc` on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resumption {
    pub utc: String,
    pub samples_before: usize,
    /// The commit wasmlab was built from then.
    pub git_sha: Option<String>,
    /// What differed from the run's start (machine, commit, tools) and `--force` measured on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
    /// A last record cut short by the interruption, discarded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discarded: Option<String>,
}

/// A run's look at its intervals after the suite's first repetitions, and the repetitions it
/// added for them (Stein's two-stage rule: the first stage's spread sets the total).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddedRepetitions {
    /// The repetitions measured before the look.
    pub after: u32,
    /// The median relative half-width of the lead's 95% intervals then (None: no interval).
    pub spread: Option<f64>,
    /// The width the run aimed for.
    pub target: f64,
    /// Repetitions added (0 when the intervals were narrow enough).
    pub added: u32,
    /// The most the suite allowed.
    pub max: u32,
}

impl AddedRepetitions {
    /// The repetitions the run planned in all after its look.
    pub fn total(&self) -> u32 {
        self.after + self.added
    }
}

/// The rates variants were offered on a workload at equal load, and where they came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EqualLoadRates {
    pub workload: String,
    /// Every rate offered, ascending, req/s.
    pub rates: Vec<f64>,
    /// The rates each variant was offered, when not all of them (rates from the capacities).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offered: Vec<(String, Vec<f64>)>,
    /// The variant with the least capacity and that capacity (req/s); None when the suite named
    /// the rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowest: Option<(String, f64)>,
    /// Each variant's capacity for the workload as its probe measured it, req/s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probed: Vec<(String, f64)>,
    /// The capacities of an earlier run the rates were set from instead of some of `probed`,
    /// so that the two runs offer those variants the same rates (None: from `probed` alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<KeptCapacities>,
}

/// Capacities an equal-load workload's rates were set from, kept from an earlier run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptCapacities {
    /// The run they were kept from.
    pub run_id: String,
    /// Each kept variant's capacity, req/s: the earlier run's, where this run's probe agreed.
    pub capacities: Vec<(String, f64)>,
}

impl EqualLoadRates {
    /// The rates `variant` is offered: all of them unless the record says otherwise.
    pub fn offered_to(&self, variant: &str) -> Vec<f64> {
        if self.offered.is_empty() {
            return self.rates.clone();
        }
        self.offered
            .iter()
            .find(|(v, _)| v == variant)
            .map(|(_, r)| r.clone())
            .unwrap_or_default()
    }

    /// Each variant's capacity the rates were set from, req/s: the kept one where there is one,
    /// else the probe's.
    pub fn capacities(&self) -> Vec<(String, f64)> {
        let kept = self.kept.as_ref().map_or(&[][..], |k| &k.capacities[..]);
        self.probed
            .iter()
            .map(|(v, probed)| {
                let cap = kept.iter().find(|(k, _)| k == v).map_or(*probed, |k| k.1);
                (v.clone(), cap)
            })
            .collect()
    }

    /// The rates of the workload in words: `2800, 9700 and 34000 req/s (from the variants'
    /// capacities; the least, 5794 req/s, wasmtime-naive's)`.
    pub fn describe(&self) -> String {
        let list = |items: Vec<String>| match items.len() {
            0 | 1 => items.concat(),
            n => format!("{} and {}", items[..n - 1].join(", "), items[n - 1]),
        };
        let rates = list(
            self.rates
                .iter()
                .map(|r| crate::sample::rate_label(*r))
                .collect(),
        );
        let kept = match &self.kept {
            Some(k) => format!(
                "; {} of {} kept from run {}, as this run's probes agreed with them",
                k.capacities.len(),
                self.probed.len(),
                k.run_id
            ),
            None => String::new(),
        };
        match &self.slowest {
            Some((v, cap)) => format!(
                "{rates} req/s, shares of the variants' capacities (the least {} req/s, {v}'s{kept})",
                crate::sample::rate_label(*cap)
            ),
            None => format!("{rates} req/s (the suite's)"),
        }
    }
}

impl ServerRunInfo {
    /// The run's look at its intervals, when it added repetitions for them.
    pub fn repetitions_added(&self) -> Option<&AddedRepetitions> {
        self.added_repetitions.as_ref().filter(|a| a.added > 0)
    }

    /// The rates `variant` is offered on `workload` at equal load (none when it is not measured
    /// at equal load).
    pub fn equal_load_rates(&self, workload: &str, variant: &str) -> Vec<f64> {
        self.equal_load
            .iter()
            .find(|e| e.workload == workload)
            .map(|e| e.offered_to(variant))
            .unwrap_or_default()
    }

    /// Whether `variant` failed in this run: then it is in no table, CSV or plot.
    pub fn failed(&self, variant: &str) -> bool {
        self.variants
            .iter()
            .any(|o| o.name == variant && o.status == Status::Failed)
    }

    /// The samples every table and plot shows: those of variants that did not fail. A variant
    /// that failed (refused by verification, unable to start, died while measured) is left out
    /// of every table, CSV and plot, and listed with its reason instead; its raw samples stay in
    /// samples.jsonl.
    pub fn tabled<'a>(&self, samples: &'a [Sample]) -> Vec<&'a Sample> {
        samples
            .iter()
            .filter(|s| !self.failed(&s.variant))
            .collect()
    }
}

/// How a server variant fared.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantOutcome {
    pub name: String,
    pub status: Status,
    pub reason: Option<String>,
    /// Its verification's checks (the last launch's).
    pub checks: Vec<Check>,
    /// The environment its servers were started with: the lab's minimal one and what the
    /// variant sets (none for a remote target, or in runs recorded before it was).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
}

/// One check of a verification: a workload's answer (one per request of a workload that rotates
/// through several), as its definition's check judged it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    pub what: String,
    pub ok: bool,
    pub detail: String,
}

/// A file whose size the report shows (binaries, guests, precompiled modules).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Artifact {
    pub name: String,
    pub path: String,
    pub bytes: u64,
    /// What its `version_command` printed (its first line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// run.json of a program suite's run (it says `kind = "programs"`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProgramRunInfo {
    /// Always `programs`: how a reader tells this shape from a server run's.
    pub kind: String,
    #[serde(flatten)]
    pub header: RunHeader,
    /// Which CPUs the runner processes and the lab ran on, in words.
    pub cpus: String,
    pub suite: ProgramSuite,
    /// The program set's build.json (versions, flags, checksums).
    pub program_set: serde_json::Value,
    pub programs: Vec<String>,
    pub engines: Vec<EngineOutcome>,
    /// Each time the run was resumed (`wasmlab run --resume`), as a server run records it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<Resumption>,
}

/// The `kind` of a program suite's run.json.
pub const PROGRAMS_KIND: &str = "programs";

/// What happened to an engine, and to those of its programs that failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineOutcome {
    pub engine: String,
    pub about: String,
    pub status: Status,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub tools: Vec<FoundTool>,
    /// Programs whose output did not match, or that failed: program → what happened.
    #[serde(default)]
    pub failed_programs: Vec<(String, String)>,
}

/// A run: its run.json and every sample measured so far, of one suite's kind.
#[derive(Debug, Clone)]
pub enum Run {
    Servers {
        info: Box<ServerRunInfo>,
        samples: Vec<Sample>,
    },
    Programs {
        info: Box<ProgramRunInfo>,
        samples: Vec<ProgramSample>,
    },
}

impl Run {
    pub fn header(&self) -> &RunHeader {
        match self {
            Run::Servers { info, .. } => &info.header,
            Run::Programs { info, .. } => &info.header,
        }
    }

    pub fn header_mut(&mut self) -> &mut RunHeader {
        match self {
            Run::Servers { info, .. } => &mut info.header,
            Run::Programs { info, .. } => &mut info.header,
        }
    }

    /// Each variant's name, status, and whether part of it failed (a program of an engine).
    fn outcomes(&self) -> Vec<(&str, Status, bool)> {
        match self {
            Run::Servers { info, .. } => info
                .variants
                .iter()
                .map(|o| (o.name.as_str(), o.status, false))
                .collect(),
            Run::Programs { info, .. } => info
                .engines
                .iter()
                .map(|o| (o.engine.as_str(), o.status, !o.failed_programs.is_empty()))
                .collect(),
        }
    }

    /// How a run whose bookkeeping is done ends when it did not measure everything: interrupted
    /// (exit 130, as for SIGINT), or with variants that failed, nothing measured at all, or runs
    /// that failed (exit 1). `None`: it measured everything it could. `dir` is the results
    /// directory the messages point to.
    pub fn ending(&self, dir: &Path) -> Option<Ending> {
        let end = |exit_code, message| Some(Ending { exit_code, message });
        if self.header().state == RunState::Interrupted {
            return end(
                130,
                format!(
                    "interrupted; what was measured so far is in {}",
                    dir.display()
                ),
            );
        }
        let outcomes = self.outcomes();
        let failed: Vec<&str> = outcomes
            .iter()
            .filter(|(_, status, partly)| *status == Status::Failed || *partly)
            .map(|(name, ..)| *name)
            .collect();
        if !failed.is_empty() {
            return end(
                1,
                format!(
                    "{} variant(s) failed, in whole or in part: {}; see above and run.json",
                    failed.len(),
                    failed.join(", ")
                ),
            );
        }
        if !outcomes.iter().any(|(_, s, _)| *s == Status::Measured) {
            return end(1, "no variant could be measured; see above".into());
        }
        if let Run::Programs { samples, .. } = self
            && samples.iter().any(|s| !s.error.is_empty())
        {
            return end(1, "some runs failed; see above and samples.jsonl".into());
        }
        None
    }
}

/// A run that finished its bookkeeping but did not measure everything (see [`Run::ending`]).
/// Other errors exit 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    pub exit_code: u8,
    pub message: String,
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Ending {}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        serde_json::from_value(serde_json::json!({
            "cpu_model": "cpu", "cores": 2, "memory_kib": null, "kernel": "6",
            "cpu_sha_extensions": false, "compute_sha256": "portable",
            "tools": { "wasmlab": "0.1.0", "rustc": null, "wasmtime": null, "hyper": null, "tokio": null }
        }))
        .unwrap()
    }

    fn programs(statuses: &[(Status, bool)], state: RunState) -> Run {
        let suite = ProgramSuite::parse(
            "kind = \"programs\"\nname = \"p\"\nprogram_set = \"x\"\nvariants = [\"a\"]\nbaseline = \"a\"\n",
            "test",
        )
        .unwrap();
        Run::Programs {
            info: Box::new(ProgramRunInfo {
                kind: PROGRAMS_KIND.into(),
                header: RunHeader {
                    schema: SAMPLES_SCHEMA,
                    run_id: "r".into(),
                    command: Vec::new(),
                    cwd: None,
                    started_utc: String::new(),
                    finished_utc: None,
                    state,
                    git_sha: None,
                    seed: 1,
                    machine: machine(),
                },
                cpus: String::new(),
                suite,
                program_set: serde_json::Value::Null,
                programs: Vec::new(),
                engines: statuses
                    .iter()
                    .enumerate()
                    .map(|(i, (status, partly))| EngineOutcome {
                        engine: format!("e{i}"),
                        about: String::new(),
                        status: *status,
                        reason: String::new(),
                        tools: Vec::new(),
                        failed_programs: if *partly {
                            vec![("p".into(), "wrong output".into())]
                        } else {
                            Vec::new()
                        },
                    })
                    .collect(),
                resumed: Vec::new(),
            }),
            samples: Vec::new(),
        }
    }

    #[test]
    fn one_rule_ends_every_run() {
        let dir = Path::new("results/r");
        let code = |run: Run| run.ending(dir).map(|e| e.exit_code);
        assert_eq!(
            code(programs(&[(Status::Measured, false)], RunState::Complete)),
            None
        );
        assert_eq!(
            code(programs(
                &[(Status::Measured, false)],
                RunState::Interrupted
            )),
            Some(130)
        );
        let partly = programs(
            &[(Status::Measured, false), (Status::Measured, true)],
            RunState::Complete,
        );
        let e = partly.ending(dir).unwrap();
        assert_eq!(e.exit_code, 1);
        assert!(e.message.contains("e1") && !e.message.contains("e0"), "{e}");
        assert_eq!(
            code(programs(&[(Status::Skipped, false)], RunState::Complete)),
            Some(1)
        );
        let mut failed_runs = programs(&[(Status::Measured, false)], RunState::Complete);
        if let Run::Programs { samples, .. } = &mut failed_runs {
            samples.push(ProgramSample {
                schema: SAMPLES_SCHEMA,
                engine: "e0".into(),
                program: "p".into(),
                repetition: 0,
                wall_ms: 1.0,
                phases: None,
                body_us: None,
                error: "trap".into(),
            });
        }
        assert_eq!(code(failed_runs), Some(1));
    }

    #[test]
    fn states_keep_their_json_names() {
        assert_eq!(
            serde_json::to_string(&Status::Skipped).unwrap(),
            "\"skipped\""
        );
        assert_eq!(
            serde_json::from_str::<RunState>("\"interrupted\"").unwrap(),
            RunState::Interrupted
        );
    }
}
