//! A program suite's outputs: samples.csv, summary.md, report.html (a minijinja template, escaped
//! by the engine) and the terminal table.

use comfy_table::Table;

use super::analyze::{Analysis, Cell, EngineSummary};
use super::{ProgramRunInfo, ProgramSample};
use crate::analyze::stats::Estimate;
use crate::record::results::ResultsDir;
use crate::report::plot::{Axis, Bar, LegendEntry, Plot, Scale, Stroke, Whisker};

const TEMPLATE: &str = include_str!("report.html.j2");

fn ratio(e: &Option<Estimate>) -> String {
    e.as_ref()
        .map_or_else(|| "–".into(), |e| e.show(|v| format!("{v:.2}×")))
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.1} ms"))
}

fn study(e: &EngineSummary) -> String {
    e.study
        .as_ref()
        .map_or_else(|| "–".into(), |(s, r)| format!("{r:.2}× ({s})"))
}

fn state(e: &EngineSummary) -> String {
    match e.status.as_str() {
        "measured" if e.failed_programs.is_empty() => format!("{} programs", e.programs),
        "measured" => format!(
            "{} programs; {} failed their check",
            e.programs,
            e.failed_programs.len()
        ),
        _ => format!("{}: {}", e.status, e.reason),
    }
}

/// [`state`], without the details a terminal row has no room for (they are in run.json and
/// report.html).
fn short_state(e: &EngineSummary) -> String {
    let s = state(e);
    match s.find(" (") {
        Some(i) if e.status == "skipped" => s[..i].to_owned(),
        _ if s.chars().count() > 90 => format!("{}…", s.chars().take(89).collect::<String>()),
        _ => s,
    }
}

pub fn terminal(a: &Analysis) -> String {
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header([
        "engine",
        "× native: geomean [95% CI]",
        "median",
        "body only: geomean",
        "compile (median)",
        "study 2023 (median)",
        "state",
    ]);
    for e in &a.engines {
        t.add_row([
            e.engine.clone(),
            ratio(&e.geomean),
            ratio(&e.median),
            ratio(&e.body_geomean),
            ms(e.compile_ms),
            study(e),
            short_state(e),
        ]);
    }
    format!(
        "{} ({} programs, {} repetitions; time relative to {}, whole process; body only: the programs' own timing of their test body)\n{t}",
        a.suite,
        a.programs.len(),
        a.repetitions,
        a.baseline
    )
}

/// This run's and the study's iterations per benchmark run, when both are known.
fn iteration_counts(a: &Analysis) -> Option<(u64, u64)> {
    let here = a.program_set.get("iterations")?.as_u64()?;
    Some((here, u64::from(a.study.as_ref()?.iterations?)))
}

fn markdown(a: &Analysis) -> String {
    let mut md = format!(
        "# {}: engines on libsodium's test programs\n\nRun `{}`, {} programs, {} repetitions in a shuffled order, on {} ({}). Times are relative to `{}`: the whole process (exec to exit, the study's measure) and the programs' own timing of their test body (start-up and compilation excluded). Intervals are bootstrap 95% over programs.\n\n",
        a.suite,
        a.run_id,
        a.programs.len(),
        a.repetitions,
        a.machine,
        a.cpus,
        a.baseline
    );
    if let Some((here, study)) = iteration_counts(a).filter(|(h, s)| h != s) {
        md += &format!(
            "**Not the study's iteration count:** this run's benchmark builds ran their test body {here} times, the study's {study}: compare the study's medians with the body-only ratios, which the count does not change.\n\n"
        );
    }
    md += "| engine | × native, geomean | median | body only, geomean | compile (median) | study 2023 | state |\n|---|---|---|---|---|---|---|\n";
    for e in &a.engines {
        md += &format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            e.engine,
            ratio(&e.geomean),
            ratio(&e.median),
            ratio(&e.body_geomean),
            ms(e.compile_ms),
            study(e),
            state(e).replace('|', "/")
        );
    }
    for e in &a.engines {
        for (p, why) in &e.failed_programs {
            md += &format!("\n- `{}` `{p}`: {}", e.engine, why.replace('\n', " "));
        }
    }
    md.push('\n');
    md
}

/// Bars of each engine's median ratio over programs as `pick` takes it (log scale, from 1 = the
/// baseline), with its interval, and with `study` the study's published median (the same
/// statistic) as a grey bar beneath.
fn chart(
    a: &Analysis,
    pick: fn(&EngineSummary) -> Option<Estimate>,
    study: bool,
) -> Option<String> {
    let mut p = Plot::new(
        Axis::new(
            &format!("time relative to {} (log scale)", a.baseline),
            Scale::Log,
        ),
        Axis::new("", Scale::Linear),
    );
    let mut ticks = Vec::new();
    let mut row = 0.0f64;
    let mut right = 1.0f64;
    let mut legend = Vec::new();
    for (i, e) in a.engines.iter().enumerate() {
        let Some(g) = pick(e) else { continue };
        let y = -row;
        p.bars.push(Bar {
            colour: Some(i),
            x0: 1.0,
            x1: g.value.max(1.0001),
            y0: y - 0.3,
            y1: y + 0.3,
        });
        let mut end = g.value;
        if g.n > 1 && g.hi > g.lo {
            p.whiskers.push(Whisker {
                colour: None,
                vertical: false,
                at: y,
                lo: g.lo,
                hi: g.hi,
            });
            end = end.max(g.hi);
        }
        p.labels.push((end * 1.08, y, format!("{:.2}×", g.value)));
        let mut rows = 1.0;
        if let Some((_, r)) = e.study.as_ref().filter(|_| study) {
            let ys = y - 0.75;
            p.bars.push(Bar {
                colour: None,
                x0: 1.0,
                x1: *r,
                y0: ys - 0.2,
                y1: ys + 0.2,
            });
            p.labels.push((r * 1.08, ys, format!("{r:.2}× (2023)")));
            end = end.max(*r);
            rows += 0.75;
        }
        right = right.max(end);
        ticks.push((y - (rows - 1.0) / 2.0, e.engine.clone()));
        legend.push(LegendEntry {
            colour: Some(i),
            label: e.engine.clone(),
            stroke: Stroke::Box,
        });
        row += rows + 0.5;
    }
    if p.bars.is_empty() {
        return None;
    }
    if study {
        legend.push(LegendEntry {
            colour: None,
            label: "study 2023, median".into(),
            stroke: Stroke::Box,
        });
    }
    p.extent.push((right * 2.0, 0.0));
    p.extent.push((0.9, 0.0));
    p.y = Axis::new("", Scale::Linear).ticks(ticks);
    p.height = ((row * 22.0) as u32 + 70).clamp(150, 900);
    p.legend = legend;
    p.svg().ok().flatten()
}

