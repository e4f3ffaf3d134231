//! A suite's headline figures across runs (`wasmlab history`): each variant's cost × native at
//! equal load and saturated, per workload, run after run, in time order, kept apart per suite
//! and machine (CPU model and count: figures of two machines do not compare). Beside each run,
//! what changed from the run before it (wasmlab's commit, a tool's version, the kernel), and on
//! each figure whether it moved beyond its interval from the last run that had it.

use std::collections::BTreeMap;

use serde::Serialize;
use wasmlab_model::run::ServerRunInfo;

use crate::compare::Footing;
use crate::servers::ServerAnalysis;
use crate::stats::Estimate;

/// The history of a results directory's runs.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    /// The results directory, as given.
    pub root: String,
    pub groups: Vec<Group>,
    /// Directories that are not runs the history can read, and why.
    pub passed_over: Vec<PassedOver>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PassedOver {
    pub dir: String,
    pub why: String,
}

/// One run's part of a history: who it is, what it ran with, and its headline figures.
#[derive(Debug, Clone)]
pub struct RunFigures {
    pub suite: String,
    /// The machine, as its runs are grouped: CPU model and count.
    pub machine: String,
    pub run: HistoryRun,
    pub figures: Vec<Figure>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HistoryRun {
    /// Its results directory, as given.
    pub dir: String,
    pub run_id: String,
    pub started_utc: String,
    /// `complete`, `interrupted`, or `running` (still, or killed and never resumed).
    pub state: String,
    /// The repetitions it ordered (begun, at least).
    pub repetitions: u32,
    /// What it ran with: wasmlab's commit, the kernel, the lab's and the variants' tools, by name.
    pub versions: BTreeMap<String, String>,
    /// What differs from the run before it on this machine (`wasmtime 48.0.0 → 50.0.0`); empty
    /// for the first.
    pub changed: Vec<String>,
}

/// One headline figure of a run.
#[derive(Debug, Clone)]
pub struct Figure {
    pub variant: String,
    pub workload: String,
    pub footing: Footing,
    /// None where the run measured the variant but has no such figure: `note` says why.
    pub estimate: Option<Estimate>,
    pub note: Option<String>,
}

impl RunFigures {
    /// The headline figures of an analysed run (those with a value).
    pub fn of(dir: &str, info: &ServerRunInfo, a: &ServerAnalysis) -> Self {
        let h = &info.header;
        let mut versions = BTreeMap::new();
        let tools = &h.machine.tools;
        for (name, v) in [
            ("wasmlab", Some(&tools.wasmlab)),
            ("rustc", tools.rustc.as_ref()),
            ("wasmtime (crate)", tools.wasmtime.as_ref()),
            ("hyper", tools.hyper.as_ref()),
            ("tokio", tools.tokio.as_ref()),
            ("commit", h.git_sha.as_ref()),
            ("kernel", Some(&h.machine.kernel)),
        ] {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                versions.insert(name.to_owned(), v.clone());
            }
        }
        for t in &info.variant_tools {
            versions.insert(t.name.clone(), t.version.clone());
        }
        // What a variant built embeds (wazero in the Go host), where the build says it.
        for x in &info.artifacts {
            if let Some(v) = &x.version {
                versions.insert(x.name.clone(), v.clone());
            }
        }
        if let Some(c) = &info.container_engine {
            versions.insert(c.command[0].clone(), c.version.clone());
        }
        if let Some(c) = &info.containerd {
            versions.insert("containerd".to_owned(), c.version.clone());
        }
        let mut figures = Vec::new();
        for w in &a.workloads {
            for c in a.costs(w) {
                let at = [
                    (
                        Footing::EqualLoad,
                        c.equal_load.map(|(_, e)| e),
                        &c.equal_load_note,
                    ),
                    (Footing::Saturated, c.saturated, &c.saturated_note),
                ];
                for (footing, e, note) in at {
                    let estimate = e.filter(|e| e.value.is_finite() && e.n > 0);
                    if estimate.is_none() && note.is_none() {
                        continue;
                    }
                    figures.push(Figure {
                        variant: c.variant.clone(),
                        workload: w.clone(),
                        footing,
                        estimate,
                        note: estimate.is_none().then(|| note.clone()).flatten(),
                    });
                }
            }
        }
        RunFigures {
            suite: info.suite.name.clone(),
            machine: format!("{}, {} CPUs", h.machine.cpu_model, h.machine.cores),
            run: HistoryRun {
                dir: dir.to_owned(),
                run_id: h.run_id.clone(),
                started_utc: h.started_utc.clone(),
                state: h.state.as_str().to_owned(),
                repetitions: info.orders.len() as u32,
                versions,
                changed: Vec::new(),
            },
            figures,
        }
    }
}

