//! After a guest's endless loop is stopped at its deadline, nothing keeps burning CPU: the
//! gateway's process, pooled and naive, is idle once it has answered 504. Its own process is
//! measured, so the tests running beside this one are not counted.

use std::time::Duration;

use wasmlab_test_support::ServerProcess;

const BIN: &str = env!("CARGO_BIN_EXE_wasmlab-gateway-wasm");

/// The CPU time `pid` has used, user and system (/proc/PID/stat, in clock ticks).
fn process_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the parenthesised command name: state is the first, utime the 12th, stime
    // the 13th (proc(5)'s 14th and 15th).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let field = |n: usize| rest.split(' ').nth(n).unwrap().parse::<u64>().unwrap();
    // SAFETY: sysconf reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis((field(11) + field(12)) * 1000 / hz)
}

fn a_stopped_loop_burns_no_cpu(executor: &str, guest: &str) {
    let server = ServerProcess::start_logged(
        BIN,
        &[
            "--executor",
            executor,
            "--wasm",
            guest,
            "--deadline-ms",
            "200",
        ],
    );
    let answer = wasmlab_test_support::request(server.addr, "GET", "/loop", b"");
    assert_eq!(answer.status, 504, "{executor}: {}", answer.text());
    let before = process_cpu(server.pid());
    std::thread::sleep(Duration::from_millis(500));
    let burnt = process_cpu(server.pid()) - before;
    assert!(
        burnt < Duration::from_millis(50),
        "{executor}: {burnt:?} of CPU in 500 ms after the loop stopped"
    );
}

#[test]
fn a_stopped_loop_burns_no_cpu_in_the_pooled_executor() {
    a_stopped_loop_burns_no_cpu("pooled", wasmlab_guest_artifacts::HOSTILE_CORE_PATH);
}

#[test]
fn a_stopped_loop_burns_no_cpu_in_the_naive_executor() {
    a_stopped_loop_burns_no_cpu("naive", wasmlab_guest_artifacts::HOSTILE_COMMAND_PATH);
}
