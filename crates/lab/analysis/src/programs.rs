//! From the runs to each engine's time relative to the baseline: per program (paired by
//! repetition) and per engine (geometric mean and median over programs), with bootstrap
//! intervals, and the study's published medians beside them.

use serde::Serialize;
use wasmlab_model::run::{ProgramRunInfo, RunState, Status};
use wasmlab_model::sample::{Phases, ProgramSample};
use wasmlab_model::study::{FigureKind, Study};

use crate::stats::{self, Estimate};

/// One engine on one program.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub engine: String,
    pub program: String,
    /// Successful runs.
    pub n: usize,
    pub wall_ms: Option<f64>,
    /// Whole-process time over the baseline's, paired by repetition.
    pub ratio: Option<Estimate>,
    /// The program's own time for its test body over the baseline's (start-up excluded).
    pub body_ratio: Option<Estimate>,
    pub compile_ms: Option<f64>,
    pub instantiate_ms: Option<f64>,
    pub execute_ms: Option<f64>,
    pub failed_runs: usize,
}

/// One engine over every program it ran.
#[derive(Debug, Clone, Serialize)]
pub struct EngineSummary {
    pub engine: String,
    pub about: String,
    pub status: Status,
    pub reason: String,
    pub version: String,
    pub programs: usize,
    pub failed_programs: Vec<(String, String)>,
    pub geomean: Option<Estimate>,
    pub median: Option<Estimate>,
    pub body_geomean: Option<Estimate>,
    pub body_median: Option<Estimate>,
    /// Median over programs of the median compile time.
    pub compile_ms: Option<f64>,
    pub instantiate_ms: Option<f64>,
    /// The study's runtime this engine stands for, and its published median ratio.
    pub study: Option<(String, f64)>,
}

/// Everything derived from a program suite's run (written to analysis.json too).
#[derive(Debug, Clone, Serialize)]
pub struct ProgramAnalysis {
    pub run_id: String,
    pub suite: String,
    pub description: String,
    pub baseline: String,
    pub repetitions: u32,
    pub programs: Vec<String>,
    pub program_set: serde_json::Value,
    pub machine: String,
    pub cpus: String,
    pub engines: Vec<EngineSummary>,
    pub cells: Vec<Cell>,
    pub study: Option<Study>,
    /// The study's runtimes beside our engines.
    pub beside_study: Vec<crate::beside::ProgramComparison>,
    pub state: RunState,
    /// The run's resumptions after interruptions (`wasmlab run --resume`).
    pub resumed: Vec<wasmlab_model::run::Resumption>,
}

