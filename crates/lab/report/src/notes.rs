//! The sentences every output shares (the terminal, summary.md and report.html), written once:
//! what a flag, a figure or its absence means, and how a study's figures are set beside ours.

use wasmlab_analysis::servers::{BASELINE, NOISY_SPREAD, Spread, plus_minus};
use wasmlab_model::run::AddedRepetitions;

/// The note that explains the saturation flag.
pub(crate) fn saturation_note() -> String {
    format!(
        "⚠ generator saturated in k/n runs: in k of the cell's n runs the load generator's \
         threads were on a CPU for at least {:.0}% of the run, so the generator (not the server) \
         may have been the limit: the server may be faster than shown. Flagged on a variant's \
         cell, its ratio to native may be understated; flagged on native's cell, overstated.",
        wasmlab_load_data::SATURATED_SHARE * 100.0
    )
}

/// The note that explains a capacity ratio and its absence, in every output.
pub(crate) fn capacity_note() -> String {
    format!(
        "capacity × native: responses per CPU-second of the variant's processes over native's in \
         the same cell, from the runs in which both servers kept their CPUs at least {:.0}% busy \
         (a server's CPU per request falls as it gets busier, so only saturated servers compare \
         fairly); where either was not, \"none\" says what set its pace instead: the load \
         generator (generator-limited), the upstream (upstream-limited) or the requests' own \
         latency (latency-bound). The cost at equal load holds there.",
        wasmlab_model::sample::SATURATED_UTILIZATION * 100.0
    )
}

/// The note that explains the cost at equal load, in every output.
pub(crate) fn equal_load_note() -> String {
    use wasmlab_model::sample::{DROPPED_OVER_CAPACITY, KEPT_UP};
    format!(
        "equal load: every variant offered the same rates (open loop, latency from each \
         request's intended send time); CPU × native: the variant's CPU per request over \
         native's at the same rate, paired by repetition; \"over capacity\": runs that dropped \
         more than {:.0}% of their sends or answered less than {:.0}% of the rate, left out of \
         the ratio.",
        DROPPED_OVER_CAPACITY * 100.0,
        KEPT_UP * 100.0
    )
}

/// What the lead table of costs holds.
pub(crate) fn cost_lead() -> String {
    format!(
        "The server's CPU per request as a multiple of {BASELINE}'s (> 1: costlier), at equal load \
         (the variant and native at the same rate, the highest both kept up with: what a fleet that \
         is not saturated pays; \"Native busy\": how busy {BASELINE} kept its CPU at that rate, \
         and the less busy, the more of its CPU per request is waking for each request, which \
         moves with the host from run to run: docs/method.md, \"Native at low load\") and where \
         both servers were saturated (capacity × {BASELINE}, turned over), each with its 95% \
         interval."
    )
}

/// How wide the lead's intervals were, and, when the machine was noisy, what that means and what
/// to do; with the repetitions the run added for them (`ServerRunInfo::repetitions_added`: none
/// when its look added none): a line under the lead in every output.
/// `stopped`: the run ended before its last repetition (Ctrl-C), so it measured fewer than it
/// planned.
pub(crate) fn spread_note(s: &Spread, added: Option<&AddedRepetitions>, stopped: bool) -> String {
    let (widest, half) = &s.widest;
    let median = plus_minus(s.median);
    let widest = format!("widest: {widest} ±{:.0}%", half * 100.0);
    let noisy_above = NOISY_SPREAD * 100.0;
    let first = |a: &AddedRepetitions| plus_minus(a.spread.unwrap_or(f64::NAN));
    let rule = |a: &AddedRepetitions| {
        format!(
            "Stein's two-stage rule, at most {}; docs/method.md, \"Repetitions added on a noisy \
             machine\"",
            a.max
        )
    };
    if s.noisy() {
        let mut note = format!(
            "⚠ a noisy machine: the lead's 95% intervals are {median} at the median over {} \
             figures ({widest}), where a quiet machine gives less than ±{noisy_above:.0}%; a figure \
             of this run may well move by 10% or more in the next. Measure again when the machine \
             is quieter, or with more repetitions (twice as many narrow the intervals by a third \
             to a half: --repetitions, or --max-repetitions to add them only when needed); \
             docs/method.md, \"Comparing runs\".",
            s.figures
        );
        if let Some(a) = added {
            let verb = if stopped {
                "was to measure"
            } else {
                "measured"
            };
            note += &format!(
                " This run {verb} {} repetitions, not {}: after those its intervals were \
                 {} at the median, so it added {} ({}).",
                a.total(),
                a.after,
                first(a),
                a.added,
                rule(a)
            );
            if stopped {
                note += " It was stopped before the last: each figure's n says how many it has.";
            }
        }
        note
    } else if let Some(a) = added {
        let after = match stopped {
            true => format!("of the {} planned, up to where it was stopped", a.total()),
            false => format!("after {} repetitions", a.total()),
        };
        format!(
            "A noisy machine, measured longer: the lead's 95% intervals are {median} at the \
             median over {} figures ({widest}) {after}, where after the first {} they \
             were {} (noisy above ±{noisy_above:.0}%; {} added by {}).",
            s.figures,
            a.after,
            first(a),
            a.added,
            rule(a)
        )
    } else {
        format!(
            "The lead's 95% intervals are {median} at the median over {} figures ({widest}): \
             a quiet machine (noisy above ±{noisy_above:.0}%).",
            s.figures
        )
    }
}

/// How the req/s one core sustains is read, and what it sizes.
pub(crate) const PER_CORE: &str = "req/s per core = responses / CPU-seconds of the variant's \
    process tree: cores needed = target req/s ÷ this.";

