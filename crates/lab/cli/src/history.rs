//! `wasmlab history [DIR]`: every run of an HTTP suite in a results directory, its headline
//! figures run after run per suite and machine, in the terminal and as one offline page
//! (history.html), or as JSON. A directory that is not a run it can read is passed over with a
//! warning, never an error: one broken run does not hide twenty good ones.

use std::path::PathBuf;

use wasmlab_analysis::history::{History, PassedOver, RunFigures};
use wasmlab_model::run::Run;
use wasmlab_record::{read_run, write_atomic};

use crate::stdout::show;

#[derive(Debug, clap::Args)]
pub(crate) struct HistoryArgs {
    /// The results directory whose runs to show (where `wasmlab run --results` wrote them).
    #[arg(default_value = "results")]
    pub dir: PathBuf,
    /// Only the runs of this suite (its name, as run.json has it: quick, wasmcloud, ...).
    #[arg(long, value_name = "NAME")]
    pub suite: Option<String>,
    /// Print the history as JSON on stdout instead of the tables (the page is then written only
    /// with --out).
    #[arg(long)]
    pub json: bool,
    /// Where to write the page (default: DIR/history.html).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub(crate) fn history(args: HistoryArgs) -> anyhow::Result<()> {
    let root = &args.dir;
    let entries = std::fs::read_dir(root).map_err(|e| {
        anyhow::anyhow!(
            "{} cannot be read: {e} (give the directory `wasmlab run --results` wrote runs into)",
            root.display()
        )
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    // Run ids are UTC start times: in name order, the oldest first.
    dirs.sort();
    let mut runs = Vec::new();
    let mut passed_over = Vec::new();
    let mut pass_over = |dir: &PathBuf, why: String| {
        eprintln!("wasmlab: passed over {}: {why}", dir.display());
        passed_over.push(PassedOver {
            dir: dir.display().to_string(),
            why,
        });
    };
    for dir in &dirs {
        if !dir.join("run.json").is_file() {
            pass_over(dir, "no run.json: not a run's directory".into());
            continue;
        }
        match read_run(dir) {
            Ok(Run::Servers { info, samples }) => {
                if args.suite.as_ref().is_some_and(|s| *s != info.suite.name) {
                    continue;
                }
                let analysis = wasmlab_analysis::analyse_servers(&info, &samples);
                runs.push(RunFigures::of(&dir.display().to_string(), &info, &analysis));
            }
            Ok(Run::Programs { info, .. }) => {
                if args.suite.as_ref().is_none_or(|s| *s == info.suite.name) {
                    pass_over(
                        dir,
                        format!(
                            "a run of program suite {}: the history follows HTTP suites' \
                             headlines (its report is `wasmlab report {}`)",
                            info.suite.name,
                            dir.display()
                        ),
                    );
                }
            }
            Err(e) => pass_over(dir, format!("{e:#}")),
        }
    }
    if let Some(s) = &args.suite {
        anyhow::ensure!(
            !runs.is_empty(),
            "no run of suite {s} in {} ({} run directories read)",
            root.display(),
            dirs.len()
        );
    }
    let h = History {
        root: root.display().to_string(),
        groups: wasmlab_analysis::history::history(runs),
        passed_over,
    };
    let rendered = wasmlab_report::render_history(&h);
    if args.json {
        show(serde_json::to_string_pretty(&h)?);
    } else {
        show(rendered.terminal.trim_end());
    }
    let page = match (&args.out, args.json) {
        (Some(out), _) => out.clone(),
        (None, false) => root.join("history.html"),
        (None, true) => return Ok(()),
    };
    write_atomic(&page, rendered.html?.as_bytes())
        .map_err(|e| e.context(format!("{} not written", page.display())))?;
    eprintln!("wasmlab: wrote {}", page.display());
    Ok(())
}
