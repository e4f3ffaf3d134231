//! At the socket level, with the hostile guest in every Wasm executor: the host owns the framing
//! of every response (a guest's own `content-length`, `transfer-encoding`, hop-by-hop headers and
//! 1xx statuses never reach the wire, and the next request on the connection is answered
//! correctly), and a failure's diagnosis goes to the log, not to the client.
//!
//! The hostile components (WASI 0.2's and 0.3's) differ in two ways, both wasi:http's: Wasmtime refuses the hop-by-hop
//! headers when the component sets them (so the host never sees them to log), and it holds a
//! component to the `content-length` it declares: a body of another length is aborted, and the
//! host answers 500 where a core module's false length is dropped.

use rstest::rstest;
use wasmlab_test_support::{KeepAlive, ServerProcess};

const BIN: &str = env!("CARGO_BIN_EXE_wasmlab-gateway-wasm");

/// An executor and the hostile guest it runs: each test runs once per executor, as a case of
/// its own (`a_guest_cannot_frame_its_own_response::executor_1_POOLED`).
#[derive(Debug, Clone, Copy)]
struct Executor {
    name: &'static str,
    guest: &'static str,
}

const POOLED: Executor = Executor {
    name: "pooled",
    guest: wasmlab_guest_artifacts::HOSTILE_CORE_PATH,
};
const NAIVE: Executor = Executor {
    name: "naive",
    guest: wasmlab_guest_artifacts::HOSTILE_COMMAND_PATH,
};
const COMPONENT: Executor = Executor {
    name: "component",
    guest: wasmlab_guest_artifacts::HOSTILE_HTTP_PATH,
};
const COMPONENT_REUSED: Executor = Executor {
    name: "component-reused",
    guest: wasmlab_guest_artifacts::HOSTILE_HTTP_P3_PATH,
};

/// Whether `executor` runs wasi:http components (WASI 0.2's or 0.3's).
fn runs_components(executor: &str) -> bool {
    executor.starts_with("component")
}

/// Whether a header set by the hostile guest reaches the host to be dropped and logged there: a
/// component's hop-by-hop headers are refused by Wasmtime's wasi:http before (see above).
fn reaches_the_host(executor: &str, name: &str) -> bool {
    !runs_components(executor)
        || !wasmtime_wasi_http::DEFAULT_FORBIDDEN_HEADERS
            .iter()
            .any(|h| h.as_str() == name)
}

fn hostile_gateway(executor: Executor, extra: &[&str]) -> ServerProcess {
    let mut args = vec![
        "--executor",
        executor.name,
        "--wasm",
        executor.guest,
        "--deadline-ms",
        "300",
    ];
    args.extend_from_slice(extra);
    ServerProcess::start_logged(BIN, &args)
}

/// The framing and hop-by-hop headers a guest may try to set, with values that would break the
/// stream if they reached it.
const HOST_OWNED: [(&str, &str); 10] = [
    ("content-length", "1000"),
    ("content-length", "3"),
    ("transfer-encoding", "chunked"),
    ("connection", "close"),
    ("keep-alive", "timeout=1"),
    ("upgrade", "h2c"),
    ("te", "trailers"),
    ("trailer", "x-checksum"),
    ("proxy-connection", "close"),
    ("proxy-authenticate", "Basic"),
];

