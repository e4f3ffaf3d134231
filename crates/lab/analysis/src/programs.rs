//! From the runs to each engine's time relative to the baseline: per program (paired by
//! repetition) and per engine (geometric mean and median over programs), with bootstrap
//! intervals, and the study's published medians beside them.

use serde::{Deserialize, Serialize};

use super::{ProgramRunInfo, ProgramSample};
use crate::analyze::stats::{self, Estimate};

const LIBSODIUM_STUDY: &str = include_str!("../../../../studies/libsodium-study.toml");

/// A published study of engines on the same programs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    pub name: String,
    pub source: String,
    pub metric: String,
    /// How many times each benchmark build ran its test body in the study: a run with another
    /// count has its whole-process ratios weighted otherwise between start-up and the body.
    #[serde(default)]
    pub iterations: Option<u32>,
    #[serde(default)]
    pub method_differences: Vec<String>,
    pub rows: Vec<StudyRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyRow {
    pub study: String,
    pub ratio: f64,
    pub engines: Vec<String>,
}

impl Study {
    pub fn load(name: &str) -> anyhow::Result<Self> {
        let text = match name {
            "libsodium" | "libsodium-study" => LIBSODIUM_STUDY.to_owned(),
            path => std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("study {path}: {e} (built-in: libsodium)"))?,
        };
        toml::from_str(&text).map_err(|e| anyhow::anyhow!("study {name}: {e}"))
    }

    fn row_for(&self, engine: &str) -> Option<&StudyRow> {
        self.rows
            .iter()
            .find(|r| r.engines.iter().any(|e| e == engine))
    }
}

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
    pub status: String,
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

#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
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
    pub state: String,
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
fn paired_ratio(
    samples: &[ProgramSample],
    engine: &str,
    baseline: &str,
    program: &str,
    f: impl Fn(&ProgramSample) -> Option<f64> + Copy,
) -> Option<Estimate> {
    let a = by_rep(samples, engine, program, f);
    let b = by_rep(samples, baseline, program, f);
    let (mut xa, mut xb) = (Vec::new(), Vec::new());
    for (rep, v) in &a {
        if let Some((_, w)) = b.iter().find(|(r, _)| r == rep) {
            xa.push(*v);
            xb.push(*w);
        }
    }
    stats::ratio_of_means(&xa, &xb, true)
}

/// The ratio of the programs' own body times, where both sides timed work (see [`MIN_BODY_US`]).
fn body_ratio(
    samples: &[ProgramSample],
    engine: &str,
    baseline: &str,
    program: &str,
) -> Option<Estimate> {
    paired_ratio(samples, engine, baseline, program, |s| {
        s.body_us.filter(|&b| b >= MIN_BODY_US)
    })
}

pub fn analyse(info: &ProgramRunInfo, samples: &[ProgramSample], study: Option<Study>) -> Analysis {
    let baseline = info.suite.baseline.clone();
    let mut cells = Vec::new();
    let mut engines = Vec::new();
    for o in &info.engines {
        let mut ratios = Vec::new();
        let mut body_ratios = Vec::new();
        let (mut compiles, mut instantiates) = (Vec::new(), Vec::new());
        let mut ran = 0;
        for p in &info.programs {
            let runs: Vec<&ProgramSample> = samples
                .iter()
                .filter(|s| s.engine == o.engine && &s.program == p)
                .collect();
            if runs.is_empty() {
                continue;
            }
            let ok: Vec<&&ProgramSample> = runs.iter().filter(|s| s.error.is_empty()).collect();
            let phase = |f: fn(&super::execute::Phases) -> f64| {
                let v: Vec<f64> = ok.iter().filter_map(|s| s.phases.map(|x| f(&x))).collect();
                median(&v)
            };
            let wall: Vec<f64> = ok.iter().map(|s| s.wall_ms).collect();
            let ratio = paired_ratio(samples, &o.engine, &baseline, p, |s| Some(s.wall_ms));
            let body_ratio = body_ratio(samples, &o.engine, &baseline, p);
            let cell = Cell {
                engine: o.engine.clone(),
                program: p.clone(),
                n: ok.len(),
                wall_ms: median(&wall),
                ratio,
                body_ratio,
                compile_ms: phase(|x| x.compile_ms),
                instantiate_ms: phase(|x| x.instantiate_ms),
                execute_ms: phase(|x| x.execute_ms),
                failed_runs: runs.len() - ok.len(),
            };
            if !ok.is_empty() {
                ran += 1;
            }
            if let Some(r) = cell.ratio {
                ratios.push(r.value);
            }
            if let Some(r) = cell.body_ratio {
                body_ratios.push(r.value);
            }
            compiles.extend(cell.compile_ms);
            instantiates.extend(cell.instantiate_ms);
            cells.push(cell);
        }
        let over_programs = |v: &[f64], f: fn(&[f64]) -> f64| {
            (!v.is_empty()).then(|| stats::bootstrap(v, f)).flatten()
        };
        let med = |v: &[f64]| median(v).unwrap_or(f64::NAN);
        engines.push(EngineSummary {
            engine: o.engine.clone(),
            about: o.about.clone(),
            status: o.status.clone(),
            reason: o.reason.clone(),
            version: o
                .tools
                .iter()
                .map(|t| t.version.clone())
                .collect::<Vec<_>>()
                .join(", "),
            programs: ran,
            failed_programs: o.failed_programs.clone(),
            geomean: over_programs(&ratios, geomean),
            median: over_programs(&ratios, med),
            body_geomean: over_programs(&body_ratios, geomean),
            body_median: over_programs(&body_ratios, med),
            compile_ms: median(&compiles),
            instantiate_ms: median(&instantiates),
            study: study
                .as_ref()
                .and_then(|s| s.row_for(&o.engine))
                .map(|r| (r.study.clone(), r.ratio)),
        });
    }
    Analysis {
        run_id: info.run_id.clone(),
        suite: info.suite.name.clone(),
        description: info.suite.description.clone(),
        baseline,
        repetitions: info.suite.repetitions,
        programs: info.programs.clone(),
        program_set: info.program_set.clone(),
        machine: format!("{}, {} CPUs", info.machine.cpu_model, info.machine.cores),
        cpus: info.cpus.clone(),
        engines,
        cells,
        study,
        state: info.state.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_study_parses() {
        let s = Study::load("libsodium").unwrap();
        assert_eq!(s.row_for("wasmtime-cranelift").unwrap().ratio, 2.93);
        assert_eq!(s.iterations, Some(200));
        assert!(s.rows.len() >= 10);
    }

    #[test]
    fn a_body_that_timed_no_work_on_either_side_has_no_body_ratio() {
        let sample = |engine: &str, program: &str, repetition: u32, body_us: f64| ProgramSample {
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
