//! Inline SVG plots drawn with plotters' SVG backend: lines (solid or dashed) with markers and
//! confidence whiskers, steps (ECDFs) and horizontal bars, each with a legend beside the plot.
//!
//! Every plot is described as data ([`Plot`]) and drawn by [`Plot::svg`], which guards what
//! plotters cannot take: no finite value at all (no plot), a single value or equal values (the
//! range is widened), NaN and infinities and, on log axes, values <= 0 (dropped).

pub(crate) mod bars;
mod draw;
mod prepare;

use plotters::style::RGBColor;

use prepare::Prepared;

pub(crate) const WIDTH: u32 = 720;
pub(crate) const HEIGHT: u32 = 360;
/// Width of the legend column on the right of every plot.
const LEGEND_W: u32 = 240;
const FONT: &str = "sans-serif";

/// A categorical palette: Tableau 10, then the lighter Tableau 20 tones of the same hues, so that
/// up to 20 series (a program suite's engines) have a colour each. A variant's colour is its
/// index in the run's list, so it is the same in every plot and table.
const PALETTE: [(u8, u8, u8); 20] = [
    (0x4e, 0x79, 0xa7),
    (0xf2, 0x8e, 0x2b),
    (0xe1, 0x57, 0x59),
    (0x76, 0xb7, 0xb2),
    (0x59, 0xa1, 0x4f),
    (0xed, 0xc9, 0x48),
    (0xb0, 0x7a, 0xa1),
    (0xff, 0x9d, 0xa7),
    (0x9c, 0x75, 0x5f),
    (0x79, 0x70, 0x6e),
    (0xae, 0xc7, 0xe8),
    (0xff, 0xbb, 0x78),
    (0xff, 0x98, 0x96),
    (0x9e, 0xda, 0xe5),
    (0x98, 0xdf, 0x8a),
    (0xdb, 0xdb, 0x8d),
    (0xc5, 0xb0, 0xd5),
    (0xf7, 0xb6, 0xd2),
    (0xc4, 0x9c, 0x94),
    (0xc7, 0xc7, 0xc7),
];
const GREY: RGBColor = RGBColor(0x55, 0x55, 0x55);

fn colour(i: Option<usize>) -> RGBColor {
    match i {
        Some(i) => {
            let (r, g, b) = PALETTE[i % PALETTE.len()];
            RGBColor(r, g, b)
        }
        None => GREY,
    }
}

