//! The lab's data model, at the bottom of its phases: what a suite asks for ([`suite`]), what a
//! variant is ([`variant`]), what a run records in run.json ([`run`]) and samples.jsonl
//! ([`sample`]), and the studies a report sets beside a run ([`study`]). Planning produces these,
//! measuring fills them, recording writes them and analysis reads them; nothing here runs a
//! command or writes a file.

pub mod component;
pub mod cpus;
pub mod idle;
pub mod machine;
pub mod run;
pub mod sample;
pub mod study;
pub mod suite;
pub mod tools;
pub mod variant;
pub mod workload;
