//! What the integration tests share: running `wasmlab`, suites and their results directories,
//! and the checks every results directory must pass. Each test file uses some of them.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

pub(crate) const WASMLAB: &str = env!("CARGO_BIN_EXE_wasmlab");

#[allow(unused_imports)]
pub(crate) use wasmlab_test_support::{
    ComponentLanguage, build_component, skipped, skipped_not_installable, tools_dir,
};

/// Every section report.html must hold.
pub(crate) const REPORT_SECTIONS: &[&str] = &[
    "answer",
    "summary",
    "ratios",
    "study",
    "throughput",
    "equal-load",
    "latency",
    "cold-start",
    "open-loop",
    "resources",
    "capacity",
    "environment",
    "method",
];

/// Checks report.html: one offline file with every section and inline SVG plots.
pub(crate) fn assert_report_complete(dir: &Path) {
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for id in REPORT_SECTIONS {
        assert!(
            html.contains(&format!("id=\"{id}\"")),
            "section {id} missing"
        );
    }
    assert!(html.contains("<svg"), "no inline plots");
    for external in ["src=\"http", "href=\"http", "<link", "<script src"] {
        assert!(!html.contains(external), "report.html loads {external}");
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.starts_with('#'), "{md}");
}

/// Runs `wasmlab report DIR`, expects success and a complete report; returns its output.
pub(crate) fn rebuild_report(dir: &Path) -> std::process::Output {
    let out = wasmlab(&["report", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_report_complete(dir);
    out
}

/// Every file of a results directory parses: JSON, JSON lines and CSV (same field count per row).
pub(crate) fn assert_files_parse(dir: &Path) {
    read_json(&dir.join("run.json"));
    for line in std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap()
        .lines()
    {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
    for csv in [
        "throughput.csv",
        "warm.csv",
        "open_loop.csv",
        "cold_start.csv",
    ] {
        let text = std::fs::read_to_string(dir.join(csv)).unwrap();
        let mut lines = text.lines();
        let n = lines.next().unwrap().split(',').count();
        for l in lines {
            assert_eq!(l.split(',').count(), n, "{csv}: {l}");
        }
    }
}

/// Temporary files left in a results directory (none after an orderly end; a SIGKILL between a
/// write and its rename may leave one, beside the intact previous version).
pub(crate) fn leftover_tmp_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        })
        .count()
}

/// A process a test started, killed and reaped when dropped: it goes with the test even when an
/// assertion fails first.
pub(crate) struct KillOnDrop(pub std::process::Child);

