//! The lab's own containerd, for the variants that run under it (`[[requires]] containerd =
//! true`): started once per process and binary, on first need, as root, with a private root,
//! state directory, socket and config in a directory of its own (never the machine's containerd or
//! its images), the lab's tools directory first on its PATH so it finds shims `wasmlab setup`
//! built; the snapshotter chosen by running a container (overlayfs, else native), as podman's
//! settings are found; stopped by [`stop`] at the end of the run, after every container, task,
//! image and mount of it is removed. The machine's containerd (Debian's) by default; a variant
//! that requires `containerd` and `ctr` as tools gets a daemon of those binaries (containerd 1.7,
//! which passes Wasm layers to shims) beside it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use wasmlab_model::tools::Containerd;

use crate::exec::{on_path, run_with_timeout};

/// The namespace the lab's containers, images and tasks live in.
pub const NAMESPACE: &str = "wasmlab";

/// Snapshotters tried in order: overlayfs is containerd's default and what a node runs; native
/// (plain copies) works where overlay mounts do not (some nested or FUSE file systems).
const SNAPSHOTTERS: &[&str] = &["overlayfs", "native"];

/// A daemon while it runs: its process and its directory.
struct Daemon {
    child: Child,
    dir: PathBuf,
    settings: Containerd,
}

/// Which binaries: the machine's (`containerd` and `ctr` on PATH), or these.
type Binaries = Option<(PathBuf, PathBuf)>;

/// What each start found, by binaries: asked once per process.
static FOUND: Mutex<Vec<(Binaries, Result<Containerd, String>)>> = Mutex::new(Vec::new());
static DAEMONS: Mutex<Vec<Daemon>> = Mutex::new(Vec::new());
/// Set by [`stop`]: no daemon starts after it.
static STOPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The lab's containerd of the machine's binaries, started on first use, or why it cannot run.
pub fn detect() -> Result<Containerd, String> {
    detect_binaries(None)
}

/// The lab's containerd of these binaries (the daemon and its `ctr`), started on first use.
pub fn detect_with(daemon: &Path, ctr: &Path) -> Result<Containerd, String> {
    detect_binaries(Some((daemon.to_owned(), ctr.to_owned())))
}

fn detect_binaries(binaries: Binaries) -> Result<Containerd, String> {
    let mut found = FOUND.lock().map_err(|e| e.to_string())?;
    if let Some((_, known)) = found.iter().find(|(b, _)| *b == binaries) {
        return known.clone();
    }
    if STOPPED.load(std::sync::atomic::Ordering::SeqCst) {
        return Err("the lab is stopping".into());
    }
    // The first daemon's directory is wasmlab-containerd-PID, the next ones' -PID-N.
    let dir = match found.len() {
        0 => format!("wasmlab-containerd-{}", std::process::id()),
        n => format!("wasmlab-containerd-{}-{n}", std::process::id()),
    };
    let started = start(binaries.as_ref(), &std::env::temp_dir().join(dir));
    found.push((binaries, started.clone()));
    started
}

fn start(binaries: Option<&(PathBuf, PathBuf)>, dir: &Path) -> Result<Containerd, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(
            "containerd runs as root: the lab starts its own containerd, so run wasmlab as root"
                .into(),
        );
    }
    let needed: &[&str] = match binaries {
        None => &["containerd", "ctr", "containerd-shim-runc-v2", "runc"],
        Some(_) => &["containerd-shim-runc-v2", "runc"],
    };
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|p| on_path(p).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{} not installed; on Debian: apt-get install containerd runc",
            missing.join(", ")
        ));
    }
    let (daemon_bin, ctr_bin) = match binaries {
        Some((d, c)) => (d.clone(), c.clone()),
        None => (
            on_path("containerd").expect("checked above"),
            on_path("ctr").expect("checked above"),
        ),
    };
    let version = run_with_timeout(
        Command::new(&daemon_bin).arg("--version"),
        Duration::from_secs(20),
    )
    .map(|v| {
        // "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3"
        let words: Vec<&str> = v.split_whitespace().collect();
        words
            .get(2)
            .copied()
            .unwrap_or("(version unknown)")
            .to_owned()
    })
    .map_err(|e| format!("`{} --version` failed: {e}", daemon_bin.display()))?;
    let mut daemon = launch(dir, (&daemon_bin, &ctr_bin), version)?;
    let mut tried = Vec::new();
    for snapshotter in SNAPSHOTTERS {
        set_snapshotter(&mut daemon.settings, snapshotter);
        match runs_a_container(&daemon.settings, dir) {
            Ok(()) => {
                let settings = daemon.settings.clone();
                DAEMONS.lock().map_err(|e| e.to_string())?.push(daemon);
                return Ok(settings);
            }
            Err(e) => tried.push(format!("{snapshotter}: {e}")),
        }
    }
    let _ = shut_down(daemon);
    Err(format!(
        "containerd started but ran no container with any snapshotter ({})",
        tried.join("; ")
    ))
}