fn median(v: &[f64]) -> Option<f64> {
    stats::percentile(v, 0.5)
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// The shortest test body (per iteration, in µs) a body-only ratio counts. Shorter ones timed no
/// work: libsodium's tests that time nothing (`sodium_version`, `sodium_utils2`: 0 to 0.01 µs),
/// `sodium_core` (0.035 µs: an init that has already run), and those that skip a feature the build
/// lacks (`aead_aes256gcm` without AES-NI: 0.01 µs in the portable build and in Wasm, 874 µs in
/// `native-simd`). The shortest body that does work, `core1`'s, takes 0.08 µs natively.
pub const MIN_BODY_US: f64 = 0.05;

/// Values of `f` for the successful runs of (engine, program), by repetition.
fn by_rep(
    samples: &[ProgramSample],
    engine: &str,
    program: &str,
    f: impl Fn(&ProgramSample) -> Option<f64>,
) -> Vec<(u32, f64)> {
    samples
        .iter()
        .filter(|s| s.engine == engine && s.program == program && s.error.is_empty())
        .filter_map(|s| {
            f(s).filter(|v| v.is_finite() && *v > 0.0)
                .map(|v| (s.repetition, v))
        })
        .collect()
}

/// The ratio of `f` between engine and baseline over the repetitions both completed.
fn program_ratio(
    samples: &[ProgramSample],
    engine: &str,
    baseline: &str,
    program: &str,
    f: impl Fn(&ProgramSample) -> Option<f64> + Copy,
) -> Option<Estimate> {
    stats::paired_ratio(
        &by_rep(samples, engine, program, f),
        &by_rep(samples, baseline, program, f),
    )
}

/// The ratio of the programs' own body times, where both sides timed work (see [`MIN_BODY_US`]).
fn body_ratio(
    samples: &[ProgramSample],
    engine: &str,
    baseline: &str,
    program: &str,
) -> Option<Estimate> {
    program_ratio(samples, engine, baseline, program, |s| {
        s.body_us.filter(|&b| b >= MIN_BODY_US)
    })
}

/// A program suite's run's own figures; `study` is the published study its suite names, whose
/// runtimes [`crate::analyse_programs`] sets beside them.
pub fn own_figures(
    info: &ProgramRunInfo,
    samples: &[ProgramSample],
    study: Option<Study>,
) -> ProgramAnalysis {
    let baseline = info.suite.baseline.clone();
    let mut cells = Vec::new();
    let mut engines = Vec::new();
    for o in &info.engines {
        let mine: Vec<Cell> = info
            .programs
            .iter()
            .filter_map(|p| cell(samples, &o.engine, &baseline, p))
            .collect();
        let study_value = study.as_ref().and_then(|s| {
            let median = s.figure(FigureKind::MedianRatio)?;
            Some((
                s.system_of(&o.engine)?.study.clone(),
                s.value(median, &o.engine)?,
            ))
        });
        engines.push(EngineSummary {
            engine: o.engine.clone(),
            about: o.about.clone(),
            status: o.status,
            reason: o.reason.clone(),
            version: o
                .tools
                .iter()
                .map(|t| t.version.clone())
                .collect::<Vec<_>>()
                .join(", "),
            failed_programs: o.failed_programs.clone(),
            study: study_value,
            ..summary(&mine)
        });
        cells.extend(mine);
    }
    ProgramAnalysis {
        run_id: info.header.run_id.clone(),
        suite: info.suite.name.clone(),
        description: info.suite.description.clone(),
        baseline,
        repetitions: info.suite.repetitions,
        programs: info.programs.clone(),
        program_set: info.program_set.clone(),
        machine: format!(
            "{}, {} CPUs",
            info.header.machine.cpu_model, info.header.machine.cores
        ),
        cpus: info.cpus.clone(),
        engines,
        cells,
        study,
        // Filled above the analyses (`crate::analyse_programs`).
        beside_study: Vec::new(),
        state: info.header.state,
        resumed: info.resumed.clone(),
    }
}

/// One engine on one program, or None when it never ran it.
fn cell(samples: &[ProgramSample], engine: &str, baseline: &str, program: &str) -> Option<Cell> {
    let runs: Vec<&ProgramSample> = samples
        .iter()
        .filter(|s| s.engine == engine && s.program == program)
        .collect();
    if runs.is_empty() {
        return None;
    }
    let ok: Vec<&&ProgramSample> = runs.iter().filter(|s| s.error.is_empty()).collect();
    let phase = |f: fn(&Phases) -> f64| {
        let v: Vec<f64> = ok.iter().filter_map(|s| s.phases.map(|x| f(&x))).collect();
        median(&v)
    };
    let wall: Vec<f64> = ok.iter().map(|s| s.wall_ms).collect();
    Some(Cell {
        engine: engine.to_owned(),
        program: program.to_owned(),
        n: ok.len(),
        wall_ms: median(&wall),
        ratio: program_ratio(samples, engine, baseline, program, |s| Some(s.wall_ms)),
        body_ratio: body_ratio(samples, engine, baseline, program),
        compile_ms: phase(|x| x.compile_ms),
        instantiate_ms: phase(|x| x.instantiate_ms),
        execute_ms: phase(|x| x.execute_ms),
        failed_runs: runs.len() - ok.len(),
    })
}

/// An engine's figures over its programs' cells (the rest of its summary is its outcome's).
fn summary(cells: &[Cell]) -> EngineSummary {
    let ratios: Vec<f64> = cells
        .iter()
        .filter_map(|c| c.ratio)
        .map(|r| r.value)
        .collect();
    let body: Vec<f64> = cells
        .iter()
        .filter_map(|c| c.body_ratio)
        .map(|r| r.value)
        .collect();
    let compiles: Vec<f64> = cells.iter().filter_map(|c| c.compile_ms).collect();
    let instantiates: Vec<f64> = cells.iter().filter_map(|c| c.instantiate_ms).collect();
    let over_programs =
        |v: &[f64], f: fn(&[f64]) -> f64| (!v.is_empty()).then(|| stats::bootstrap(v, f)).flatten();
    let med = |v: &[f64]| median(v).unwrap_or(f64::NAN);
    EngineSummary {
        engine: String::new(),
        about: String::new(),
        status: Status::Measured,
        reason: String::new(),
        version: String::new(),
        programs: cells.iter().filter(|c| c.n > 0).count(),
        failed_programs: Vec::new(),
        geomean: over_programs(&ratios, geomean),
        median: over_programs(&ratios, med),
        body_geomean: over_programs(&body, geomean),
        body_median: over_programs(&body, med),
        compile_ms: median(&compiles),
        instantiate_ms: median(&instantiates),
        study: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_that_timed_no_work_on_either_side_has_no_body_ratio() {
        let sample = |engine: &str, program: &str, repetition: u32, body_us: f64| ProgramSample {
            schema: wasmlab_model::sample::SAMPLES_SCHEMA,
            engine: engine.into(),
            program: program.into(),
            repetition,
            wall_ms: 5.0,
            phases: None,
            body_us: Some(body_us),
            error: String::new(),
        };
        let mut samples = Vec::new();
        for rep in 0..3 {
            // Work on both sides: counted, whatever its length.
            samples.push(sample("base", "core1", rep, 0.08));
            samples.push(sample("simd", "core1", rep, 0.16));
            // The baseline skipped the body (no AES-NI), the other side ran it.
            samples.push(sample("base", "aes", rep, 0.01));
            samples.push(sample("simd", "aes", rep, 874.0));
            // The other side skipped it.
            samples.push(sample("base", "skipped", rep, 3.0));
            samples.push(sample("simd", "skipped", rep, 0.005));
        }
        let r = body_ratio(&samples, "simd", "base", "core1").unwrap();
        assert!((r.value - 2.0).abs() < 1e-9, "{r:?}");
        assert!(body_ratio(&samples, "simd", "base", "aes").is_none());
        assert!(body_ratio(&samples, "simd", "base", "skipped").is_none());
    }

    #[test]
    fn geomean_of_ratios() {
        assert!((geomean(&[2.0, 8.0]) - 4.0).abs() < 1e-12);
    }
}
