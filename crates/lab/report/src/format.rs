//! How every figure is written, in every output: numbers with thousands separators,
//! milliseconds to about three significant digits, ratios with their intervals.

use wasmlab_analysis::servers::ColdStartRow;
use wasmlab_analysis::stats::Estimate;
use wasmlab_load_data::ErrorCounts;

/// `v` rounded to an integer, with thousands separators ("–" when not finite).
pub(crate) fn thousands(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    grouped(v, 0)
}

/// `v` with `decimals` decimals and thousands separators in the integer part.
pub(crate) fn grouped(v: f64, decimals: usize) -> String {
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
pub(crate) fn percent(share: f64) -> String {
    if share.is_finite() {
        format!("{:.0}%", share * 100.0)
    } else {
        "–".into()
    }
}

/// Requests per second: no decimals below 10 only when the value is small.
pub(crate) fn fmt_rps(v: f64) -> String {
    if v.is_finite() && v.abs() < 10.0 {
        format!("{v:.2}")
    } else {
        thousands(v)
    }
}

/// A rate in few characters: `50k/s`, `2.5k/s`, `95/s`, `1.2M/s`.
pub(crate) fn rate_short(v: f64) -> String {
    let (v, unit) = match v {
        v if v >= 1e6 => (v / 1e6, "M"),
        v if v >= 1e3 => (v / 1e3, "k"),
        v => (v, ""),
    };
    let digits = if v.fract().abs() < 1e-9 || v >= 100.0 {
        0
    } else {
        1
    };
    format!("{v:.digits$}{unit}/s")
}

/// Milliseconds with about three significant digits (at least µs resolution below 10 ms).
pub(crate) fn fmt_ms(v: f64) -> String {
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

/// Microseconds with about three significant digits.
pub(crate) fn fmt_us(v: f64) -> String {
    fmt_ms(v)
}

/// How a ratio is written, in every table and every output: a server's to native with three
/// decimals (`0.652`), a program's to its baseline with two and a `×` (`1.64×`); "–" where there
/// is none.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RatioStyle {
    decimals: usize,
    times: bool,
}

/// A server's figure over native's.
pub(crate) const SERVER_RATIO: RatioStyle = RatioStyle {
    decimals: 3,
    times: false,
};

/// A program's time over its baseline's.
pub(crate) const PROGRAM_RATIO: RatioStyle = RatioStyle {
    decimals: 2,
    times: true,
};

impl RatioStyle {
    /// The value alone: `0.652`, `1.64×`.
    pub(crate) fn point(self, v: f64) -> String {
        if !v.is_finite() {
            return "–".into();
        }
        let times = if self.times { "×" } else { "" };
        format!("{v:.*}{times}", self.decimals)
    }

    /// The value with its interval on one line: `0.652 [0.611–0.690] n=3`, `0.652 n=1`.
    pub(crate) fn estimate(self, e: Option<&Estimate>) -> String {
        match e.filter(|e| e.value.is_finite() && e.n > 0) {
            Some(e) => match self.interval(e) {
                Some(interval) => format!("{} {interval}", self.point(e.value)),
                None => self.point(e.value),
            },
            None => "–".into(),
        }
    }

    /// What qualifies the value: its interval, `[0.611–0.690] n=3`, where two runs or more
    /// give one; `n=1` from one run.
    pub(crate) fn interval(self, e: &Estimate) -> Option<String> {
        match e.n {
            0 => None,
            1 => Some("n=1".into()),
            n if e.lo.is_finite() && e.hi.is_finite() => {
                Some(format!("[{}–{}] n={n}", self.point(e.lo), self.point(e.hi)))
            }
            n => Some(format!("n={n}")),
        }
    }
}

pub(crate) fn mib(kib: f64) -> String {
    if kib.is_finite() {
        grouped(kib / 1024.0, 1)
    } else {
        "–".into()
    }
}

/// A cold start's "RSS after the first 200" column: the median over launches, MiB.
pub(crate) fn fmt_rss_after(r: &ColdStartRow) -> String {
    r.rss_mib
        .map_or_else(|| "–".to_owned(), |m| format!("{:.1}", m.p50))
}

pub(crate) fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1024.0 * 1024.0 {
        format!("{} MiB", grouped(b / 1024.0 / 1024.0, 2))
    } else {
        format!("{} KiB", grouped(b / 1024.0, 1))
    }
}

/// Total errors and, when there are any, their classes.
pub(crate) fn fmt_errors(e: &ErrorCounts) -> String {
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

/// CPU seconds per 1,000 requests.
pub(crate) fn cpu_per_1k(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.4}")
    } else {
        "–".into()
    }
}

/// A ratio with its interval as the answer writes it: `1.88× [1.85–1.92]`, `17× [10–28]`, or `1.88×`
/// with one run.
pub(crate) fn times(e: &Estimate) -> String {
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
