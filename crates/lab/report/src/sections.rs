//! The sections of a server run's report as data: each row's figures formatted once, here, and
//! laid out by each output (terminal, summary.md, report.html), which choose the rows and
//! columns they show. An output that shows a figure shows it as written here.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::{BASELINE, ThroughputCell};
use wasmlab_analysis::stats::Estimate;
use wasmlab_model::run::Status;
use wasmlab_model::study::FigureKind;

use crate::format::{
    cpu_per_1k, fmt_errors, fmt_ms, fmt_ratio_est, fmt_rps, fmt_rss_after, mib, percent, thousands,
};
use crate::table::{Column, Flag, Mark, Shows, Value, figure, text};

/// A ratio to native as shown: `0.652 [0.611–0.690] n=3`, `1 (baseline)` in native's own row,
/// `–` without one.
#[derive(Debug, Clone, Serialize)]
pub struct Ratio {
    pub text: String,
    /// The interval excludes 1.
    pub significant: bool,
}

impl Ratio {
    /// `variant`'s ratio, or `1 (baseline)` when it is the baseline.
    pub fn of(variant: &str, e: Option<&Estimate>) -> Self {
        if variant == BASELINE {
            Self {
                text: "1 (baseline)".into(),
                significant: false,
            }
        } else {
            Self::plain(e)
        }
    }

    /// A ratio that needs what the lab cannot see of `variant` (a remote target's CPU).
    pub fn needing_processes(a: &ServerAnalysis, variant: &str, e: Option<&Estimate>) -> Self {
        match a.observable(variant) {
            true => Self::of(variant, e),
            false => Self {
                text: NOT_OBSERVABLE.into(),
                significant: false,
            },
        }
    }

    /// The ratio alone.
    pub fn plain(e: Option<&Estimate>) -> Self {
        Self {
            text: fmt_ratio_est(e),
            significant: matches!(e, Some(r) if r.value.is_finite() && r.excludes(1.0)),
        }
    }
}

/// A cell whose load generator saturated in some of its runs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Saturation {
    /// Whose cell it is, when not the row's own (native's, under a variant's ratio).
    pub whose: Option<&'static str>,
    pub saturated: usize,
    pub runs: usize,
}

impl Saturation {
    pub fn of(c: &ThroughputCell, whose: Option<&'static str>) -> Option<Self> {
        (c.generator_saturated_runs > 0).then_some(Self {
            whose,
            saturated: c.generator_saturated_runs,
            runs: c.runs.len(),
        })
    }

    /// The flag: `⚠ generator saturated in k/n runs`, after `whose: ` when another cell's.
    pub(crate) fn flag(&self) -> Flag {
        Flag {
            whose: self.whose.map(str::to_owned),
            what: "generator saturated".into(),
            count: self.saturated,
            runs: self.runs,
        }
    }
}

/// A ratio's cell: bold in report.html when its interval excludes 1.
fn ratio(r: &Ratio) -> Value {
    match r.significant {
        true => Value::marked(r.text.clone(), Mark::Significant),
        false => r.text.as_str().into(),
    }
}

/// What a figure that needs a variant's processes shows for a remote target.
pub const NOT_OBSERVABLE: &str = "not observable";

/// The measured remote targets and what of them is not observable, or None.
pub fn not_observable(a: &ServerAnalysis) -> Option<String> {
    let names = a.not_observable();
    (!names.is_empty()).then(|| {
        format!(
            "{}: CPU, memory, capacity and cold start {NOT_OBSERVABLE} (a remote target: the lab starts none of its processes and sees none)",
            names.join(", ")
        )
    })
}

/// The sentence marking the compute cells whose SHA-256 is a library's, or None.
pub fn other_compute_code(a: &ServerAnalysis) -> Option<String> {
    let others = a.other_compute_code();
    (!others.is_empty()).then(|| {
        let list: Vec<String> = others
            .iter()
            .map(|(v, code)| format!("{v} ({code})"))
            .collect();
        format!(
            "compute is not the same code everywhere: {} hash with a crypto library, where the Rust builds run portable SHA-256; their compute cells measure that library as much as the runtime",
            list.join(", ")
        )
    })
}

