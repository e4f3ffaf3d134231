//! report.html: one offline file, inline CSS and SVG, no scripts and no network references.
//!
//! The markup is report.html.j2, rendered once by minijinja with HTML auto-escaping. This module
//! builds its view model: every figure formatted to text by the helpers in report/mod.rs, cells
//! that need markup (swatch, bold ratio, flags, code) as structured [`Cell`]s, and the plotters
//! SVGs, the only markup made in Rust, passed as safe strings.

use minijinja::Value;
use serde::Serialize;

use super::plot::{self, Axis, Bar, LegendEntry, Line, Plot, Scale, Stroke, Whisker};
use super::{
    colour_of, connection_levels, fmt_bytes, fmt_errors, fmt_ms, fmt_ratio_est, fmt_rps,
    has_baseline, mib, percent, thousands,
};
use crate::analyze::stats::Estimate;
use crate::analyze::{Analysis, BASELINE, Spectrum, ThroughputCell};
use crate::record::model::Kind;

/// Its name ends in `.html.j2`, so minijinja's default callback turns HTML auto-escaping on.
const TEMPLATE_NAME: &str = "report.html.j2";
const TEMPLATE: &str = include_str!("report.html.j2");

pub fn render(a: &Analysis) -> anyhow::Result<String> {
    let mut env = minijinja::Environment::new();
    // Lines that hold only a block tag leave nothing behind: one table row stays one line.
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    env.add_template(TEMPLATE_NAME, TEMPLATE)?;
    Ok(env.get_template(TEMPLATE_NAME)?.render(Report::new(a))?)
}

// --- The view model --------------------------------------------------------------------------

/// The swatch of a variant the run did not have: light grey, no palette colour.
const NOT_IN_RUN_SWATCH: &str = "#dddddd";

/// A table cell. The template escapes `text` and adds the markup the other fields ask for.
#[derive(Serialize, Default)]
struct Cell {
    text: String,
    /// A CSS colour: the variant's swatch before the text.
    swatch: Option<String>,
    /// The class of a span around the text: `sig` (bold: the interval excludes 1) or `flag`.
    span: Option<&'static str>,
    /// The text is code (a path).
    code: bool,
    /// Saturation flags, each on a line of its own after the text.
    flags: Vec<Flag>,
}

impl Cell {
    fn code(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            code: true,
            ..Self::default()
        }
    }

    /// The variant's name with its colour swatch; a variant this run did not have (a study's,
    /// in the study tables) gets a neutral one, not a colour of the run's.
    fn variant(a: &Analysis, v: &str) -> Self {
        let in_run = a.variants.iter().any(|x| x == v);
        Self {
            text: v.to_owned(),
            swatch: Some(if in_run {
                plot::css_colour(colour_of(a, v))
            } else {
                NOT_IN_RUN_SWATCH.to_owned()
            }),
            ..Self::default()
        }
    }

    /// A ratio with its CI, bold when the interval excludes 1.
    fn ratio(e: Option<&Estimate>) -> Self {
        let sig = matches!(e, Some(r) if r.value.is_finite() && r.excludes(1.0));
        Self {
            text: fmt_ratio_est(e),
            span: sig.then_some("sig"),
            ..Self::default()
        }
    }

    /// A variant's ratio, or "1 (baseline)" in native's own row.
    fn ratio_of(variant: &str, e: Option<&Estimate>) -> Self {
        if variant == BASELINE {
            "1 (baseline)".into()
        } else {
            Self::ratio(e)
        }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Self {
            text,
            ..Self::default()
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        text.to_owned().into()
    }
}

/// "⚠ generator saturated in k/n runs", as data: the template writes the sentence (its slash is
/// markup there, which the engine's escaping would otherwise turn into an entity).
#[derive(Serialize)]
struct Flag {
    /// Whose cell it is, when not the row's own (native's, under a variant's ratio).
    whose: Option<&'static str>,
    saturated: usize,
    runs: usize,
}

