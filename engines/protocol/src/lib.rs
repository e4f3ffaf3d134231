//! The runner protocol of docs/engines.md, written once for the Rust runners in `engines/`. A runner
//! describes itself in a [`Runner`] (its name, its engine's version, its `--config` names, any options of
//! its own) and gives [`main`] the part that is its engine's: a closure that runs the module of an
//! [`Invocation`] and returns its exit status with its [`Phases`], or a [`Failure`]. Everything else is
//! here:
//!
//! ```text
//! RUNNER --version | -V
//! RUNNER --help | -h
//! RUNNER [--config NAME] [RUNNER'S OPTIONS] --phases FILE MODULE.wasm [ARG...]
//! ```
//!
//! - options come before the module, as `--opt VALUE` or `--opt=VALUE`; `--` ends them; everything after
//!   the module is the module's own arguments (UTF-8: they become WASI strings);
//! - the program's `argv[0]` is the module's file name without its directory ([`Invocation::argv`]);
//! - exit status: the program's own (its low 8 bits, as the kernel keeps of a native program's);
//!   [`EXIT_USAGE`] for a usage error, with the usage on stderr; [`EXIT_PROGRAM`] when the program fails
//!   while running (a trap, a host error that aborts it); [`EXIT_RUNNER`] when the runner fails (reading,
//!   compiling or instantiating the module, writing the phases file). On the last two a message goes to
//!   stderr and no phases file is written;
//! - stdout is flushed before the runner exits.
//!
//! For build scripts, [`emit_locked_version`] reads the embedded engine's version from Cargo.lock.

mod args;
mod failure;
mod lock;

use std::fs;
use std::io::{self, Write as _};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

pub use args::{Command, ExtraOption, Invocation, Runner, Version};
pub use failure::{Classify, Failure, error_chain};
pub use lock::{emit_locked_version, locked_version};

/// A usage error: an unknown option or configuration, a missing operand.
pub const EXIT_USAGE: u8 = 2;
/// The program failed while running: a trap, or a host error that aborted it.
pub const EXIT_PROGRAM: u8 = 70;
/// The runner failed: reading, compiling, linking or instantiating the module, writing the phases file.
pub const EXIT_RUNNER: u8 = 71;

/// The three phase times of one run, measured with a monotonic clock inside the runner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phases {
    /// From the module's bytes in memory to a compiled module ready to instantiate.
    pub compile: Duration,
    /// From the compiled module to an instance ready to run (WASI context, linking, instantiation).
    pub instantiate: Duration,
    /// The call of `_start` until it returns or the program exits.
    pub execute: Duration,
}

impl Phases {
    /// The phases between four instants: compile from the first to the second, instantiate to the third,
    /// execute to the fourth.
    pub fn between([t0, t1, t2, t3]: [Instant; 4]) -> Self {
        Self {
            compile: t1 - t0,
            instantiate: t2 - t1,
            execute: t3 - t2,
        }
    }

    /// The phases file's text: one JSON object of integer nanoseconds, on one line.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"compile_ns\": {}, \"instantiate_ns\": {}, \"execute_ns\": {}}}\n",
            self.compile.as_nanos(),
            self.instantiate.as_nanos(),
            self.execute.as_nanos()
        )
    }

    pub fn write(&self, path: &Path) -> io::Result<()> {
        fs::write(path, self.to_json())
    }
}

/// A program that ran to its end: `_start` returned (status 0) or it called `proc_exit`.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// 0, or the `proc_exit` code.
    pub status: i32,
    pub phases: Phases,
}

/// The runner's `main`: parses the command line, answers `--version` and `--help`, or runs the module with
/// `run`, writes the phases file and returns the exit status.
pub fn main<C: Copy>(
    runner: &Runner<C>,
    run: impl FnOnce(&Invocation<C>) -> Result<Outcome, Failure>,
) -> ExitCode {
    let status = drive(runner, std::env::args_os().skip(1), run);
    // Runners that give the program Rust's stdout may still hold the end of its output in std's buffer.
    let _ = io::stdout().flush();
    ExitCode::from(status)
}

