//! Workloads as data, end to end: a user's suite with its own routes and checks, measured against
//! a guest that serves only those routes; each kind of check failing a variant with what came
//! back; malformed definitions refused before anything starts; `show-suite` as a starting point.

use std::path::Path;

use crate::support;

use support::*;

/// A core-module guest (docs/guest-abi.md) that serves only a user's routes: `GET /greet` (with
/// any query) answers "hi there" as text/plain, any POST echoes its body, everything else is 404
/// "nope". Nothing of wasmlab's own routes.
const GREETER: &str = r#"
(module
  (import "wasmlab" "request_sizes" (func $sizes (param i32)))
  (import "wasmlab" "request_read" (func $read (param i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 2048) "/greet")
  (data (i32.const 2064) "hi there")
  (data (i32.const 2080) "nope")
  (data (i32.const 2096) "content-type: text/plain\n")
  (func (export "wasmlab_abi_version") (result i32) (i32.const 1))
  (func $respond (param $status i32) (param $hp i32) (param $hl i32) (param $bp i32) (param $bl i32)
    (result i32)
    (i32.store (i32.const 3000) (local.get $status))
    (i32.store (i32.const 3004) (local.get $hp))
    (i32.store (i32.const 3008) (local.get $hl))
    (i32.store (i32.const 3012) (local.get $bp))
    (i32.store (i32.const 3016) (local.get $bl))
    (i32.const 3000))
  ;; The target (at 128, `len` bytes) is /greet, or /greet?...
  (func $is_greet (param $len i32) (result i32)
    (local $i i32)
    (if (i32.lt_u (local.get $len) (i32.const 6)) (then (return (i32.const 0))))
    (if (i32.gt_u (local.get $len) (i32.const 6))
      (then (if (i32.ne (i32.load8_u (i32.const 134)) (i32.const 63))
        (then (return (i32.const 0))))))
    (block $done
      (loop $each
        (br_if $done (i32.eq (local.get $i) (i32.const 6)))
        (if (i32.ne (i32.load8_u (i32.add (i32.const 128) (local.get $i)))
                    (i32.load8_u (i32.add (i32.const 2048) (local.get $i))))
          (then (return (i32.const 0))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $each)))
    (i32.const 1))
  (func (export "wasmlab_handle") (result i32)
    (call $sizes (i32.const 0))
    (if (i32.gt_u (i32.load (i32.const 4)) (i32.const 1900))
      (then (return (call $respond (i32.const 414) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0)))))
    (if (i32.gt_u (i32.load (i32.const 8)) (i32.const 61440))
      (then (return (call $respond (i32.const 413) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0)))))
    ;; The method at 64, the target at 128, the body at 4096.
    (call $read (i32.const 64) (i32.const 128) (i32.const 4096))
    (if (i32.eq (i32.load8_u (i32.const 64)) (i32.const 80))
      (then (return (call $respond (i32.const 200) (i32.const 0) (i32.const 0)
        (i32.const 4096) (i32.load (i32.const 8))))))
    (if (call $is_greet (i32.load (i32.const 4)))
      (then (return (call $respond (i32.const 200) (i32.const 2096) (i32.const 25)
        (i32.const 2064) (i32.const 8)))))
    (call $respond (i32.const 404) (i32.const 0) (i32.const 0) (i32.const 2080) (i32.const 4))))
"#;

