//! Suites: what a run measures. A server suite ([`ServerSuite`]) names server variants,
//! workloads, concurrency levels and the method's parameters; a program suite
//! ([`ProgramSuite`], `kind = "programs"`) names engines and a program set to run in each. The
//! built-in suites are the files in `suites/` (embedded in the binary); a user's is a file of
//! either shape.

mod programs;
mod servers;

use std::path::Path;

pub use programs::ProgramSuite;
pub use servers::{ColdStart, EqualLoad, OpenLoop, Rates, ServerSuite, Warm};

const BUILTIN: &[(&str, &str)] = &[
    ("quick", include_str!("../../../../../suites/quick.toml")),
    (
        "gateway-study",
        include_str!("../../../../../suites/gateway-study.toml"),
    ),
    (
        "isolation",
        include_str!("../../../../../suites/isolation.toml"),
    ),
    ("http2", include_str!("../../../../../suites/http2.toml")),
    (
        "component",
        include_str!("../../../../../suites/component.toml"),
    ),
    (
        "net-limits",
        include_str!("../../../../../suites/net-limits.toml"),
    ),
    (
        "wasi-test",
        include_str!("../../../../../suites/wasi-test.toml"),
    ),
    (
        "wasmcloud",
        include_str!("../../../../../suites/wasmcloud.toml"),
    ),
    (
        "platforms",
        include_str!("../../../../../suites/platforms.toml"),
    ),
    (
        "continuous",
        include_str!("../../../../../suites/continuous.toml"),
    ),
    (
        "containerd",
        include_str!("../../../../../suites/containerd.toml"),
    ),
    (
        "proxies-and-edges",
        include_str!("../../../../../suites/proxies-and-edges.toml"),
    ),
    (
        "libsodium",
        include_str!("../../../../../suites/libsodium.toml"),
    ),
    (
        "libsodium-compilers",
        include_str!("../../../../../suites/libsodium-compilers.toml"),
    ),
    (
        "libsodium-quick",
        include_str!("../../../../../suites/libsodium-quick.toml"),
    ),
];

/// A suite of either kind.
#[derive(Debug, Clone)]
#[allow(
    clippy::large_enum_variant,
    reason = "read once per run and moved a few times: boxing would save nothing measurable"
)]
pub enum Suite {
    Servers(ServerSuite),
    Programs(ProgramSuite),
}

impl Suite {
    /// Reads `spec`, a built-in suite's name or a path to a TOML file, as the kind it declares
    /// (`kind = "programs"`, or none for a server suite). Errors name the file.
    pub fn read(spec: &str) -> anyhow::Result<Self> {
        let (text, origin) = text(spec)?;
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
        match table.get("kind").map(|k| k.as_str()) {
            None => ServerSuite::parse_in(&text, &base_dir(spec))
                .map(Suite::Servers)
                .map_err(|e| anyhow::anyhow!("{origin}: {e:#}")),
            Some(Some("programs")) => ProgramSuite::parse(&text, &origin).map(Suite::Programs),
            Some(other) => anyhow::bail!(
                "{origin}: unknown kind {}: a suite is a server suite (no `kind`) or kind = \"programs\"",
                other.map_or_else(|| "(not a string)".to_owned(), |k| format!("{k:?}"))
            ),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Suite::Servers(s) => &s.name,
            Suite::Programs(p) => &p.name,
        }
    }
}

/// A suite's text as a starting point for one's own: a built-in suite or a file as written, and
/// for a server suite, after it, the definitions of the workloads it names from wasmlab's, so
/// every workload it measures or checks is there to read and edit.
pub fn show(spec: &str) -> anyhow::Result<String> {
    let (text, origin) = text(spec)?;
    let mut out = text.trim_end().to_owned();
    if let Suite::Servers(suite) = Suite::read(spec)? {
        let own: toml::Table = toml::from_str(&text)?;
        let own_names: Vec<&str> = own
            .get("workload")
            .and_then(|w| w.as_array())
            .into_iter()
            .flatten()
            .filter_map(|w| w.get("name")?.as_str())
            .collect();
        let from_library = crate::workload::Definitions {
            workloads: suite
                .definitions
                .iter()
                .filter(|w| !own_names.contains(&w.name.as_str()))
                .cloned()
                .collect(),
        };
        if !from_library.workloads.is_empty() {
            let names: Vec<&str> = from_library
                .workloads
                .iter()
                .map(|w| w.name.as_str())
                .collect();
            out.push_str(&format!(
                "\n\n# The workloads {origin} names from wasmlab's (suites/workloads.toml): {}.\n\
                 # Edit them, or add your own the same way (docs/workloads.md has every field).\n\n",
                names.join(", ")
            ));
            out.push_str(toml::to_string(&from_library)?.trim_end());
        }
    }
    Ok(out)
}

/// The directory a suite's relative paths start from: a suite file's own, else the current one.
fn base_dir(spec: &str) -> std::path::PathBuf {
    let path = Path::new(spec);
    match path.parent() {
        Some(dir) if path.is_file() && !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    }
}

/// The TOML text of a built-in suite.
pub fn builtin(name: &str) -> anyhow::Result<&'static str> {
    BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "unknown suite {name:?}: use one of {} or a path to a .toml file",
                builtin_names()
            )
        })
}

fn builtin_names() -> String {
    BUILTIN
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A suite's text and where it came from: a built-in suite's name, or a path to a TOML file.
fn text(spec: &str) -> anyhow::Result<(String, String)> {
    let path = Path::new(spec);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read suite file {spec}: {e}"))?;
        Ok((text, format!("suite file {spec}")))
    } else if spec.ends_with(".toml") || spec.contains('/') {
        anyhow::bail!("suite file {spec} does not exist");
    } else {
        Ok((builtin(spec)?.to_owned(), format!("built-in suite {spec}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse() {
        for (name, _) in BUILTIN {
            let s = Suite::read(name).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert_eq!(s.name(), *name);
        }
        let Suite::Servers(study) = Suite::read("gateway-study").unwrap() else {
            panic!("gateway-study is a server suite")
        };
        assert_eq!(study.connections, [10, 50, 100, 200, 400, 800, 1200]);
        assert_eq!(study.workloads, ["hello", "compute", "proxy", "state"]);
    }

    #[test]
    fn unknown_suites_and_kinds_say_why() {
        let e = format!("{:#}", Suite::read("no-such-suite").unwrap_err());
        assert!(e.contains("unknown suite") && e.contains("quick"), "{e}");
        let e = format!("{:#}", Suite::read("missing.toml").unwrap_err());
        assert!(e.contains("does not exist"), "{e}");
        let dir = std::env::temp_dir().join(format!("wasmlab-suite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("odd.toml");
        std::fs::write(&file, "kind = \"servers\"\nname = \"odd\"\n").unwrap();
        let e = format!("{:#}", Suite::read(file.to_str().unwrap()).unwrap_err());
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            e.contains("odd.toml") && e.contains("unknown kind \"servers\""),
            "{e}"
        );
    }
}
