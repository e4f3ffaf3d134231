//! Finding a container engine that can run a container on this machine: docker when its daemon
//! answers, else podman with the first of a few configurations that actually runs one. On the
//! team's VMs root lacks CAP_SYS_RESOURCE, so podman's default ulimits fail every run ("error
//! setting rlimit type 7: operation not permitted") unless a containers.conf clears them; crun
//! fails on their hybrid cgroup layout ("cgroups in hybrid mode not supported") where runc works;
//! and systemd is not there to manage cgroups. Probed once per process; the answer says which
//! engine and settings were used, or why none can run.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use wasmlab_model::tools::ContainerEngine as Engine;

use crate::exec::{on_path, run_with_timeout};

/// Podman's global flags, tried in order, each with and without the containers.conf that clears
/// the default ulimits. (No storage flags: a store keeps the driver it was created with, and
/// build and run must agree.)
const PODMAN_FLAGS: &[&[&str]] = &[
    &[],
    &["--runtime=runc"],
    &["--runtime=runc", "--cgroup-manager=cgroupfs"],
];

/// What labs killed before they could clean up (SIGKILL, a panic) left in podman or docker:
/// containers named for a lab process that is gone (`wasmlab-PID-…`, which conmon or the daemon
/// keeps running), removed; and the lab's images (`localhost/wasmlab-…:RUN`), removed when no
/// other wasmlab run is under way. A line for each removal, or what could not be removed.
pub fn clean_leftovers() -> Vec<String> {
    let mut said = Vec::new();
    let quick = Duration::from_secs(30);
    for engine in ["podman", "docker"] {
        if on_path(engine).is_none() {
            continue;
        }
        let names = run_with_timeout(
            Command::new(engine).args(["ps", "--all", "--format", "{{.Names}}"]),
            quick,
        )
        .unwrap_or_default();
        for name in names.lines().map(str::trim) {
            let Some(pid) = name
                .strip_prefix("wasmlab-")
                .and_then(|rest| rest.split('-').next()?.parse::<i32>().ok())
            else {
                continue;
            };
            if crate::containerd::lab_alive(pid) {
                continue;
            }
            said.push(
                match run_with_timeout(Command::new(engine).args(["rm", "--force", name]), quick)
                {
                    Ok(_) => format!(
                        "wasmlab: removed container {name}, left running by a killed wasmlab (process {pid})"
                    ),
                    Err(e) => format!("wasmlab: could not remove container {name}: {e}"),
                },
            );
        }
        if crate::containerd::another_lab_runs() {
            continue;
        }
        let images = run_with_timeout(
            Command::new(engine).args([
                "images",
                "--format",
                "{{.Repository}}:{{.Tag}}",
                "--filter",
                "reference=localhost/wasmlab-*",
            ]),
            quick,
        )
        .unwrap_or_default();
        for image in images.lines().map(str::trim).filter(|i| !i.is_empty()) {
            said.push(
                // Not forced: an image a container still uses (a live lab's) stays.
                match run_with_timeout(Command::new(engine).args(["rmi", image]), quick) {
                    Ok(_) => format!("wasmlab: removed image {image}, left by an earlier run"),
                    Err(e) => format!("wasmlab: could not remove image {image}: {e}"),
                },
            );
        }
    }
    said
}

/// The engine that works here, or why there is none. Probed on first use.
pub fn detect() -> Result<&'static Engine, String> {
    static FOUND: OnceLock<Result<Engine, String>> = OnceLock::new();
    FOUND.get_or_init(probe).as_ref().map_err(Clone::clone)
}

fn probe() -> Result<Engine, String> {
    let quick = Duration::from_secs(20);
    if on_path("docker").is_some()
        && let Ok(v) = run_with_timeout(
            Command::new("docker").args(["info", "--format", "{{.ServerVersion}}"]),
            quick,
        )
    {
        return Ok(Engine {
            command: vec!["docker".into()],
            env: Vec::new(),
            version: format!("docker {v}"),
        });
    }
    if on_path("podman").is_none() {
        return Err(
            "neither docker (with a daemon that answers) nor podman is installed; on Debian: apt-get install podman runc"
                .into(),
        );
    }
    let version = run_with_timeout(Command::new("podman").arg("--version"), quick)
        .map_err(|e| format!("`podman --version` failed: {e}"))?;
    let conf = containers_conf().map_err(|e| format!("cannot write containers.conf: {e}"))?;
    let mut tried = Vec::new();
    for flags in PODMAN_FLAGS {
        for env in [
            Vec::new(),
            vec![("CONTAINERS_CONF".to_owned(), conf.display().to_string())],
        ] {
            let engine = Engine {
                command: std::iter::once("podman")
                    .chain(flags.iter().copied())
                    .map(String::from)
                    .collect(),
                env,
                version: version.clone(),
            };
            match runs_a_container(&engine) {
                Ok(()) => return Ok(engine),
                Err(e) => tried.push(format!("{}: {e}", engine.describe())),
            }
        }
    }
    Err(format!(
        "podman is installed but could not run a container with any configuration tried ({})",
        tried.join("; ")
    ))
}

/// Whether the engine can run a container, without an image or a registry: a root file system
/// holding one static program (glibc's `ldconfig` is static on Debian), run with host networking.
fn runs_a_container(engine: &Engine) -> Result<(), String> {
    let program = ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .into_iter()
        .find(|p| std::path::Path::new(p).is_file())
        .ok_or("no static program (ldconfig) to test a container with")?;
    let rootfs = std::env::temp_dir().join(format!("wasmlab-rootfs-{}", std::process::id()));
    std::fs::create_dir_all(&rootfs).map_err(|e| e.to_string())?;
    std::fs::copy(program, rootfs.join("probe")).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(&engine.command[0]);
    cmd.args(&engine.command[1..])
        .args(["run", "--rm", "--network=host", "--rootfs"])
        .arg(&rootfs)
        .args(["/probe", "--version"])
        .envs(engine.env.iter().map(|(k, v)| (k, v)));
    let ran = run_with_timeout(&mut cmd, Duration::from_secs(60)).map(|_| ());
    let _ = std::fs::remove_dir_all(&rootfs);
    ran.map_err(|e| e.lines().last().unwrap_or(&e).to_owned())
}

/// A containers.conf that sets no default ulimits (some VMs refuse podman's default nofile).
fn containers_conf() -> std::io::Result<PathBuf> {
    let path = crate::exec::tools_dir().join("containers.conf");
    std::fs::create_dir_all(path.parent().expect("a file in the tools directory"))?;
    std::fs::write(&path, "[containers]\ndefault_ulimits = []\n")?;
    Ok(path)
}