impl Flag {
    /// The cell's flag, if its generator saturated in any run.
    fn of(c: &ThroughputCell, whose: Option<&'static str>) -> Option<Self> {
        (c.generator_saturated_runs > 0).then_some(Self {
            whose,
            saturated: c.generator_saturated_runs,
            runs: c.runs.len(),
        })
    }
}

/// A table: `head` is text; the first `left` columns are left-aligned.
#[derive(Serialize)]
struct Table {
    head: Vec<String>,
    left: usize,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    fn new(head: &[&str], left: usize, rows: Vec<Vec<Cell>>) -> Self {
        Self {
            head: head.iter().map(|h| (*h).to_owned()).collect(),
            left,
            rows,
        }
    }
}

/// A plot with its caption; without an SVG the template says why there is none.
#[derive(Serialize)]
struct Figure {
    caption: String,
    svg: Option<Value>,
    /// Why the plot could not be drawn.
    error: Option<String>,
}

impl Figure {
    fn new(caption: String, p: &Plot) -> Self {
        let (svg, error) = match p.svg() {
            // plotters' SVG, the one piece of markup not made by the template.
            Ok(svg) => (svg.map(Value::from_safe_string), None),
            Err(e) => (None, Some(format!("{e:#}"))),
        };
        Self {
            caption,
            svg,
            error,
        }
    }
}

/// The whole page; a section that is `None` says it was not measured.
#[derive(Serialize)]
struct Report {
    suite: String,
    run_id: String,
    summary: Summary,
    ratios: Option<Ratios>,
    study: Study,
    throughput: Option<Throughput>,
    latency: Option<Latency>,
    cold_start: Option<ColdStart>,
    open_loop: Option<OpenLoop>,
    resources: Resources,
    capacity: Option<Capacity>,
    environment: Environment,
    /// The share of a run (in %) the generator must be busy for its saturation flag.
    saturated_share: String,
}

impl Report {
    fn new(a: &Analysis) -> Self {
        Self {
            suite: a.info.suite.name.clone(),
            run_id: a.info.run_id.clone(),
            summary: summary(a),
            ratios: ratios(a),
            study: study(a),
            throughput: throughput(a),
            latency: latency(a),
            cold_start: cold_start(a),
            open_loop: open_loop(a),
            resources: resources(a),
            capacity: capacity(a),
            environment: environment(a),
            saturated_share: format!("{:.0}", wasmlab_load::SATURATED_SHARE * 100.0),
        }
    }
}

// --- Helpers ---------------------------------------------------------------------------------

fn est(e: &Estimate, f: fn(f64) -> String) -> Cell {
    e.show(f).into()
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

// --- Summary ---------------------------------------------------------------------------------

#[derive(Serialize)]
struct Summary {
    state: String,
    description: String,
    started: String,
    finished: Option<String>,
    repetitions: u32,
    seed: u64,
    git_sha: Option<String>,
    core_guest: Option<String>,
    command: String,
    /// None when the run recorded no variant.
    variants: Option<Table>,
    unmeasured: Vec<Unmeasured>,
}

/// A variant in the "not (fully) measured" box.
#[derive(Serialize)]
struct Unmeasured {
    name: String,
    status: String,
    reason: Option<String>,
}

fn summary(a: &Analysis) -> Summary {
    let info = &a.info;
    let rows: Vec<Vec<Cell>> = info
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
                v.status.as_str().into()
            } else {
                Cell {
                    text: format!("⚠ {}", v.status),
                    span: Some("flag"),
                    ..Cell::default()
                }
            };
            vec![
                Cell::variant(a, &v.name),
                status,
                v.reason.as_deref().unwrap_or("").into(),
                if v.checks.is_empty() {
                    "–".into()
                } else {
                    format!("{passed}/{} passed", v.checks.len()).into()
                },
                failed.join("; ").into(),
            ]
        })
        .collect();
    Summary {
        state: info.state.clone(),
        description: info.suite.description.clone(),
        started: info.started_utc.clone(),
        finished: info.finished_utc.clone(),
        repetitions: info.suite.repetitions,
        seed: info.seed,
        git_sha: info.git_sha.clone(),
        core_guest: info.core_guest.clone(),
        command: shell_join(&info.command),
        variants: (!rows.is_empty()).then(|| {
            Table::new(
                &["Variant", "Status", "Reason", "Checks", "Failed checks"],
                5,
                rows,
            )
        }),
        unmeasured: info
            .variants
            .iter()
            .filter(|v| v.status != "measured")
            .map(|v| Unmeasured {
                name: v.name.clone(),
                status: v.status.clone(),
                reason: v.reason.clone(),
            })
            .collect(),
    }
}

