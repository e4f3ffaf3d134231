//! Putting a run's idle policy ([`IdlePolicy`]) into effect: the 0 µs wake-up latency request
//! held while the run measures, and the kernel's count of how the CPUs idled meanwhile.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use wasmlab_model::idle::{IdlePolicy, IdleRecord};

/// The kernel's PM QoS file: a latency written here holds while the file stays open (Linux's
/// Documentation/power/pm_qos_interface.rst), and is released when it is closed, by the process's
/// exit too: a run that is killed leaves nothing behind.
const LATENCY_FILE: &str = "/dev/cpu_dma_latency";
const CPU_SYSFS: &str = "/sys/devices/system/cpu";

/// The request held for a run, and the idle counts it started from.
pub struct IdleHold {
    _request: Option<File>,
    cpus: Vec<usize>,
    start: Option<IdleEntries>,
    record: IdleRecord,
}

impl IdleHold {
    /// Holds `policy` for the run on `cpus` (every CPU the run uses) until [`IdleHold::finish`]
    /// or drop. Where the request cannot be made the run goes on, the reason recorded.
    pub fn take(policy: IdlePolicy, cpus: &[usize]) -> Self {
        Self::take_at(policy, cpus, Path::new(LATENCY_FILE), Path::new(CPU_SYSFS))
    }

    fn take_at(policy: IdlePolicy, cpus: &[usize], latency: &Path, sysfs: &Path) -> Self {
        let driver = std::fs::read_to_string(sysfs.join("cpuidle/current_driver"))
            .ok()
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty() && d != "none");
        let (request, not_held_because) = match (policy, &driver) {
            (IdlePolicy::System, _) => (None, None),
            (IdlePolicy::Poll, None) => (
                None,
                Some(
                    "the kernel has no cpuidle driver here, so idle is the architecture's own \
                     wait and a latency request changes nothing"
                        .to_owned(),
                ),
            ),
            (IdlePolicy::Poll, Some(_)) => match hold(latency) {
                Ok(f) => (Some(f), None),
                Err(why) => (None, Some(why)),
            },
        };
        Self {
            record: IdleRecord {
                policy,
                held: request.is_some(),
                driver,
                not_held_because,
                polled_share: None,
            },
            _request: request,
            cpus: cpus.to_vec(),
            start: IdleEntries::read(sysfs, cpus),
        }
    }

    /// What is held, for run.json as the run starts.
    pub fn record(&self) -> &IdleRecord {
        &self.record
    }

    /// Releases the request; the record with the share of idle entries that polled meanwhile.
    pub fn finish(self) -> IdleRecord {
        self.finish_at(Path::new(CPU_SYSFS))
    }

    fn finish_at(self, sysfs: &Path) -> IdleRecord {
        let end = IdleEntries::read(sysfs, &self.cpus);
        let polled_share = match (self.start, end) {
            (Some(a), Some(b)) if b.all > a.all => {
                Some(b.polled.saturating_sub(a.polled) as f64 / (b.all - a.all) as f64)
            }
            _ => None,
        };
        IdleRecord {
            polled_share,
            ..self.record
        }
    }
}

/// Opens the PM QoS file and asks for a 0 µs wake-up latency (a native-endian i32).
fn hold(latency: &Path) -> Result<File, String> {
    let mut f = File::options().write(true).open(latency).map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::PermissionDenied => {
                "; it is root's: run as root, or pass --cpu-idle system (cpu_idle = \"system\" in a \
                 suite) to measure idle CPUs as the machine has them. Without it a request may pay \
                 for waking a halted CPU, most at low load (native's CPU per request doubled at \
                 5,000 req/s on a 2-core VM: docs/method.md, \"Idle CPUs\")"
            }
            _ => "",
        };
        format!("cannot open {}: {e}{hint}", latency.display())
    })?;
    f.write_all(&0i32.to_ne_bytes())
        .map_err(|e| format!("cannot write {}: {e}", latency.display()))?;
    Ok(f)
}

/// How many times the CPUs entered an idle state, in all and in polling states.
#[derive(Debug, Clone, Copy, PartialEq)]
struct IdleEntries {
    all: u64,
    polled: u64,
}