/// Makes `name` the snapshotter of every `ctr` command of these settings.
fn set_snapshotter(settings: &mut Containerd, name: &str) {
    settings.snapshotter = name.to_owned();
    settings.env.retain(|(k, _)| k != "CONTAINERD_SNAPSHOTTER");
    settings
        .env
        .push(("CONTAINERD_SNAPSHOTTER".into(), name.to_owned()));
}

/// Writes the private config and starts containerd on it; waits until it answers.
fn launch(
    dir: &Path,
    (daemon_bin, ctr_bin): (&Path, &Path),
    version: String,
) -> Result<Daemon, String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let socket = dir.join("containerd.sock");
    let config = dir.join("config.toml");
    // The CRI plugin is off: no Kubernetes here, and it would need CNI and a sandbox image.
    let text = format!(
        "version = 2\n\
         root = {root:?}\n\
         state = {state:?}\n\
         disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
         [grpc]\n  address = {socket:?}\n\
         [ttrpc]\n  address = \"{socket}.ttrpc\"\n\
         [debug]\n  address = \"\"\n\
         [plugins.\"io.containerd.internal.v1.opt\"]\n  path = {opt:?}\n",
        root = dir.join("root").display().to_string(),
        state = dir.join("state").display().to_string(),
        socket = socket.display().to_string(),
        opt = dir.join("opt").display().to_string(),
    );
    std::fs::write(&config, text).map_err(|e| format!("write {}: {e}", config.display()))?;
    let log = std::fs::File::create(dir.join("containerd.log")).map_err(|e| e.to_string())?;
    let path = std::iter::once(crate::exec::tools_dir().join("bin"))
        .chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ))
        .collect::<Vec<_>>();
    let mut cmd = Command::new(daemon_bin);
    cmd.arg("--config")
        .arg(&config)
        .env(
            "PATH",
            std::env::join_paths(path).map_err(|e| e.to_string())?,
        )
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log);
    // Its shims are the servers measured, and they inherit its environment.
    crate::environment::minimal(&mut cmd);
    // SAFETY: prctl is async-signal-safe. containerd stops with the lab, even if the lab is killed.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start containerd: {e}"))?;
    let mut daemon = Daemon {
        child,
        dir: dir.to_owned(),
        settings: Containerd {
            ctr: ctr_bin.display().to_string(),
            env: vec![
                ("CONTAINERD_ADDRESS".into(), socket.display().to_string()),
                ("CONTAINERD_NAMESPACE".into(), NAMESPACE.into()),
            ],
            snapshotter: String::new(),
            version: format!("containerd {version}"),
        },
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if ctr(&daemon.settings, &["version"], Duration::from_secs(5)).is_ok() {
            return Ok(daemon);
        }
        if let Ok(Some(status)) = daemon.child.try_wait() {
            return Err(format!(
                "containerd exited ({status}) at start: {}",
                last_error(&dir.join("containerd.log"))
            ));
        }
        if Instant::now() > deadline {
            let why = last_error(&dir.join("containerd.log"));
            let _ = shut_down(daemon);
            return Err(format!("containerd did not answer within 20 s: {why}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `ctr ARGS` against the lab's daemon; its stdout, or the error.
pub fn ctr(settings: &Containerd, args: &[&str], timeout: Duration) -> Result<String, String> {
    let mut cmd = Command::new(&settings.ctr);
    cmd.args(args)
        .envs(settings.env.iter().map(|(k, v)| (k, v)));
    run_with_timeout(&mut cmd, timeout)
}

/// Whether a container runs with the current snapshotter: a one-file image (glibc's static
/// `ldconfig`, as the podman probe uses) imported and run with runc and host networking.
fn runs_a_container(settings: &Containerd, dir: &Path) -> Result<(), String> {
    let program = ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .ok_or("no static program (ldconfig) to test a container with")?;
    let probe = dir.join("probe");
    std::fs::copy(program, &probe).map_err(|e| e.to_string())?;
    let archive = dir.join("probe.tar");
    let reference = "localhost/wasmlab-probe:1";
    wasmlab_image::write_archive(
        reference,
        &probe,
        wasmlab_image::Program::Executable,
        &archive,
    )
    .map_err(|e| format!("{e:#}"))?;
    let quick = Duration::from_secs(60);
    let archive = archive.display().to_string();
    let ran = ctr(settings, &["images", "import", &archive], quick).and_then(|_| {
        let id = format!("wasmlab-probe-{}", settings.snapshotter);
        ctr(
            settings,
            &[
                "run",
                "--rm",
                "--net-host",
                reference,
                &id,
                "/probe",
                "--version",
            ],
            quick,
        )
    });
    let _ = ctr(settings, &["images", "rm", reference], quick);
    ran.map(|_| ())
        .map_err(|e| e.lines().last().unwrap_or(&e).to_owned())
}

/// Runs the lab's containerd (and so the shims and containers it starts from now on) on the
/// servers' CPUs; `ctr run` has no `--cpuset-cpus`, and the lab's containerd runs nothing else.
pub fn confine(plan: &wasmlab_model::cpus::CpuPlan) -> Result<(), String> {
    for d in DAEMONS.lock().map_err(|e| e.to_string())?.iter() {
        crate::cpus::confine_running(plan, d.child.id())
            .map_err(|e| format!("cannot pin containerd to the servers' CPUs: {e}"))?;
    }
    Ok(())
}

/// Removes every container, task and image of the lab's namespace, stops containerd, unmounts
/// what is still mounted under its directory and removes it. Does nothing when no daemon runs.
/// Returns what could not be cleaned, if anything.
pub fn stop() -> Result<(), String> {
    // A daemon being started (planning holds FOUND while it starts one, up to its test container)
    // is waited for, so that it is registered and shut down like the others; none starts after.
    let starting = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    STOPPED.store(true, std::sync::atomic::Ordering::SeqCst);
    drop(starting);
    let daemons = std::mem::take(&mut *DAEMONS.lock().map_err(|e| e.to_string())?);
    let mut left: Vec<String> = daemons
        .into_iter()
        .filter_map(|d| shut_down(d).err())
        .collect();
    // A daemon whose start failed part-way may have left its directory, or a process started
    // from it.
    left.extend(
        lab_dirs()
            .into_iter()
            .filter(|(pid, _)| *pid == std::process::id() as i32)
            .flat_map(|(_, dir)| remove_lab_dir(&dir).2),
    );
    if left.is_empty() {
        Ok(())
    } else {
        Err(left.join("; "))
    }
}

fn shut_down(mut daemon: Daemon) -> Result<(), String> {
    let s = &daemon.settings;
    let quick = Duration::from_secs(30);
    let mut left = Vec::new();
    for id in listed(s, &["containers", "ls", "-q"]) {
        // A task still running (a shim that outlived its `ctr run`) is killed with it.
        let _ = ctr(s, &["tasks", "delete", "--force", &id], quick);
        if let Err(e) = ctr(s, &["containers", "delete", &id], quick) {
            left.push(format!("container {id}: {e}"));
        }
    }
    for image in listed(s, &["images", "ls", "-q"]) {
        let _ = ctr(s, &["images", "rm", &image], quick);
    }
    // SAFETY: signalling our own child by pid.
    unsafe {
        libc::kill(daemon.child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while daemon.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if daemon.child.try_wait().ok().flatten().is_none() {
        let _ = daemon.child.kill();
        let _ = daemon.child.wait();
    }
    // What outlived it: a shim containerd did not get to shut down (one whose task was deleted
    // while its `ctr run` was deleting it too), or a container whose shim was killed.
    let socket = daemon.dir.join("containerd.sock");
    for pid in leftover_processes(&socket, std::process::id()) {
        // SAFETY: SIGKILL to a process of the lab's own containerd.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    left.extend(unmount_under(&daemon.dir).1);
    if let Err(e) = std::fs::remove_dir_all(&daemon.dir) {
        left.push(format!("{}: {e}", daemon.dir.display()));
    }
    if left.is_empty() {
        Ok(())
    } else {
        Err(format!("left behind: {}", left.join("; ")))
    }
}

/// What labs killed before they could stop their containerd (SIGKILL, a panic, a power cut) left
/// in the temporary directory: each such lab's directory (`wasmlab-containerd-PID…`, its
/// process gone), the processes started from it (its daemon, the shims, with the directory in
/// their command line), the mounts under it. Removes it all; a line per directory says what went,
/// or what could not. A directory of a lab still running is left alone.
pub fn clean_leftovers() -> Vec<String> {
    let mut said = Vec::new();
    for (pid, dir) in lab_dirs() {
        if lab_alive(pid) {
            continue;
        }
        let (processes, mounts, left) = remove_lab_dir(&dir);
        said.push(format!(
            "wasmlab: removed what a killed wasmlab (process {pid}) left of its containerd: {processes} process(es), {mounts} mount(s), {}{}",
            dir.display(),
            match left.is_empty() {
                true => String::new(),
                false => format!("; could not remove: {}", left.join("; ")),
            }
        ));
    }
    said
}

/// Every lab containerd's directory in the temporary directory (`wasmlab-containerd-PID…`),
/// with the pid of the lab that made it.
fn lab_dirs() -> Vec<(i32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix("wasmlab-containerd-")
                .and_then(|rest| rest.split('-').next()?.parse::<i32>().ok())?;
            Some((pid, entry.path()))
        })
        .collect()
}

/// Removes a lab containerd's directory and what runs from it: the processes started from it
/// (killed), the mounts under it. How many processes and mounts, and what could not go.
fn remove_lab_dir(dir: &Path) -> (usize, usize, Vec<String>) {
    let processes = started_from(dir);
    for p in &processes {
        // SAFETY: SIGKILL to a process whose command line names the lab's directory.
        unsafe {
            libc::kill(*p, libc::SIGKILL);
        }
    }
    let (mounts, mut left) = unmount_under(dir);
    if let Err(e) = std::fs::remove_dir_all(dir) {
        left.push(format!("{}: {e}", dir.display()));
    }
    (processes.len(), mounts, left)
}

/// Whether process `pid` is a wasmlab still running (a pid taken since by another program is
/// not: its lab is gone).
pub(crate) fn lab_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with("wasmlab"))
}

/// Whether a `wasmlab run` other than this process is under way.
pub(crate) fn another_lab_runs() -> bool {
    !other_processes(|pid| {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let mut args = cmdline.split(|&b| b == 0);
        lab_alive(pid) && args.nth(1) == Some(b"run")
    })
    .is_empty()
}

/// Processes, other than this one, with an argument in `dir`.
fn started_from(dir: &Path) -> Vec<i32> {
    use std::os::unix::ffi::OsStrExt;
    other_processes(|pid| {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        cmdline
            .split(|&b| b == 0)
            .any(|arg| Path::new(std::ffi::OsStr::from_bytes(arg)).starts_with(dir))
    })
}

/// The processes other than this one that `matching` accepts.
fn other_processes(matching: impl Fn(i32) -> bool) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me && matching(pid))
        .collect()
}

/// Unmounts every mount under `dir` (lazily where busy); what could not be, said.
fn unmount_under(dir: &Path) -> (usize, Vec<String>) {
    let mounts = mounts_under(dir);
    let mut left = Vec::new();
    for mount in &mounts {
        let c = std::ffi::CString::new(mount.as_os_str().as_encoded_bytes()).expect("no NUL");
        // SAFETY: unmounting a path under a directory of the lab's own, lazily if busy.
        if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
            left.push(format!(
                "mount {}: {}",
                mount.display(),
                std::io::Error::last_os_error()
            ));
        }
    }
    (mounts.len(), left)
}

