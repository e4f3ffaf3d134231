//! `wasmlab report DIR` (rebuild every table and plot from the raw samples) and
//! `wasmlab compare A B` (per-cell changes between two runs, with confidence intervals).

use std::path::{Path, PathBuf};

use crate::analyze::stats::{self, Estimate};
use crate::analyze::{self, Analysis};
use crate::record::model::{self, Kind, Sample};
use crate::record::results::{ResultsDir, write_atomic};
use crate::report::terminal::with_ci;

/// Writes summary.md and report.html into `dir` (each atomically).
pub fn write_report(dir: &Path, a: &Analysis) -> anyhow::Result<()> {
    write_atomic(
        &dir.join("summary.md"),
        crate::report::render_summary_md(a).as_bytes(),
    )?;
    let html = crate::report::render_html(a)?;
    write_atomic(&dir.join("report.html"), html.as_bytes())
}

/// Reads a results directory: run.json and samples.jsonl.
pub fn load(dir: &Path) -> anyhow::Result<(model::RunInfo, Vec<Sample>)> {
    anyhow::ensure!(dir.is_dir(), "{} is not a directory", dir.display());
    let info = model::read_run_info(dir)?;
    let samples = model::read_samples(&dir.join("samples.jsonl"))?;
    Ok((info, samples))
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A results directory (results/<run-id>).
    pub dir: PathBuf,
}

/// Rebuilds the CSVs, summary.md and report.html of a results directory from its raw samples.
pub fn report(args: ReportArgs) -> anyhow::Result<()> {
    if crate::programs::is_program_run(&args.dir) {
        return crate::programs::rebuild(&args.dir);
    }
    let (info, samples) = load(&args.dir)?;
    let dir = ResultsDir::open(&args.dir)?;
    crate::record::csv::write_csvs(&dir, &info, &samples)?;
    let a = analyze::analyse(info, &samples);
    write_report(&args.dir, &a)?;
    println!("{}", crate::report::terminal::terminal(&a));
    println!(
        "rebuilt from {} samples: {}",
        samples.len(),
        [
            "throughput.csv",
            "warm.csv",
            "open_loop.csv",
            "cold_start.csv",
            "summary.md",
            "report.html"
        ]
        .map(|f| args.dir.join(f).display().to_string())
        .join(", ")
    );
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline results directory.
    pub a: PathBuf,
    /// The results directory compared with it.
    pub b: PathBuf,
}

/// One compared figure: the per-run values of each side.
struct Compared {
    what: String,
    unit: &'static str,
    a: Vec<f64>,
    b: Vec<f64>,
    /// Lower is better (latency), else higher is better (throughput).
    lower_is_better: bool,
}

/// Per-run values of each measured figure, keyed by a description of the cell.
fn figures(samples: &[Sample]) -> Vec<(String, &'static str, bool, f64)> {
    let mut out = Vec::new();
    for s in samples {
        let w = s.workload.as_deref().unwrap_or("");
        match (s.kind, &s.load, &s.start) {
            (Kind::Throughput, Some(l), _) => {
                out.push((
                    format!("throughput {} {w} c={}", s.variant, l.connections),
                    "req/s",
                    false,
                    l.rps,
                ));
                // The headline's figure: responses per CPU-second of the variant's processes.
                if let Some(capacity) = s.capacity() {
                    out.push((
                        format!("capacity {} {w} c={}", s.variant, l.connections),
                        "resp/CPU-s",
                        false,
                        capacity,
                    ));
                }
            }
            (Kind::Warm, Some(l), _) => out.push((
                format!("warm p50 {} {w}", s.variant),
                "ms",
                true,
                l.latency_ms.p50,
            )),
            (Kind::OpenLoop, Some(l), _) => out.push((
                format!(
                    "open-loop p99 {} {w} at {:.0}%",
                    s.variant,
                    s.load_fraction.unwrap_or(0.0) * 100.0
                ),
                "ms",
                true,
                l.latency_ms.p99,
            )),
            (Kind::ColdStart, _, Some(t)) => out.push((
                format!("cold start {}", s.variant),
                "ms",
                true,
                t.first_200_ms,
            )),
            _ => {}
        }
    }
    out
}

