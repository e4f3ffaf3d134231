//! summary.md: the headline tables in Markdown.

use std::fmt::Write;

use super::{
    fmt_errors, fmt_ms, fmt_ratio_est, fmt_rps, mib, saturation_flag, saturation_note, thousands,
};
use crate::analyze::{Analysis, BASELINE};

macro_rules! w {
    ($dst:expr, $($arg:tt)*) => {{
        let _ = writeln!($dst, $($arg)*);
    }};
}

const NOT_MEASURED: &str = "Not measured in this run.";

/// Text safe inside a Markdown table cell (and not taken for an HTML tag).
fn cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace(['\n', '\r'], " ")
}

/// A table whose first `left` columns are text (left-aligned), the others numbers.
fn table(md: &mut String, head: &[&str], rows: &[Vec<String>], left: usize) {
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

fn ratio_or_baseline(variant: &str, e: Option<&crate::analyze::stats::Estimate>) -> String {
    if variant == BASELINE {
        "1 (baseline)".into()
    } else {
        fmt_ratio_est(e)
    }
}

pub fn render(a: &Analysis) -> String {
    let info = &a.info;
    let mut md = String::with_capacity(16 * 1024);
    w!(
        md,
        "# wasmlab run {}: {}\n",
        cell(&info.run_id),
        cell(&info.suite.name)
    );
    if !info.suite.description.is_empty() {
        w!(md, "{}\n", cell(&info.suite.description));
    }
    if info.state != "complete" {
        w!(
            md,
            "> ⚠ **This run is {}, not complete**: the figures hold only what was measured \
             before it stopped.\n",
            info.state
        );
    }
    w!(
        md,
        "- State: {}; started {} UTC, finished {}",
        info.state,
        info.started_utc,
        info.finished_utc
            .as_deref()
            .map_or_else(|| "—".into(), |f| format!("{f} UTC"))
    );
    w!(
        md,
        "- Repetitions: {}; seed {}; git {}",
        info.suite.repetitions,
        info.seed,
        info.git_sha.as_deref().unwrap_or("unknown")
    );
    w!(
        md,
        "- Command: `{}`",
        info.command.join(" ").replace('`', "'")
    );
    for v in info.variants.iter().filter(|v| v.status != "measured") {
        w!(
            md,
            "- ⚠ Variant **{}** {}: {}",
            cell(&v.name),
            cell(&v.status),
            cell(v.reason.as_deref().unwrap_or("no reason recorded"))
        );
    }
    md.push('\n');
    w!(
        md,
        "Figures over several runs: mean [95% bootstrap CI] n. Ratios are to `{BASELINE}`.\n"
    );

    // Throughput at the reference concurrency.
    match a.reference_connections {
        None => {
            w!(md, "## Throughput\n\n{NOT_MEASURED}\n");
        }
        Some(conns) => {
            w!(md, "## Throughput at {conns} connections\n");
            let mut any_flag = false;
            for wl in &a.workloads {
                let rows: Vec<Vec<String>> = a
                    .variants
                    .iter()
                    .filter_map(|v| a.throughput_cell(v, wl, conns))
                    .map(|c| {
                        let flag = saturation_flag(c).unwrap_or_default();
                        any_flag |= !flag.is_empty();
                        vec![
                            cell(&c.variant),
                            c.rps.show(fmt_rps),
                            ratio_or_baseline(&c.variant, c.capacity_ratio.as_ref()),
                            ratio_or_baseline(&c.variant, c.ratio_to_native.as_ref()),
                            fmt_ms(c.latency.p50),
                            fmt_ms(c.latency.p99),
                            fmt_errors(&c.errors),
                            flag,
                        ]
                    })
                    .collect();
                if rows.is_empty() {
                    continue;
                }
                w!(md, "### {}\n", cell(wl));
                table(
                    &mut md,
                    &[
                        "variant",
                        "req/s (mean [95% CI] n)",
                        "× native per CPU [95% CI]",
                        "× native req/s [95% CI]",
                        "p50 ms",
                        "p99 ms",
                        "errors",
                        "flags",
                    ],
                    &rows,
                    1,
                );
            }
            if any_flag {
                w!(md, "{}\n", saturation_note());
            }
        }
    }

    // Cold start.
    w!(md, "## Cold start (spawn → first 200, ms)\n");
    if a.cold_start.is_empty() {
        w!(md, "{NOT_MEASURED}\n");
    } else {
        let rows: Vec<Vec<String>> = a
            .cold_start
            .iter()
            .map(|r| {
                vec![
                    cell(&r.variant),
                    r.n.to_string(),
                    fmt_ms(r.first_200.p50),
                    fmt_ms(r.first_200.p90),
                    fmt_ms(r.first_200.p99),
                    ratio_or_baseline(&r.variant, r.ratio_to_native.as_ref()),
                    super::fmt_rss_after(r),
                ]
            })
            .collect();
        table(
            &mut md,
            &[
                "variant",
                "n",
                "p50",
                "p90",
                "p99",
                "× native p50 [95% CI]",
                "RSS after, MiB",
            ],
            &rows,
            1,
        );
    }

    // Warm.
    w!(md, "## Warm latency (one connection, ms)\n");
    if a.warm.is_empty() {
        w!(md, "{NOT_MEASURED}\n");
    } else {
        let rows: Vec<Vec<String>> = a
            .warm
            .iter()
            .map(|r| {
                vec![
                    cell(&r.variant),
                    cell(&r.workload),
                    r.n.to_string(),
                    fmt_ms(r.latency.p50),
                    fmt_ms(r.latency.p99),
                    ratio_or_baseline(&r.variant, r.ratio_to_native.as_ref()),
                ]
            })
            .collect();
        table(
            &mut md,
            &[
                "variant",
                "workload",
                "n",
                "p50",
                "p99",
                "× native p50 [95% CI]",
            ],
            &rows,
            2,
        );
    }

    // Open loop.
    w!(md, "## Open loop (latency ms vs offered load)\n");
    if a.open_loop.is_empty() {
        w!(md, "{NOT_MEASURED}\n");
    } else {
        let rows: Vec<Vec<String>> = a
            .open_loop
            .iter()
            .map(|o| {
                vec![
                    cell(&o.variant),
                    cell(&o.workload),
                    super::percent(o.fraction),
                    o.n.to_string(),
                    fmt_rps(o.offered_rps),
                    fmt_rps(o.achieved_rps),
                    fmt_ms(o.corrected.p50),
                    fmt_ms(o.corrected.p99),
                    fmt_ms(o.uncorrected.p99),
                    thousands(o.dropped as f64),
                    fmt_errors(&o.errors),
                ]
            })
            .collect();
        table(
            &mut md,
            &[
                "variant",
                "workload",
                "load",
                "n",
                "offered req/s",
                "achieved req/s",
                "corrected p50",
                "corrected p99",
                "uncorrected p99",
                "dropped",
                "errors",
            ],
            &rows,
            2,
        );
    }

    // Resources at the reference concurrency.
    let mut rows = Vec::new();
    if let Some(conns) = a.reference_connections {
        for wl in &a.workloads {
            for v in &a.variants {
                let Some(c) = a.throughput_cell(v, wl, conns) else {
                    continue;
                };
                let Some(r) = &c.resources else { continue };
                rows.push(vec![
                    cell(v),
                    cell(wl),
                    mib(r.rss_peak_kib as f64),
                    r.cpu_secs_per_1k.show(|x| format!("{x:.4}")),
                    r.rps_per_core.show(fmt_rps),
                ]);
            }
        }
    }
    match a.reference_connections {
        Some(conns) => w!(md, "## Resources at {conns} connections\n"),
        None => w!(md, "## Resources\n"),
    }
    if rows.is_empty() {
        w!(md, "{NOT_MEASURED}\n");
    } else {
        table(
            &mut md,
            &[
                "variant",
                "workload",
                "RSS peak MiB",
                "CPU-s / 1k req [95% CI] n",
                "req/s per core [95% CI] n",
            ],
            &rows,
            2,
        );
        w!(
            md,
            "req/s per core = responses / CPU-seconds of the variant's process tree: cores needed \
             = target req/s ÷ this.\n"
        );
    }

    // The gateway study beside this run.
    let study = crate::analyze::study::gateway_study();
    let comparisons = crate::analyze::study::compare(a, &study);
    if comparisons
        .iter()
        .any(|c| c.rows.iter().any(|r| r.ours.is_some()))
    {
        w!(md, "## The gateway study beside this run\n");
        w!(
            md,
            "Its published figures ({}), each also as a ratio to its own native server (`native-close` here); \
             a ratio *holds* when ours is within a factor of two of it.\n",
            study.machine
        );
        let opt = |v: Option<f64>, f: fn(f64) -> String| v.map_or_else(|| "–".into(), f);
        for c in &comparisons {
            let ms = c.title.contains(" ms");
            let value = if ms { fmt_ms } else { super::thousands };
            w!(
                md,
                "### {}{}\n",
                c.title,
                c.ours_at
                    .as_deref()
                    .map(|at| format!(" ({at})"))
                    .unwrap_or_default()
            );
            let rows: Vec<Vec<String>> = c
                .rows
                .iter()
                .map(|r| {
                    vec![
                        cell(&r.variant),
                        opt(r.study, value),
                        opt(r.ours, value),
                        opt(r.study_ratio, |v| format!("{v:.3}")),
                        opt(r.ours_ratio, |v| format!("{v:.3}")),
                        r.verdict.clone().unwrap_or_else(|| "–".into()),
                    ]
                })
                .collect();
            table(&mut md, &crate::analyze::study::COLUMNS, &rows, 1);
        }
        w!(md, "How the study's method differs:\n");
        for d in &study.method_differences {
            w!(md, "- {d}");
        }
        md.push('\n');
    }

    // Environment.
    let m = &info.machine;
    let s = &info.suite;
    w!(md, "## Environment\n");
    w!(
        md,
        "- CPU: {}, {} cores, {} memory; kernel {}",
        m.cpu_model,
        m.cores,
        m.memory_kib.map_or_else(
            || "unknown".into(),
            |k| format!("{} GiB", super::grouped(k as f64 / 1024.0 / 1024.0, 1))
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
    md
}
