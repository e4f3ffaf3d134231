//! The wasi:http components, each started by the lab, verified on every route (hello, compute's
//! digest, state's counter on the upstream, proxy through the lab's upstream, echo, 404, 405) and
//! measured for a moment: wasmlab's Rust component in the Wasm gateway's component executor
//! (compiled at start and from a .cwasm, and recycled) and in `wasmtime serve` (and, built as a WASI 0.3
//! component, in the gateway's executor and `wasmtime serve`, both reusing instances), and the
//! JavaScript component in
//! both. One whose tool is not here is skipped, said so; the JavaScript ones are never set up by a
//! test (`--no-setup`): `wasmlab setup js-component` installs componentize-js. Then a component
//! written outside wasmlab's ABI (examples/components/rust) put in every host with `wasmlab run
//! --component`, beside each host's floor, and what is not a component refused.

use crate::support;

use support::*;

#[test]
fn component_pooled() {
    verified_and_measured("component-pooled");
}

#[test]
fn component_recycled() {
    verified_and_measured("component-recycled");
}

#[test]
fn component_pooled_from_a_precompiled_component() {
    verified_and_measured("component-pooled-cwasm");
}

/// Skipped (the reason printed) until `wasmlab setup component-wasmtime-serve` has installed the
/// Wasmtime CLI: a 12-minute build is no test's to start.
#[test]
fn component_wasmtime_serve() {
    verified_and_measured("component-wasmtime-serve");
}

/// The same handlers as a WASI 0.3 component, whose instances `wasmtime serve` reuses: every
/// route answers as a fresh instance's would (the counter is the upstream's).
#[test]
fn component_p3_wasmtime_serve() {
    verified_and_measured("component-p3-wasmtime-serve");
}

/// The same component in the gateway's executor that reuses instances as `wasmtime serve` does.
#[test]
fn component_p3_reused() {
    verified_and_measured("component-p3-reused");
}

/// The same, from the component the gateway precompiled with the reused executor's settings.
#[test]
fn component_p3_reused_from_a_precompiled_component() {
    verified_and_measured("component-p3-reused-cwasm");
}

/// Skipped until `wasmlab setup js-component` has installed componentize-js from npm.
#[test]
fn js_component() {
    verified_and_measured_with("js-component", &["--no-setup"]);
}

/// The same component recycled: every route verified and measured from instances reset after
/// each request (skipped until componentize-js is set up).
#[test]
fn js_component_recycled() {
    verified_and_measured_with("js-component-recycled", &["--no-setup"]);
}

/// Skipped until componentize-js and the Wasmtime CLI are set up.
#[test]
fn js_component_wasmtime_serve() {
    verified_and_measured_with("js-component-wasmtime-serve", &["--no-setup"]);
}

/// Skipped until `wasmlab setup py-component` has installed componentize-py from PyPI.
#[test]
fn py_component() {
    verified_and_measured_with("py-component", &["--no-setup"]);
}

/// The same component recycled (skipped until componentize-py is set up).
#[test]
fn py_component_recycled() {
    verified_and_measured_with("py-component-recycled", &["--no-setup"]);
}

/// `jco serve` on Node: skipped until `wasmlab setup jco-serve` has installed jco from npm.
#[test]
fn jco_serve() {
    verified_and_measured_with("jco-serve", &["--no-setup"]);
}

/// examples/components/rust (a component as a Rust user writes one: the `wasip2` crate, cargo's
/// wasm32-wasip2 target) built into target/user-components; its path.
fn rust_user_component() -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let target = root.join("target/user-components/rust");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(root.join("examples/components/rust"))
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            "wasm32-wasip2",
        ])
        .arg("--target-dir")
        .arg(&target)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "examples/components/rust: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("wasm32-wasip2/release/hello_rust.wasm")
}

/// The component hosts the first test puts the user's component in beside their floors (the
/// embedded and the reference host; the second test puts it in every WASI 0.2 host, floors left
/// out, which keeps CI's time down).
const HOSTS: &[&str] = &[
    "component-pooled",
    "component-recycled",
    "component-wasmtime-serve",
];

/// Every host of the component suite a WASI 0.2 component is put in (wasmCloud's behind NATS: one
/// host, and two behind nginx).
const EVERY_WASI_02_HOST: &[&str] = &[
    "component-pooled",
    "component-recycled",
    "component-wasmtime-serve",
    "jco-serve",
    "wasmcloud-dev",
    "wasmcloud-host",
    "wasmcloud-host-2",
];

