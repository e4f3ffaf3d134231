//! The servers running now, each by its process group with its stop command: what a run asked
//! to stop at once (a second Ctrl-C) stops before it exits, without waiting for anything else;
//! and a watchdog that kills the groups still listed when this process ends some other way.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use wasmlab_plan::exec::run_with_timeout;

/// A stop command, kept as what builds it again (a `Command` cannot be cloned).
struct StopArgv {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    dir: Option<PathBuf>,
}

impl StopArgv {
    fn of(cmd: &Command) -> Self {
        Self {
            program: cmd.get_program().to_owned(),
            args: cmd.get_args().map(ToOwned::to_owned).collect(),
            envs: cmd
                .get_envs()
                .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
                .collect(),
            dir: cmd.get_current_dir().map(ToOwned::to_owned),
        }
    }

    fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args);
        for (k, v) in &self.envs {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        if let Some(d) = &self.dir {
            c.current_dir(d);
        }
        c
    }
}

/// (process group, its stop command) of every server started and not yet stopped.
static LIVE: Mutex<Vec<(i32, Option<StopArgv>)>> = Mutex::new(Vec::new());

/// A shell that reads `+GROUP` and `-GROUP` lines from its stdin, the list of servers' process
/// groups, and kills the groups still listed when its stdin ends: when this process ends,
/// however it ends (killed, aborted), the pipe's last writer is gone. It replaces the servers'
/// PR_SET_PDEATHSIG, which needs a `pre_exec` hook, and with it std forks this whole process
/// instead of using posix_spawn: that fork, slower as the lab grows, was part of each cold start
/// measured (native's p50 2.0 ms with posix_spawn, 5.7 to 7.5 ms with the fork late in a run).
/// Its own process group and ignored signals keep a Ctrl-C at the terminal from ending it first.
const WATCHDOG: &str = r#"trap '' INT TERM HUP QUIT
groups=' '
while read -r g; do
  case $g in
    +*) groups="$groups${g#+} " ;;
    -*) case $groups in *" ${g#-} "*) groups="${groups%% ${g#-} *} ${groups#* ${g#-} }" ;; esac ;;
  esac
done
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
"#;

/// The watchdog's stdin, once started; `None` inside when it could not be.
static WATCHED: Mutex<Option<Option<ChildStdin>>> = Mutex::new(None);

/// Starts the watchdog if it is not running yet: called before a server is spawned and timed.
fn watch() {
    let Ok(mut watched) = WATCHED.lock() else {
        return;
    };
    if watched.is_some() {
        return;
    }
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", WATCHDOG])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let stdin = match cmd.spawn() {
        Ok(mut child) => child.stdin.take(),
        Err(e) => {
            eprintln!(
                "wasmlab: no watchdog for the servers (/bin/sh: {e}): a server may outlive a killed wasmlab"
            );
            None
        }
    };
    *watched = Some(stdin);
}

/// Tells the watchdog of a group started (`+`) or stopped (`-`).
fn tell_watchdog(sign: char, group: i32) {
    if let Ok(mut watched) = WATCHED.lock()
        && let Some(Some(stdin)) = watched.as_mut()
    {
        let _ = writeln!(stdin, "{sign}{group}");
    }
}

/// A process group made for one server before the server is spawned, and known to the watchdog
/// from then on. The server is spawned into it (posix_spawn joins the group before the program
/// starts), so a wasmlab killed at any moment, even between the spawn and the bookkeeping after
/// it, leaves no server the watchdog does not kill: a server that led a group of its own was
/// listed only once `spawn` had returned, and one killed in between outlived wasmlab. The group's
/// first member, a shell waiting on a pipe only wasmlab writes to, ends when wasmlab does, or
/// once the server is in the group ([`Group::joined`]); the group lives on with the server.
pub(super) struct Group {
    id: i32,
    holder: Child,
    joined: bool,
}

impl Group {
    /// A new group, the watchdog told of it (and started, if it was not).
    pub(super) fn new() -> std::io::Result<Self> {
        watch();
        let holder = Command::new("/bin/sh")
            .args(["-c", "read -r line"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        let id = holder.id() as i32;
        tell_watchdog('+', id);
        Ok(Self {
            id,
            holder,
            joined: false,
        })
    }

    /// The process group's id, for `Command::process_group`.
    pub(super) fn id(&self) -> i32 {
        self.id
    }

    /// Its server is spawned into it: listed with `stop`, run before the group is signalled. The
    /// group's id, which signals it.
    pub(super) fn joined(mut self, stop: Option<&Command>) -> i32 {
        if let Ok(mut live) = LIVE.lock() {
            live.push((self.id, stop.map(StopArgv::of)));
        }
        self.joined = true;
        self.id
    }
}

impl Drop for Group {
    /// Its holder ended either way; a group no server joined taken off the watchdog's list.
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
        if !self.joined {
            tell_watchdog('-', self.id);
        }
    }
}

/// The server of `group` is being stopped the usual way.
pub(super) fn stopping(group: i32) {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|(g, _)| *g != group);
    }
    tell_watchdog('-', group);
}

/// How many servers are running now.
pub fn count() -> usize {
    LIVE.lock().map_or(0, |l| l.len())
}

/// Stops every server running now, without grace: each stop command (a container's removal)
/// given 5 s, then each process group killed. For a run that must end at once; the servers'
/// own stops, on other threads, may still be under way and find nothing left.
pub fn stop_all_now() {
    let live = match LIVE.lock() {
        Ok(mut l) => std::mem::take(&mut *l),
        // A thread panicked holding it: the list is still sound (pushes and retains only).
        Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
    };
    for (group, stop) in live {
        if let Some(stop) = stop {
            let _ = run_with_timeout(&mut stop.command(), Duration::from_secs(5));
        }
        // SAFETY: signalling a process group this process started; ESRCH when it is gone.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
        tell_watchdog('-', group);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field of /proc/PID/stat after the name: 0 its state, 2 its process group.
    fn stat_field(pid: u32, n: usize) -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        Some(
            stat.rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(n)?
                .to_owned(),
        )
    }

    /// A process spawned into a group is in it from its start, the group outlives its holder, and
    /// signalling the group reaches the process; a group no process joined ends with its holder.
    #[test]
    fn a_server_spawned_into_its_group_is_in_it_from_the_start() {
        let group = Group::new().unwrap();
        let holder = group.holder.id();
        let id = group.id();
        assert_eq!(id, holder as i32, "the holder leads the group");
        let mut server = Command::new("sleep")
            .arg("30")
            .process_group(id)
            .spawn()
            .unwrap();
        assert_eq!(id, group.joined(None));
        assert_eq!(
            stat_field(server.id(), 2).as_deref(),
            Some(id.to_string().as_str())
        );
        assert!(
            stat_field(holder, 0).is_none(),
            "the holder is gone once the server is in its group"
        );
        // SAFETY: signalling the group made above.
        unsafe {
            libc::kill(-id, libc::SIGKILL);
        }
        assert!(!server.wait().unwrap().success());
        stopping(id);

        let unused = Group::new().unwrap();
        let holder = unused.holder.id();
        drop(unused);
        assert!(
            stat_field(holder, 0).is_none(),
            "an unused group's holder ends"
        );
    }
}