/// The runs of one suite on one machine.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    pub suite: String,
    pub machine: String,
    /// In time order.
    pub runs: Vec<HistoryRun>,
    /// Every figure any of the runs has, in the order they first appear.
    pub series: Vec<Series>,
}

/// One figure across a group's runs.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub variant: String,
    pub workload: String,
    /// `equal_load` or `saturated`, as a gate names it.
    pub footing: &'static str,
    /// One per run of the group, in its order; None where the run did not measure the variant
    /// on the workload.
    pub points: Vec<Option<Point>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// None where the run has no such figure (a saturated figure where a server did not set the
    /// pace): `note` says why.
    pub estimate: Option<Estimate>,
    pub note: Option<String>,
    /// How it moved from the last earlier run that had the figure: beyond both intervals, or
    /// None (within them, or no interval to tell by).
    pub moved: Option<Moved>,
}

/// A move beyond the intervals. A higher cost × native is worse at either footing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Moved {
    Worse,
    Better,
}

/// The runs grouped by suite and machine (groups ordered by suite, then machine), each group's
/// runs in time order with what changed between them, and each figure's series.
pub fn history(mut runs: Vec<RunFigures>) -> Vec<Group> {
    runs.sort_by(|a, b| {
        (&a.suite, &a.machine, &a.run.started_utc, &a.run.run_id).cmp(&(
            &b.suite,
            &b.machine,
            &b.run.started_utc,
            &b.run.run_id,
        ))
    });
    let mut groups: Vec<(Group, Vec<Vec<Figure>>)> = Vec::new();
    for r in runs {
        match groups.last_mut() {
            Some((g, figs)) if g.suite == r.suite && g.machine == r.machine => {
                g.runs.push(r.run);
                figs.push(r.figures);
            }
            _ => groups.push((
                Group {
                    suite: r.suite,
                    machine: r.machine,
                    runs: vec![r.run],
                    series: Vec::new(),
                },
                vec![r.figures],
            )),
        }
    }
    groups
        .into_iter()
        .map(|(mut g, figs)| {
            for i in 1..g.runs.len() {
                let changed = changes(&g.runs[i - 1].versions, &g.runs[i].versions);
                g.runs[i].changed = changed;
            }
            g.series = series(&figs);
            g
        })
        .collect()
}

/// What differs between two runs' versions, said as `name before → after` (`name: new`, `name:
/// gone` for a tool one of them did not run).
fn changes(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, v) in after {
        match before.get(name) {
            Some(b) if b == v => {}
            Some(b) => out.push(format!("{name} {} → {}", short(name, b), short(name, v))),
            None => out.push(format!("{name} {} (new)", short(name, v))),
        }
    }
    for name in before.keys().filter(|n| !after.contains_key(*n)) {
        out.push(format!("{name} (gone)"));
    }
    out
}

/// A commit by its first 12 hex digits (and `-dirty` if so); other versions as they were printed.
fn short<'a>(name: &str, v: &'a str) -> std::borrow::Cow<'a, str> {
    if name != "commit" || v.len() <= 12 {
        return v.into();
    }
    let dirty = v.ends_with("-dirty");
    format!("{}{}", &v[..12], if dirty { "-dirty" } else { "" }).into()
}

