//! The sections of a server run's report as data: each row's figures formatted once, here, and
//! laid out by each output (terminal, summary.md, report.html), which choose the rows and
//! columns they show. An output that shows a figure shows it as written here.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::{BASELINE, EqualLoadPoint, PaceNote, ThroughputCell, describe};
use wasmlab_analysis::stats::Estimate;
use wasmlab_model::run::Status;
use wasmlab_model::study::FigureKind;

use crate::format::{
    SERVER_RATIO, cpu_per_1k, fmt_errors, fmt_ms, fmt_rps, fmt_rss_after, fmt_us, mib, percent,
    thousands,
};
use crate::table::{Column, Flag, Mark, Shows, Value, figure, text};

/// A ratio to native as shown: `0.652 [0.611–0.690] n=3`, `1 (baseline)` in native's own row,
/// `–` without one.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Ratio {
    pub text: String,
    /// The interval excludes 1.
    pub significant: bool,
}

impl Ratio {
    /// `variant`'s ratio, or `1 (baseline)` when it is the baseline.
    pub(crate) fn of(variant: &str, e: Option<&Estimate>) -> Self {
        if variant == BASELINE {
            Self {
                text: "1 (baseline)".into(),
                significant: false,
            }
        } else {
            Self::plain(e)
        }
    }

    /// The ratio alone.
    pub(crate) fn plain(e: Option<&Estimate>) -> Self {
        Self {
            text: SERVER_RATIO.estimate(e),
            significant: matches!(e, Some(r) if r.value.is_finite() && r.excludes(1.0)),
        }
    }

    /// Words in place of a ratio (why there is none).
    fn words(text: String) -> Self {
        Self {
            text,
            significant: false,
        }
    }
}

/// A figure that holds only where a condition did (a capacity: where the servers set the pace),
/// as its cells show it: the figure, flagged with the runs it leaves out; or in its place why
/// there is none, in full and in short (the narrow terminal's).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Conditional {
    pub ratio: Ratio,
    pub short: String,
    pub flags: Vec<Flag>,
}

impl Conditional {
    /// `e` where there is one, the notes as flags; else `none: ` and the notes.
    fn of(e: Option<&Estimate>, notes: &[PaceNote], row_variant: &str) -> Self {
        match e.filter(|e| e.value.is_finite()) {
            Some(e) => Self {
                ratio: Ratio::plain(Some(e)),
                short: SERVER_RATIO.estimate(Some(e)),
                flags: notes.iter().map(|n| pace_flag(n, row_variant)).collect(),
            },
            None if notes.is_empty() => Self::words("–".into(), "–".into()),
            None => Self::words(
                format!("none: {}", describe(notes).unwrap_or_default()),
                short_why(notes, row_variant),
            ),
        }
    }

    fn words(text: String, short: String) -> Self {
        Self {
            ratio: Ratio::words(text),
            short,
            flags: Vec::new(),
        }
    }

    /// Not observable: a remote target's processes.
    fn not_observable() -> Self {
        Self::words(NOT_OBSERVABLE.into(), NOT_OBSERVABLE.into())
    }

    /// The cell in full: the ratio (bold where significant), flagged.
    fn value(&self) -> Value {
        Value {
            flags: self.flags.clone(),
            ..ratio(&self.ratio)
        }
    }
}

/// `native: ⚠ generator-limited in 1/3 runs` (no `whose` on the row's own runs).
fn pace_flag(n: &PaceNote, row_variant: &str) -> Flag {
    Flag {
        whose: (n.variant != row_variant).then(|| n.variant.clone()),
        what: n.pace.as_str().into(),
        count: n.runs,
        runs: n.of,
    }
}

/// Why there is no figure, in a few words (the narrow terminal's; the full reason is in the wide
/// one and the files): what set the row's own pace (`none: latency-bound`), else native's
/// (`none: native generator-limited`).
fn short_why(notes: &[PaceNote], row_variant: &str) -> String {
    let paces = |own: bool| {
        let mut paces: Vec<&str> = notes
            .iter()
            .filter(|n| (n.variant == row_variant) == own)
            .map(|n| n.pace.as_str())
            .collect();
        paces.sort_unstable();
        paces.dedup();
        paces.join(", ")
    };
    match paces(true) {
        own if own.is_empty() => format!("none: {BASELINE} {}", paces(false)),
        own if row_variant == BASELINE => format!("none: {BASELINE} {own}"),
        own => format!("none: {own}"),
    }
}

