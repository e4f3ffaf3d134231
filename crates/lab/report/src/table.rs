//! A table defined once. A section declares its columns, each with its head, whether it holds
//! text (left-aligned) or figures, the outputs that show it and how a row's cell is made; the
//! terminal's writer here lays any section out with comfy-table, and `view::Table::laid` for
//! report.html and summary.md, whose templates show the columns each shows. A column added is
//! written once, and every output that shows it shows the same head and the same text.

use wasmlab_analysis::stats::Estimate;

use crate::format::RatioStyle;

/// The outputs that show a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shows(u8);

impl Shows {
    /// The terminal's default table, which keeps within its 120 columns.
    pub(crate) const NARROW: Self = Self(1);
    /// The terminal with `--wide`.
    pub(crate) const WIDE: Self = Self(2);
    pub(crate) const MARKDOWN: Self = Self(4);
    pub(crate) const HTML: Self = Self(8);
    pub(crate) const TERMINAL: Self = Self(1 | 2);
    /// Every output but the narrow terminal.
    pub(crate) const DETAILED: Self = Self(2 | 4 | 8);
    pub(crate) const ALL: Self = Self(1 | 2 | 4 | 8);

    pub(crate) const fn and(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    fn has(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }
}

/// How report.html marks a cell up; the terminal and summary.md print its text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Mark {
    #[default]
    Plain,
    /// A variant's name: its colour swatch before it.
    Variant,
    /// Bold: a ratio whose interval excludes 1.
    Significant,
}

/// A warning about some of a cell's runs: `native: ⚠ generator saturated in 1/3 runs`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Flag {
    /// Whose runs, when not the row's own (native's, under a variant's ratio).
    pub(crate) whose: Option<String>,
    /// What happened in them: `generator saturated`.
    pub(crate) what: String,
    pub(crate) count: usize,
    pub(crate) runs: usize,
}

impl Flag {
    pub(crate) fn text(&self) -> String {
        format!(
            "{}⚠ {} in {}/{} runs",
            self.whose
                .as_deref()
                .map(|w| format!("{w}: "))
                .unwrap_or_default(),
            self.what,
            self.count,
            self.runs
        )
    }
}

/// One cell, as every output needs it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Value {
    pub(crate) text: String,
    pub(crate) mark: Mark,
    /// What qualifies the text (a ratio's interval): under it in small type in report.html,
    /// after it elsewhere.
    pub(crate) note: Option<String>,
    /// Warnings after the text: one a line in report.html, after the text elsewhere.
    pub(crate) flags: Vec<Flag>,
}

impl Value {
    pub(crate) fn variant(name: &str) -> Self {
        Self {
            text: name.to_owned(),
            mark: Mark::Variant,
            ..Self::default()
        }
    }

    pub(crate) fn marked(text: impl Into<String>, mark: Mark) -> Self {
        Self {
            text: text.into(),
            mark,
            ..Self::default()
        }
    }

    /// A ratio with its interval as its note, marked where the interval excludes 1.
    pub(crate) fn ratio(style: RatioStyle, e: Option<&Estimate>) -> Self {
        let Some(e) = e.filter(|e| e.value.is_finite()) else {
            return "–".into();
        };
        Self {
            text: style.point(e.value),
            mark: if e.excludes(1.0) {
                Mark::Significant
            } else {
                Mark::Plain
            },
            note: style.interval(e),
            flags: Vec::new(),
        }
    }

    /// A cell of flags only.
    pub(crate) fn flags(flags: Vec<Flag>) -> Self {
        Self {
            flags,
            ..Self::default()
        }
    }

    /// The text and its flags as plain text (the terminal's and summary.md's cell).
    pub(crate) fn plain(&self) -> String {
        let text = match &self.note {
            Some(note) => format!("{} {note}", self.text),
            None => self.text.clone(),
        };
        std::iter::once(text)
            .chain(self.flags.iter().map(Flag::text))
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl From<String> for Value {
    fn from(text: String) -> Self {
        Self {
            text,
            ..Self::default()
        }
    }
}

impl From<&str> for Value {
    fn from(text: &str) -> Self {
        text.to_owned().into()
    }
}

/// One column of a section's table.
pub(crate) struct Column<'a, R> {
    pub(crate) head: String,
    /// Text (left-aligned), or a figure.
    pub(crate) left: bool,
    shows: Shows,
    cell: Box<dyn Fn(&R) -> Value + 'a>,
}

impl<R> Column<'_, R> {
    pub(crate) fn value(&self, row: &R) -> Value {
        (self.cell)(row)
    }

