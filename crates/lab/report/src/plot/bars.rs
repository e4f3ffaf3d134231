//! Horizontal bars in labelled groups, the one bar chart of every report: a server run's figure
//! per workload (a bar per variant, from 0) and a program run's ratio per engine (from 1, the
//! baseline, on a log axis; the study's figure beneath).

use super::{Axis, Bar, Plot, Scale, Whisker};

/// One bar: its palette colour (`None`: grey), value, 95% interval and the text after it.
pub(crate) struct Entry {
    pub(crate) colour: Option<usize>,
    pub(crate) value: f64,
    pub(crate) interval: Option<(f64, f64)>,
    pub(crate) text: String,
}

/// Bars under one label on the vertical axis.
pub(crate) struct Group {
    pub(crate) label: String,
    pub(crate) bars: Vec<Entry>,
}

/// Half a bar's height, and the gap between groups, in rows.
const HALF: f64 = 0.38;
const GROUP_GAP: f64 = 0.6;

/// The groups' bars along `x`, each from `base` to its value (leftwards when the value is below
/// it), its interval as a whisker and its text just after whichever ends further right; the
/// plot's height grows with the bars. The legend is the caller's.
pub(crate) fn horizontal(x: Axis, base: f64, groups: &[Group]) -> Plot {
    let log = x.scale == Scale::Log;
    let mut p = Plot::new(x, Axis::new("", Scale::Linear));
    let mut ticks = Vec::new();
    let (mut row, mut right, mut left) = (0.0f64, base, base);
    for g in groups {
        let first = row;
        for b in &g.bars {
            let y = -row;
            let value = if b.value.is_finite() { b.value } else { base };
            p.bars.push(Bar {
                colour: b.colour,
                x0: value.min(base),
                x1: value.max(base),
                y0: y - HALF,
                y1: y + HALF,
            });
            let mut end = value.max(base);
            left = left.min(value);
            if let Some((lo, hi)) = b
                .interval
                .filter(|(l, h)| l.is_finite() && h.is_finite() && h > l)
            {
                p.whiskers.push(Whisker {
                    colour: None,
                    vertical: false,
                    at: y,
                    lo,
                    hi,
                });
                end = end.max(hi);
                left = left.min(lo);
            }
            right = right.max(end);
            p.labels.push((end, y, b.text.clone()));
            row += 1.0;
        }
        ticks.push((-(first + row - 1.0) / 2.0, g.label.clone()));
        row += GROUP_GAP;
    }
    // The texts just after the bars, and room right of the longest for its text: a share of
    // the axis on a linear one, a factor on a log one.
    if log {
        for l in &mut p.labels {
            l.0 *= 1.08;
        }
        p.extent.push((right * 2.0, 0.0));
        p.extent.push((left * 0.9, 0.0));
    } else {
        let gap = if right > 0.0 { right * 0.015 } else { 0.02 };
        for l in &mut p.labels {
            l.0 += gap;
        }
        p.extent
            .push((if right > 0.0 { right * 1.22 } else { 1.0 }, 0.0));
    }
    p.y = Axis::new("", Scale::Linear).ticks(ticks);
    p.height = ((row * 20.0) as u32 + 70).clamp(150, 900);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(value: f64, interval: Option<(f64, f64)>) -> Entry {
        Entry {
            colour: Some(0),
            value,
            interval,
            text: format!("{value}"),
        }
    }

    #[test]
    fn bars_run_from_the_base_and_their_texts_clear_the_whiskers() {
        let groups = [
            Group {
                label: "a".into(),
                bars: vec![bar(0.5, Some((0.4, 0.7))), bar(3.0, None)],
            },
            Group {
                label: "b".into(),
                bars: vec![bar(f64::NAN, None)],
            },
        ];
        let p = horizontal(Axis::new("× baseline", Scale::Log), 1.0, &groups);
        let ends: Vec<(f64, f64)> = p.bars.iter().map(|b| (b.x0, b.x1)).collect();
        assert_eq!(ends, [(0.5, 1.0), (1.0, 3.0), (1.0, 1.0)]);
        assert!((p.labels[0].0 - 1.08).abs() < 1e-9, "after the bar's base");
        assert!((p.labels[1].0 - 3.24).abs() < 1e-9);
        let ticks = p.y.ticks.unwrap();
        assert_eq!(ticks[0], (-0.5, "a".into()), "centred on its two bars");
        assert_eq!(ticks[1].1, "b");
        let linear = horizontal(Axis::new("MiB", Scale::LinearFromZero), 0.0, &groups[..1]);
        assert_eq!(linear.bars[0].x0, 0.0);
        assert!(linear.labels[0].0 > 0.7, "past the whisker");
        assert!(linear.svg().unwrap().is_some());
    }
}
