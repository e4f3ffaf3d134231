//! wasmCloud 2 as a deployment runs it, on one machine, for the lab's `wasmcloud-host` variants:
//! a NATS server (the control plane), an OCI registry (where hosts get components), the component
//! pushed to it, N `wash host` processes joined to NATS, the workload started on each over NATS as
//! wasmCloud's operator would, and, for more than one host, nginx balancing HTTP over them. The lab
//! starts this one process and measures its tree; on SIGTERM or SIGINT it stops the workloads and
//! every process it started. If any of them exits on its own, this exits non-zero at once, so the
//! lab sees the variant fail.

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use clap::Parser;

#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// wash (wasmCloud 2's CLI), which runs each host and pushes the component.
    #[arg(long)]
    wash: PathBuf,
    /// nats-server.
    #[arg(long)]
    nats_server: PathBuf,
    /// The distribution registry (`registry serve CONFIG`).
    #[arg(long)]
    registry: PathBuf,
    /// nginx, which balances the hosts when there are several.
    #[arg(long)]
    nginx: Option<PathBuf>,
    /// The wasi:http component to serve.
    #[arg(long)]
    component: PathBuf,
    /// A variable of the component's environment, KEY=VALUE (repeatable): the lab gives the
    /// upstream's URL as WASMLAB_UPSTREAM, and a user's `--component-env` beside it.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = key_value)]
    env: Vec<(String, String)>,
    /// How many hosts.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    hosts: u16,
    /// The loopback port HTTP is served on: the host's, or nginx's in front of several.
    #[arg(long)]
    port: u16,
    /// A directory of this launch's own (configurations, the registry's storage, logs).
    #[arg(long)]
    dir: PathBuf,
}

/// The name the hosts route requests by: the Host header's, without its port.
const HOST_NAME: &str = "127.0.0.1";
const WORKLOAD_ID: &str = "wasmlab-http";
/// How long a host may take to start the workload: it compiles the component first, and a
/// JavaScript or Python one (13-18 MB of engine) takes 20-40 s on a busy 2-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(120);

