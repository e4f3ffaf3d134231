//! Variants as data. A variant is a TOML file: what it is, which study row it reproduces, what it
//! needs (tools, a container engine) and how to get them, what is prepared once per run (an image,
//! a precompiled guest), and how it is started and known to be ready. The built-in ones are the
//! files in `variants/` (embedded in the binary); a user's own is a file of the same shape given
//! with `--variant-file`, or a `[[variant]]` table in a suite. docs/variants.md is the reference.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The built-in variant files, in the order `wasmlab variants` lists them.
const BUILTIN: &[(&str, &str)] = &[
    ("native", include_str!("../../../../variants/native.toml")),
    (
        "native-close",
        include_str!("../../../../variants/native-close.toml"),
    ),
    (
        "native-container",
        include_str!("../../../../variants/native-container.toml"),
    ),
    (
        "wasmtime-pooled",
        include_str!("../../../../variants/wasmtime-pooled.toml"),
    ),
    (
        "wasmtime-pooled-cwasm",
        include_str!("../../../../variants/wasmtime-pooled-cwasm.toml"),
    ),
    (
        "wasmtime-recycled",
        include_str!("../../../../variants/wasmtime-recycled.toml"),
    ),
    (
        "wasmtime-shared",
        include_str!("../../../../variants/wasmtime-shared.toml"),
    ),
    (
        "wasmtime-naive",
        include_str!("../../../../variants/wasmtime-naive.toml"),
    ),
    (
        "wasmtime-cli",
        include_str!("../../../../variants/wasmtime-cli.toml"),
    ),
    (
        "wasmtime-cli-cwasm",
        include_str!("../../../../variants/wasmtime-cli-cwasm.toml"),
    ),
    (
        "wasmedge-cli",
        include_str!("../../../../variants/wasmedge-cli.toml"),
    ),
    (
        "native-portable",
        include_str!("../../../../variants/native-portable.toml"),
    ),
    (
        "native-simd",
        include_str!("../../../../variants/native-simd.toml"),
    ),
    (
        "wasmtime-cranelift",
        include_str!("../../../../variants/wasmtime-cranelift.toml"),
    ),
    (
        "wasmtime-winch",
        include_str!("../../../../variants/wasmtime-winch.toml"),
    ),
    (
        "wasmtime-pulley",
        include_str!("../../../../variants/wasmtime-pulley.toml"),
    ),
    ("node", include_str!("../../../../variants/node.toml")),
    ("bun", include_str!("../../../../variants/bun.toml")),
    (
        "wazero-compiler",
        include_str!("../../../../variants/wazero-compiler.toml"),
    ),
    (
        "wazero-interpreter",
        include_str!("../../../../variants/wazero-interpreter.toml"),
    ),
    ("wasmi", include_str!("../../../../variants/wasmi.toml")),
    ("wasm3", include_str!("../../../../variants/wasm3.toml")),
    ("wasm2c", include_str!("../../../../variants/wasm2c.toml")),
    (
        "wamr-aot",
        include_str!("../../../../variants/wamr-aot.toml"),
    ),
    (
        "wamr-interp",
        include_str!("../../../../variants/wamr-interp.toml"),
    ),
    (
        "wasmer-cranelift",
        include_str!("../../../../variants/wasmer-cranelift.toml"),
    ),
    (
        "wasmer-singlepass",
        include_str!("../../../../variants/wasmer-singlepass.toml"),
    ),
    (
        "wasmer-llvm",
        include_str!("../../../../variants/wasmer-llvm.toml"),
    ),
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantSpec {
    /// Stable identifier in results: lowercase letters, digits and `-`.
    pub name: String,
    /// One line: what runs.
    pub about: String,
    /// The published system this variant reproduces, if any (e.g. "gateway study: wasmtime CLI").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study: Option<String>,
    /// A grouping for listings: "ours", "gateway study", or anything (a user's: "yours").
    #[serde(default = "default_family")]
    pub family: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<Requirement>,
    /// Run once per run, in order, before the variant is first started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prepare: Vec<Step>,
    /// Files or images whose size the report shows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<ArtifactSpec>,
    /// A server: how it is started and known to be ready (the HTTP suites). A variant has either
    /// `[start]` or `[program]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Start>,
    /// An engine that runs programs to completion (the program suites, docs/engines.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramRun>,
    /// Run once at the end of a run (e.g. remove an image).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finish: Vec<Step>,
}

fn default_family() -> String {
    "yours".into()
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
    /// `npm install --prefix TOOLS/npm PACKAGE@VERSION`, its programs linked into TOOLS/bin.
    Npm {
        package: String,
        version: String,
        minutes: f64,
    },
    /// `go install MODULE@VERSION` with `GOBIN=TOOLS/bin` (the Go module proxy).
    Go {
        module: String,
        version: String,
        minutes: f64,
    },
    /// Built from a directory of this repository (an engine runner in `engines/`):
    /// `cargo install --locked --path` for a Cargo project, `go build` for a Go module, into
    /// TOOLS/bin. `version` is what the built tool prints (the engine's version).
    Local {
        path: String,
        version: String,
        minutes: f64,
    },
}

impl Install {
    pub fn minutes(&self) -> f64 {
        match self {
            Install::Cargo { minutes, .. }
            | Install::Npm { minutes, .. }
            | Install::Go { minutes, .. }
            | Install::Local { minutes, .. } => *minutes,
        }
    }

    pub fn version(&self) -> &str {
        match self {
            Install::Cargo { version, .. }
            | Install::Npm { version, .. }
            | Install::Go { version, .. }
            | Install::Local { version, .. } => version,
        }
    }

    /// What it does, in a few words.
    pub fn describe(&self) -> String {
        match self {
            Install::Cargo {
                package, version, ..
            } => format!("cargo install {package} {version} from crates.io"),
            Install::Npm {
                package, version, ..
            } => format!("npm install {package}@{version}"),
            Install::Go {
                module, version, ..
            } => format!("go install {module}@{version}"),
            Install::Local { path, .. } => format!("build {path} of this repository"),
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
}

/// How an engine variant runs one program of a program set (docs/engines.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramRun {
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
    /// Program and arguments (templates). Timed from exec to the first complete 200.
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// How the lab learns the server's address.
    #[serde(default)]
    pub address: Address,
    /// The path that must answer 200 for the server to be ready.
    #[serde(default = "default_ready_path")]
    pub ready_path: String,
    /// Run to stop the server (e.g. remove a container) before it is sent SIGTERM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
    /// Prints more process ids whose trees belong to the variant (e.g. a container's conmon and
    /// its main process, which are not descendants of `podman run`), sampled with its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<Vec<String>>,
}

fn default_ready_path() -> String {
    "/".into()
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

/// The placeholders templates may use, and what they stand for (docs/variants.md lists them too).
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    (
        "port",
        "the port to bind: 0 with `address = \"stdout\"`, else a free port the lab picked",
    ),
    ("upstream", "the upstream echo server's URL, for /proxy"),
    (
        "bin",
        "the directory of wasmlab's own binaries (the gateways)",
    ),
    ("workspace", "the wasmlab source tree"),
    (
        "tools",
        "the project's tools directory (`wasmlab setup` installs there)",
    ),
    (
        "prepared",
        "a directory of this run for what `prepare` makes",
    ),
    (
        "core_guest",
        "the core-module guest (.wasm): the built-in one, or `wasmlab run --wasm FILE`",
    ),
    (
        "command_guest",
        "the WASI command guest with the wasmlab imports",
    ),
    (
        "pipe_guest",
        "the WASI command guest that reaches the host over stdin/stdout (for CLIs)",
    ),
    (
        "container",
        "the container engine and its global flags (a whole argument: expands to several)",
    ),
    (
        "server_cpus",
        "the CPUs servers run on, as a list for --cpuset-cpus (e.g. 1 or 1-3)",
    ),
    (
        "instance",
        "a name unique to this launch (e.g. for a container)",
    ),
    ("run_id", "the run's id"),
    ("variant", "the variant's name"),
    ("host_triple", "the host's Rust target triple"),
    (
        "module",
        "[program] only: the program's file (a .wasm module or a native executable)",
    ),
    (
        "phases",
        "[program] only: the file an engine runner writes its phase times to",
    ),
];

/// Splits a template into literal text and placeholder names. A placeholder is `{name}` where
/// the name is letters, digits, `_`, `-` and `:` starting with a letter; any other brace is
/// literal, so a Go template such as `{{.State.Pid}}` (podman's `--format`) passes as it is.
pub fn parse_template(t: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut literal = String::new();
    let mut rest = t;
    while let Some(i) = rest.find('{') {
        literal.push_str(&rest[..i]);
        let tail = &rest[i..];
        let name_len = tail[1..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':')))
            .unwrap_or(tail.len() - 1);
        let name = &tail[1..1 + name_len];
        let closed = tail[1 + name_len..].starts_with('}');
        if closed && name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            if !literal.is_empty() {
                out.push(Piece::Text(std::mem::take(&mut literal)));
            }
            out.push(Piece::Var(name));
            rest = &tail[name_len + 2..];
        } else if !closed
            && name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name_len + 1 == tail.len()
        {
            return Err(format!("unclosed placeholder `{tail}` in {t:?}"));
        } else {
            literal.push('{');
            rest = &tail[1..];
        }
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        out.push(Piece::Text(literal));
    }
    Ok(out)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(String),
    Var(&'a str),
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
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "variant name {:?} must be lowercase letters, digits and '-'",
            self.name
        );
        anyhow::ensure!(!self.about.trim().is_empty(), "`about` is empty");
        for r in &self.requires {
            match (&r.tool, r.container_engine) {
                (Some(t), false) => anyhow::ensure!(
                    !t.is_empty() && !t.contains('/'),
                    "a requirement's `tool` must be a program name, not {t:?}"
                ),
                (None, true) => {}
                _ => anyhow::bail!(
                    "each [[requires]] names either a `tool` or `container_engine = true`"
                ),
            }
        }
        let tools: Vec<&str> = self
            .requires
            .iter()
            .filter_map(|r| r.tool.as_deref())
            .collect();
        let container = self.requires.iter().any(|r| r.container_engine);
        let check_all = |what: &str, args: &[String]| -> anyhow::Result<()> {
            anyhow::ensure!(!args.is_empty(), "{what} is empty");
            for a in args {
                let pieces = parse_template(a).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
                for p in pieces {
                    let Piece::Var(v) = p else { continue };
                    if let Some(tool) = v.strip_prefix("tool:") {
                        anyhow::ensure!(
                            tools.contains(&tool),
                            "{what}: {{tool:{tool}}} needs a [[requires]] with tool = {tool:?}"
                        );
                    } else if v == "container" {
                        anyhow::ensure!(
                            container,
                            "{what}: {{container}} needs a [[requires]] with container_engine = true"
                        );
                        anyhow::ensure!(
                            a == "{container}",
                            "{what}: {{container}} must be a whole argument"
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
        };
        match (&self.start, &self.program) {
            (Some(start), None) => {
                check_all("[start] command", &start.command)?;
                if let Some(stop) = &start.stop {
                    check_all("[start] stop", stop)?;
                }
                if let Some(p) = &start.processes {
                    check_all("[start] processes", p)?;
                }
                anyhow::ensure!(
                    start.ready_path.starts_with('/'),
                    "[start] ready_path must start with '/'"
                );
            }
            (None, Some(program)) => {
                check_all("[program] command", &program.command)?;
                for v in program.env.values() {
                    check_all("[program] env", std::slice::from_ref(v))?;
                }
                anyhow::ensure!(
                    program.command.iter().any(|a| a.contains("{module}")),
                    "[program] command must name the program with {{module}}"
                );
                anyhow::ensure!(
                    crate::programs::BUILDS.contains(&program.build.as_str()),
                    "[program] build {:?} is not one of {}",
                    program.build,
                    crate::programs::BUILDS.join(", ")
                );
            }
            (Some(_), Some(_)) => {
                anyhow::bail!(
                    "a variant has either [start] (a server) or [program] (an engine), not both"
                )
            }
            (None, None) => anyhow::bail!(
                "a variant needs [start] (a server it starts) or [program] (an engine that runs programs)"
            ),
        }
        for (i, step) in self.prepare.iter().chain(&self.finish).enumerate() {
            check_all(&format!("step {} ({})", i + 1, step.about), &step.run)?;
            for v in step.cwd.iter().chain(step.env.values()).chain(&step.stdin) {
                check_all(
                    &format!("step {} ({})", i + 1, step.about),
                    std::slice::from_ref(v),
                )?;
            }
        }
        for a in &self.artifacts {
            match (&a.path, &a.size_command) {
                (Some(p), None) => {
                    check_all(&format!("artifact {:?}", a.name), std::slice::from_ref(p))?
                }
                (None, Some(c)) => check_all(&format!("artifact {:?}", a.name), c)?,
                _ => anyhow::bail!(
                    "artifact {:?} needs either `path` or `size_command`",
                    a.name
                ),
            }
        }
        Ok(())
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

    /// Whether the variant runs a core-module guest that `wasmlab run --wasm` replaces.
    /// An engine for program suites (it has `[program]`), not a server.
    pub fn is_engine(&self) -> bool {
        self.program.is_some()
    }

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

/// Every variant a run can name: the built-in files, then the user's.
#[derive(Debug, Clone)]
pub struct Catalog {
    specs: Vec<(VariantSpec, String)>,
}

impl Catalog {
    /// The built-in variants.
    pub fn builtin() -> Self {
        let specs = BUILTIN
            .iter()
            .map(|(name, text)| {
                let origin = format!("built-in variant file variants/{name}.toml");
                let spec = VariantSpec::parse(text, &origin)
                    .unwrap_or_else(|e| panic!("{e:#}: a built-in variant must parse"));
                assert_eq!(
                    &spec.name, name,
                    "{origin}: name differs from the file name"
                );
                (spec, origin)
            })
            .collect();
        Self { specs }
    }

    /// Adds a user's variant file.
    pub fn add_file(&mut self, path: &Path) -> anyhow::Result<()> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read variant file {}: {e}", path.display()))?;
        let origin = format!("variant file {}", path.display());
        // `add` checks it, naming `origin`.
        let spec = toml::from_str(&text).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        self.add(spec, origin)
    }

    /// Adds a variant given inline (a suite's `[[variant]]`).
    pub fn add(&mut self, spec: VariantSpec, origin: String) -> anyhow::Result<()> {
        spec.validate()
            .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        if let Some((_, other)) = self.specs.iter().find(|(s, _)| s.name == spec.name) {
            anyhow::bail!(
                "{origin}: a variant named {:?} is already defined by {other}; give yours another name",
                spec.name
            );
        }
        self.specs.push((spec, origin));
        Ok(())
    }

    pub fn find(&self, name: &str) -> anyhow::Result<&VariantSpec> {
        self.specs
            .iter()
            .map(|(s, _)| s)
            .find(|s| s.name == name)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "unknown variant {name:?}: known variants are {} (or add your own with --variant-file)",
                    self.names().join(", ")
                )
            })
    }

    pub fn names(&self) -> Vec<&str> {
        self.specs.iter().map(|(s, _)| s.name.as_str()).collect()
    }

    pub fn all(&self) -> impl Iterator<Item = &VariantSpec> {
        self.specs.iter().map(|(s, _)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_file_is_listed_and_parses() {
        let catalog = Catalog::builtin();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../variants");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.strip_suffix(".toml").map(str::to_owned)
            })
            .collect();
        on_disk.sort();
        let mut listed: Vec<&str> = catalog.names();
        listed.sort();
        assert_eq!(listed, on_disk, "variants/ and BUILTIN differ");
    }

    #[test]
    fn templates() {
        use Piece::*;
        assert_eq!(
            parse_template("{bin}/gw").unwrap(),
            [Var("bin"), Text("/gw".into())]
        );
        assert_eq!(
            parse_template("{{.State.Pid}} {instance}").unwrap(),
            [Text("{{.State.Pid}} ".into()), Var("instance")]
        );
        assert_eq!(parse_template("plain").unwrap(), [Text("plain".into())]);
        assert_eq!(parse_template("a{b c}").unwrap(), [Text("a{b c}".into())]);
        assert!(parse_template("{open").is_err());
    }

    const GOOD: &str = r#"
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
        assert_eq!(start.ready_path, "/");
        for (edit, why) in [
            (GOOD.replace("my-server", "My Server"), "lowercase"),
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
                "either a `tool`",
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

    #[test]
    fn a_user_variant_cannot_take_a_builtin_name() {
        let mut c = Catalog::builtin();
        let spec = VariantSpec::parse(&GOOD.replace("my-server", "native"), "t").unwrap();
        let e = c.add(spec, "mine.toml".into()).unwrap_err().to_string();
        assert!(
            e.contains("already defined by built-in variant file"),
            "{e}"
        );
        c.add(VariantSpec::parse(GOOD, "t").unwrap(), "mine.toml".into())
            .unwrap();
        assert_eq!(c.find("my-server").unwrap().about, "a server of mine");
        let e = c.find("nope").unwrap_err().to_string();
        assert!(
            e.contains("my-server") && e.contains("--variant-file"),
            "{e}"
        );
    }

    #[test]
    fn the_wasmtime_cli_is_the_wasmtime_the_gateway_embeds() {
        let lock =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock"))
                .unwrap();
        let embedded = lock
            .split("[[package]]")
            .find(|p| p.contains("\nname = \"wasmtime\"\n"))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
            .map(|v| v.trim_matches('"').to_owned())
            .expect("wasmtime in Cargo.lock");
        let c = Catalog::builtin();
        for name in ["wasmtime-cli", "wasmtime-cli-cwasm"] {
            let install = c.find(name).unwrap().requires[0].install.clone().unwrap();
            assert_eq!(install.version(), embedded, "{name}");
        }
    }

    #[test]
    fn own_binaries_and_core_guest() {
        let c = Catalog::builtin();
        let pooled = c.find("wasmtime-pooled").unwrap();
        assert_eq!(pooled.own_binaries(), ["wasmlab-gateway-wasm"]);
        assert!(pooled.runs_core_guest());
        assert!(!c.find("native").unwrap().runs_core_guest());
        assert_eq!(
            c.find("wasmtime-cli").unwrap().own_binaries(),
            ["wasmlab-gateway-process"]
        );
    }
}
