//! report.html: one offline file, inline CSS and SVG, no scripts and no network references.

use std::fmt::Write;

use super::plot::{self, Axis, Bar, LegendEntry, Line, Plot, Scale, Stroke, Whisker};
use super::{
    NOT_MEASURED, colour_of, connection_levels, fmt_bytes, fmt_errors, fmt_ms, fmt_ratio_est,
    fmt_rps, has_baseline, mib, saturation_flag, saturation_note, thousands,
};
use crate::analyze::stats::Estimate;
use crate::analyze::{Analysis, BASELINE, Spectrum, ThroughputCell};
use crate::record::model::Kind;

/// `write!` into a String cannot fail.
macro_rules! w {
    ($dst:expr, $($arg:tt)*) => {{
        let _ = write!($dst, $($arg)*);
    }};
}

const CSS: &str = "\
:root{color-scheme:light}\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#222;margin:0;background:#fafafa}\
main{max-width:1180px;margin:0 auto;padding:8px 24px 48px;background:#fff}\
h1{font-size:1.6em;margin:.6em 0 .2em}\
h2{font-size:1.3em;margin:1.8em 0 .4em;padding-top:.4em;border-top:2px solid #ddd}\
h3{font-size:1.05em;margin:1.2em 0 .3em}\
nav{font-size:.92em;margin:.4em 0 1em}nav a{margin-right:.9em;color:#2b5f8f}\
table{border-collapse:collapse;margin:.4em 0 1em;font-size:.9em;font-variant-numeric:tabular-nums}\
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;vertical-align:top}\
th{background:#f2f2f2;text-align:center}\
td.l,th.l{text-align:left}\
table.kv th{text-align:left;background:#f7f7f7;font-weight:600}table.kv td{text-align:left}\
.scroll{overflow-x:auto}\
.sw{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:.35em;vertical-align:-.05em}\
.warn{background:#fff3cd;border:1px solid #e0c36a;padding:6px 10px;border-radius:4px}\
.flag{color:#a04a00;white-space:nowrap}\
.sig{font-weight:700}\
.na{color:#666;font-style:italic}\
.note{color:#555;font-size:.9em;max-width:60em}\
figure{margin:.8em 0 1.2em}figcaption{font-weight:600;margin-bottom:.2em}\
svg{max-width:100%;height:auto;display:block}\
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f4f4f4;padding:1px 3px;word-break:break-all}\
";

const SECTIONS: [(&str, &str); 11] = [
    ("summary", "Summary"),
    ("ratios", "Ratios to native"),
    ("study", "The gateway study"),
    ("throughput", "Throughput"),
    ("latency", "Latency"),
    ("cold-start", "Cold start"),
    ("open-loop", "Open loop"),
    ("resources", "Resources"),
    ("capacity", "Capacity"),
    ("environment", "Environment"),
    ("method", "Method"),
];

pub fn render(a: &Analysis) -> anyhow::Result<String> {
    let mut h = String::with_capacity(256 * 1024);
    let info = &a.info;
    w!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>wasmlab {} — {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        esc(&info.suite.name),
        esc(&info.run_id)
    );
    w!(
        h,
        "<h1>wasmlab report: {} <small>({})</small></h1>\n<nav>",
        esc(&info.suite.name),
        esc(&info.run_id)
    );
    for (id, title) in SECTIONS {
        w!(h, "<a href=\"#{id}\">{title}</a>");
    }
    h.push_str("</nav>\n");

    summary(&mut h, a);
    ratios(&mut h, a);
    study(&mut h, a);
    throughput(&mut h, a);
    latency(&mut h, a);
    cold_start(&mut h, a);
    open_loop(&mut h, a);
    resources(&mut h, a);
    capacity(&mut h, a);
    environment(&mut h, a);
    method(&mut h);
    h.push_str("</main>\n</body>\n</html>\n");
    Ok(h)
}

/// HTML-escapes text (element content and attribute values).
pub(super) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn section(h: &mut String, id: &str) {
    let title = SECTIONS.iter().find(|s| s.0 == id).map_or(id, |s| s.1);
    w!(h, "<section>\n<h2 id=\"{id}\">{title}</h2>\n");
}

fn end_section(h: &mut String) {
    h.push_str("</section>\n");
}

fn not_measured(h: &mut String, what: &str) {
    w!(h, "<p class=\"na\">{}: {NOT_MEASURED}.</p>\n", esc(what));
}

fn note(h: &mut String, html: &str) {
    w!(h, "<p class=\"note\">{html}</p>\n");
}

/// The variant's name with its colour swatch.
fn vname(a: &Analysis, v: &str) -> String {
    format!(
        "<span class=\"sw\" style=\"background:{}\"></span>{}",
        plot::css_colour(colour_of(a, v)),
        esc(v)
    )
}

