//! The section report.html leads with: what Wasm costs here. One plot of every variant's
//! capacity × native (responses per server CPU-second) on every workload with its interval, a
//! few sentences written from the data (each workload's cost per request against native's, the
//! cold start), and what was not measured and why.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::BASELINE;
use wasmlab_analysis::stats::Estimate;
use wasmlab_model::run::Status;

use super::plots;
use crate::format::fmt_ms;
use crate::html::Figure;
use crate::sections;

#[derive(Serialize)]
pub(in crate::html) struct Answer {
    /// The concurrency level the figures are at.
    connections: Option<usize>,
    /// The native baseline was measured: without it there is no ratio to give.
    baseline: bool,
    /// One line a workload: each variant's CPU per request as a multiple of native's.
    per_request: Vec<String>,
    /// The cold start, in a sentence.
    cold_start: Option<String>,
    figure: Option<Figure>,
    /// What each variant shown is: (name, its variant file's `about`).
    about: Vec<(String, String)>,
    /// The variants left out, each with why: skipped (cannot run here) or failed.
    left_out: Vec<String>,
}

pub(super) fn answer(a: &ServerAnalysis) -> Answer {
    let baseline = a.variants.iter().any(|v| v == BASELINE);
    let conns = a.reference_connections;
    let per_request: Vec<String> = match (baseline, conns) {
        (true, Some(c)) => a
            .workloads
            .iter()
            .filter_map(|w| per_request(a, w, c))
            .collect(),
        _ => Vec::new(),
    };
    let figure = conns.filter(|_| !per_request.is_empty()).map(|c| {
        Figure::new(
            format!(
                "Capacity × native at {c} connections: responses per CPU-second of each variant's processes over native's (> 1: cheaper than native; whiskers: 95% CI)"
            ),
            &plots::capacity_ratios(a, c),
        )
    });
    Answer {
        connections: conns,
        baseline,
        per_request,
        cold_start: cold_start(a),
        figure,
        about: a
            .variants
            .iter()
            .filter(|v| {
                a.throughput.iter().any(|c| &c.variant == *v)
                    || a.cold_start.iter().any(|r| &r.variant == *v)
            })
            .filter_map(|v| {
                let spec = a.info.variant_specs.iter().find(|s| &s.name == v)?;
                Some((v.clone(), spec.about.clone()))
            })
            .collect(),
        left_out: sections::outcomes(a)
            .iter()
            .filter(|o| o.status.is_out())
            .map(|o| match o.status {
                Status::Failed => format!("{} failed, so it is in no figure: {}", o.name, o.why()),
                _ => format!("{} was skipped: {}", o.name, o.why()),
            })
            .collect(),
    }
}

/// What a request of workload `w` costs each variant at `conns` connections, as a multiple of
/// native's CPU per request (the inverse of its capacity ratio), cheapest first.
fn per_request(a: &ServerAnalysis, w: &str, conns: usize) -> Option<String> {
    let mut costs: Vec<(&str, Estimate)> = a
        .variants
        .iter()
        .filter(|v| *v != BASELINE)
        .filter_map(|v| {
            let e = a.throughput_cell(v, w, conns)?.capacity_ratio?;
            Some((v.as_str(), inverse(&e)?))
        })
        .collect();
    if costs.is_empty() {
        return None;
    }
    costs.sort_by(|x, y| x.1.value.total_cmp(&y.1.value));
    let listed: Vec<String> = costs
        .iter()
        .map(|(v, e)| format!("{v} {}", times(e)))
        .collect();
    Some(format!(
        "Per {w} request, the server's CPU against native's: {}.",
        listed.join(", ")
    ))
}

/// CPU per request × native from capacity × native: its inverse, the interval turned over.
fn inverse(e: &Estimate) -> Option<Estimate> {
    (e.value > 0.0 && e.value.is_finite()).then(|| Estimate {
        value: 1.0 / e.value,
        lo: 1.0 / e.hi,
        hi: 1.0 / e.lo,
        n: e.n,
    })
}

/// `1.88× [1.85–1.92]`, or `1.88×` with one run.
fn times(e: &Estimate) -> String {
    let digits = |v: f64| {
        if v >= 10.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.2}")
        }
    };
    if e.n >= 2 && e.lo.is_finite() && e.hi.is_finite() {
        format!("{}× [{}–{}]", digits(e.value), digits(e.lo), digits(e.hi))
    } else {
        format!("{}×", digits(e.value))
    }
}

/// The cold start of each variant against native's, fastest first.
fn cold_start(a: &ServerAnalysis) -> Option<String> {
    let native = a.cold_start.iter().find(|r| r.variant == BASELINE)?;
    let mut others: Vec<_> = a
        .cold_start
        .iter()
        .filter(|r| r.variant != BASELINE)
        .collect();
    others.sort_by(|x, y| x.first_200.p50.total_cmp(&y.first_200.p50));
    let listed: Vec<String> = others
        .iter()
        .map(|r| match &r.ratio_to_native {
            Some(e) => format!(
                "{} {} ms ({})",
                r.variant,
                fmt_ms(r.first_200.p50),
                times(e)
            ),
            None => format!("{} {} ms", r.variant, fmt_ms(r.first_200.p50)),
        })
        .collect();
    let tail = if listed.is_empty() {
        String::new()
    } else {
        format!("; {}", listed.join(", "))
    };
    Some(format!(
        "From exec to the first {} (median of {} launches): {BASELINE} {} ms{tail}.",
        a.info.suite.cold_start_answer(),
        native.n,
        fmt_ms(native.first_200.p50)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capacity_ratio_becomes_a_cost_per_request() {
        let e = Estimate {
            value: 0.5,
            lo: 0.4,
            hi: 0.625,
            n: 3,
        };
        let c = inverse(&e).unwrap();
        assert_eq!(times(&c), "2.00× [1.60–2.50]");
        let one = Estimate { n: 1, ..e };
        assert_eq!(times(&inverse(&one).unwrap()), "2.00×");
        assert!(inverse(&Estimate { value: 0.0, ..e }).is_none());
    }

    #[test]
    fn the_answer_names_every_variant_and_what_was_left_out() {
        let a = crate::tests::analysis();
        let ans = answer(&a);
        assert!(ans.baseline);
        assert_eq!(
            ans.per_request.len(),
            a.workloads.len(),
            "{:?}",
            ans.per_request
        );
        assert!(
            ans.per_request[0].starts_with("Per hello request")
                && ans.per_request[0].contains("wasmtime-pooled"),
            "{:?}",
            ans.per_request
        );
        assert!(
            ans.cold_start
                .as_deref()
                .unwrap()
                .contains("wasmtime-pooled")
        );
        assert!(ans.figure.is_some());
        assert!(
            ans.left_out
                .iter()
                .any(|l| l.starts_with("wasmtime-naive failed")),
            "{:?}",
            ans.left_out
        );
        assert!(
            ans.left_out
                .iter()
                .any(|l| l.contains("wasmedge-cli was skipped"))
        );
    }
}