/// How a variant fared.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub name: String,
    pub status: Status,
    pub reason: Option<String>,
    /// `3/5 passed`, or `–` without checks.
    pub checks: String,
    /// The checks that failed, with what came back.
    pub failed_checks: String,
}

impl Outcome {
    /// The reason, or that none was recorded.
    pub fn why(&self) -> &str {
        self.reason.as_deref().unwrap_or("no reason recorded")
    }
}

pub fn outcomes(a: &ServerAnalysis) -> Vec<Outcome> {
    a.info
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
            Outcome {
                name: v.name.clone(),
                status: v.status,
                reason: v.reason.clone(),
                checks: if v.checks.is_empty() {
                    "–".into()
                } else {
                    format!("{passed}/{} passed", v.checks.len())
                },
                failed_checks: failed.join("; "),
            }
        })
        .collect()
}

/// One closed-loop cell: a variant on a workload at a concurrency level, over its runs.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    pub variant: String,
    pub workload: String,
    pub connections: usize,
    /// req/s: mean [95% CI] n.
    pub rps: String,
    /// The mean alone.
    pub rps_mean: String,
    /// Responses per CPU-second of the server over native's (the headline).
    pub capacity: Ratio,
    /// req/s over native's.
    pub ratio: Ratio,
    pub p50: String,
    pub p99: String,
    /// Responses, all runs together.
    pub responses: String,
    /// Errors in all, with their classes; and the total alone.
    pub errors: String,
    pub errors_total: String,
    /// The share of the time the load generator was busy.
    pub busy: String,
    pub saturation: Option<Saturation>,
}

/// Every closed-loop cell: by workload, then variant, then concurrency level.
pub fn throughput(a: &ServerAnalysis) -> Vec<Throughput> {
    let mut rows = Vec::new();
    for w in &a.workloads {
        for v in &a.variants {
            let mut cells: Vec<&ThroughputCell> = a
                .throughput
                .iter()
                .filter(|c| &c.workload == w && &c.variant == v)
                .collect();
            cells.sort_by_key(|c| c.connections);
            rows.extend(cells.into_iter().map(|c| Throughput {
                variant: c.variant.clone(),
                workload: c.workload.clone(),
                connections: c.connections,
                rps: c.rps.show(fmt_rps),
                rps_mean: fmt_rps(c.rps.value),
                capacity: Ratio::needing_processes(a, v, c.capacity_ratio.as_ref()),
                ratio: Ratio::of(v, c.ratio_to_native.as_ref()),
                p50: fmt_ms(c.latency.p50),
                p99: fmt_ms(c.latency.p99),
                responses: thousands(c.responses as f64),
                errors: fmt_errors(&c.errors),
                errors_total: thousands(c.errors.total() as f64),
                busy: percent(c.generator_busy),
                saturation: Saturation::of(c, None),
            }));
        }
    }
    rows
}