/// A cell whose load generator saturated in some of its runs.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Saturation {
    /// Whose cell it is, when not the row's own (native's, under a variant's ratio).
    pub whose: Option<&'static str>,
    pub saturated: usize,
    pub runs: usize,
}

impl Saturation {
    pub(crate) fn of(c: &ThroughputCell, whose: Option<&'static str>) -> Option<Self> {
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

/// The head of a capacity ratio's column.
pub(crate) const CAPACITY_HEAD: &str = "capacity × native [95% CI] n";

/// What a figure that needs a variant's processes shows for a remote target.
pub(crate) const NOT_OBSERVABLE: &str = "not observable";

/// The measured remote targets and what of them is not observable, or None.
pub(crate) fn not_observable(a: &ServerAnalysis) -> Option<String> {
    let names = a.not_observable();
    (!names.is_empty()).then(|| {
        format!(
            "{}: CPU, memory, capacity and cold start {NOT_OBSERVABLE} (a remote target: the lab starts none of its processes and sees none)",
            names.join(", ")
        )
    })
}

/// The sentence marking the compute cells whose SHA-256 is a library's, or None.
pub(crate) fn other_compute_code(a: &ServerAnalysis) -> Option<String> {
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
pub(crate) struct Outcome {
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
    pub(crate) fn why(&self) -> &str {
        self.reason.as_deref().unwrap_or("no reason recorded")
    }
}

pub(crate) fn outcomes(a: &ServerAnalysis) -> Vec<Outcome> {
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
pub(crate) struct Throughput {
    pub variant: String,
    pub workload: String,
    pub connections: usize,
    /// req/s: mean [95% CI] n.
    pub rps: String,
    /// The mean alone.
    pub rps_mean: String,
    /// The share of its CPUs the variant kept busy (mean over the runs).
    pub server_busy: String,
    /// Responses per CPU-second of the server over native's, where both were saturated.
    pub capacity: Conditional,
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
pub(crate) fn throughput(a: &ServerAnalysis) -> Vec<Throughput> {
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
                server_busy: busy(a, v, c.utilization),
                capacity: capacity(a, c),
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

/// The share of its CPUs a variant kept busy: `98%`; not observable for a remote target.
fn busy(a: &ServerAnalysis, variant: &str, utilization: Option<f64>) -> String {
    match (a.observable(variant), utilization) {
        (false, _) => NOT_OBSERVABLE.into(),
        (true, Some(u)) => percent(u),
        (true, None) => "–".into(),
    }
}

/// A closed-loop cell's capacity over native's, where both servers were saturated.
pub(crate) fn capacity(a: &ServerAnalysis, c: &ThroughputCell) -> Conditional {
    if !a.observable(&c.variant) {
        return Conditional::not_observable();
    }
    if c.variant == BASELINE && c.saturated_runs() > 0 {
        // Native's own runs: the baseline where it was saturated, flagged where it was not.
        let mut baseline = Conditional::words("1 (baseline)".into(), "1 (baseline)".into());
        baseline.flags = c
            .capacity_notes
            .iter()
            .map(|n| pace_flag(n, &c.variant))
            .collect();
        return baseline;
    }
    if c.paces.is_empty() {
        // Results older than the CPU plan: how busy the server was is not known.
        return Conditional::words("not recorded".into(), "not recorded".into());
    }
    Conditional::of(c.capacity_ratio.as_ref(), &c.capacity_notes, &c.variant)
}

/// The closed-loop cells' columns. The terminal shows every cell, summary.md each workload's
/// at the reference level, report.html each workload's; the narrow terminal their level only
/// when the run measured several.
pub(crate) fn throughput_columns<'a>(a: &ServerAnalysis) -> Vec<Column<'a, Throughput>> {
    let levels = match connection_levels(a).len() {
        1 => Shows::WIDE.and(Shows::HTML),
        _ => Shows::TERMINAL.and(Shows::HTML),
    };
    vec![
        text("Variant", Shows::ALL, |r: &Throughput| {
            Value::variant(&r.variant)
        }),
        text("Workload", Shows::TERMINAL, |r: &Throughput| {
            r.workload.as_str().into()
        }),
        figure("Conns", levels, |r: &Throughput| {
            r.connections.to_string().into()
        }),
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
        figure("Server busy", Shows::ALL, |r: &Throughput| {
            r.server_busy.as_str().into()
        }),
        figure(CAPACITY_HEAD, Shows::DETAILED, |r: &Throughput| {
            r.capacity.value()
        }),
        figure(CAPACITY_HEAD, Shows::NARROW, |r: &Throughput| {
            r.capacity.short.as_str().into()
        }),
        figure(
            "× native req/s [95% CI] n",
            Shows::DETAILED,
            |r: &Throughput| ratio(&r.ratio),
        ),
        figure("p50 ms", Shows::DETAILED, |r: &Throughput| {
            r.p50.as_str().into()
        }),
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
pub(crate) struct ColdStart {
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

pub(crate) fn cold_starts(a: &ServerAnalysis) -> Vec<ColdStart> {
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
pub(crate) struct Warm {
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
    pub server_busy: String,
}

pub(crate) fn warm(a: &ServerAnalysis) -> Vec<Warm> {
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
            server_busy: busy(a, &r.variant, r.utilization),
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
pub(crate) struct OpenLoop {
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
    pub server_busy: String,
}

pub(crate) fn open_loop(a: &ServerAnalysis) -> Vec<OpenLoop> {
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
            p50: fmt_ms(o.runs.corrected.p50),
            p99: fmt_ms(o.runs.corrected.p99),
            max: fmt_ms(o.runs.corrected.max),
            uncorrected_p50: fmt_ms(o.runs.uncorrected.p50),
            uncorrected_p99: fmt_ms(o.runs.uncorrected.p99),
            intended: thousands(o.runs.intended as f64),
            sent: thousands(o.runs.sent as f64),
            dropped: thousands(o.runs.dropped as f64),
            late: thousands(o.runs.late as f64),
            errors: fmt_errors(&o.runs.errors),
            server_busy: busy(a, &o.variant, o.utilization),
        })
        .collect()
}

/// The open-loop cells' columns.
pub(crate) fn open_loop_columns<'a>() -> Vec<Column<'a, OpenLoop>> {
    let cell = |head: &str, shows, f: fn(&OpenLoop) -> &String| {
        figure(head, shows, move |r: &OpenLoop| f(r).as_str().into())
    };
    let late = format!("Late (> {:?})", wasmlab_load_data::LATE_AFTER);
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
        cell("Server busy", Shows::WIDE.and(html), |r| &r.server_busy),
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

/// A variant on a workload at an equal-load rate: what a request cost it there, against native.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct EqualLoad {
    pub variant: String,
    pub workload: String,
    pub rate: f64,
    pub n: usize,
    pub offered: String,
    /// Responses a second (mean over the runs).
    pub achieved: String,
    pub server_busy: String,
    /// CPU µs per request of the variant's processes [95% CI] n.
    pub cpu_us: String,
    /// Its ratio to native's at the same rate, or why there is none.
    pub ratio: Conditional,
    /// Corrected latency (from the intended send time), and uncorrected, ms.
    pub p50: String,
    pub p99: String,
    pub uncorrected_p99: String,
    pub dropped: String,
    pub errors: String,
    /// The runs that fell short of the rate.
    pub over_capacity: Option<Flag>,
}

/// Every equal-load point: by workload, then rate, then variant.
pub(crate) fn equal_load(a: &ServerAnalysis) -> Vec<EqualLoad> {
    let mut rows = Vec::new();
    for w in &a.workloads {
        for rate in a.equal_load_rates(w) {
            for p in a.equal_load_at(w, rate) {
                rows.push(equal_load_row(a, p));
            }
        }
    }
    rows
}

fn equal_load_row(a: &ServerAnalysis, p: &EqualLoadPoint) -> EqualLoad {
    let observable = a.observable(&p.variant);
    let ratio = if !observable {
        Conditional::not_observable()
    } else if p.variant == BASELINE {
        match p.over_capacity_runs {
            0 => Conditional::words("1 (baseline)".into(), "1 (baseline)".into()),
            _ => Conditional::words("none: over capacity".into(), "none: over capacity".into()),
        }
    } else {
        match (&p.cost_ratio, &p.ratio_note) {
            (Some(e), _) => Conditional {
                ratio: Ratio::plain(Some(e)),
                short: SERVER_RATIO.estimate(Some(e)),
                flags: Vec::new(),
            },
            (None, Some(why)) => {
                Conditional::words(format!("none: {why}"), "none: over capacity".into())
            }
            (None, None) => Conditional::words("–".into(), "–".into()),
        }
    };
    EqualLoad {
        variant: p.variant.clone(),
        workload: p.workload.clone(),
        rate: p.rate,
        n: p.n,
        offered: fmt_rps(p.rate),
        achieved: fmt_rps(p.achieved_rps),
        server_busy: busy(a, &p.variant, p.utilization),
        cpu_us: match observable {
            true => p.cpu_us.show(fmt_us),
            false => NOT_OBSERVABLE.into(),
        },
        ratio,
        p50: fmt_ms(p.runs.corrected.p50),
        p99: fmt_ms(p.runs.corrected.p99),
        uncorrected_p99: fmt_ms(p.runs.uncorrected.p99),
        dropped: thousands(p.runs.dropped as f64),
        errors: fmt_errors(&p.runs.errors),
        over_capacity: (p.over_capacity_runs > 0).then(|| Flag {
            whose: None,
            what: "over capacity".into(),
            count: p.over_capacity_runs,
            runs: p.n,
        }),
    }
}

/// How each workload's equal-load rates were chosen: `hello: 2000 and 30000 req/s, …`.
pub(crate) fn equal_load_rates(a: &ServerAnalysis) -> Vec<String> {
    a.info
        .equal_load
        .iter()
        .map(|e| format!("{}: {}", e.workload, e.describe()))
        .collect()
}

/// The head of an equal-load CPU ratio's column.
pub(crate) const EQUAL_CPU_HEAD: &str = "CPU × native [95% CI] n";

/// The equal-load points' columns: every output lays out one table per workload.
pub(crate) fn equal_load_columns<'a>() -> Vec<Column<'a, EqualLoad>> {
    let cell = |head: &str, shows, f: fn(&EqualLoad) -> &String| {
        figure(head, shows, move |r: &EqualLoad| f(r).as_str().into())
    };
    vec![
        text("Variant", Shows::ALL, |r: &EqualLoad| {
            Value::variant(&r.variant)
        }),
        cell("Offered req/s", Shows::ALL, |r| &r.offered),
        figure("Runs n", Shows::HTML, |r: &EqualLoad| {
            r.n.to_string().into()
        }),
        cell("Achieved req/s", Shows::DETAILED, |r| &r.achieved),
        cell("Server busy", Shows::ALL, |r| &r.server_busy),
        cell("CPU µs/request [95% CI] n", Shows::ALL, |r| &r.cpu_us),
        figure(EQUAL_CPU_HEAD, Shows::DETAILED, |r: &EqualLoad| {
            r.ratio.value()
        }),
        figure(EQUAL_CPU_HEAD, Shows::NARROW, |r: &EqualLoad| {
            r.ratio.short.as_str().into()
        }),
        cell("p50 ms", Shows::DETAILED, |r| &r.p50),
        cell("p99 ms", Shows::ALL, |r| &r.p99),
        cell("p99 uncorrected ms", Shows::HTML, |r| &r.uncorrected_p99),
        cell("Dropped", Shows::DETAILED, |r| &r.dropped),
        cell("Errors", Shows::DETAILED, |r| &r.errors),
        figure("Flags", Shows::DETAILED, |r: &EqualLoad| {
            Value::flags(r.over_capacity.iter().cloned().collect())
        }),
    ]
}

/// The answer for one variant on one workload: what a request costs it, as a multiple of what
/// it costs native, at equal load and where both were saturated.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Cost {
    pub workload: String,
    pub variant: String,
    /// CPU per request × native's at the highest equal-load rate both kept up with, or why none.
    pub equal_load: Conditional,
    /// That rate.
    pub at: String,
    /// Native's share of its CPU busy at that rate.
    pub native_busy: String,
    /// CPU per request × native's where both were saturated (capacity turned over), or why none.
    pub saturated: Conditional,
}

/// Every workload's costs, workload by workload, each in the variants' order.
pub(crate) fn costs(a: &ServerAnalysis) -> Vec<Cost> {
    let mut rows = Vec::new();
    for w in &a.workloads {
        for c in a.costs(w) {
            let cell = a
                .reference_connections
                .and_then(|conns| a.throughput_cell(&c.variant, w, conns));
            let saturated = match (a.observable(&c.variant), cell) {
                (false, _) => Conditional::not_observable(),
                (true, Some(cell)) => {
                    Conditional::of(c.saturated.as_ref(), &cell.capacity_notes, &c.variant)
                }
                (true, None) => Conditional::words("not measured".into(), "–".into()),
            };
            let equal_load = match (&c.equal_load, &c.equal_load_note) {
                _ if !a.observable(&c.variant) => Conditional::not_observable(),
                (Some((_, e)), _) => Conditional {
                    ratio: Ratio::plain(Some(e)),
                    short: SERVER_RATIO.estimate(Some(e)),
                    flags: Vec::new(),
                },
                (None, Some(why)) => {
                    let short = match why.contains("over capacity") {
                        true => "none: over capacity".to_owned(),
                        false => format!("none: {why}"),
                    };
                    Conditional::words(format!("none: {why}"), short)
                }
                (None, None) => Conditional::words("not measured".into(), "–".into()),
            };
            rows.push(Cost {
                workload: w.clone(),
                variant: c.variant.clone(),
                equal_load,
                at: c
                    .equal_load
                    .as_ref()
                    .map_or_else(|| "–".into(), |(rate, _)| fmt_rps(*rate)),
                native_busy: c.native_busy.map_or_else(|| "–".into(), percent),
                saturated,
            });
        }
    }
    rows
}

/// The costs' columns.
pub(crate) fn cost_columns<'a>() -> Vec<Column<'a, Cost>> {
    let (equal, saturated) = (
        "CPU × native, equal load [95% CI] n",
        "CPU × native, saturated [95% CI] n",
    );
    vec![
        text("Workload", Shows::ALL, |r: &Cost| {
            r.workload.as_str().into()
        }),
        text("Variant", Shows::ALL, |r: &Cost| Value::variant(&r.variant)),
        figure(equal, Shows::DETAILED, |r: &Cost| r.equal_load.value()),
        figure(equal, Shows::NARROW, |r: &Cost| {
            r.equal_load.short.as_str().into()
        }),
        figure("At req/s", Shows::ALL, |r: &Cost| r.at.as_str().into()),
        // Not on the narrow terminal, which the lead already fills: the lines of the cells as
        // they were measured say how busy native was.
        figure("Native busy", Shows::DETAILED, |r: &Cost| {
            r.native_busy.as_str().into()
        }),
        figure(saturated, Shows::DETAILED, |r: &Cost| r.saturated.value()),
        figure(saturated, Shows::NARROW, |r: &Cost| {
            r.saturated.short.as_str().into()
        }),
    ]
}

/// What a closed-loop cell cost the variant's processes.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Resources {
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
    /// Responses per CPU-second where the server was saturated: the req/s one core sustains
    /// [95% CI] n, or why there is none.
    pub per_core: String,
    pub cores_for_10k: String,
    pub runs: usize,
    pub server_busy: String,
}

/// The resources of a cell, where they were sampled.
pub(crate) fn resources(c: &ThroughputCell) -> Option<Resources> {
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
        per_core: match describe(&c.unsaturated()) {
            Some(why) if e.n == 0 => format!("none: {why}"),
            _ => e.show(fmt_rps),
        },
        cores_for_10k: if e.n > 0 && e.value > 0.0 && e.value.is_finite() {
            format!("{:.2}", 10_000.0 / e.value)
        } else {
            "–".into()
        },
        runs: c.runs.len(),
        server_busy: c.utilization.map_or_else(|| "–".into(), percent),
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
        cell("Server busy", html, |r| &r.server_busy),
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
        figure("Server busy", Shows::HTML, |r: &Resources| {
            r.server_busy.as_str().into()
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
pub(crate) struct StudyFigure {
    pub title: String,
    /// Where ours was measured, when not in the study's cell.
    pub ours_at: Option<String>,
    /// The table's head (`wasmlab_analysis::study::columns`).
    pub columns: Vec<String>,
    pub rows: Vec<StudyRow>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct StudyRow {
    pub variant: String,
    /// The other columns, in the head's order.
    pub values: Vec<String>,
}

/// The suite's study's figures beside this run's.
pub(crate) fn study(a: &ServerAnalysis) -> Vec<StudyFigure> {
    let opt = |v: Option<f64>, f: fn(f64) -> String| v.map_or_else(|| "–".into(), f);
    let times = |v: f64| SERVER_RATIO.point(v);
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
                            r.ours_estimate
                                .map_or_else(|| opt(r.ours, value), |e| e.show(value)),
                            opt(r.study_ratio, times),
                            opt(r.ours_ratio, times),
                        ];
                        if native {
                            values.push(opt(r.ours_to_native, times));
                        }
                        if capacity {
                            values.push(match (&r.capacity, &r.capacity_note) {
                                (None, Some(why)) => format!("none: {why}"),
                                _ => r.capacity_estimate.map_or_else(
                                    || opt(r.capacity, thousands),
                                    |e| e.show(thousands),
                                ),
                            });
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
pub(crate) struct CapacityPlan {
    pub rule: String,
    pub title: String,
    pub columns: Vec<String>,
    /// (whether the row is the study's, its cells).
    pub rows: Vec<(bool, Vec<String>)>,
}

/// The suite's study's sizing rule beside this run, when it gave one and the run measured its cell.
pub(crate) fn capacity_plan(a: &ServerAnalysis) -> Option<CapacityPlan> {
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
        let needed = match (r.cores_for_target, r.cores_interval) {
            (Some(c), Some(i)) if range(i, cores) != cores(c) => {
                format!("{} [{}]", cores(c), range(i, cores))
            }
            (Some(c), _) => cores(c),
            (None, _) => "–".into(),
        };
        let per_core = match (&r.per_core, &r.note) {
            (Some(e), Some(why)) => format!("{} (left out: {why})", e.show(fmt_rps)),
            (Some(e), None) => e.show(fmt_rps),
            (None, Some(why)) => format!("none: {why}"),
            (None, None) => "–".into(),
        };
        (
            false,
            vec![
                r.variant.clone(),
                "responses per CPU-second of the server's processes where it was saturated, this run"
                    .to_owned(),
                per_core,
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
pub(crate) fn study_measured(a: &ServerAnalysis) -> bool {
    a.beside_study
        .iter()
        .any(|c| c.rows.iter().any(|r| r.ours.is_some()))
}

/// Concurrency levels measured, ascending.
pub(crate) fn connection_levels(a: &ServerAnalysis) -> Vec<usize> {
    let mut v: Vec<usize> = a.throughput.iter().map(|c| c.connections).collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmlab_model::sample::Pace;

    fn note(variant: &str, pace: Pace) -> PaceNote {
        PaceNote {
            variant: variant.into(),
            pace,
            runs: 3,
            of: 3,
        }
    }

    #[test]
    fn the_short_why_says_the_rows_own_pace_else_natives_within_a_narrow_column() {
        let both = [
            note("sleepy", Pace::Latency),
            note(BASELINE, Pace::Generator),
        ];
        let natives = [note(BASELINE, Pace::Upstream)];
        let cases = [
            (&both[..], "sleepy", "none: latency-bound"),
            (&natives[..], "sleepy", "none: native upstream-limited"),
            (&natives[..], BASELINE, "none: native upstream-limited"),
            (&both[1..], BASELINE, "none: native generator-limited"),
        ];
        for (notes, row, want) in cases {
            let short = short_why(notes, row);
            assert_eq!(short, want);
            assert!(short.chars().count() <= 30, "{short}");
        }
    }
}
