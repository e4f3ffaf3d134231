//! Thresholds that fail a run, as k6's do a test: `errors>1%`, `p99>50ms`, `rps<1000`. Each is a
//! condition that *fails* when it holds (`--fail-if`), checked against a load report.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::report::LoadReport;

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Metric {
    /// Failed requests: a count, or with `%` a share of the requests attempted.
    Errors,
    /// Complete responses per second.
    Rps,
    /// Latency (ms): mean, percentiles, max.
    Mean,
    P50,
    P90,
    P99,
    P99_9,
    Max,
}

const METRICS: &[(&str, Metric)] = &[
    ("errors", Metric::Errors),
    ("rps", Metric::Rps),
    ("mean", Metric::Mean),
    ("p50", Metric::P50),
    ("p90", Metric::P90),
    ("p99.9", Metric::P99_9),
    ("p99", Metric::P99),
    ("max", Metric::Max),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Gt,
    Ge,
    Lt,
    Le,
}

/// A failing condition: `metric op value`. Serialised as its text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Threshold {
    text: String,
    metric: Metric,
    op: Op,
    /// In the metric's unit: a count, a share (0..=1, with `percent`), req/s or ms.
    value: f64,
    /// `errors` as a share of the requests attempted.
    percent: bool,
}

/// A threshold that held: which, and what was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Crossed {
    pub threshold: String,
    /// The measured value, in the threshold's unit: `errors 12.5%`, `p99 62.1ms`.
    pub measured: String,
}

impl fmt::Display for Crossed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (measured {})", self.threshold, self.measured)
    }
}

const SYNTAX: &str = "a threshold is METRIC OP VALUE, e.g. errors>1%, errors>0, p99>50ms, rps<1000; \
     metrics: errors (a count, or a % of requests), rps, mean, p50, p90, p99, p99.9, max \
     (latencies in ms, or with a unit: us, ms, s); OP: >, >=, <, <=";

impl FromStr for Threshold {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("threshold {text:?}: {why}; {SYNTAX}");
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (name, rest) = METRICS
            .iter()
            .find_map(|(name, m)| compact.strip_prefix(name).map(|rest| ((*name, *m), rest)))
            .ok_or_else(|| bad("unknown metric"))?;
        let (op, number) = [(">=", Op::Ge), ("<=", Op::Le), (">", Op::Gt), ("<", Op::Lt)]
            .iter()
            .find_map(|(s, op)| rest.strip_prefix(s).map(|n| (*op, n)))
            .ok_or_else(|| bad("no comparison after the metric"))?;
        let split = number
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(number.len());
        let (digits, unit) = number.split_at(split);
        let value: f64 = digits
            .parse()
            .map_err(|_| bad("the value is not a number"))?;
        let (metric, percent, value) = match (name.1, unit) {
            (Metric::Errors, "") => (Metric::Errors, false, value),
            (Metric::Errors, "%") if value <= 100.0 => (Metric::Errors, true, value / 100.0),
            (Metric::Errors, "%") => return Err(bad("a share is at most 100%")),
            (Metric::Rps, "") => (Metric::Rps, false, value),
            (Metric::Errors | Metric::Rps, _) => return Err(bad("unexpected unit")),
            (m, "" | "ms") => (m, false, value),
            (m, "s") => (m, false, value * 1e3),
            (m, "us" | "µs") => (m, false, value / 1e3),
            (_, _) => return Err(bad("unknown unit (latencies take us, ms or s)")),
        };
        Ok(Threshold {
            text: compact,
            metric,
            op,
            value,
            percent,
        })
    }
}

