//! `wasmlab run --component PATH`: a user's wasi:http component read (a component, not a core
//! module; which WASI's handler it exports; what it imports), then put in the component hosts the
//! run names: each host `H` gets a twin `NAME-in-H` that runs the user's component where `H`
//! runs wasmlab's, right after it in the run's order, so that the host's floor (wasmlab's
//! minimal component) and the user's component are measured side by side.

use std::path::Path;

use wasmlab_model::component::{self, UserComponent, WasiHttp};
use wasmlab_model::suite::ServerSuite;
use wasmlab_model::variant::Catalog;

/// The built-in suite a run with `--component` and no `--suite` uses: every component host, on
/// `GET /`.
pub const SUITE: &str = "component";

/// Reads the component at `path`: every way it can be wrong is an error naming the flag and what
/// to give instead, before anything is built or started.
pub fn inspect(path: &Path) -> anyhow::Result<UserComponent> {
    inspect_as(path, &format!("--component {}", path.display()))
}

/// As [`inspect`], its errors starting with `what` (where the path was given).
pub fn inspect_as(path: &Path, what: &str) -> anyhow::Result<UserComponent> {
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::anyhow!("{what}: no such file"),
        _ => anyhow::anyhow!("{what}: cannot read it: {e}"),
    })?;
    anyhow::ensure!(
        bytes.starts_with(b"\0asm"),
        "{what}: not WebAssembly (a .wasm file starts with the bytes \\0asm; this one starts with {:?})",
        String::from_utf8_lossy(&bytes[..bytes.len().min(4)])
    );
    anyhow::ensure!(
        !wasmparser::Parser::is_core_wasm(&bytes),
        "{what}: a core module, not a component. --component takes a wasi:http component (cargo's \
         wasm32-wasip2 target, componentize-js, componentize-py, or `wasm-tools component new` make \
         one); a core module in wasmlab's own guest ABI (docs/guest-abi.md) goes to --wasm"
    );
    anyhow::ensure!(
        wasmparser::Parser::is_component(&bytes),
        "{what}: WebAssembly of a version or layer this wasmlab does not read (its header: {:02x?})",
        &bytes[..bytes.len().min(8)]
    );
    let (imports, exports) =
        outer_names(&bytes).map_err(|e| anyhow::anyhow!("{what}: not a valid component: {e}"))?;
    let wasi = [WasiHttp::P2, WasiHttp::P3]
        .into_iter()
        .find(|w| exports.iter().any(|e| e.starts_with(w.handler_export())))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{what}: exports no wasi:http handler (it exports {}): a component served over \
                 HTTP exports wasi:http/incoming-handler@0.2.x (WASI 0.2's wasi:http/proxy world) \
                 or wasi:http/handler@0.3.x (WASI 0.3's wasi:http/service)",
                match exports.is_empty() {
                    true => "nothing".to_owned(),
                    false => exports.join(", "),
                }
            )
        })?;
    let path = path
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    Ok(UserComponent {
        name: component::variant_stem(stem),
        path: path.display().to_string(),
        bytes: bytes.len() as u64,
        world: component::world(wasi, &imports),
        wasi,
        exports,
        imports,
        env: Default::default(),
    })
}