    /// Whether `output` shows the column.
    pub(crate) fn shows(&self, output: Shows) -> bool {
        self.shows.has(output)
    }
}

/// A column of text (left-aligned): names, workloads.
pub(crate) fn text<'a, R>(
    head: impl Into<String>,
    shows: Shows,
    cell: impl Fn(&R) -> Value + 'a,
) -> Column<'a, R> {
    Column {
        head: head.into(),
        left: true,
        shows,
        cell: Box::new(cell),
    }
}

/// A column of figures.
pub(crate) fn figure<'a, R>(
    head: impl Into<String>,
    shows: Shows,
    cell: impl Fn(&R) -> Value + 'a,
) -> Column<'a, R> {
    Column {
        left: false,
        ..text(head, shows, cell)
    }
}

/// The columns `output` shows, in their order.
pub(crate) fn shown<'c, 'a, R>(
    columns: &'c [Column<'a, R>],
    output: Shows,
) -> impl Iterator<Item = &'c Column<'a, R>> {
    columns.iter().filter(move |c| c.shows.has(output))
}

/// The table in the terminal: every column the width shows, as comfy-table lays it out.
pub(crate) fn terminal<R>(columns: &[Column<'_, R>], rows: &[R], wide: bool) -> comfy_table::Table {
    let output = if wide { Shows::WIDE } else { Shows::NARROW };
    let columns: Vec<&Column<'_, R>> = shown(columns, output).collect();
    let mut t = comfy(columns.iter().map(|c| c.head.clone()));
    for r in rows {
        t.add_row(
            columns
                .iter()
                .map(|c| c.value(r).plain())
                .collect::<Vec<_>>(),
        );
    }
    t
}

/// An empty terminal table with its head, in the one style every terminal table has.
pub(crate) fn comfy(head: impl IntoIterator<Item = impl Into<String>>) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header(head.into_iter().map(Into::into).collect::<Vec<String>>());
    t
}

/// Text safe inside a Markdown table cell (and not taken for an HTML tag).
pub(crate) fn markdown_cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Row {
        name: &'static str,
        n: u32,
    }

    fn columns<'a>() -> Vec<Column<'a, Row>> {
        vec![
            text("Name", Shows::ALL, |r: &Row| Value::variant(r.name)),
            figure("n", Shows::DETAILED, |r: &Row| r.n.to_string().into()),
            figure("Flags", Shows::MARKDOWN, |r: &Row| {
                Value::flags(vec![flag("late", r.n as usize)])
            }),
        ]
    }

    #[test]
    fn each_output_shows_its_columns_under_one_head() {
        let rows = [Row { name: "a|b", n: 3 }];
        let all = columns();
        let md: Vec<&str> = shown(&all, Shows::MARKDOWN)
            .map(|c| c.head.as_str())
            .collect();
        assert_eq!(md, ["Name", "n", "Flags"]);
        assert!(columns()[2].shows(Shows::MARKDOWN) && !columns()[2].shows(Shows::HTML));
        assert_eq!(markdown_cell("a|b<c\nd"), "a\\|b&lt;c d");
        let narrow = terminal(&columns(), &rows, false).to_string();
        assert!(
            narrow.contains("Name") && !narrow.contains(" n "),
            "{narrow}"
        );
        let wide = terminal(&columns(), &rows, true).to_string();
        assert!(wide.contains(" n ") && !wide.contains("Flags"), "{wide}");
    }

    fn flag(what: &str, count: usize) -> Flag {
        Flag {
            whose: None,
            what: what.into(),
            count,
            runs: 4,
        }
    }

    #[test]
    fn plain_text_joins_the_flags() {
        let mut v = Value::from("12");
        assert_eq!(v.plain(), "12");
        v.flags = vec![flag("a", 1), flag("b", 2)];
        v.flags[1].whose = Some("native".into());
        assert_eq!(v.plain(), "12; ⚠ a in 1/4 runs; native: ⚠ b in 2/4 runs");
        assert_eq!(Value::flags(vec![flag("a", 1)]).plain(), "⚠ a in 1/4 runs");
    }
}