fn collect(a: &[Sample], b: &[Sample]) -> Vec<Compared> {
    let mut out: Vec<Compared> = Vec::new();
    for (side, samples) in [(0, a), (1, b)] {
        for (what, unit, lower, v) in figures(samples) {
            let i = match out.iter().position(|c| c.what == what) {
                Some(i) => i,
                None => {
                    out.push(Compared {
                        what,
                        unit,
                        a: Vec::new(),
                        b: Vec::new(),
                        lower_is_better: lower,
                    });
                    out.len() - 1
                }
            };
            if side == 0 {
                out[i].a.push(v);
            } else {
                out[i].b.push(v);
            }
        }
    }
    out
}

/// The change B/A of one figure: mean ratio with an unpaired bootstrap CI (cold starts: ratio of
/// medians), significant when the CI excludes 1 and both sides have at least 2 runs.
fn change(c: &Compared) -> Option<(Estimate, bool)> {
    let e = if c.what.starts_with("cold start") {
        analyze::median_ratio(&c.b, &c.a)?
    } else {
        stats::ratio_of_means(&c.b, &c.a, false)?
    };
    let significant = c.a.len() >= 2 && c.b.len() >= 2 && e.excludes(1.0);
    Some((e, significant))
}

pub fn compare(args: CompareArgs) -> anyhow::Result<()> {
    let (ia, sa) = load(&args.a)?;
    let (ib, sb) = load(&args.b)?;
    println!("A: {} ({}, {})", args.a.display(), ia.run_id, ia.suite.name);
    println!("B: {} ({}, {})", args.b.display(), ib.run_id, ib.suite.name);
    let rows = collect(&sa, &sb);
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header([
        "figure",
        "A mean",
        "n",
        "B mean",
        "n",
        "B / A [95% CI]",
        "significant",
    ]);
    let (mut better, mut worse, mut only) = (0, 0, 0);
    for c in &rows {
        let mean =
            |v: &[f64]| stats::mean(v).map_or("–".into(), |m| format!("{m:.3} {}", c.unit));
        let (ratio, verdict) = match change(c) {
            Some((e, true)) => {
                let improved = (e.value < 1.0) == c.lower_is_better;
                if improved {
                    better += 1;
                } else {
                    worse += 1;
                }
                (
                    with_ci(&e, 3),
                    if improved {
                        "yes: better"
                    } else {
                        "yes: worse"
                    }
                    .to_owned(),
                )
            }
            Some((e, false)) if c.a.len() < 2 || c.b.len() < 2 => {
                (with_ci(&e, 3), "n < 2: cannot tell".into())
            }
            Some((e, false)) => (with_ci(&e, 3), "no".into()),
            None => {
                only += 1;
                ("–".into(), "only in one run".into())
            }
        };
        t.add_row([
            c.what.clone(),
            mean(&c.a),
            c.a.len().to_string(),
            mean(&c.b),
            c.b.len().to_string(),
            ratio,
            verdict,
        ]);
    }
    println!("{t}");
    println!(
        "{} figures compared: {better} significantly better in B, {worse} significantly worse, {only} in one run only",
        rows.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compared(a: &[f64], b: &[f64]) -> Compared {
        Compared {
            what: "throughput native hello c=50".into(),
            unit: "req/s",
            a: a.to_vec(),
            b: b.to_vec(),
            lower_is_better: false,
        }
    }

    #[test]
    fn significance_needs_separation_and_runs() {
        let (e, sig) = change(&compared(&[100.0, 102.0, 98.0], &[80.0, 81.0, 79.0])).unwrap();
        assert!(sig && (e.value - 0.8).abs() < 1e-9, "{e:?}");
        let (_, sig) = change(&compared(&[100.0, 110.0, 90.0], &[101.0, 95.0, 108.0])).unwrap();
        assert!(!sig);
        // One run a side: a point interval, never called significant.
        let (_, sig) = change(&compared(&[100.0], &[50.0])).unwrap();
        assert!(!sig);
        assert!(change(&compared(&[], &[50.0])).is_none());
    }
}