#[rstest]
fn a_guest_cannot_frame_its_own_response(
    #[values(POOLED, NAIVE, COMPONENT, COMPONENT_REUSED)] executor: Executor,
) {
    let server = hostile_gateway(executor, &[]);
    let executor = executor.name;
    for (name, value) in HOST_OWNED {
        let mut conn = KeepAlive::connect(server.addr);
        let r = conn.get(&format!("/header?name={name}&value={value}"));
        let what = format!("{executor}, guest set {name}: {value}");
        if runs_components(executor) && name == "content-length" {
            // Declared 1000 or 3 bytes, wrote 18: Wasmtime aborts the body.
            assert_eq!(r.status, 500, "{what}");
        } else {
            assert_eq!(r.status, 200, "{what}");
            assert_eq!(r.text(), "framed by the host", "{what}");
            assert_eq!(r.header("content-length"), Some("18"), "{what}");
        }
        if name != "content-length" {
            assert_eq!(r.header(name), None, "{what}: reached the client");
        }
        // The same connection serves the next request, and nothing was left behind the
        // first response.
        let next = conn.get("/");
        assert_eq!((next.status, next.text().as_str()), (200, "ok"), "{what}");
        assert!(
            conn.leftover().is_empty(),
            "{what}: bytes after the responses"
        );
    }
    // A content-length equal to the body's says nothing the host would not: dropped quietly.
    let mut conn = KeepAlive::connect(server.addr);
    let r = conn.get("/header?name=content-length&value=18");
    assert_eq!((r.status, r.header("content-length")), (200, Some("18")));
    let log = server.log();
    for (name, value) in HOST_OWNED {
        let line = if runs_components(executor) && name == "content-length" {
            "its response body did not end well".to_owned()
        } else if reaches_the_host(executor, name) {
            format!("{name}: \"{value}\"")
        } else {
            continue;
        };
        assert!(
            log.contains(&line),
            "{executor}: no log line for {name}: {value} in\n{log}"
        );
    }
    assert!(
        !log.contains("\"18\""),
        "{executor}: logged a harmless length:\n{log}"
    );
}

#[rstest]
fn an_interim_status_cannot_end_an_exchange(
    #[values(POOLED, NAIVE, COMPONENT, COMPONENT_REUSED)] executor: Executor,
) {
    let server = hostile_gateway(executor, &[]);
    let executor = executor.name;
    let mut conn = KeepAlive::connect(server.addr);
    for code in [100, 101, 103, 199] {
        let r = conn.get(&format!("/status?code={code}"));
        assert_eq!(r.status, 500, "{executor}: guest status {code}");
        let next = conn.get("/");
        assert_eq!(
            (next.status, next.text().as_str()),
            (200, "ok"),
            "{executor}"
        );
    }
    // Any final status is the guest's to choose.
    assert_eq!(conn.get("/status?code=299").status, 299);
    assert_eq!(conn.get("/status?code=599").status, 599);
    assert!(
        server
            .log()
            .contains("reply status 101 cannot end an exchange")
    );
}

#[rstest]
fn clients_get_no_guest_internals_and_the_log_gets_them_all(
    #[values(POOLED, NAIVE, COMPONENT, COMPONENT_REUSED)] executor: Executor,
) {
    let server = hostile_gateway(executor, &[]);
    let executor = executor.name;
    let mut conn = KeepAlive::connect(server.addr);
    for (target, status, public) in [
        ("/trap", 500, "the handler failed"),
        ("/stack", 500, "the handler failed"),
        ("/grow", 500, "the handler failed"),
        ("/loop", 504, "the handler did not finish in time"),
    ] {
        let r = conn.get(target);
        assert_eq!(r.status, status, "{executor} {target}");
        let body = r.text();
        // "the handler failed (request 3.1)\n": the status's line and the request id only.
        let id = body
            .strip_prefix(public)
            .and_then(|rest| rest.strip_prefix(" (request "))
            .and_then(|rest| rest.strip_suffix(")\n"))
            .unwrap_or_else(|| panic!("{executor} {target}: client body {body:?}"));
        let log_line = server
            .log()
            .lines()
            .find(|l| l.contains(&format!("request {id}: GET {target}: {status}")))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("{executor}: no log line for {id}:\n{}", server.log()));
        if status == 500 {
            assert!(
                log_line.contains("guest failed: "),
                "{executor} {target}: {log_line}"
            );
        }
    }
    assert!(server.log().contains("wasm trap"), "{}", server.log());
    assert_eq!(conn.get("/").status, 200);
}

#[test]
fn error_details_is_a_choice_of_the_operator() {
    let server = hostile_gateway(POOLED, &["--error-details"]);
    let r = KeepAlive::connect(server.addr).get("/trap");
    assert_eq!(r.status, 500);
    assert!(
        r.text().starts_with("the handler failed (request ") && r.text().contains("wasm trap"),
        "{}",
        r.text()
    );
}