fn main() {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    if let Err(e) = runtime.block_on(run(args)) {
        eprintln!("wasmlab-wasmcloud: error: {e:#}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    // Before anything starts: a stop asked for while the hosts start stops what has started.
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut procs = Processes::default();
    let started = tokio::select! {
        started = start(&args, &mut procs) => started?,
        _ = term.recv() => return Ok(()),
        _ = int.recv() => return Ok(()),
    };
    let Started { nats, hosts } = started;

    // Until told to stop, or until one of the processes dies.
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let died = loop {
        tokio::select! {
            _ = term.recv() => break None,
            _ = int.recv() => break None,
            _ = tick.tick() => {
                if let Some(why) = procs.exited() {
                    break Some(why);
                }
            }
        }
    };
    let stop = serde_json::json!({ "workloadId": WORKLOAD_ID }).to_string();
    for (id, _) in &hosts {
        let subject = format!("runtime.host.{id}.workload.stop");
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            nats.request(subject, stop.clone().into()),
        )
        .await;
    }
    drop(procs);
    match died {
        Some(why) => bail!("{why}"),
        None => Ok(()),
    }
}

/// What is running once every host serves the workload.
struct Started {
    nats: async_nats::Client,
    /// Each host's id and HTTP port.
    hosts: Vec<(String, u16)>,
}

/// Starts NATS, the registry, the hosts (and nginx), pushes the component and starts the workload
/// on every host.
async fn start(args: &Args, procs: &mut Processes) -> anyhow::Result<Started> {
    ensure!(
        args.hosts == 1 || args.nginx.is_some(),
        "{} hosts need --nginx to balance them",
        args.hosts
    );
    std::fs::create_dir_all(&args.dir).with_context(|| format!("create {}", args.dir.display()))?;
    let dir = args.dir.canonicalize()?;

    let nats_port = free_port()?;
    procs.spawn(
        "nats-server",
        Command::new(&args.nats_server)
            .args(["-a", "127.0.0.1", "-p", &nats_port.to_string(), "-P"])
            .arg(dir.join("nats-server.pid")),
        &dir,
    )?;
    let registry_port = free_port()?;
    let registry_config = dir.join("registry.yml");
    std::fs::write(
        &registry_config,
        format!(
            "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{registry_port}\n  secret: wasmlab-local\n",
            dir.join("registry").display()
        ),
    )?;
    procs.spawn(
        "registry",
        Command::new(&args.registry)
            .arg("serve")
            .arg(&registry_config)
            .env("OTEL_TRACES_EXPORTER", "none"),
        &dir,
    )?;
    wait_for_port(nats_port, procs).await?;
    wait_for_port(registry_port, procs).await?;

    let image = format!("127.0.0.1:{registry_port}/wasmlab/http:v1");
    let push = wash(&args.wash, &dir)
        .args(["oci", "push", "--insecure", &image])
        .arg(&args.component)
        .stdin(Stdio::null())
        .output()
        .context("run wash oci push")?;
    ensure!(
        push.status.success(),
        "wash oci push {image} failed ({}): {}",
        push.status,
        String::from_utf8_lossy(&push.stderr).trim()
    );

    let nats_url = format!("nats://127.0.0.1:{nats_port}");
    let mut hosts = Vec::new();
    for i in 0..args.hosts {
        let port = if args.hosts == 1 {
            args.port
        } else {
            free_port()?
        };
        let name = format!("host-{i}");
        let log = procs.spawn(
            &name,
            wash(&args.wash, &dir)
                .args(["host", "--scheduler-nats-url", &nats_url])
                .args(["--data-nats-url", &nats_url])
                .args(["--http-addr", &format!("127.0.0.1:{port}")])
                .arg("--allow-insecure-registries")
                .arg("--oci-cache-dir")
                .arg(dir.join(format!("oci-cache-{i}"))),
            &dir,
        )?;
        hosts.push((host_id(&log, procs).await?, port));
    }

    // The client's own request timeout (10 s by default) would end a start that compiles.
    let nats = async_nats::ConnectOptions::new()
        .request_timeout(Some(START_TIMEOUT))
        .connect(&nats_url)
        .await
        .with_context(|| format!("connect to {nats_url}"))?;
    let start = start_request(&image, &args.env);
    for (id, _) in &hosts {
        let subject = format!("runtime.host.{id}.workload.start");
        let deadline = Instant::now() + START_TIMEOUT;
        let reply = loop {
            let asked = nats.request(subject.clone(), start.clone().into());
            let answer = tokio::time::timeout(START_TIMEOUT, asked)
                .await
                .with_context(|| {
                    format!("host {id} did not answer the workload's start in {START_TIMEOUT:?}")
                })?;
            match answer {
                Ok(reply) => break reply,
                // A host prints its id before it subscribes to its subjects: asked that soon,
                // NATS has no responder yet (seen in a run on a busy 2-core machine).
                Err(e)
                    if e.kind() == async_nats::client::RequestErrorKind::NoResponders
                        && Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("start the workload on host {id}"));
                }
            }
        };
        let text = String::from_utf8_lossy(&reply.payload);
        ensure!(
            text.contains("WORKLOAD_STATE_RUNNING"),
            "host {id} did not start the workload: {text}"
        );
    }

    if args.hosts > 1 {
        let nginx = args.nginx.as_deref().expect("checked above");
        let conf = nginx_config(&dir, args.port, hosts.iter().map(|(_, p)| *p));
        std::fs::write(dir.join("nginx.conf"), conf)?;
        procs.spawn(
            "nginx",
            Command::new(nginx)
                .arg("-p")
                .arg(&dir)
                // Its own error log from the start, not the system's (which it opens before
                // reading a configuration).
                .arg("-e")
                .arg(dir.join("nginx-error.log"))
                .arg("-c")
                .arg(dir.join("nginx.conf"))
                .args(["-g", "daemon off;"]),
            &dir,
        )?;
    }
    eprintln!(
        "wasmlab-wasmcloud: {} host(s) {} serving {image} on 127.0.0.1:{}",
        hosts.len(),
        hosts
            .iter()
            .map(|(id, p)| format!("{id} (:{p})"))
            .collect::<Vec<_>>()
            .join(", "),
        args.port
    );

    Ok(Started { nats, hosts })
}

