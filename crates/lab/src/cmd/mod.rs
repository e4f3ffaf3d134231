//! The subcommands besides `run`: rebuilding a report, comparing runs, the load generator.

pub mod load;
pub mod report;
