//! A program set: programs built for wasm32-wasi and natively, each with its expected output.
//! The layout (written by scripts/build-libsodium.sh, or by hand for a set of your own):
//!
//! ```text
//! programs.txt                       the program names, one a line
//! exp/NAME.exp                       the expected output
//! BUILD/NAME[.wasm]                  the timed build, for BUILD in wasm, native-portable, native
//! BUILD-verify/NAME[.wasm]           the build whose output is checked: by default its stdout
//!                                    must be the .exp text (then build.json's `success_line` if
//!                                    it has one); with build.json's `"verify": "self"` it checks
//!                                    itself, as libsodium's `make check` programs do: it reads
//!                                    ./NAME.exp, writes ./NAME.res and exits 0 only when they match
//! build.json                         versions and flags (recorded in run.json)
//! ```
//!
//! A timed build may print, as its last line, the time its test body took per iteration in
//! picoseconds (libsodium's benchmark mode does): it is recorded as the program's own time.

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Clone)]
pub struct ProgramSet {
    pub dir: PathBuf,
    pub programs: Vec<String>,
    pub build_info: serde_json::Value,
}

impl ProgramSet {
    /// `libsodium`: built (or found built) under target/libsodium, its benchmark builds running
    /// their test body `iterations` times; else a directory path.
    pub fn obtain(spec: &str, iterations: u32, workspace: Option<&Path>) -> anyhow::Result<Self> {
        if spec == "libsodium" {
            let root = default_set_dir(workspace);
            let dir = root.join(format!("iterations-{iterations}"));
            let script = workspace
                .map(|w| w.join("scripts/build-libsodium.sh"))
                .filter(|p| p.is_file())
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "the libsodium program set is built by scripts/build-libsodium.sh of the wasmlab source tree, which this wasmlab was not run from"
                    )
                })?;
            eprintln!(
                "wasmlab: the libsodium program set: {} (built on first use: about 6 min on 2 cores, 2 more for another iteration count; then cached)",
                dir.display()
            );
            let t = std::time::Instant::now();
            let status = Command::new("sh")
                .arg(&script)
                .arg(&dir)
                .arg(root.join("build"))
                .env("ITERATIONS", iterations.to_string())
                .status()
                .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", script.display()))?;
            anyhow::ensure!(
                status.success(),
                "building the libsodium program set failed ({status}); its messages are above"
            );
            if t.elapsed().as_secs() > 5 {
                eprintln!(
                    "wasmlab: program set built in {:.0} s",
                    t.elapsed().as_secs_f64()
                );
            }
            Self::open(&dir)
        } else {
            Self::open(Path::new(spec))
        }
    }

    pub fn open(dir: &Path) -> anyhow::Result<Self> {
        let list = dir.join("programs.txt");
        let text = std::fs::read_to_string(&list).map_err(|e| {
            anyhow::anyhow!(
                "{} is not a program set ({}: {e}); see crates/lab/measure/src/programs/set.rs",
                dir.display(),
                list.display()
            )
        })?;
        let programs: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        anyhow::ensure!(!programs.is_empty(), "{} lists no program", list.display());
        let build_info = match std::fs::read_to_string(dir.join("build.json")) {
            Ok(t) => serde_json::from_str(&t)
                .map_err(|e| anyhow::anyhow!("{}/build.json: {e}", dir.display()))?,
            Err(_) => serde_json::Value::Null,
        };
        Ok(Self {
            dir: dir.canonicalize()?,
            programs,
            build_info,
        })
    }

    /// `wanted` (all when empty), each checked to be in the set.
    pub fn select(&self, wanted: &[String]) -> anyhow::Result<Vec<String>> {
        if wanted.is_empty() {
            return Ok(self.programs.clone());
        }
        for w in wanted {
            anyhow::ensure!(
                self.programs.contains(w),
                "program {w:?} is not in the set {} (it has {})",
                self.dir.display(),
                self.programs.join(", ")
            );
        }
        Ok(wanted.to_vec())
    }

    pub fn describe(&self) -> String {
        match self
            .build_info
            .get("libsodium_version")
            .and_then(|v| v.as_str())
        {
            Some(v) => format!("libsodium {v}"),
            None => self.dir.display().to_string(),
        }
    }

    /// The file of `program` in `build` (`verify`: the build whose output is checked).
    pub fn file(&self, build: &str, program: &str, verify: bool) -> PathBuf {
        let sub = if verify {
            format!("{build}-verify")
        } else {
            build.to_owned()
        };
        let name = if build == "wasm" {
            format!("{program}.wasm")
        } else {
            program.to_owned()
        };
        self.dir.join(sub).join(name)
    }

    /// Whether the verify builds check their own output against ./NAME.exp (writing ./NAME.res)
    /// rather than print it.
    pub fn self_checking(&self) -> bool {
        self.build_info.get("verify").and_then(|v| v.as_str()) == Some("self")
    }

    /// What the verify build must print (or, self-checking, write to ./NAME.res).
    pub fn expected(&self, program: &str) -> anyhow::Result<String> {
        let path = self.dir.join("exp").join(format!("{program}.exp"));
        let mut text = std::fs::read_to_string(&path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        if let Some(line) = self.build_info.get("success_line").and_then(|v| v.as_str()) {
            text.push_str(line);
            text.push('\n');
        }
        Ok(text)
    }
}

/// Where a program set is, or is built.
fn default_set_dir(workspace: Option<&Path>) -> PathBuf {
    workspace.map_or_else(
        || PathBuf::from("target/libsodium"),
        |w| w.join("target/libsodium"),
    )
}
