//! `wasmlab run --resume`: a run killed at any point measures on from what it recorded, to the
//! same cells an uninterrupted run plans, each once; killed beside a podman container or a host of
//! many processes, nothing is left once it is resumed; a resume that would not measure the same
//! run (another suite, a complete run, no run) is refused with the results untouched.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{
    WASMLAB, assert_nothing_left, only_run_dir, outcome, processes_naming, read_json, run_args,
    run_until_serving, wasmlab,
};

/// Two variants, three repetitions of every kind of cell, and cold starts: 28 samples.
const SUITE: &str = r#"name = "resumed"
variants = ["native", "wasmtime-pooled"]
workloads = ["hello"]
connections = [2]
duration_secs = 0.15
warmup_secs = 0.05
repetitions = 3
seed = 11

[cold_start]
runs = 2
variants = ["native", "wasmtime-pooled"]

[warm]
duration_secs = 0.1

[open_loop]
fractions = [0.5]
duration_secs = 0.15
connections = 2
workloads = ["hello"]

[equal_load]
duration_secs = 0.15
connections = 2
rates = { hello = [200] }
"#;

const PLANNED: usize = 3 * 2 * 4 + 2 * 2;

/// The samples' lines of `dir`, whole lines only.
fn lines(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// What names a cell: its kind, variant, repetition, workload, level, rate and fraction.
fn key(s: &serde_json::Value) -> String {
    [
        "kind",
        "variant",
        "repetition",
        "workload",
        "connections",
        "rate",
        "load_fraction",
    ]
    .map(|k| s[k].to_string())
    .join(" ")
}

/// Runs `args` until `samples` lines are recorded in the one run directory under `results`
/// (None: at once) and its run.json has recorded `resumed` resumptions, then kills it with
/// SIGKILL; true if it ended by itself first.
fn kill_at(args: &[String], results: &Path, samples: Option<usize>, resumed: usize) -> bool {
    let mut child = Command::new(WASMLAB)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        let reached = match samples {
            None => true,
            Some(n) => std::fs::read_dir(results)
                .ok()
                .and_then(|mut d| d.next())
                .map(|d| d.unwrap().path())
                .is_some_and(|d| {
                    let run: serde_json::Value = serde_json::from_slice(
                        &std::fs::read(d.join("run.json")).unwrap_or_default(),
                    )
                    .unwrap_or_default();
                    let recorded = run["resumed"].as_array().map_or(0, Vec::len);
                    run.is_object() && lines(&d).len() >= n && recorded >= resumed
                }),
        };
        if reached || Instant::now() > deadline {
            let started = descendants(child.id());
            // Once it measured, at least its watchdog (and the upstream, a server) run.
            assert!(
                samples.is_none_or(|n| n == 0) || !started.is_empty(),
                "nothing seen running under the lab"
            );
            child.kill().unwrap();
            child.wait().unwrap();
            // Its servers, upstream and watchdog: gone soon after it, with nothing bound.
            let gone = Instant::now() + Duration::from_secs(10);
            while let Some(pid) = started.iter().find(|p| running(**p)) {
                assert!(
                    Instant::now() < gone,
                    "process {pid} ({}) outlived the killed lab",
                    std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                        .unwrap_or_default()
                        .replace('\0', " ")
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every process descended from `root`, as /proc has them now.
fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// Whether `pid` runs (a zombie does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s.rsplit_once(')')?.1.split_whitespace().next()? != "Z"))
        .unwrap_or(false)
}

fn resume_args(dir: &Path) -> Vec<String> {
    vec!["run".into(), "--resume".into(), dir.display().to_string()]
}

/// Killed with SIGKILL before its directory exists, before its first sample, between cells,
/// in cold starts and after its last sample (while it writes its report), and resumed each
/// time: nothing it started outlives it, and the run ends complete with every planned cell
/// once, its orders and rates as first chosen, every resumption recorded, and its report.
#[test]
fn a_run_killed_anywhere_is_resumed_to_its_whole_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let (args, results) = run_args(tmp.path(), SUITE);
    // Killed at once: no directory yet, or one with nothing measured.
    kill_at(&args, &results, None, 0);
    let _ = std::fs::remove_dir_all(&results);
    assert!(
        !kill_at(&args, &results, Some(0), 0),
        "ended before its first sample"
    );
    let dir: PathBuf = only_run_dir(&results);
    let first = read_json(&dir.join("run.json"));
    let mut resumes = 0;
    for at in [1, 4, 8, 12, 16, 20, 24, 27, PLANNED] {
        resumes += 1;
        if kill_at(&resume_args(&dir), &results, Some(at), resumes) {
            break;
        }
        let got = lines(&dir).len();
        assert!(got >= at.min(PLANNED), "{got} samples, killed at {at}");
    }
    // The last one to its end.
    let run = read_json(&dir.join("run.json"));
    if run["state"] != "complete" {
        resumes += 1;
        let out = wasmlab(
            &resume_args(&dir)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let run = read_json(&dir.join("run.json"));
    assert_eq!(run["state"], "complete", "{run}");
    assert_eq!(run["resumed"].as_array().unwrap().len(), resumes, "{run}");
    assert_eq!(run["seed"], first["seed"]);
    assert_eq!(run["orders"].as_array().unwrap().len(), 3, "{run}");
    assert_eq!(
        run["equal_load"][0]["rates"],
        serde_json::json!([200.0]),
        "{run}"
    );
    let samples = lines(&dir);
    let keys: BTreeSet<String> = samples.iter().map(key).collect();
    assert_eq!(keys.len(), samples.len(), "a cell measured twice");
    assert_eq!(samples.len(), PLANNED, "{keys:#?}");
    for kind in ["throughput", "equal_load", "warm", "open_loop"] {
        let n = samples.iter().filter(|s| s["kind"] == kind).count();
        assert_eq!(n, 6, "{kind}");
    }
    for file in [
        "report.html",
        "summary.md",
        "throughput.csv",
        "cold_start.csv",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("This run was interrupted and resumed (at "),
        "{summary}"
    );
}

/// Refused, the results untouched: no such directory, a suite file changed since, a complete
/// run, flags that would plan another run. A record cut short is discarded, and said.
#[test]
fn a_resume_of_another_run_is_refused_and_a_record_cut_short_discarded() {
    let tmp = tempfile::tempdir().unwrap();
    let (args, results) = run_args(tmp.path(), SUITE);
    let err = |out: std::process::Output| {
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let missing = tmp.path().join("results/none");
    let e = err(wasmlab(&["run", "--resume", missing.to_str().unwrap()]));
    assert!(e.contains("is not a directory"), "{e}");
    assert!(!kill_at(&args, &results, Some(3), 0));
    let dir = only_run_dir(&results);
    let d = dir.to_str().unwrap();
    let e = err(wasmlab(&["run", "--resume", d, "--repetitions", "5"]));
    assert!(e.contains("cannot be used with"), "{e}");
    let e = err(wasmlab(&["run", "--force"]));
    assert!(e.contains("--resume"), "{e}");
    // The suite file changed since: another run.
    let suite = tmp.path().join("suite.toml");
    let text = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(
        &suite,
        text.replace(
            "duration_secs = 0.15\nwarmup",
            "duration_secs = 0.2\nwarmup",
        ),
    )
    .unwrap();
    let before = std::fs::read(dir.join("samples.jsonl")).unwrap();
    let e = err(wasmlab(&["run", "--resume", d]));
    assert!(
        e.contains("now plans another suite (duration_secs differ)"),
        "{e}"
    );
    assert_eq!(std::fs::read(dir.join("samples.jsonl")).unwrap(), before);
    std::fs::write(&suite, text).unwrap();
    // A record cut short, as a kill mid-write leaves it.
    let mut cut = before.clone();
    cut.extend_from_slice(b"{\"schema\":");
    std::fs::write(dir.join("samples.jsonl"), &cut).unwrap();
    let out = wasmlab(&["run", "--resume", d]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("the last 10 bytes of samples.jsonl, a record cut short, discarded"),
        "{said}"
    );
    assert!(said.contains("resuming"), "{said}");
    assert_eq!(lines(&dir).len(), PLANNED);
    let run = read_json(&dir.join("run.json"));
    assert!(run["resumed"][0]["discarded"].is_string(), "{run}");
    let e = err(wasmlab(&["run", "--resume", d]));
    assert!(e.contains("is a complete run: nothing to resume"), "{e}");
}

/// A run started with relative paths (its suite file, its results) resumes from anywhere: the
/// paths are taken from where it ran.
#[test]
fn a_run_with_relative_paths_resumes_from_another_directory() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("suite.toml"), SUITE).unwrap();
    let mut child = Command::new(WASMLAB)
        .args([
            "run",
            "--suite",
            "suite.toml",
            "--no-build",
            "--results",
            "results",
        ])
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let results = tmp.path().join("results");
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::read_dir(&results)
        .ok()
        .and_then(|mut d| d.next())
        .is_none_or(|d| lines(&d.unwrap().path()).len() < 3)
    {
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before it was killed"
        );
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let dir = only_run_dir(&results);
    let out = Command::new(WASMLAB)
        .args(["run", "--resume"])
        .arg(&dir)
        .current_dir("/")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(lines(&dir).len(), PLANNED);
}

/// Killed with SIGKILL while `variant` serves, then resumed: whatever the killed lab started is
/// gone within seconds, its processes (by the parent-death signal) and the ports they held; a
/// podman container, and the lab's containerd with its shims and directory, are gone once the
/// run is resumed (the lab's watchdog removes them, or the resume does, saying so: any lab's
/// start cleans what a killed one left, so another test's may have); the resumed run ends
/// complete with the variant measured and leaves no process, container or image of its own.
/// SKIPPED where the variant is not set up.
fn killed_while_serving_then_resumed_leaves_nothing(variant: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let suite = format!(
        r#"name = "killed"
variants = ["{variant}"]
workloads = ["hello"]
connections = [2]
duration_secs = 1.5
warmup_secs = 0.1
repetitions = 2
start_timeout_secs = 120.0
"#
    );
    // The lab's pid names its containers and its containerd's directory.
    let containers = |lab: u32| lab_containers(&format!("wasmlab-{lab}-"));
    let containerd = |lab: u32| std::env::temp_dir().join(format!("wasmlab-containerd-{lab}"));
    let shim_runs = |lab: u32| {
        processes_naming(&containerd(lab)).into_iter().any(|pid| {
            std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| {
                e.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("containerd-shim"))
            })
        })
    };
    // Serving: the variant's own processes listen (the upstream, the lab's, listens first), or
    // its container runs (podman's, or a shim of the lab's containerd: these run in planning
    // too, so the run's directory, which a resume needs, is waited for as well). The first test
    // to need it builds the static gateway (91 s alone on 2 cores).
    let Some((mut child, results, ports)) = run_until_serving(
        tmp.path(),
        &suite,
        variant,
        Duration::from_secs(600),
        |lab| !containers(lab).is_empty() || shim_runs(lab),
    ) else {
        return;
    };
    let killed = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_nothing_left(tmp.path(), variant, &ports, Duration::from_secs(15));
    let containerd = containerd(killed);
    let containers = || containers(killed);
    let dir = only_run_dir(&results);
    let out = wasmlab(&["run", "--resume", dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(containers().is_empty(), "{:?} still there", containers());
    assert!(!containerd.exists(), "{} still there", containerd.display());
    let shims = processes_naming(&containerd);
    assert!(shims.is_empty(), "{shims:?} of the killed lab's containerd");
    for line in stderr.lines().filter(|l| l.contains("removed container")) {
        assert!(
            line.contains(&format!("wasmlab-{killed}-")),
            "removed another's: {line}"
        );
    }
    let run = read_json(&dir.join("run.json"));
    assert_eq!(run["state"], "complete", "{run}");
    assert_eq!(outcome(&run, variant)["status"], "measured", "{run}");
    let left = processes_naming(tmp.path());
    assert!(left.is_empty(), "{left:?} outlived the resumed run");
    // Container names are lower case; image tags keep the run id as it is.
    let run_id = run["run_id"].as_str().unwrap();
    let theirs: Vec<String> = lab_containers("wasmlab-")
        .into_iter()
        // Another test's run may have the same id (started in the same second): not its variant.
        .filter(|n| n.contains(&run_id.to_lowercase()) && n.contains(&format!("-{variant}-")))
        .collect();
    assert!(theirs.is_empty(), "the resumed run left {theirs:?}");
    let images = Command::new("podman")
        .args(["images", "--format", "{{.Repository}}:{{.Tag}}"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    // Only the podman variant's image is podman's.
    assert!(
        variant != "native-container" || !images.lines().any(|i| i.ends_with(run_id)),
        "the run's image is still there: {images}"
    );
}

/// The names of podman's containers (running or not) that start with `prefix`; none without
/// podman.
fn lab_containers(prefix: &str) -> Vec<String> {
    Command::new("podman")
        .args(["ps", "--all", "--format", "{{.Names}}"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|n| n.starts_with(prefix))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn killed_beside_podman_resumed_leaves_nothing() {
    killed_while_serving_then_resumed_leaves_nothing("native-container");
}

#[test]
fn killed_beside_containerd_resumed_leaves_nothing() {
    killed_while_serving_then_resumed_leaves_nothing("containerd-native");
}

#[test]
fn killed_beside_two_wasmcloud_hosts_resumed_leaves_nothing() {
    killed_while_serving_then_resumed_leaves_nothing("wasmcloud-host-2");
}

#[test]
fn killed_beside_workerd_resumed_leaves_nothing() {
    killed_while_serving_then_resumed_leaves_nothing("workerd-wasm");
}
