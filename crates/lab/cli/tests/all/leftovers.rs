//! What a wasmlab killed before it could clean up leaves (its containerd's directory, processes
//! started from it, its podman containers) is found and removed by the next `wasmlab run` or
//! `wasmlab clean`; a lab still running keeps its own; a lab stopped by Ctrl-C while its
//! containerd starts leaves nothing of it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{KillOnDrop, WASMLAB};

#[test]
fn clean_removes_what_a_killed_lab_left_and_nothing_of_a_live_one() {
    let tmp = tempfile::tempdir().unwrap();
    // A lab that is gone: its process ended, its directory and a process started from it left.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let dir = tmp.path().join(format!("wasmlab-containerd-{dead}"));
    std::fs::create_dir_all(dir.join("state")).unwrap();
    std::fs::write(dir.join("containerd.log"), "").unwrap();
    // `tail -f` never forks: a shell loop's child, between fork and exec, carries the same
    // arguments and was counted as a second process.
    let mut shim = KillOnDrop(
        Command::new("tail")
            .arg("-f")
            .arg(dir.join("containerd.log"))
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // `spawn` returns when the kernel lets go of the parent's memory, before the new program's
    // arguments are in place; on a loaded machine `clean` read an empty command line and
    // counted no process.
    let log = dir.join("containerd.log");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read(format!("/proc/{}/cmdline", shim.id()))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .any(|arg| arg == log.as_os_str().as_encoded_bytes())
    {
        assert!(Instant::now() < deadline, "tail never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A lab still running: its directory stays.
    let mut live = live_lab();
    let kept = tmp
        .path()
        .join(format!("wasmlab-containerd-{}-1", live.id()));
    std::fs::create_dir_all(&kept).unwrap();
    let clean = || {
        let out = Command::new(WASMLAB)
            .arg("clean")
            .env("TMPDIR", tmp.path())
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let said = clean();
    let _ = live.kill();
    live.wait().unwrap();
    assert!(
        said.contains(&format!(
            "removed what a killed wasmlab (process {dead}) left of its containerd: 1 process(es), 0 mount(s), {}",
            dir.display()
        )),
        "{said}"
    );
    assert!(!dir.exists());
    assert!(kept.exists(), "a live lab's directory removed: {said}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while shim.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "the process started from it still runs"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::remove_dir_all(&kept).unwrap();
    assert!(!clean().contains("left of its containerd"));
    // Podman's containers are the machine's: checked here, not beside this test.
    a_killed_lab_s_container_is_removed(tmp.path());
}

/// A process standing for a lab still running (the lab's upstream, a `wasmlab` process).
fn live_lab() -> KillOnDrop {
    let lab = KillOnDrop(
        Command::new(WASMLAB)
            .args(["upstream", "--port", "0"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Its name is the test's until the kernel has finished starting it (see above).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(format!("/proc/{}/comm", lab.id()))
        .is_ok_and(|c| c.starts_with("wasmlab"))
    {
        assert!(Instant::now() < deadline, "wasmlab upstream never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    lab
}

/// A container a killed lab left (named for its process, which is gone) is removed by `wasmlab
/// clean`; one named for a live lab is not.
fn a_killed_lab_s_container_is_removed(tmp: &std::path::Path) {
    let podman = |args: &[&str]| Command::new("podman").args(args).output();
    if !podman(&["--version"]).is_ok_and(|o| o.status.success()) {
        crate::support::skipped("podman is not installed here (apt-get install podman)");
        return;
    }
    let tar = tmp.join("empty.tar");
    let made = Command::new("tar")
        .arg("cf")
        .arg(&tar)
        .args(["--files-from", "/dev/null"])
        .status()
        .unwrap();
    assert!(made.success());
    // Not named as the lab names its images (`localhost/wasmlab-*`), which a `wasmlab run` of
    // another test starting meanwhile removes when it sees no other lab running.
    let image = format!("localhost/leftovers-test:{}", std::process::id());
    let out = podman(&["import", "-q", tar.to_str().unwrap(), &image]).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let mut live = live_lab();
    let left = format!("wasmlab-{dead}-leftovers-0");
    let kept = format!("wasmlab-{}-leftovers-0", live.id());
    for name in [&left, &kept] {
        let out = podman(&["create", "-q", "--name", name, &image, "/nothing"]).unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = Command::new(WASMLAB)
        .arg("clean")
        .env("TMPDIR", tmp)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    let names = podman(&["ps", "--all", "--format", "{{.Names}}"]).unwrap();
    let names = String::from_utf8_lossy(&names.stdout);
    let _ = podman(&["rm", "--force", &kept]);
    let _ = podman(&["rmi", "--force", &image]);
    let _ = live.kill();
    live.wait().unwrap();
    assert!(out.status.success(), "{said}");
    // Said by this clean, or by a `wasmlab run` of another test that started meanwhile.
    let removal =
        format!("removed container {left}, left running by a killed wasmlab (process {dead})");
    assert!(said.contains(&removal) || !said.contains(&left), "{said}");
    assert!(!names.lines().any(|n| n == left), "{names}");
    assert!(
        names.lines().any(|n| n == kept),
        "a live lab's container removed: {said}"
    );
}

/// Ctrl-C while the lab's containerd is starting (in planning, before the daemon is registered)
/// or while the images are prepared: the run stops (exit 130) and no directory of its containerd
/// is left, nor a process started from one. SKIPPED where containerd-native is not ready.
#[test]
fn a_lab_stopped_while_its_containerd_starts_leaves_no_directory() {
    let out = crate::support::wasmlab(&["variants"]);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let Some(state) = listed
        .lines()
        .find(|l| l.starts_with("containerd-native: "))
    else {
        panic!("containerd-native not listed: {listed}");
    };
    if !state.starts_with("containerd-native: ready") {
        crate::support::skipped(state);
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (mut args, _) = crate::support::run_args(
        tmp.path(),
        r#"name = "stopped"
variants = ["containerd-native"]
workloads = ["hello"]
connections = [2]
duration_secs = 0.5
"#,
    );
    args.push("--no-setup".into());
    for delay_ms in [100, 200, 300, 500, 800, 1200] {
        let mut lab = Command::new(WASMLAB)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(lab.id() as i32, libc::SIGINT) };
        let status = lab.wait().unwrap();
        assert!(
            matches!(status.code(), Some(130) | Some(0)),
            "stopped at {delay_ms} ms: {status}"
        );
        let dirs: Vec<_> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                n == &format!("wasmlab-containerd-{}", lab.id())
                    || n.starts_with(&format!("wasmlab-containerd-{}-", lab.id()))
            })
            .collect();
        assert!(dirs.is_empty(), "stopped at {delay_ms} ms, left {dirs:?}");
        let started = crate::support::processes_naming(
            &std::env::temp_dir().join(format!("wasmlab-containerd-{}", lab.id())),
        );
        assert!(
            started.is_empty(),
            "stopped at {delay_ms} ms, left {started:?}"
        );
    }
}
