//! A user's wasi:http component (`wasmlab run --component PATH`), as the lab read it: which WASI
//! it serves, what it imports and exports, how large it is. Planning reads the file and puts the
//! component in every host of its WASI version (`VariantSpec::hosting`); run.json records this.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The wasi:http a component serves, by the interface it exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WasiHttp {
    /// WASI 0.2: exports `wasi:http/incoming-handler@0.2.x` (the `wasi:http/proxy` world).
    #[serde(rename = "0.2")]
    P2,
    /// WASI 0.3: exports `wasi:http/handler@0.3.x` (the `wasi:http/service` world).
    #[serde(rename = "0.3")]
    P3,
}

impl WasiHttp {
    /// The interface a component of this WASI exports, without its patch version.
    pub fn handler_export(self) -> &'static str {
        match self {
            WasiHttp::P2 => "wasi:http/incoming-handler@0.2",
            WasiHttp::P3 => "wasi:http/handler@0.3",
        }
    }

    /// The template placeholder that names wasmlab's own component of this WASI.
    pub fn placeholder(self) -> &'static str {
        match self {
            WasiHttp::P2 => "{http_guest}",
            WasiHttp::P3 => "{http_p3_guest}",
        }
    }

    pub fn version(self) -> &'static str {
        match self {
            WasiHttp::P2 => "0.2",
            WasiHttp::P3 => "0.3",
        }
    }
}

/// The interfaces of WASI 0.2's `wasi:http/proxy` world (its imports), without versions: a
/// component that imports nothing else runs in any proxy host.
pub const PROXY_IMPORTS: &[&str] = &[
    "wasi:http/types",
    "wasi:http/outgoing-handler",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:random/random",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/stdin",
];

/// A user's component, as read from its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserComponent {
    /// Its file, made absolute.
    pub path: String,
    /// What the variants that run it are named after: the file's stem in a variant name's
    /// alphabet (`my_api.wasm` → `my-api`; `my-api-in-component-pooled`).
    pub name: String,
    pub bytes: u64,
    pub wasi: WasiHttp,
    /// The world it fits, in words: `wasi:http/proxy` when it imports only that world's
    /// interfaces, else that with what it imports beyond (a host without those cannot run it).
    pub world: String,
    /// The names the component exports, as written in it (versions included).
    pub exports: Vec<String>,
    /// The names it imports.
    pub imports: Vec<String>,
    /// The environment the user gave it (`--component-env KEY=VALUE`), in every host; the host
    /// also gives it `WASMLAB_UPSTREAM`, the upstream's URL.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

impl UserComponent {
    /// The name of the variant that runs this component in `host`.
    pub fn variant_name(&self, host: &str) -> String {
        format!("{}-in-{host}", self.name)
    }

    /// The file's name, for people.
    pub fn file_name(&self) -> &str {
        std::path::Path::new(&self.path)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(&self.path)
    }
}

/// The variable every host gives a component: the URL of the lab's upstream, the one origin the
/// gateway lets a component send requests to.
pub const UPSTREAM_VAR: &str = "WASMLAB_UPSTREAM";

/// `--component-env`'s pairs as an environment: names a shell would take (letters, digits and
/// `_`, not starting with a digit), each once, `WASMLAB_UPSTREAM` the lab's.
pub fn environment(pairs: &[(String, String)]) -> Result<BTreeMap<String, String>, String> {
    let mut env = BTreeMap::new();
    for (k, v) in pairs {
        let what = format!("--component-env {k}={v}");
        if k.is_empty()
            || k.starts_with(|c: char| c.is_ascii_digit())
            || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(format!(
                "{what}: a variable's name is ASCII letters, digits and `_`, not starting with a digit"
            ));
        }
        if k == UPSTREAM_VAR {
            return Err(format!(
                "{what}: the lab gives every component {UPSTREAM_VAR} (its upstream's URL, where the \
                 gateway lets outgoing requests go); name yours otherwise"
            ));
        }
        if v.contains('\0') {
            return Err(format!("{what}: a value cannot hold a NUL byte"));
        }
        if env.insert(k.clone(), v.clone()).is_some() {
            return Err(format!("--component-env {k}: given twice"));
        }
    }
    Ok(env)
}

/// `stem` in a variant name's alphabet (ASCII letters, digits, `-`): every other run of
/// characters becomes one `-`; empty becomes `component`.
pub fn variant_stem(stem: &str) -> String {
    let mut out = String::new();
    for c in stem.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-').to_owned();
    if out.is_empty() {
        "component".into()
    } else {
        out
    }
}

/// The world a component of `wasi` with these imports fits, in words.
pub fn world(wasi: WasiHttp, imports: &[String]) -> String {
    match wasi {
        WasiHttp::P3 => "wasi:http/service (WASI 0.3)".into(),
        WasiHttp::P2 => {
            let beyond: Vec<&str> = imports
                .iter()
                .map(|i| i.split('@').next().unwrap_or(i))
                .filter(|i| !PROXY_IMPORTS.contains(i))
                .collect();
            if beyond.is_empty() {
                "wasi:http/proxy (WASI 0.2)".into()
            } else {
                format!(
                    "wasi:http/proxy (WASI 0.2) and beyond it {}",
                    beyond.join(", ")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stem_becomes_a_variant_name() {
        assert_eq!(variant_stem("my_api"), "my-api");
        assert_eq!(variant_stem("Hello World!!"), "hello-world");
        assert_eq!(variant_stem("__"), "component");
        assert_eq!(variant_stem("handler.component"), "handler-component");
    }

    #[test]
    fn an_environment_takes_shell_names_once_and_leaves_the_upstream_to_the_lab() {
        let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let env = environment(&[pair("API_KEY", "a=b {c}"), pair("_x1", "")]).unwrap();
        assert_eq!(env["API_KEY"], "a=b {c}");
        assert_eq!(env["_x1"], "");
        for (pairs, why) in [
            (vec![pair("1A", "v")], "not starting with a digit"),
            (vec![pair("A-B", "v")], "letters, digits and `_`"),
            (vec![pair("", "v")], "letters, digits"),
            (vec![pair(UPSTREAM_VAR, "v")], "name yours otherwise"),
            (vec![pair("A", "x\0y")], "NUL"),
            (
                vec![pair("A", "1"), pair("A", "2")],
                "--component-env A: given twice",
            ),
        ] {
            let e = environment(&pairs).unwrap_err();
            assert!(e.contains(why), "{pairs:?}: {e}");
        }
    }

    #[test]
    fn the_world_says_what_is_imported_beyond_the_proxy() {
        let proxy = vec![
            "wasi:http/types@0.2.6".to_owned(),
            "wasi:io/streams@0.2.6".into(),
        ];
        assert_eq!(world(WasiHttp::P2, &proxy), "wasi:http/proxy (WASI 0.2)");
        let mut more = proxy.clone();
        more.push("wasi:cli/environment@0.2.6".into());
        more.push("wasi:filesystem/types@0.2.6".into());
        assert_eq!(
            world(WasiHttp::P2, &more),
            "wasi:http/proxy (WASI 0.2) and beyond it wasi:cli/environment, wasi:filesystem/types"
        );
    }
}
