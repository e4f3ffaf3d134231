//! Cold start: each variant's launches, exec to the first complete 200 (and to its `listening`
//! line, first connect and first byte), its RSS then, and its median's ratio to native's.

use serde::Serialize;
use wasmlab_model::sample::{Kind, Sample, StartTimes};

use super::BASELINE;
use crate::stats::{self, Estimate};

/// Cold start of one variant over its launches.
#[derive(Debug, Clone, Serialize)]
pub struct ColdStartRow {
    pub variant: String,
    pub n: usize,
    /// Exec to the first complete 200, ms: p50 / p90 / p99 over launches.
    pub first_200: Quantiles,
    /// Exec to the `listening` line, ms; None for a variant that does not print its address.
    pub listening: Option<Quantiles>,
    /// Exec to the first successful TCP connect, ms.
    pub connected: Quantiles,
    /// Exec to the first byte of the first 200, ms.
    pub first_byte: Quantiles,
    /// p50 of first_200 against the baseline's, with a bootstrap CI over launches (unpaired).
    pub ratio_to_native: Option<Estimate>,
    /// Every launch's first_200, ms (for the distribution plot).
    pub values_ms: Vec<f64>,
    /// RSS of the process trees right after the first 200, MiB, over the launches that
    /// recorded it (None for older results).
    pub rss_mib: Option<Quantiles>,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Quantiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
}

impl Quantiles {
    pub fn of(values: &[f64]) -> Self {
        let q = |p| stats::percentile(values, p).unwrap_or(0.0);
        Self {
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            min: q(0.0),
            max: q(1.0),
            mean: stats::mean(values).unwrap_or(0.0),
        }
    }
}

/// Each variant's launches, with its median's ratio to native's.
pub(super) fn cold_starts(variants: &[String], samples: &[&Sample]) -> Vec<ColdStartRow> {
    let mut rows: Vec<ColdStartRow> = Vec::new();
    for v in variants {
        let starts: Vec<StartTimes> = samples
            .iter()
            .filter(|s| s.kind == Kind::ColdStart && &s.variant == v)
            .filter_map(|s| s.start)
            .collect();
        if starts.is_empty() {
            continue;
        }
        let col = |f: fn(&StartTimes) -> f64| -> Vec<f64> { starts.iter().map(f).collect() };
        let values = col(|s| s.first_200_ms);
        let printed: Vec<f64> = col(|s| s.listening_ms)
            .into_iter()
            .filter(|v| *v > 0.0)
            .collect();
        let rss: Vec<f64> = starts
            .iter()
            .filter(|s| s.rss_kib > 0)
            .map(|s| s.rss_kib as f64 / 1024.0)
            .collect();
        rows.push(ColdStartRow {
            variant: v.clone(),
            n: starts.len(),
            first_200: Quantiles::of(&values),
            listening: (!printed.is_empty()).then(|| Quantiles::of(&printed)),
            connected: Quantiles::of(&col(|s| s.connected_ms)),
            first_byte: Quantiles::of(&col(|s| s.first_byte_ms)),
            ratio_to_native: None,
            values_ms: values,
            rss_mib: (!rss.is_empty()).then(|| Quantiles::of(&rss)),
        });
    }
    if let Some(base) = rows
        .iter()
        .find(|r| r.variant == BASELINE)
        .map(|r| r.values_ms.clone())
    {
        for r in &mut rows {
            r.ratio_to_native = stats::median_ratio(&r.values_ms, &base);
        }
    }
    rows
}
