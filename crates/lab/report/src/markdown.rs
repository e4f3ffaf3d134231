//! summary.md: the headline tables in Markdown, laid out from the report's sections.

use std::fmt::Write;

use wasmlab_analysis::programs::EngineSummary;
use wasmlab_analysis::servers::BASELINE;
use wasmlab_analysis::{ProgramAnalysis, ServerAnalysis};
use wasmlab_model::run::{RunState, Status};

use crate::format::{capacity_note, equal_load_note, grouped, saturation_note};
use crate::programs::{engine_columns, iteration_counts, measured};
use crate::sections;
use crate::table::{self, Column, markdown_cell as cell};

macro_rules! w {
    ($dst:expr, $($arg:tt)*) => {{
        let _ = writeln!($dst, $($arg)*);
    }};
}

const NOT_MEASURED: &str = "Not measured in this run.";

/// A table of rows already made (a study's, whose columns the analysis gives), its first `left`
/// columns text (left-aligned), the others numbers.
fn rows_table(md: &mut String, head: &[&str], rows: &[Vec<String>], left: usize) {
    w!(md, "| {} |", head.join(" | "));
    let sep: Vec<&str> = head
        .iter()
        .enumerate()
        .map(|(i, _)| if i < left { "---" } else { "---:" })
        .collect();
    w!(md, "|{}|", sep.join("|"));
    for r in rows {
        w!(md, "| {} |", r.join(" | "));
    }
    md.push('\n');
}