// --- The gateway study -----------------------------------------------------------------------

#[derive(Serialize)]
struct Study {
    name: String,
    source: String,
    machine: String,
    /// This run measured at least one of the study's variants and cells.
    measured: bool,
    comparisons: Vec<StudyTable>,
    method_differences: Vec<String>,
}

#[derive(Serialize)]
struct StudyTable {
    title: String,
    ours_at: Option<String>,
    table: Table,
}

/// The gateway study's published figures beside this run's, with its method's differences.
fn study(a: &Analysis) -> Study {
    let file = crate::analyze::study::gateway_study();
    let comparisons = crate::analyze::study::compare(a, &file);
    let measured = comparisons
        .iter()
        .any(|c| c.rows.iter().any(|r| r.ours.is_some()));
    let ratio = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), fmt_ratio_plain);
    let comparisons = comparisons
        .iter()
        .map(|c| {
            let in_ms = c.title.contains(" ms");
            let num = |v: Option<f64>| match v {
                None => "–".to_owned(),
                Some(v) if in_ms => fmt_ms(v),
                Some(v) => thousands(v),
            };
            let rows = c
                .rows
                .iter()
                .map(|r| {
                    vec![
                        Cell::variant(a, &r.variant),
                        num(r.study).into(),
                        num(r.ours).into(),
                        ratio(r.study_ratio).into(),
                        ratio(r.ours_ratio).into(),
                        r.verdict.as_deref().unwrap_or("–").into(),
                    ]
                })
                .collect();
            StudyTable {
                title: c.title.clone(),
                ours_at: c.ours_at.clone(),
                table: Table::new(&crate::analyze::study::COLUMNS, 1, rows),
            }
        })
        .collect();
    Study {
        measured,
        comparisons,
        method_differences: file.method_differences.clone(),
        name: file.name,
        source: file.source,
        machine: file.machine,
    }
}