impl TryFrom<String> for Threshold {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Threshold> for String {
    fn from(t: Threshold) -> String {
        t.text
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Threshold {
    /// Whether the condition holds for `r` (the run fails), and what was measured.
    pub fn check(&self, r: &LoadReport) -> Option<Crossed> {
        let e = &r.errors;
        // Every request that was sent: complete responses and those that failed before one.
        let attempted = r.responses + e.connect + e.read_write + e.timeout;
        let l = &r.latency_ms;
        let (measured, shown) = match self.metric {
            Metric::Errors if self.percent => {
                // Nothing attempted: no request succeeded either, which a share of 100% says.
                let share = match attempted {
                    0 => 1.0,
                    n => e.total() as f64 / n as f64,
                };
                (share, format!("errors {:.3}%", share * 100.0))
            }
            Metric::Errors => (e.total() as f64, format!("errors {}", e.total())),
            Metric::Rps => (r.rps, format!("rps {:.1}", r.rps)),
            m => {
                let ms = match m {
                    Metric::Mean => l.mean,
                    Metric::P50 => l.p50,
                    Metric::P90 => l.p90,
                    Metric::P99 => l.p99,
                    Metric::P99_9 => l.p99_9,
                    _ => l.max,
                };
                let name = METRICS.iter().find(|(_, x)| *x == m).map_or("", |(n, _)| n);
                (ms, format!("{name} {ms:.3}ms"))
            }
        };
        // A latency over no response at all is no latency: fail rather than pass on a 0.
        let no_latency = !matches!(self.metric, Metric::Errors | Metric::Rps) && r.responses == 0;
        let holds = no_latency
            || match self.op {
                Op::Gt => measured > self.value,
                Op::Ge => measured >= self.value,
                Op::Lt => measured < self.value,
                Op::Le => measured <= self.value,
            };
        holds.then(|| Crossed {
            threshold: self.text.clone(),
            measured: if no_latency {
                "no response".into()
            } else {
                shown
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(responses: u64, timeouts: u64, non_2xx: u64, p99: f64, rps: f64) -> LoadReport {
        let mut r: LoadReport = serde_json::from_value(serde_json::json!({
            "url": "http://x/", "method": "GET", "connections": 1, "threads": 1,
            "responses": responses, "ok": responses - non_2xx,
            "errors": { "connect": 0, "read_write": 0, "timeout": timeouts, "non_2xx": non_2xx },
            "elapsed_secs": 1.0, "rps": rps,
            "latency_ms": { "mean": 1.0, "p50": 1.0, "p90": 2.0, "p99": p99, "p99_9": 9.0, "max": 10.0 },
            "body_bytes": 0, "status_counts": {}, "first_error": null
        }))
        .unwrap();
        r.rps = rps;
        r
    }

    #[test]
    fn parses_what_users_write_and_refuses_the_rest() {
        for ok in [
            "errors>1%",
            "errors > 0",
            "p99>50ms",
            "p99.9>=0.2s",
            "rps<1000",
            "max<=900us",
            "mean>3",
            "p50 > 1.5 ms",
        ] {
            ok.parse::<Threshold>().unwrap_or_else(|e| panic!("{e}"));
        }
        for (bad, why) in [
            ("latency>5ms", "unknown metric"),
            ("p99=5ms", "no comparison"),
            ("p99>fast", "not a number"),
            ("p99>5min", "unknown unit"),
            ("errors>101%", "at most 100%"),
            ("rps>5ms", "unexpected unit"),
            ("", "unknown metric"),
        ] {
            let e = bad.parse::<Threshold>().unwrap_err();
            assert!(
                e.contains(why) && e.contains("METRIC OP VALUE"),
                "{bad}: {e}"
            );
        }
        assert_eq!(
            "p99 > 50ms".parse::<Threshold>().unwrap().to_string(),
            "p99>50ms"
        );
    }

    #[test]
    fn crossed_names_the_threshold_and_the_measured_value() {
        let r = report(990, 10, 0, 62.5, 990.0);
        let t = |s: &str| s.parse::<Threshold>().unwrap().check(&r);
        assert_eq!(
            t("errors>0.5%").unwrap().to_string(),
            "errors>0.5% (measured errors 1.000%)"
        );
        assert!(t("errors>1%").is_none(), "exactly 1% is not more than 1%");
        assert!(t("errors>=1%").is_some());
        assert_eq!(t("errors>9").unwrap().measured, "errors 10");
        assert_eq!(t("p99>50ms").unwrap().measured, "p99 62.500ms");
        assert!(t("p99>0.07s").is_none());
        assert!(t("p99>62000us").is_some());
        assert_eq!(t("rps<1000").unwrap().measured, "rps 990.0");
        assert!(t("rps<900").is_none());
        assert!(t("max<=10ms").is_some());
    }

    #[test]
    fn a_run_without_responses_crosses_every_latency_and_share_threshold() {
        let r = report(0, 0, 0, 0.0, 0.0);
        for s in ["p99>50ms", "mean>1s", "errors>50%"] {
            assert!(s.parse::<Threshold>().unwrap().check(&r).is_some(), "{s}");
        }
        assert!("errors>0".parse::<Threshold>().unwrap().check(&r).is_none());
    }
}
