//! Every variant a run can name: the built-in files in `variants/` (embedded in the binary), the
//! user's files, and a suite's own `[[variant]]` tables.

use std::path::Path;

use super::VariantSpec;

/// The built-in variant files, in the order `wasmlab variants` lists them.
const BUILTIN: &[(&str, &str)] = &[
    (
        "native",
        include_str!("../../../../../variants/native.toml"),
    ),
    (
        "native-close",
        include_str!("../../../../../variants/native-close.toml"),
    ),
    (
        "native-container",
        include_str!("../../../../../variants/native-container.toml"),
    ),
    (
        "containerd-native",
        include_str!("../../../../../variants/containerd-native.toml"),
    ),
    (
        "containerd-wasm",
        include_str!("../../../../../variants/containerd-wasm.toml"),
    ),
    (
        "containerd-wasm-artifact",
        include_str!("../../../../../variants/containerd-wasm-artifact.toml"),
    ),
    (
        "wasmtime-pooled",
        include_str!("../../../../../variants/wasmtime-pooled.toml"),
    ),
    (
        "wasmtime-pooled-async",
        include_str!("../../../../../variants/wasmtime-pooled-async.toml"),
    ),
    (
        "wasmtime-pooled-cwasm",
        include_str!("../../../../../variants/wasmtime-pooled-cwasm.toml"),
    ),
    (
        "wasmtime-recycled",
        include_str!("../../../../../variants/wasmtime-recycled.toml"),
    ),
    (
        "wasmtime-recycled-async",
        include_str!("../../../../../variants/wasmtime-recycled-async.toml"),
    ),
    (
        "wasmtime-shared",
        include_str!("../../../../../variants/wasmtime-shared.toml"),
    ),
    (
        "wasmtime-shared-async",
        include_str!("../../../../../variants/wasmtime-shared-async.toml"),
    ),
    (
        "wasmtime-naive",
        include_str!("../../../../../variants/wasmtime-naive.toml"),
    ),
    (
        "component-pooled",
        include_str!("../../../../../variants/component-pooled.toml"),
    ),
    (
        "component-pooled-cwasm",
        include_str!("../../../../../variants/component-pooled-cwasm.toml"),
    ),
    (
        "component-recycled",
        include_str!("../../../../../variants/component-recycled.toml"),
    ),
    (
        "component-wasmtime-serve",
        include_str!("../../../../../variants/component-wasmtime-serve.toml"),
    ),
    (
        "component-p3-wasmtime-serve",
        include_str!("../../../../../variants/component-p3-wasmtime-serve.toml"),
    ),
    (
        "component-p3-reused",
        include_str!("../../../../../variants/component-p3-reused.toml"),
    ),
    (
        "component-p3-reused-cwasm",
        include_str!("../../../../../variants/component-p3-reused-cwasm.toml"),
    ),
    (
        "js-component",
        include_str!("../../../../../variants/js-component.toml"),
    ),
    (
        "js-component-recycled",
        include_str!("../../../../../variants/js-component-recycled.toml"),
    ),
    (
        "js-component-wasmtime-serve",
        include_str!("../../../../../variants/js-component-wasmtime-serve.toml"),
    ),
    (
        "py-component",
        include_str!("../../../../../variants/py-component.toml"),
    ),
    (
        "py-component-recycled",
        include_str!("../../../../../variants/py-component-recycled.toml"),
    ),
    (
        "jco-serve",
        include_str!("../../../../../variants/jco-serve.toml"),
    ),
    (
        "wasmcloud-dev",
        include_str!("../../../../../variants/wasmcloud-dev.toml"),
    ),
    (
        "wasmcloud-host",
        include_str!("../../../../../variants/wasmcloud-host.toml"),
    ),
    (
        "wasmcloud-host-2",
        include_str!("../../../../../variants/wasmcloud-host-2.toml"),
    ),
    (
        "workerd-wasm",
        include_str!("../../../../../variants/workerd-wasm.toml"),
    ),
    (
        "envoy-native",
        include_str!("../../../../../variants/envoy-native.toml"),
    ),
    (
        "envoy-wasm-v8",
        include_str!("../../../../../variants/envoy-wasm-v8.toml"),
    ),
    (
        "envoy-wasm-wasmtime",
        include_str!("../../../../../variants/envoy-wasm-wasmtime.toml"),
    ),
    (
        "envoy-wasm-wamr",
        include_str!("../../../../../variants/envoy-wasm-wamr.toml"),
    ),
    (
        "wazero-gateway",
        include_str!("../../../../../variants/wazero-gateway.toml"),
    ),
    (
        "wazero-gateway-shared",
        include_str!("../../../../../variants/wazero-gateway-shared.toml"),
    ),
    (
        "fastly-viceroy",
        include_str!("../../../../../variants/fastly-viceroy.toml"),
    ),
    (
        "workerd-js",
        include_str!("../../../../../variants/workerd-js.toml"),
    ),
    (
        "wasmtime-cli",
        include_str!("../../../../../variants/wasmtime-cli.toml"),
    ),
    (
        "wasmtime-cli-cwasm",
        include_str!("../../../../../variants/wasmtime-cli-cwasm.toml"),
    ),
    (
        "wasmedge-cli",
        include_str!("../../../../../variants/wasmedge-cli.toml"),
    ),
    (
        "node-http",
        include_str!("../../../../../variants/node-http.toml"),
    ),
    (
        "bun-http",
        include_str!("../../../../../variants/bun-http.toml"),
    ),
    (
        "deno-http",
        include_str!("../../../../../variants/deno-http.toml"),
    ),
    (
        "go-http",
        include_str!("../../../../../variants/go-http.toml"),
    ),
    ("c-O0", include_str!("../../../../../variants/c-O0.toml")),
    ("c-O3", include_str!("../../../../../variants/c-O3.toml")),
    (
        "wasm-socket-wasmtime",
        include_str!("../../../../../variants/wasm-socket-wasmtime.toml"),
    ),
    (
        "wasm-socket-wasmer",
        include_str!("../../../../../variants/wasm-socket-wasmer.toml"),
    ),
    (
        "wasm-socket-wasmer-llvm",
        include_str!("../../../../../variants/wasm-socket-wasmer-llvm.toml"),
    ),
    (
        "rust-socket",
        include_str!("../../../../../variants/rust-socket.toml"),
    ),
    (
        "native-portable",
        include_str!("../../../../../variants/native-portable.toml"),
    ),
    (
        "native-simd",
        include_str!("../../../../../variants/native-simd.toml"),
    ),
    (
        "wasmtime-cranelift",
        include_str!("../../../../../variants/wasmtime-cranelift.toml"),
    ),
    (
        "wasmtime-winch",
        include_str!("../../../../../variants/wasmtime-winch.toml"),
    ),
    (
        "wasmtime-pulley",
        include_str!("../../../../../variants/wasmtime-pulley.toml"),
    ),
    ("node", include_str!("../../../../../variants/node.toml")),
    ("bun", include_str!("../../../../../variants/bun.toml")),
    (
        "wazero-compiler",
        include_str!("../../../../../variants/wazero-compiler.toml"),
    ),
    (
        "wazero-interpreter",
        include_str!("../../../../../variants/wazero-interpreter.toml"),
    ),
    ("wasmi", include_str!("../../../../../variants/wasmi.toml")),
    ("wasm3", include_str!("../../../../../variants/wasm3.toml")),
    (
        "wasm2c",
        include_str!("../../../../../variants/wasm2c.toml"),
    ),
    (
        "wamr-aot",
        include_str!("../../../../../variants/wamr-aot.toml"),
    ),
    (
        "wamr-interp",
        include_str!("../../../../../variants/wamr-interp.toml"),
    ),
    (
        "wasmer-cranelift",
        include_str!("../../../../../variants/wasmer-cranelift.toml"),
    ),
    (
        "wasmer-singlepass",
        include_str!("../../../../../variants/wasmer-singlepass.toml"),
    ),
    (
        "wasmer-llvm",
        include_str!("../../../../../variants/wasmer-llvm.toml"),
    ),
];