/// [`main`] on the given arguments (without `argv[0]`): the exit status.
fn drive<C: Copy>(
    runner: &Runner<C>,
    args: impl IntoIterator<Item = std::ffi::OsString>,
    run: impl FnOnce(&Invocation<C>) -> Result<Outcome, Failure>,
) -> u8 {
    let invocation = match runner.parse(args) {
        Ok(Command::Run(invocation)) => invocation,
        Ok(Command::Help) => {
            println!("{}", runner.usage());
            return 0;
        }
        Ok(Command::Version) => {
            return match runner.version_line() {
                Ok(line) => {
                    println!("{line}");
                    0
                }
                Err(message) => {
                    eprintln!("{}: {message}", runner.name);
                    EXIT_RUNNER
                }
            };
        }
        Err(message) => {
            eprintln!("{}: {message}\n{}", runner.name, runner.usage());
            return EXIT_USAGE;
        }
    };
    let result = run(&invocation).and_then(|outcome| {
        outcome.phases.write(&invocation.phases).map_err(|e| {
            Failure::runner(format!(
                "cannot write the phases file {}: {e}",
                invocation.phases.display()
            ))
        })?;
        Ok(outcome.status)
    });
    let module = invocation.module.display();
    match result {
        // Truncation is the point: the kernel keeps the low 8 bits of a native program's status too.
        Ok(status) => status as u8,
        Err(Failure::Program(message)) => {
            eprintln!("{}: {module}: the program failed: {message}", runner.name);
            EXIT_PROGRAM
        }
        Err(Failure::Runner(message)) => {
            eprintln!("{}: {module}: {message}", runner.name);
            EXIT_RUNNER
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::path::PathBuf;

    const RUNNER: Runner<u8> = Runner {
        name: "wasmlab-engine-test",
        engine: "test",
        version: Version::Built("1.2.3"),
        configs: &[("fast", 1), ("slow", 2)],
        options: &[],
    };

    fn phases() -> Phases {
        Phases {
            compile: Duration::from_nanos(812_345),
            instantiate: Duration::from_nanos(40_210),
            execute: Duration::from_nanos(1_234_567_890),
        }
    }

    /// A fresh directory for one test's files.
    fn scratch(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "wasmlab-engine-protocol-{test}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn args(phases: &Path) -> Vec<OsString> {
        vec![
            "--phases".into(),
            phases.into(),
            "m.wasm".into(),
            "x".into(),
        ]
    }

    #[test]
    fn phases_between_instants() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let p = Phases::between([t0, t0 + ms(3), t0 + ms(5), t0 + ms(12)]);
        assert_eq!((p.compile, p.instantiate, p.execute), (ms(3), ms(2), ms(7)));
    }

    #[test]
    fn phases_json() {
        assert_eq!(
            phases().to_json(),
            "{\"compile_ns\": 812345, \"instantiate_ns\": 40210, \"execute_ns\": 1234567890}\n"
        );
    }

    #[test]
    fn a_finished_program_has_its_status_and_phases() {
        let dir = scratch("finished");
        let file = dir.join("phases.json");
        let status = drive(&RUNNER, args(&file), |inv| {
            assert_eq!(inv.config, 1);
            assert_eq!(inv.argv().collect::<Vec<_>>(), ["m.wasm", "x"]);
            Ok(Outcome {
                status: 3,
                phases: phases(),
            })
        });
        assert_eq!(status, 3);
        assert_eq!(fs::read_to_string(&file).unwrap(), phases().to_json());
        // proc_exit(256) ends a native program with 0; -1 with 255.
        for (exit, status) in [(256, 0), (-1, 255), (0, 0)] {
            let got = drive(&RUNNER, args(&file), |_| {
                Ok(Outcome {
                    status: exit,
                    phases: phases(),
                })
            });
            assert_eq!(got, status, "proc_exit({exit})");
        }
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn failures_have_their_statuses_and_no_phases() {
        let dir = scratch("failures");
        let file = dir.join("phases.json");
        let status = drive(&RUNNER, args(&file), |_| Err(Failure::program("trap")));
        assert_eq!(status, EXIT_PROGRAM);
        let status = drive(&RUNNER, args(&file), |_| Err(Failure::runner("no _start")));
        assert_eq!(status, EXIT_RUNNER);
        assert!(!file.exists());
        // The phases file cannot be written: a runner failure.
        let status = drive(&RUNNER, args(&dir.join("no/such/dir")), |_| {
            Ok(Outcome {
                status: 0,
                phases: phases(),
            })
        });
        assert_eq!(status, EXIT_RUNNER);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn usage_version_and_help_run_nothing() {
        let never = |_: &Invocation<u8>| -> Result<Outcome, Failure> { panic!("ran") };
        assert_eq!(drive(&RUNNER, ["--bogus".into()], never), EXIT_USAGE);
        assert_eq!(drive(&RUNNER, ["--version".into()], never), 0);
        assert_eq!(drive(&RUNNER, ["--help".into()], never), 0);
        let probed = Runner {
            version: Version::Probed(|| Err("wasm2c is not on PATH".into())),
            ..RUNNER
        };
        assert_eq!(drive(&probed, ["-V".into()], never), EXIT_RUNNER);
    }
}