/// The closed-loop cells' columns. The terminal shows every cell, summary.md each workload's
/// at the reference level, report.html each workload's.
pub(crate) fn throughput_columns<'a>() -> Vec<Column<'a, Throughput>> {
    vec![
        text("Variant", Shows::ALL, |r: &Throughput| {
            Value::variant(&r.variant)
        }),
        text("Workload", Shows::TERMINAL, |r: &Throughput| {
            r.workload.as_str().into()
        }),
        figure(
            "Connections",
            Shows::TERMINAL.and(Shows::HTML),
            |r: &Throughput| r.connections.to_string().into(),
        ),
        figure(
            "req/s mean [95% CI] n",
            Shows::DETAILED,
            |r: &Throughput| r.rps.as_str().into(),
        ),
        // The mean alone; a saturated generator marked, the note below the table.
        figure("req/s", Shows::NARROW, |r: &Throughput| {
            match r.saturation {
                Some(_) => format!("{} ⚠", r.rps_mean),
                None => r.rps_mean.clone(),
            }
            .into()
        }),
        figure(
            "× native per CPU [95% CI] n",
            Shows::ALL,
            |r: &Throughput| ratio(&r.capacity),
        ),
        figure(
            "× native req/s [95% CI] n",
            Shows::DETAILED,
            |r: &Throughput| ratio(&r.ratio),
        ),
        figure("p50 ms", Shows::ALL, |r: &Throughput| r.p50.as_str().into()),
        figure("p99 ms", Shows::ALL, |r: &Throughput| r.p99.as_str().into()),
        figure("Responses (all runs)", Shows::HTML, |r: &Throughput| {
            r.responses.as_str().into()
        }),
        figure("Errors", Shows::DETAILED, |r: &Throughput| {
            r.errors.as_str().into()
        }),
        figure("Errors", Shows::NARROW, |r: &Throughput| {
            r.errors_total.as_str().into()
        }),
        figure("Generator busy", Shows::HTML, |r: &Throughput| {
            r.busy.as_str().into()
        }),
        figure("Flags", Shows::DETAILED, |r: &Throughput| {
            Value::flags(r.saturation.iter().map(Saturation::flag).collect())
        }),
    ]
}

/// A variant's cold starts.
#[derive(Debug, Clone, Serialize)]
pub struct ColdStart {
    pub variant: String,
    pub n: usize,
    /// Exec to the first complete 200, ms.
    pub p50: String,
    pub p90: String,
    pub p99: String,
    pub min: String,
    pub max: String,
    /// The phases' medians: the server said it listens (– when it says nothing), the first
    /// connect, the first byte.
    pub listening: String,
    pub connected: String,
    pub first_byte: String,
    pub ratio: Ratio,
    /// RSS right after the first 200, MiB (median).
    pub rss_after: String,
}

pub fn cold_starts(a: &ServerAnalysis) -> Vec<ColdStart> {
    a.cold_start
        .iter()
        .map(|r| ColdStart {
            variant: r.variant.clone(),
            n: r.n,
            p50: fmt_ms(r.first_200.p50),
            p90: fmt_ms(r.first_200.p90),
            p99: fmt_ms(r.first_200.p99),
            min: fmt_ms(r.first_200.min),
            max: fmt_ms(r.first_200.max),
            listening: r
                .listening
                .map_or_else(|| "–".to_owned(), |l| fmt_ms(l.p50)),
            connected: fmt_ms(r.connected.p50),
            first_byte: fmt_ms(r.first_byte.p50),
            ratio: Ratio::of(&r.variant, r.ratio_to_native.as_ref()),
            rss_after: fmt_rss_after(r),
        })
        .collect()
}

/// The cold starts' columns.
pub(crate) fn cold_start_columns<'a>() -> Vec<Column<'a, ColdStart>> {
    let ms = |head: &str, shows, f: fn(&ColdStart) -> &String| {
        figure(head, shows, move |r: &ColdStart| f(r).as_str().into())
    };
    let detail = Shows::WIDE.and(Shows::HTML);
    vec![
        text("Variant", Shows::ALL, |r: &ColdStart| {
            Value::variant(&r.variant)
        }),
        figure("n", Shows::ALL, |r: &ColdStart| r.n.to_string().into()),
        ms("first 200 p50 ms", Shows::ALL, |r| &r.p50),
        ms("p90 ms", Shows::ALL, |r| &r.p90),
        ms("p99 ms", Shows::ALL, |r| &r.p99),
        ms("min ms", detail, |r| &r.min),
        ms("max ms", detail, |r| &r.max),
        ms("listening p50 ms", detail, |r| &r.listening),
        ms("connected p50 ms", detail, |r| &r.connected),
        ms("first byte p50 ms", detail, |r| &r.first_byte),
        figure("× native p50 [95% CI] n", Shows::ALL, |r: &ColdStart| {
            ratio(&r.ratio)
        }),
        ms("RSS after p50 MiB", Shows::ALL, |r| &r.rss_after),
    ]
}

