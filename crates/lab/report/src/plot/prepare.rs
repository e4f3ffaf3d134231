//! A plot's data in plot coordinates (log10 on a log axis), its ranges and its ticks: what
//! plotters is given, with everything it cannot take left out.

use super::{Axis, Bar, Line, Plot, Scale, Whisker};

/// The plot's values in plot coordinates, its ranges and ticks.
pub(super) struct Prepared {
    /// Lines with their points in plot coordinates.
    pub(super) lines: Vec<Line>,
    pub(super) whiskers: Vec<Whisker>,
    pub(super) bars: Vec<Bar>,
    pub(super) labels: Vec<(f64, f64, String)>,
    pub(super) x: (f64, f64),
    pub(super) y: (f64, f64),
    pub(super) x_ticks: Vec<(f64, String)>,
    pub(super) y_ticks: Vec<(f64, String)>,
}

impl Prepared {
    pub(super) fn of(p: &Plot) -> Option<Self> {
        let pt = |&(x, y): &(f64, f64)| Some((p.x.tf(x)?, p.y.tf(y)?));
        let lines: Vec<_> = p
            .lines
            .iter()
            .map(|l| Line {
                points: l.points.iter().filter_map(pt).collect(),
                ..*l
            })
            .filter(|l| !l.points.is_empty())
            .collect();
        let whiskers: Vec<Whisker> = p
            .whiskers
            .iter()
            .filter_map(|w| {
                let (along, across) = if w.vertical {
                    (&p.x, &p.y)
                } else {
                    (&p.y, &p.x)
                };
                let (lo, hi) = (across.tf(w.lo)?, across.tf(w.hi)?);
                Some(Whisker {
                    at: along.tf(w.at)?,
                    lo: lo.min(hi),
                    hi: lo.max(hi),
                    ..*w
                })
            })
            .collect();
        let bars: Vec<Bar> = p
            .bars
            .iter()
            .filter_map(|b| {
                Some(Bar {
                    x0: p.x.tf(b.x0)?,
                    x1: p.x.tf(b.x1)?,
                    y0: p.y.tf(b.y0)?,
                    y1: p.y.tf(b.y1)?,
                    ..*b
                })
            })
            .collect();
        let labels: Vec<(f64, f64, String)> = p
            .labels
            .iter()
            .filter_map(|(x, y, s)| Some((p.x.tf(*x)?, p.y.tf(*y)?, s.clone())))
            .collect();

        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for l in &lines {
            xs.extend(l.points.iter().map(|q| q.0));
            ys.extend(l.points.iter().map(|q| q.1));
        }
        for w in &whiskers {
            let (along, across) = if w.vertical {
                (&mut xs, &mut ys)
            } else {
                (&mut ys, &mut xs)
            };
            along.push(w.at);
            across.extend([w.lo, w.hi]);
        }
        for b in &bars {
            xs.extend([b.x0, b.x1]);
            ys.extend([b.y0, b.y1]);
        }
        if xs.is_empty() || ys.is_empty() {
            return None;
        }
        for (x, y) in p.extent.iter().filter_map(pt) {
            xs.push(x);
            ys.push(y);
        }
        let x = range(&xs, p.x.scale)?;
        let y = range(&ys, p.y.scale)?;
        Some(Self {
            x_ticks: ticks(&p.x, x),
            y_ticks: ticks(&p.y, y),
            lines,
            whiskers,
            bars,
            labels,
            x,
            y,
        })
    }
}

