//! Measuring the variants, in the order `wasmlab run` does it: every variant verified before
//! anything is measured; then cold starts, each launch in a shuffled order on an otherwise idle
//! machine; then, for each repetition, each variant in a shuffled order: launch, verify, its load
//! cells (closed loop, warm, open loop) with resources sampled, stop.

pub mod cells;
pub mod resources;
pub mod verify;

use crate::analyze::stats;
use crate::launch::{LaunchContext, Launchable, Running};
use crate::plan::suite::Suite;
use crate::record::Recorder;
use crate::record::model::{Kind, Sample};

/// The launch context of a variant in this run (its log file, the servers' CPUs).
pub type ContextOf<'a> = dyn Fn(&str) -> LaunchContext<'a> + 'a;

/// Launches `v` and verifies its answers; a variant that does not start or answers wrongly is
/// marked failed (and `None` returned).
fn launch_verified(
    lab: &mut Recorder,
    v: &Launchable,
    ctx: &LaunchContext<'_>,
    client: &verify::Client,
    suite: &Suite,
) -> anyhow::Result<Option<Running>> {
    let running = match v.launch(ctx) {
        Ok(running) => running,
        Err(e) => {
            lab.fail(v.name(), format!("{e:#}"))?;
            return Ok(None);
        }
    };
    lab.pb.set_message(format!("{}: verifying", v.name()));
    let checks = verify::verify(
        client,
        running.addr,
        &suite.workloads,
        suite.echo_body_bytes,
    );
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| format!("{}: {}", c.what, c.detail))
        .collect();
    lab.outcome(v.name()).checks = checks;
    if !failed.is_empty() {
        running.stop();
        lab.fail(
            v.name(),
            format!("verification failed ({})", failed.join("; ")),
        )?;
        return Ok(None);
    }
    Ok(Some(running))
}

/// Verifies every variant once, before any measurement: one that answers wrongly is measured in
/// no way at all, its cold starts included.
pub fn verify_all(
    lab: &mut Recorder,
    variants: &[&Launchable],
    ctx: &ContextOf<'_>,
    client: &verify::Client,
    suite: &Suite,
) -> anyhow::Result<()> {
    for v in variants {
        if lab.cancelled() {
            break;
        }
        lab.pb.inc(1);
        if lab.out(v.name()) {
            continue;
        }
        if let Some(running) = launch_verified(lab, v, &ctx(v.name()), client, suite)? {
            running.stop();
        }
    }
    lab.save_info()
}

/// `runs` launches of each variant, in a shuffled order each round: exec to the first complete 200.
pub fn cold_starts(
    lab: &mut Recorder,
    variants: &[&Launchable],
    runs: u32,
    seed: u64,
    ctx: &ContextOf<'_>,
) -> anyhow::Result<()> {
    for i in 0..runs {
        for v in stats::shuffled(variants, seed ^ 0xc01d ^ u64::from(i)) {
            if lab.cancelled() {
                return Ok(());
            }
            lab.pb.inc(1);
            if lab.out(v.name()) {
                continue;
            }
            lab.pb
                .set_message(format!("{}: cold start {}/{runs}", v.name(), i + 1));
            match v.launch(&ctx(v.name())) {
                Ok(mut running) => {
                    let mut s = Sample::new(Kind::ColdStart, v.name(), i);
                    let mut start = running.start;
                    start.rss_kib = resources::rss_kib(&running.process_roots());
                    s.start = Some(start);
                    running.stop();
                    lab.record(s)?;
                }
                Err(e) => lab.fail(v.name(), format!("{e:#}"))?,
            }
        }
    }
    Ok(())
}

/// The suite's repetitions: each variant launched, verified again and measured, in a shuffled
/// order each time (recorded in run.json).
pub fn repetitions(
    lab: &mut Recorder,
    variants: &[&Launchable],
    suite: &Suite,
    seed: u64,
    ctx: &ContextOf<'_>,
    client: &verify::Client,
) -> anyhow::Result<()> {
    let steps = variant_steps(suite);
    for r in 0..suite.repetitions {
        let order = stats::shuffled(variants, seed.wrapping_add(u64::from(r)));
        lab.info
            .orders
            .push(order.iter().map(|v| v.name().to_owned()).collect());
        lab.save_info()?;
        for v in order {
            if lab.cancelled() {
                return Ok(());
            }
            let done_before = lab.pb.position();
            if lab.out(v.name()) {
                lab.pb.set_position(done_before + steps);
                continue;
            }
            lab.pb
                .set_message(format!("{}: starting (run {})", v.name(), r + 1));
            let ctx = ctx(v.name());
            // Each launch is verified again: it is a new process.
            let Some(mut running) = launch_verified(lab, v, &ctx, client, suite)? else {
                lab.pb.set_position(done_before + steps);
                continue;
            };
            let mut subject = cells::Subject {
                name: v.name(),
                r,
                running: &mut running,
                log: &ctx.log_path,
            };
            match cells::measure_variant(lab, suite, &mut subject) {
                Ok(()) => {}
                Err(e) if e.is::<cells::VariantDied>() => {
                    lab.fail(v.name(), format!("{e:#}"))?;
                    lab.pb.set_position(done_before + steps);
                }
                Err(e) => return Err(e),
            }
            running.stop();
            lab.save_info()?;
        }
    }
    Ok(())
}

/// Progress steps of one variant in one repetition: its cells.
pub fn variant_steps(suite: &Suite) -> u64 {
    let fractions = suite.open_loop.as_ref().map_or(0, |o| o.fractions.len());
    (suite.workloads.len() * suite.connections.len()
        + suite.warm_workloads().len()
        + suite.open_loop_workloads().len() * fractions) as u64
}
