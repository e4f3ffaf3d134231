//! What the integration tests share.

use std::io::Write;

/// Says that the running test skipped itself, and why, where `cargo test` shows it: libtest
/// captures `eprintln!` of a passing test, but not writes to the stderr handle itself, so a
/// skip never looks like a silent pass.
pub fn skipped(why: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}