/// A table: `head` is plain text, `rows` are HTML; the first `left` columns are left-aligned.
fn table(h: &mut String, head: &[&str], rows: &[Vec<String>], left: usize) {
    h.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
    for (i, c) in head.iter().enumerate() {
        let class = if i < left { " class=\"l\"" } else { "" };
        w!(h, "<th{class}>{}</th>", esc(c));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        h.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            let class = if i < left { " class=\"l\"" } else { "" };
            w!(h, "<td{class}>{c}</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></div>\n");
}

/// A key-value table; values are HTML.
fn kv(h: &mut String, rows: &[(&str, String)]) {
    h.push_str("<table class=\"kv\">\n");
    for (k, v) in rows {
        w!(h, "<tr><th>{}</th><td>{v}</td></tr>\n", esc(k));
    }
    h.push_str("</table>\n");
}

/// A plot with its caption (or a line saying why there is none).
fn figure(h: &mut String, caption: &str, p: &Plot) {
    match p.svg() {
        Ok(Some(svg)) => w!(
            h,
            "<figure>\n<figcaption>{}</figcaption>\n{svg}\n</figure>\n",
            esc(caption)
        ),
        Ok(None) => w!(
            h,
            "<p class=\"na\">{}: nothing to plot (no finite values).</p>\n",
            esc(caption)
        ),
        Err(e) => w!(
            h,
            "<p class=\"warn\">{}: the plot could not be drawn ({}).</p>\n",
            esc(caption),
            esc(&format!("{e:#}"))
        ),
    }
}

/// A share (0..1) as a whole percentage.
pub(super) fn percent(share: f64) -> String {
    if share.is_finite() {
        format!("{:.0}%", share * 100.0)
    } else {
        "–".into()
    }
}

fn est(e: &Estimate, f: fn(f64) -> String) -> String {
    esc(&e.show(f))
}

/// A ratio with its CI, bold when the interval excludes 1.
fn ratio_cell(e: Option<&Estimate>) -> String {
    match e {
        Some(r) if r.value.is_finite() && r.excludes(1.0) => {
            format!("<span class=\"sig\">{}</span>", esc(&fmt_ratio_est(e)))
        }
        _ => esc(&fmt_ratio_est(e)),
    }
}

fn flag_html(c: &ThroughputCell) -> String {
    saturation_flag(c).map_or_else(String::new, |f| {
        format!("<span class=\"flag\">{}</span>", esc(&f))
    })
}

fn legend_for(a: &Analysis, variants: &[&str], stroke: Stroke) -> Vec<LegendEntry> {
    variants
        .iter()
        .map(|v| LegendEntry {
            colour: Some(colour_of(a, v)),
            label: (*v).to_owned(),
            stroke,
        })
        .collect()
}

/// The variants (in the analysis' order) for which `has` holds.
fn variants_with(a: &Analysis, has: impl Fn(&str) -> bool) -> Vec<&str> {
    a.variants
        .iter()
        .map(String::as_str)
        .filter(|v| has(v))
        .collect()
}

fn shell_join(args: &[String]) -> String {
    args.iter()
        .map(|s| {
            if !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                s.clone()
            } else {
                format!("'{}'", s.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------------------------------------

fn summary(h: &mut String, a: &Analysis) {
    let info = &a.info;
    section(h, "summary");
    if info.state != "complete" {
        w!(
            h,
            "<p class=\"warn\">⚠ This run is <b>{}</b>, not complete: the figures below hold only \
             what was measured before it stopped, and cells or repetitions may be missing.</p>\n",
            esc(&info.state)
        );
    }
    let suite = if info.suite.description.is_empty() {
        esc(&info.suite.name)
    } else {
        format!(
            "<b>{}</b> — {}",
            esc(&info.suite.name),
            esc(&info.suite.description)
        )
    };
    let mut rows = vec![
        ("Run", format!("<code>{}</code>", esc(&info.run_id))),
        ("Suite", suite),
        ("State", esc(&info.state)),
        ("Started (UTC)", esc(&info.started_utc)),
        (
            "Finished (UTC)",
            info.finished_utc
                .as_deref()
                .map_or_else(|| "not finished".into(), esc),
        ),
        (
            "Repetitions",
            format!(
                "R = {} (each cell measured R times, the variants in a shuffled order each time)",
                info.suite.repetitions
            ),
        ),
        ("Seed", info.seed.to_string()),
        (
            "Git commit",
            info.git_sha
                .as_deref()
                .map_or_else(|| "unknown".into(), |s| format!("<code>{}</code>", esc(s))),
        ),
    ];
    if let Some(g) = &info.core_guest {
        rows.push(("Core guest (--wasm)", format!("<code>{}</code>", esc(g))));
    }
    rows.push((
        "Command",
        format!("<code>{}</code>", esc(&shell_join(&info.command))),
    ));
    kv(h, &rows);

    if info.variants.is_empty() {
        not_measured(h, "Variants");
    } else {
        h.push_str("<h3>Variants</h3>\n");
        let rows: Vec<Vec<String>> = info
            .variants
            .iter()
            .map(|v| {
                let passed = v.checks.iter().filter(|c| c.ok).count();
                let failed: Vec<String> = v
                    .checks
                    .iter()
                    .filter(|c| !c.ok)
                    .map(|c| format!("{}: {}", c.what, c.detail))
                    .collect();
                let status = if v.status == "measured" {
                    esc(&v.status)
                } else {
                    format!("<span class=\"flag\">⚠ {}</span>", esc(&v.status))
                };
                vec![
                    vname(a, &v.name),
                    status,
                    esc(v.reason.as_deref().unwrap_or("")),
                    if v.checks.is_empty() {
                        "–".into()
                    } else {
                        format!("{passed}/{} passed", v.checks.len())
                    },
                    esc(&failed.join("; ")),
                ]
            })
            .collect();
        table(
            h,
            &["Variant", "Status", "Reason", "Checks", "Failed checks"],
            &rows,
            5,
        );
        let failed: Vec<_> = info
            .variants
            .iter()
            .filter(|v| v.status != "measured")
            .collect();
        if !failed.is_empty() {
            h.push_str("<div class=\"warn\"><b>Variants not (fully) measured:</b><ul>\n");
            for v in failed {
                w!(
                    h,
                    "<li><b>{}</b> ({}): {}</li>\n",
                    esc(&v.name),
                    esc(&v.status),
                    esc(v.reason.as_deref().unwrap_or("no reason recorded"))
                );
            }
            h.push_str("</ul></div>\n");
        }
    }
    end_section(h);
}

/// The gateway study's published figures beside this run's, with its method's differences.
fn study(h: &mut String, a: &Analysis) {
    section(h, "study");
    let file = crate::analyze::study::gateway_study();
    note(
        h,
        &format!(
            "The figures the {} published ({}; {}), beside this run's for the same variant and cell. \
             Each is also given as a ratio to its own run's native server (the study's \
             <code>native</code>, reproduced here by <code>native-close</code>). A study ratio \
             <i>holds</i> when ours is within a factor of two of it; otherwise the gap to native \
             is that many times smaller or larger here. Rows without a study figure are the same \
             job done with wasmlab's own method.",
            esc(&file.name),
            esc(&file.source),
            esc(&file.machine)
        ),
    );
    let comparisons = crate::analyze::study::compare(a, &file);
    if comparisons
        .iter()
        .all(|c| c.rows.iter().all(|r| r.ours.is_none()))
    {
        not_measured(h, "The study's variants and cells");
    }
    let ratio = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), fmt_ratio_plain);
    for c in &comparisons {
        let in_ms = c.title.contains(" ms");
        let num = |v: Option<f64>| match v {
            None => "–".to_owned(),
            Some(v) if in_ms => fmt_ms(v),
            Some(v) => thousands(v),
        };
        w!(
            h,
            "<h3>{}{}</h3>\n",
            esc(&c.title),
            c.ours_at
                .as_deref()
                .map(|at| format!(" <small>({})</small>", esc(at)))
                .unwrap_or_default()
        );
        let rows: Vec<Vec<String>> = c
            .rows
            .iter()
            .map(|r| {
                vec![
                    vname(a, &r.variant),
                    num(r.study),
                    num(r.ours),
                    ratio(r.study_ratio),
                    ratio(r.ours_ratio),
                    r.verdict.as_deref().map_or_else(|| "–".to_owned(), esc),
                ]
            })
            .collect();
        table(h, &crate::analyze::study::COLUMNS, &rows, 1);
    }
    h.push_str(
        "<p class=\"note\"><b>How the study's method differs</b></p>\n<ul class=\"note\">\n",
    );
    for d in &file.method_differences {
        w!(h, "<li>{}</li>\n", esc(d));
    }
    h.push_str("</ul>\n");
    end_section(h);
}

fn fmt_ratio_plain(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// A table of one ratio per (variant, workload) and concurrency level; `flags` adds the load
/// generator's saturation flags (which bias throughput, not capacity).
fn ratio_grid(
    h: &mut String,
    a: &Analysis,
    levels: &[usize],
    pick: fn(&ThroughputCell) -> Option<&Estimate>,
    flags: bool,
) {
    let mut rows = Vec::new();
    let mut any_flag = false;
    for w in &a.workloads {
        for v in a.variants.iter().filter(|v| *v != BASELINE) {
            let cells: Vec<Option<&ThroughputCell>> =
                levels.iter().map(|&c| a.throughput_cell(v, w, c)).collect();
            if cells.iter().all(Option::is_none) {
                continue;
            }
            let mut row = vec![vname(a, v), esc(w)];
            for c in cells {
                row.push(match c {
                    None => "–".into(),
                    Some(c) if !flags => ratio_cell(pick(c)),
                    Some(c) => {
                        let mut out = ratio_cell(pick(c));
                        let flag = flag_html(c);
                        if !flag.is_empty() {
                            out.push_str("<br>");
                            out.push_str(&flag);
                        }
                        // A saturated baseline understates native, so the ratio too.
                        if let Some(f) = a
                            .throughput_cell(BASELINE, w, c.connections)
                            .and_then(saturation_flag)
                        {
                            w!(
                                out,
                                "<br><span class=\"flag\">{BASELINE}: {}</span>",
                                esc(&f)
                            );
                        }
                        any_flag |= out.contains("class=\"flag\"");
                        out
                    }
                });
            }
            rows.push(row);
        }
    }
    if rows.is_empty() {
        not_measured(h, "These ratios");
    } else {
        let head: Vec<String> = ["Variant".to_owned(), "Workload".to_owned()]
            .into_iter()
            .chain(levels.iter().map(|c| format!("{c} connections")))
            .collect();
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        table(h, &head, &rows, 2);
    }
    if flags && (any_flag || a.throughput.iter().any(|c| c.generator_saturated_runs > 0)) {
        note(h, &esc(&saturation_note()));
    }
}

fn ratios(h: &mut String, a: &Analysis) {
    section(h, "ratios");
    if a.throughput.is_empty() && a.warm.is_empty() && a.cold_start.is_empty() {
        not_measured(h, "Ratios to native");
        end_section(h);
        return;
    }
    note(
        h,
        "Every ratio is a variant's figure over native's, shown as <i>ratio [95% CI] n</i>. \
         Throughput: mean req/s over native's, paired by repetition (&gt; 1: serves more than \
         native). Warm latency: mean of the runs' p50 over native's, paired by repetition; cold \
         start: median launch time over native's, launches resampled on each side (&gt; 1: \
         slower than native). <b>Bold</b>: the interval excludes 1.",
    );
    if !has_baseline(a) {
        not_measured(h, "The native baseline (so no ratios)");
    }
    let levels = connection_levels(a);

    // Capacity (the headline), then throughput: one row per (variant, workload), one column
    // per level.
    h.push_str("<h3>Capacity (responses per CPU-second of the server) × native</h3>\n");
    note(
        h,
        "The server's own cost: responses over the CPU-seconds of the variant's processes, over \
         native's in the same cell (&gt; 1: cheaper than native). It holds when the load \
         generator, not the server, set the pace, which the throughput ratio below does not.",
    );
    ratio_grid(h, a, &levels, |c| c.capacity_ratio.as_ref(), false);
    h.push_str("<h3>Throughput (req/s) × native</h3>\n");
    ratio_grid(h, a, &levels, |c| c.ratio_to_native.as_ref(), true);

    // Warm p50: one row per variant, one column per workload.
    h.push_str("<h3>Warm latency p50 × native (one connection)</h3>\n");
    let warm_workloads: Vec<&String> = a
        .workloads
        .iter()
        .filter(|w| a.warm.iter().any(|r| &r.workload == *w))
        .collect();
    let mut rows = Vec::new();
    for v in a.variants.iter().filter(|v| *v != BASELINE) {
        if !a.warm.iter().any(|r| &r.variant == v) {
            continue;
        }
        let mut row = vec![vname(a, v)];
        for w in &warm_workloads {
            let r = a.warm.iter().find(|r| &r.variant == v && &r.workload == *w);
            row.push(r.map_or_else(|| "–".into(), |r| ratio_cell(r.ratio_to_native.as_ref())));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        not_measured(h, "Warm latency ratios");
    } else {
        let head: Vec<&str> = std::iter::once("Variant")
            .chain(warm_workloads.iter().map(|w| w.as_str()))
            .collect();
        table(h, &head, &rows, 1);
    }

    // Cold start p50.
    h.push_str("<h3>Cold start p50 × native</h3>\n");
    let rows: Vec<Vec<String>> = a
        .cold_start
        .iter()
        .filter(|r| r.variant != BASELINE)
        .map(|r| {
            vec![
                vname(a, &r.variant),
                r.n.to_string(),
                ratio_cell(r.ratio_to_native.as_ref()),
            ]
        })
        .collect();
    if rows.is_empty() {
        not_measured(h, "Cold-start ratios");
    } else {
        table(
            h,
            &["Variant", "Launches n", "× native p50 [95% CI] n"],
            &rows,
            1,
        );
    }
    end_section(h);
}

fn throughput(h: &mut String, a: &Analysis) {
    section(h, "throughput");
    if a.throughput.is_empty() {
        not_measured(h, "Throughput");
        end_section(h);
        return;
    }
    let levels = connection_levels(a);
    note(
        h,
        &format!(
            "Closed loop: C connections each send a request, wait for the whole response and \
             send the next, for {} s after {} s of warm-up. Lines: mean req/s over the runs; \
             whiskers: its 95% bootstrap interval. Latency percentiles are over all runs' \
             responses together.",
            a.info.suite.duration_secs, a.info.suite.warmup_secs
        ),
    );
    let x_scale = if levels.len() > 2 {
        Scale::Log
    } else {
        Scale::Linear
    };
    let mut any_flag = false;
    for w in &a.workloads {
        let cells: Vec<&ThroughputCell> =
            a.throughput.iter().filter(|c| &c.workload == w).collect();
        if cells.is_empty() {
            continue;
        }
        w!(h, "<h3>{}</h3>\n", esc(w));
        let mut p = Plot::new(
            Axis::new("connections", x_scale)
                .ticks(levels.iter().map(|&c| (c as f64, c.to_string())).collect()),
            Axis::new("req/s", Scale::LinearFromZero),
        );
        let vs = variants_with(a, |v| cells.iter().any(|c| c.variant == v));
        for v in &vs {
            let mut mine: Vec<&&ThroughputCell> =
                cells.iter().filter(|c| c.variant == *v).collect();
            mine.sort_by_key(|c| c.connections);
            let colour = Some(colour_of(a, v));
            p.lines.push(Line {
                colour,
                points: mine
                    .iter()
                    .map(|c| (c.connections as f64, c.rps.value))
                    .collect(),
                stroke: Stroke::Solid,
                markers: true,
            });
            p.whiskers
                .extend(mine.iter().filter(|c| c.rps.n > 1).map(|c| Whisker {
                    colour,
                    vertical: true,
                    at: c.connections as f64,
                    lo: c.rps.lo,
                    hi: c.rps.hi,
                }));
        }
        p.legend = legend_for(a, &vs, Stroke::Solid);
        figure(h, &format!("{w}: req/s vs connections"), &p);

        let mut rows = Vec::new();
        for v in &vs {
            let mut mine: Vec<&&ThroughputCell> =
                cells.iter().filter(|c| c.variant == *v).collect();
            mine.sort_by_key(|c| c.connections);
            for c in mine {
                let flag = flag_html(c);
                any_flag |= !flag.is_empty();
                rows.push(vec![
                    vname(a, v),
                    c.connections.to_string(),
                    est(&c.rps, fmt_rps),
                    if *v == BASELINE {
                        "1 (baseline)".into()
                    } else {
                        ratio_cell(c.capacity_ratio.as_ref())
                    },
                    if *v == BASELINE {
                        "1 (baseline)".into()
                    } else {
                        ratio_cell(c.ratio_to_native.as_ref())
                    },
                    fmt_ms(c.latency.p50),
                    fmt_ms(c.latency.p99),
                    thousands(c.responses as f64),
                    esc(&fmt_errors(&c.errors)),
                    percent(c.generator_busy),
                    flag,
                ]);
            }
        }
        table(
            h,
            &[
                "Variant",
                "Connections",
                "req/s mean [95% CI] n",
                "× native per CPU [95% CI] n",
                "× native req/s [95% CI] n",
                "p50 ms",
                "p99 ms",
                "Responses (all runs)",
                "Errors",
                "Generator busy",
                "Flag",
            ],
            &rows,
            1,
        );
    }
    if any_flag {
        note(h, &esc(&saturation_note()));
    }
    end_section(h);
}

/// Label of the percentile at x = log10(1 / (1 - p)) = d.
fn percentile_label(d: i32) -> String {
    match d {
        i32::MIN..=0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        _ => format!("99.{}%", "9".repeat((d - 2) as usize)),
    }
}

/// A latency spectrum plot: x = 1/(1-p) on a log axis (so each decade is one more nine), the
/// maximum one decade after the last percentile the samples tell.
fn spectrum_plot(a: &Analysis, spectra: &[&Spectrum]) -> Plot {
    let xs = |p: f64| (1.0 / (1.0 - p)).log10();
    let last = spectra
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|(p, v)| *p < 1.0 && p.is_finite() && v.is_finite())
        .map(|(p, _)| xs(*p))
        .fold(0.0f64, f64::max)
        .min(12.0);
    let max_at = (last + 1e-9).floor() + 1.0;
    let mut ticks: Vec<(f64, String)> = (0..max_at as i32)
        .map(|d| (f64::from(d), percentile_label(d)))
        .collect();
    ticks.push((max_at, "max".into()));
    let mut p = Plot::new(
        Axis::new("percentile", Scale::Linear).ticks(ticks),
        Axis::new("latency ms", Scale::Log),
    );
    let mut vs = Vec::new();
    for s in spectra {
        p.lines.push(Line {
            colour: Some(colour_of(a, &s.variant)),
            points: s
                .points
                .iter()
                .filter(|(q, _)| q.is_finite() && (0.0..=1.0).contains(q))
                .map(|&(q, v)| (if q >= 1.0 { max_at } else { xs(q) }, v))
                .filter(|(x, _)| *x <= max_at)
                .collect(),
            stroke: Stroke::Solid,
            markers: s.points.len() <= 12,
        });
        vs.push(s.variant.as_str());
    }
    p.legend = legend_for(a, &vs, Stroke::Solid);
    p
}

/// The spectra of `kind` for workload `w`, in the variants' order.
/// One spectrum plot per workload for `kind`; `caption(workload, connections, counts)`.
fn spectra_figures(
    h: &mut String,
    a: &Analysis,
    kind: Kind,
    what: &str,
    caption: impl Fn(&str, usize, &str) -> String,
) {
    let mut drew = false;
    for w in &a.workloads {
        let sp = spectra_of(a, kind, w);
        if sp.is_empty() {
            continue;
        }
        drew = true;
        let n: Vec<String> = sp
            .iter()
            .map(|s| format!("{} n={}", s.variant, thousands(s.count as f64)))
            .collect();
        figure(
            h,
            &caption(w, sp[0].connections, &n.join(", ")),
            &spectrum_plot(a, &sp),
        );
    }
    if !drew {
        not_measured(h, what);
    }
}

fn spectra_of<'a>(a: &'a Analysis, kind: Kind, w: &str) -> Vec<&'a Spectrum> {
    let mut v: Vec<&Spectrum> = a
        .spectra
        .iter()
        .filter(|s| s.kind == kind && s.workload == w)
        .collect();
    v.sort_by_key(|s| colour_of(a, &s.variant));
    v
}

fn latency(h: &mut String, a: &Analysis) {
    section(h, "latency");
    if a.spectra.is_empty() && a.warm.is_empty() {
        not_measured(h, "Latency");
        end_section(h);
        return;
    }
    note(
        h,
        "Latency percentile spectra: x is the percentile on a 1/(1−p) log axis, so every step \
         right adds a nine (90%, 99%, 99.9%, …) and the tail is as wide as the body; the last \
         point is the maximum. y: latency in ms, log scale. Each line merges the histograms of \
         all runs of the cell; it stops at the highest percentile its sample count can tell.",
    );

    h.push_str("<h3>Warm (one connection, sequential requests)</h3>\n");
    spectra_figures(h, a, Kind::Warm, "Warm latency spectra", |w, _, n| {
        format!("{w}: warm latency spectrum ({n} requests)")
    });
    match a.reference_connections {
        Some(c) => w!(h, "<h3>Under load ({c} connections, closed loop)</h3>\n"),
        None => h.push_str("<h3>Under load (closed loop)</h3>\n"),
    }
    spectra_figures(
        h,
        a,
        Kind::Throughput,
        "Latency spectra under load",
        |w, conns, n| format!("{w}: latency spectrum at {conns} connections ({n} responses)"),
    );

    h.push_str("<h3>Warm latency</h3>\n");
    if a.warm.is_empty() {
        not_measured(h, "Warm latency");
    } else {
        let rows: Vec<Vec<String>> = a
            .warm
            .iter()
            .map(|r| {
                vec![
                    vname(a, &r.variant),
                    esc(&r.workload),
                    r.n.to_string(),
                    thousands(r.requests as f64),
                    fmt_ms(r.latency.p50),
                    fmt_ms(r.latency.p90),
                    fmt_ms(r.latency.p99),
                    fmt_ms(r.latency.p99_9),
                    fmt_ms(r.latency.max),
                    est(&r.p50, fmt_ms),
                    if r.variant == BASELINE {
                        "1 (baseline)".into()
                    } else {
                        ratio_cell(r.ratio_to_native.as_ref())
                    },
                    esc(&fmt_errors(&r.errors)),
                ]
            })
            .collect();
        table(
            h,
            &[
                "Variant",
                "Workload",
                "Runs n",
                "Requests",
                "p50 ms",
                "p90 ms",
                "p99 ms",
                "p99.9 ms",
                "max ms",
                "Mean of run p50s ms [95% CI] n",
                "× native p50 [95% CI] n",
                "Errors",
            ],
            &rows,
            2,
        );
        note(
            h,
            "p50 … max: over all runs' requests together; the mean of run p50s and its ratio \
             carry the run-to-run spread.",
        );
    }
    end_section(h);
}

fn cold_start(h: &mut String, a: &Analysis) {
    section(h, "cold-start");
    if a.cold_start.is_empty() {
        not_measured(h, "Cold start");
        end_section(h);
        return;
    }
    note(
        h,
        "Each launch: from the spawn of the server process to the first complete 200 on GET /. \
         The plot shows each variant's empirical distribution (ECDF): the share of launches \
         that had answered by x ms.",
    );
    let values: Vec<f64> = a
        .cold_start
        .iter()
        .flat_map(|r| r.values_ms.iter().copied())
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(*v), h.max(*v)));
    let x_scale = if lo > 0.0 && hi / lo > 10.0 {
        Scale::Log
    } else {
        Scale::Linear
    };
    let mut p = Plot::new(
        Axis::new("ms from spawn to first 200", x_scale),
        Axis::new("share of launches", Scale::Linear).ticks(
            [0.0, 0.25, 0.5, 0.75, 1.0]
                .iter()
                .map(|&f| (f, format!("{:.0}%", f * 100.0)))
                .collect(),
        ),
    );
    let mut vs = Vec::new();
    for r in &a.cold_start {
        let mut v: Vec<f64> = r
            .values_ms
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let mut pts = Vec::with_capacity(v.len() * 2);
        for (i, x) in v.iter().enumerate() {
            pts.push((*x, i as f64 / n));
            pts.push((*x, (i + 1) as f64 / n));
        }
        p.lines.push(Line {
            colour: Some(colour_of(a, &r.variant)),
            points: pts,
            stroke: Stroke::Solid,
            markers: false,
        });
        vs.push(r.variant.as_str());
    }
    p.legend = legend_for(a, &vs, Stroke::Solid);
    figure(
        h,
        "Cold start: distribution of spawn → first 200 (ECDF)",
        &p,
    );

    let rows: Vec<Vec<String>> = a
        .cold_start
        .iter()
        .map(|r| {
            vec![
                vname(a, &r.variant),
                r.n.to_string(),
                fmt_ms(r.first_200.p50),
                fmt_ms(r.first_200.p90),
                fmt_ms(r.first_200.p99),
                fmt_ms(r.first_200.min),
                fmt_ms(r.first_200.max),
                r.listening
                    .map_or_else(|| "–".to_owned(), |l| fmt_ms(l.p50)),
                fmt_ms(r.connected.p50),
                fmt_ms(r.first_byte.p50),
                if r.variant == BASELINE {
                    "1 (baseline)".into()
                } else {
                    ratio_cell(r.ratio_to_native.as_ref())
                },
            ]
        })
        .collect();
    table(
        h,
        &[
            "Variant",
            "Launches n",
            "first 200 p50 ms",
            "p90 ms",
            "p99 ms",
            "min ms",
            "max ms",
            "listening p50 ms",
            "connected p50 ms",
            "first byte p50 ms",
            "× native p50 [95% CI] n",
        ],
        &rows,
        1,
    );
    note(
        h,
        "Phases (p50 over the launches, from the spawn): <i>listening</i> — the server printed \
         that its socket is bound (– for a variant started on a port the lab picked, which \
         prints nothing: a container, a server of yours); <i>connected</i> — the first TCP \
         connect succeeded; <i>first byte</i> — the first byte of the first 200 arrived.",
    );
    end_section(h);
}

