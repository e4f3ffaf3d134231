//! Earlier runs a run reads: the one whose equal-load capacities it keeps ([`RatesFrom`]: the one
//! named on the command line, or the newest run of the same suite on this machine in the results
//! directory), and the newest complete one it is gated against (`--baseline last`).

use std::path::Path;

use wasmlab_model::machine::Machine;
use wasmlab_model::run::{EqualLoadRates, ServerRunInfo};
use wasmlab_model::suite::ServerSuite;

use crate::RatesFrom;

/// How many of the newest run directories the search for the last run reads before giving up:
/// run.json alone is read, a few tens of kilobytes each.
const SEARCHED: usize = 200;

/// An earlier run's equal-load rates, set from capacities.
#[derive(Debug, Clone)]
pub struct EarlierRates {
    pub run_id: String,
    /// How it was found, for the terminal.
    pub found: String,
    /// Each workload's rates as that run set them, from its capacities (not a suite's rates).
    pub workloads: Vec<EqualLoadRates>,
}

impl EarlierRates {
    /// The capacities that run set `workload`'s rates from (none when it set none).
    pub fn capacities(&self, workload: &str) -> Vec<(String, f64)> {
        self.workloads
            .iter()
            .find(|e| e.workload == workload)
            .map(EqualLoadRates::capacities)
            .unwrap_or_default()
    }
}

/// The earlier run `from` names, if any, and what the terminal should say of it. A run named on
/// the command line that cannot be read, or set no rates from capacities, is an error; the
/// search for the last run passes over every directory that is not one to keep.
pub fn find(
    from: &RatesFrom,
    suite: &ServerSuite,
    machine: &Machine,
) -> anyhow::Result<(Option<EarlierRates>, Vec<String>)> {
    let mut said = Vec::new();
    let choosing = suite.equal_load.as_ref().is_some_and(|e| {
        suite
            .equal_load_workloads()
            .iter()
            .any(|w| e.rates.of(w).is_none())
    });
    match from {
        RatesFrom::New => Ok((None, said)),
        RatesFrom::Run(dir) if !choosing => {
            said.push(format!(
                "--rates-from {} is not used: suite {} names its equal-load rates, or measures \
                 none",
                dir.display(),
                suite.name
            ));
            Ok((None, said))
        }
        RatesFrom::Run(dir) => {
            let info = wasmlab_record::read_server_info(dir)
                .map_err(|e| anyhow::anyhow!("--rates-from: {e:#}"))?;
            let workloads = set_from_capacities(&info);
            anyhow::ensure!(
                !workloads.is_empty(),
                "--rates-from {}: run {} set no equal-load rates from capacities (its suite named \
                 them, or it measured no equal load)",
                dir.display(),
                info.header.run_id
            );
            if info.suite.name != suite.name {
                said.push(format!(
                    "--rates-from {}: a run of suite {}, this run's is {}",
                    dir.display(),
                    info.suite.name,
                    suite.name
                ));
            }
            if !same_machine(&info.header.machine, machine) {
                said.push(format!(
                    "--rates-from {}: run on another machine ({}, {} CPUs)",
                    dir.display(),
                    info.header.machine.cpu_model,
                    info.header.machine.cores
                ));
            }
            Ok((
                Some(EarlierRates {
                    run_id: info.header.run_id,
                    found: format!("--rates-from {}", dir.display()),
                    workloads,
                }),
                said,
            ))
        }
        RatesFrom::LastRunIn(root) if choosing => Ok((
            last_run(root, suite, machine).map(|info| EarlierRates {
                found: format!(
                    "the last {} run on this machine in {}",
                    suite.name,
                    root.display()
                ),
                run_id: info.header.run_id.clone(),
                workloads: set_from_capacities(&info),
            }),
            said,
        )),
        RatesFrom::LastRunIn(_) => Ok((None, said)),
    }
}

/// The workloads whose rates `info`'s run set from capacities.
fn set_from_capacities(info: &ServerRunInfo) -> Vec<EqualLoadRates> {
    info.equal_load
        .iter()
        .filter(|e| e.slowest.is_some() && !e.probed.is_empty())
        .cloned()
        .collect()
}

fn same_machine(a: &Machine, b: &Machine) -> bool {
    a.cpu_model == b.cpu_model && a.cores == b.cores
}

/// The newest run under `root` of `suite` on `machine` that set rates from capacities.
fn last_run(root: &Path, suite: &ServerSuite, machine: &Machine) -> Option<ServerRunInfo> {
    newest_run(root, &suite.name, machine, |info| {
        !set_from_capacities(info).is_empty()
    })
    .map(|(_, info)| info)
}

/// The newest run under `root` of suite `suite` on `machine` that finished (`--baseline last`):
/// its directory and run.json.
pub fn last_complete_run(
    root: &Path,
    suite: &str,
    machine: &Machine,
) -> Option<(std::path::PathBuf, ServerRunInfo)> {
    newest_run(root, suite, machine, |info| {
        info.header.state == wasmlab_model::run::RunState::Complete
    })
}

/// The newest of the last [`SEARCHED`] run directories under `root` of `suite` on `machine` for
/// which `keep` holds.
fn newest_run(
    root: &Path,
    suite: &str,
    machine: &Machine,
    keep: impl Fn(&ServerRunInfo) -> bool,
) -> Option<(std::path::PathBuf, ServerRunInfo)> {
    let mut dirs: Vec<_> = std::fs::read_dir(root)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.path().join("run.json").is_file())
        .map(|e| e.path())
        .collect();
    // Run ids are UTC start times: the newest sorts last.
    dirs.sort();
    dirs.into_iter().rev().take(SEARCHED).find_map(|dir| {
        let info = wasmlab_record::read_server_info(&dir).ok()?;
        (info.suite.name == suite && same_machine(&info.header.machine, machine) && keep(&info))
            .then_some((dir, info))
    })
}
