//! report.html and summary.md, from one view model a run, each through its templates.
//!
//! report.html is one offline file, inline CSS and SVG, no scripts and no network references.
//! Its markup is in templates rendered by minijinja with HTML auto-escaping (their names end in
//! `.html.j2`): `page` holds the head and styles, `macros` the tables, cells and figures, and a
//! template per kind of suite its sections. summary.md's templates (`.md.j2`) read the same view
//! model, with Markdown's escaping of a table cell as the `cell` filter. This module and its
//! children build the view model: every figure comes formatted from the report's sections, cells
//! that need markup (swatch, bold ratio, flags, code) as structured [`Cell`]s, and the plotters
//! SVGs, the only markup made in Rust, passed as safe strings.

mod history;
mod programs;
mod servers;

use minijinja::Value;
use serde::Serialize;
use wasmlab_analysis::stats::Estimate;
use wasmlab_analysis::{ProgramAnalysis, ServerAnalysis};

use crate::format::SERVER_RATIO;
use crate::plot::Plot;
use crate::table::{self, Column, Mark, Shows};

/// The templates, by name; a name ending in `.html.j2` turns HTML auto-escaping on.
const TEMPLATES: &[(&str, &str)] = &[
    ("page.html.j2", include_str!("page.html.j2")),
    ("macros.html.j2", include_str!("macros.html.j2")),
    ("servers.html.j2", include_str!("servers.html.j2")),
    ("programs.html.j2", include_str!("programs.html.j2")),
    ("history.html.j2", include_str!("history.html.j2")),
    ("macros.md.j2", include_str!("macros.md.j2")),
    ("servers.md.j2", include_str!("servers.md.j2")),
    ("programs.md.j2", include_str!("programs.md.j2")),
];

/// A run's summary.md and report.html, each made or why not.
pub(crate) struct Pages {
    pub(crate) summary_md: anyhow::Result<String>,
    pub(crate) report_html: anyhow::Result<String>,
}

impl Pages {
    /// Both pages from one view model, through the kind of suite's two templates (`KIND.md.j2`,
    /// `KIND.html.j2`).
    fn render(kind: &str, view: impl Serialize) -> Self {
        let view = Value::from_serialize(view);
        // The templates parsed once for both pages.
        let env = environment();
        let render = |ext: &str| -> anyhow::Result<String> {
            let env = env.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
            Ok(env
                .get_template(&format!("{kind}.{ext}.j2"))?
                .render(&view)?)
        };
        Self {
            summary_md: render("md"),
            report_html: render("html"),
        }
    }
}

fn environment() -> anyhow::Result<minijinja::Environment<'static>> {
    let mut env = minijinja::Environment::new();
    // Lines that hold only a block tag leave nothing behind: one table row stays one line.
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    // Text safe inside a Markdown table cell (summary.md's templates).
    env.add_filter("cell", |s: String| table::markdown_cell(&s));
    for (name, text) in TEMPLATES {
        env.add_template(name, text)?;
    }
    Ok(env)
}

/// summary.md and report.html of a server suite's run.
pub(crate) fn servers(a: &ServerAnalysis) -> Pages {
    Pages::render("servers", servers::Report::new(a))
}

/// history.html of a results directory's runs.
pub(crate) fn history(h: &wasmlab_analysis::history::History) -> anyhow::Result<String> {
    let view = Value::from_serialize(history::page(h));
    Ok(environment()?
        .get_template("history.html.j2")?
        .render(&view)?)
}

/// summary.md and report.html of a program suite's run.
pub(crate) fn programs(a: &ProgramAnalysis) -> Pages {
    Pages::render("programs", programs::Report::new(a))
}

/// A table cell. The template escapes `text` and adds the markup the other fields ask for.
#[derive(Serialize, Default)]
struct Cell {
    text: String,
    /// A CSS colour: the swatch before the text.
    swatch: Option<String>,
    /// The class of a span around the text: `sig` (bold: the interval excludes 1), `flag`, or
    /// `ci` (a ratio's interval, set small under it).
    span: Option<&'static str>,
    /// A second line in small type (a ratio's interval).
    note: Option<String>,
    /// A third line in small type (at equal load, how busy native was).
    below: Option<String>,
    /// The text is code (a path).
    code: bool,
    /// Warnings, each on a line of its own after the text.
    flags: Vec<table::Flag>,
    /// Text that may wrap (a reason), where the others keep to one line.
    wrap: bool,
}

