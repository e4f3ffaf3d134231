//! The servers running now, each by its process group with its stop command: what a run asked
//! to stop at once (a second Ctrl-C) stops before it exits, without waiting for anything else;
//! and a watchdog that kills the groups still listed when this process ends some other way.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
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
pub(super) fn watch() {
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

/// A server now leads process group `group`; `stop` is run before it is signalled.
pub(super) fn started(group: i32, stop: Option<&Command>) {
    if let Ok(mut live) = LIVE.lock() {
        live.push((group, stop.map(StopArgv::of)));
    }
    tell_watchdog('+', group);
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
