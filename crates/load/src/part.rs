//! A run kept whole, as one part of a load made by several generators: its report, every HDR
//! histogram in full, its counts, when it ran on the wall clock and what the generator was.
//! `wasmlab merge` sums parts exactly (histograms added, never percentiles averaged).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::Finished;
use crate::report::{self, TICK, WorkerStats};
use crate::timing::PhaseHistograms;
use wasmlab_load_data::LoadReport;
use wasmlab_load_data::{histogram_buckets, histogram_from_buckets};

/// What a part file says it is.
pub const FORMAT: &str = "wasmlab-load-part";
/// The part format's version: a merge reads only its own.
pub const VERSION: u32 = 1;

/// One generator's run, everything a lossless merge needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Part {
    pub format: String,
    pub version: u32,
    pub generator: Generator,
    /// The run's report, as `wasmlab load --json` prints it.
    pub report: LoadReport,
    pub histograms: Histograms,
    pub timeline: Timeline,
}

/// Who ran the part, and when on the wall clock.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Generator {
    pub host: String,
    pub pid: u32,
    /// The first counted send, after the warm-up if any (RFC 3339, nanoseconds, UTC).
    pub started_at: String,
    /// The last response: `started_at` plus the report's `elapsed_secs`.
    pub ended_at: String,
    /// The start it was told (`--start-at`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// The program that made the part.
    pub program: String,
}

/// Every histogram of the run, nanoseconds, in [`crate::histogram_buckets`]'s encoding.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Histograms {
    /// The report's latency (from the intended send in the open loop).
    pub latency: Vec<u64>,
    /// Open loop: latency from the actual send.
    pub uncorrected: Vec<u64>,
    /// Open loop: how late each send was.
    pub send_lag: Vec<u64>,
    pub connect: Vec<u64>,
    pub tls: Vec<u64>,
    pub send: Vec<u64>,
    pub wait: Vec<u64>,
    pub receive: Vec<u64>,
}

/// Complete responses per slot of `tick_ms` from `started_at`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Timeline {
    pub tick_ms: u64,
    pub responses: Vec<u64>,
}

impl Part {
    pub(crate) fn from_run(f: Finished) -> Self {
        let s = &f.stats;
        let p = &s.phases;
        let histograms = Histograms {
            latency: histogram_buckets(&s.latency),
            uncorrected: histogram_buckets(&s.uncorrected),
            send_lag: histogram_buckets(&s.send_lag),
            connect: histogram_buckets(&p.connect),
            tls: histogram_buckets(&p.tls),
            send: histogram_buckets(&p.send),
            wait: histogram_buckets(&p.wait),
            receive: histogram_buckets(&p.receive),
        };
        let timeline = Timeline {
            tick_ms: TICK.as_millis() as u64,
            responses: s.timeline.clone(),
        };
        let ended = f.started + Duration::from_secs_f64(f.elapsed);
        let generator = Generator {
            host: host_name(),
            pid: std::process::id(),
            started_at: rfc3339(f.started),
            ended_at: rfc3339(ended),
            start_at: f.start_at.map(rfc3339),
            program: format!("wasmlab {}", env!("CARGO_PKG_VERSION")),
        };
        Part {
            format: FORMAT.into(),
            version: VERSION,
            generator,
            report: report::assemble(&f.shape, f.stats, f.elapsed, f.threads),
            histograms,
            timeline,
        }
    }

