//! Reporting a run: its analysis rendered for a reader. The terminal's tables, summary.md and
//! report.html (one offline file with inline SVG plots) are laid out from the same sections
//! (`sections`, `programs`), each table's columns declared once (`table`), each figure
//! formatted once (`format`) and each shared sentence written once (`notes`), so every output
//! says the same; summary.md and report.html are templates over one view model (`view`).
//! Every figure derived from several runs shows its 95% interval and `n`.

mod format;
mod history;
mod isolation;
mod notes;
mod plot;
mod programs;
mod sections;
mod table;
pub mod terminal;
mod view;
mod yours;

use wasmlab_analysis::Analysis;
use wasmlab_analysis::history::History;

/// A run's report in every form.
pub struct Rendered {
    /// The terminal's tables.
    pub terminal: String,
    /// The files of the results directory, by name: summary.md, report.html, and for a program
    /// suite's run analysis.json. One that could not be made says why, and the others are made
    /// all the same.
    pub files: Vec<(&'static str, anyhow::Result<String>)>,
}

/// Renders a run's analysis; `wide`: every column in the terminal, not only what fits 120.
pub fn render(a: &Analysis, wide: bool) -> Rendered {
    let (terminal, pages, analysis_json) = match a {
        Analysis::Servers(a) => (terminal::servers(a, wide), view::servers(a), None),
        Analysis::Programs(a) => (
            terminal::programs(a, wide),
            view::programs(a),
            // A program run's analysis, for tools: a server run's is rebuilt from its samples.
            Some(
                serde_json::to_string_pretty(a.as_ref())
                    .map(|j| j + "\n")
                    .map_err(anyhow::Error::from),
            ),
        ),
    };
    let mut files = vec![
        ("summary.md", pages.summary_md),
        ("report.html", pages.report_html),
    ];
    files.extend(analysis_json.map(|j| ("analysis.json", j)));
    Rendered { terminal, files }
}

/// `wasmlab history` in both forms.
pub struct RenderedHistory {
    pub terminal: String,
    /// history.html, or why it could not be made.
    pub html: anyhow::Result<String>,
}

/// Renders a suite's history: its words from `history`, its page from `view`.
pub fn render_history(h: &History) -> RenderedHistory {
    RenderedHistory {
        terminal: history::terminal(h),
        html: view::history(h),
    }
}

#[cfg(test)]
mod tests;
