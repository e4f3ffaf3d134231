//! The plots of a server run's report, as [`Plot`] data: throughput against concurrency, latency
//! spectra, cold-start distributions, open-loop latency against offered load, bars per workload,
//! and the lead section's capacity × native. Every variant keeps its colour in every plot.

use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::{BASELINE, Cost, Spectrum, ThroughputCell};
use wasmlab_analysis::stats::Estimate;
use wasmlab_model::sample::Kind;

use crate::format::thousands;
use crate::plot::{self, Axis, LegendEntry, Line, Plot, Scale, Stroke, Whisker, bars};
use crate::sections::connection_levels;
use crate::view::Figure;

/// The variant's palette index (its position in `a.variants`).
pub(super) fn colour_of(a: &ServerAnalysis, variant: &str) -> usize {
    a.variants
        .iter()
        .position(|v| v == variant)
        .unwrap_or(a.variants.len())
}

/// The swatch of a variant the run did not have: light grey, no palette colour.
pub(super) const NOT_IN_RUN_SWATCH: &str = "#dddddd";

/// The CSS colour of a variant's swatch; neutral for a variant the run did not have (a study's,
/// in the study tables).
pub(super) fn swatch_of(a: &ServerAnalysis, variant: &str) -> String {
    if a.variants.iter().any(|x| x == variant) {
        plot::css_colour(colour_of(a, variant))
    } else {
        NOT_IN_RUN_SWATCH.to_owned()
    }
}

fn legend_for(a: &ServerAnalysis, variants: &[&str], stroke: Stroke) -> Vec<LegendEntry> {
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
pub(super) fn variants_with(a: &ServerAnalysis, has: impl Fn(&str) -> bool) -> Vec<&str> {
    a.variants
        .iter()
        .map(String::as_str)
        .filter(|v| has(v))
        .collect()
}

/// req/s against concurrency of every variant on `cells` (one workload), with CI whiskers.
pub(super) fn throughput(a: &ServerAnalysis, cells: &[&ThroughputCell]) -> Plot {
    let levels = connection_levels(a);
    let x_scale = if levels.len() > 2 {
        Scale::Log
    } else {
        Scale::Linear
    };
    let mut p = Plot::new(
        Axis::new("connections", x_scale)
            .ticks(levels.iter().map(|&c| (c as f64, c.to_string())).collect()),
        Axis::new("req/s", Scale::LinearFromZero),
    );
    let vs = variants_with(a, |v| cells.iter().any(|c| c.variant == v));
    for v in &vs {
        let mut mine: Vec<&&ThroughputCell> = cells.iter().filter(|c| c.variant == *v).collect();
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
    p
}

/// Label of the percentile at x = log10(1 / (1 - p)) = d.
pub(super) fn percentile_label(d: i32) -> String {
    match d {
        i32::MIN..=0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        _ => format!("99.{}%", "9".repeat((d - 2) as usize)),
    }
}

/// A latency spectrum plot: x = 1/(1-p) on a log axis (so each decade is one more nine), the
/// maximum one decade after the last percentile the samples tell.
fn spectrum(a: &ServerAnalysis, spectra: &[&Spectrum]) -> Plot {
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
pub(super) fn spectra(
    a: &ServerAnalysis,
    kind: Kind,
    caption: impl Fn(&str, usize, &str) -> String,
) -> Vec<Figure> {
    let mut figures = Vec::new();
    for w in &a.workloads {
        let mut sp: Vec<&Spectrum> = a
            .spectra
            .iter()
            .filter(|s| s.kind == kind && &s.workload == w)
            .collect();
        if sp.is_empty() {
            continue;
        }
        sp.sort_by_key(|s| colour_of(a, &s.variant));
        let n: Vec<String> = sp
            .iter()
            .map(|s| format!("{} n={}", s.variant, thousands(s.count as f64)))
            .collect();
        figures.push(Figure::new(
            caption(w, sp[0].connections, &n.join(", ")),
            &spectrum(a, &sp),
        ));
    }
    figures
}

/// Each variant's cold starts as an empirical distribution (ECDF).
pub(super) fn cold_start(a: &ServerAnalysis) -> Plot {
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
    p
}

/// p99 latency against offered load on workload `w`: corrected (solid) and uncorrected (dashed).
pub(super) fn open_loop(a: &ServerAnalysis, w: &str) -> Option<Plot> {
    let pts: Vec<_> = a.open_loop.iter().filter(|o| o.workload == w).collect();
    if pts.is_empty() {
        return None;
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
                .map(|o| (o.offered_rps, o.runs.corrected.p99))
                .collect(),
            stroke: Stroke::Solid,
            markers: true,
        });
        p.lines.push(Line {
            colour,
            points: mine
                .iter()
                .map(|o| (o.offered_rps, o.runs.uncorrected.p99))
                .collect(),
            stroke: Stroke::Dashed,
            markers: false,
        });
    }
    p.legend = legend_for(a, &vs, Stroke::Solid);
    for (label, stroke) in [
        ("corrected p99", Stroke::Solid),
        ("uncorrected p99", Stroke::Dashed),
    ] {
        p.legend.push(LegendEntry {
            colour: None,
            label: label.into(),
            stroke,
        });
    }
    Some(p)
}

/// One group of horizontal bars (a workload), one bar per variant.
pub(super) struct BarGroup<'a> {
    pub label: &'a str,
    pub bars: Vec<BarValue<'a>>,
}