fn fmt_ratio_plain(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

// --- Ratios to native ------------------------------------------------------------------------

#[derive(Serialize)]
struct Ratios {
    /// The native baseline was measured.
    baseline: bool,
    capacity: Option<Table>,
    throughput: Option<Table>,
    /// Explain the saturation flags of the throughput ratios.
    saturation_note: bool,
    warm: Option<Table>,
    cold_start: Option<Table>,
}

/// One ratio per (variant, workload) and concurrency level (None without any); `flags` adds the
/// load generator's saturation flags (which bias throughput, not capacity).
fn ratio_grid(
    a: &Analysis,
    levels: &[usize],
    pick: fn(&ThroughputCell) -> Option<&Estimate>,
    flags: bool,
) -> Option<Table> {
    let mut rows = Vec::new();
    for w in &a.workloads {
        for v in a.variants.iter().filter(|v| *v != BASELINE) {
            let cells: Vec<Option<&ThroughputCell>> =
                levels.iter().map(|&c| a.throughput_cell(v, w, c)).collect();
            if cells.iter().all(Option::is_none) {
                continue;
            }
            let mut row = vec![Cell::variant(a, v), w.as_str().into()];
            for c in cells {
                row.push(match c {
                    None => "–".into(),
                    Some(c) => {
                        let mut cell = Cell::ratio(pick(c));
                        if flags {
                            cell.flags.extend(Flag::of(c, None));
                            // A saturated baseline understates native, so the ratio too.
                            cell.flags.extend(
                                a.throughput_cell(BASELINE, w, c.connections)
                                    .and_then(|b| Flag::of(b, Some(BASELINE))),
                            );
                        }
                        cell
                    }
                });
            }
            rows.push(row);
        }
    }
    let head: Vec<String> = ["Variant".to_owned(), "Workload".to_owned()]
        .into_iter()
        .chain(levels.iter().map(|c| format!("{c} connections")))
        .collect();
    (!rows.is_empty()).then_some(Table {
        head,
        left: 2,
        rows,
    })
}

fn ratios(a: &Analysis) -> Option<Ratios> {
    if a.throughput.is_empty() && a.warm.is_empty() && a.cold_start.is_empty() {
        return None;
    }
    let levels = connection_levels(a);

    // Warm p50: one row per variant, one column per workload.
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
        let mut row = vec![Cell::variant(a, v)];
        for w in &warm_workloads {
            let r = a.warm.iter().find(|r| &r.variant == v && &r.workload == *w);
            row.push(r.map_or_else(|| "–".into(), |r| Cell::ratio(r.ratio_to_native.as_ref())));
        }
        rows.push(row);
    }
    let warm_head: Vec<&str> = std::iter::once("Variant")
        .chain(warm_workloads.iter().map(|w| w.as_str()))
        .collect();
    let warm = (!rows.is_empty()).then(|| Table::new(&warm_head, 1, rows));

    let rows: Vec<Vec<Cell>> = a
        .cold_start
        .iter()
        .filter(|r| r.variant != BASELINE)
        .map(|r| {
            vec![
                Cell::variant(a, &r.variant),
                r.n.to_string().into(),
                Cell::ratio(r.ratio_to_native.as_ref()),
            ]
        })
        .collect();
    let cold_start = (!rows.is_empty()).then(|| {
        Table::new(
            &["Variant", "Launches n", "× native p50 [95% CI] n"],
            1,
            rows,
        )
    });

    Some(Ratios {
        baseline: has_baseline(a),
        // Capacity (the headline), then throughput: one row per (variant, workload), one
        // column per level.
        capacity: ratio_grid(a, &levels, |c| c.capacity_ratio.as_ref(), false),
        throughput: ratio_grid(a, &levels, |c| c.ratio_to_native.as_ref(), true),
        saturation_note: a.throughput.iter().any(|c| c.generator_saturated_runs > 0),
        warm,
        cold_start,
    })
}

// --- Throughput ------------------------------------------------------------------------------

#[derive(Serialize)]
struct Throughput {
    duration_secs: String,
    warmup_secs: String,
    workloads: Vec<Workload>,
    saturation_note: bool,
}

/// A workload's plot and table.
#[derive(Serialize)]
struct Workload {
    name: String,
    figure: Figure,
    table: Table,
}

fn throughput(a: &Analysis) -> Option<Throughput> {
    if a.throughput.is_empty() {
        return None;
    }
    let levels = connection_levels(a);
    let x_scale = if levels.len() > 2 {
        Scale::Log
    } else {
        Scale::Linear
    };
    let mut any_flag = false;
    let mut workloads = Vec::new();
    for w in &a.workloads {
        let cells: Vec<&ThroughputCell> =
            a.throughput.iter().filter(|c| &c.workload == w).collect();
        if cells.is_empty() {
            continue;
        }
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
        let figure = Figure::new(format!("{w}: req/s vs connections"), &p);

        let mut rows = Vec::new();
        for v in &vs {
            let mut mine: Vec<&&ThroughputCell> =
                cells.iter().filter(|c| c.variant == *v).collect();
            mine.sort_by_key(|c| c.connections);
            for c in mine {
                let flag = Cell {
                    flags: Flag::of(c, None).into_iter().collect(),
                    ..Cell::default()
                };
                any_flag |= !flag.flags.is_empty();
                rows.push(vec![
                    Cell::variant(a, v),
                    c.connections.to_string().into(),
                    est(&c.rps, fmt_rps),
                    Cell::ratio_of(v, c.capacity_ratio.as_ref()),
                    Cell::ratio_of(v, c.ratio_to_native.as_ref()),
                    fmt_ms(c.latency.p50).into(),
                    fmt_ms(c.latency.p99).into(),
                    thousands(c.responses as f64).into(),
                    fmt_errors(&c.errors).into(),
                    percent(c.generator_busy).into(),
                    flag,
                ]);
            }
        }
        let table = Table::new(
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
            1,
            rows,
        );
        workloads.push(Workload {
            name: w.clone(),
            figure,
            table,
        });
    }
    Some(Throughput {
        duration_secs: a.info.suite.duration_secs.to_string(),
        warmup_secs: a.info.suite.warmup_secs.to_string(),
        workloads,
        saturation_note: any_flag,
    })
}