impl IdleEntries {
    /// Summed over `cpus` from sysfs's per-state counters; None where the kernel has none.
    fn read(sysfs: &Path, cpus: &[usize]) -> Option<Self> {
        let mut sum = Self { all: 0, polled: 0 };
        for cpu in cpus {
            let dir = sysfs.join(format!("cpu{cpu}/cpuidle"));
            for state in std::fs::read_dir(dir).ok()?.flatten() {
                let path = state.path();
                let Some(usage) = std::fs::read_to_string(path.join("usage"))
                    .ok()
                    .and_then(|u| u.trim().parse::<u64>().ok())
                else {
                    continue;
                };
                let name = std::fs::read_to_string(path.join("name")).unwrap_or_default();
                sum.all += usage;
                // The kernel's polling state is named POLL by every driver that has one.
                if name.trim() == "POLL" {
                    sum.polled += usage;
                }
            }
        }
        Some(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs of two CPUs with a polling and a halting state each.
    fn sysfs(driver: &str, usage: [[u64; 2]; 2]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("cpuidle")).unwrap();
        std::fs::write(dir.path().join("cpuidle/current_driver"), driver).unwrap();
        set_usage(dir.path(), usage);
        dir
    }

    fn set_usage(root: &Path, usage: [[u64; 2]; 2]) {
        for (cpu, states) in usage.iter().enumerate() {
            for (i, (name, n)) in ["POLL", "haltpoll idle"].iter().zip(states).enumerate() {
                let s = root.join(format!("cpu{cpu}/cpuidle/state{i}"));
                std::fs::create_dir_all(&s).unwrap();
                std::fs::write(s.join("name"), format!("{name}\n")).unwrap();
                std::fs::write(s.join("usage"), format!("{n}\n")).unwrap();
            }
        }
    }

    #[test]
    fn held_while_the_file_is_open_with_zero_written() {
        let sys = sysfs("haltpoll\n", [[0, 100], [0, 50]]);
        let latency = sys.path().join("latency");
        std::fs::write(&latency, b"").unwrap();
        let hold = IdleHold::take_at(IdlePolicy::Poll, &[0, 1], &latency, sys.path());
        assert!(hold.record().held, "{:?}", hold.record());
        assert_eq!(hold.record().driver.as_deref(), Some("haltpoll"));
        assert_eq!(std::fs::read(&latency).unwrap(), 0i32.to_ne_bytes());
        // 300 more entries, 270 of them polling.
        set_usage(sys.path(), [[200, 110], [70, 70]]);
        let record = hold.finish_at(sys.path());
        assert_eq!(record.polled_share, Some(0.9));
    }

    #[test]
    fn not_held_with_the_reason_when_the_file_cannot_be_opened() {
        let sys = sysfs("haltpoll", [[0, 1], [0, 1]]);
        let hold = IdleHold::take_at(
            IdlePolicy::Poll,
            &[0, 1],
            &sys.path().join("absent/latency"),
            sys.path(),
        );
        let r = hold.record();
        assert!(!r.held);
        let why = r.not_held_because.as_deref().unwrap();
        assert!(
            why.starts_with("cannot open") && why.contains("absent/latency"),
            "{why}"
        );
    }

    #[test]
    fn no_request_without_a_cpuidle_driver_or_when_the_system_is_asked_for() {
        let sys = sysfs("none\n", [[0, 1], [0, 1]]);
        let latency = sys.path().join("latency");
        std::fs::write(&latency, b"untouched").unwrap();
        let r =
            IdleHold::take_at(IdlePolicy::Poll, &[0], &latency, sys.path()).finish_at(sys.path());
        assert!(!r.held && r.driver.is_none());
        assert!(r.not_held_because.unwrap().contains("no cpuidle driver"));
        let sys = sysfs("haltpoll", [[0, 1], [0, 1]]);
        let r = IdleHold::take_at(IdlePolicy::System, &[0, 1], &latency, sys.path())
            .finish_at(sys.path());
        assert!(!r.held && r.not_held_because.is_none());
        assert_eq!(r.polled_share, None, "no idle entries between the readings");
        assert_eq!(std::fs::read(&latency).unwrap(), b"untouched");
    }
}
