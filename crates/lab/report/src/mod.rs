//! report.html (one offline file, inline SVG) and summary.md, from an [`Analysis`].
//!
//! Both are drawn from the same [`Analysis`] as the terminal table and the CSVs, so every figure
//! agrees. Every figure derived from several runs shows its 95% bootstrap interval and `n`.

mod html;
mod md;
pub mod plot;
pub mod terminal;

use wasmlab_load::ErrorCounts;

use crate::analyze::stats::Estimate;
use crate::analyze::{Analysis, BASELINE, ThroughputCell};

/// report.html: one self-contained file (inline CSS and SVG, no scripts, no network).
pub fn render_html(a: &Analysis) -> anyhow::Result<String> {
    html::render(a)
}

/// summary.md: the headline tables in Markdown.
pub fn render_summary_md(a: &Analysis) -> String {
    md::render(a)
}

/// `v` rounded to an integer, with thousands separators ("–" when not finite).
fn thousands(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    grouped(v, 0)
}

/// `v` with `decimals` decimals and thousands separators in the integer part.
fn grouped(v: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, v.abs());
    let (int, frac) = s.split_once('.').unwrap_or((s.as_str(), ""));
    let mut out = String::with_capacity(s.len() + 4);
    if v < 0.0 && s.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        out.push('-');
    }
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// A share (0..1) as a whole percentage.
fn percent(share: f64) -> String {
    if share.is_finite() {
        format!("{:.0}%", share * 100.0)
    } else {
        "–".into()
    }
}

/// Requests per second: no decimals below 10 only when the value is small.
fn fmt_rps(v: f64) -> String {
    if v.is_finite() && v.abs() < 10.0 {
        format!("{v:.2}")
    } else {
        thousands(v)
    }
}

/// Milliseconds with about three significant digits (at least µs resolution below 10 ms).
fn fmt_ms(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a < 10.0 {
        format!("{v:.3}")
    } else if a < 100.0 {
        format!("{v:.2}")
    } else if a < 1000.0 {
        format!("{v:.1}")
    } else {
        thousands(v)
    }
}

fn fmt_ratio(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "–".into()
    }
}

/// A ratio to native as `0.652 [0.611–0.690] n=3`, "–" when there is none.
fn fmt_ratio_est(e: Option<&Estimate>) -> String {
    e.map_or_else(|| "–".into(), |e| e.show(fmt_ratio))
}

fn mib(kib: f64) -> String {
    if kib.is_finite() {
        grouped(kib / 1024.0, 1)
    } else {
        "–".into()
    }
}

/// A cold start's "RSS after the first 200" column: the median over launches, MiB.
fn fmt_rss_after(r: &crate::analyze::ColdStartRow) -> String {
    r.rss_mib
        .map_or_else(|| "–".to_owned(), |m| format!("{:.1}", m.p50))
}

fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1024.0 * 1024.0 {
        format!("{} MiB", grouped(b / 1024.0 / 1024.0, 2))
    } else {
        format!("{} KiB", grouped(b / 1024.0, 1))
    }
}

/// Total errors and, when there are any, their classes.
fn fmt_errors(e: &ErrorCounts) -> String {
    let total = e.total();
    if total == 0 {
        return "0".into();
    }
    let classes: Vec<String> = [
        ("connect", e.connect),
        ("read/write", e.read_write),
        ("timeout", e.timeout),
        ("non-2xx", e.non_2xx),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(k, n)| format!("{k} {}", thousands(*n as f64)))
    .collect();
    format!("{} ({})", thousands(total as f64), classes.join(", "))
}

/// The saturation flag of a throughput cell, if its generator saturated in any run (report.html
/// has it as data, html::Flag).
fn saturation_flag(c: &ThroughputCell) -> Option<String> {
    (c.generator_saturated_runs > 0).then(|| {
        format!(
            "⚠ generator saturated in {}/{} runs",
            c.generator_saturated_runs,
            c.runs.len()
        )
    })
}

/// The note that explains the saturation flag (report.html.j2 says the same in HTML).
fn saturation_note() -> String {
    format!(
        "⚠ generator saturated in k/n runs: in k of the cell's n runs the load generator's \
         threads were on a CPU for at least {:.0}% of the run, so the generator (not the server) \
         may have been the limit: the server may be faster than shown. Flagged on a variant's \
         cell, its ratio to native may be understated; flagged on native's cell, overstated.",
        wasmlab_load::SATURATED_SHARE * 100.0
    )
}

/// Concurrency levels measured, ascending.
fn connection_levels(a: &Analysis) -> Vec<usize> {
    let mut v: Vec<usize> = a.throughput.iter().map(|c| c.connections).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The variant's palette index (its position in `a.variants`).
fn colour_of(a: &Analysis, variant: &str) -> usize {
    a.variants
        .iter()
        .position(|v| v == variant)
        .unwrap_or(a.variants.len())
}

fn has_baseline(a: &Analysis) -> bool {
    a.variants.iter().any(|v| v == BASELINE)
}

#[cfg(test)]
mod tests;
