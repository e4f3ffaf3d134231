//! The command line: what a runner is ([`Runner`]), and what it was asked to do ([`Command`]).

use std::ffi::{CString, OsStr, OsString};
use std::fmt::Write as _;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::{Classify as _, Failure};

/// A runner: what its messages, `--version`, `--help` and `--config` say.
pub struct Runner<C: 'static> {
    /// The program's name, first in every message (`wasmlab-engine-wasmtime`).
    pub name: &'static str,
    /// The first word of `--version` (`wasmtime`), followed by the version.
    pub engine: &'static str,
    pub version: Version,
    /// The `--config` names and what each selects; the first is the default. Several names may select the
    /// same configuration (`default` beside the name of what it is).
    pub configs: &'static [(&'static str, C)],
    /// Options of this runner's own, each with a value (`--cache DIR`).
    pub options: &'static [ExtraOption],
}

/// The engine's version, as `--version` prints it after [`Runner::engine`].
#[derive(Clone, Copy)]
pub enum Version {
    /// Known when the runner was built (from Cargo.lock by [`crate::emit_locked_version`], or from the
    /// engine's sources).
    Built(&'static str),
    /// Asked when `--version` runs: for a runner that drives installed tools, whose versions are theirs.
    /// An error is a runner failure.
    Probed(fn() -> Result<String, String>),
}

/// An option a runner adds to the protocol's: `--NAME VALUE` (or `--NAME=VALUE`) before the module.
#[derive(Clone, Copy, Debug)]
pub struct ExtraOption {
    /// With its dashes: `--cache`.
    pub name: &'static str,
    /// The value's name in the usage: `DIR`.
    pub value: &'static str,
    /// One line for `--help`.
    pub help: &'static str,
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command<C> {
    Version,
    Help,
    Run(Invocation<C>),
}

/// A run of one module, as the command line asks for it.
#[derive(Debug)]
pub struct Invocation<C> {
    /// The `--config` name (the runner's first when none was given).
    pub config_name: &'static str,
    /// What that name selects.
    pub config: C,
    /// Where the phase times go.
    pub phases: PathBuf,
    pub module: PathBuf,
    /// The module's file name without its directory: the program's `argv[0]`.
    pub argv0: String,
    /// The module's arguments after `argv[0]`.
    pub args: Vec<String>,
    /// The runner's own options, in [`Runner::options`]' order, with the value given last.
    options: Vec<(&'static str, Option<OsString>)>,
}

impl<C> Invocation<C> {
    /// The program's arguments: `argv[0]`, then the rest.
    pub fn argv(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.argv0.as_str()).chain(self.args.iter().map(String::as_str))
    }

    /// The program's arguments as C strings, for engines with a C API.
    pub fn c_argv(&self) -> Vec<CString> {
        self.argv()
            .map(|a| CString::new(a).expect("the parser refuses NUL bytes"))
            .collect()
    }

    /// The module's bytes. Reading them is in no phase: compilation starts from the bytes in memory.
    pub fn read_module(&self) -> Result<Vec<u8>, Failure> {
        fs::read(&self.module).runner_failure(format_args!("cannot read {}", self.module.display()))
    }

