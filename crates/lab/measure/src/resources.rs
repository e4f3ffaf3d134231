//! Resource use of a variant's whole process trees (the server and every descendant, and the trees
//! of any other processes that belong to the variant, such as a container's), read from /proc
//! while a cell is measured: memory sampled all along, CPU read at the start and at the end.
//!
//! CPU is read to the nanosecond, so that a cell at a low offered rate, a few milliseconds of a
//! server's CPU in all, is measured as exactly as a saturated one: each process's CPU clock
//! (`clock_getcpuclockid`: every thread, those that ended included), plus what its reaped children
//! used (`cutime`/`cstime`, in clock ticks: a child that exits during the cell is counted whole
//! there, and was counted to the start by its own clock). /proc's `utime`/`stime` are in clock
//! ticks (10 ms), which made a cell of a second ±1% and a quiet one meaningless.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wasmlab_model::sample::Resources;

/// How often RSS is sampled. Short enough to see a CLI-per-request child (which lives a few
/// milliseconds only in aggregate), cheap enough (one /proc scan) not to load the machine.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// The processes of the trees rooted at `roots`, with their /proc stat: the roots, then
/// repeatedly the children of those already in them. Found through each thread's `children`
/// file, which touches the trees' processes only: a scan of every process on the machine took a
/// few milliseconds, long enough to matter where a reading marks the start of a cell. Where the
/// kernel keeps no such file, every process's parent is read instead.
fn tree(roots: &[i32]) -> Vec<procfs::process::Stat> {
    match members_by_children(roots) {
        Some(members) => members
            .into_iter()
            .filter_map(|pid| procfs::process::Process::new(pid).ok()?.stat().ok())
            .collect(),
        None => tree_by_parents(roots),
    }
}