fn series(figs: &[Vec<Figure>]) -> Vec<Series> {
    let mut names: Vec<(&str, &str, Footing)> = Vec::new();
    for f in figs.iter().flatten().filter(|f| f.estimate.is_some()) {
        let key = (f.workload.as_str(), f.variant.as_str(), f.footing);
        if !names.contains(&key) {
            names.push(key);
        }
    }
    names
        .into_iter()
        .map(|(workload, variant, footing)| {
            let mut last: Option<Estimate> = None;
            let points = figs
                .iter()
                .map(|run| {
                    let f = run.iter().find(|f| {
                        f.workload == workload && f.variant == variant && f.footing == footing
                    })?;
                    let moved = f.estimate.and_then(|e| {
                        let moved = last.and_then(|l| match l.overlaps(&e) {
                            Some(false) if e.value > l.value => Some(Moved::Worse),
                            Some(false) => Some(Moved::Better),
                            _ => None,
                        });
                        last = Some(e);
                        moved
                    });
                    Some(Point {
                        estimate: f.estimate,
                        note: f.note.clone(),
                        moved,
                    })
                })
                .collect();
            Series {
                variant: variant.to_owned(),
                workload: workload.to_owned(),
                footing: footing.name(),
                points,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run with one figure (None: measured, but no figure, and a note why).
    fn run(
        id: &str,
        machine: &str,
        versions: &[(&str, &str)],
        figures: &[Option<f64>],
    ) -> RunFigures {
        RunFigures {
            suite: "quick".into(),
            machine: machine.into(),
            run: HistoryRun {
                dir: format!("results/{id}"),
                run_id: id.into(),
                started_utc: id.into(),
                state: "complete".into(),
                repetitions: 3,
                versions: versions
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                changed: Vec::new(),
            },
            figures: figures
                .iter()
                .map(|&value| Figure {
                    variant: "gw".into(),
                    workload: "hello".into(),
                    footing: Footing::EqualLoad,
                    estimate: value.map(|value| Estimate {
                        value,
                        lo: value * 0.95,
                        hi: value * 1.05,
                        n: 3,
                    }),
                    note: value.is_none().then(|| "latency-bound".to_owned()),
                })
                .collect(),
        }
    }

    #[test]
    fn runs_are_grouped_by_machine_ordered_in_time_and_moves_are_beyond_the_intervals() {
        let h = history(vec![
            run("3", "A", &[("wasmtime", "50")], &[Some(3.0)]),
            run("1", "A", &[("wasmtime", "48")], &[Some(2.0)]),
            run("x", "B", &[], &[Some(9.0)]),
            run("2", "A", &[("wasmtime", "48"), ("node", "v20")], &[None]),
            run("4", "A", &[("wasmtime", "50")], &[Some(3.1)]),
            run("5", "A", &[("wasmtime", "50")], &[]),
            run("6", "A", &[("wasmtime", "50")], &[Some(2.0)]),
        ]);
        assert_eq!(h.len(), 2);
        let a = &h[0];
        let ids: Vec<&str> = a.runs.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ids, ["1", "2", "3", "4", "5", "6"]);
        assert!(a.runs[0].changed.is_empty());
        assert_eq!(a.runs[1].changed, ["node v20 (new)"]);
        assert_eq!(a.runs[2].changed, ["wasmtime 48 → 50", "node (gone)"]);
        let moved: Vec<Option<Option<Moved>>> = a.series[0]
            .points
            .iter()
            .map(|p| p.as_ref().map(|p| p.moved))
            .collect();
        // Run 3 against run 1 (run 2 has no figure, run 5 not the variant); 4 within 3's
        // interval; 6 below 4's.
        assert_eq!(
            moved,
            [
                Some(None),
                Some(None),
                Some(Some(Moved::Worse)),
                Some(None),
                None,
                Some(Some(Moved::Better))
            ]
        );
        let second = a.series[0].points[1].as_ref().unwrap();
        assert!(second.estimate.is_none() && second.note.as_deref() == Some("latency-bound"));
        assert_eq!(h[1].machine, "B");
        assert_eq!(h[1].runs.len(), 1);
    }

    #[test]
    fn a_commit_is_shortened_and_keeps_its_dirty_mark() {
        let before = [("commit".to_owned(), "0123456789abcdef0123".to_owned())].into();
        let after = [("commit".to_owned(), "fedcba9876543210fedc-dirty".to_owned())].into();
        assert_eq!(
            changes(&before, &after),
            ["commit 0123456789ab → fedcba987654-dirty"]
        );
    }
}