    /// The value of one of the runner's own options (`"--cache"`), if it was given.
    ///
    /// # Panics
    ///
    /// When `name` is not in [`Runner::options`]: a typo in the runner, not a user's error.
    pub fn option(&self, name: &str) -> Option<&OsStr> {
        match self.options.iter().find(|(n, _)| *n == name) {
            Some((_, value)) => value.as_deref(),
            None => panic!("{name} is not one of this runner's options"),
        }
    }
}

impl<C: Copy> Runner<C> {
    /// Parses the arguments after `argv[0]`. An `Err` is a usage error's message.
    pub fn parse(&self, args: impl IntoIterator<Item = OsString>) -> Result<Command<C>, String> {
        self.check_definition();
        let mut args = args.into_iter();
        let mut config = None;
        let mut phases = None;
        let mut options: Vec<(&'static str, Option<OsString>)> =
            self.options.iter().map(|o| (o.name, None)).collect();
        let module = loop {
            let arg = args.next().ok_or("missing MODULE.wasm")?;
            let bytes = arg.as_bytes();
            if bytes == b"--" {
                break args.next().ok_or("missing MODULE.wasm after `--`")?;
            }
            if !bytes.starts_with(b"-") || bytes == b"-" {
                break arg;
            }
            // Split on bytes, so that `--phases=PATH` takes a path that is not UTF-8 as `--phases PATH` does.
            let (name, inline) = match bytes.iter().position(|&b| b == b'=') {
                Some(i) => (
                    &bytes[..i],
                    Some(OsStr::from_bytes(&bytes[i + 1..]).to_owned()),
                ),
                None => (bytes, None),
            };
            let name = String::from_utf8_lossy(name);
            let command = match &*name {
                "--version" | "-V" => Some(Command::Version),
                "--help" | "-h" => Some(Command::Help),
                _ => None,
            };
            if let Some(command) = command {
                if inline.is_some() {
                    return Err(format!("{name} takes no value"));
                }
                return Ok(command);
            }
            let slot = match &*name {
                "--config" => &mut config,
                "--phases" => &mut phases,
                _ => match options.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, slot)) => slot,
                    None => return Err(format!("unknown option {arg:?}")),
                },
            };
            *slot = Some(
                inline
                    .or_else(|| args.next())
                    .ok_or_else(|| format!("{name} needs a value"))?,
            );
        };
        let (config_name, config) = self.configuration(config.as_deref())?;
        let phases = PathBuf::from(phases.ok_or("missing --phases FILE")?);
        let module = PathBuf::from(module);
        let (argv0, args) = module_arguments(&module, args)?;
        Ok(Command::Run(Invocation {
            config_name,
            config,
            phases,
            module,
            argv0,
            args,
            options,
        }))
    }

    /// Asserts that the runner defines its protocol right: a configuration at least, and no
    /// option of the protocol's own names (a mistake in the runner, not the user's).
    fn check_definition(&self) {
        assert!(
            !self.configs.is_empty(),
            "{} has no configuration",
            self.name
        );
        for option in self.options {
            assert!(
                !matches!(
                    option.name,
                    "--config" | "--phases" | "--version" | "--help"
                ),
                "{} redefines the protocol's {}",
                self.name,
                option.name
            );
        }
    }

    /// The configuration `--config` names, or the runner's first when none is named.
    fn configuration(&self, name: Option<&OsStr>) -> Result<(&'static str, C), String> {
        match name {
            None => Ok(self.configs[0]),
            Some(name) => self
                .configs
                .iter()
                .find(|(n, _)| name == OsStr::new(n))
                .copied()
                .ok_or_else(|| {
                    format!(
                        "unknown configuration {name:?} (expected {})",
                        self.config_names()
                    )
                }),
        }
    }

    /// The usage, for `--help` and after a usage error.
    pub fn usage(&self) -> String {
        let name = self.name;
        let mut text =
            format!("usage: {name} --version\n       {name} --help\n       {name} [--config NAME]");
        for option in self.options {
            let _ = write!(text, " [{} {}]", option.name, option.value);
        }
        text.push_str(" --phases FILE MODULE.wasm [ARG...]\n");
        let mut rows = vec![(
            "--config NAME".to_owned(),
            format!("the configuration: {}", self.config_names()),
        )];
        for option in self.options {
            rows.push((
                format!("{} {}", option.name, option.value),
                option.help.to_owned(),
            ));
        }
        rows.push((
            "--phases FILE".to_owned(),
            "where the phase times are written (JSON)".to_owned(),
        ));
        let width = rows.iter().map(|(left, _)| left.len()).max().unwrap_or(0);
        for (left, right) in rows {
            let _ = write!(text, "\n  {left:width$}  {right}");
        }
        text
    }

    /// `--version`'s line: `ENGINE VERSION`.
    pub fn version_line(&self) -> Result<String, String> {
        let version = match self.version {
            Version::Built(version) => version.to_owned(),
            Version::Probed(probe) => probe()?,
        };
        Ok(format!("{} {version}", self.engine))
    }

    /// `a (the default), b, c`.
    fn config_names(&self) -> String {
        let mut names: Vec<String> = self.configs.iter().map(|(n, _)| (*n).to_owned()).collect();
        names[0].push_str(" (the default)");
        names.join(", ")
    }
}