/// The plotted range of `values` (plot coordinates), padded, never empty.
fn range(values: &[f64], scale: Scale) -> Option<(f64, f64)> {
    let finite = values.iter().copied().filter(|v| v.is_finite());
    let (mut lo, mut hi) = finite.fold(None, |acc: Option<(f64, f64)>, v| {
        Some(acc.map_or((v, v), |(a, b)| (a.min(v), b.max(v))))
    })?;
    if scale == Scale::LinearFromZero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(lo.abs()).max(1e-300) {
        // One value (or all equal): widen around it.
        let half = match scale {
            Scale::Log => 0.5,
            _ if hi == 0.0 => 1.0,
            _ => hi.abs() * 0.1,
        };
        if scale == Scale::LinearFromZero && lo >= 0.0 {
            hi += 2.0 * half;
        } else {
            lo -= half;
            hi += half;
        }
    }
    let pad = (hi - lo) * 0.05;
    if scale == Scale::LinearFromZero {
        // Keep the bars' and lines' base at exactly 0.
        if lo < 0.0 {
            lo -= pad;
        }
        if hi > 0.0 {
            hi += pad * 1.6;
        }
    } else {
        lo -= pad;
        hi += pad;
    }
    Some((lo, hi))
}

/// Ticks in plot coordinates with their labels.
fn ticks(axis: &Axis, (lo, hi): (f64, f64)) -> Vec<(f64, String)> {
    let inside = |v: f64| v >= lo - 1e-9 && v <= hi + 1e-9;
    if let Some(t) = &axis.ticks {
        return t
            .iter()
            .filter_map(|(v, s)| Some((axis.tf(*v)?, s.clone())))
            .filter(|(v, _)| inside(*v))
            .collect();
    }
    match axis.scale {
        Scale::Log => {
            let (d0, d1) = (lo.floor() as i32, hi.ceil() as i32);
            let span = d1 - d0;
            let mut out = Vec::new();
            let every = if span > 8 { 2 } else { 1 };
            let mantissas: &[f64] = if hi - lo < 0.7 {
                &[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
            } else if hi - lo < 2.5 {
                &[1.0, 2.0, 5.0]
            } else {
                &[1.0]
            };
            for d in (d0..=d1).filter(|d| (d - d0) % every == 0) {
                for m in mantissas {
                    let v = m * 10f64.powi(d);
                    let t = v.log10();
                    if inside(t) {
                        out.push((t, tick_label(v, d)));
                    }
                }
            }
            out
        }
        _ => {
            let raw = (hi - lo) / 6.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|s| *s >= raw * (1.0 - 1e-9))
                .unwrap_or(10.0 * mag);
            let decimals = (-step.log10().floor()).max(0.0) as usize;
            let mut v = (lo / step).ceil() * step;
            let mut out = Vec::new();
            while v <= hi + step * 1e-9 && out.len() < 50 {
                let shown = if v.abs() < step * 1e-9 { 0.0 } else { v };
                out.push((shown, number_label(shown, decimals)));
                v += step;
            }
            out
        }
    }
}

/// Label of `v` = m × 10^d on a log axis.
fn tick_label(v: f64, d: i32) -> String {
    let decimals = if v.fract() == 0.0 || d >= 1 {
        0
    } else {
        // 1.5 × 10^d needs one more decimal than 1 × 10^d.
        (1 - d).max(0) as usize
    };
    let s = number_label(v, decimals);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// `v` with `decimals` decimals and thousands separators.
fn number_label(v: f64, decimals: usize) -> String {
    crate::format::grouped(v, decimals)
}

pub(super) fn label_of(ticks: &[(f64, String)], v: f64) -> String {
    ticks
        .iter()
        .find(|(t, _)| (t - v).abs() <= 1e-9 * t.abs().max(1.0))
        .map(|(_, s)| s.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_plot_ticks() {
        let t = ticks(&Axis::new("", Scale::Log), (-0.2, 2.3));
        let labels: Vec<&str> = t.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1", "10", "100"]);
        let t = ticks(&Axis::new("", Scale::Log), (-1.4, -0.6));
        assert!(t.iter().any(|t| t.1 == "0.05"), "{t:?}");
        let t = ticks(&Axis::new("", Scale::LinearFromZero), (0.0, 12_500.0));
        assert!(t.iter().any(|t| t.1 == "10,000"), "{t:?}");
        assert_eq!(number_label(-1234.5, 1), "-1,234.5");
        assert_eq!(number_label(-0.0001, 2), "0.00");
    }
}
