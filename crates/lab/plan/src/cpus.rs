//! Putting a run's CPU plan ([`CpuPlan`]) into effect: which CPUs this process may use, the
//! lab pinned to the load generator's, each server confined to the servers'.

use std::process::{Child, Command};

use wasmlab_model::cpus::CpuPlan;

/// Confines the calling thread, and the threads it starts from now on, to the generator's CPUs.
/// Call before the lab starts its own threads.
pub fn pin_lab(plan: &CpuPlan) -> std::io::Result<()> {
    if !plan.apart() {
        return Ok(());
    }
    set_affinity(&cpu_set(&plan.load))
}

/// Spawns `cmd` on the servers' CPUs only, when the plan sets them apart.
pub fn spawn_confined(plan: &CpuPlan, cmd: &mut Command) -> std::io::Result<Child> {
    match plan.apart() {
        true => spawn_on(&plan.server, cmd),
        false => cmd.spawn(),
    }
}

/// Spawns `cmd` on `cpus` only (the servers', or one local load generator's). A process starts
/// with the CPUs of the thread that made it, so the calling thread takes `cpus` for the spawn and
/// then its own again: with no `pre_exec` hook, std starts the process with posix_spawn (a vfork)
/// rather than by forking the whole lab, whose cost grows with the lab's memory and would be
/// timed as the server's (a cold start, an engine's run).
pub fn spawn_on(cpus: &[usize], cmd: &mut Command) -> std::io::Result<Child> {
    let own = thread_affinity()?;
    set_affinity(&cpu_set(cpus))?;
    let child = cmd.spawn();
    if let Err(e) = set_affinity(&own) {
        // Not left on those CPUs, where its own work would be counted as theirs.
        if let Ok(mut child) = child {
            let _ = child.kill();
            let _ = child.wait();
        }
        return Err(e);
    }
    child
}

fn thread_affinity() -> std::io::Result<libc::cpu_set_t> {
    // SAFETY: sched_getaffinity fills the set it is given.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(set)
    }
}

/// Makes every thread of a running process `pid` run on the servers' CPUs (threads and
/// processes it makes later inherit that): a daemon whose children are servers (containerd).
pub fn confine_running(plan: &CpuPlan, pid: u32) -> std::io::Result<()> {
    if !plan.apart() {
        return Ok(());
    }
    let set = cpu_set(&plan.server);
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let Some(tid) = task?
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: sched_setaffinity reads the set it is given.
        if unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) }
            != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPUs this process may run on, in order.
pub fn allowed() -> std::io::Result<Vec<usize>> {
    let set = thread_affinity()?;
    // SAFETY: CPU_ISSET only reads the set.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        set
    }
}

fn set_affinity(set: &libc::cpu_set_t) -> std::io::Result<()> {
    // SAFETY: a plain syscall on the calling thread with a valid set.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_confined_child_sees_only_the_server_cpus() {
        let allowed = allowed().unwrap();
        let plan = CpuPlan::new(&allowed, 1, true);
        if !plan.apart() {
            wasmlab_test_support::skipped_not_installable(&plan.describe());
            return;
        }
        let mut cmd = Command::new("grep");
        cmd.args(["Cpus_allowed_list", "/proc/self/status"])
            .stdout(std::process::Stdio::piped());
        let child = spawn_confined(&plan, &mut cmd).unwrap();
        // The spawning thread has its own CPUs back.
        assert_eq!(super::allowed().unwrap(), allowed);
        let out = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
        // The kernel prints ranges (1-3) where the plan lists each CPU.
        let seen: Vec<usize> = out
            .split(':')
            .nth(1)
            .unwrap()
            .trim()
            .split(',')
            .flat_map(|part| match part.split_once('-') {
                Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).collect(),
                None => vec![part.parse().unwrap()],
            })
            .collect();
        assert_eq!(seen, plan.server);
    }
}