/// A section's table, or a line saying nothing was measured.
fn table_or_none<R>(md: &mut String, columns: &[Column<'_, R>], rows: &[R]) {
    if rows.is_empty() {
        w!(md, "{NOT_MEASURED}\n");
    } else {
        md.push_str(&table::markdown(columns, rows));
    }
}

/// summary.md of a server suite's run.
pub(crate) fn servers(a: &ServerAnalysis) -> String {
    let mut md = String::with_capacity(16 * 1024);
    header(&mut md, a);
    costs(&mut md, a);
    throughput(&mut md, a);
    equal_load(&mut md, a);
    cold_start(&mut md, a);
    warm(&mut md, a);
    open_loop(&mut md, a);
    resources(&mut md, a);
    study_beside(&mut md, a);
    environment(&mut md, a);
    md
}

fn header(md: &mut String, a: &ServerAnalysis) {
    let info = &a.info;
    let h = &info.header;
    w!(
        md,
        "# wasmlab run {}: {}\n",
        cell(&h.run_id),
        cell(&info.suite.name)
    );
    if !info.suite.description.is_empty() {
        w!(md, "{}\n", cell(&info.suite.description));
    }
    if h.state != RunState::Complete {
        w!(
            md,
            "> ⚠ **This run is {}, not complete**: the figures hold only what was measured \
             before it stopped.\n",
            h.state
        );
    }
    w!(
        md,
        "- State: {}; started {} UTC, finished {}",
        h.state,
        h.started_utc,
        h.finished_utc
            .as_deref()
            .map_or_else(|| "—".into(), |f| format!("{f} UTC"))
    );
    w!(
        md,
        "- Repetitions: {}; seed {}; git {}",
        info.suite.repetitions,
        h.seed,
        h.git_sha.as_deref().unwrap_or("unknown")
    );
    w!(md, "- Command: `{}`", h.command.join(" ").replace('`', "'"));
    for o in sections::outcomes(a)
        .iter()
        .filter(|o| o.status != Status::Measured)
    {
        w!(
            md,
            "- ⚠ Variant **{}** {}: {}",
            cell(&o.name),
            o.status,
            cell(o.why())
        );
    }
    md.push('\n');
    w!(
        md,
        "Figures over several runs: mean [95% bootstrap CI] n. Ratios are to `{BASELINE}`.\n"
    );
}

/// Throughput at the reference concurrency, a table per workload.
fn throughput(md: &mut String, a: &ServerAnalysis) {
    let Some(conns) = a.reference_connections else {
        w!(md, "## Throughput\n\n{NOT_MEASURED}\n");
        return;
    };
    w!(md, "## Throughput at {conns} connections\n");
    let rows = sections::throughput(a);
    let columns = sections::throughput_columns(a);
    let mut any_flag = false;
    for wl in &a.workloads {
        let rows: Vec<sections::Throughput> = rows
            .iter()
            .filter(|r| &r.workload == wl && r.connections == conns)
            .cloned()
            .collect();
        if rows.is_empty() {
            continue;
        }
        any_flag |= rows.iter().any(|r| r.saturation.is_some());
        w!(md, "### {}\n", cell(wl));
        md.push_str(&table::markdown(&columns, &rows));
    }
    w!(md, "{}\n", capacity_note());
    if any_flag {
        w!(md, "{}\n", saturation_note());
    }
    if let Some(n) = sections::other_compute_code(a) {
        w!(md, "{n}.\n");
    }
}

/// The answer, first: what a request costs each variant against native.
fn costs(md: &mut String, a: &ServerAnalysis) {
    w!(md, "## What a request costs against {BASELINE}\n");
    let rows = sections::costs(a);
    if rows.is_empty() {
        w!(md, "{NOT_MEASURED}\n");
        return;
    }
    w!(
        md,
        "The server's CPU per request as a multiple of {BASELINE}'s (> 1: costlier), at equal load \
         (the variant and native at the same rate, the highest both kept up with: what a fleet that \
         is not saturated pays) and \
         where both servers were saturated (capacity × {BASELINE}, turned over), each with its \
         95% interval.\n"
    );
    md.push_str(&table::markdown(&sections::cost_columns(), &rows));
    for line in sections::equal_load_rates(a) {
        w!(md, "- Equal load, {}", cell(&line));
    }
    md.push('\n');
}

/// Every variant at the same rates: a table per workload.
fn equal_load(md: &mut String, a: &ServerAnalysis) {
    let rows = sections::equal_load(a);
    if rows.is_empty() {
        return;
    }
    w!(md, "## Equal load\n");
    let columns = sections::equal_load_columns();
    for w in &a.workloads {
        let mine: Vec<sections::EqualLoad> =
            rows.iter().filter(|r| &r.workload == w).cloned().collect();
        if !mine.is_empty() {
            w!(md, "### {}\n", cell(w));
            md.push_str(&table::markdown(&columns, &mine));
        }
    }
    w!(md, "{}\n", equal_load_note());
}

fn cold_start(md: &mut String, a: &ServerAnalysis) {
    w!(md, "## Cold start (spawn → first 200, ms)\n");
    not_observable(md, a);
    table_or_none(
        md,
        &sections::cold_start_columns(),
        &sections::cold_starts(a),
    );
}

fn warm(md: &mut String, a: &ServerAnalysis) {
    w!(md, "## Warm latency (one connection, ms)\n");
    table_or_none(md, &sections::warm_columns(), &sections::warm(a));
}

fn open_loop(md: &mut String, a: &ServerAnalysis) {
    w!(md, "## Open loop (latency ms vs offered load)\n");
    table_or_none(md, &sections::open_loop_columns(), &sections::open_loop(a));
}

/// The line on what is not observable of remote targets, where a section leaves them out.
fn not_observable(md: &mut String, a: &ServerAnalysis) {
    if let Some(n) = sections::not_observable(a) {
        w!(md, "{n}.\n");
    }
}

/// Resources at the reference concurrency.
fn resources(md: &mut String, a: &ServerAnalysis) {
    not_observable(md, a);
    let mut rows = Vec::new();
    if let Some(conns) = a.reference_connections {
        for wl in &a.workloads {
            for v in &a.variants {
                rows.extend(
                    a.throughput_cell(v, wl, conns)
                        .and_then(sections::resources),
                );
            }
        }
    }
    match a.reference_connections {
        Some(conns) => w!(md, "## Resources at {conns} connections\n"),
        None => w!(md, "## Resources\n"),
    }
    if rows.is_empty() {
        w!(md, "{NOT_MEASURED}\n");
        return;
    }
    md.push_str(&table::markdown(&sections::resources_columns(), &rows));
    w!(
        md,
        "req/s per core = responses / CPU-seconds of the variant's process tree: cores needed \
         = target req/s ÷ this.\n"
    );
}

/// The suite's study beside this run, when it measured any of its variants and cells.
fn study_beside(md: &mut String, a: &ServerAnalysis) {
    if !sections::study_measured(a) {
        return;
    }
    w!(md, "## The {} beside this run\n", a.study.name);
    w!(
        md,
        "Its published figures ({}), each also as a ratio to its own {} server (`{}` here); \
         a ratio *holds* when ours is within a factor of two of it. Where that server is not \
         `native`, ours is also set against `native`; resp/CPU-s is what one core of the server \
         sustains (responses per CPU-second of its process tree, which the study did not \
         publish).\n",
        a.study.machine,
        a.study.baseline.as_deref().unwrap_or("native"),
        wasmlab_analysis::study::baseline_of(&a.study)
    );
    for f in sections::study(a) {
        w!(
            md,
            "### {}{}\n",
            f.title,
            f.ours_at
                .as_deref()
                .map(|at| format!(" ({at})"))
                .unwrap_or_default()
        );
        let rows: Vec<Vec<String>> = f
            .rows
            .into_iter()
            .map(|r| std::iter::once(cell(&r.variant)).chain(r.values).collect())
            .collect();
        let columns: Vec<&str> = f.columns.iter().map(String::as_str).collect();
        rows_table(md, &columns, &rows, 1);
    }
    if let Some(plan) = sections::capacity_plan(a) {
        w!(md, "### {}\n", plan.title);
        w!(
            md,
            "The study's sizing rule: {}. Ours: what one core of each server sustains, and the \
             cores a target load would need at that rate.\n",
            plan.rule
        );
        let rows: Vec<Vec<String>> = plan
            .rows
            .into_iter()
            .map(|(study, mut cells)| {
                if !study {
                    cells[0] = cell(&cells[0]);
                }
                cells
            })
            .collect();
        let columns: Vec<&str> = plan.columns.iter().map(String::as_str).collect();
        rows_table(md, &columns, &rows, 2);
    }
    let mut missing = a.study.not_reproduced().peekable();
    if missing.peek().is_some() {
        w!(md, "Not reproduced here:\n");
        for (system, why) in missing {
            w!(md, "- {system}: {why}");
        }
        md.push('\n');
    }
    w!(md, "How the study's method differs:\n");
    for d in &a.study.method_differences {
        w!(md, "- {d}");
    }
    md.push('\n');
}

fn environment(md: &mut String, a: &ServerAnalysis) {
    let info = &a.info;
    let m = &info.header.machine;
    let s = &info.suite;
    w!(md, "## Environment\n");
    w!(
        md,
        "- CPU: {}, {} cores, {} memory; kernel {}",
        m.cpu_model,
        m.cores,
        m.memory_kib.map_or_else(
            || "unknown".into(),
            |k| format!("{} GiB", grouped(k as f64 / 1024.0 / 1024.0, 1))
        ),
        m.kernel
    );
    w!(md, "- CPUs: {}", info.cpus.describe());
    w!(
        md,
        "- SHA extensions: {} ({})",
        if m.cpu_sha_extensions { "yes" } else { "no" },
        m.compute_sha256
    );
    if !m.native_code.is_empty() {
        w!(md, "- Native code compiled for: {}", m.native_code);
    }
    let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "unknown".into());
    w!(
        md,
        "- Tools: wasmlab {}, rustc {}, wasmtime {}, hyper {}, tokio {}",
        m.tools.wasmlab,
        opt(&m.tools.rustc),
        opt(&m.tools.wasmtime),
        opt(&m.tools.hyper),
        opt(&m.tools.tokio)
    );
    w!(
        md,
        "- Suite: {} s per cell after {} s warm-up, {} load thread(s), connections {}, {} repetition(s)",
        s.duration_secs,
        s.warmup_secs,
        s.load_threads,
        s.connections
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        s.repetitions
    );
    if let Some(axis) = s.http2_axis() {
        w!(md, "- HTTP/2: {axis}");
    }
}

/// summary.md of a program suite's run.
pub(crate) fn programs(a: &ProgramAnalysis) -> String {
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
    let rows: Vec<EngineSummary> = measured(a).cloned().collect();
    md += &table::markdown(&engine_columns(), &rows);
    let out = a
        .engines
        .iter()
        .filter(|e| e.status.is_out())
        .map(|e| format!("`{}` not measured ({}): {}", e.engine, e.status, e.reason));
    let failed = a.engines.iter().flat_map(|e| {
        e.failed_programs
            .iter()
            .map(|(p, why)| format!("`{}` `{p}`: {why}", e.engine))
    });
    for line in out.chain(failed) {
        w!(md, "- {}", cell(&line));
    }
    md
}