/// The names the outermost component imports and exports (not those of the modules and
/// components nested in it).
fn outer_names(bytes: &[u8]) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    use wasmparser::{Parser, Payload};
    let (mut imports, mut exports, mut depth) = (Vec::new(), Vec::new(), 0usize);
    for payload in Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::Version { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(s) if depth == 1 => {
                for i in s {
                    imports.push(i?.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(s) if depth == 1 => {
                for e in s {
                    exports.push(e?.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    Ok((imports, exports))
}

/// Puts `components` in the hosts `suite` names: each host of a component's WASI gets its twin
/// (added to `catalog`) right after it, in the measured variants and in those cold-started. A
/// suite that names no host at all (a user's, with the user's routes) gets the twins of every
/// host the built-in component suite names, without those hosts: wasmlab's component serves
/// wasmlab's routes, not the user's. In the built-in component suite, a host that no component
/// fits is left out: a floor with nothing to compare it with.
pub fn put_in_hosts(
    suite: &mut ServerSuite,
    catalog: &mut Catalog,
    components: &[UserComponent],
) -> anyhow::Result<()> {
    if components.is_empty() {
        return Ok(());
    }
    let mut names: Vec<&str> = components.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        anyhow::bail!(
            "--component: two components would be named {:?} (their files' names): rename one",
            w[0]
        );
    }
    fn is_host(catalog: &Catalog, v: &str) -> bool {
        catalog.find(v).is_ok_and(|s| s.component_host().is_some())
    }
    // A twin named by the suite or `--variant` (`hello-in-jco-serve`): made now, run alone.
    let mut twins_named = false;
    for v in suite.variants.iter().chain(&suite.cold_start_variants()) {
        if catalog.find(v).is_ok() {
            continue;
        }
        for c in components {
            let Some(host) = v.strip_prefix(&format!("{}-in-", c.name)) else {
                continue;
            };
            let spec = catalog.find(host).map_err(|_| {
                anyhow::anyhow!(
                    "{v}: your component {} in {host}, but there is no variant {host}",
                    c.file_name()
                )
            })?;
            let twin = spec.hosting(c)?.ok_or_else(|| {
                anyhow::anyhow!(
                    "{v}: {host} hosts no {} component ({})",
                    c.world,
                    match spec.component_host() {
                        Some(w) => format!("it runs WASI {}'s", w.version()),
                        None => "it runs none".into(),
                    }
                )
            })?;
            catalog.add(twin, format!("--component {} in {host}", c.path))?;
            twins_named = true;
        }
    }
    let named_a_host = twins_named
        || suite
            .variants
            .iter()
            .chain(&suite.cold_start_variants())
            .any(|v| is_host(catalog, v));
    let builtin = suite.name == SUITE;
    // `list` with each host's twins right after it. `floors`: the hosts stay (where the suite
    // named them; in the built-in suite only those with a twin), and so do the other variants;
    // else the twins alone.
    let with_twins = |catalog: &mut Catalog, list: &[String], floors: bool| {
        let mut out = Vec::new();
        for v in list {
            let mut twins = Vec::new();
            if let Ok(spec) = catalog.find(v).cloned() {
                for c in components {
                    let Some(twin) = spec.hosting(c)? else {
                        continue;
                    };
                    if catalog.find(&twin.name).is_err() {
                        let origin = format!("--component {} in {v}", c.path);
                        catalog.add(twin.clone(), origin)?;
                    }
                    twins.push(twin.name);
                }
            }
            let keep = match is_host(catalog, v) {
                false => floors,
                true => floors && (!twins.is_empty() || !builtin),
            };
            if keep {
                out.push(v.clone());
            }
            out.extend(twins);
        }
        anyhow::Ok(out)
    };
    if named_a_host {
        suite.variants = with_twins(catalog, &suite.variants, true)?;
        if let Some(c) = &mut suite.cold_start
            && !c.variants.is_empty()
        {
            c.variants = with_twins(catalog, &c.variants, true)?;
        }
    } else {
        let ours = match wasmlab_model::suite::Suite::read(SUITE)? {
            wasmlab_model::suite::Suite::Servers(s) => s,
            wasmlab_model::suite::Suite::Programs(_) => unreachable!("a server suite"),
        };
        for twin in with_twins(catalog, &ours.variants, false)? {
            if !suite.variants.contains(&twin) {
                suite.variants.push(twin);
            }
        }
        // An empty list cold-starts every measured variant, the twins with them.
        if let Some(c) = &mut suite.cold_start
            && !c.variants.is_empty()
        {
            c.variants
                .extend(with_twins(catalog, &ours.cold_start_variants(), false)?);
        }
    }
    anyhow::ensure!(
        suite
            .variants
            .iter()
            .any(|v| catalog.find(v).is_ok_and(|s| s.component.is_some())),
        "--component: no host of the run serves {}: {}",
        components
            .iter()
            .map(|c| format!("{} ({})", c.file_name(), c.world))
            .collect::<Vec<_>>()
            .join(", "),
        "the built-in component suite names a host for WASI 0.2 and 0.3 components"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn what_is_not_a_wasi_http_component_is_refused_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let err = |p: &Path| inspect(p).unwrap_err().to_string();
        let e = err(&dir.path().join("nope.wasm"));
        assert!(e.contains("nope.wasm: no such file"), "{e}");
        let e = err(&write(dir.path(), "text.wasm", b"hello"));
        assert!(e.contains("not WebAssembly"), "{e}");
        // The smallest core module, and the smallest component.
        let e = err(&write(dir.path(), "core.wasm", b"\0asm\x01\0\0\0"));
        assert!(
            e.contains("a core module, not a component") && e.contains("--wasm"),
            "{e}"
        );
        let e = err(&write(dir.path(), "empty.wasm", b"\0asm\x0d\0\x01\0"));
        assert!(
            e.contains("exports no wasi:http handler (it exports nothing)"),
            "{e}"
        );
        let e = err(&write(dir.path(), "cut.wasm", b"\0asm\x0d\0\x01\0\x0b\x05"));
        assert!(e.contains("not a valid component"), "{e}");
    }

    #[test]
    fn wasmlabs_own_components_read_as_a_user_s_would() {
        let p2 = inspect(Path::new(wasmlab_guest_artifacts::HTTP_PATH)).unwrap();
        assert_eq!(p2.wasi, WasiHttp::P2);
        assert!(
            p2.world.contains("beyond it wasi:cli/environment"),
            "{}",
            p2.world
        );
        let p3 = inspect(Path::new(wasmlab_guest_artifacts::HTTP_P3_PATH)).unwrap();
        assert_eq!(p3.wasi, WasiHttp::P3);
        assert!(p3.bytes > 0 && !p3.imports.is_empty());
    }

    fn suite(text: &str) -> ServerSuite {
        match wasmlab_model::suite::Suite::read(text).unwrap() {
            wasmlab_model::suite::Suite::Servers(s) => s,
            wasmlab_model::suite::Suite::Programs(_) => unreachable!(),
        }
    }

    #[test]
    fn each_host_gets_the_component_right_after_it_and_the_other_wasi_s_hosts_go() {
        let mine = inspect(Path::new(wasmlab_guest_artifacts::HTTP_PATH)).unwrap();
        let mut s = suite(SUITE);
        let mut catalog = s.catalog(&[]).unwrap();
        put_in_hosts(&mut s, &mut catalog, std::slice::from_ref(&mine)).unwrap();
        let twin = mine.variant_name("component-pooled");
        let at = s.variants.iter().position(|v| *v == twin).unwrap();
        assert_eq!(s.variants[at - 1], "component-pooled");
        assert!(s.variants.contains(&"native".to_owned()));
        assert!(
            !s.variants.iter().any(|v| v.starts_with("component-p3")),
            "{:?}",
            s.variants
        );
        let spec = catalog.find(&twin).unwrap();
        assert_eq!(spec.component.as_deref(), Some(mine.path.as_str()));
        assert_eq!(spec.family, "yours");
        assert!(s.cold_start_variants().contains(&twin));
        // A host that answers 404 while it deploys (wasmCloud) waits for the user's component
        // until the start timeout, not for as long as it takes with wasmlab's; one that does not
        // keeps the default.
        let grace = |v: &str| {
            catalog
                .find(v)
                .unwrap()
                .start
                .as_ref()
                .unwrap()
                .ready_grace_secs
        };
        let most = wasmlab_model::variant::MOST_READY_GRACE_SECS;
        assert!(grace("wasmcloud-host").is_some_and(|g| g < most));
        assert_eq!(grace(&mine.variant_name("wasmcloud-host")), Some(most));
        assert_eq!(grace(&twin), None);
        s.check_variants(&catalog).unwrap();
    }

    #[test]
    fn a_twin_named_runs_alone_and_a_wrong_one_is_refused() {
        let mine = inspect(Path::new(wasmlab_guest_artifacts::HTTP_PATH)).unwrap();
        let twin = mine.variant_name("jco-serve");
        let named = |v: &str| {
            let mut s = suite(SUITE);
            s.variants = vec![v.to_owned()];
            if let Some(c) = &mut s.cold_start {
                c.variants = vec![v.to_owned()];
            }
            let mut catalog = s.catalog(&[]).unwrap();
            put_in_hosts(&mut s, &mut catalog, std::slice::from_ref(&mine)).map(|()| (s, catalog))
        };
        let (s, catalog) = named(&twin).unwrap();
        assert_eq!(s.variants, std::slice::from_ref(&twin));
        assert_eq!(s.cold_start_variants(), std::slice::from_ref(&twin));
        assert_eq!(
            catalog.find(&twin).unwrap().floor.as_deref(),
            Some("jco-serve")
        );
        s.check_variants(&catalog).unwrap();
        let e = named(&mine.variant_name("nowhere"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("there is no variant nowhere"), "{e}");
        let e = named(&mine.variant_name("component-p3-reused"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("hosts no") && e.contains("WASI 0.3"), "{e}");
    }
}