impl std::ops::Deref for KillOnDrop {
    type Target = std::process::Child;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A server the test starts that prints `listening on http://ADDR` on stdout (wasmlab's
/// upstream, a gateway); killed when dropped.
pub(crate) struct Listening {
    _child: KillOnDrop,
    /// `http://ADDR`.
    pub url: String,
}

impl Listening {
    pub(crate) fn spawn(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Self {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(program)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let url = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .map(|l| l.unwrap())
            .find_map(|l| l.strip_prefix("listening on ").map(str::to_owned))
            .expect("the server says where it listens");
        Self {
            _child: KillOnDrop(child),
            url,
        }
    }

    /// wasmlab's upstream echo server (every path answers 200 with `METHOD TARGET`).
    pub(crate) fn upstream() -> Self {
        Self::spawn(WASMLAB, &["upstream", "--port", "0"])
    }

    pub(crate) fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }
}

pub(crate) fn wasmlab(args: &[&str]) -> std::process::Output {
    Command::new(WASMLAB).args(args).output().unwrap()
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_owned()
}

/// The arguments of `wasmlab run --no-build` on the suite `toml` (written to `dir`), with results
/// under `dir/results`; returns them and that results directory.
pub(crate) fn run_args(dir: &Path, toml: &str) -> (Vec<String>, std::path::PathBuf) {
    let suite = write(dir, "suite.toml", toml);
    let results = dir.join("results");
    let args = [
        "run",
        "--suite",
        &suite,
        "--no-build",
        "--results",
        results.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    (args, results)
}

/// `wasmlab run --no-build` on the suite `toml`, results under `dir/results`, plus `extra` flags.
pub(crate) fn run_suite(
    dir: &Path,
    toml: &str,
    extra: &[&str],
) -> (std::process::Output, std::path::PathBuf) {
    let (args, results) = run_args(dir, toml);
    // As a developer's shell may have it: it must not reach the servers measured.
    let out = Command::new(WASMLAB)
        .args(&args)
        .args(extra)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    (out, results)
}

/// The one run directory under `results`.
pub(crate) fn only_run_dir(results: &Path) -> std::path::PathBuf {
    let runs: Vec<_> = std::fs::read_dir(results).unwrap().collect();
    assert_eq!(runs.len(), 1);
    runs[0].as_ref().unwrap().path()
}

/// Runs wasmlab, expects a non-zero exit and `needle` in its stderr.
pub(crate) fn assert_fails_with(args: &[&str], needle: &str) {
    let out = wasmlab(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(err.contains(needle), "{args:?}: {err}");
}

/// A results CSV, its rows' cells found by column name.
pub(crate) struct Csv {
    pub text: String,
    head: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Csv {
    pub(crate) fn read(path: &Path) -> Self {
        let text = std::fs::read_to_string(path).unwrap();
        let split = |l: &str| l.split(',').map(str::to_owned).collect::<Vec<_>>();
        let mut lines = text.lines();
        let head = split(lines.next().expect("a header line"));
        let rows = lines.map(split).collect();
        Self { text, head, rows }
    }

    /// The cell of `row` in column `name`.
    pub(crate) fn cell<'a>(&self, row: &'a [String], name: &str) -> &'a str {
        let col = self.head.iter().position(|h| h == name);
        &row[col.unwrap_or_else(|| panic!("no column {name}: {:?}", self.head))]
    }
}

pub(crate) fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A variant's outcome in a run.json (its status, reason and checks).
pub(crate) fn outcome<'a>(run: &'a serde_json::Value, variant: &str) -> &'a serde_json::Value {
    run["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == variant)
        .unwrap_or_else(|| panic!("no outcome of {variant}: {}", run["variants"]))
}

/// The names of the variants with an outcome in a run.json, in its order.
pub(crate) fn variant_names(run: &serde_json::Value) -> Vec<&str> {
    run["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect()
}

/// A copy of the committed fixture run (tests/fixtures/small-run: a real two-variant run, two
/// repetitions, with cold starts, warm and open-loop cells) in a temporary directory.
pub(crate) fn fixture_copy(tmp: &Path, name: &str) -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small-run");
    let dst = tmp.join(name);
    std::fs::create_dir(&dst).unwrap();
    for f in ["run.json", "samples.jsonl"] {
        std::fs::copy(src.join(f), dst.join(f)).unwrap();
    }
    dst
}

/// The release build of wasmlab's binaries, where the user variant files of the tests find the native
/// gateway (`{bin}` is the directory of the `wasmlab` under test).
pub(crate) const TINY: &str = r#"name = "tiny"
workloads = ["hello", "state"]
connections = [2]
duration_secs = 0.2
warmup_secs = 0.1

[cold_start]
runs = 2
"#;

/// Whether the run skipped `variant` (its tool is not here); says so with the reason if it did.
pub(crate) fn was_skipped(run: &serde_json::Value, variant: &str) -> bool {
    let o = outcome(run, variant);
    let skip = o["status"] == "skipped";
    if skip {
        skipped(&format!("{variant}: {}", o["reason"]));
    }
    skip
}

/// Runs the verification suite against `variant`: every route verified, hello and echo measured
/// for a moment; SKIPPED when the run skipped it.
pub(crate) fn verified_and_measured(variant: &str) {
    verified_and_measured_with(variant, &[]);
}

/// As [`verified_and_measured`], with more arguments for `wasmlab run` (`--no-setup`).
pub(crate) fn verified_and_measured_with(variant: &str, extra: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let suite = format!(
        r#"name = "peer"
variants = ["{variant}"]
workloads = ["hello", "echo"]
verify_only = ["compute", "state", "proxy", "not-found", "wrong-method"]
connections = [4]
# Wasmer's LLVM compiles the socket server at start: over 20 s on a busy 2-core machine.
start_timeout_secs = 120.0
duration_secs = 0.3
warmup_secs = 0.1
"#
    );
    let (out, results) = run_suite(tmp.path(), &suite, extra);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    if was_skipped(&run, variant) {
        return;
    }
    // Every process of a variant with a {prepared} directory names the run's directory.
    let left = processes_naming(tmp.path());
    assert!(left.is_empty(), "{variant}'s {left:?} outlived the run");
    let outcome = outcome(&run, variant);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(outcome["status"], "measured", "{outcome}");
    let checks = outcome["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 7, "{outcome}");
    assert!(checks.iter().all(|c| c["ok"] == true), "{outcome}");
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    for workload in ["hello", "echo"] {
        assert_served(&throughput, variant, workload, 4);
    }
}

/// throughput.csv (its text) has a row of `variant` on `workload` at `connections` with
/// responses and no errors.
pub(crate) fn assert_served(throughput: &str, variant: &str, workload: &str, connections: usize) {
    let row = throughput
        .lines()
        .find(|l| l.starts_with(&format!("{variant},{workload},{connections},")))
        .unwrap_or_else(|| panic!("no row of {variant} on {workload}: {throughput}"));
    let cols: Vec<&str> = row.split(',').collect();
    assert!(cols[3].parse::<f64>().unwrap() > 0.0, "{row}");
    assert_eq!(cols[10], "0", "errors in {row}");
}

/// A `wasmlab run --no-setup` of `suite` (naming `variant` alone) in `tmp`, left running until
/// the variant serves: the run's directory made, and a process of the variant's own (not the
/// lab's upstream) listening, or `serving_otherwise(the lab's pid)` true (a container, a shim);
/// `within`, which
/// counts builds the first test to need them makes. The child, its results directory and the
/// ports listened on then; None when the run ended first having skipped the variant.
pub(crate) fn run_until_serving(
    tmp: &Path,
    suite: &str,
    variant: &str,
    within: std::time::Duration,
    serving_otherwise: impl Fn(u32) -> bool,
) -> Option<(std::process::Child, std::path::PathBuf, Vec<u16>)> {
    let (mut args, results) = run_args(tmp, suite);
    args.push("--no-setup".into());
    let mut child = Command::new(WASMLAB)
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let run = read_json(&only_run_dir(&results).join("run.json"));
            if was_skipped(&run, variant) {
                return None;
            }
            panic!("the run ended ({status}) before {variant} served: {run}");
        }
        let listening = listening_processes_naming(tmp);
        let started = std::fs::read_dir(&results).is_ok_and(|mut d| d.next().is_some());
        let serving = started
            && (listening.iter().any(|(pid, _)| !is_wasmlab(*pid))
                || serving_otherwise(child.id()));
        if serving {
            let ports = listening.into_iter().flat_map(|(_, p)| p).collect();
            return Some((child, results, ports));
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{variant} never served"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Whether process `pid` runs wasmlab itself (the lab's upstream, or a fork not yet exec'd).
pub(crate) fn is_wasmlab(pid: u32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .is_ok_and(|exe| exe.file_name().is_some_and(|n| n == "wasmlab"))
}

/// That, within `grace`, no process names `tmp` and none of `ports` is bound: processes that no
/// longer name it (nginx's workers) may hold a port a moment longer than those that do.
pub(crate) fn assert_nothing_left(
    tmp: &Path,
    variant: &str,
    ports: &[u16],
    grace: std::time::Duration,
) {
    let gone = std::time::Instant::now() + grace;
    loop {
        let left = processes_naming(tmp);
        let bound: Vec<u16> = ports
            .iter()
            .copied()
            .filter(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_err())
            .collect();
        if left.is_empty() && bound.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < gone,
            "{variant}'s {left:?} outlived the lab, ports {bound:?} still bound: {}",
            String::from_utf8_lossy(&Command::new("ss").arg("-ltnp").output().unwrap().stdout)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The pids of live processes whose command line names `path` (a test's temporary directory,
/// which every command of a variant with a `{prepared}` directory names).
pub(crate) fn processes_naming(path: &Path) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id())
        .filter(|pid| names(*pid, path))
        .collect()
}

/// Whether `pid` is alive and its command line names `path`.
fn names(pid: u32, path: &Path) -> bool {
    let needle = path.to_str().unwrap().as_bytes();
    let alive =
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| !st.contains(") Z "));
    alive
        && std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| c.windows(needle.len()).any(|w| w == needle))
}

/// The processes naming `path` that listen, with their ports. A process is asked again after its
/// ports are read: one wasmlab has forked but not yet exec'd names the run's directory (wasmlab's
/// own command line) and, a moment later, is the lab's upstream listening on its port.
pub(crate) fn listening_processes_naming(path: &Path) -> Vec<(u32, Vec<u16>)> {
    processes_naming(path)
        .into_iter()
        .map(|pid| (pid, listening_ports(pid)))
        .filter(|(pid, ports)| !ports.is_empty() && names(*pid, path))
        .collect()
}

/// The TCP ports process `pid` listens on (its sockets matched with /proc/net/tcp and tcp6).
pub(crate) fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| {
                let target = std::fs::read_link(e.ok()?.path()).ok()?;
                let t = target.to_str()?;
                Some(t.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
            })
            .collect()
        })
        .unwrap_or_default();
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
                let port = f[1].rsplit(':').next().unwrap();
                ports.push(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports
}
