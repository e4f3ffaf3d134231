//! How the CPUs wait while a run measures: polling, or as the system has them.
//!
//! A server below saturation waits for each request. On a virtual machine an idle CPU halts, and
//! waking a halted CPU costs the waker a trip through the hypervisor: at 5,000 req/s, about half of
//! the CPU native's gateway is charged per request on the team's VM was that trip, not its work,
//! and its size moved from one hour to the next with the host (docs/method.md, "Idle CPUs:
//! polling"). So a server suite asks the kernel, while it measures, for a 0 µs wake-up latency
//! (PM QoS through `/dev/cpu_dma_latency`, as `tuned`'s latency profiles and cyclictest do): idle
//! CPUs then poll instead of halting, and a server's CPU per request is its own work.

use serde::{Deserialize, Serialize};

/// What a server suite asks of idle CPUs while it measures (`cpu_idle` in the suite,
/// `--cpu-idle` on the command line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IdlePolicy {
    /// Idle CPUs poll rather than halt: the lab holds a 0 µs wake-up latency request.
    #[default]
    Poll,
    /// Idle CPUs as the system has them (no request made).
    System,
}

impl IdlePolicy {
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "poll" => Ok(Self::Poll),
            "system" => Ok(Self::System),
            other => Err(format!(
                "unknown CPU idle policy {other:?}: poll (idle CPUs poll while the run measures) \
                 or system (as the machine has them)"
            )),
        }
    }
}

/// How the CPUs waited while a run measured, as recorded in run.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleRecord {
    pub policy: IdlePolicy,
    /// The kernel's cpuidle driver (`haltpoll`, `intel_idle`, `acpi_idle`), None where there is
    /// none (idle is then the architecture's own wait, which a latency request does not change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Whether the lab held the 0 µs wake-up latency request while it measured.
    pub held: bool,
    /// Why not, when the policy asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_held_because: Option<String>,
    /// Of the times the run's CPUs went idle while it measured, the share they polled rather
    /// than slept: the check that the request took. None until the run ends, or where the kernel
    /// does not count idle states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polled_share: Option<f64>,
}

impl IdleRecord {
    /// One line for the terminal and the report; `None` (a run.json from before the policy)
    /// says so.
    pub fn describe(record: Option<&Self>) -> String {
        let Some(r) = record else {
            return "as the system had them (not recorded: a run.json older than the idle policy)"
                .into();
        };
        let driver = match &r.driver {
            Some(d) => format!("cpuidle driver {d}"),
            None => "no cpuidle driver".into(),
        };
        let polled = r
            .polled_share
            .map(|s| format!("; {:.1}% of idle entries polled", s * 100.0))
            .unwrap_or_default();
        match (r.held, r.policy, &r.not_held_because) {
            (true, _, _) => format!(
                "idle CPUs polled rather than halted: the lab held a 0 µs wake-up latency \
                 request through /dev/cpu_dma_latency ({driver}{polled})"
            ),
            (false, IdlePolicy::System, _) => {
                format!(
                    "idle CPUs as the system has them (cpu_idle = \"system\"; {driver}{polled})"
                )
            }
            (false, IdlePolicy::Poll, why) => format!(
                "idle CPUs as the system has them ({driver}{polled}): {}",
                why.as_deref().unwrap_or("the polling request was not held")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_refuse_anything_else() {
        assert_eq!(IdlePolicy::parse("poll"), Ok(IdlePolicy::Poll));
        assert_eq!(IdlePolicy::parse("system"), Ok(IdlePolicy::System));
        let e = IdlePolicy::parse("halt").unwrap_err();
        assert!(
            e.contains("\"halt\"") && e.contains("poll") && e.contains("system"),
            "{e}"
        );
    }

    #[test]
    fn the_description_says_what_was_held_and_why_not() {
        let held = IdleRecord {
            policy: IdlePolicy::Poll,
            driver: Some("haltpoll".into()),
            held: true,
            not_held_because: None,
            polled_share: Some(0.9991),
        };
        assert_eq!(
            IdleRecord::describe(Some(&held)),
            "idle CPUs polled rather than halted: the lab held a 0 µs wake-up latency request \
             through /dev/cpu_dma_latency (cpuidle driver haltpoll; 99.9% of idle entries polled)"
        );
        let refused = IdleRecord {
            held: false,
            not_held_because: Some("cannot open /dev/cpu_dma_latency: Permission denied".into()),
            polled_share: None,
            ..held.clone()
        };
        assert!(
            IdleRecord::describe(Some(&refused)).starts_with(
                "idle CPUs as the system has them (cpuidle driver haltpoll): cannot open"
            ),
            "{}",
            IdleRecord::describe(Some(&refused))
        );
        let system = IdleRecord {
            policy: IdlePolicy::System,
            held: false,
            driver: None,
            ..refused
        };
        assert!(IdleRecord::describe(Some(&system)).contains("cpu_idle = \"system\""));
        assert!(IdleRecord::describe(None).contains("not recorded"));
    }
}
