//! The commands on results directories: `wasmlab report DIR` rebuilds every table and plot
//! from the raw samples, `wasmlab compare A B` compares two runs cell by cell; and what `wasmlab
//! run` does at its end, the report of a recorded run.

use std::path::PathBuf;

use wasmlab_model::run::Run;
use wasmlab_record::{ResultsDir, read_run, write_atomic};

use crate::stdout::show;

/// Analyses a recorded run, prints the terminal's tables and writes summary.md and report.html
/// (each atomically) into its directory. A file that cannot be made stops none of the others;
/// the first such error is returned at the end.
pub(crate) fn report_files(dir: &ResultsDir, run: &Run, wide: bool) -> anyhow::Result<()> {
    let analysis = wasmlab_analysis::analyse(run)?;
    let rendered = wasmlab_report::render(&analysis, wide);
    show(&rendered.terminal);
    let mut first_error = None;
    for (name, text) in rendered.files {
        let written = text.and_then(|t| write_atomic(&dir.file(name), t.as_bytes()));
        if let Err(e) = written {
            first_error.get_or_insert(e.context(format!("{name} not written")));
        }
    }
    first_error.map_or(Ok(()), Err)
}

#[derive(Debug, clap::Args)]
pub(crate) struct ReportArgs {
    /// A results directory (results/<run-id>).
    pub dir: PathBuf,
    /// Print every column of the terminal's tables.
    #[arg(long)]
    pub wide: bool,
}

/// Rebuilds the CSVs, summary.md and report.html of a results directory from its raw samples.
pub(crate) fn report(args: ReportArgs) -> anyhow::Result<()> {
    let run = read_run(&args.dir)?;
    let dir = ResultsDir::open(&args.dir)?;
    wasmlab_record::write_csvs(&dir, &run)?;
    report_files(&dir, &run, args.wide)?;
    let samples = match &run {
        Run::Servers { samples, .. } => samples.len(),
        Run::Programs { samples, .. } => samples.len(),
    };
    let files: Vec<String> = wasmlab_record::csv_files(&run)
        .iter()
        .chain(&["summary.md", "report.html"])
        .map(|f| dir.file(f).display().to_string())
        .collect();
    show(format!(
        "rebuilt from {samples} samples: {}",
        files.join(", ")
    ));
    Ok(())
}

#[derive(Debug, clap::Args)]
pub(crate) struct CompareArgs {
    /// The baseline results directory.
    pub a: PathBuf,
    /// The results directory compared with it.
    pub b: PathBuf,
    /// Exit 99 (after printing everything) when a headline figure of B is worse than A's by more
    /// than N% with the two runs' 95% intervals apart: `VARIANT.WORKLOAD.FOOTING > +N%`
    /// (FOOTING: equal_load or saturated; `*` for any part; `any > +N%` for every figure).
    /// Repeatable.
    #[arg(long = "fail-if", value_name = "FIGURE > +N%", value_parser = wasmlab_analysis::compare::Gate::parse)]
    pub fail_if: Vec<wasmlab_analysis::compare::Gate>,
}

pub(crate) fn compare(args: CompareArgs) -> anyhow::Result<()> {
    let side = |dir: &PathBuf| -> anyhow::Result<_> {
        match read_run(dir)? {
            Run::Servers { info, samples } => Ok((info, samples)),
            Run::Programs { .. } => anyhow::bail!(
                "{} is a program suite's run: `wasmlab compare` compares server suites' runs",
                dir.display()
            ),
        }
    };
    let (ia, sa) = side(&args.a)?;
    let (ib, sb) = side(&args.b)?;
    show(format!(
        "A: {} ({}, {})",
        args.a.display(),
        ia.header.run_id,
        ia.suite.name
    ));
    show(format!(
        "B: {} ({}, {})",
        args.b.display(),
        ib.header.run_id,
        ib.suite.name
    ));
    use wasmlab_analysis::compare::{Side, compare};
    let changes = compare(
        &Side {
            samples: &sa,
            server_cpus: ia.cpus.server_count(),
        },
        &Side {
            samples: &sb,
            server_cpus: ib.cpus.server_count(),
        },
    );
    show(wasmlab_report::terminal::compare(&changes).trim_end());
    let (aa, ab) = (
        wasmlab_analysis::analyse_servers(&ia, &sa),
        wasmlab_analysis::analyse_servers(&ib, &sb),
    );
    let headline = wasmlab_analysis::compare::headline(&aa, &ab);
    show(wasmlab_report::terminal::headline(&headline).trim_end());
    show(wasmlab_report::terminal::spreads(&aa, &ab).trim_end());
    gate(&args.fail_if, &headline)
}

/// The gates' verdict on the headline, printed: exit 99 when one is crossed; an error when a
/// gate names one figure that neither run has.
pub(crate) fn gate(
    gates: &[wasmlab_analysis::compare::Gate],
    headline: &[wasmlab_analysis::compare::HeadlineChange],
) -> anyhow::Result<()> {
    if gates.is_empty() {
        return Ok(());
    }
    let name = |c: &wasmlab_analysis::compare::HeadlineChange| {
        format!("{}.{}.{}", c.variant, c.workload, c.footing.name())
    };
    for g in gates {
        anyhow::ensure!(
            !g.names_one() || headline.iter().any(|c| g.names(c)),
            "--fail-if {:?} names no headline figure of these runs (they have: {})",
            g.text,
            headline.iter().map(name).collect::<Vec<_>>().join(", ")
        );
    }
    let mut crossed = Vec::new();
    for c in headline {
        let by: Vec<&str> = gates
            .iter()
            .filter(|g| g.crossed_by(c))
            .map(|g| g.text.as_str())
            .collect();
        if by.is_empty() {
            continue;
        }
        let show = |f: &wasmlab_analysis::compare::HeadlineFigure| {
            f.estimate
                .map_or("–".to_owned(), |e| e.show(|x| format!("{x:.3}")))
        };
        crossed.push(format!(
            "  {}: {} in A, {} in B ({:+.1}%, the intervals apart; --fail-if {})",
            name(c),
            show(&c.a),
            show(&c.b),
            (c.change().unwrap_or(1.0) - 1.0) * 100.0,
            by.join(", ")
        ));
    }
    let checked: usize = headline
        .iter()
        .filter(|c| gates.iter().any(|g| g.names(c)))
        .count();
    if crossed.is_empty() {
        show(format!(
            "gates: none of {} crossed over {checked} headline figure(s)",
            gates.len()
        ));
        return Ok(());
    }
    eprintln!("gates crossed (B worse than A):\n{}", crossed.join("\n"));
    Err(wasmlab_model::run::Ending {
        exit_code: crate::THRESHOLD_EXIT,
        message: format!(
            "{} headline figure(s) worse in B beyond a gate",
            crossed.len()
        ),
    }
    .into())
}
