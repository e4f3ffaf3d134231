//! The source tree's shape: within every crate of the workspace, the modules at its root
//! (`src/a.rs` or `src/a/`) refer to each other without a circle, so each can be read, and
//! changed, after those it uses (docs/layout.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's root modules and, for each, the others its code names (`crate::other`).
type Graph = BTreeMap<String, BTreeSet<String>>;

#[test]
fn no_crate_has_a_circle_of_modules() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../..")
        .canonicalize()
        .expect("the workspace");
    let mut crates = Vec::new();
    find_crates(&workspace, &mut crates);
    assert!(
        crates.len() > 20,
        "found only {} crates under {}",
        crates.len(),
        workspace.display()
    );
    let mut circles = Vec::new();
    for src in &crates {
        for circle in circles_of(&graph_of(src)) {
            let at = src.strip_prefix(&workspace).unwrap_or(src);
            circles.push(format!("{}: {}", at.display(), circle.join(" ↔ ")));
        }
    }
    assert!(
        circles.is_empty(),
        "modules in a circle:\n{}",
        circles.join("\n")
    );
}

#[test]
fn a_circle_is_found() {
    let mut g = Graph::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    g.entry("d".into()).or_default().insert("a".into());
    assert_eq!(circles_of(&g), vec![vec!["a", "b", "c"]]);
    g.get_mut("c").unwrap().clear();
    assert!(circles_of(&g).is_empty());
    // Named in code, not in comments or a test module.
    let names = BTreeSet::from(["x".to_owned(), "y".to_owned()]);
    let text = "// crate::y\nuse crate::{x, y::Z};\n#[cfg(test)]\nmod tests { crate::x::f(); }";
    assert_eq!(
        named(text, &names),
        BTreeSet::from(["x".into(), "y".into()])
    );
    assert!(named("/// see [`crate::x`]\nfn f() {}", &names).is_empty());
}

/// Every `src` directory of a crate under `dir` (not build outputs or tools).
fn find_crates(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.join("Cargo.toml").is_file() && dir.join("src").is_dir() {
        out.push(dir.join("src"));
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if e.path().is_dir()
            && !name.starts_with('.')
            && !["target", "tools", "results", "node_modules", "src"].contains(&name.as_ref())
        {
            find_crates(&e.path(), out);
        }
    }
}

/// The root modules of the crate at `src` and what each names; `src/bin` is left out (each of
/// its files is a crate of its own).
fn graph_of(src: &Path) -> Graph {
    let mut files: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = e.path();
            let rel = path.strip_prefix(src).expect("under src").to_path_buf();
            let top = rel
                .components()
                .next()
                .map(|c| {
                    c.as_os_str()
                        .to_string_lossy()
                        .trim_end_matches(".rs")
                        .to_owned()
                })
                .unwrap_or_default();
            if top == "bin" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs")
                && !["lib", "main"].contains(&top.as_str())
                && !rel
                    .components()
                    .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "tests.rs")
            {
                files.entry(top).or_default().push(path);
            }
        }
    }
    let names: BTreeSet<String> = files.keys().cloned().collect();
    files
        .iter()
        .map(|(module, paths)| {
            let mut uses = BTreeSet::new();
            for p in paths {
                uses.extend(named(
                    &std::fs::read_to_string(p).expect("readable"),
                    &names,
                ));
            }
            uses.remove(module);
            (module.clone(), uses)
        })
        .collect()
}

/// The modules among `names` that `text` names as `crate::m` or in `use crate::{m, …}`, outside
/// comments and its `#[cfg(test)]` module.
fn named(text: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            found.extend(group.split(',').map(ident));
        } else {
            found.insert(ident(rest));
        }
    }
    found.retain(|m| names.contains(m));
    found
}

