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
            (super::HOSTILE_HTTP_P3, super::HOSTILE_HTTP_P3_PATH),
            (super::PROXY_WASM, super::PROXY_WASM_PATH),
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
            super::PROXY_WASM,
        ] {
            assert_eq!(layer(core), [1, 0, 0, 0]);
        }
        for component in [
            super::HTTP,
            super::HTTP_P3,
            super::HOSTILE_HTTP,
            super::HOSTILE_HTTP_P3,
        ] {
            assert_eq!(layer(component), [0x0d, 0, 1, 0]);
        }
    }

    /// The names the outermost component imports and exports (not those of the modules and
    /// components inside it).
    fn outer_names(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
        use wasmparser::{Parser, Payload};
        let (mut imports, mut exports, mut depth) = (Vec::new(), Vec::new(), 0);
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.unwrap() {
                Payload::Version { .. } => depth += 1,
                Payload::End(_) => depth -= 1,
                Payload::ComponentImportSection(s) if depth == 1 => {
                    imports.extend(s.into_iter().map(|i| i.unwrap().name.name.to_owned()));
                }
                Payload::ComponentExportSection(s) if depth == 1 => {
                    exports.extend(s.into_iter().map(|e| e.unwrap().name.name.to_owned()));
                }
                _ => {}
            }
        }
        (imports, exports)
    }

    #[test]
    fn the_wasi_0_3_hostile_component_is_one() {
        let (imports, exports) = outer_names(super::HOSTILE_HTTP_P3);
        assert!(
            exports.len() == 1 && exports[0].starts_with("wasi:http/handler@0.3"),
            "{exports:?}"
        );
        assert!(
            imports.iter().all(|i| i.contains("@0.3")),
            "a WASI 0.3 component imports WASI 0.3 alone: {imports:?}"
        );
    }

    #[test]
    fn the_http_components_import_only_what_their_handlers_use() {
        for (bytes, wasi, export) in [
            (super::HTTP, "0.2", "wasi:http/incoming-handler@0.2"),
            (super::HTTP_P3, "0.3", "wasi:http/handler@0.3"),
        ] {
            let (imports, exports) = outer_names(bytes);
            assert!(
                exports.len() == 1 && exports[0].starts_with(export),
                "{exports:?}"
            );
            for name in &imports {
                let (interface, version) = name.split_once('@').unwrap();
                assert!(version.starts_with(wasi), "{name} in {imports:?}");
                // No wasi-libc: neither stdio, terminals, exit nor a filesystem.
                assert!(
                    interface.starts_with("wasi:http/")
                        || interface.starts_with("wasi:io/")
                        || interface == "wasi:cli/environment"
                        || interface.starts_with("wasi:clocks/")
                        || interface.starts_with("wasi:random/"),
                    "{name} in {imports:?}"
                );
            }
            assert!(
                imports
                    .iter()
                    .any(|i| i.starts_with("wasi:cli/environment@"))
            );
        }
    }
}