/// How a study's published figures are set beside this run's: `machine` the study's,
/// `baseline` its baseline server, `ours` the variant that stands for it here.
/// What an interrupted run resumed says of itself: when each resumption began, how many of its
/// samples came before, and what `--force` measured on despite; None for a run measured at once.
pub(crate) fn resumed_note(resumed: &[wasmlab_model::run::Resumption]) -> Option<String> {
    if resumed.is_empty() {
        return None;
    }
    let each: Vec<String> = resumed
        .iter()
        .map(|r| {
            let forced = match r.differences.is_empty() {
                true => String::new(),
                false => format!(", with --force where {} differed", r.differences.join(", ")),
            };
            format!("at {} after {} samples{forced}", r.utc, r.samples_before)
        })
        .collect();
    Some(format!(
        "This run was interrupted and resumed ({}): the cells after each were measured from then \
         on, by another launch of each variant.",
        each.join("; ")
    ))
}

pub(crate) fn study_intro(machine: &str, baseline: &str, ours: &str) -> String {
    format!(
        "Its published figures ({machine}), each also as a ratio to its own baseline server \
         ({baseline}, reproduced here by {ours}); a ratio holds when ours is within a factor of \
         two of it, otherwise the gap to that server is that many times smaller or larger here. \
         Rows without a study figure are the same job done with wasmlab's own method. Where \
         that server is not {BASELINE}, ours is also set against {BASELINE}; resp/CPU-s is what \
         one core of the server sustains (responses per CPU-second of its process tree, which \
         the study did not publish)."
    )
}

/// A study's sizing rule beside this run's capacity.
pub(crate) fn sizing_rule(rule: &str) -> String {
    format!(
        "The study's sizing rule: {rule}. Its req/s per core is its req/s per node over the \
         node's cores, with the load generator on the same machine; ours is what one core of \
         each server sustains (responses per CPU-second of its processes, mean over the runs \
         with its 95% interval), and the cores a target load would need at that rate."
    )
}

/// A line per measured variant that does not serve some of the run's workloads (its `unserved`):
/// why its cells there are empty.
pub(crate) fn unserved(a: &wasmlab_analysis::ServerAnalysis) -> Vec<String> {
    a.variants
        .iter()
        .filter_map(|v| {
            let spec = a.info.variant_specs.iter().find(|s| &s.name == v)?;
            let said: Vec<String> = a
                .workloads
                .iter()
                .filter_map(|w| Some(format!("{w} ({})", spec.unserved.get(w)?)))
                .collect();
            (!said.is_empty()).then(|| {
                format!(
                    "{v} does not serve {}, so its cells there are empty.",
                    said.join("; ")
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_says_a_noisy_machine_and_what_to_do_above_five_percent() {
        let spread = |median: f64| Spread {
            median,
            figures: 102,
            widest: ("x hello saturated".into(), 0.17),
        };
        let quiet = spread_note(&spread(0.034), None, false);
        assert_eq!(
            quiet,
            "The lead's 95% intervals are ±3.4% at the median over 102 figures (widest: x hello \
             saturated ±17%): a quiet machine (noisy above ±5%)."
        );
        let noisy = spread_note(&spread(0.094), None, false);
        assert!(
            noisy
                .starts_with("⚠ a noisy machine: the lead's 95% intervals are ±9.4% at the median")
                && noisy.contains("less than ±5%")
                && noisy.contains("--repetitions")
                && noisy.contains("--max-repetitions"),
            "{noisy}"
        );
        // Repetitions the run added are said after it; a look that added none is not.
        let mut added = AddedRepetitions {
            after: 4,
            spread: Some(0.081),
            target: NOISY_SPREAD,
            added: 7,
            max: 12,
        };
        // Narrow after the repetitions the run added: a noisy machine measured longer.
        let grown = spread_note(&spread(0.046), Some(&added), false);
        assert_eq!(
            grown,
            "A noisy machine, measured longer: the lead's 95% intervals are ±4.6% at the median \
             over 102 figures (widest: x hello saturated ±17%) after 11 repetitions, where after \
             the first 4 they were ±8.1% (noisy above ±5%; 7 added by Stein's two-stage rule, at \
             most 12; docs/method.md, \"Repetitions added on a noisy machine\")."
        );
        // Still wide after them: the warning, and what was added.
        let still = spread_note(&spread(0.094), Some(&added), false);
        assert!(
            still.starts_with(&noisy)
                && still.ends_with(
                    " This run measured 11 repetitions, not 4: after those its intervals were \
                     ±8.1% at the median, so it added 7 (Stein's two-stage rule, at most 12; \
                     docs/method.md, \"Repetitions added on a noisy machine\")."
                ),
            "{still}"
        );
        // Stopped before the last repetition (Ctrl-C): what it was to measure, not what it did.
        let cut = spread_note(&spread(0.094), Some(&added), true);
        assert!(
            cut.contains(" This run was to measure 11 repetitions, not 4: ")
                && cut.ends_with(
                    " It was stopped before the last: each figure's n says how many it has."
                ),
            "{cut}"
        );
        let cut = spread_note(&spread(0.046), Some(&added), true);
        assert!(
            cut.contains(" of the 11 planned, up to where it was stopped, "),
            "{cut}"
        );
        // A look that added none: the run's record gives no repetitions added, the quiet line.
        added.added = 0;
        let mut info = crate::tests::info(wasmlab_model::run::RunState::Complete);
        info.added_repetitions = Some(added);
        assert_eq!(
            spread_note(&spread(0.034), info.repetitions_added(), false),
            quiet
        );
        // At the threshold itself, still quiet.
        assert!(!spread(NOISY_SPREAD).noisy() && spread(NOISY_SPREAD + 1e-6).noisy());
    }
}