/// Processes of a lab's containerd still running: shims started with its `socket` as their
/// `-address`, and processes in a cgroup of one of its containers (`/wasmlab/wasmlab-LAB-…`, the
/// namespace and the instance names of the lab whose process id is `lab`: another lab's
/// containers run in the same namespace and are not these).
pub fn leftover_processes(socket: &Path, lab: u32) -> Vec<i32> {
    let socket = socket.as_os_str().as_encoded_bytes();
    let cgroup = format!(":/{NAMESPACE}/wasmlab-{lab}-");
    other_processes(|pid| {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let shim = cmdline.split(|&b| b == 0).any(|arg| arg == socket);
        let contained = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .is_ok_and(|c| c.contains(&cgroup));
        shim || contained
    })
}

/// The ids `ctr … -q` prints, one per line.
fn listed(s: &Containerd, args: &[&str]) -> Vec<String> {
    ctr(s, args, Duration::from_secs(30))
        .map(|out| {
            out.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// Mount points at or under `dir`, deepest first.
pub fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut found: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        // /proc/self/mounts escapes spaces as \040; the lab's directories have none.
        .map(PathBuf::from)
        .filter(|m| m.starts_with(dir))
        .collect();
    found.sort_by_key(|m| std::cmp::Reverse(m.components().count()));
    found
}

/// The last line of containerd's log that reports an error, else its last line.
fn last_error(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .rev()
        .find(|l| l.contains("level=error") || l.contains("level=fatal"))
        .or(text.lines().last())
        .unwrap_or("no output")
        .to_owned()
}
