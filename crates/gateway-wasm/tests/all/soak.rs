//! Soak: the Wasm gateway, once per executor, under healthy and hostile traffic mixed for
//! `WASMLAB_SOAK_SECS` seconds (2 in the test command; `scripts/soak.sh` runs minutes). Healthy
//! keep-alive clients ask for `/` and check each answer's status and body; beside them a hostile
//! client makes the guest trap, loop to its deadline, grow past its memory limit and overflow its
//! stack, and a misbehaving one sends garbage, half a request head, or nothing before hanging up.
//! The server's RSS, open files and threads and the healthy requests' p99 are sampled every
//! interval and must stay flat once warm (every fault already seen once), and every open file
//! must be back once the clients have gone.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmlab_test_support::{KeepAlive, ServerProcess};

const BIN: &str = env!("CARGO_BIN_EXE_wasmlab-gateway-wasm");
const HEALTHY_CLIENTS: usize = 3;
const DEADLINE_MS: &str = "100";
/// The hostile client's round: each fault and the status the gateway answers it with.
const FAULTS: [(&str, u16); 5] = [
    ("/trap", 500),
    ("/grow", 500),
    ("/stack", 500),
    ("/loop", 504),
    ("/secret/write?s=soak", 200),
];

fn soak_secs() -> f64 {
    std::env::var("WASMLAB_SOAK_SECS")
        .ok()
        .map(|s| {
            s.parse()
                .unwrap_or_else(|_| panic!("WASMLAB_SOAK_SECS={s:?} is not seconds"))
        })
        .unwrap_or(2.0)
}

/// What /proc says of the server at one instant.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at: f64,
    /// The most and the least RSS read over the interval (every 20 ms): a memory bomb in
    /// progress raises the first; the second is the trough between bombs, which a leak raises.
    rss_kib: u64,
    rss_low_kib: u64,
    open_files: usize,
    threads: u64,
    healthy: usize,
    p99_us: u64,
}

fn proc_status(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

fn p99(latencies: &mut [u64]) -> u64 {
    if latencies.is_empty() {
        return 0;
    }
    latencies.sort_unstable();
    latencies[(latencies.len() * 99).div_ceil(100) - 1]
}

/// The misbehaving client's round: garbage (refused), half a head, a connection that says
/// nothing; each then closed by the client.
fn misbehave(addr: SocketAddr, round: u64) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    match round % 3 {
        0 => {
            // Refused with a 4xx, or the connection closed: never a guest's answer.
            s.write_all(b"NOT HTTP AT ALL\r\n\r\n").unwrap();
            let mut head = [0u8; 12];
            let n = s.read(&mut head).unwrap_or(0);
            assert!(
                n == 0 || head[..n].starts_with(b"HTTP/1.1 4"),
                "garbage answered {:?}",
                String::from_utf8_lossy(&head[..n])
            );
        }
        1 => s
            .write_all(b"GET / HTTP/1.1\r\nHost: soak\r\nX-Half: ")
            .unwrap(),
        _ => {}
    }
}

fn soak(executor: &str, guest: &str) {
    let secs = soak_secs();
    // Its log (a line per fault) kept apart from the test's output.
    let server = ServerProcess::start_logged(
        BIN,
        &[
            "--executor",
            executor,
            "--wasm",
            guest,
            "--deadline-ms",
            DEADLINE_MS,
            "--max-memory-mib",
            "16",
        ],
    );
    let (addr, pid) = (server.addr, server.pid());
    // Every kind of request once, one at a time, before the idle count: what the server opens
    // for good on first use (an engine's memory images) is not a leak.
    assert_eq!(
        wasmlab_test_support::request(addr, "GET", "/", b"").status,
        200
    );
    for (path, status) in FAULTS {
        assert_eq!(
            wasmlab_test_support::request(addr, "GET", path, b"").status,
            status,
            "{path}"
        );
    }
    std::thread::sleep(Duration::from_millis(100));
    let idle_files = open_files(pid);
    let stop = Arc::new(AtomicBool::new(false));
    let latencies = Arc::new(Mutex::new(Vec::<u64>::new()));
    let hostile_done = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for _ in 0..HEALTHY_CLIENTS {
        let (stop, latencies) = (stop.clone(), latencies.clone());
        clients.push(std::thread::spawn(move || {
            let mut conn = KeepAlive::connect(addr);
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let r = conn.get("/");
                let us = t.elapsed().as_micros() as u64;
                assert_eq!((r.status, r.text().as_str()), (200, "ok"));
                latencies.lock().unwrap().push(us);
            }
        }));
    }
    {
        let (stop, done) = (stop.clone(), hostile_done.clone());
        clients.push(std::thread::spawn(move || {
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let (path, status) = FAULTS[round as usize % FAULTS.len()];
                let r = wasmlab_test_support::request(addr, "GET", path, b"");
                assert_eq!(r.status, status, "{path}: {}", r.text());
                misbehave(addr, round);
                round += 1;
                done.store(round, Ordering::Relaxed);
            }
        }));
    }
    let interval = Duration::from_secs_f64((secs / 8.0).max(0.25));
    let start = Instant::now();
    let mut samples = Vec::new();
    while start.elapsed().as_secs_f64() < secs {
        let (mut rss_kib, mut rss_low_kib) = (0, u64::MAX);
        let began = Instant::now();
        while began.elapsed() < interval {
            std::thread::sleep(Duration::from_millis(20));
            let rss = proc_status(pid, "VmRSS:");
            (rss_kib, rss_low_kib) = (rss_kib.max(rss), rss_low_kib.min(rss));
        }
        let mut taken = std::mem::take(&mut *latencies.lock().unwrap());
        samples.push(Sample {
            at: start.elapsed().as_secs_f64(),
            rss_kib,
            rss_low_kib,
            open_files: open_files(pid),
            threads: proc_status(pid, "Threads:"),
            healthy: taken.len(),
            p99_us: p99(&mut taken),
        });
        if clients.iter().any(|c| c.is_finished()) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        if let Err(panic) = c.join() {
            std::panic::resume_unwind(panic);
        }
    }
    // The server closes what the clients left open (a half head waits for its header timeout).
    let settle = Instant::now();
    while open_files(pid) > idle_files && settle.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let files_after = open_files(pid);
    report(
        executor,
        &samples,
        hostile_done.load(Ordering::Relaxed),
        idle_files,
        files_after,
    );
    check_flat(executor, &samples, hostile_done.load(Ordering::Relaxed));
    assert!(
        files_after <= idle_files,
        "{executor}: {files_after} open files once the clients had gone, {idle_files} before them"
    );
}