/// `KEY=VALUE`, split at the first `=`.
fn key_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{s:?} is not KEY=VALUE"))
}

/// The workload wasmCloud's operator would send: the component from the registry, `env` its
/// environment, outgoing HTTP allowed (deny-all otherwise), and HTTP routed to it by Host.
fn start_request(image: &str, env: &[(String, String)]) -> String {
    let env: serde_json::Map<String, serde_json::Value> = env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into()))
        .collect();
    serde_json::json!({
        "workloadId": WORKLOAD_ID,
        "workload": {
            "namespace": "wasmlab",
            "name": "http",
            "witWorld": {
                "components": [{
                    "name": "http",
                    "image": image,
                    "imagePullPolicy": "IMAGE_PULL_POLICY_IF_NOT_PRESENT",
                    "localResources": {
                        "environment": env,
                        "allowedHosts": ["*"],
                    },
                }],
                "hostInterfaces": [{
                    "namespace": "wasi",
                    "package": "http",
                    "version": "0.2.0",
                    "interfaces": ["incoming-handler"],
                    "config": { "host": HOST_NAME },
                }],
            },
        },
    })
    .to_string()
}

/// nginx in front of the hosts: one worker, kept-alive connections to each host, Host rewritten
/// to the name the hosts route by.
fn nginx_config(dir: &Path, port: u16, hosts: impl Iterator<Item = u16>) -> String {
    let servers: String = hosts
        .map(|p| format!("    server 127.0.0.1:{p};\n"))
        .collect();
    let d = dir.display();
    format!(
        "worker_processes 1;\nerror_log {d}/nginx-error.log;\npid {d}/nginx.pid;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/nginx-body;\n  proxy_temp_path {d}/nginx-proxy;\n\
         \x20 upstream hosts {{\n{servers}    keepalive 256;\n  }}\n\
         \x20 server {{\n    listen 127.0.0.1:{port};\n    location / {{\n      proxy_pass http://hosts;\n\
         \x20     proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n      proxy_set_header Host {HOST_NAME};\n    }}\n  }}\n}}\n"
    )
}

/// `wash` with its caches and configuration in `dir`, not the user's home.
fn wash(wash: &Path, dir: &Path) -> Command {
    let mut c = Command::new(wash);
    for (var, sub) in [
        ("XDG_CACHE_HOME", "xdg-cache"),
        ("XDG_CONFIG_HOME", "xdg-config"),
        ("XDG_DATA_HOME", "xdg-data"),
    ] {
        c.env(var, dir.join(sub));
    }
    c
}

/// The processes this started, stopped (SIGTERM, then SIGKILL after 2 s: within the 3 s the lab
/// gives this process before it kills it) when dropped, last first.
#[derive(Default)]
struct Processes {
    children: Vec<(String, Child)>,
}

impl Processes {
    /// Starts `cmd` as `name`, its output in `dir/NAME.log`; returns that log's path.
    fn spawn(&mut self, name: &str, cmd: &mut Command, dir: &Path) -> anyhow::Result<PathBuf> {
        let log_path = dir.join(format!("{name}.log"));
        let log = std::fs::File::create(&log_path)?;
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        // SAFETY: prctl is async-signal-safe; a child dies with this process, whatever kills it.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("start {name} ({:?})", cmd.get_program()))?;
        self.children.push((name.to_owned(), child));
        Ok(log_path)
    }