impl Cell {
    fn code(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            code: true,
            ..Self::default()
        }
    }

    /// A name with its colour swatch.
    fn swatch(text: &str, colour: String) -> Self {
        Self {
            text: text.to_owned(),
            swatch: Some(colour),
            ..Self::default()
        }
    }

    /// A server's ratio to native as a matrix shows it: the value, bold when the interval
    /// excludes 1, over its interval in small type.
    fn compact_ratio(e: Option<&Estimate>) -> Self {
        Self::of(table::Value::ratio(SERVER_RATIO, e), &|_| String::new())
    }

    /// A flag's text, as a flag.
    fn flagged(text: String) -> Self {
        Self {
            text,
            span: Some("flag"),
            ..Self::default()
        }
    }

    fn wrapping(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            wrap: true,
            ..Self::default()
        }
    }
}

impl Cell {
    /// A section's cell as report.html marks it up: a variant's name with its `swatch`.
    fn of(v: table::Value, swatch: &dyn Fn(&str) -> String) -> Self {
        let mut cell = match v.mark {
            Mark::Plain => Self::from(v.text),
            Mark::Variant => Self::swatch(&v.text, swatch(&v.text)),
            Mark::Significant => Self {
                span: Some("sig"),
                text: v.text,
                ..Self::default()
            },
        };
        cell.note = v.note;
        cell.flags = v.flags;
        cell
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Self {
            text,
            ..Self::default()
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        text.to_owned().into()
    }
}

/// A table: `head` is text; a column is left-aligned (text) where `left` holds for it, and
/// shown in report.html where `html` does, in summary.md where `md` does.
#[derive(Serialize)]
struct Table {
    head: Vec<String>,
    left: Vec<bool>,
    html: Vec<bool>,
    md: Vec<bool>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    /// The table with its first `left` columns left-aligned.
    fn new(head: &[&str], left: usize, rows: Vec<Vec<Cell>>) -> Self {
        Self::owned(head.iter().map(|h| (*h).to_owned()).collect(), left, rows)
    }

    fn owned(head: Vec<String>, left: usize, rows: Vec<Vec<Cell>>) -> Self {
        Self {
            left: (0..head.len()).map(|i| i < left).collect(),
            html: vec![true; head.len()],
            md: vec![true; head.len()],
            head,
            rows,
        }
    }

    /// The table, or None when it has no rows.
    fn some(head: &[&str], left: usize, rows: Vec<Vec<Cell>>) -> Option<Self> {
        (!rows.is_empty()).then(|| Self::new(head, left, rows))
    }

    /// A section's table as report.html and summary.md show it: the columns either shows, a
    /// variant's name with its `swatch`.
    fn laid<R>(columns: &[Column<'_, R>], rows: &[R], swatch: &dyn Fn(&str) -> String) -> Self {
        let columns: Vec<&Column<'_, R>> =
            table::shown(columns, Shows::HTML.and(Shows::MARKDOWN)).collect();
        Self {
            head: columns.iter().map(|c| c.head.clone()).collect(),
            left: columns.iter().map(|c| c.left).collect(),
            html: columns.iter().map(|c| c.shows(Shows::HTML)).collect(),
            md: columns.iter().map(|c| c.shows(Shows::MARKDOWN)).collect(),
            rows: rows
                .iter()
                .map(|r| {
                    columns
                        .iter()
                        .map(|c| Cell::of(c.value(r), swatch))
                        .collect()
                })
                .collect(),
        }
    }
}

/// A plot with its caption; without an SVG the template says why there is none.
#[derive(Serialize)]
struct Figure {
    caption: String,
    svg: Option<Value>,
    /// Why the plot could not be drawn.
    error: Option<String>,
}

impl Figure {
    fn new(caption: String, p: &Plot) -> Self {
        let (svg, error) = match p.svg() {
            // plotters' SVG, the one piece of markup not made by the template.
            Ok(svg) => (svg.map(Value::from_safe_string), None),
            Err(e) => (None, Some(format!("{e:#}"))),
        };
        Self {
            caption,
            svg,
            error,
        }
    }
}

/// A command line as a shell would take it back.
fn shell_join(args: &[String]) -> String {
    args.iter()
        .map(|s| {
            if !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                s.clone()
            } else {
                format!("'{}'", s.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn commands_are_quoted_as_a_shell_reads_them() {
        assert_eq!(
            super::shell_join(&["wasmlab".into(), "run".into(), "a b".into()]),
            "wasmlab run 'a b'"
        );
    }
}