fn open_loop(h: &mut String, a: &Analysis) {
    section(h, "open-loop");
    if a.open_loop.is_empty() {
        not_measured(h, "Open loop");
        end_section(h);
        return;
    }
    note(
        h,
        "Requests are due at a constant rate (a fraction of the variant's own closed-loop \
         maximum for the workload). <i>Corrected</i> latency counts from when each request was \
         due, so queueing in front of a slow server shows; <i>uncorrected</i> counts from when \
         it was actually sent (what a closed-loop tool reports). Solid: corrected p99; dashed: \
         uncorrected p99.",
    );
    for w in &a.workloads {
        let pts: Vec<_> = a.open_loop.iter().filter(|o| &o.workload == w).collect();
        if pts.is_empty() {
            continue;
        }
        let mut p = Plot::new(
            Axis::new("offered req/s", Scale::LinearFromZero),
            Axis::new("latency ms", Scale::Log),
        );
        let vs = variants_with(a, |v| pts.iter().any(|o| o.variant == v));
        for v in &vs {
            let mut mine: Vec<_> = pts.iter().filter(|o| o.variant == *v).collect();
            mine.sort_by(|x, y| x.offered_rps.total_cmp(&y.offered_rps));
            let colour = Some(colour_of(a, v));
            p.lines.push(Line {
                colour,
                points: mine
                    .iter()
                    .map(|o| (o.offered_rps, o.corrected.p99))
                    .collect(),
                stroke: Stroke::Solid,
                markers: true,
            });
            p.lines.push(Line {
                colour,
                points: mine
                    .iter()
                    .map(|o| (o.offered_rps, o.uncorrected.p99))
                    .collect(),
                stroke: Stroke::Dashed,
                markers: false,
            });
        }
        p.legend = legend_for(a, &vs, Stroke::Solid);
        p.legend.push(LegendEntry {
            colour: None,
            label: "corrected p99".into(),
            stroke: Stroke::Solid,
        });
        p.legend.push(LegendEntry {
            colour: None,
            label: "uncorrected p99".into(),
            stroke: Stroke::Dashed,
        });
        w!(h, "<h3>{}</h3>\n", esc(w));
        figure(h, &format!("{w}: p99 latency vs offered load"), &p);
    }
    let mut rows = Vec::new();
    for o in &a.open_loop {
        rows.push(vec![
            vname(a, &o.variant),
            esc(&o.workload),
            percent(o.fraction),
            o.n.to_string(),
            o.connections.to_string(),
            fmt_rps(o.offered_rps),
            fmt_rps(o.achieved_rps),
            fmt_ms(o.corrected.p50),
            fmt_ms(o.corrected.p99),
            fmt_ms(o.corrected.max),
            fmt_ms(o.uncorrected.p50),
            fmt_ms(o.uncorrected.p99),
            thousands(o.intended as f64),
            thousands(o.sent as f64),
            thousands(o.dropped as f64),
            thousands(o.late as f64),
            esc(&fmt_errors(&o.errors)),
        ]);
    }
    table(
        h,
        &[
            "Variant",
            "Workload",
            "Load (of max)",
            "Runs n",
            "Connections",
            "Offered req/s",
            "Achieved req/s",
            "Corrected p50 ms",
            "Corrected p99 ms",
            "Corrected max ms",
            "Uncorrected p50 ms",
            "Uncorrected p99 ms",
            "Intended",
            "Sent",
            "Dropped",
            "Late",
            "Errors",
        ],
        &rows,
        2,
    );
    note(
        h,
        &format!(
            "Offered and achieved: means over the n runs; latency, intended, sent, dropped \
             (due but no connection free in time) and late (sent more than {} ms after due): \
             all runs together.",
            wasmlab_load::LATE_AFTER.as_millis()
        ),
    );
    end_section(h);
}

