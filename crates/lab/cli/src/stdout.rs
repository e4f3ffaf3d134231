//! Writing to standard output as a pipe's reader expects: a reader that stops early
//! (`wasmlab report DIR | head`) ends the output, not the command (which still writes its
//! files), and no panic is printed.

use std::io::Write;

/// Prints `text` and a newline; a closed pipe is no error.
pub(crate) fn show(text: impl std::fmt::Display) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("wasmlab: cannot write to standard output: {e}");
    }
}