    /// The first process that exited, said with the end of its log.
    fn exited(&mut self) -> Option<String> {
        for (name, child) in &mut self.children {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(format!("{name} exited ({status})"));
            }
        }
        None
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for (_, child) in self.children.iter().rev() {
            // SAFETY: signalling our own child by pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        for (_, child) in self.children.iter_mut().rev() {
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Waits until something accepts on loopback `port` (20 s at most), or a process dies.
async fn wait_for_port(port: u16, procs: &mut Processes) -> anyhow::Result<()> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_err() {
        if let Some(why) = procs.exited() {
            bail!("{why}");
        }
        ensure!(
            Instant::now() < deadline,
            "nothing listens on {addr} after 20 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// The id a `wash host` prints when it has started (`host_id="…"` in its log), waited for.
async fn host_id(log: &Path, procs: &mut Processes) -> anyhow::Result<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut text = String::new();
        std::fs::File::open(log)?.read_to_string(&mut text)?;
        if let Some(id) = parse_host_id(&text) {
            return Ok(id);
        }
        if let Some(why) = procs.exited() {
            bail!("{why}: {}", text.lines().last().unwrap_or(""));
        }
        ensure!(
            Instant::now() < deadline,
            "{} printed no host_id in 30 s",
            log.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The id in a host's `Host started host_id="…"` log line.
fn parse_host_id(log: &str) -> Option<String> {
    let rest = log.split("host_id=").nth(1)?;
    let id: String = rest
        .trim_start_matches('"')
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    (!id.is_empty()).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_id_is_read_from_its_start_line() {
        let log = "2026-11-27T02:18:39Z  INFO wasmcloud: Host started host_id=\"01a21adc-5b1e-7c4f-9d2a-0c3e4f5a6b7c\" friendly_name=\"x\" version=\"2.10.3\"\n";
        assert_eq!(
            parse_host_id(log).as_deref(),
            Some("01a21adc-5b1e-7c4f-9d2a-0c3e4f5a6b7c")
        );
        assert_eq!(parse_host_id("INFO starting\n"), None);
        assert_eq!(parse_host_id("host_id=\"\""), None);
    }

    #[test]
    fn the_workload_names_the_image_the_environment_and_the_host_name() {
        let env = [
            key_value("WASMLAB_UPSTREAM=http://u").unwrap(),
            key_value("GREETING=a=b \"c\"").unwrap(),
        ];
        let v: serde_json::Value =
            serde_json::from_str(&start_request("127.0.0.1:5000/wasmlab/http:v1", &env)).unwrap();
        let component = &v["workload"]["witWorld"]["components"][0];
        assert_eq!(component["image"], "127.0.0.1:5000/wasmlab/http:v1");
        assert_eq!(
            component["localResources"]["environment"]["WASMLAB_UPSTREAM"],
            "http://u"
        );
        assert_eq!(
            component["localResources"]["environment"]["GREETING"],
            "a=b \"c\""
        );
        assert!(key_value("NOEQUALS").is_err());
        assert_eq!(component["localResources"]["allowedHosts"][0], "*");
        let http = &v["workload"]["witWorld"]["hostInterfaces"][0];
        assert_eq!(http["interfaces"][0], "incoming-handler");
        assert_eq!(http["config"]["host"], HOST_NAME);
    }

    #[test]
    fn nginx_balances_every_host_and_sets_the_host_name() {
        let conf = nginx_config(Path::new("/d"), 8080, [1001, 1002].into_iter());
        assert!(conf.contains("server 127.0.0.1:1001;") && conf.contains("server 127.0.0.1:1002;"));
        assert!(conf.contains("listen 127.0.0.1:8080;"));
        assert!(conf.contains("proxy_set_header Host 127.0.0.1;"));
        assert!(conf.contains("pid /d/nginx.pid;"));
    }
}
