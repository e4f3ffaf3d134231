//! Analysing a run: from its raw samples to every figure the outputs show, computed in one
//! place so the terminal, summary.md, report.html and `wasmlab compare` always agree. Means and
//! ratios carry bootstrap 95% intervals over independent runs ([`stats`]); a server run's cells
//! and ratios to native ([`servers`]), a program run's engines over programs ([`programs`]), and
//! the published studies beside them ([`study`] computes the rows of [`beside`], which the
//! analyses hold: [`analyse_servers`] and [`analyse_programs`] put them together); across runs,
//! two runs' figures side by side ([`compare`]) and a suite's headline run after run
//! ([`history`]).

pub mod beside;
pub mod compare;
pub mod history;
pub mod programs;
pub mod servers;
pub mod stats;
pub mod study;
pub mod thresholds;

use wasmlab_model::run::{ProgramRunInfo, Run, ServerRunInfo};
use wasmlab_model::sample::{ProgramSample, Sample};
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
            Analysis::Servers(Box::new(analyse_servers(info, samples)))
        }
        Run::Programs { info, samples } => {
            let study = info.suite.study.as_deref().map(Study::load).transpose()?;
            Analysis::Programs(Box::new(analyse_programs(info, samples, study)))
        }
    })
}

/// A server suite's run analysed: its own figures, then its study's beside them. Every table
/// and plot shows this, so they always agree.
pub fn analyse_servers(info: &ServerRunInfo, samples: &[Sample]) -> ServerAnalysis {
    let mut a = servers::own_figures(info, samples);
    a.beside_study = study::beside_servers(&a, &a.study);
    a.capacity_planning = study::capacity_planning(&a, &a.study);
    a
}

/// A program suite's run analysed: its engines over programs, then `study`'s runtimes beside them.
pub fn analyse_programs(
    info: &ProgramRunInfo,
    samples: &[ProgramSample],
    study: Option<Study>,
) -> ProgramAnalysis {
    let mut a = programs::own_figures(info, samples, study);
    a.beside_study = study::beside_programs(&a);
    a
}