/// A program × engine table row.
#[derive(serde::Serialize)]
struct ProgramRow {
    program: String,
    cells: Vec<String>,
}

fn program_rows(a: &Analysis) -> Vec<ProgramRow> {
    a.programs
        .iter()
        .map(|p| ProgramRow {
            program: p.clone(),
            cells: a
                .engines
                .iter()
                .map(|e| {
                    let c: Option<&Cell> = a
                        .cells
                        .iter()
                        .find(|c| &c.program == p && c.engine == e.engine);
                    match c {
                        Some(c) if c.n > 0 => match c.ratio {
                            Some(r) => format!("{:.2}", r.value),
                            None => format!("{:.0} ms", c.wall_ms.unwrap_or(f64::NAN)),
                        },
                        Some(_) => "failed".into(),
                        None if e.failed_programs.iter().any(|(fp, _)| fp == p) => {
                            "check failed".into()
                        }
                        None => "–".into(),
                    }
                })
                .collect(),
        })
        .collect()
}

pub fn html(a: &Analysis) -> anyhow::Result<String> {
    let mut env = minijinja::Environment::new();
    env.add_template("report.html", TEMPLATE)?;
    let engines: Vec<serde_json::Value> = a
        .engines
        .iter()
        .map(|e| {
            serde_json::json!({
                "engine": e.engine,
                "about": e.about,
                "version": e.version,
                "geomean": ratio(&e.geomean),
                "median": ratio(&e.median),
                "body_geomean": ratio(&e.body_geomean),
                "body_median": ratio(&e.body_median),
                "compile": ms(e.compile_ms),
                "instantiate": ms(e.instantiate_ms),
                "study": study(e),
                "state": state(e),
                "failed": e.failed_programs,
            })
        })
        .collect();
    let tmpl = env.get_template("report.html")?;
    Ok(tmpl.render(minijinja::context! {
        a => a,
        engines => engines,
        chart => chart(a, |e| e.median, true).map(minijinja::Value::from_safe_string),
        body_chart => chart(a, |e| e.body_median, false).map(minijinja::Value::from_safe_string),
        rows => program_rows(a),
        min_body_us => super::analyze::MIN_BODY_US,
    })?)
}

fn csv_rows(samples: &[ProgramSample]) -> Vec<Vec<String>> {
    let f = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.4}"));
    samples
        .iter()
        .map(|s| {
            vec![
                s.engine.clone(),
                s.program.clone(),
                (s.repetition + 1).to_string(),
                f(Some(s.wall_ms).filter(|v| v.is_finite())),
                f(s.phases.map(|p| p.compile_ms)),
                f(s.phases.map(|p| p.instantiate_ms)),
                f(s.phases.map(|p| p.execute_ms)),
                f(s.body_us),
                s.error.clone(),
            ]
        })
        .collect()
}

pub fn write_all(
    dir: &ResultsDir,
    _info: &ProgramRunInfo,
    samples: &[ProgramSample],
    a: &Analysis,
) -> anyhow::Result<()> {
    dir.write_csv(
        "programs.csv",
        &[
            "engine",
            "program",
            "repetition",
            "wall_ms",
            "compile_ms",
            "instantiate_ms",
            "execute_ms",
            "body_us_per_iteration",
            "error",
        ],
        &csv_rows(samples),
    )?;
    dir.write_json("analysis.json", a)?;
    crate::record::results::write_atomic(&dir.file("summary.md"), markdown(a).as_bytes())?;
    crate::record::results::write_atomic(&dir.file("report.html"), html(a)?.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::programs::analyze::Study;

    fn analysis(iterations: u32) -> Analysis {
        Analysis {
            run_id: "r".into(),
            suite: "s".into(),
            description: String::new(),
            baseline: "native-portable".into(),
            repetitions: 1,
            programs: vec!["kdf".into()],
            program_set: serde_json::json!({ "iterations": iterations }),
            machine: "m".into(),
            cpus: "c".into(),
            engines: Vec::new(),
            cells: Vec::new(),
            study: Some(Study::load("libsodium").unwrap()),
            state: "complete".into(),
        }
    }

    #[test]
    fn another_iteration_count_than_the_studys_is_said_beside_it() {
        let other = analysis(10);
        assert!(markdown(&other).contains("Not the study's iteration count"));
        assert!(
            html(&other)
                .unwrap()
                .contains("Not the study's iteration count")
        );
        let same = analysis(200);
        assert!(!markdown(&same).contains("Not the study's iteration count"));
        assert!(!html(&same).unwrap().contains("iteration count"));
    }
}