/// Warm latency of a variant on a workload: one connection, sequential requests.
#[derive(Debug, Clone, Serialize)]
pub struct Warm {
    pub variant: String,
    pub workload: String,
    pub n: usize,
    pub requests: String,
    /// Over all runs' requests together, ms.
    pub p50: String,
    pub p90: String,
    pub p99: String,
    pub p99_9: String,
    pub max: String,
    /// The mean of the runs' p50s [95% CI] n, ms.
    pub mean_p50: String,
    pub ratio: Ratio,
    pub errors: String,
}

pub fn warm(a: &ServerAnalysis) -> Vec<Warm> {
    a.warm
        .iter()
        .map(|r| Warm {
            variant: r.variant.clone(),
            workload: r.workload.clone(),
            n: r.n,
            requests: thousands(r.requests as f64),
            p50: fmt_ms(r.latency.p50),
            p90: fmt_ms(r.latency.p90),
            p99: fmt_ms(r.latency.p99),
            p99_9: fmt_ms(r.latency.p99_9),
            max: fmt_ms(r.latency.max),
            mean_p50: r.p50.show(fmt_ms),
            ratio: Ratio::of(&r.variant, r.ratio_to_native.as_ref()),
            errors: fmt_errors(&r.errors),
        })
        .collect()
}

/// The warm cells' columns.
pub(crate) fn warm_columns<'a>() -> Vec<Column<'a, Warm>> {
    let ms = |head: &str, shows, f: fn(&Warm) -> &String| {
        figure(head, shows, move |r: &Warm| f(r).as_str().into())
    };
    let detail = Shows::WIDE.and(Shows::HTML);
    vec![
        text("Variant", Shows::ALL, |r: &Warm| Value::variant(&r.variant)),
        text("Workload", Shows::ALL, |r: &Warm| {
            r.workload.as_str().into()
        }),
        figure("Runs n", Shows::ALL, |r: &Warm| r.n.to_string().into()),
        ms("Requests", detail, |r| &r.requests),
        ms("p50 ms", Shows::ALL, |r| &r.p50),
        ms("p90 ms", detail, |r| &r.p90),
        ms("p99 ms", Shows::ALL, |r| &r.p99),
        ms("p99.9 ms", Shows::TERMINAL.and(Shows::HTML), |r| &r.p99_9),
        ms("max ms", detail, |r| &r.max),
        ms("Mean of run p50s ms [95% CI] n", Shows::HTML, |r| {
            &r.mean_p50
        }),
        figure("× native p50 [95% CI] n", Shows::ALL, |r: &Warm| {
            ratio(&r.ratio)
        }),
        ms("Errors", detail, |r| &r.errors),
    ]
}

/// A variant on a workload at one offered load (a fraction of its own maximum).
#[derive(Debug, Clone, Serialize)]
pub struct OpenLoop {
    pub variant: String,
    pub workload: String,
    /// The offered load as a share of the variant's maximum.
    pub load: String,
    pub n: usize,
    pub connections: usize,
    pub offered: String,
    pub achieved: String,
    /// From each request's intended send time, ms.
    pub p50: String,
    pub p99: String,
    pub max: String,
    /// From its actual send time, ms.
    pub uncorrected_p50: String,
    pub uncorrected_p99: String,
    pub intended: String,
    pub sent: String,
    pub dropped: String,
    pub late: String,
    pub errors: String,
}

