//! `wasmlab merge`: several generators' parts (`wasmlab load --out`) as one run, with thresholds
//! on the whole.

use std::path::PathBuf;

use wasmlab_load::{Merged, Part, Threshold};
use wasmlab_model::run::Ending;

use crate::load::{judge, report_text};
use crate::stdout::show;

#[derive(Debug, clap::Args)]
pub(crate) struct MergeArgs {
    /// Parts written by `wasmlab load --out FILE` (one or more), e.g. part-*.json.
    #[arg(required = true, value_name = "FILE")]
    pub parts: Vec<PathBuf>,
    /// Print the merge as JSON: the whole as one run's report, each part, the interval all
    /// parts were running, warnings.
    #[arg(long)]
    pub json: bool,
    /// Refuse (exit 2, nothing printed) parts that did not run together: one that overlapped
    /// the others for less than 90% of its run, or began late after its --start-at.
    #[arg(long)]
    pub strict: bool,
    /// Fail (exit 99, after the report) when this holds for the merged result, as `wasmlab
    /// load --fail-if` (repeatable): errors>1%, p99>50ms, rps<1000.
    #[arg(long = "fail-if", value_name = "CONDITION")]
    pub fail_if: Vec<Threshold>,
}

pub(crate) fn merge(args: MergeArgs) -> anyhow::Result<()> {
    let parts: Vec<(String, Part)> = args
        .parts
        .iter()
        .map(|path| Ok((path.display().to_string(), Part::read(path)?)))
        .collect::<anyhow::Result<_>>()?;
    let merged = wasmlab_load::merge(&parts)?;
    if args.strict && !merged.warnings.is_empty() {
        return Err(Ending {
            exit_code: 2,
            message: format!(
                "--strict: the parts did not run together: {}",
                merged.warnings.join("; ")
            ),
        }
        .into());
    }
    match args.json {
        true => show(serde_json::to_string_pretty(&merged)?),
        false => show(merge_text(&merged)),
    }
    judge(&merged.report, &args.fail_if)
}

/// The whole as `wasmlab load` prints a run, then each part, the common interval and what a
/// reader should be warned of.
fn merge_text(m: &Merged) -> String {
    let mut out = report_text(&m.report);
    out.push('\n');
    match &m.common {
        Some(c) => out.push_str(&format!(
            "  together: {} to {} ({:.2} s): req/s above is over this interval\n",
            c.start, c.end, c.secs
        )),
        None => out.push_str("  together: never (req/s above is the sum of each part's own)\n"),
    }
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header([
        "part",
        "host",
        "began (+ms)",
        "late ms",
        "secs",
        "together",
        "conns",
        "responses",
        "errors",
        "req/s own",
        "req/s together",
        "p99 ms",
        "generator busy",
    ]);
    for p in &m.parts {
        t.add_row([
            p.name.clone(),
            p.host.clone(),
            format!("{:.0}", p.offset_ms),
            p.late_ms.map_or("–".into(), |l| format!("{l:.0}")),
            format!("{:.2}", p.elapsed_secs),
            format!("{:.0}%", p.overlap * 100.0),
            p.connections.to_string(),
            p.responses.to_string(),
            p.errors.to_string(),
            format!("{:.0}", p.rps),
            p.rps_common.map_or("–".into(), |r| format!("{r:.0}")),
            format!("{:.3}", p.p99_ms),
            format!(
                "{:.0}%{}",
                p.generator_busy * 100.0,
                if p.generator_saturated {
                    " saturated"
                } else {
                    ""
                }
            ),
        ]);
    }
    out.push_str(&t.to_string());
    for w in &m.warnings {
        out.push_str(&format!("\n  warning: {w}"));
    }
    for n in &m.notes {
        out.push_str(&format!("\n  note: {n}"));
    }
    out
}
