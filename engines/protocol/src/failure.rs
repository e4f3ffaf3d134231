//! How a run fails: the program (exit 70) or the runner (exit 71), with a message.

use std::error::Error;
use std::fmt::Display;

/// Why a module did not run to its end.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// The program failed while running: a trap, or a host error that aborted it ([`crate::EXIT_PROGRAM`]).
    Program(String),
    /// The runner failed: reading, compiling, linking or instantiating the module ([`crate::EXIT_RUNNER`]).
    Runner(String),
}

impl Failure {
    pub fn program(message: impl Display) -> Self {
        Self::Program(message.to_string())
    }

    pub fn runner(message: impl Display) -> Self {
        Self::Runner(message.to_string())
    }
}

/// Classifies an engine's error as a [`Failure`], with what the runner was doing: `context: error`, then
/// the error's causes ([`error_chain`]).
///
/// Any error that converts into `Box<dyn Error>` will do: std's and the engines' error types, `anyhow`'s
/// and `wasmtime`'s (which are not `std::error::Error` themselves), a `String`.
pub trait Classify<T> {
    fn runner_failure(self, context: impl Display) -> Result<T, Failure>;
    fn program_failure(self, context: impl Display) -> Result<T, Failure>;
}

impl<T, E: Into<Box<dyn Error>>> Classify<T> for Result<T, E> {
    fn runner_failure(self, context: impl Display) -> Result<T, Failure> {
        self.map_err(|e| Failure::Runner(format!("{context}: {}", error_chain(e))))
    }

    fn program_failure(self, context: impl Display) -> Result<T, Failure> {
        self.map_err(|e| Failure::Program(format!("{context}: {}", error_chain(e))))
    }
}

/// An error's message, then each of its causes on a line of its own.
pub fn error_chain(e: impl Into<Box<dyn Error>>) -> String {
    let e: Box<dyn Error> = e.into();
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // Many engines' errors repeat their cause's message in their own: say it once.
        if !text.contains(&cause_text) {
            text.push_str("\n  caused by: ");
            text.push_str(&cause_text.replace('\n', "\n    "));
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;
    use std::io;

    /// An error with a message and an optional cause.
    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn chains() {
        let e = Layer(
            "cannot instantiate",
            Some(Box::new(Layer(
                "cannot instantiate: unknown import env.f",
                Some(Box::new(Layer("two\nlines", None))),
            ))),
        );
        assert_eq!(
            error_chain(e),
            "cannot instantiate\n  caused by: cannot instantiate: unknown import env.f\n  \
             caused by: two\n    lines"
        );
        // A cause already in its error's message is not repeated.
        let e = Layer("unknown import env.f", Some(Box::new(Layer("env.f", None))));
        assert_eq!(error_chain(e), "unknown import env.f");
    }

    #[test]
    fn classified() {
        let read: Result<(), io::Error> = Err(io::Error::new(io::ErrorKind::NotFound, "gone"));
        assert_eq!(
            read.runner_failure("cannot read m.wasm"),
            Err(Failure::Runner("cannot read m.wasm: gone".into()))
        );
        let trap: Result<(), String> = Err("unreachable".into());
        assert_eq!(
            trap.program_failure("trap"),
            Err(Failure::Program("trap: unreachable".into()))
        );
    }
}