pub fn open_loop(a: &ServerAnalysis) -> Vec<OpenLoop> {
    a.open_loop
        .iter()
        .map(|o| OpenLoop {
            variant: o.variant.clone(),
            workload: o.workload.clone(),
            load: percent(o.fraction),
            n: o.n,
            connections: o.connections,
            offered: fmt_rps(o.offered_rps),
            achieved: fmt_rps(o.achieved_rps),
            p50: fmt_ms(o.corrected.p50),
            p99: fmt_ms(o.corrected.p99),
            max: fmt_ms(o.corrected.max),
            uncorrected_p50: fmt_ms(o.uncorrected.p50),
            uncorrected_p99: fmt_ms(o.uncorrected.p99),
            intended: thousands(o.intended as f64),
            sent: thousands(o.sent as f64),
            dropped: thousands(o.dropped as f64),
            late: thousands(o.late as f64),
            errors: fmt_errors(&o.errors),
        })
        .collect()
}

/// The open-loop cells' columns.
pub(crate) fn open_loop_columns<'a>() -> Vec<Column<'a, OpenLoop>> {
    let cell = |head: &str, shows, f: fn(&OpenLoop) -> &String| {
        figure(head, shows, move |r: &OpenLoop| f(r).as_str().into())
    };
    let late = format!("Late (> {:?})", wasmlab_load::LATE_AFTER);
    let (html, detail) = (Shows::HTML, Shows::DETAILED);
    vec![
        text("Variant", Shows::ALL, |r: &OpenLoop| {
            Value::variant(&r.variant)
        }),
        text("Workload", Shows::ALL, |r: &OpenLoop| {
            r.workload.as_str().into()
        }),
        cell("Load", Shows::ALL, |r| &r.load),
        figure("Runs n", Shows::MARKDOWN.and(html), |r: &OpenLoop| {
            r.n.to_string().into()
        }),
        figure("Connections", html, |r: &OpenLoop| {
            r.connections.to_string().into()
        }),
        cell("Offered req/s", Shows::ALL, |r| &r.offered),
        cell("Achieved req/s", detail, |r| &r.achieved),
        // Corrected: from each request's intended send time.
        cell("p50 ms", Shows::ALL, |r| &r.p50),
        cell("p99 ms", Shows::ALL, |r| &r.p99),
        cell("max ms", Shows::WIDE.and(html), |r| &r.max),
        cell("p50 uncorrected ms", html, |r| &r.uncorrected_p50),
        cell("p99 uncorrected ms", Shows::ALL, |r| &r.uncorrected_p99),
        cell("Intended", html, |r| &r.intended),
        cell("Sent", html, |r| &r.sent),
        cell("Dropped", Shows::ALL, |r| &r.dropped),
        cell(&late, Shows::TERMINAL.and(html), |r| &r.late),
        cell("Errors", detail, |r| &r.errors),
    ]
}

/// What a closed-loop cell cost the variant's processes.
#[derive(Debug, Clone, Serialize)]
pub struct Resources {
    pub variant: String,
    pub workload: String,
    pub connections: usize,
    pub rps: String,
    /// Of the whole process tree, MiB: the highest over the runs, and the mean.
    pub rss_peak: String,
    pub rss_mean: String,
    /// CPU seconds of the tree per run.
    pub cpu_secs: String,
    /// CPU seconds per 1,000 responses [95% CI] n.
    pub cpu_per_1k: String,
    /// Responses per CPU-second: the req/s one core sustains [95% CI] n.
    pub per_core: String,
    pub cores_for_10k: String,
    pub runs: usize,
}