// --- Latency ---------------------------------------------------------------------------------

#[derive(Serialize)]
struct Latency {
    /// One spectrum per workload; none drawn says so.
    warm_figures: Vec<Figure>,
    loaded_connections: Option<usize>,
    loaded_figures: Vec<Figure>,
    warm: Option<Table>,
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

/// One spectrum plot per workload for `kind`; `caption(workload, connections, counts)`.
fn spectra_figures(
    a: &Analysis,
    kind: Kind,
    caption: impl Fn(&str, usize, &str) -> String,
) -> Vec<Figure> {
    let mut figures = Vec::new();
    for w in &a.workloads {
        let sp = spectra_of(a, kind, w);
        if sp.is_empty() {
            continue;
        }
        let n: Vec<String> = sp
            .iter()
            .map(|s| format!("{} n={}", s.variant, thousands(s.count as f64)))
            .collect();
        figures.push(Figure::new(
            caption(w, sp[0].connections, &n.join(", ")),
            &spectrum_plot(a, &sp),
        ));
    }
    figures
}

/// The spectra of `kind` for workload `w`, in the variants' order.
fn spectra_of<'a>(a: &'a Analysis, kind: Kind, w: &str) -> Vec<&'a Spectrum> {
    let mut v: Vec<&Spectrum> = a
        .spectra
        .iter()
        .filter(|s| s.kind == kind && s.workload == w)
        .collect();
    v.sort_by_key(|s| colour_of(a, &s.variant));
    v
}

fn latency(a: &Analysis) -> Option<Latency> {
    if a.spectra.is_empty() && a.warm.is_empty() {
        return None;
    }
    let rows: Vec<Vec<Cell>> = a
        .warm
        .iter()
        .map(|r| {
            vec![
                Cell::variant(a, &r.variant),
                r.workload.as_str().into(),
                r.n.to_string().into(),
                thousands(r.requests as f64).into(),
                fmt_ms(r.latency.p50).into(),
                fmt_ms(r.latency.p90).into(),
                fmt_ms(r.latency.p99).into(),
                fmt_ms(r.latency.p99_9).into(),
                fmt_ms(r.latency.max).into(),
                est(&r.p50, fmt_ms),
                Cell::ratio_of(&r.variant, r.ratio_to_native.as_ref()),
                fmt_errors(&r.errors).into(),
            ]
        })
        .collect();
    let warm = (!rows.is_empty()).then(|| {
        Table::new(
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
            2,
            rows,
        )
    });
    Some(Latency {
        warm_figures: spectra_figures(a, Kind::Warm, |w, _, n| {
            format!("{w}: warm latency spectrum ({n} requests)")
        }),
        loaded_connections: a.reference_connections,
        loaded_figures: spectra_figures(a, Kind::Throughput, |w, conns, n| {
            format!("{w}: latency spectrum at {conns} connections ({n} responses)")
        }),
        warm,
    })
}

// --- Cold start ------------------------------------------------------------------------------

