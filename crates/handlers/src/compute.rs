//! The CPU-bound workload: SHA-256 applied N times in a chain over a fixed seed.

use sha2::{Digest, Sha256};

/// The chain starts from these bytes.
pub const SEED: &[u8] = b"wasmlab";
/// Iterations when `/compute` has no `iters` parameter.
pub const DEFAULT_ITERS: u32 = 20_000;
/// Upper bound on `iters`, so one request cannot occupy a worker for minutes.
pub const MAX_ITERS: u32 = 10_000_000;

/// `state = SEED; repeat iters times: state = sha256(state)`; returns `state` as lowercase hex.
/// The crate is built with sha2's `force-soft` feature, so native and Wasm run the same portable code.
pub fn chained_sha256_hex(iters: u32) -> String {
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    if iters == 0 {
        return hex(SEED);
    }
    let mut digest = Sha256::digest(SEED);
    for _ in 1..iters {
        digest = Sha256::digest(digest);
    }
    hex(&digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        // From coreutils: printf wasmlab | sha256sum, and that digest's bytes hashed again.
        assert_eq!(
            chained_sha256_hex(1),
            "e8362094ec8ffc1180a2b7e17623b644d085d278a9f31ac025bc36cfe663631d"
        );
        assert_eq!(
            chained_sha256_hex(2),
            "f83d061f2a6b8bd06d3e8c6ce04fe38833dd41abb88c738c280139ba21934c60"
        );
        assert_eq!(chained_sha256_hex(0), "7761736d6c6162");
    }
}
