//! Resource use of a variant's whole process trees (the server and every descendant, and the trees
//! of any other processes that belong to the variant, such as a container's), sampled from /proc
//! while a cell is measured. CPU counts children that exited during the cell too: the kernel
//! adds a reaped child's time to its parent's `cutime`/`cstime`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmlab_model::sample::Resources;

/// How often RSS is sampled. Short enough to see a CLI-per-request child (which lives a few
/// milliseconds only in aggregate), cheap enough (one /proc scan) not to load the machine.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// One look at the tree.
#[derive(Debug, Clone, Copy, Default)]
struct Snapshot {
    rss_bytes: u64,
    cpu_ticks: u64,
    processes: usize,
}

fn snapshot(roots: &[i32]) -> Snapshot {
    let Ok(all) = procfs::process::all_processes() else {
        return Snapshot::default();
    };
    let stats: Vec<procfs::process::Stat> = all.filter_map(|p| p.ok()?.stat().ok()).collect();
    // The trees: the roots, then repeatedly every process whose parent is already in them.
    let mut members: Vec<i32> = roots.to_vec();
    let mut i = 0;
    while i < members.len() {
        let parent = members[i];
        members.extend(stats.iter().filter(|s| s.ppid == parent).map(|s| s.pid));
        i += 1;
    }
    let page = procfs::page_size();
    let mut snap = Snapshot::default();
    for s in stats.iter().filter(|s| members.contains(&s.pid)) {
        snap.rss_bytes += s.rss * page;
        snap.cpu_ticks += s.utime + s.stime + s.cutime.max(0) as u64 + s.cstime.max(0) as u64;
        snap.processes += 1;
    }
    snap
}

/// The parent of process `pid`, if it still runs.
pub fn parent(pid: u32) -> Option<u32> {
    let stat = procfs::process::Process::new(pid as i32)
        .ok()?
        .stat()
        .ok()?;
    u32::try_from(stat.ppid).ok()
}

/// The summed RSS of the trees rooted at `roots` now, KiB.
pub fn rss_kib(roots: &[u32]) -> u64 {
    let roots: Vec<i32> = roots.iter().map(|&r| r as i32).collect();
    snapshot(&roots).rss_bytes / 1024
}

/// Samples a process tree on a thread until [`Sampler::finish`].
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Resources>,
}

impl Sampler {
    /// Samples the trees rooted at `roots`.
    pub fn start(roots: Vec<u32>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let roots: Vec<i32> = roots.into_iter().map(|r| r as i32).collect();
        let handle = std::thread::spawn(move || {
            let first = snapshot(&roots);
            let (mut peak, mut sum, mut n, mut procs) = (0u64, 0f64, 0u32, 0usize);
            let mut last = first;
            loop {
                let s = snapshot(&roots);
                if s.processes > 0 {
                    peak = peak.max(s.rss_bytes);
                    sum += s.rss_bytes as f64;
                    n += 1;
                    procs = procs.max(s.processes);
                    last = s;
                }
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(SAMPLE_EVERY);
            }
            let ticks = procfs::ticks_per_second() as f64;
            Resources {
                rss_peak_kib: peak / 1024,
                rss_mean_kib: if n > 0 {
                    sum / f64::from(n) / 1024.0
                } else {
                    0.0
                },
                cpu_secs: last.cpu_ticks.saturating_sub(first.cpu_ticks) as f64 / ticks,
                processes_peak: procs,
                samples: n,
            }
        });
        Self { stop, handle }
    }

    /// Takes a last sample and returns what was seen.
    pub fn finish(self) -> Resources {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_busy_grandchild() {
        // A shell whose child spins: the child's CPU and RSS belong to the tree.
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sh")
            .args(["-c", "(while :; do :; done) & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let sampler = Sampler::start(vec![child.id()]);
        // Until the spinning child has had 0.3 s of CPU (at least 0.5 s): on a loaded machine it
        // gets less than its wall time, and the test is about counting, not about the scheduler.
        let start = snapshot(&[child.id() as i32]).cpu_ticks;
        let hz = procfs::ticks_per_second() as f64;
        let t0 = std::time::Instant::now();
        while t0.elapsed() < Duration::from_millis(500)
            || (snapshot(&[child.id() as i32]).cpu_ticks - start) as f64 / hz < 0.3
        {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "the child never ran"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let r = sampler.finish();
        // SAFETY: killing the test's own process group.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        child.wait().unwrap();
        assert!(r.samples >= 5, "{r:?}");
        assert_eq!(r.processes_peak, 2, "{r:?}");
        assert!(r.rss_peak_kib > 100, "{r:?}");
        assert!(r.cpu_secs > 0.2, "{r:?}");
    }

    #[test]
    fn tree_of_this_process_includes_a_spawned_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("1")
            .spawn()
            .unwrap();
        let me = snapshot(&[std::process::id() as i32]);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(me.processes >= 2, "{me:?}");
        assert!(me.rss_bytes > 0);
    }
}