/// Every variant a run can name: the built-in files, then the user's, and the HTTP/2 twins of
/// those that can serve it (`NAME-h2`, see [`VariantSpec::over_http2`]).
#[derive(Debug, Clone)]
pub struct Catalog {
    specs: Vec<(VariantSpec, String)>,
    http2_twins: Vec<VariantSpec>,
}

impl Catalog {
    /// The built-in variants.
    pub fn builtin() -> Self {
        let mut catalog = Self {
            specs: Vec::new(),
            http2_twins: Vec::new(),
        };
        for (name, text) in BUILTIN {
            let origin = format!("built-in variant file variants/{name}.toml");
            let spec = VariantSpec::parse(text, &origin)
                .unwrap_or_else(|e| panic!("{e:#}: a built-in variant must parse"));
            assert_eq!(
                &spec.name, name,
                "{origin}: name differs from the file name"
            );
            // The same path as a user's file: its HTTP/2 twin, and no name taken twice.
            catalog
                .add(spec, origin)
                .unwrap_or_else(|e| panic!("{e:#}: built-in variants must not clash"));
        }
        catalog
    }

    /// The built-in variants and the user's variant files.
    pub fn with_files(files: &[std::path::PathBuf]) -> anyhow::Result<Self> {
        let mut catalog = Self::builtin();
        for f in files {
            catalog.add_file(f)?;
        }
        Ok(catalog)
    }