/// The samples, where `cargo test` shows them for a passing test too (the stderr handle).
fn report(executor: &str, samples: &[Sample], rounds: u64, idle_files: usize, files_after: usize) {
    let mut out = format!(
        "soak {executor}: {} hostile rounds; open files {idle_files} idle, {files_after} after\n  \
         t(s)   RSS(MiB) low–high files threads healthy  p99(ms)\n",
        rounds
    );
    for s in samples {
        out += &format!(
            "  {:5.1} {:7.1}–{:<7.1} {:5} {:7} {:7} {:8.3}\n",
            s.at,
            s.rss_low_kib as f64 / 1024.0,
            s.rss_kib as f64 / 1024.0,
            s.open_files,
            s.threads,
            s.healthy,
            s.p99_us as f64 / 1000.0
        );
    }
    let _ = std::io::stderr().write_all(out.as_bytes());
}

/// Flat once warm: the first quarter of the samples (at least one) is the warm-up, by whose end
/// every fault has been seen; after it RSS grows by at most 16 MiB plus a tenth (a memory bomb
/// in progress holds up to its 16 MiB) and its troughs (the least RSS read in an interval) from
/// the third quarter to the last by at most 4 MiB, threads by two at most, and the last third's
/// p99 stays within 4× the middle's plus 10 ms (a scheduling hiccup on a 2-core machine is not a
/// trend).
fn check_flat(executor: &str, samples: &[Sample], rounds: u64) {
    assert!(
        samples.len() >= 4,
        "{executor}: only {} samples",
        samples.len()
    );
    assert!(
        rounds >= FAULTS.len() as u64,
        "{executor}: the hostile client finished only {rounds} requests"
    );
    let warm = samples.len().div_ceil(4);
    let (warmup, rest) = samples.split_at(warm);
    assert!(
        rest.iter().all(|s| s.healthy > 0),
        "{executor}: an interval answered no healthy request: {samples:?}"
    );
    let rss_warm = warmup.iter().map(|s| s.rss_kib).max().unwrap();
    let rss_max = rest.iter().map(|s| s.rss_kib).max().unwrap();
    assert!(
        rss_max <= rss_warm + 16 * 1024 + rss_warm / 10,
        "{executor}: RSS grew from {rss_warm} KiB warm to {rss_max} KiB"
    );
    // The troughs, between memory bombs, tell a leak: the last quarter's lowest RSS within
    // 4 MiB and a twentieth of the third quarter's (a pool keeping instances fills its slots
    // as the clients first overlap: that is the first half's growth, not a leak).
    let trough = |part: &[Sample]| part.iter().map(|s| s.rss_low_kib).min().unwrap();
    let third = &samples[samples.len() - 2 * warm..samples.len() - warm];
    let (early, late) = (trough(third), trough(&samples[samples.len() - warm..]));
    assert!(
        late <= early + 4 * 1024 + early / 20,
        "{executor}: RSS between faults rose from {early} KiB to {late} KiB"
    );
    // A runtime starts a helper thread when first needed and ends it when idle: two more than the
    // warm-up's are allowed, a thread per request or per fault is not.
    let threads_warm = warmup.iter().map(|s| s.threads).max().unwrap();
    let threads_max = rest.iter().map(|s| s.threads).max().unwrap();
    assert!(
        threads_max <= threads_warm + 2,
        "{executor}: threads grew from {threads_warm} warm to {threads_max}"
    );
    let mut middle: Vec<u64> = rest[..rest.len() / 2].iter().map(|s| s.p99_us).collect();
    middle.sort_unstable();
    let typical = middle.get(middle.len() / 2).copied().unwrap_or(0);
    let last = &rest[rest.len() - rest.len().div_ceil(3)..];
    for s in last {
        assert!(
            s.p99_us <= typical * 4 + 10_000,
            "{executor}: p99 rose to {} µs at {:.1} s from {typical} µs",
            s.p99_us,
            s.at
        );
    }
}

#[test]
fn pooled_stays_flat_under_mixed_traffic() {
    soak("pooled", wasmlab_guest_artifacts::HOSTILE_CORE_PATH);
}

#[test]
fn recycled_stays_flat_under_mixed_traffic() {
    soak("recycled", wasmlab_guest_artifacts::HOSTILE_CORE_PATH);
}

#[test]
fn shared_stays_flat_under_mixed_traffic() {
    soak("shared", wasmlab_guest_artifacts::HOSTILE_CORE_PATH);
}

#[test]
fn component_stays_flat_under_mixed_traffic() {
    soak("component", wasmlab_guest_artifacts::HOSTILE_HTTP_PATH);
}

#[test]
fn component_recycled_stays_flat_under_mixed_traffic() {
    soak(
        "component-recycled",
        wasmlab_guest_artifacts::HOSTILE_HTTP_PATH,
    );
}
