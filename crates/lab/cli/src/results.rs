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
pub fn report_files(dir: &ResultsDir, run: &Run, wide: bool) -> anyhow::Result<()> {
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
pub struct ReportArgs {
    /// A results directory (results/<run-id>).
    pub dir: PathBuf,
    /// Print every column of the terminal's tables.
    #[arg(long)]
    pub wide: bool,
}

/// Rebuilds the CSVs, summary.md and report.html of a results directory from its raw samples.
pub fn report(args: ReportArgs) -> anyhow::Result<()> {
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
pub struct CompareArgs {
    /// The baseline results directory.
    pub a: PathBuf,
    /// The results directory compared with it.
    pub b: PathBuf,
}

pub fn compare(args: CompareArgs) -> anyhow::Result<()> {
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
        wasmlab_analysis::servers::analyse(&ia, &sa),
        wasmlab_analysis::servers::analyse(&ib, &sb),
    );
    let headline = wasmlab_analysis::compare::headline(&aa, &ab);
    show(wasmlab_report::terminal::headline(&headline).trim_end());
    show(wasmlab_report::terminal::spreads(&aa, &ab).trim_end());
    Ok(())
}
