//! The subcommands besides `run`: rebuilding a report, comparing runs, the load generator,
//! listing the variants and setting up what they need.

pub mod load;
pub mod report;
pub mod setup;
pub mod variants;