/// The module's argv\[0\] (its file name) and the arguments after it, as the module sees them:
/// UTF-8 without NUL bytes.
fn module_arguments(
    module: &Path,
    args: impl Iterator<Item = OsString>,
) -> Result<(String, Vec<String>), String> {
    let argv0 = match module.file_name() {
        Some(name) => name
            .to_str()
            .filter(|name| !name.contains('\0'))
            .ok_or_else(|| format!("the module's file name {name:?} is not UTF-8"))?
            .to_owned(),
        None => return Err(format!("{} names no file", module.display())),
    };
    // The OS passes no NUL bytes in arguments; `parse` is also given arguments made up by tests.
    let args = args
        .map(|a| match a.into_string() {
            Ok(a) if a.contains('\0') => Err(format!("the module's argument {a:?} has a NUL byte")),
            Ok(a) => Ok(a),
            Err(a) => Err(format!("the module's argument {a:?} is not UTF-8")),
        })
        .collect::<Result<_, _>>()?;
    Ok((argv0, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Tier {
        Fast,
        Slow,
    }

    const RUNNER: Runner<Tier> = Runner {
        name: "wasmlab-engine-test",
        engine: "test",
        version: Version::Built("1.2.3"),
        configs: &[
            ("default", Tier::Fast),
            ("fast", Tier::Fast),
            ("slow", Tier::Slow),
        ],
        options: &[ExtraOption {
            name: "--cache",
            value: "DIR",
            help: "keep compiled code in DIR",
        }],
    };

    fn parse(args: &[&str]) -> Result<Command<Tier>, String> {
        RUNNER.parse(args.iter().map(OsString::from))
    }

    fn run(args: &[&str]) -> Invocation<Tier> {
        match parse(args) {
            Ok(Command::Run(invocation)) => invocation,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    fn error(args: &[&str]) -> String {
        match parse(args) {
            Err(message) => message,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn options_before_the_module_and_the_module_s_own_after_it() {
        let inv = run(&[
            "--config",
            "slow",
            "--cache",
            "/c",
            "--phases",
            "p.json",
            "dir/m.wasm",
            "--config",
            "x",
        ]);
        assert_eq!((inv.config_name, inv.config), ("slow", Tier::Slow));
        assert_eq!(inv.option("--cache"), Some(OsStr::new("/c")));
        assert_eq!(inv.phases, PathBuf::from("p.json"));
        assert_eq!(inv.module, PathBuf::from("dir/m.wasm"));
        assert_eq!(inv.argv().collect::<Vec<_>>(), ["m.wasm", "--config", "x"]);
        assert_eq!(inv.c_argv(), [c"m.wasm", c"--config", c"x"]);
    }

    #[test]
    fn defaults() {
        let inv = run(&["--phases", "p", "m.wasm"]);
        assert_eq!((inv.config_name, inv.config), ("default", Tier::Fast));
        assert_eq!(inv.option("--cache"), None);
        assert!(inv.args.is_empty());
        assert_eq!(inv.argv0, "m.wasm");
    }

    #[test]
    fn inline_values_and_the_last_of_repeats() {
        let inv = run(&[
            "--config=fast",
            "--config=slow",
            "--cache=a=b",
            "--phases=p",
            "m.wasm",
        ]);
        assert_eq!(inv.config, Tier::Slow);
        assert_eq!(inv.option("--cache"), Some(OsStr::new("a=b")));
        assert_eq!(inv.phases, PathBuf::from("p"));
    }

    #[test]
    fn double_dash_ends_the_options() {
        let inv = run(&["--phases", "p", "--", "-m.wasm", "-x"]);
        assert_eq!(inv.module, PathBuf::from("-m.wasm"));
        assert_eq!(inv.args, ["-x"]);
        // A lone `-` is an operand.
        assert_eq!(run(&["--phases", "p", "-"]).module, PathBuf::from("-"));
    }

    #[test]
    fn version_and_help_win_over_what_is_missing() {
        for (args, version) in [
            (&["--version"][..], true),
            (&["-V"], true),
            (&["--config", "slow", "--version"], true),
            (&["--help"], false),
            (&["-h", "m.wasm"], false),
        ] {
            match parse(args) {
                Ok(Command::Version) if version => {}
                Ok(Command::Help) if !version => {}
                other => panic!("{args:?}: {other:?}"),
            }
        }
        assert_eq!(error(&["--version=1"]), "--version takes no value");
    }

    #[test]
    fn usage_errors() {
        assert_eq!(error(&["--bogus", "m.wasm"]), "unknown option \"--bogus\"");
        assert_eq!(
            error(&["--config", "turbo", "--phases", "p", "m.wasm"]),
            "unknown configuration \"turbo\" (expected default (the default), fast, slow)"
        );
        assert_eq!(error(&["--phases"]), "--phases needs a value");
        assert_eq!(error(&["--phases", "p"]), "missing MODULE.wasm");
        assert_eq!(
            error(&["--phases", "p", "--"]),
            "missing MODULE.wasm after `--`"
        );
        assert_eq!(error(&[]), "missing MODULE.wasm");
        assert_eq!(error(&["m.wasm"]), "missing --phases FILE");
        assert_eq!(
            error(&["--config", "slow", "m.wasm", "--phases", "p"]),
            "missing --phases FILE"
        );
        assert_eq!(error(&["--phases", "p", "/"]), "/ names no file");
    }

    #[test]
    fn bytes_that_are_not_utf8() {
        let not_utf8 = || OsString::from(OsStr::from_bytes(b"\xff"));
        let parse = |args: Vec<OsString>| RUNNER.parse(args);
        // Paths may be any bytes; the module's file name and arguments become WASI strings.
        let mut dir = b"--cache=/tmp/".to_vec();
        dir.push(0xff);
        match parse(vec![
            OsStr::from_bytes(&dir).to_owned(),
            "--phases".into(),
            not_utf8(),
            OsStr::from_bytes(b"/\xff/m.wasm").to_owned(),
        ]) {
            Ok(Command::Run(inv)) => {
                assert_eq!(inv.option("--cache").unwrap().as_bytes(), b"/tmp/\xff");
                assert_eq!(inv.phases.as_os_str(), not_utf8());
                assert_eq!(inv.argv0, "m.wasm");
            }
            other => panic!("{other:?}"),
        }
        let message = parse(vec![
            "--phases".into(),
            "p".into(),
            "m.wasm".into(),
            not_utf8(),
        ])
        .unwrap_err();
        assert_eq!(message, "the module's argument \"\\xFF\" is not UTF-8");
        let message = parse(vec![
            "--phases".into(),
            "p".into(),
            "m.wasm".into(),
            "a\0b".into(),
        ])
        .unwrap_err();
        assert_eq!(message, "the module's argument \"a\\0b\" has a NUL byte");
        let message = parse(vec!["--phases".into(), "p".into(), not_utf8()]).unwrap_err();
        assert_eq!(message, "the module's file name \"\\xFF\" is not UTF-8");
        let message = parse(vec![
            "--config".into(),
            not_utf8(),
            "--phases".into(),
            "p".into(),
            "m".into(),
        ])
        .unwrap_err();
        assert!(
            message.starts_with("unknown configuration \"\\xFF\""),
            "{message}"
        );
        let mut option = b"--".to_vec();
        option.push(0xff);
        let message = parse(vec![OsStr::from_bytes(&option).to_owned()]).unwrap_err();
        assert_eq!(message, "unknown option \"--\\xFF\"");
    }

    #[test]
    fn reading_the_module_is_the_runner_s_failure() {
        match run(&["--phases", "p", "/no/such/dir/m.wasm"]).read_module() {
            Err(Failure::Runner(message)) => assert!(
                message.starts_with("cannot read /no/such/dir/m.wasm: "),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn usage_text() {
        assert_eq!(
            RUNNER.usage(),
            "usage: wasmlab-engine-test --version
       wasmlab-engine-test --help
       wasmlab-engine-test [--config NAME] [--cache DIR] --phases FILE MODULE.wasm [ARG...]

  --config NAME  the configuration: default (the default), fast, slow
  --cache DIR    keep compiled code in DIR
  --phases FILE  where the phase times are written (JSON)"
        );
        assert_eq!(RUNNER.version_line().unwrap(), "test 1.2.3");
    }

    #[test]
    #[should_panic(expected = "--cahce is not one of this runner's options")]
    fn an_undeclared_option_is_the_runner_s_bug() {
        run(&["--phases", "p", "m.wasm"]).option("--cahce");
    }
}
