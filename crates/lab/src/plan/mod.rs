//! Planning a run: which suite, which variants, how the machine's CPUs are split between the load
//! generator and the servers, and what the machine is.

pub mod cpus;
pub mod machine;
pub mod suite;
