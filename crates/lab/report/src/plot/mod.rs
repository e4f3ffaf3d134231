//! Inline SVG plots drawn with plotters' SVG backend: lines (solid or dashed) with markers and
//! confidence whiskers, steps (ECDFs) and horizontal bars, each with a legend beside the plot.
//!
//! Every plot is described as data ([`Plot`]) and drawn by [`Plot::svg`], which guards what
//! plotters cannot take: no finite value at all (no plot), a single value or equal values (the
//! range is widened), NaN and infinities and, on log axes, values <= 0 (dropped).

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub const WIDTH: u32 = 720;
pub const HEIGHT: u32 = 360;
/// Width of the legend column on the right of every plot.
const LEGEND_W: u32 = 190;
const FONT: &str = "sans-serif";

/// Colour-blind-friendly categorical palette (Tableau 10); a variant's colour is its index in
/// `Analysis::variants`, so it is the same in every plot.
const PALETTE: [(u8, u8, u8); 10] = [
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
pub fn css_colour(i: usize) -> String {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Linear, and the range always holds 0.
    LinearFromZero,
    /// Base-10 logarithmic: values <= 0 are not drawn.
    Log,
}

#[derive(Debug, Clone)]
pub struct Axis {
    pub desc: String,
    pub scale: Scale,
    /// Tick positions (data units) and their labels; `None`: chosen automatically.
    pub ticks: Option<Vec<(f64, String)>>,
}

impl Axis {
    pub fn new(desc: &str, scale: Scale) -> Self {
        Self {
            desc: desc.to_owned(),
            scale,
            ticks: None,
        }
    }

    pub fn ticks(mut self, ticks: Vec<(f64, String)>) -> Self {
        self.ticks = Some(ticks);
        self
    }

    /// Data value to plot coordinate (log10 on a log axis); `None` when it cannot be drawn.
    fn tf(&self, v: f64) -> Option<f64> {
        match self.scale {
            Scale::Log if v > 0.0 && v.is_finite() => Some(v.log10()),
            Scale::Log => None,
            _ => v.is_finite().then_some(v),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stroke {
    Solid,
    Dashed,
    /// A filled box (bars).
    Box,
}

#[derive(Debug, Clone)]
pub struct Line {
    /// Palette index (`None`: grey).
    pub colour: Option<usize>,
    pub points: Vec<(f64, f64)>,
    pub stroke: Stroke,
    pub markers: bool,
}

/// A confidence interval drawn as an I-shaped whisker.
#[derive(Debug, Clone, Copy)]
pub struct Whisker {
    pub colour: Option<usize>,
    /// Vertical (at x, from lo to hi in y) or horizontal (at y, lo..hi in x).
    pub vertical: bool,
    pub at: f64,
    pub lo: f64,
    pub hi: f64,
}

/// A filled rectangle from (x0, y0) to (x1, y1), data units.
#[derive(Debug, Clone, Copy)]
pub struct Bar {
    pub colour: Option<usize>,
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
    pub y1: f64,
}

#[derive(Debug, Clone)]
pub struct LegendEntry {
    pub colour: Option<usize>,
    pub label: String,
    pub stroke: Stroke,
}

#[derive(Debug, Clone)]
pub struct Plot {
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

type Coord = Cartesian2d<Ticked, Ticked>;

/// A linear f64 axis whose ticks are exactly the ones given (no light mesh lines).
struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let t = ((*v - self.lo) / (self.hi - self.lo)).clamp(-10.0, 10.0);
        let t = if t.is_finite() { t } else { 0.0 };
        limit.0 + (f64::from(limit.1 - limit.0) * t).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl Plot {
    pub fn new(x: Axis, y: Axis) -> Self {
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
    pub fn svg(&self) -> anyhow::Result<Option<String>> {
        let Some(p) = Prepared::of(self) else {
            return Ok(None);
        };
        let mut buf = String::new();
        draw(self, &p, &mut buf).map_err(|e| anyhow::anyhow!("drawing a plot: {e}"))?;
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

/// The plot's values in plot coordinates, its ranges and ticks.
struct Prepared {
    /// Lines with their points in plot coordinates.
    lines: Vec<Line>,
    whiskers: Vec<Whisker>,
    bars: Vec<Bar>,
    labels: Vec<(f64, f64, String)>,
    x: (f64, f64),
    y: (f64, f64),
    x_ticks: Vec<(f64, String)>,
    y_ticks: Vec<(f64, String)>,
}

impl Prepared {
    fn of(p: &Plot) -> Option<Self> {
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
    super::grouped(v, decimals)
}

fn label_of(ticks: &[(f64, String)], v: f64) -> String {
    ticks
        .iter()
        .find(|(t, _)| (t - v).abs() <= 1e-9 * t.abs().max(1.0))
        .map(|(_, s)| s.clone())
        .unwrap_or_default()
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw(p: &Plot, d: &Prepared, buf: &mut String) -> DrawResult {
    let legend_w = if p.legend.is_empty() { 0 } else { LEGEND_W };
    let root = SVGBackend::with_string(buf, (p.width, p.height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (area, legend_area) = root.split_horizontally(p.width - legend_w);

    let longest = d
        .y_ticks
        .iter()
        .map(|t| t.1.chars().count())
        .max()
        .unwrap_or(1);
    let y_label_w = (longest as u32 * 7 + if p.y.desc.is_empty() { 14 } else { 34 }).clamp(40, 220);
    let mut chart = ChartBuilder::on(&area)
        .margin(12)
        .x_label_area_size(if p.x.desc.is_empty() { 26 } else { 44 })
        .y_label_area_size(y_label_w)
        .build_cartesian_2d(
            Ticked {
                lo: d.x.0,
                hi: d.x.1,
                ticks: d.x_ticks.iter().map(|t| t.0).collect(),
            },
            Ticked {
                lo: d.y.0,
                hi: d.y.1,
                ticks: d.y_ticks.iter().map(|t| t.0).collect(),
            },
        )?;
    let xf = |v: &f64| label_of(&d.x_ticks, *v);
    let yf = |v: &f64| label_of(&d.y_ticks, *v);
    chart
        .configure_mesh()
        .x_desc(p.x.desc.as_str())
        .y_desc(p.y.desc.as_str())
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .bold_line_style(RGBColor(0xe4, 0xe4, 0xe4))
        .axis_style(RGBColor(0x88, 0x88, 0x88))
        .draw()?;

    draw_data(&mut chart, p, d)?;

    if !p.legend.is_empty() {
        // A series drawn with dots shows a dot in its legend entry too: with one point (one
        // concurrency level) the dot is all the plot shows.
        let dotted: Vec<Option<usize>> = p
            .lines
            .iter()
            .filter(|l| l.markers)
            .map(|l| l.colour)
            .collect();
        draw_legend(&legend_area, &p.legend, &dotted)?;
    }
    root.present()?;
    Ok(())
}

fn draw_data(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Coord>,
    p: &Plot,
    d: &Prepared,
) -> DrawResult {
    for b in &d.bars {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(b.x0, b.y0), (b.x1, b.y1)],
            colour(b.colour).mix(0.85).filled(),
        )))?;
    }
    for l in &d.lines {
        let style = colour(l.colour).stroke_width(2);
        let pts = &l.points;
        match l.stroke {
            Stroke::Dashed => {
                chart.draw_series(DashedLineSeries::new(pts.iter().copied(), 7, 5, style))?;
            }
            _ => {
                chart.draw_series(LineSeries::new(pts.iter().copied(), style))?;
            }
        }
    }
    // Whisker caps: 4 px either side, in plot coordinates.
    let plot_w = f64::from(p.width.saturating_sub(LEGEND_W + 80).max(100));
    let plot_h = f64::from(p.height.saturating_sub(70).max(60));
    let cap_x = (d.x.1 - d.x.0) * 4.0 / plot_w;
    let cap_y = (d.y.1 - d.y.0) * 4.0 / plot_h;
    chart.draw_series(d.whiskers.iter().map(|w| {
        let pts = if w.vertical {
            let (x, c) = (w.at, cap_x);
            vec![
                (x - c, w.lo),
                (x + c, w.lo),
                (x, w.lo),
                (x, w.hi),
                (x - c, w.hi),
                (x + c, w.hi),
            ]
        } else {
            let (y, c) = (w.at, cap_y);
            vec![
                (w.lo, y - c),
                (w.lo, y + c),
                (w.lo, y),
                (w.hi, y),
                (w.hi, y - c),
                (w.hi, y + c),
            ]
        };
        let style = if w.colour.is_none() {
            GREY.stroke_width(1)
        } else {
            colour(w.colour).stroke_width(1)
        };
        PathElement::new(pts, style)
    }))?;
    for l in &d.lines {
        if l.markers {
            let col = colour(l.colour);
            chart.draw_series(l.points.iter().map(|&q| Circle::new(q, 3, col.filled())))?;
        }
    }
    let text = TextStyle::from((FONT, 12).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    chart.draw_series(
        d.labels
            .iter()
            .map(|(x, y, s)| Text::new(s.clone(), (*x, *y), text.clone())),
    )?;
    Ok(())
}

fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    entries: &[LegendEntry],
    dotted: &[Option<usize>],
) -> DrawResult {
    let text = TextStyle::from((FONT, 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, e) in entries.iter().enumerate() {
        let y = 22 + 20 * i as i32;
        let c = colour(e.colour);
        match e.stroke {
            Stroke::Solid => {
                area.draw(&PathElement::new(vec![(6, y), (32, y)], c.stroke_width(2)))?
            }
            Stroke::Dashed => area.draw(&DashedPathElement::new(
                vec![(6, y), (32, y)],
                6,
                4,
                c.stroke_width(2),
            ))?,
            Stroke::Box => area.draw(&Rectangle::new([(10, y - 6), (28, y + 6)], c.filled()))?,
        }
        if e.stroke != Stroke::Box && dotted.contains(&e.colour) {
            area.draw(&Circle::new((19, y), 3, c.filled()))?;
        }
        // Long names are cut so they stay inside the plot.
        let label: String = if e.label.chars().count() > 22 {
            e.label
                .chars()
                .take(21)
                .chain(std::iter::once('…'))
                .collect()
        } else {
            e.label.clone()
        };
        area.draw(&Text::new(label, (38, y), text.clone()))?;
    }
    Ok(())
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
