//! Analysing a run: from its raw samples to every figure the outputs show, computed in one
//! place so the terminal, summary.md, report.html and `wasmlab compare` always agree. Means and
//! ratios carry bootstrap 95% intervals over independent runs ([`stats`]); a server run's cells
//! and ratios to native ([`servers`]), a program run's engines over programs ([`programs`]), and
//! the published studies beside them ([`study`]); across runs, two runs' figures side by side
//! ([`compare`]) and a suite's headline run after run ([`history`]).

pub mod compare;
pub mod history;
pub mod programs;
pub mod servers;
pub mod stats;
pub mod study;
pub mod thresholds;

use wasmlab_model::run::Run;
use wasmlab_model::study::Study;

pub use programs::ProgramAnalysis;
pub use servers::ServerAnalysis;

/// A run analysed, of its suite's kind.
#[derive(Debug, Clone)]
pub enum Analysis {
    Servers(Box<ServerAnalysis>),
    Programs(Box<ProgramAnalysis>),
}

/// Analyses a recorded run. Fails only when the study a program suite names cannot be read.
pub fn analyse(run: &Run) -> anyhow::Result<Analysis> {
    Ok(match run {
        Run::Servers { info, samples } => {
            Analysis::Servers(Box::new(servers::analyse(info, samples)))
        }
        Run::Programs { info, samples } => {
            let study = info.suite.study.as_deref().map(Study::load).transpose()?;
            Analysis::Programs(Box::new(programs::analyse(info, samples, study)))
        }
    })
}