/// The pids of the trees rooted at `roots` from /proc/PID/task/TID/children; None when a root
/// that runs has no such file (a kernel built without it).
fn members_by_children(roots: &[i32]) -> Option<Vec<i32>> {
    let mut members: Vec<i32> = Vec::new();
    let mut i = 0;
    let mut queue: Vec<i32> = roots.to_vec();
    while i < queue.len() {
        let pid = queue[i];
        i += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            // Ended meanwhile (or never ran): not a member.
            continue;
        };
        members.push(pid);
        for task in tasks.flatten() {
            match std::fs::read_to_string(task.path().join("children")) {
                Ok(text) => {
                    for c in text
                        .split_whitespace()
                        .filter_map(|c| c.parse::<i32>().ok())
                    {
                        if !queue.contains(&c) {
                            queue.push(c);
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && task.path().exists() => {
                    return None;
                }
                Err(_) => {}
            }
        }
    }
    Some(members)
}

/// The trees rooted at `roots` from every process's parent.
fn tree_by_parents(roots: &[i32]) -> Vec<procfs::process::Stat> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    let stats: Vec<procfs::process::Stat> = all.filter_map(|p| p.ok()?.stat().ok()).collect();
    let mut members: Vec<i32> = roots.to_vec();
    let mut i = 0;
    while i < members.len() {
        let parent = members[i];
        members.extend(stats.iter().filter(|s| s.ppid == parent).map(|s| s.pid));
        i += 1;
    }
    stats
        .into_iter()
        .filter(|s| members.contains(&s.pid))
        .collect()
}

/// Nanoseconds in a clock tick of /proc's times.
fn tick_ns() -> u64 {
    1_000_000_000 / procfs::ticks_per_second().max(1)
}

/// The CPU time of process `pid` (all its threads, ended ones included), ns, from its CPU clock.
fn process_cpu_ns(pid: i32) -> Option<u64> {
    let mut clock: libc::clockid_t = 0;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: both calls write only into the locals they are given.
    unsafe {
        if libc::clock_getcpuclockid(pid, &mut clock) != 0
            || libc::clock_gettime(clock, &mut ts) != 0
        {
            return None;
        }
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// CPU time of the processes `stats` (each by its CPU clock, else by its ticks) and of the
/// children they reaped, ns.
fn cpu_ns(stats: &[procfs::process::Stat]) -> u64 {
    let tick = tick_ns();
    stats
        .iter()
        .map(|s| {
            let own = process_cpu_ns(s.pid).unwrap_or((s.utime + s.stime) * tick);
            own + (s.cutime.max(0) + s.cstime.max(0)) as u64 * tick
        })
        .sum()
}

/// Each thread's time on a CPU (schedstat), ns, by thread id; empty where the kernel keeps none.
fn thread_ns(stats: &[procfs::process::Stat]) -> HashMap<i32, u64> {
    let mut out = HashMap::new();
    for s in stats {
        let Ok(tasks) = procfs::process::Process::new(s.pid).and_then(|p| p.tasks()) else {
            continue;
        };
        for t in tasks.flatten() {
            if let Ok(st) = t.schedstat() {
                out.insert(t.tid, st.sum_exec_runtime);
            }
        }
    }
    out
}

/// The CPU readings a cell's figures are the difference of.
struct CpuReading {
    at: Instant,
    tree_ns: u64,
    threads: HashMap<i32, u64>,
    /// The upstream's, when it runs.
    upstream_ns: Option<u64>,
}

fn read_cpu(roots: &[i32], upstream: Option<i32>) -> CpuReading {
    let stats = tree(roots);
    CpuReading {
        at: Instant::now(),
        tree_ns: cpu_ns(&stats),
        threads: thread_ns(&stats),
        upstream_ns: upstream.map(|u| cpu_ns(&tree(&[u]))),
    }
}

/// The parent of process `pid`, if it still runs.
pub(crate) fn parent(pid: u32) -> Option<u32> {
    let stat = procfs::process::Process::new(pid as i32)
        .ok()?
        .stat()
        .ok()?;
    u32::try_from(stat.ppid).ok()
}

/// The summed RSS of the trees rooted at `roots` now, KiB.
pub(crate) fn rss_kib(roots: &[u32]) -> u64 {
    let roots: Vec<i32> = roots.iter().map(|&r| r as i32).collect();
    rss_bytes(&tree(&roots)) / 1024
}

fn rss_bytes(stats: &[procfs::process::Stat]) -> u64 {
    let page = procfs::page_size();
    stats.iter().map(|s| s.rss * page).sum()
}

/// What the RSS sampler saw.
#[derive(Default)]
struct Memory {
    peak: u64,
    sum: f64,
    samples: u32,
    processes: usize,
}

/// What a cell's resources are measured against.
pub(crate) struct Watch {
    /// The roots of the variant's process trees.
    pub roots: Vec<u32>,
    /// The lab's upstream server, whose CPU is read beside (it shares the servers' CPUs).
    pub upstream: Option<u32>,
    /// The CPUs the variant may use.
    pub cpus: usize,
}

/// Samples a variant's process trees on a thread until [`Sampler::finish`].
pub(crate) struct Sampler {
    watch: Watch,
    first: CpuReading,
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Memory>,
}

impl Sampler {
    /// Reads the CPU time of the trees now, and samples their memory until `finish`.
    pub(crate) fn start(watch: Watch) -> Self {
        let roots: Vec<i32> = watch.roots.iter().map(|&r| r as i32).collect();
        let first = read_cpu(&roots, watch.upstream.map(|u| u as i32));
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut m = Memory::default();
            loop {
                let stats = tree(&roots);
                if !stats.is_empty() {
                    let rss = rss_bytes(&stats);
                    m.peak = m.peak.max(rss);
                    m.sum += rss as f64;
                    m.samples += 1;
                    m.processes = m.processes.max(stats.len());
                }
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::park_timeout(SAMPLE_EVERY);
            }
            m
        });
        Self {
            watch,
            first,
            stop,
            handle,
        }
    }

    /// Reads the CPU time again, takes a last memory sample and returns what was seen.
    pub(crate) fn finish(self) -> Resources {
        // First, before waiting for the memory sampler (up to one of its pauses), so that the
        // wall time between the readings is the cell's.
        let roots: Vec<i32> = self.watch.roots.iter().map(|&r| r as i32).collect();
        let last = read_cpu(&roots, self.watch.upstream.map(|u| u as i32));
        self.stop.store(true, Ordering::Relaxed);
        self.handle.thread().unpark();
        let m = self.handle.join().unwrap_or_default();
        let first = &self.first;
        let wall_secs = last.at.duration_since(first.at).as_secs_f64();
        let cpu_secs = last.tree_ns.saturating_sub(first.tree_ns) as f64 / 1e9;
        // A thread that began during the cell ran only then; one that ended is in no reading.
        let busiest_ns = last
            .threads
            .iter()
            .map(|(tid, ns)| ns.saturating_sub(first.threads.get(tid).copied().unwrap_or(0)))
            .max();
        let share = |ns: u64| (wall_secs > 0.0).then(|| ns as f64 / 1e9 / wall_secs);
        let cpus = self.watch.cpus.max(1);
        Resources {
            rss_peak_kib: m.peak / 1024,
            rss_mean_kib: if m.samples > 0 {
                m.sum / f64::from(m.samples) / 1024.0
            } else {
                0.0
            },
            cpu_secs,
            processes_peak: m.processes,
            samples: m.samples,
            wall_secs,
            cpus,
            utilization: (wall_secs > 0.0).then(|| cpu_secs / (wall_secs * cpus as f64)),
            busiest_thread: busiest_ns.and_then(share),
            upstream_cpu_secs: match (first.upstream_ns, last.upstream_ns) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64 / 1e9),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(pid: u32) -> Watch {
        Watch {
            roots: vec![pid],
            upstream: None,
            cpus: 1,
        }
    }

    #[test]
    fn counts_a_busy_grandchild() {
        // A shell whose child spins: the child's CPU and RSS belong to the tree.
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sh")
            .args(["-c", "(while :; do :; done) & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let sampler = Sampler::start(watch(child.id()));
        // Until the spinning child has had 0.3 s of CPU (at least 0.5 s): on a loaded machine it
        // gets less than its wall time, and the test is about counting, not about the scheduler.
        let cpu = || cpu_ns(&tree(&[child.id() as i32]));
        let start = cpu();
        let t0 = std::time::Instant::now();
        while t0.elapsed() < Duration::from_millis(500) || cpu() - start < 300_000_000 {
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
        // One spinning thread on the machine's CPUs: its share of the cell's wall time, and no
        // more than the wall time allows (the reading is exact, not in ticks).
        let busiest = r.busiest_thread.unwrap();
        assert!(busiest > 0.2 && busiest <= 1.01, "{r:?}");
        assert!(r.cpu_secs <= r.wall_secs * 1.01, "{r:?}");
        assert!((r.utilization.unwrap() - r.cpu_secs / r.wall_secs).abs() < 1e-9);
    }

    #[test]
    fn a_child_that_exits_during_the_cell_is_counted() {
        // The shell reaps each child it runs: their CPU is in the shell's cutime then, after
        // having been in their own clocks.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "for i in 1 2 3; do (i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done); done; exec sleep 5",
            ])
            .spawn()
            .unwrap();
        let sampler = Sampler::start(watch(child.id()));
        let t0 = std::time::Instant::now();
        // Until the loops are over and the shell has become `sleep`.
        while !tree(&[child.id() as i32]).iter().any(|s| s.comm == "sleep") {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "the loops never ended"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let r = sampler.finish();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(r.cpu_secs > 0.01, "the children's loops: {r:?}");
        assert!(r.cpu_secs <= r.wall_secs * 1.05, "{r:?}");
    }

    #[test]
    fn both_ways_of_finding_a_tree_find_the_same_processes() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 5 & sleep 5 & wait"])
            .spawn()
            .unwrap();
        let root = child.id() as i32;
        // Until the shell has started both sleeps.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while tree_by_parents(&[root]).len() < 3 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut by_parents: Vec<i32> = tree_by_parents(&[root]).iter().map(|s| s.pid).collect();
        let mut by_children =
            members_by_children(&[root]).expect("this kernel keeps children files");
        by_parents.sort_unstable();
        by_children.sort_unstable();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(by_parents.len(), 3, "{by_parents:?}");
        assert_eq!(by_children, by_parents);
    }

    #[test]
    fn tree_of_this_process_includes_a_spawned_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("1")
            .spawn()
            .unwrap();
        let me = tree(&[std::process::id() as i32]);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(me.len() >= 2, "{}", me.len());
        assert!(rss_bytes(&me) > 0);
    }
}