/// One group of horizontal bars (a workload), one bar per variant.
struct BarGroup<'a> {
    label: &'a str,
    bars: Vec<BarValue<'a>>,
}

/// One variant's bar: its value and 95% CI.
struct BarValue<'a> {
    variant: &'a str,
    value: f64,
    ci: Option<(f64, f64)>,
}

impl<'a> BarValue<'a> {
    /// The estimate's value, and its interval when more than one run is behind it.
    fn of(variant: &'a str, e: &Estimate) -> Self {
        Self {
            variant,
            value: e.value,
            ci: (e.n > 1).then_some((e.lo, e.hi)),
        }
    }
}

/// Horizontal bars grouped by workload, coloured by variant, with CI whiskers and values.
fn grouped_bars(
    a: &Analysis,
    x_desc: &str,
    groups: &[BarGroup<'_>],
    fmt: fn(f64) -> String,
) -> Plot {
    let mut p = Plot::new(
        Axis::new(x_desc, Scale::LinearFromZero),
        Axis::new("", Scale::Linear),
    );
    let mut ticks = Vec::new();
    let mut row = 0.0f64;
    let mut right = 0.0f64;
    let mut vs: Vec<&str> = Vec::new();
    for g in groups {
        let first = row;
        for &BarValue {
            variant: v,
            value,
            ci,
        } in &g.bars
        {
            let y = -row;
            let colour = Some(colour_of(a, v));
            if !vs.contains(&v) {
                vs.push(v);
            }
            let value = if value.is_finite() { value } else { 0.0 };
            p.bars.push(Bar {
                colour,
                x0: 0.0,
                x1: value,
                y0: y - 0.38,
                y1: y + 0.38,
            });
            let mut end = value;
            if let Some((lo, hi)) = ci.filter(|(l, h)| l.is_finite() && h.is_finite() && h > l) {
                p.whiskers.push(Whisker {
                    colour: None,
                    vertical: false,
                    at: y,
                    lo,
                    hi,
                });
                end = end.max(hi);
            }
            right = right.max(end);
            p.labels.push((end, y, fmt(value)));
            row += 1.0;
        }
        ticks.push((-(first + row - 1.0) / 2.0, g.label.to_owned()));
        row += 0.6;
    }
    // Room right of the longest bar for its value, and the values placed just after the bars.
    let gap = if right > 0.0 { right * 0.015 } else { 0.02 };
    for l in &mut p.labels {
        l.0 += gap;
    }
    p.extent
        .push((if right > 0.0 { right * 1.22 } else { 1.0 }, 0.0));
    p.y = Axis::new("", Scale::Linear).ticks(ticks);
    p.height = ((row * 20.0) as u32 + 70).clamp(150, 900);
    vs.sort_by_key(|v| colour_of(a, v));
    p.legend = legend_for(a, &vs, Stroke::Box);
    p
}

fn resources(h: &mut String, a: &Analysis) {
    section(h, "resources");
    let mut rows = Vec::new();
    let mut rss_groups = Vec::new();
    let mut cpu_groups = Vec::new();
    for w in &a.workloads {
        let mut rss = BarGroup {
            label: w,
            bars: Vec::new(),
        };
        let mut cpu = BarGroup {
            label: w,
            bars: Vec::new(),
        };
        for v in &a.variants {
            let Some(c) = a.best_cell(v, w) else { continue };
            let Some(r) = &c.resources else { continue };
            rows.push(vec![
                vname(a, v),
                esc(w),
                c.connections.to_string(),
                est(&c.rps, fmt_rps),
                mib(r.rss_peak_kib as f64),
                mib(r.rss_mean_kib),
                format!("{:.2}", r.cpu_secs),
                est(&r.cpu_secs_per_1k, cpu_per_1k),
                c.runs.len().to_string(),
            ]);
            rss.bars.push(BarValue {
                variant: v,
                value: r.rss_peak_kib as f64 / 1024.0,
                ci: None,
            });
            let e = &r.cpu_secs_per_1k;
            cpu.bars.push(BarValue::of(v, e));
        }
        if !rss.bars.is_empty() {
            rss_groups.push(rss);
            cpu_groups.push(cpu);
        }
    }
    if rows.is_empty() {
        not_measured(h, "Resources of the variants' process trees");
    } else {
        note(
            h,
            "For each variant and workload, the closed-loop cell where it served the most (its \
             maximum). RSS: sum over the variant's whole process tree, sampled during the cell \
             (peak over the runs, and mean). CPU: user + system seconds of the tree, children \
             included, per run and per 1,000 responses (mean over the runs, 95% CI).",
        );
        table(
            h,
            &[
                "Variant",
                "Workload",
                "At connections",
                "req/s [95% CI] n",
                "RSS peak MiB",
                "RSS mean MiB",
                "CPU s per run",
                "CPU s per 1k requests [95% CI] n",
                "Runs n",
            ],
            &rows,
            2,
        );
        figure(
            h,
            "RSS peak of the process tree (MiB), at each variant's best cell",
            &grouped_bars(a, "RSS peak MiB", &rss_groups, |v| super::grouped(v, 1)),
        );
        figure(
            h,
            "CPU seconds per 1,000 requests, at each variant's best cell (whiskers: 95% CI)",
            &grouped_bars(a, "CPU s per 1k requests", &cpu_groups, cpu_per_1k),
        );
    }

    h.push_str("<h3>Artifact sizes</h3>\n");
    if a.info.artifacts.is_empty() {
        not_measured(h, "Artifact sizes");
    } else {
        let rows: Vec<Vec<String>> = a
            .info
            .artifacts
            .iter()
            .map(|x| {
                vec![
                    esc(&x.name),
                    fmt_bytes(x.bytes),
                    thousands(x.bytes as f64),
                    format!("<code>{}</code>", esc(&x.path)),
                ]
            })
            .collect();
        table(h, &["Artifact", "Size", "Bytes", "Path"], &rows, 1);
    }
    end_section(h);
}

fn cpu_per_1k(v: f64) -> String {
    if !v.is_finite() {
        "–".into()
    } else if v.abs() < 0.1 {
        format!("{v:.4}")
    } else {
        format!("{v:.3}")
    }
}

fn capacity(h: &mut String, a: &Analysis) {
    section(h, "capacity");
    let mut rows = Vec::new();
    let mut groups = Vec::new();
    for w in &a.workloads {
        let mut g = BarGroup {
            label: w,
            bars: Vec::new(),
        };
        for v in &a.variants {
            let Some(c) = a.best_cell(v, w) else { continue };
            let Some(r) = &c.resources else { continue };
            let e = &r.rps_per_core;
            if e.n == 0 {
                continue;
            }
            rows.push(vec![
                vname(a, v),
                esc(w),
                c.connections.to_string(),
                est(e, fmt_rps),
                if e.value > 0.0 && e.value.is_finite() {
                    format!("{:.2}", 10_000.0 / e.value)
                } else {
                    "–".into()
                },
            ]);
            g.bars.push(BarValue::of(v, e));
        }
        if !g.bars.is_empty() {
            groups.push(g);
        }
    }
    if rows.is_empty() {
        not_measured(h, "Capacity (req/s per core)");
        end_section(h);
        return;
    }
    note(
        h,
        "req/s one core sustains = responses / CPU-seconds of the variant's process tree (the \
         wasmCloud study's sizing rule): cores needed = target req/s ÷ this. Taken at each \
         variant's best closed-loop cell for the workload; mean over the runs with its 95% CI.",
    );
    figure(
        h,
        "Capacity: req/s one core sustains (whiskers: 95% CI)",
        &grouped_bars(a, "req/s per core", &groups, thousands),
    );
    table(
        h,
        &[
            "Variant",
            "Workload",
            "At connections",
            "req/s per core [95% CI] n",
            "Cores for 10,000 req/s",
        ],
        &rows,
        2,
    );
    end_section(h);
}

fn environment(h: &mut String, a: &Analysis) {
    section(h, "environment");
    let m = &a.info.machine;
    let s = &a.info.suite;
    let opt = |o: &Option<String>| o.as_deref().map_or_else(|| "unknown".into(), esc);
    kv(
        h,
        &[
            ("CPU", esc(&m.cpu_model)),
            ("Cores", m.cores.to_string()),
            (
                "Memory",
                m.memory_kib.map_or_else(
                    || "unknown".into(),
                    |k| format!("{} GiB", super::grouped(k as f64 / 1024.0 / 1024.0, 1)),
                ),
            ),
            ("Kernel", esc(&m.kernel)),
            ("CPUs", esc(&a.info.cpus.describe())),
            (
                "CPU SHA extensions",
                format!(
                    "{} (SHA-256 of /compute: {})",
                    if m.cpu_sha_extensions { "yes" } else { "no" },
                    esc(&m.compute_sha256)
                ),
            ),
            ("wasmlab", esc(&m.tools.wasmlab)),
            ("rustc", opt(&m.tools.rustc)),
            ("wasmtime", opt(&m.tools.wasmtime)),
            ("hyper", opt(&m.tools.hyper)),
            ("tokio", opt(&m.tools.tokio)),
        ],
    );
    h.push_str("<h3>Suite parameters</h3>\n");
    let list = |v: &[String]| esc(&v.join(", "));
    let mut rows = vec![
        ("Suite", esc(&s.name)),
        ("Variants", list(&s.variants)),
        ("Workloads", list(&s.workloads)),
        (
            "Concurrency levels",
            s.connections
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("Duration per cell", format!("{} s", s.duration_secs)),
        ("Warm-up per cell", format!("{} s", s.warmup_secs)),
        ("Load generator threads", s.load_threads.to_string()),
        ("Repetitions", s.repetitions.to_string()),
        ("Request timeout", format!("{} s", s.timeout_secs)),
        ("Start timeout", format!("{} s", s.start_timeout_secs)),
        ("Echo body", format!("{} bytes", s.echo_body_bytes)),
    ];
    rows.push((
        "Cold starts",
        match &s.cold_start {
            Some(c) => format!(
                "{} launches per variant ({})",
                c.runs,
                list(&s.cold_start_variants())
            ),
            None => "none".into(),
        },
    ));
    rows.push((
        "Warm latency",
        match &s.warm {
            Some(wm) => format!(
                "{} s after {} s warm-up, one connection ({})",
                wm.duration_secs,
                wm.warmup_secs,
                list(&s.warm_workloads())
            ),
            None => "none".into(),
        },
    ));
    rows.push((
        "Open loop",
        match &s.open_loop {
            Some(o) => format!(
                "{} of each variant's maximum, {} s, {} connections ({})",
                o.fractions
                    .iter()
                    .map(|f| format!("{:.0}%", f * 100.0))
                    .collect::<Vec<_>>()
                    .join(", "),
                o.duration_secs,
                o.connections,
                list(&s.open_loop_workloads())
            ),
            None => "none".into(),
        },
    ));
    kv(h, &rows);

    h.push_str("<h3>Variant order per repetition</h3>\n");
    if a.info.orders.is_empty() {
        not_measured(h, "Variant orders");
    } else {
        let rows: Vec<Vec<String>> = a
            .info
            .orders
            .iter()
            .enumerate()
            .map(|(r, o)| vec![r.to_string(), esc(&o.join(" → "))])
            .collect();
        table(h, &["Repetition", "Order"], &rows, 2);
        note(
            h,
            &format!(
                "Shuffled with seed {} + repetition, so drift of the machine over the run does \
                 not favour a variant.",
                a.info.seed
            ),
        );
    }
    end_section(h);
}

fn method(h: &mut String) {
    section(h, "method");
    let paras = [
        "<b>Ratios.</b> Throughput and warm-latency ratios are ratios of means over \
         repetitions, paired by repetition (runs resampled together, so drift of the machine \
         between repetitions cancels), with a percentile-bootstrap 95% interval from 10,000 \
         resamples; n is the number of repetitions both sides measured. Cold-start ratios are \
         ratios of medians, each side's launches resampled on their own.",
        "<b>Throughput.</b> Closed loop over HTTP/1.1 keep-alive: each connection sends the next \
         request when the previous response is complete. A cell is measured once per repetition \
         after a warm-up; the figure is the mean over repetitions with its bootstrap interval. A \
         generator flagged as saturated was busy for most of the run, so the server may be \
         faster than measured.",
        "<b>Latency spectra.</b> HDR histograms (3 significant digits) of every run of a cell \
         merged; percentiles 1 − 10^(−k/10) as far as the number of samples can tell, then the \
         maximum.",
        "<b>Cold start.</b> One launch per sample: spawn the server, poll the port, time the \
         first complete 200; each launch a fresh process.",
        "<b>Open loop.</b> Constant arrival rate at fractions of the variant's own closed-loop \
         maximum (wrk2's semantics); latency corrected for coordinated omission, from each \
         request's intended send time.",
        "<b>Resources and capacity.</b> RSS and CPU time of the variant's whole process tree, \
         sampled while each cell ran; req/s per core = responses ÷ CPU-seconds.",
    ];
    for p in paras {
        w!(h, "<p>{p}</p>\n");
    }
    h.push_str(
        "<p class=\"note\">For the full method, see docs/method.md in the wasmlab repository.</p>\n",
    );
    end_section(h);
}

#[cfg(test)]
mod tests {
    #[test]
    fn report_escapes_and_labels() {
        assert_eq!(
            super::esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(super::percentile_label(0), "0%");
        assert_eq!(super::percentile_label(3), "99.9%");
        assert_eq!(super::percentile_label(5), "99.999%");
        assert_eq!(
            super::shell_join(&["wasmlab".into(), "run".into(), "a b".into()]),
            "wasmlab run 'a b'"
        );
    }
}
