//! What machine and software a run measured: recorded in run.json so a figure can be traced.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_kib: Option<u64>,
    pub kernel: String,
    /// Whether the CPU has SHA extensions. The handlers are built with sha2's portable code
    /// (`force-soft`) natively and in Wasm, so `/compute` never uses them.
    pub cpu_sha_extensions: bool,
    pub compute_sha256: String,
    /// What native code was compiled for: the instruction-set extensions rustc could use in this
    /// build (the gateways are built with wasmlab, with the same flags). `.cargo/config.toml` asks
    /// for this CPU's, as Cranelift compiles the guests for it; a `RUSTFLAGS` of the user's may
    /// not. Empty in runs recorded before it was.
    #[serde(default)]
    pub native_code: String,
    pub tools: Tools,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tools {
    pub wasmlab: String,
    pub rustc: Option<String>,
    pub wasmtime: Option<String>,
    pub hyper: Option<String>,
    pub tokio: Option<String>,
}
