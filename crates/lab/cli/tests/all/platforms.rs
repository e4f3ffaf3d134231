//! The platforms: wasmCloud 2 (`wash dev`; one `wash host` under NATS with a registry; two behind
//! nginx) and Cloudflare's workerd (the core-module guest in a Worker, and the JavaScript routes as
//! a Worker), each started by the lab, verified on every route and measured for a moment; and,
//! interrupted while it is measured, none leaves a process running or a port bound. Skipped, said
//! why, until `wasmlab setup wasmcloud-dev wasmcloud-host workerd-wasm` has installed them: a test
//! sets nothing up (`--no-setup`).

use crate::support;

use support::*;

#[test]
fn wasmcloud_dev() {
    verified_and_measured_with("wasmcloud-dev", &["--no-setup"]);
}

#[test]
fn workerd_wasm() {
    verified_and_measured_with("workerd-wasm", &["--no-setup"]);
}

#[test]
fn workerd_js() {
    verified_and_measured_with("workerd-js", &["--no-setup"]);
}

#[test]
fn wasmcloud_dev_interrupted_leaves_nothing_running() {
    interrupted_leaves_nothing_running("wasmcloud-dev");
}

#[test]
fn workerd_wasm_interrupted_leaves_nothing_running() {
    interrupted_leaves_nothing_running("workerd-wasm");
}

/// Runs `variant` on hello for 3 s, interrupts the run (Ctrl-C) once the variant is serving, and
/// checks that none of its processes outlived the run and that the ports they listened on are free.
pub(crate) fn interrupted_leaves_nothing_running(variant: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let suite = format!(
        r#"name = "interrupted"
variants = ["{variant}"]
workloads = ["hello"]
connections = [2]
duration_secs = 3.0
"#
    );
    let Some((mut child, _, ports)) = run_until_serving(
        tmp.path(),
        &suite,
        variant,
        std::time::Duration::from_secs(120),
        |_| false,
    ) else {
        return;
    };
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    // The lab waits for what it started; nginx's workers may hold a port a moment longer.
    assert_nothing_left(
        tmp.path(),
        variant,
        &ports,
        std::time::Duration::from_secs(5),
    );
}

/// Skipped until `wasmlab setup wasmcloud-host` has installed nats-server, the registry and
/// wasmlab-wasmcloud (about 6 minutes).
#[test]
fn wasmcloud_host() {
    verified_and_measured_with("wasmcloud-host", &["--no-setup"]);
}

/// Skipped as wasmcloud-host is, and without nginx.
#[test]
fn wasmcloud_host_2() {
    verified_and_measured_with("wasmcloud-host-2", &["--no-setup"]);
}

/// Six processes (wasmlab-wasmcloud, nats-server, the registry, two hosts, nginx and its worker):
/// none outlives an interrupted run.
#[test]
fn wasmcloud_host_2_interrupted_leaves_nothing_running() {
    interrupted_leaves_nothing_running("wasmcloud-host-2");
}

/// One of wasmcloud-host-2's hosts killed while it is measured: the variant fails, said why, the
/// run goes on with the next, and none of its processes is left.
#[test]
fn wasmcloud_host_2_losing_a_host_fails_alone_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let catalog = wasmlab_model::variant::Catalog::builtin();
    let spec = catalog.find("wasmcloud-host-2").unwrap();
    // The variant as it is, its second host killed 1.5 s after the variant first answered `/`
    // with a 200 (during its 3 s cell; a fixed time after the start was before the answer on a
    // busy machine), asked with bash's /dev/tcp for a minute at most.
    // `$$` is the driver once bash has exec'd it: the killer ends with it.
    let kill_once_answered = r#"(
        for _ in $(seq 600); do
            kill -0 $$ 2>/dev/null || exit 0
            { exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET / HTTP/1.0\r\n\r\n' >&3 &&
              read -r -t 2 status <&3 && [[ $status == *" 200 "* ]]; } 2>/dev/null && break
            sleep 0.1
        done
        exec 3>&-; sleep 1.5; pkill -KILL -f "$0/oci-cache-1") & exec "${@:2}""#;
    let command: Vec<String> = std::iter::once("{tool:bash}".to_owned())
        .chain([
            "-c".into(),
            kill_once_answered.into(),
            "{prepared}/{instance}".into(),
            "{port}".into(),
        ])
        .chain(spec.start.as_ref().unwrap().command.iter().cloned())
        .collect();
    let mut variant: toml::Table = toml::from_str(&toml::to_string(spec).unwrap()).unwrap();
    variant.insert("name".into(), "host-lost".into());
    let requires = variant["requires"].as_array().unwrap().clone();
    let mut requires = requires;
    requires.push(toml::Value::Table(
        toml::from_str("tool = \"bash\"\nversion_args = [\"-c\", \"echo bash\"]").unwrap(),
    ));
    variant.insert("requires".into(), requires.into());
    variant["start"]
        .as_table_mut()
        .unwrap()
        .insert("command".into(), command.into());
    let mut suite: toml::Table = toml::from_str(
        r#"name = "host-lost"
variants = ["host-lost", "wasmcloud-dev"]
workloads = ["hello"]
connections = [2]
duration_secs = 3.0
"#,
    )
    .unwrap();
    suite.insert("variant".into(), toml::Value::Array(vec![variant.into()]));
    let (out, results) = run_suite(
        tmp.path(),
        &toml::to_string(&suite).unwrap(),
        &["--no-setup"],
    );
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    if was_skipped(&run, "host-lost") {
        return;
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let lost = outcome(&run, "host-lost");
    assert_eq!(lost["status"], "failed", "{lost}");
    let why = lost["reason"].as_str().unwrap();
    assert!(why.contains("exited during measurement"), "{why}");
    // The driver's own last words, in the variant's log the reason names.
    let log = std::fs::read_to_string(dir.join("host-lost.log")).unwrap();
    assert!(
        log.contains("wasmlab-wasmcloud: error: host-1 exited"),
        "{log}"
    );
    // The next variant (one whose tools the lost one's include) is measured.
    let next = outcome(&run, "wasmcloud-dev");
    assert_eq!(next["status"], "measured", "{next}");
    let left: Vec<String> = processes_naming(tmp.path())
        .into_iter()
        .map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!(
                "{pid}: {}",
                String::from_utf8_lossy(&cmd).replace('\0', " ")
            )
        })
        .collect();
    assert!(left.is_empty(), "{left:?} outlived the run");
}