/// One variant's bar: its value and 95% CI.
pub(super) struct BarValue<'a> {
    pub variant: &'a str,
    pub value: f64,
    pub ci: Option<(f64, f64)>,
}

impl<'a> BarValue<'a> {
    /// The estimate's value, and its interval when more than one run is behind it.
    pub(super) fn of(variant: &'a str, e: &Estimate) -> Self {
        Self {
            variant,
            value: e.value,
            ci: (e.n > 1).then_some((e.lo, e.hi)),
        }
    }
}

/// One bar plot per group (a workload), captioned "GROUP: caption": groups whose values differ
/// by orders of magnitude (hello, compute) would hide each other on one axis.
pub(super) fn figure_per_group(
    a: &ServerAnalysis,
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

/// Horizontal bars grouped by workload, coloured by variant, with CI whiskers and values.
pub(super) fn grouped_bars(
    a: &ServerAnalysis,
    x_desc: &str,
    groups: &[BarGroup<'_>],
    fmt: fn(f64) -> String,
) -> Plot {
    let laid: Vec<bars::Group> = groups
        .iter()
        .map(|g| bars::Group {
            label: g.label.to_owned(),
            bars: g
                .bars
                .iter()
                .map(|b| bars::Entry {
                    colour: Some(colour_of(a, b.variant)),
                    value: b.value,
                    interval: b.ci,
                    text: fmt(if b.value.is_finite() { b.value } else { 0.0 }),
                })
                .collect(),
        })
        .collect();
    let mut p = bars::horizontal(Axis::new(x_desc, Scale::LinearFromZero), 0.0, &laid);
    let vs = variants_with(a, |v| {
        groups.iter().any(|g| g.bars.iter().any(|b| b.variant == v))
    });
    p.legend = legend_for(a, &vs, Stroke::Box);
    p
}

/// The answer's chart: on one workload, each variant's CPU per request × native at equal load, a
/// bar each, cheapest first, its 95% interval as a whisker, on a log axis from native (1). The
/// group labels are the variants, so it needs no legend.
pub(super) fn cheapest_first(a: &ServerAnalysis, costs: &[Cost]) -> Option<Plot> {
    let mut at_equal: Vec<(&str, Estimate)> = costs
        .iter()
        .filter_map(|c| Some((c.variant.as_str(), c.equal_load?.1)))
        .collect();
    if at_equal.is_empty() {
        return None;
    }
    at_equal.sort_by(|x, y| x.1.value.total_cmp(&y.1.value));
    let groups: Vec<bars::Group> = at_equal
        .iter()
        .map(|(v, e)| bars::Group {
            label: (*v).to_owned(),
            bars: vec![bars::Entry {
                colour: Some(colour_of(a, v)),
                value: e.value,
                interval: (e.n > 1).then_some((e.lo, e.hi)),
                text: crate::format::times(e),
            }],
        })
        .collect();
    Some(bars::horizontal(
        Axis::new(
            &format!("CPU per request × {BASELINE}'s at the same rate (log scale; 1: {BASELINE})"),
            Scale::Log,
        ),
        1.0,
        &groups,
    ))
}

/// A cost × native for every variant and workload, as `pick` takes it from the analysis' costs:
/// a dot per variant over each workload, its 95% interval as a whisker, on a log axis where the
/// dashed line at 1 is native.
pub(super) fn costs(a: &ServerAnalysis, pick: fn(&Cost) -> Option<Estimate>) -> Plot {
    let per_workload: Vec<(&String, Vec<Cost>)> = a
        .workloads
        .iter()
        .map(|w| (w, a.costs(w)))
        .filter(|(_, c)| c.iter().any(|c| pick(c).is_some()))
        .collect();
    let vs = variants_with(a, |v| {
        per_workload
            .iter()
            .any(|(_, cs)| cs.iter().any(|c| c.variant == v && pick(c).is_some()))
    });
    let mut p = Plot::new(
        Axis::new("", Scale::Linear).ticks(
            per_workload
                .iter()
                .enumerate()
                .map(|(i, (w, _))| (i as f64, (*w).clone()))
                .collect(),
        ),
        Axis::new("CPU per request × native (log)", Scale::Log),
    );
    let width = 0.8 / vs.len().max(1) as f64;
    for (vi, v) in vs.iter().enumerate() {
        let colour = Some(colour_of(a, v));
        let offset = (vi as f64 - (vs.len() as f64 - 1.0) / 2.0) * width;
        for (wi, (_, cs)) in per_workload.iter().enumerate() {
            let Some(e) = cs.iter().find(|c| c.variant == *v).and_then(pick) else {
                continue;
            };
            let x = wi as f64 + offset;
            p.lines.push(Line {
                colour,
                points: vec![(x, e.value)],
                stroke: Stroke::Solid,
                markers: true,
            });
            if e.n > 1 {
                p.whiskers.push(Whisker {
                    colour,
                    vertical: true,
                    at: x,
                    lo: e.lo,
                    hi: e.hi,
                });
            }
        }
    }
    // Native's line, and room for the dots at either end of the workloads.
    let ends = (-0.5, per_workload.len() as f64 - 0.5);
    p.lines.push(Line {
        colour: None,
        points: vec![(ends.0, 1.0), (ends.1, 1.0)],
        stroke: Stroke::Dashed,
        markers: false,
    });
    p.legend = legend_for(a, &vs, Stroke::Solid);
    p.legend.push(LegendEntry {
        colour: None,
        label: format!("{BASELINE} = 1"),
        stroke: Stroke::Dashed,
    });
    p
}

/// CPU per request against the offered rate on workload `w`, a line per variant (log axes):
/// how what a request costs falls as a server gets busier.
pub(super) fn equal_load(a: &ServerAnalysis, w: &str) -> Option<Plot> {
    let pts: Vec<_> = a
        .equal_load
        .iter()
        .filter(|p| p.workload == w && p.cpu_us.n > 0)
        .collect();
    if pts.is_empty() {
        return None;
    }
    let mut p = Plot::new(
        Axis::new("offered req/s (log)", Scale::Log),
        Axis::new("CPU µs per request (log)", Scale::Log),
    );
    let vs = variants_with(a, |v| pts.iter().any(|o| o.variant == v));
    for v in &vs {
        let mut mine: Vec<_> = pts.iter().filter(|o| o.variant == *v).collect();
        mine.sort_by(|x, y| x.rate.total_cmp(&y.rate));
        let colour = Some(colour_of(a, v));
        p.lines.push(Line {
            colour,
            points: mine.iter().map(|o| (o.rate, o.cpu_us.value)).collect(),
            stroke: Stroke::Solid,
            markers: true,
        });
        p.whiskers
            .extend(mine.iter().filter(|o| o.cpu_us.n > 1).map(|o| Whisker {
                colour,
                vertical: true,
                at: o.rate,
                lo: o.cpu_us.lo,
                hi: o.cpu_us.hi,
            }));
    }
    p.legend = legend_for(a, &vs, Stroke::Solid);
    Some(p)
}
