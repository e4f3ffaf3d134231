//! Cold start: each variant's launches, and their columns.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;

use super::{Ratio, ratio};
use crate::format::{fmt_ms, fmt_rss_after};
use crate::table::{Column, Shows, Value, figure, text};
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
