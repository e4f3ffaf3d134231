//! The guests, compiled to Wasm by this crate's build script: their bytes (embedded, so a gateway
//! binary is self-contained) and the paths of the built files (for artifact sizes).

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));

#[cfg(test)]
mod tests {
    #[test]
    fn guests_are_wasm() {
        for (bytes, path) in [
            (super::CORE, super::CORE_PATH),
            (super::COMMAND, super::COMMAND_PATH),
            (super::PIPE, super::PIPE_PATH),
            (super::HOSTILE_CORE, super::HOSTILE_CORE_PATH),
            (super::HOSTILE_COMMAND, super::HOSTILE_COMMAND_PATH),
        ] {
            assert!(bytes.starts_with(b"\0asm"), "{path} is not a Wasm module");
            assert_eq!(std::fs::read(path).unwrap(), bytes);
        }
    }
}
