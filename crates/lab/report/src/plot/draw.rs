//! Drawing a prepared plot with plotters' SVG backend: the mesh and ticks, bars, lines,
//! whiskers, markers and labels, and the legend beside it.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::prepare::{Prepared, label_of};
use super::{FONT, GREY, LEGEND_W, LegendEntry, Plot, Stroke, colour};

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

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

pub(super) fn draw(p: &Plot, d: &Prepared, buf: &mut String) -> DrawResult {
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
        // Long names are cut so they stay inside the plot (28 characters: every built-in
        // variant's name, `js-component-wasmtime-serve` the longest, fits whole).
        let label: String = if e.label.chars().count() > 28 {
            e.label
                .chars()
                .take(27)
                .chain(std::iter::once('…'))
                .collect()
        } else {
            e.label.clone()
        };
        area.draw(&Text::new(label, (38, y), text.clone()))?;
    }
    Ok(())
}