/// The greeter guest as a .wasm file in `dir`.
fn greeter(dir: &Path) -> String {
    let path = dir.join("greeter.wasm");
    std::fs::write(&path, wat::parse_str(GREETER).unwrap()).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The user's suite: two workloads of their own (one rotating through two requests, one posting
/// a body from a file) and a verified-only 404 route, in the guest and in native, which serves
/// wasmlab's routes and not these.
const MINE: &str = r#"name = "mine"
variants = ["wasmtime-pooled", "wasmtime-shared", "native"]
workloads = ["greet", "upload"]
verify_only = ["missing"]
connections = [2]
duration_secs = 0.3
warmup_secs = 0.1
seed = 3

[cold_start]
runs = 2
variants = ["wasmtime-pooled"]

[warm]
duration_secs = 0.2
workloads = ["greet"]

[open_loop]
fractions = [0.5]
duration_secs = 0.3
connections = 4
workloads = ["greet"]

[[workload]]
name = "greet"
about = "the greeting, with and without a query"
requests = [{ path = "/greet" }, { path = "/greet?name=you" }]
expect = { status = 200, body_matches = "^hi ", headers = { "content-type" = "text/plain" } }

[[workload]]
name = "upload"
request = { method = "POST", path = "/upload", headers = { "content-type" = "application/json" }, body_file = "payload.json" }
expect = { echo = true, body_length = 1200 }

[[workload]]
name = "missing"
request = { path = "/elsewhere" }
expect = { status = 404, body = "nope" }
"#;

#[test]
fn a_users_workloads_are_measured_end_to_end_against_a_guest_that_serves_only_them() {
    let tmp = tempfile::tempdir().unwrap();
    let wasm = greeter(tmp.path());
    let payload = format!("{{\"items\":\"{}\"}}", "x".repeat(1200 - 12));
    assert_eq!(payload.len(), 1200);
    write(tmp.path(), "payload.json", &payload);
    let (out, results) = run_suite(tmp.path(), MINE, &["--wasm", &wasm]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // native serves wasmlab's routes, not the user's: it fails, with what it answered, and alone.
    assert_eq!(
        out.status.code(),
        Some(1),
        "stderr: {stderr}\nstdout: {stdout}"
    );
    assert!(
        stderr.contains("native answers GET /greet with 404, expected 200"),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 variant(s) failed") && stderr.contains(": native;"),
        "{stderr}"
    );

    let dir = only_run_dir(&results);
    assert_files_parse(&dir);
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    for variant in ["wasmtime-pooled", "wasmtime-shared"] {
        for workload in ["greet", "upload"] {
            assert_served(&throughput, variant, workload, 2);
        }
    }
    assert!(!throughput.contains("native,"), "{throughput}");
    for (csv, needle) in [
        ("warm.csv", "wasmtime-pooled,greet"),
        ("open_loop.csv", "wasmtime-pooled,greet"),
        ("cold_start.csv", "wasmtime-pooled"),
    ] {
        let text = std::fs::read_to_string(dir.join(csv)).unwrap();
        assert!(text.contains(needle), "{csv}: {text}");
    }

    let run = read_json(&dir.join("run.json"));
    let pooled = run["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "wasmtime-pooled")
        .unwrap();
    let checks: Vec<&str> = pooled["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["what"].as_str().unwrap())
        .collect();
    assert_eq!(
        checks,
        [
            "greet (GET /greet)",
            "greet (GET /greet?name=you)",
            "upload",
            "missing"
        ]
    );
    // The record says what each workload sent: the body file by its full path.
    let upload = run["suite"]["workload"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "upload")
        .unwrap();
    let body_file = upload["request"]["body_file"].as_str().unwrap();
    assert!(Path::new(body_file).is_absolute() && body_file.ends_with("payload.json"));

    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    // (The template escapes '/', so the needles avoid it.)
    for needle in [
        "<h3>Workloads</h3>",
        "upload + 1 header (body from ",
        "verified only",
        "the request&#x27;s body back, a body of 1200 bytes",
        "body matching ",
    ] {
        assert!(html.contains(needle), "report.html lacks {needle:?}");
    }
    rebuild_report(&dir);
}

#[test]
fn each_kind_of_check_fails_a_variant_with_what_came_back() {
    let tmp = tempfile::tempdir().unwrap();
    let wasm = greeter(tmp.path());
    let mut suite = String::from(
        r#"name = "failing"
variants = ["wasmtime-pooled"]
workloads = ["greet"]
verify_only = ["status", "body", "pattern", "length", "digest", "header", "echo", "counter"]
connections = [1]
duration_secs = 0.2

[[workload]]
name = "greet"
request = { path = "/greet" }
expect = { status = 200 }
"#,
    );
    for (name, request, expect) in [
        ("status", "{ path = \"/elsewhere\" }", "{ status = 200 }"),
        ("body", "{ path = \"/greet\" }", "{ body = \"hello\" }"),
        (
            "pattern",
            "{ path = \"/greet\" }",
            "{ body_matches = \"^bye\" }",
        ),
        ("length", "{ path = \"/greet\" }", "{ body_length = 3 }"),
        (
            "digest",
            "{ path = \"/greet\" }",
            "{ body_sha256 = \"0000000000000000000000000000000000000000000000000000000000000000\" }",
        ),
        (
            "header",
            "{ path = \"/greet\" }",
            "{ headers = { \"x-id\" = \"7\" } }",
        ),
        (
            "echo",
            "{ path = \"/greet\", body = \"abc\" }",
            "{ echo = true }",
        ),
        ("counter", "{ path = \"/greet\" }", "{ increments = true }"),
    ] {
        suite.push_str(&format!(
            "\n[[workload]]\nname = \"{name}\"\nrequest = {request}\nexpect = {expect}\n"
        ));
    }
    let (out, _) = run_suite(tmp.path(), &suite, &["--wasm", &wasm]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for want in [
        "status: status 404, expected 200 (body \"nope\")",
        "body: body \"hi there\", expected \"hello\"",
        "pattern: body \"hi there\" does not match /^bye/",
        "length: a body of 8 bytes, expected 3",
        "digest: the body's SHA-256 is ",
        "header: no x-id header, expected \"7\"",
        "echo: body \"hi there\" (8 bytes), expected the request's body (3 bytes)",
        "counter: body \"hi there\" is not a number",
    ] {
        assert!(stderr.contains(want), "{want:?} not in {stderr}");
    }
}

#[test]
fn malformed_workloads_are_refused_before_anything_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let head = "name = \"bad\"\nvariants = [\"native\"]\nworkloads = [\"w\"]\nconnections = [1]\nduration_secs = 0.2\n\n[[workload]]\nname = \"w\"\n";
    for (definition, wants) in [
        (
            "request = { path = \"/\" }\nexpect = { staus = 200 }\n",
            &["[[workload]] \"w\"", "unknown field `staus`"][..],
        ),
        (
            "request = { method = \"POST\", path = \"/\", body_file = \"missing.json\" }\n",
            &["workload \"w\"", "`request.body_file`", "missing.json"],
        ),
        (
            "request = { path = \"/\" }\nexpect = { body_matches = \"[a-\" }\n",
            &[
                "workload \"w\"",
                "`expect.body_matches` \"[a-\" is not a regular expression",
            ],
        ),
        (
            "request = { path = \"/\" }\nexpect = { status = 204, body = \"hello\" }\n",
            &["workload \"w\"", "`expect`: no answer could pass"],
        ),
        (
            "request = { path = \"/\" }\nexpect = { status = 99 }\n",
            &["workload \"w\"", "`expect.status` 99"],
        ),
    ] {
        let (out, results) = run_suite(tmp.path(), &format!("{head}{definition}"), &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{definition}: {stderr}");
        assert!(stderr.contains("suite file "), "{stderr}");
        assert!(stderr.contains("suite.toml"), "{stderr}");
        for want in wants {
            assert!(stderr.contains(want), "{want:?} not in {stderr}");
        }
        assert!(
            !results.exists(),
            "a results directory was made for {definition}"
        );
    }
    // A workload named but defined nowhere.
    let (out, _) = run_suite(
        tmp.path(),
        "name = \"bad\"\nvariants = [\"native\"]\nworkloads = [\"greet\"]\nconnections = [1]\nduration_secs = 0.2\n",
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown workload \"greet\": define it in a [[workload]] table"),
        "{stderr}"
    );
}

#[test]
fn show_suite_prints_the_workloads_inline_as_a_suite_that_reads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let out = wasmlab(&["show-suite", "quick"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "hello",
        "compute",
        "state",
        "proxy",
        "echo",
        "not-found",
        "wrong-method",
    ] {
        assert!(
            text.contains(&format!("name = \"{name}\"")),
            "{name}: {text}"
        );
    }
    assert!(text.contains("body_size = 1024"), "{text}");
    // Saved as a file, it is a suite of its own whose workloads are all its own.
    let file = write(tmp.path(), "mine.toml", &text);
    let again = wasmlab(&["show-suite", &file]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let again = String::from_utf8(again.stdout).unwrap();
    assert_eq!(again.trim_end(), text.trim_end());
    assert_fails_with(&["show-suite", "nope"], "unknown suite \"nope\"");
    let broken = write(
        tmp.path(),
        "broken.toml",
        &text.replace("body_size = 1024", "body_size = \"big\""),
    );
    assert_fails_with(&["show-suite", &broken], "[[workload]] \"echo\"");
}
