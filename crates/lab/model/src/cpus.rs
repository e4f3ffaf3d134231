//! How a run shares the machine's CPUs between the load generator and the servers it measures.
//!
//! With both on the same machine, a server left free to use every CPU competes with the generator
//! for them: on 2 cores, 2 server workers and 1 generator thread are 3 busy threads, and the
//! scheduler's interleaving of them (run-queue waits, wakeups across CPUs) becomes part of every
//! figure, worst for the variant that spends the most CPU per request. Like `taskset` in a
//! careful wrk set-up, the lab therefore gives the generator its own CPUs and confines each server
//! (and the upstream) to the others; a server's default worker count follows, since it counts the
//! CPUs it may use.

use serde::{Deserialize, Serialize};

/// Which CPUs the generator and the servers ran on; `server` empty means shared (no partition).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPlan {
    /// The load generator and the rest of the lab.
    pub load: Vec<usize>,
    /// Every server the lab starts (variants and the upstream).
    pub server: Vec<usize>,
    /// Why there is no partition, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_because: Option<String>,
}

impl CpuPlan {
    /// Splits `allowed` (the CPUs this process may use): the first `load_threads` for the
    /// generator, the rest for the servers. Shared when `partition` is off or too few CPUs remain.
    pub fn new(allowed: &[usize], load_threads: usize, partition: bool) -> Self {
        let shared = |why: String| Self {
            load: allowed.to_vec(),
            server: Vec::new(),
            shared_because: Some(why),
        };
        if !partition {
            return shared("cpu_partition = false in the suite".into());
        }
        if allowed.len() <= load_threads {
            return shared(format!(
                "{} CPU(s) for {load_threads} load thread(s): none left for the servers alone",
                allowed.len()
            ));
        }
        let (load, server) = allowed.split_at(load_threads);
        Self {
            load: load.to_vec(),
            server: server.to_vec(),
            shared_because: None,
        }
    }

    /// Whether `threads` load threads have a CPU each that no server uses: then the closed
    /// loop's workers may spin rather than sleep while they wait (see `LoadConfig::spin`).
    pub fn generator_alone(&self, threads: usize) -> bool {
        self.shared_because.is_none() && !self.server.is_empty() && self.load.len() >= threads
    }

    /// One line for the terminal and the report.
    pub fn describe(&self) -> String {
        if self.load.is_empty() {
            return "not recorded (a run.json older than the CPU plan)".into();
        }
        match &self.shared_because {
            Some(why) => format!(
                "load generator and servers share CPUs {} ({why})",
                list(&self.load)
            ),
            None => format!(
                "load generator on CPU {}, servers on CPU {}",
                list(&self.load),
                list(&self.server)
            ),
        }
    }

    /// The CPUs servers may run on, as a list (`1,2,3`) for `--cpuset-cpus`: the servers' own,
    /// or all of them when the CPUs are shared.
    pub fn server_list(&self) -> String {
        list(if self.apart() {
            &self.server
        } else {
            &self.load
        })
    }

    /// How many CPUs a server may use: the servers' own, or all of them when the CPUs are shared
    /// (0 for a run.json older than the CPU plan).
    pub fn server_count(&self) -> usize {
        if self.apart() {
            self.server.len()
        } else {
            self.load.len()
        }
    }

    /// Every CPU the run uses: the generator's and the servers'.
    pub fn all(&self) -> Vec<usize> {
        let mut all = [self.load.as_slice(), self.server.as_slice()].concat();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Whether the generator and the servers have CPUs of their own.
    pub fn apart(&self) -> bool {
        !self.server.is_empty()
    }
}

fn list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_takes_the_first_cpus_and_the_servers_the_rest() {
        let p = CpuPlan::new(&[0, 1, 2, 3], 1, true);
        assert_eq!(
            (p.load.as_slice(), p.server.as_slice()),
            (&[0][..], &[1, 2, 3][..])
        );
        assert_eq!(
            p.describe(),
            "load generator on CPU 0, servers on CPU 1,2,3"
        );
        let p = CpuPlan::new(&[2, 5], 1, true);
        assert_eq!((p.load, p.server), (vec![2], vec![5]));
    }

    #[test]
    fn shared_when_off_or_too_few_cpus() {
        for p in [
            CpuPlan::new(&[0, 1], 1, false),
            CpuPlan::new(&[0], 1, true),
            CpuPlan::new(&[0, 1], 2, true),
        ] {
            assert!(p.server.is_empty() && p.shared_because.is_some(), "{p:?}");
            assert!(p.describe().contains("share"), "{}", p.describe());
        }
    }
}