/// The resources of a cell, where they were sampled.
pub fn resources(c: &ThroughputCell) -> Option<Resources> {
    let r = c.resources.as_ref()?;
    let e = &r.rps_per_core;
    Some(Resources {
        variant: c.variant.clone(),
        workload: c.workload.clone(),
        connections: c.connections,
        rps: c.rps.show(fmt_rps),
        rss_peak: mib(r.rss_peak_kib as f64),
        rss_mean: mib(r.rss_mean_kib),
        cpu_secs: format!("{:.2}", r.cpu_secs),
        cpu_per_1k: r.cpu_secs_per_1k.show(cpu_per_1k),
        per_core: e.show(fmt_rps),
        cores_for_10k: if e.value > 0.0 && e.value.is_finite() {
            format!("{:.2}", 10_000.0 / e.value)
        } else {
            "–".into()
        },
        runs: c.runs.len(),
    })
}

/// The resources' columns: summary.md each variant's cells at the reference level, report.html
/// each variant's best cell per workload.
pub(crate) fn resources_columns<'a>() -> Vec<Column<'a, Resources>> {
    let cell = |head: &str, shows, f: fn(&Resources) -> &String| {
        figure(head, shows, move |r: &Resources| f(r).as_str().into())
    };
    let (md, html, both) = (
        Shows::MARKDOWN,
        Shows::HTML,
        Shows::MARKDOWN.and(Shows::HTML),
    );
    vec![
        text("Variant", both, |r: &Resources| Value::variant(&r.variant)),
        text("Workload", both, |r: &Resources| r.workload.as_str().into()),
        figure("At connections", html, |r: &Resources| {
            r.connections.to_string().into()
        }),
        cell("req/s [95% CI] n", html, |r| &r.rps),
        cell("RSS peak MiB", both, |r| &r.rss_peak),
        cell("RSS mean MiB", html, |r| &r.rss_mean),
        cell("CPU s per run", html, |r| &r.cpu_secs),
        cell("CPU s per 1k requests [95% CI] n", both, |r| &r.cpu_per_1k),
        cell("req/s per core [95% CI] n", md, |r| &r.per_core),
        figure("Runs n", html, |r: &Resources| r.runs.to_string().into()),
    ]
}

/// The capacity table's columns (report.html): each variant's best cell per workload.
pub(crate) fn capacity_columns<'a>() -> Vec<Column<'a, Resources>> {
    vec![
        text("Variant", Shows::HTML, |r: &Resources| {
            Value::variant(&r.variant)
        }),
        text("Workload", Shows::HTML, |r: &Resources| {
            r.workload.as_str().into()
        }),
        figure("At connections", Shows::HTML, |r: &Resources| {
            r.connections.to_string().into()
        }),
        figure("req/s per core [95% CI] n", Shows::HTML, |r: &Resources| {
            r.per_core.as_str().into()
        }),
        figure("Cores for 10,000 req/s", Shows::HTML, |r: &Resources| {
            r.cores_for_10k.as_str().into()
        }),
    ]
}

