//! wasmlab's integration tests, one binary: code they share is generated once (as seventeen
//! binaries they took 62 s of CPU to build, as one 24 s; docs/testing.md). Each module is a
//! subject; they start `wasmlab` and real servers on loopback, and share `support`.

mod support;

mod components;
mod containerd;
mod distributed;
mod equal_load;
mod faults;
mod http2;
mod layout;
mod leftovers;
mod peers;
mod platforms;
mod programs;
mod proxies;
mod readme;
mod remote;
mod results;
mod resume;
mod run;
mod runners;
mod thresholds;
mod variants;
mod workloads;
