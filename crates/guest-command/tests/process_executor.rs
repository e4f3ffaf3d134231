//! The process executor (a command per request, the gateway study's CLI method) with the pipe
//! guest built natively as the command: the same handlers answer every route, the host's
//! capabilities reached over the pipes; and with misbehaving commands: a deadline kills the
//! process (504), a non-zero exit or malformed output is a failure (500), a full queue is 503,
//! and no process is ever left a zombie.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use wasmlab_gateway::process::{ProcessExecutor, ProcessLimits};
use wasmlab_gateway::{Capabilities, ExecRequest, Executor, Failure, NativeExecutor, Reply};

const PIPE_GUEST: &str = env!("CARGO_BIN_EXE_wasmlab-guest-pipe");

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn request(method: &str, target: &str, body: &[u8]) -> ExecRequest {
    ExecRequest::new(
        method.parse().unwrap(),
        target,
        Bytes::copy_from_slice(body),
    )
}

fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

fn executor(command: Vec<String>, limits: ProcessLimits) -> ProcessExecutor {
    ProcessExecutor::new(&command, Arc::new(Capabilities::new(None).unwrap()), limits).unwrap()
}

/// Children of this process that have exited and not been waited for.
fn zombies() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let Some(after) = stat.rsplit_once(") ").map(|(_, a)| a) else {
            continue;
        };
        let mut f = after.split_whitespace();
        if f.next() == Some("Z") && f.next() == Some(me.as_str()) {
            out.push(stat);
        }
    }
    out
}

#[test]
fn the_pipe_guest_answers_like_the_native_handlers() {
    runtime().block_on(async {
        let up = wasmlab_upstream::spawn("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let caps = || Arc::new(Capabilities::new(Some(&format!("http://{up}"))).unwrap());
        let process =
            ProcessExecutor::new(&[PIPE_GUEST.to_owned()], caps(), ProcessLimits::default())
                .unwrap();
        let native = NativeExecutor::new(caps());
        let body: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        for (method, target, body) in [
            ("GET", "/", &b""[..]),
            ("GET", "/compute?iters=3", b""),
            ("GET", "/state", b""),
            ("GET", "/proxy?x=1", b""),
            ("POST", "/echo", &body),
            ("GET", "/nope", b""),
            ("DELETE", "/", b""),
        ] {
            let p: Reply = process
                .execute(request(method, target, body))
                .await
                .unwrap();
            let n: Reply = native.execute(request(method, target, body)).await.unwrap();
            if target == "/state" {
                // Each executor's host has its own counter: both count their first request.
                assert_eq!((p.status, &p.body[..]), (200, &b"1"[..]));
            } else {
                assert_eq!(p, n, "{method} {target}");
            }
        }
    });
    assert!(zombies().is_empty(), "{:?}", zombies());
}

#[test]
fn a_process_past_its_deadline_is_killed_and_answered_504() {
    let limits = ProcessLimits {
        deadline: Duration::from_millis(300),
        ..ProcessLimits::default()
    };
    let ex = executor(sh("sleep 30"), limits);
    let t = Instant::now();
    let r = runtime().block_on(ex.execute(request("GET", "/", b"")));
    let took = t.elapsed();
    let f: Failure = r.unwrap_err();
    assert_eq!(f.status, 504, "{}", f.detail);
    assert!(took < Duration::from_secs(3), "{took:?}");
    // Killed, not merely abandoned: no sleep of ours is left, and no zombie.
    std::thread::sleep(Duration::from_millis(100));
    assert!(zombies().is_empty(), "{:?}", zombies());
}

#[test]
fn exits_and_malformed_output_are_failures_with_the_reason() {
    let rt = runtime();
    for (script, want) in [
        ("echo oops >&2; exit 3", "exited with exit status: 3: oops"),
        ("printf 'not a response'", "malformed output"),
        ("printf '200 OK\\n\\nbody'", "malformed response"),
        ("true", "no response"),
        ("printf '@proxy_get 5\\n/x'", "ended inside a host call"),
        (
            "read req; printf '@no_such_call 0\\n'; read r; head -c \"${r#-}\" >&2; exit 1",
            "no host call named",
        ),
    ] {
        let ex = executor(sh(script), ProcessLimits::default());
        let f = rt
            .block_on(ex.execute(request("GET", "/", b"")))
            .unwrap_err();
        assert_eq!(f.status, 500, "{script}: {}", f.detail);
        assert!(f.detail.contains(want), "{script}: {}", f.detail);
    }
    // A command that does not exist is refused when the gateway starts.
    for missing in ["/no/such/engine", "no-such-engine-on-path"] {
        let e = ProcessExecutor::new(
            &[missing.into()],
            Arc::new(Capabilities::new(None).unwrap()),
            ProcessLimits::default(),
        )
        .err()
        .unwrap_or_else(|| panic!("{missing} accepted"));
        assert!(e.to_string().contains(missing), "{e}");
    }
    assert!(zombies().is_empty(), "{:?}", zombies());
}

#[test]
fn a_full_queue_answers_503() {
    let limits = ProcessLimits {
        max_processes: 1,
        max_queue: 1,
        queue_timeout: Duration::from_millis(100),
        deadline: Duration::from_millis(800),
        ..ProcessLimits::default()
    };
    let ex = Arc::new(executor(sh("sleep 5"), limits));
    let rt = runtime();
    rt.block_on(async {
        let busy = tokio::spawn({
            let ex = ex.clone();
            async move { ex.execute(request("GET", "/", b"")).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (waiter, overflow) = tokio::join!(ex.execute(request("GET", "/", b"")), async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            ex.execute(request("GET", "/", b"")).await
        });
        assert_eq!(waiter.unwrap().status, 503, "the waiter timed out");
        assert_eq!(overflow.unwrap().status, 503, "the queue was full");
        assert_eq!(busy.await.unwrap().unwrap_err().status, 504);
    });
    assert!(zombies().is_empty(), "{:?}", zombies());
}