#[derive(Serialize)]
struct ColdStart {
    figure: Figure,
    table: Table,
}

fn cold_start(a: &Analysis) -> Option<ColdStart> {
    if a.cold_start.is_empty() {
        return None;
    }
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
    let figure = Figure::new(
        "Cold start: distribution of spawn → first 200 (ECDF)".into(),
        &p,
    );

    let rows: Vec<Vec<Cell>> = a
        .cold_start
        .iter()
        .map(|r| {
            vec![
                Cell::variant(a, &r.variant),
                r.n.to_string().into(),
                fmt_ms(r.first_200.p50).into(),
                fmt_ms(r.first_200.p90).into(),
                fmt_ms(r.first_200.p99).into(),
                fmt_ms(r.first_200.min).into(),
                fmt_ms(r.first_200.max).into(),
                r.listening
                    .map_or_else(|| "–".to_owned(), |l| fmt_ms(l.p50))
                    .into(),
                fmt_ms(r.connected.p50).into(),
                fmt_ms(r.first_byte.p50).into(),
                Cell::ratio_of(&r.variant, r.ratio_to_native.as_ref()),
                super::fmt_rss_after(r).into(),
            ]
        })
        .collect();
    let table = Table::new(
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
            "RSS after p50 MiB",
        ],
        1,
        rows,
    );
    Some(ColdStart { figure, table })
}

// --- Open loop -------------------------------------------------------------------------------

#[derive(Serialize)]
struct WorkloadPlot {
    name: String,
    figure: Figure,
}

#[derive(Serialize)]
struct OpenLoop {
    /// A plot per workload; one table holds them all.
    plots: Vec<WorkloadPlot>,
    table: Table,
    late_after_ms: String,
}

fn open_loop(a: &Analysis) -> Option<OpenLoop> {
    if a.open_loop.is_empty() {
        return None;
    }
    let mut plots = Vec::new();
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
        plots.push(WorkloadPlot {
            name: w.clone(),
            figure: Figure::new(format!("{w}: p99 latency vs offered load"), &p),
        });
    }
    let rows = a
        .open_loop
        .iter()
        .map(|o| {
            vec![
                Cell::variant(a, &o.variant),
                o.workload.as_str().into(),
                percent(o.fraction).into(),
                o.n.to_string().into(),
                o.connections.to_string().into(),
                fmt_rps(o.offered_rps).into(),
                fmt_rps(o.achieved_rps).into(),
                fmt_ms(o.corrected.p50).into(),
                fmt_ms(o.corrected.p99).into(),
                fmt_ms(o.corrected.max).into(),
                fmt_ms(o.uncorrected.p50).into(),
                fmt_ms(o.uncorrected.p99).into(),
                thousands(o.intended as f64).into(),
                thousands(o.sent as f64).into(),
                thousands(o.dropped as f64).into(),
                thousands(o.late as f64).into(),
                fmt_errors(&o.errors).into(),
            ]
        })
        .collect();
    let table = Table::new(
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
        2,
        rows,
    );
    Some(OpenLoop {
        plots,
        table,
        late_after_ms: wasmlab_load::LATE_AFTER.as_millis().to_string(),
    })
}