/// A study's figure beside this run's, one row per variant.
#[derive(Debug, Clone, Serialize)]
pub struct StudyFigure {
    pub title: String,
    /// Where ours was measured, when not in the study's cell.
    pub ours_at: Option<String>,
    /// The table's head (`wasmlab_analysis::study::columns`).
    pub columns: Vec<String>,
    pub rows: Vec<StudyRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StudyRow {
    pub variant: String,
    /// The other columns, in the head's order.
    pub values: Vec<String>,
}

/// The suite's study's figures beside this run's.
pub fn study(a: &ServerAnalysis) -> Vec<StudyFigure> {
    let opt = |v: Option<f64>, f: fn(f64) -> String| v.map_or_else(|| "–".into(), f);
    let times = |v: f64| format!("{v:.3}");
    a.beside_study
        .iter()
        .map(|c| {
            let value: fn(f64) -> String = match c.figure {
                FigureKind::ColdStartP50 | FigureKind::WarmP50 => fmt_ms,
                _ => thousands,
            };
            let (native, capacity) = (c.shows_native_ratio(), c.shows_capacity());
            StudyFigure {
                title: c.title.clone(),
                ours_at: c.ours_at.clone(),
                columns: wasmlab_analysis::study::columns(&a.study, c),
                rows: c
                    .rows
                    .iter()
                    .map(|r| {
                        let mut values = vec![
                            opt(r.study, value),
                            opt(r.ours, value),
                            opt(r.study_ratio, times),
                            opt(r.ours_ratio, times),
                        ];
                        if native {
                            values.push(opt(r.ours_to_native, times));
                        }
                        if capacity {
                            values.push(opt(r.capacity, thousands));
                            values.push(opt(r.capacity_ratio, times));
                            if native {
                                values.push(opt(r.capacity_to_native, times));
                            }
                        }
                        values.push(r.verdict.clone().unwrap_or_else(|| "–".into()));
                        StudyRow {
                            variant: r.variant.clone(),
                            values,
                        }
                    })
                    .collect(),
            }
        })
        .collect()
}

/// A study's sizing rule beside this run's capacity: its head, then the study's rows (marked so)
/// and every measured variant's; the first two columns (the system or variant, where its figure
/// comes from) are text.
#[derive(Debug, Clone, Serialize)]
pub struct CapacityPlan {
    pub rule: String,
    pub title: String,
    pub columns: Vec<String>,
    /// (whether the row is the study's, its cells).
    pub rows: Vec<(bool, Vec<String>)>,
}

/// The suite's study's sizing rule beside this run, when it gave one and the run measured its cell.
pub fn capacity_plan(a: &ServerAnalysis) -> Option<CapacityPlan> {
    let p = a.capacity_planning.as_ref()?;
    let range = |(lo, hi): (f64, f64), f: fn(f64) -> String| {
        if f(lo) == f(hi) {
            f(lo)
        } else {
            format!("{}–{}", f(lo), f(hi))
        }
    };
    let cores = |v: f64| format!("{v:.1}");
    let mut rows: Vec<(bool, Vec<String>)> = p
        .published
        .iter()
        .map(|r| {
            let node = if r.cores.0 == r.cores.1 {
                r.cores.0.to_string()
            } else {
                format!("{}–{}", r.cores.0, r.cores.1)
            };
            (
                true,
                vec![
                    format!("the study: {}", r.system),
                    format!(
                        "{} req/s per node of {node} cores, the load generator's CPU included",
                        thousands(r.rps)
                    ),
                    range(r.per_core, thousands),
                    range(r.cores_for_target, cores),
                ],
            )
        })
        .collect();
    rows.extend(p.ours.iter().map(|r| {
        // The interval, where it says more than the value rounded as shown.
        let needed = match r.cores_interval {
            Some(i) if range(i, cores) != cores(r.cores_for_target) => {
                format!("{} [{}]", cores(r.cores_for_target), range(i, cores))
            }
            _ => cores(r.cores_for_target),
        };
        (
            false,
            vec![
                r.variant.clone(),
                "responses per CPU-second of the server's processes, this run".to_owned(),
                r.per_core.show(fmt_rps),
                needed,
            ],
        )
    }));
    Some(CapacityPlan {
        rule: p.rule.clone(),
        title: format!(
            "Capacity planning: {}{}",
            p.cell,
            p.ours_at
                .as_deref()
                .map(|at| format!(" ({at})"))
                .unwrap_or_default()
        ),
        columns: vec![
            "system".to_owned(),
            "from".to_owned(),
            "req/s per core".to_owned(),
            format!("cores for {} req/s", thousands(p.target_rps)),
        ],
        rows,
    })
}

/// Whether this run measured any of the study's variants and cells.
pub fn study_measured(a: &ServerAnalysis) -> bool {
    a.beside_study
        .iter()
        .any(|c| c.rows.iter().any(|r| r.ours.is_some()))
}

/// Concurrency levels measured, ascending.
pub fn connection_levels(a: &ServerAnalysis) -> Vec<usize> {
    let mut v: Vec<usize> = a.throughput.iter().map(|c| c.connections).collect();
    v.sort_unstable();
    v.dedup();
    v
}