    /// Adds a user's variant file.
    pub fn add_file(&mut self, path: &Path) -> anyhow::Result<()> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read variant file {}: {e}", path.display()))?;
        let origin = format!("variant file {}", path.display());
        // `add` checks it, naming `origin`.
        let spec = toml::from_str(&text).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        self.add(spec, origin)
    }

    /// Adds a variant given inline (a suite's `[[variant]]`).
    pub fn add(&mut self, spec: VariantSpec, origin: String) -> anyhow::Result<()> {
        spec.validate()
            .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        if let Some((_, other)) = self.specs.iter().find(|(s, _)| s.name == spec.name) {
            anyhow::bail!(
                "{origin}: a variant named {:?} is already defined by {other}; give yours another name",
                spec.name
            );
        }
        if let Some(twin) = self.http2_twins.iter().find(|s| s.name == spec.name) {
            anyhow::bail!(
                "{origin}: {:?} names the HTTP/2 twin of {:?}; give yours another name",
                spec.name,
                twin.name.trim_end_matches(super::HTTP2_SUFFIX)
            );
        }
        if let Some(twin) = spec.over_http2() {
            anyhow::ensure!(
                !self.specs.iter().any(|(s, _)| s.name == twin.name),
                "{origin}: its HTTP/2 twin would be named {:?}, which another variant has",
                twin.name
            );
            self.http2_twins.push(twin);
        }
        self.specs.push((spec, origin));
        Ok(())
    }

    pub fn find(&self, name: &str) -> anyhow::Result<&VariantSpec> {
        self.specs
            .iter()
            .map(|(s, _)| s)
            .chain(&self.http2_twins)
            .find(|s| s.name == name)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "unknown variant {name:?}: known variants are {} (or add your own with --variant-file)",
                    self.names().join(", ")
                )
            })
    }

    /// The HTTP/2 twin of the variant `base`, if it has one.
    pub fn http2_twin(&self, base: &str) -> Option<&VariantSpec> {
        let name = format!("{base}{}", super::HTTP2_SUFFIX);
        self.http2_twins.iter().find(|s| s.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.specs.iter().map(|(s, _)| s.name.as_str()).collect()
    }

    pub fn all(&self) -> impl Iterator<Item = &VariantSpec> {
        self.specs.iter().map(|(s, _)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variant::tests::GOOD;

    #[test]
    fn every_builtin_file_is_listed_and_parses() {
        let catalog = Catalog::builtin();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../variants");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.strip_suffix(".toml").map(str::to_owned)
            })
            .collect();
        on_disk.sort();
        let mut listed: Vec<&str> = catalog.names();
        listed.sort();
        assert_eq!(listed, on_disk, "variants/ and BUILTIN differ");
    }

    #[test]
    fn a_variant_that_says_how_it_serves_http2_has_a_twin_whose_name_is_its_own() {
        let mut c = Catalog::builtin();
        assert!(c.find("native-h2").is_ok() && c.http2_twin("native-close").is_none());
        let taken = VariantSpec::parse(&GOOD.replace("my-server", "native-h2"), "t").unwrap();
        let e = c.add(taken, "mine.toml".into()).unwrap_err().to_string();
        assert!(e.contains("HTTP/2 twin of \"native\""), "{e}");
        let mine = GOOD.replace(
            "address = \"port\"",
            "address = \"port\"\nhttp2_args = [\"--h2\"]",
        );
        c.add(VariantSpec::parse(&mine, "t").unwrap(), "mine.toml".into())
            .unwrap();
        let twin = c.find("my-server-h2").unwrap();
        assert_eq!(twin.start.as_ref().unwrap().command.last().unwrap(), "--h2");
        assert!(twin.start.as_ref().unwrap().http2_args.is_empty());
        let e = VariantSpec::parse(&format!("protocol = \"h2\"\n{mine}"), "t").unwrap_err();
        assert!(e.to_string().contains("already speaks h2"), "{e}");
    }

    #[test]
    fn a_user_variant_cannot_take_a_builtin_name() {
        let mut c = Catalog::builtin();
        let spec = VariantSpec::parse(&GOOD.replace("my-server", "native"), "t").unwrap();
        let e = c.add(spec, "mine.toml".into()).unwrap_err().to_string();
        assert!(
            e.contains("already defined by built-in variant file"),
            "{e}"
        );
        c.add(VariantSpec::parse(GOOD, "t").unwrap(), "mine.toml".into())
            .unwrap();
        assert_eq!(c.find("my-server").unwrap().about, "a server of mine");
        let e = c.find("nope").unwrap_err().to_string();
        assert!(
            e.contains("my-server") && e.contains("--variant-file"),
            "{e}"
        );
    }

    #[test]
    fn the_wasmtime_cli_is_the_wasmtime_the_gateway_embeds() {
        let lock = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../Cargo.lock"),
        )
        .unwrap();
        let embedded = lock
            .split("[[package]]")
            .find(|p| p.contains("\nname = \"wasmtime\"\n"))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
            .map(|v| v.trim_matches('"').to_owned())
            .expect("wasmtime in Cargo.lock");
        let c = Catalog::builtin();
        // Every variant that runs the Wasmtime CLI.
        let cli: Vec<&VariantSpec> = c
            .all()
            .filter(|v| {
                v.requires
                    .iter()
                    .any(|r| r.tool.as_deref() == Some("wasmtime"))
            })
            .collect();
        assert!(
            cli.len() >= 3,
            "wasmtime-cli, wasmtime-cli-cwasm, wasm-socket-wasmtime"
        );
        for v in cli {
            let wasmtime = v
                .requires
                .iter()
                .find(|r| r.tool.as_deref() == Some("wasmtime"));
            let install = wasmtime.unwrap().install.clone().unwrap();
            assert_eq!(install.version(), embedded, "{}", v.name);
        }
        // The containerd shim's engine, and the engine runner's.
        for (variant, tool) in [
            ("containerd-wasm", "containerd-shim-wasmlab-v1"),
            ("wasmtime-cranelift", "wasmlab-engine-wasmtime"),
        ] {
            let spec = c.find(variant).unwrap();
            let r = spec
                .requires
                .iter()
                .find(|r| r.tool.as_deref() == Some(tool));
            let install = r.unwrap().install.clone().unwrap();
            assert_eq!(install.version(), embedded, "{variant}");
        }
    }

    #[test]
    fn own_binaries_and_core_guest() {
        let c = Catalog::builtin();
        let pooled = c.find("wasmtime-pooled").unwrap();
        assert_eq!(pooled.own_binaries(), ["wasmlab-gateway-wasm"]);
        assert!(pooled.runs_core_guest());
        assert!(!c.find("native").unwrap().runs_core_guest());
        assert_eq!(
            c.find("wasmtime-cli").unwrap().own_binaries(),
            ["wasmlab-gateway-process"]
        );
    }
}
