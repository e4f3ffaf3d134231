//! Run to completion without starving the others: with synchronous guest calls (no fiber, no yield
//! at epoch ticks), guests looping to their deadline must not stop hello requests on other
//! connections from being answered, for every core-module executor, on one worker thread and on
//! two, with more looping guests than workers.

use std::time::{Duration, Instant};

use wasmlab_test_support::{KeepAlive, ServerProcess, request};

const BIN: &str = env!("CARGO_BIN_EXE_wasmlab-gateway-wasm");
const DEADLINE_MS: u64 = 800;

fn hello_is_answered_while_guests_loop(executor: &str) {
    for (threads, loops) in [(1, 2), (2, 3)] {
        let what = format!("{executor}, {threads} thread(s), {loops} loops");
        let server = ServerProcess::start(
            BIN,
            &[
                "--executor",
                executor,
                "--guest-calls",
                "sync",
                "--threads",
                &threads.to_string(),
                "--deadline-ms",
                &DEADLINE_MS.to_string(),
                "--wasm",
                wasmlab_guest_artifacts::HOSTILE_CORE_PATH,
            ],
        );
        let addr = server.addr;
        let looping: Vec<_> = (0..loops)
            .map(|_| {
                std::thread::spawn(move || {
                    let r = request(addr, "GET", "/loop", b"");
                    (r.status, Instant::now())
                })
            })
            .collect();
        // Long enough for every loop to be running in its guest.
        std::thread::sleep(Duration::from_millis(150));
        let mut hello = KeepAlive::connect(addr);
        for _ in 0..20 {
            let r = hello.get("/");
            assert_eq!((r.status, r.text().as_str()), (200, "ok"), "{what}");
        }
        let hello_done = Instant::now();
        for l in looping {
            let (status, looped_until) = l.join().unwrap();
            assert_eq!(status, 504, "{what}: a loop is cut at its deadline");
            assert!(
                hello_done < looped_until,
                "{what}: hello was answered only after the loops ended"
            );
        }
    }
}

#[test]
fn pooled_serves_hello_while_guests_loop() {
    hello_is_answered_while_guests_loop("pooled");
}

#[test]
fn recycled_serves_hello_while_guests_loop() {
    hello_is_answered_while_guests_loop("recycled");
}

#[test]
fn shared_serves_hello_while_guests_loop() {
    hello_is_answered_while_guests_loop("shared");
}
