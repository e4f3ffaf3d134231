//! What a component rewritten for `component-recycled` offers the executor that serves it: the
//! contract between the rewrite (`component_reset`, built with the compiler) and `component`
//! (which also serves precompiled components, without it), so neither needs the other.

/// The export a rewritten component gains: a function of no arguments that puts its instance
/// back as a fresh one.
pub(crate) const RESET_EXPORT: &str = "wasmlab-reset";

/// The least memory limit `component-recycled` runs under: the rewrite's marks memory (a byte for
/// each 1 KiB a 32-bit address reaches, then a byte for each 1 KiB of the component's memory) is
/// held to the same limit as the component's own.
pub(crate) const RECYCLED_MIN_MEMORY_MIB: u64 = 5;