    /// The part's counts and histograms as one worker's stats, to be added to others'.
    pub(crate) fn stats(&self) -> WorkerStats {
        let r = &self.report;
        let h = &self.histograms;
        let mut by_status = vec![0; 1000];
        for (code, n) in &r.status_counts {
            by_status[usize::from(*code).min(999)] += n;
        }
        let o = r.open_loop.unwrap_or_default();
        WorkerStats {
            responses: r.responses,
            ok: r.ok,
            errors: r.errors,
            body_bytes: r.body_bytes,
            by_status,
            first_error: r.first_error.clone(),
            latency: histogram_from_buckets(&h.latency),
            uncorrected: histogram_from_buckets(&h.uncorrected),
            send_lag: histogram_from_buckets(&h.send_lag),
            phases: PhaseHistograms {
                connect: histogram_from_buckets(&h.connect),
                tls: histogram_from_buckets(&h.tls),
                tls_resumed: r.phases.tls_resumed,
                send: histogram_from_buckets(&h.send),
                wait: histogram_from_buckets(&h.wait),
                receive: histogram_from_buckets(&h.receive),
            },
            sent: o.sent,
            late: o.late,
            intended: o.intended,
            cpu: Duration::from_secs_f64(r.generator_cpu_secs.max(0.0)),
            idle_spin: Duration::from_secs_f64(r.generator_idle_spin_secs.max(0.0)),
            // Timelines start at different times: a merge aligns them itself.
            ..WorkerStats::default()
        }
    }

    /// When the part's first send went, and its last response came, as Unix nanoseconds.
    pub fn span_ns(&self) -> anyhow::Result<(i128, i128)> {
        Ok((
            unix_ns(&self.generator.started_at)?,
            unix_ns(&self.generator.ended_at)?,
        ))
    }

    /// Reads a part written by `wasmlab load --out`, refusing anything else with the reason:
    /// another format or version, a truncated file, numbers that disagree with each other.
    pub fn read(path: &Path) -> anyhow::Result<Part> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("{}: cannot read it: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// As [`Part::read`], from the file's text.
    pub fn parse(text: &str) -> anyhow::Result<Part> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| match e.classify() {
                serde_json::error::Category::Eof => {
                    anyhow::anyhow!("truncated: the JSON ends early ({e})")
                }
                _ => anyhow::anyhow!("not JSON ({e})"),
            })?;
        let format = value.get("format").and_then(|f| f.as_str());
        anyhow::ensure!(
            format == Some(FORMAT),
            "not a wasmlab load part (its \"format\" is {}, not {FORMAT:?}); write parts with \
             `wasmlab load --out FILE`",
            format.map_or("missing".into(), |f| format!("{f:?}"))
        );
        let version = value.get("version").and_then(|v| v.as_u64());
        anyhow::ensure!(
            version == Some(u64::from(VERSION)),
            "a part of format version {}, and this wasmlab reads version {VERSION}: merge parts \
             made by the same wasmlab",
            version.map_or("(missing)".into(), |v| v.to_string())
        );
        let part: Part = serde_json::from_value(value)
            .map_err(|e| anyhow::anyhow!("not a complete part ({e})"))?;
        part.check()?;
        Ok(part)
    }

    /// The part's numbers agree with each other.
    fn check(&self) -> anyhow::Result<()> {
        let r = &self.report;
        // Counts are every second element of the encoding: no histogram to build twice.
        let latency: u64 = self.histograms.latency.iter().skip(1).step_by(2).sum();
        anyhow::ensure!(
            latency == r.responses,
            "its latency histogram holds {latency} samples for {} responses",
            r.responses
        );
        let timeline: u64 = self.timeline.responses.iter().sum();
        anyhow::ensure!(
            timeline == r.responses,
            "its timeline counts {timeline} responses for {}",
            r.responses
        );
        anyhow::ensure!(
            self.timeline.tick_ms == TICK.as_millis() as u64,
            "its timeline's slots are {} ms, this wasmlab's {} ms",
            self.timeline.tick_ms,
            TICK.as_millis()
        );
        let (start, end) = self.span_ns()?;
        anyhow::ensure!(end >= start, "it ended before it started");
        Ok(())
    }
}

/// Where a part goes: a file made when the run is set up (so a path that cannot be written
/// fails before any load is sent) and renamed into place when the part is complete, or stdout
/// (`-`).
pub struct PartFile {
    target: Option<(PathBuf, PathBuf, std::fs::File)>,
}

impl PartFile {
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        if path == Path::new("-") {
            return Ok(Self { target: None });
        }
        let name = path
            .file_name()
            .ok_or_else(|| anyhow::anyhow!("{}: not a file name", path.display()))?;
        let tmp = path.with_file_name(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = std::fs::File::create(&tmp)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        Ok(Self {
            target: Some((path.to_owned(), tmp, file)),
        })
    }

