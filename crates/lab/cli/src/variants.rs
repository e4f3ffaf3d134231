//! `wasmlab variants`: every variant, what it is, and whether it can run here: ready, needs setup
//! (the command and about how long), or unavailable (why); and `wasmlab setup`, which installs
//! what they need.

use std::path::PathBuf;

use wasmlab_model::variant::Catalog;
use wasmlab_plan::setup::SetupRequest;
use wasmlab_plan::tools::{self, State};

use crate::stdout::show;

#[derive(Debug, clap::Args)]
pub(crate) struct SetupArgs {
    /// Variants to set up (default: every variant that needs setup).
    pub variants: Vec<String>,
    /// A variant file of your own (repeatable), as for `wasmlab run`.
    #[arg(long = "variant-file", value_name = "PATH")]
    pub variant_files: Vec<PathBuf>,
    /// Say what would be installed, and about how long it takes, without installing.
    #[arg(long)]
    pub dry_run: bool,
    /// Install only what fits in this many minutes, the quickest tools first: a tool whose
    /// install (as its recipe estimates it) would end past that is left for a later setup, said
    /// (CI on a new machine installs what fits beside its tests; the next run the rest).
    #[arg(long, value_name = "MINUTES", value_parser = positive_minutes)]
    pub within: Option<f64>,
}

fn positive_minutes(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(m) if m.is_finite() && m > 0.0 => Ok(m),
        _ => Err(format!("{s:?} is not a positive number of minutes")),
    }
}

pub(crate) fn setup(args: SetupArgs) -> anyhow::Result<()> {
    wasmlab_plan::setup::setup(&SetupRequest {
        variants: args.variants,
        variant_files: args.variant_files,
        dry_run: args.dry_run,
        within: args
            .within
            .map(|m| std::time::Duration::from_secs_f64(m * 60.0)),
    })
}

#[derive(Debug, clap::Args)]
pub(crate) struct VariantsArgs {
    /// A variant file of your own (repeatable), checked and listed with the built-in ones.
    #[arg(long = "variant-file", value_name = "PATH")]
    pub variant_files: Vec<PathBuf>,
}

pub(crate) fn list(args: VariantsArgs) -> anyhow::Result<()> {
    let catalog = Catalog::with_files(&args.variant_files)?;
    let tools = wasmlab_plan::exec::tools_dir();
    if catalog
        .all()
        .any(|s| s.requires.iter().any(|r| r.container_engine))
    {
        eprintln!("wasmlab: probing for a container engine (runs one container)...");
    }
    if catalog
        .all()
        .any(|s| s.requires.iter().any(|r| r.containerd))
    {
        eprintln!(
            "wasmlab: starting the lab's own containerd (runs one container; stopped at the end)..."
        );
    }
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    if t.width().is_none() {
        // Not a terminal: wrap for a reader all the same.
        t.set_width(wasmlab_report::terminal::COLUMNS);
    }
    t.set_header(["variant", "family", "here", "what it is"]);
    let mut details = Vec::new();
    for spec in catalog.all() {
        let state = tools::assess(spec, &tools);
        let here = match &state {
            State::Ready { .. } => "ready".to_owned(),
            State::NeedsSetup { minutes, .. } => {
                format!("needs setup ({})", tools::duration_words(*minutes))
            }
            State::Unavailable { .. } => "unavailable".to_owned(),
        };
        details.push(format!("{}: {}", spec.name, state.describe(&spec.name)));
        let about = match &spec.study {
            Some(study) => format!("{} [{study}]", spec.about),
            None => spec.about.clone(),
        };
        t.add_row([spec.name.clone(), spec.family.clone(), here, about]);
    }
    show(&t);
    for d in details {
        show(d);
    }
    let http2: Vec<&str> = catalog
        .all()
        .filter(|s| catalog.http2_twin(&s.name).is_some())
        .map(|s| s.name.as_str())
        .collect();
    if !http2.is_empty() {
        show(format!(
            "Also measurable over HTTP/2, as NAME-h2 (named, or through a suite's [http2] table): {}.",
            http2.join(", ")
        ));
    }
    show(format!(
        "`wasmlab run` records a variant that cannot run as skipped, with the reason; `wasmlab setup VARIANT` installs what it can into {}.",
        tools.display()
    ));
    Ok(())
}