// --- Resources and capacity ------------------------------------------------------------------

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
/// One bar plot per group (a workload), captioned "GROUP: caption": groups whose values differ
/// by orders of magnitude (hello, compute) would hide each other on one axis.
fn figure_per_group(
    a: &Analysis,
    groups: &[BarGroup<'_>],
    caption: &str,
    x_desc: &str,
    fmt: fn(f64) -> String,
) -> Vec<Figure> {
    groups
        .iter()
        .map(|g| {
            Figure::new(
                format!("{}: {caption}", g.label),
                &grouped_bars(a, x_desc, std::slice::from_ref(g), fmt),
            )
        })
        .collect()
}

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

#[derive(Serialize)]
struct Resources {
    /// None when no cell recorded its process tree's resources.
    best: Option<BestCells>,
    artifacts: Option<Table>,
}

/// Each variant's best closed-loop cell per workload: table, RSS and CPU plots.
#[derive(Serialize)]
struct BestCells {
    table: Table,
    rss: Figure,
    /// One a workload: their CPU per request differs by orders of magnitude (hello, compute).
    cpu: Vec<Figure>,
}

fn resources(a: &Analysis) -> Resources {
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
                Cell::variant(a, v),
                w.as_str().into(),
                c.connections.to_string().into(),
                est(&c.rps, fmt_rps),
                mib(r.rss_peak_kib as f64).into(),
                mib(r.rss_mean_kib).into(),
                format!("{:.2}", r.cpu_secs).into(),
                est(&r.cpu_secs_per_1k, cpu_per_1k),
                c.runs.len().to_string().into(),
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
    let best = (!rows.is_empty()).then(|| BestCells {
        table: Table::new(
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
            2,
            rows,
        ),
        rss: Figure::new(
            "RSS peak of the process tree (MiB), at each variant's best cell".into(),
            &grouped_bars(a, "RSS peak MiB", &rss_groups, |v| super::grouped(v, 1)),
        ),
        cpu: figure_per_group(
            a,
            &cpu_groups,
            "CPU seconds per 1,000 requests, at each variant's best cell (whiskers: 95% CI)",
            "CPU s per 1k requests",
            cpu_per_1k,
        ),
    });

    let rows: Vec<Vec<Cell>> = a
        .info
        .artifacts
        .iter()
        .map(|x| {
            vec![
                x.name.as_str().into(),
                Cell::code(&x.path),
                fmt_bytes(x.bytes).into(),
                thousands(x.bytes as f64).into(),
            ]
        })
        .collect();
    Resources {
        best,
        artifacts: (!rows.is_empty())
            .then(|| Table::new(&["Artifact", "Path", "Size", "Bytes"], 2, rows)),
    }
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

#[derive(Serialize)]
struct Capacity {
    /// One a workload, as for CPU per request.
    figures: Vec<Figure>,
    table: Table,
}

fn capacity(a: &Analysis) -> Option<Capacity> {
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
                Cell::variant(a, v),
                w.as_str().into(),
                c.connections.to_string().into(),
                est(e, fmt_rps),
                if e.value > 0.0 && e.value.is_finite() {
                    format!("{:.2}", 10_000.0 / e.value).into()
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
        return None;
    }
    Some(Capacity {
        figures: figure_per_group(
            a,
            &groups,
            "req/s one core sustains (whiskers: 95% CI)",
            "req/s per core",
            thousands,
        ),
        table: Table::new(
            &[
                "Variant",
                "Workload",
                "At connections",
                "req/s per core [95% CI] n",
                "Cores for 10,000 req/s",
            ],
            2,
            rows,
        ),
    })
}

// --- Environment -----------------------------------------------------------------------------

#[derive(Serialize)]
struct Environment {
    cpu: String,
    cores: usize,
    memory_gib: Option<String>,
    kernel: String,
    cpus: String,
    sha_extensions: bool,
    compute_sha256: String,
    native_code: String,
    /// (tool, version: None when unknown).
    tools: Vec<(&'static str, Option<String>)>,
    suite: SuiteParameters,
    orders: Option<Table>,
    seed: u64,
}

#[derive(Serialize)]
struct SuiteParameters {
    variants: Vec<String>,
    workloads: Vec<String>,
    connections: Vec<usize>,
    duration_secs: String,
    warmup_secs: String,
    load_threads: usize,
    repetitions: u32,
    timeout_secs: String,
    start_timeout_secs: String,
    echo_body_bytes: usize,
    cold_start: Option<ColdStartParameters>,
    warm: Option<WarmParameters>,
    open_loop: Option<OpenLoopParameters>,
}

#[derive(Serialize)]
struct ColdStartParameters {
    runs: u32,
    variants: Vec<String>,
}

#[derive(Serialize)]
struct WarmParameters {
    duration_secs: String,
    warmup_secs: String,
    workloads: Vec<String>,
}

#[derive(Serialize)]
struct OpenLoopParameters {
    /// As percentages of the variant's maximum.
    fractions: Vec<String>,
    duration_secs: String,
    connections: usize,
    workloads: Vec<String>,
}

fn environment(a: &Analysis) -> Environment {
    let m = &a.info.machine;
    let s = &a.info.suite;
    let rows: Vec<Vec<Cell>> = a
        .info
        .orders
        .iter()
        .enumerate()
        .map(|(r, o)| vec![(r + 1).to_string().into(), o.join(" → ").into()])
        .collect();
    Environment {
        cpu: m.cpu_model.clone(),
        cores: m.cores,
        memory_gib: m
            .memory_kib
            .map(|k| super::grouped(k as f64 / 1024.0 / 1024.0, 1)),
        kernel: m.kernel.clone(),
        cpus: a.info.cpus.describe(),
        sha_extensions: m.cpu_sha_extensions,
        compute_sha256: m.compute_sha256.clone(),
        native_code: m.native_code.clone(),
        tools: vec![
            ("wasmlab", Some(m.tools.wasmlab.clone())),
            ("rustc", m.tools.rustc.clone()),
            ("wasmtime", m.tools.wasmtime.clone()),
            ("hyper", m.tools.hyper.clone()),
            ("tokio", m.tools.tokio.clone()),
        ],
        suite: SuiteParameters {
            variants: s.variants.clone(),
            workloads: s.workloads.clone(),
            connections: s.connections.clone(),
            duration_secs: s.duration_secs.to_string(),
            warmup_secs: s.warmup_secs.to_string(),
            load_threads: s.load_threads,
            repetitions: s.repetitions,
            timeout_secs: s.timeout_secs.to_string(),
            start_timeout_secs: s.start_timeout_secs.to_string(),
            echo_body_bytes: s.echo_body_bytes,
            cold_start: s.cold_start.as_ref().map(|c| ColdStartParameters {
                runs: c.runs,
                variants: s.cold_start_variants(),
            }),
            warm: s.warm.as_ref().map(|w| WarmParameters {
                duration_secs: w.duration_secs.to_string(),
                warmup_secs: w.warmup_secs.to_string(),
                workloads: s.warm_workloads(),
            }),
            open_loop: s.open_loop.as_ref().map(|o| OpenLoopParameters {
                fractions: o
                    .fractions
                    .iter()
                    .map(|f| format!("{:.0}%", f * 100.0))
                    .collect(),
                duration_secs: o.duration_secs.to_string(),
                connections: o.connections,
                workloads: s.open_loop_workloads(),
            }),
        },
        orders: (!rows.is_empty()).then(|| Table::new(&["Repetition", "Order"], 2, rows)),
        seed: a.info.seed,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn report_a_variant_not_in_the_run_has_no_colour_of_the_run() {
        let a = crate::analyze::analyse(
            crate::report::tests::info("complete"),
            &crate::report::tests::samples(),
        );
        let run = super::Cell::variant(&a, &a.variants[0]);
        let study_only = super::Cell::variant(&a, "a-variant-of-a-study-only");
        assert_eq!(study_only.swatch.as_deref(), Some(super::NOT_IN_RUN_SWATCH));
        assert_ne!(run.swatch, study_only.swatch);
        let palette: Vec<String> = (0..10).map(crate::report::plot::css_colour).collect();
        assert!(!palette.contains(&super::NOT_IN_RUN_SWATCH.to_owned()));
    }

    #[test]
    fn report_labels() {
        assert_eq!(super::percentile_label(0), "0%");
        assert_eq!(super::percentile_label(3), "99.9%");
        assert_eq!(super::percentile_label(5), "99.999%");
        assert_eq!(
            super::shell_join(&["wasmlab".into(), "run".into(), "a b".into()]),
            "wasmlab run 'a b'"
        );
    }
}
