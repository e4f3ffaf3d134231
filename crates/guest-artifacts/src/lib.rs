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
            (super::HTTP, super::HTTP_PATH),
            (super::HTTP_P3, super::HTTP_P3_PATH),
            (super::HOSTILE_HTTP, super::HOSTILE_HTTP_PATH),
        ] {
            assert!(bytes.starts_with(b"\0asm"), "{path} is not Wasm");
            assert_eq!(std::fs::read(path).unwrap(), bytes);
        }
    }

    /// The preamble's layer field: 1 for a core module, 0x0d for a component.
    fn layer(bytes: &[u8]) -> &[u8] {
        &bytes[4..8]
    }

    #[test]
    fn components_are_components_and_modules_modules() {
        for core in [
            super::CORE,
            super::COMMAND,
            super::PIPE,
            super::HOSTILE_CORE,
        ] {
            assert_eq!(layer(core), [1, 0, 0, 0]);
        }
        for component in [super::HTTP, super::HTTP_P3, super::HOSTILE_HTTP] {
            assert_eq!(layer(component), [0x0d, 0, 1, 0]);
        }
    }
}
