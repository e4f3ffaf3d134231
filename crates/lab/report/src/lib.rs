//! Reporting a run: its analysis rendered for a reader. The terminal's tables, summary.md and
//! report.html (one offline file with inline SVG plots) are laid out from the same sections
//! ([`sections`], [`programs`]), each figure formatted once ([`format`]), so every output says
//! the same. Every figure derived from several runs shows its 95% bootstrap interval and `n`.

// Only what other crates use is `pub`; the rest is the crate's own, so the compiler says what
// is left unused.
#![warn(unreachable_pub)]

mod format;
mod html;
mod markdown;
mod plot;
mod programs;
mod sections;
mod table;
pub mod terminal;

use wasmlab_analysis::Analysis;

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
    match a {
        Analysis::Servers(a) => Rendered {
            terminal: terminal::servers(a, wide),
            files: vec![
                ("summary.md", Ok(markdown::servers(a))),
                ("report.html", html::servers(a)),
            ],
        },
        Analysis::Programs(a) => Rendered {
            terminal: terminal::programs(a, wide),
            files: vec![
                ("summary.md", Ok(markdown::programs(a))),
                ("report.html", html::programs(a)),
                (
                    "analysis.json",
                    serde_json::to_string_pretty(a.as_ref())
                        .map(|j| j + "\n")
                        .map_err(anyhow::Error::from),
                ),
            ],
        },
    }
}

#[cfg(test)]
mod tests;