    /// Whether the part goes to stdout (so the human report must not).
    pub fn is_stdout(&self) -> bool {
        self.target.is_none()
    }

    /// Writes the part whole, then puts it in place.
    pub fn commit(self, part: &Part) -> anyhow::Result<()> {
        let json = serde_json::to_vec(part)?;
        let Some((path, tmp, mut file)) = self.target else {
            let mut out = std::io::stdout().lock();
            out.write_all(&json)?;
            out.write_all(b"\n")?;
            return Ok(out.flush()?);
        };
        file.write_all(&json)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path).map_err(|e| {
            anyhow::anyhow!(
                "the part is in {} but could not be renamed to {}: {e}",
                tmp.display(),
                path.display()
            )
        })
    }

    /// Removes the unfinished file (the run failed before it had a part).
    pub fn abandon(self) {
        if let Some((_, tmp, _)) = self.target {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// `t` as RFC 3339 in UTC with nanoseconds.
pub fn rfc3339(t: SystemTime) -> String {
    OffsetDateTime::from(t)
        .format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// Parses a wall-clock time as RFC 3339 (`2026-11-27T10:00:00Z`) or Unix seconds
/// (`1795773600`, `1795773600.5`).
pub fn parse_time(s: &str) -> Result<SystemTime, String> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<f64>() {
        if !(secs.is_finite() && secs >= 0.0) {
            return Err(format!("{s:?}: Unix seconds must be a positive number"));
        }
        return Ok(UNIX_EPOCH + Duration::from_secs_f64(secs));
    }
    OffsetDateTime::parse(s, &Rfc3339)
        .map(SystemTime::from)
        .map_err(|e| {
            format!(
                "{s:?} is not a time: give RFC 3339 (e.g. 2026-11-27T10:00:00Z) or Unix seconds \
                 (e.g. 1795773600) ({e})"
            )
        })
}

pub(crate) fn unix_ns(text: &str) -> anyhow::Result<i128> {
    OffsetDateTime::parse(text, &Rfc3339)
        .map(|t| t.unix_timestamp_nanos())
        .map_err(|e| anyhow::anyhow!("{text:?} is not an RFC 3339 time ({e})"))
}

/// This machine's name, as `hostname` prints it.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into the buffer we own.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_as_rfc3339_or_unix_seconds() {
        let t = parse_time("2026-11-27T10:00:00Z").unwrap();
        assert_eq!(
            t.duration_since(UNIX_EPOCH).unwrap().as_secs(),
            1_795_773_600
        );
        assert_eq!(parse_time("1795773600").unwrap(), t);
        assert_eq!(
            parse_time("1795773600.25").unwrap(),
            t + Duration::from_millis(250)
        );
        assert_eq!(
            parse_time("2026-11-27T11:00:00+01:00").unwrap(),
            t,
            "an offset is honoured"
        );
        for bad in ["tomorrow", "2026-11-27 10:00", "-5", "NaN", ""] {
            let e = parse_time(bad).unwrap_err();
            assert!(
                e.contains("RFC 3339") || e.contains("positive"),
                "{bad}: {e}"
            );
        }
        let back = rfc3339(t + Duration::from_nanos(123));
        assert_eq!(back, "2026-11-27T10:00:00.000000123Z");
        assert_eq!(unix_ns(&back).unwrap(), 1_795_773_600_000_000_123);
    }

    #[test]
    fn refuses_what_is_not_a_whole_part_of_this_version() {
        let cases = [
            ("{\"format\": \"wasmlab-load-part\", \"ver", "truncated"),
            ("[1, 2", "truncated"),
            ("hello", "not JSON"),
            ("{\"url\": \"http://x/\"}", "not a wasmlab load part"),
            (
                "{\"format\": \"wasmlab-load-part\", \"version\": 2}",
                "format version 2",
            ),
            (
                "{\"format\": \"wasmlab-load-part\", \"version\": 1}",
                "not a complete part",
            ),
        ];
        for (text, why) in cases {
            let e = Part::parse(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
    }
}
