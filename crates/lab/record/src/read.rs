//! Reading a results directory back, whichever kind of suite wrote it: run.json by its `kind`,
//! and samples.jsonl line by line, each checked to be the schema this wasmlab reads. A last line
//! cut short (a run killed mid-write) is skipped with a warning; any other bad line is an error
//! naming it.

use std::path::{Path, PathBuf};

use wasmlab_model::run::{PROGRAMS_KIND, ProgramRunInfo, Run, ServerRunInfo};
use wasmlab_model::sample::{SAMPLES_SCHEMA, SampleLine};

/// run.json and samples.jsonl of the results directory `dir`.
pub fn read_run(dir: &Path) -> anyhow::Result<Run> {
    let (path, value) = run_json(dir)?;
    let samples = dir.join("samples.jsonl");
    let bad = |e: serde_json::Error| anyhow::anyhow!("{}: {e}", path.display());
    match value.get("kind").and_then(|k| k.as_str()) {
        Some(PROGRAMS_KIND) => Ok(Run::Programs {
            info: Box::new(serde_json::from_value::<ProgramRunInfo>(value).map_err(bad)?),
            samples: read_samples(&samples)?,
        }),
        None => Ok(Run::Servers {
            info: Box::new(serde_json::from_value::<ServerRunInfo>(value).map_err(bad)?),
            samples: read_samples(&samples)?,
        }),
        Some(other) => unknown_kind(&path, other),
    }
}

/// run.json alone of the results directory `dir`, which must be a server suite's run.
pub fn read_server_info(dir: &Path) -> anyhow::Result<ServerRunInfo> {
    let (path, value) = run_json(dir)?;
    match value.get("kind").and_then(|k| k.as_str()) {
        None => {
            serde_json::from_value(value).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
        }
        Some(PROGRAMS_KIND) => anyhow::bail!(
            "{} is a run of a program suite, not of an HTTP suite",
            dir.display()
        ),
        Some(other) => unknown_kind(&path, other),
    }
}

/// run.json alone of the results directory `dir`, whichever kind of suite wrote it.
pub fn read_info(dir: &Path) -> anyhow::Result<RunInfo> {
    let (path, value) = run_json(dir)?;
    let bad = |e: serde_json::Error| anyhow::anyhow!("{}: {e}", path.display());
    match value.get("kind").and_then(|k| k.as_str()) {
        None => Ok(RunInfo::Servers(Box::new(
            serde_json::from_value(value).map_err(bad)?,
        ))),
        Some(PROGRAMS_KIND) => Ok(RunInfo::Programs(Box::new(
            serde_json::from_value(value).map_err(bad)?,
        ))),
        Some(other) => unknown_kind(&path, other),
    }
}

/// A run.json, by the kind of suite that wrote it.
pub enum RunInfo {
    Servers(Box<ServerRunInfo>),
    Programs(Box<ProgramRunInfo>),
}

/// The path of `dir`'s run.json and its contents, checked to be the schema this wasmlab reads.
fn run_json(dir: &Path) -> anyhow::Result<(PathBuf, serde_json::Value)> {
    anyhow::ensure!(dir.is_dir(), "{} is not a directory", dir.display());
    let path = dir.join("run.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        anyhow::anyhow!(
            "{} is not a wasmlab results directory: read {}: {e}",
            dir.display(),
            path.display()
        )
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let schema = value.get("schema").and_then(|s| s.as_u64());
    anyhow::ensure!(
        schema.is_none_or(|s| s == u64::from(SAMPLES_SCHEMA)),
        "{}: schema {} (this wasmlab reads schema {SAMPLES_SCHEMA})",
        path.display(),
        schema.unwrap_or_default()
    );
    Ok((path, value))
}

fn unknown_kind<T>(path: &Path, kind: &str) -> anyhow::Result<T> {
    anyhow::bail!(
        "{}: unknown kind {kind:?} (this wasmlab reads server and program runs)",
        path.display()
    )
}

/// Reads samples.jsonl as lines of `T`.
pub fn read_samples<T: SampleLine>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("read {}: {e}", path.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<T>(line) {
            Ok(s) => {
                anyhow::ensure!(
                    s.schema() == SAMPLES_SCHEMA,
                    "{}:{}: schema {} (this wasmlab reads schema {SAMPLES_SCHEMA})",
                    path.display(),
                    i + 1,
                    s.schema()
                );
                out.push(s);
            }
            Err(e) if i + 1 == lines.len() && !text.ends_with('\n') => {
                eprintln!(
                    "wasmlab: {}:{}: skipping a line cut short ({e})",
                    path.display(),
                    i + 1
                );
            }
            Err(e) => anyhow::bail!("{}:{}: {e}", path.display(), i + 1),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmlab_model::sample::ProgramSample;

    #[test]
    fn a_line_cut_short_at_the_end_is_skipped_and_any_other_bad_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.jsonl");
        let line = r#"{"engine":"node","program":"kdf","repetition":0,"wall_ms":5.0}"#;
        std::fs::write(&path, format!("{line}\n{line}\n{{\"engine\":\"no")).unwrap();
        let samples: Vec<ProgramSample> = read_samples(&path).unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!(
            samples[0].schema, SAMPLES_SCHEMA,
            "lines before the schema was written"
        );
        std::fs::write(&path, format!("{{\"engine\":\"no\n{line}\n")).unwrap();
        let e = read_samples::<ProgramSample>(&path)
            .unwrap_err()
            .to_string();
        assert!(e.contains("samples.jsonl:1"), "{e}");
        std::fs::write(
            &path,
            format!("{}\n", line.replace("{\"engine", "{\"schema\":1,\"engine")),
        )
        .unwrap();
        let e = read_samples::<ProgramSample>(&path)
            .unwrap_err()
            .to_string();
        assert!(e.contains("schema 1"), "{e}");
    }

    #[test]
    fn a_directory_without_run_json_is_not_a_results_directory() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_run(dir.path()).unwrap_err().to_string();
        assert!(e.contains("run.json"), "{e}");
    }
}