/// The CSS colour of palette entry `i` (for swatches in tables).
pub(crate) fn css_colour(i: usize) -> String {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scale {
    Linear,
    /// Linear, and the range always holds 0.
    LinearFromZero,
    /// Base-10 logarithmic: values <= 0 are not drawn.
    Log,
}

#[derive(Debug, Clone)]
pub(crate) struct Axis {
    pub desc: String,
    pub scale: Scale,
    /// Tick positions (data units) and their labels; `None`: chosen automatically.
    pub ticks: Option<Vec<(f64, String)>>,
}

impl Axis {
    pub(crate) fn new(desc: &str, scale: Scale) -> Self {
        Self {
            desc: desc.to_owned(),
            scale,
            ticks: None,
        }
    }

    pub(crate) fn ticks(mut self, ticks: Vec<(f64, String)>) -> Self {
        self.ticks = Some(ticks);
        self
    }

    /// Data value to plot coordinate (log10 on a log axis); `None` when it cannot be drawn.
    pub(crate) fn tf(&self, v: f64) -> Option<f64> {
        match self.scale {
            Scale::Log if v > 0.0 && v.is_finite() => Some(v.log10()),
            Scale::Log => None,
            _ => v.is_finite().then_some(v),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stroke {
    Solid,
    Dashed,
    /// A filled box (bars).
    Box,
}

#[derive(Debug, Clone)]
pub(crate) struct Line {
    /// Palette index (`None`: grey).
    pub colour: Option<usize>,
    pub points: Vec<(f64, f64)>,
    pub stroke: Stroke,
    pub markers: bool,
}

/// A confidence interval drawn as an I-shaped whisker.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Whisker {
    pub colour: Option<usize>,
    /// Vertical (at x, from lo to hi in y) or horizontal (at y, lo..hi in x).
    pub vertical: bool,
    pub at: f64,
    pub lo: f64,
    pub hi: f64,
}

/// A filled rectangle from (x0, y0) to (x1, y1), data units.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bar {
    pub colour: Option<usize>,
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
    pub y1: f64,
}

#[derive(Debug, Clone)]
pub(crate) struct LegendEntry {
    pub colour: Option<usize>,
    pub label: String,
    pub stroke: Stroke,
}

#[derive(Debug, Clone)]
pub(crate) struct Plot {
    pub width: u32,
    pub height: u32,
    pub x: Axis,
    pub y: Axis,
    pub lines: Vec<Line>,
    pub whiskers: Vec<Whisker>,
    pub bars: Vec<Bar>,
    /// Text at a data point, left-aligned and vertically centred (values beside bars).
    pub labels: Vec<(f64, f64, String)>,
    /// Points (data units) the ranges must hold though nothing is drawn there (room for text).
    pub extent: Vec<(f64, f64)>,
    pub legend: Vec<LegendEntry>,
}

impl Plot {
    pub(crate) fn new(x: Axis, y: Axis) -> Self {
        Self {
            width: WIDTH,
            height: HEIGHT,
            x,
            y,
            lines: Vec::new(),
            whiskers: Vec::new(),
            bars: Vec::new(),
            labels: Vec::new(),
            extent: Vec::new(),
            legend: Vec::new(),
        }
    }

    /// The plot as an `<svg>` element, or `Ok(None)` when it holds nothing drawable.
    pub(crate) fn svg(&self) -> anyhow::Result<Option<String>> {
        let Some(p) = Prepared::of(self) else {
            return Ok(None);
        };
        let mut buf = String::new();
        draw::draw(self, &p, &mut buf).map_err(|e| anyhow::anyhow!("drawing a plot: {e}"))?;
        // Inline SVG in HTML needs no namespace declaration (and the report holds no URLs).
        let svg = buf.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
        Ok(Some(compact(&svg)))
    }
}

/// Drops the SVG backend's indentation and newlines between tags (a third of the bytes).
fn compact(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    for line in svg.lines() {
        out.push_str(line.trim_start());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(points: Vec<(f64, f64)>) -> Line {
        Line {
            colour: Some(0),
            points,
            stroke: Stroke::Solid,
            markers: true,
        }
    }

    #[test]
    fn report_plot_ranges_survive_degenerate_data() {
        for scale in [Scale::Linear, Scale::LinearFromZero, Scale::Log] {
            for pts in [
                vec![],
                vec![(1.0, 1.0)],
                vec![(0.0, 0.0)],
                vec![(f64::NAN, 2.0), (3.0, f64::INFINITY)],
                vec![(5.0, 5.0), (5.0, 5.0)],
                vec![(1.0, -3.0), (2.0, 1e-9)],
            ] {
                let mut p = Plot::new(Axis::new("x", scale), Axis::new("y", scale));
                p.lines.push(line(pts.clone()));
                p.whiskers.push(Whisker {
                    colour: None,
                    vertical: true,
                    at: 1.0,
                    lo: f64::NAN,
                    hi: 2.0,
                });
                p.legend.push(LegendEntry {
                    colour: Some(1),
                    label: "a very long variant name indeed".into(),
                    stroke: Stroke::Dashed,
                });
                let svg = p.svg().unwrap();
                if let Some(svg) = svg {
                    assert!(svg.starts_with("<svg") && !svg.contains("http"), "{svg}");
                }
            }
        }
    }

    #[test]
    fn report_plot_legend_shows_a_dot_for_a_dotted_series_only() {
        let mut p = Plot::new(
            Axis::new("x", Scale::Linear),
            Axis::new("y", Scale::LinearFromZero),
        );
        p.lines.push(line(vec![(50.0, 10.0)]));
        p.lines.push(Line {
            colour: Some(1),
            markers: false,
            ..line(vec![(50.0, 5.0), (100.0, 6.0)])
        });
        for colour in [Some(0), Some(1)] {
            p.legend.push(LegendEntry {
                colour,
                label: format!("{colour:?}"),
                stroke: Stroke::Solid,
            });
        }
        let svg = p.svg().unwrap().unwrap();
        // One dot for the single point, one in the first legend entry, none for the second.
        assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
    }
}