/// `wasmlab run --component` with a component written outside wasmlab's ABI: in each host ready
/// here, right after the host running wasmlab's own component (its floor), verified on `GET /`
/// (the component suite's check: any 2xx answer with a body) and measured; read and recorded in
/// run.json; a host not set up is skipped, said, with its twin.
#[test]
fn a_component_written_elsewhere_runs_in_every_host_beside_the_host_s_floor() {
    let component = rust_user_component();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let mut args = vec![
        "run".to_owned(),
        "--component".into(),
        component.display().to_string(),
        "--no-build".into(),
        "--no-setup".into(),
        "--repetitions".into(),
        "1".into(),
        "--duration".into(),
        "0.1s".into(),
        "--results".into(),
        results.display().to_string(),
        "--variant".into(),
        "native".into(),
    ];
    for h in HOSTS {
        args.extend(["--variant".to_owned(), (*h).to_owned()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = wasmlab(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("your component hello_rust.wasm (")
            && stderr.contains("hello-rust-in-component-pooled"),
        "{stderr}"
    );
    // Where each host lets the component send requests, said in the terminal and the report.
    assert!(
        stderr.contains(
            "its outgoing requests go only to the upstream in hello-rust-in-component-pooled"
        ),
        "{stderr}"
    );
    let dir = only_run_dir(&results);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("Your component in each host")
            && html.contains("only to the upstream: the gateway refuses every other origin"),
        "report.html says nothing of the component's hosts"
    );
    let run = read_json(&dir.join("run.json"));
    let read = &run["components"][0];
    assert_eq!(read["wasi"], "0.2", "{read}");
    assert_eq!(read["name"], "hello-rust", "{read}");
    assert!(
        read["exports"][0]
            .as_str()
            .unwrap()
            .starts_with("wasi:http/incoming-handler@0.2"),
        "{read}"
    );
    assert_eq!(
        read["bytes"].as_u64().unwrap(),
        std::fs::metadata(&component).unwrap().len()
    );
    let order: Vec<&str> = run["suite"]["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    for host in HOSTS {
        let twin = format!("hello-rust-in-{host}");
        let at = order.iter().position(|v| *v == twin).unwrap();
        assert_eq!(order[at - 1], *host, "{order:?}");
        if was_skipped(&run, host) {
            assert_eq!(outcome(&run, &twin)["status"], "skipped");
            continue;
        }
        for v in [*host, twin.as_str()] {
            let o = outcome(&run, v);
            assert_eq!(o["status"], "measured", "{o}");
            assert_served(&throughput, v, "root", 50);
        }
        let spec = run["variant_specs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == twin.as_str())
            .unwrap();
        assert_eq!(spec["component"], read["path"], "{spec}");
    }
    let left = processes_naming(tmp.path());
    assert!(left.is_empty(), "{left:?} outlived the run");
}

/// examples/components/DIR/hello.EXT (a handler as a user of that language's componentize tool
/// writes one, with its world.wit) built by the language's peers/ build script with the tool
/// `wasmlab setup` installs, into target/user-components/DIR/hello_SHORT.wasm (kept while its
/// inputs are older); why not when that tool is not there.
fn user_component(language: ComponentLanguage) -> Result<std::path::PathBuf, String> {
    wasmlab_test_support::example_component(language, &tools_dir())
}

/// The user's routes both examples in other languages answer: `/greet` measured, `/env` (the
/// environment --component-env gives) checked; `start_timeout_secs` for an interpreter compiled
/// at each start, seconds on a busy 2-core machine.
const GREET_AND_ENV: &str = r#"name = "mine"
workloads = ["greet"]
verify_only = ["env"]
connections = [4]
duration_secs = 0.1
warmup_secs = 0.05
repetitions = 1
start_timeout_secs = 120.0

[[workload]]
name = "greet"
request = { path = "/greet?name=lab" }
expect = { status = 200, body = "hello, lab\n" }

[[workload]]
name = "env"
request = { path = "/env?name=GREETING" }
expect = { status = 200, body = "from the lab\n" }
"#;

/// `wasmlab run` of GREET_AND_ENV on `component` in `hosts` alone (`--variant NAME-in-HOST`,
/// no floors), the environment `GREETING=from the lab`; the output, the results directory and
/// the twins' names.
fn run_in_hosts(
    tmp: &tempfile::TempDir,
    component: &std::path::Path,
    hosts: &[&str],
) -> (std::process::Output, std::path::PathBuf, Vec<String>) {
    let comp = component.display().to_string();
    let stem = component
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .replace('_', "-");
    let mut extra = vec![
        "--no-setup",
        "--component",
        &comp,
        "--component-env",
        "GREETING=from the lab",
    ];
    let twins: Vec<String> = hosts.iter().map(|h| format!("{stem}-in-{h}")).collect();
    for t in &twins {
        extra.extend(["--variant", t]);
    }
    let (out, results) = run_suite(tmp.path(), GREET_AND_ENV, &extra);
    (out, results, twins)
}

/// A JavaScript component (componentize-js: SpiderMonkey in the component) named in every WASI
/// 0.2 host alone (`--variant hello-js-in-HOST`, no floors): its routes checked, the environment
/// given with --component-env read by the script, measured where the host can serve it,
/// component-recycled among them (StarlingMonkey and its WASI adapter, both reset). `jco serve`
/// cannot: it serves every request from one instance, and StarlingMonkey's fetch event answers
/// only the first (the second throws "FetchEvent#respondWith can't be called twice on the same
/// event", and the request is never answered), so that twin fails its verification, named, and
/// the others are measured all the same.
#[test]
fn a_component_in_javascript_runs_in_the_hosts_named() {
    let component = match user_component(ComponentLanguage::JavaScript) {
        Ok(c) => c,
        Err(why) => return skipped(&why),
    };
    let tmp = tempfile::tempdir().unwrap();
    let (out, results, twins) = run_in_hosts(&tmp, &component, EVERY_WASI_02_HOST);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    let names = variant_names(&run);
    assert_eq!(names, twins, "{stderr}");
    assert_eq!(run["components"][0]["wasi"], "0.2", "{run}");
    let recycled = outcome(&run, "hello-js-in-component-recycled");
    assert_eq!(recycled["status"], "measured", "{recycled}");
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap_or_default();
    for t in &twins {
        if was_skipped(&run, t) {
            continue;
        }
        let o = outcome(&run, t);
        if t.ends_with("jco-serve") {
            assert_eq!(o["status"], "failed", "{o}");
            assert!(
                o["reason"].as_str().unwrap().contains("no answer within"),
                "{o}"
            );
            continue;
        }
        assert_eq!(o["status"], "measured", "{o}\n{stderr}");
        assert_served(&throughput, t, "greet", 4);
    }
    let left = processes_naming(tmp.path());
    assert!(left.is_empty(), "{left:?} outlived the run");
}

/// A Python component (componentize-py: CPython in the component) named in every WASI 0.2 host
/// (in wasmCloud, about 50 s to compile it in each host on 2 cores): its routes checked, the environment given with --component-env read by the handler, measured
/// where the host can serve it, component-recycled among them (CPython's state spans a dozen
/// core modules, every one reset). A host that exits on being given it (Node 20 refuses its
/// extended constant expressions under `jco serve`) is skipped, which does not fail the run.
#[test]
fn a_component_in_python_runs_in_the_hosts_named() {
    let component = match user_component(ComponentLanguage::Python) {
        Ok(c) => c,
        Err(why) => return skipped(&why),
    };
    let tmp = tempfile::tempdir().unwrap();
    let (out, results, twins) = run_in_hosts(&tmp, &component, EVERY_WASI_02_HOST);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    assert_eq!(variant_names(&run), twins, "{stderr}");
    assert_eq!(run["components"][0]["wasi"], "0.2", "{run}");
    let recycled = outcome(&run, "hello-py-in-component-recycled");
    assert_eq!(recycled["status"], "measured", "{recycled}");
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap_or_default();
    for t in &twins {
        let o = outcome(&run, t);
        if o["status"] == "skipped" {
            continue;
        }
        assert_eq!(o["status"], "measured", "{o}\n{stderr}");
        assert_served(&throughput, t, "greet", 4);
    }
    assert_eq!(
        outcome(&run, "hello-py-in-component-pooled")["status"],
        "measured"
    );
    // No native, so no equal load: the answer does not say it was served nowhere.
    let said = format!("{}{stderr}", String::from_utf8_lossy(&out.stdout));
    assert!(!said.contains("was served in no host"), "{said}");
    let left = processes_naming(tmp.path());
    assert!(left.is_empty(), "{left:?} outlived the run");
}

/// A suite of the user's routes that names no variant and its component (`component = PATH`): the
/// component in every host (without the floors, which serve wasmlab's routes), with the
/// environment --component-env gives it, its route checked; a route that traps fails
/// verification, named, and the run's exit status says so.
#[test]
fn your_routes_are_checked_in_your_component_and_a_trap_is_named() {
    let comp = rust_user_component().display().to_string();
    let suite = |path: &str, expect: &str| {
        format!(
            r#"name = "mine"
workloads = ["mine"]
connections = [4]
duration_secs = 0.1
warmup_secs = 0.05
repetitions = 1

[[workload]]
name = "mine"
request = {{ path = "{path}" }}
expect = {{ {expect} }}
"#
        )
    };
    let tmp = tempfile::tempdir().unwrap();
    // The component named by the suite itself, as --component would; its environment given with
    // --component-env, a value that quotes, escapes and looks like a placeholder, as a host's
    // configuration language or the lab's templates could mangle it.
    let value = r#"hi "there" {upstream} \ ok"#;
    let env = suite(
        "/env?name=GREETING",
        &format!("status = 200, body = {:?}", format!("{value}\n")),
    )
    .replace(
        "repetitions = 1",
        &format!("repetitions = 1\ncomponent = {comp:?}"),
    );
    let given = format!("GREETING={value}");
    let (out, results) = run_suite(tmp.path(), &env, &["--no-setup", "--component-env", &given]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let run = read_json(&only_run_dir(&results).join("run.json"));
    let names = variant_names(&run);
    assert_eq!(run["components"][0]["env"]["GREETING"], value, "{run}");
    assert!(!names.contains(&"component-pooled"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("p3")), "{names:?}");
    for host in EVERY_WASI_02_HOST {
        let twin = format!("hello-rust-in-{host}");
        assert!(names.contains(&twin.as_str()), "{names:?}");
        if !was_skipped(&run, &twin) {
            let o = outcome(&run, &twin);
            assert_eq!(o["status"], "measured", "{o}");
        }
    }
    let left = processes_naming(tmp.path());
    assert!(left.is_empty(), "{left:?} outlived the run");

    let trap = tempfile::tempdir().unwrap();
    let trapping = suite("/trap", "status = 200");
    let (out, results) = run_suite(
        trap.path(),
        &trapping,
        &[
            "--no-setup",
            "--component",
            &comp,
            "--variant",
            "component-pooled",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "every variant failed: {stderr}");
    let run = read_json(&only_run_dir(&results).join("run.json"));
    // Named on the command line, the host stays beside its twin: wasmlab's component has no
    // /trap route (404).
    for (v, status) in [
        ("component-pooled", "404"),
        ("hello-rust-in-component-pooled", "500"),
    ] {
        let o = outcome(&run, v);
        assert_eq!(o["status"], "failed", "{o}");
        assert!(o["reason"].as_str().unwrap().contains(status), "{o}");
    }
    let left = processes_naming(trap.path());
    assert!(left.is_empty(), "{left:?} outlived the run");

    // A route that never answers: each host fails at the start's deadline, then the next is
    // started; nothing is left running.
    let hang = tempfile::tempdir().unwrap();
    let hanging = suite("/hang", "status = 200").replace(
        "repetitions = 1",
        "repetitions = 1\nstart_timeout_secs = 3.0\ntimeout_secs = 2.0",
    );
    let started = std::time::Instant::now();
    let (out, results) = run_suite(
        hang.path(),
        &hanging,
        &[
            "--no-setup",
            "--component",
            &comp,
            "--variant",
            "component-pooled",
            "--variant",
            "component-wasmtime-serve",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    let run = read_json(&only_run_dir(&results).join("run.json"));
    for host in ["component-pooled", "component-wasmtime-serve"] {
        let twin = format!("hello-rust-in-{host}");
        if !was_skipped(&run, &twin) {
            assert_eq!(outcome(&run, &twin)["status"], "failed", "{stderr}");
        }
    }
    let left = processes_naming(hang.path());
    assert!(left.is_empty(), "{left:?} outlived the run");
}

/// What is not a wasi:http component is refused before anything is built, started or written.
#[test]
fn a_wrong_component_is_refused_before_anything_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let file = |name: &str, bytes: &[u8]| {
        let p = tmp.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    let core = file("core.wasm", &wat::parse_str("(module)").unwrap());
    let text = file("notes.wasm", b"not wasm at all");
    let bare = file("bare.wasm", b"\0asm\x0d\0\x01\0");
    let missing = tmp.path().join("missing.wasm").display().to_string();
    for (flag, path, says) in [
        (
            "--component",
            core.as_str(),
            "a core module, not a component",
        ),
        ("--component", text.as_str(), "not WebAssembly"),
        ("--component", bare.as_str(), "exports no wasi:http handler"),
        ("--component", missing.as_str(), "no such file"),
        ("--wasm", bare.as_str(), "a component, not a core module"),
    ] {
        let out = wasmlab(&[
            "run",
            flag,
            path,
            "--no-build",
            "--results",
            results.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {path}: {stderr}");
        assert!(
            stderr.contains(says) && stderr.contains(path),
            "{flag} {path}: {stderr}"
        );
        assert!(!results.exists(), "{flag} {path} wrote results");
    }
    // A wrong environment, each refused as early.
    let comp = rust_user_component().display().to_string();
    for (args, says) in [
        (vec!["--component-env", "NOEQUALS"], "is not KEY=VALUE"),
        (vec!["--component-env", "A=1"], "no component to give it to"),
        (
            vec!["--component", &comp, "--component-env", "1A=x"],
            "not starting with a digit",
        ),
        (
            vec![
                "--component",
                &comp,
                "--component-env",
                "WASMLAB_UPSTREAM=x",
            ],
            "name yours otherwise",
        ),
    ] {
        let mut all = vec!["run", "--no-build", "--results", results.to_str().unwrap()];
        all.extend(&args);
        let out = wasmlab(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!results.exists(), "{args:?} wrote results");
    }
}
