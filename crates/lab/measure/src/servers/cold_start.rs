//! Cold start: each variant launched `runs` times, in a shuffled order each round, from exec to
//! the first complete answer to the suite's first workload, with the RSS it holds then.

use wasmlab_model::sample::{Kind, Sample};

use super::ServerRun;
use crate::launch::Launchable;
use crate::resources;

impl ServerRun<'_> {
    /// `runs` launches of each variant, in a shuffled order each round: exec to the first
    /// complete answer to the first workload with its expected status.
    pub(super) fn cold_starts(
        &mut self,
        variants: &[&Launchable],
        runs: u32,
    ) -> anyhow::Result<()> {
        let (remote, variants): (Vec<&Launchable>, Vec<&Launchable>) =
            variants.iter().partition(|v| v.spec.is_remote());
        for v in remote {
            self.rec.say(format!(
                "{}: cold start not observable (a remote target: the lab does not start it)",
                v.name()
            ));
            self.rec.progress.inc(u64::from(runs));
        }
        for i in 0..runs {
            for v in self.plan.cold_start_order(&variants, i) {
                if self.rec.cancelled() {
                    return Ok(());
                }
                self.rec.progress.inc(1);
                let recorded = |s: &Sample| {
                    s.kind == Kind::ColdStart && s.variant == v.name() && s.repetition == i
                };
                if self.rec.out(v.name()) || self.rec.samples.iter().any(recorded) {
                    continue;
                }
                self.rec
                    .progress
                    .set_message(format!("{}: cold start {}/{runs}", v.name(), i + 1));
                match v.launch(&self.ctx(v.name())) {
                    Ok(mut running) => {
                        let mut s = Sample::new(Kind::ColdStart, v.name(), i);
                        let mut start = running.start;
                        if let Some(roots) = running.process_roots() {
                            start.rss_kib = resources::rss_kib(&roots);
                        }
                        s.start = Some(start);
                        running.stop();
                        self.rec.record(s)?;
                    }
                    Err(e) => self.rec.fail(v.name(), format!("{e:#}"))?,
                }
            }
        }
        Ok(())
    }
}
