//! The results store: `results/<run-id>/` with run.json, samples.jsonl, CSV files and the report.
//! Every file but the append-only samples is replaced atomically (temp file + rename), so an
//! interrupted run leaves complete files; a run never reuses an earlier run's directory.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub struct ResultsDir {
    pub path: PathBuf,
    pub run_id: String,
    samples: File,
}

impl ResultsDir {
    /// Creates `root/<run-id>/`, where the run id is the UTC start time (suffixed if taken).
    pub fn create(root: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(root)
            .map_err(|e| anyhow::anyhow!("create results directory {}: {e}", root.display()))?;
        let stamp = utc_stamp();
        for n in 0..1000 {
            let run_id = if n == 0 {
                stamp.clone()
            } else {
                format!("{stamp}-{n}")
            };
            let path = root.join(&run_id);
            // create_dir (not _all) fails if it exists: no two runs share a directory.
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    let samples = OpenOptions::new()
                        .create_new(true)
                        .append(true)
                        .open(path.join("samples.jsonl"))?;
                    // Held while the run measures (the kernel lets go when the process ends,
                    // however it ends): a resume of a run still measuring is refused.
                    samples.try_lock().map_err(|e| {
                        anyhow::anyhow!("lock {}/samples.jsonl: {e}", path.display())
                    })?;
                    return Ok(Self {
                        path,
                        run_id,
                        samples,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => anyhow::bail!("create {}: {e}", path.display()),
            }
        }
        anyhow::bail!(
            "could not find a free run directory under {}",
            root.display()
        )
    }

    /// Opens an existing run directory (to rewrite its derived files).
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let samples = OpenOptions::new()
            .append(true)
            .open(path.join("samples.jsonl"))
            .map_err(|e| anyhow::anyhow!("open {}/samples.jsonl: {e}", path.display()))?;
        Ok(Self {
            path: path.to_path_buf(),
            run_id: path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            samples,
        })
    }

    /// Opens an interrupted run's directory to measure on: a last line of samples.jsonl cut
    /// short (the run killed mid-write) is cut off, and said (the second value).
    pub fn resume(path: &Path) -> anyhow::Result<(Self, Option<String>)> {
        // Locked first: nothing is cut from a file another wasmlab is writing.
        let dir = Self::open(path)?;
        if let Err(e) = dir.samples.try_lock() {
            anyhow::bail!(
                "{} is being measured by another wasmlab, which holds it ({e})",
                path.display()
            );
        }
        let file = dir.file("samples.jsonl");
        let bytes =
            std::fs::read(&file).map_err(|e| anyhow::anyhow!("read {}: {e}", file.display()))?;
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let said = (whole < bytes.len()).then(|| {
            format!(
                "the last {} bytes of samples.jsonl, a record cut short, discarded",
                bytes.len() - whole
            )
        });
        if said.is_some() {
            // The append-only handle may truncate: the next line starts where the cut one did.
            dir.samples.set_len(whole as u64)?;
            dir.samples.sync_all()?;
        }
        Ok((dir, said))
    }

    /// Appends one JSON line (written whole, flushed at once; with `sync`, on disk before it
    /// returns, so that a reboot loses no cell that was measured).
    pub fn append_sample(&mut self, sample: &impl Serialize, sync: bool) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(sample)?;
        line.push(b'\n');
        self.samples.write_all(&line)?;
        self.samples.flush()?;
        if sync {
            self.samples.sync_data()?;
        }
        Ok(())
    }

    /// Puts every sample appended so far on disk.
    pub fn sync_samples(&self) -> anyhow::Result<()> {
        Ok(self.samples.sync_data()?)
    }

    pub fn write_json(&self, name: &str, value: &impl Serialize) -> anyhow::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(value)?;
        bytes.push(b'\n');
        write_atomic(&self.path.join(name), &bytes)
    }

    /// Writes a CSV file: the header, then each row's fields in the header's order.
    pub fn write_csv(
        &self,
        name: &str,
        header: &[&str],
        rows: &[Vec<String>],
    ) -> anyhow::Result<()> {
        let mut out = header.join(",");
        out.push('\n');
        for r in rows {
            debug_assert_eq!(r.len(), header.len(), "{name}: row and header differ");
            out += &r.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(",");
            out.push('\n');
        }
        write_atomic(&self.path.join(name), out.as_bytes())
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

fn csv_field(f: &str) -> String {
    if f.contains([',', '"', '\n']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_owned()
    }
}

/// Writes `bytes` to a temporary file beside `path`, syncs it and renames it over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension(format!(
        "{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
        .map_err(|e| anyhow::anyhow!("rename {} to {}: {e}", tmp.display(), path.display()))?;
    Ok(())
}

/// The current UTC time as `YYYYMMDDTHHMMSSZ`.
pub fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_414), (2025, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn a_resumed_run_loses_only_a_record_cut_short() {
        let root = tempfile::tempdir().unwrap();
        let mut dir = ResultsDir::create(root.path()).unwrap();
        dir.append_sample(&serde_json::json!({"a": 1}), true)
            .unwrap();
        let path = dir.file("samples.jsonl");
        // Held while the run that made it is open.
        let e = ResultsDir::resume(&dir.path).err().unwrap();
        assert!(
            e.to_string()
                .contains("is being measured by another wasmlab"),
            "{e}"
        );
        let run = dir.path.clone();
        drop(dir);
        let (dir, said) = ResultsDir::resume(&run).unwrap();
        assert_eq!(said, None);
        drop(dir);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"a\": 2, \"cut").unwrap();
        let (mut dir, said) = ResultsDir::resume(&run).unwrap();
        assert!(said.unwrap().contains("the last 13 bytes"));
        dir.append_sample(&serde_json::json!({"a": 3}), false)
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\"a\":1}\n{\"a\":3}\n");
    }

    #[test]
    fn run_dirs_are_never_reused() {
        let root = tempfile::tempdir().unwrap();
        let a = ResultsDir::create(root.path()).unwrap();
        let b = ResultsDir::create(root.path()).unwrap();
        assert_ne!(a.path, b.path);
    }

    #[test]
    fn csv_quotes_and_atomic_write() {
        let root = tempfile::tempdir().unwrap();
        let dir = ResultsDir::create(root.path()).unwrap();
        let row = |a: &str| vec![a.to_owned(), "x".to_owned()];
        dir.write_csv("t.csv", &["a", "b"], &[row("1,2"), row("q\"")])
            .unwrap();
        let text = std::fs::read_to_string(dir.file("t.csv")).unwrap();
        assert_eq!(text, "a,b\n\"1,2\",x\n\"q\"\"\",x\n");
        let leftovers: Vec<_> = std::fs::read_dir(&dir.path)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