/// Each set of modules that reach one another (a strongly connected component of more than one),
/// sorted.
fn circles_of(g: &Graph) -> Vec<Vec<&str>> {
    let reach = |from: &str| -> BTreeSet<&str> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(m) = todo.pop() {
            for n in g.get(m).into_iter().flatten() {
                if seen.insert(n.as_str()) {
                    todo.push(n);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&str, BTreeSet<&str>> =
        g.keys().map(|m| (m.as_str(), reach(m))).collect();
    let mut circles: Vec<Vec<&str>> = Vec::new();
    for (m, r) in &reached {
        if !r.contains(m) || circles.iter().any(|c| c.contains(m)) {
            continue;
        }
        let circle: Vec<&str> = r
            .iter()
            .filter(|n| reached.get(*n).is_some_and(|back| back.contains(m)))
            .copied()
            .collect();
        circles.push(circle);
    }
    circles
}

/// The lab's crates, in the order the workspace lists them (its phases), each with the crates
/// of the workspace it depends on (not its dev-dependencies).
fn lab_crates(workspace: &Path) -> Vec<(String, BTreeSet<String>)> {
    let root: toml::Table = toml::from_str(
        &std::fs::read_to_string(workspace.join("Cargo.toml")).expect("the workspace's manifest"),
    )
    .expect("a manifest");
    let members = root["workspace"]["members"].as_array().expect("members");
    members
        .iter()
        .filter_map(|m| m.as_str())
        .filter(|m| m.starts_with("crates/lab/"))
        .map(|m| {
            let (name, deps) = manifest(&workspace.join(m));
            (
                name,
                deps.into_iter()
                    .filter(|d| d.starts_with("wasmlab"))
                    .collect(),
            )
        })
        .collect()
}

/// A package's name and the names of its dependencies.
fn manifest(dir: &Path) -> (String, BTreeSet<String>) {
    let t: toml::Table = toml::from_str(
        &std::fs::read_to_string(dir.join("Cargo.toml")).expect("a crate's manifest"),
    )
    .expect("a manifest");
    let name = t["package"]["name"].as_str().expect("a name").to_owned();
    let deps = t
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|d| d.keys().cloned().collect())
        .unwrap_or_default();
    (name, deps)
}

#[test]
fn each_lab_crate_depends_only_on_those_before_it() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let crates = lab_crates(&workspace);
    assert!(crates.len() >= 8, "{crates:?}");
    let lab: BTreeSet<&str> = crates.iter().map(|(n, _)| n.as_str()).collect();
    let mut before = BTreeSet::new();
    for (name, deps) in &crates {
        for d in deps.iter().filter(|d| lab.contains(d.as_str())) {
            assert!(
                before.contains(d.as_str()),
                "{name} depends on {d}, listed after it in the workspace's members (docs/layout.md)"
            );
        }
        before.insert(name.as_str());
    }
}

/// The data model, and what reads results (record, analysis, report), hold no runtime: no
/// async executor, HTTP or TLS stack reaches them through the workspace's crates.
#[test]
fn the_data_model_and_its_readers_depend_on_no_runtime() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let dirs: BTreeMap<String, PathBuf> = ["crates", "crates/lab"]
        .iter()
        .flat_map(|d| std::fs::read_dir(workspace.join(d)).expect("crates"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .map(|p| (manifest(&p).0, p))
        .collect();
    for start in [
        "wasmlab-model",
        "wasmlab-record",
        "wasmlab-analysis",
        "wasmlab-report",
    ] {
        let mut seen = BTreeSet::from([start.to_owned()]);
        let mut todo = vec![start.to_owned()];
        while let Some(c) = todo.pop() {
            let (_, deps) = manifest(&dirs[&c]);
            for d in deps {
                assert!(
                    !["tokio", "hyper", "rustls", "wasmlab-load"].contains(&d.as_str()),
                    "{start} reaches {d} through {c}"
                );
                if dirs.contains_key(&d) && seen.insert(d.clone()) {
                    todo.push(d);
                }
            }
        }
    }
}
