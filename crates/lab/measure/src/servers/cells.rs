//! The load cells of one variant in one repetition, as each measurement plans them (closed loop
//! at each concurrency level, then the workload's equal-load rates, warm latency on one
//! connection, and open loop at fractions of the variant's own maximum), each measured with its
//! process trees' resources read meanwhile.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wasmlab_load::{Edge, LoadConfig, LoadReport, Window};

use wasmlab_model::sample::{Kind, Resources, Sample, cell_label};
use wasmlab_model::suite::ServerSuite;
use wasmlab_model::variant::Protocol;
use wasmlab_record::{Recorder, Servers};

use crate::generators::Fleet;
use crate::launch::Running;
use crate::requests::{self, SentRequest, Workloads};
use crate::resources::{Sampler, Watch};

use super::{equal_load, open_loop, throughput, warm};

/// The variant's process died while being measured.
#[derive(Debug)]
pub(crate) struct VariantDied(pub String);

impl std::fmt::Display for VariantDied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for VariantDied {}

/// One load cell against a running variant, its process tree sampled meanwhile.
struct Cell<'a> {
    kind: Kind,
    workload: &'a str,
    requests: &'a [SentRequest],
    connections: usize,
    duration: f64,
    warmup: f64,
    rate: Option<f64>,
    load_fraction: Option<f64>,
}

/// What is being measured: a running variant in repetition `r`, its stderr in `log`.
pub(crate) struct Subject<'a> {
    pub name: &'a str,
    pub r: u32,
    pub running: &'a mut Running,
    pub log: &'a Path,
    /// The lab's upstream server, whose CPU each cell reads beside the variant's.
    pub upstream: Option<u32>,
}

impl Subject<'_> {
    /// What a cell's resources are read from: None for a remote target, whose processes are
    /// not observable.
    fn watch(&mut self, cpus: usize) -> Option<Watch> {
        Some(Watch {
            roots: self.running.process_roots()?,
            upstream: self.upstream,
            cpus,
        })
    }
}

/// One of a variant's cells in a repetition, as planned: an open-loop cell's rate is its
/// fraction of the closed-loop maximum the same repetition measures first.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Planned {
    pub kind: Kind,
    pub workload: String,
    pub connections: usize,
    pub duration: f64,
    pub warmup: f64,
    /// Equal load: the offered rate.
    pub rate: Option<f64>,
    /// Open loop: the fraction of the maximum.
    pub fraction: Option<f64>,
}

/// A variant's cells in one repetition, in the order they are measured: per workload closed
/// loop at each level, then its equal-load rates (while the server is warm for it); warm
/// latency; open loop.
pub(crate) fn planned(suite: &ServerSuite, lab: &Recorder<Servers>, name: &str) -> Vec<Planned> {
    let mut cells = Vec::new();
    for workload in &suite.workloads {
        cells.extend(throughput::planned(suite, workload));
        cells.extend(equal_load::planned(suite, &lab.info, workload, name));
    }
    cells.extend(warm::planned(suite));
    cells.extend(open_loop::planned(suite));
    cells
}

impl Planned {
    /// A cell at no rate of its own (closed loop, warm latency).
    pub(super) fn new(
        kind: Kind,
        workload: &str,
        connections: usize,
        duration: f64,
        warmup: f64,
    ) -> Self {
        Planned {
            kind,
            workload: workload.to_owned(),
            connections,
            duration,
            warmup,
            rate: None,
            fraction: None,
        }
    }
}

/// The sample of cell `p` of `name` in repetition `r`, if the run recorded it (a resumed run's).
pub(crate) fn recorded<'s>(
    samples: &'s [Sample],
    name: &str,
    r: u32,
    p: &Planned,
) -> Option<&'s Sample> {
    samples.iter().find(|s| {
        s.kind == p.kind
            && s.repetition == r
            && s.variant == name
            && s.workload.as_deref() == Some(p.workload.as_str())
            && s.connections == Some(p.connections)
            && s.rate == p.rate
            && s.load_fraction == p.fraction
    })
}

/// Measures a variant's `cells` for its repetition (as [`planned`] gives them), those the run
/// recorded already (a resumed run's) left as they are. Returns early (Ok) when cancelled.
pub(crate) fn measure_variant(
    lab: &mut Recorder<Servers>,
    suite: &ServerSuite,
    workloads: &Workloads,
    sub: &mut Subject<'_>,
    cells: Vec<Planned>,
) -> anyhow::Result<()> {
    let mut best_rps: Vec<(String, f64)> = Vec::new();
    let best = |best_rps: &mut Vec<(String, f64)>, workload: &str, rps: f64| match best_rps
        .iter_mut()
        .find(|(w, _)| w == workload)
    {
        Some((_, b)) => *b = b.max(rps),
        None => best_rps.push((workload.to_owned(), rps)),
    };
    let mut no_maximum: Vec<String> = Vec::new();
    for p in cells {
        if let Some(s) = recorded(&lab.samples, sub.name, sub.r, &p) {
            if p.kind == Kind::Throughput
                && let Some(l) = &s.load
            {
                best(&mut best_rps, &p.workload, l.rps);
            }
            lab.progress.inc(1);
            continue;
        }
        let rate = match p.fraction {
            None => p.rate,
            Some(fraction) => {
                let max = best_rps
                    .iter()
                    .find(|(w, _)| *w == p.workload)
                    .map(|(_, m)| *m)
                    .filter(|m| *m > 0.0);
                let Some(max) = max else {
                    if !no_maximum.contains(&p.workload) {
                        lab.say(format!(
                            "{} {}: no closed-loop maximum measured, open loop skipped",
                            sub.name, p.workload
                        ));
                        no_maximum.push(p.workload.clone());
                    }
                    continue;
                };
                Some(max * fraction)
            }
        };
        let cell = Cell {
            kind: p.kind,
            workload: &p.workload,
            requests: workloads.requests(&p.workload)?,
            connections: p.connections,
            duration: p.duration,
            warmup: p.warmup,
            rate,
            load_fraction: p.fraction,
        };
        let Some(report) = measure_cell(lab, suite, sub, &cell)? else {
            return Ok(());
        };
        if p.kind == Kind::Throughput {
            best(&mut best_rps, &p.workload, report.rps);
        }
    }
    Ok(())
}

/// Warms up, measures one cell and records it. None when cancelled (nothing recorded).
fn measure_cell(
    lab: &mut Recorder<Servers>,
    suite: &ServerSuite,
    sub: &mut Subject<'_>,
    cell: &Cell<'_>,
) -> anyhow::Result<Option<LoadReport>> {
    let (name, r) = (sub.name, sub.r);
    if lab.cancelled() {
        return Ok(None);
    }
    // Over HTTP/2 a level is the requests in flight, multiplexed on fewer connections.
    let (connections, streams) = match sub.running.protocol {
        Protocol::Http1 => (cell.connections, 1),
        Protocol::Http2 => suite.http2_split(cell.connections),
    };
    let mut what = cell_label(cell.kind, cell.connections, cell.load_fraction, cell.rate);
    if streams > 1 {
        what = format!("{what} ({connections}×{streams})");
    }
    lab.progress.set_message(format!(
        "{} {} {what} (run {}/{})",
        name,
        cell.workload,
        r + 1,
        suite.repetitions
    ));
    let mut config = load_config(lab, suite, sub.running, cell.requests, connections, streams)?;
    let fleet = (cell.kind != Kind::Warm)
        .then(|| fleet(lab, suite))
        .flatten();
    let watch = sub.watch(lab.info.cpus.server_count());
    // The warm-up at the cell's own rate too (closed for a closed-loop cell).
    config.rate = cell.rate;
    let (report, resources) = match &fleet {
        // One generator here: the warm-up on the cell's own connections, and the resources read
        // over the measured part alone, once they are open and until before they close, so
        // that neither their set-up nor their teardown is charged to the requests.
        None => {
            config.warm_up = (cell.warmup > 0.0).then(|| Duration::from_secs_f64(cell.warmup));
            config.duration = Some(Duration::from_secs_f64(cell.duration));
            let sampled = watch.map(|w| {
                let (window, sampled) = sampling_window(w);
                config.window = Some(window);
                sampled
            });
            let report = wasmlab_load::run(config);
            let resources = sampled.and_then(|s| s.lock().ok()?.take_resources());
            (report, resources)
        }
        // Generators elsewhere cannot say when their parts open: a warm-up run of its own, then
        // the resources read around the whole measured run.
        Some(fleet) => {
            if cell.warmup > 0.0 {
                config.duration = Some(Duration::from_secs_f64(cell.warmup));
                wasmlab_load::run(config.clone())?;
            }
            config.duration = Some(Duration::from_secs_f64(cell.duration));
            let sampler = watch.map(Sampler::start);
            let report = fleet.run(&config).map(|merged| {
                for w in merged.warnings.iter().chain(&merged.notes) {
                    lab.say(format!("{name} {} {what}: {w}", cell.workload));
                }
                merged.report
            });
            (report, sampler.map(Sampler::finish))
        }
    };
    let report = report?;
    if lab.cancelled() {
        // Cut short: not a measurement of the configured duration.
        return Ok(None);
    }
    if let Some(status) = sub.running.exited() {
        return Err(VariantDied(format!(
            "exited during measurement ({status}); see {}",
            sub.log.display()
        ))
        .into());
    }
    if let Some(fleet) = &fleet {
        what = format!("{what} ({} gen.)", fleet.size());
    }
    lab.say(cell_line(
        name,
        cell.workload,
        &what,
        &report,
        resources.as_ref(),
    ));
    let mut s = Sample::new(cell.kind, name, r);
    s.workload = Some(cell.workload.to_owned());
    s.load_fraction = cell.load_fraction;
    s.rate = (cell.kind == Kind::EqualLoad)
        .then_some(cell.rate)
        .flatten();
    s.resources = resources;
    let mut s = s.with_load(report.clone());
    // The level, as for every protocol (the report's own `connections` says how many it used).
    s.connections = Some(cell.connections);
    lab.record(s)?;
    lab.progress.inc(1);
    Ok(Some(report))
}

/// Where a cell's resources are read over a generator's measured part.
enum Sampling {
    Ready(Watch),
    Running(Sampler),
    Done(Resources),
    /// Closed before it opened (a cancelled run): nothing read.
    Missed,
}

impl Sampling {
    fn take_resources(&mut self) -> Option<Resources> {
        match std::mem::replace(self, Sampling::Missed) {
            Sampling::Done(r) => Some(r),
            _ => None,
        }
    }
}

/// A window that starts a sampler of `watch` when the generator's measured part opens and
/// finishes it when the part closes; what it read is left in the returned slot.
fn sampling_window(watch: Watch) -> (Window, Arc<Mutex<Sampling>>) {
    let slot = Arc::new(Mutex::new(Sampling::Ready(watch)));
    let state = slot.clone();
    let window = Window(Arc::new(move |edge| {
        let Ok(mut s) = state.lock() else { return };
        *s = match (std::mem::replace(&mut *s, Sampling::Missed), edge) {
            (Sampling::Ready(w), Edge::Opens) => Sampling::Running(Sampler::start(w)),
            (Sampling::Running(sampler), Edge::Closes) => Sampling::Done(sampler.finish()),
            (other, _) => other,
        };
    }));
    (window, slot)
}

/// The suite's generators when a cell has more than the lab's own (several local processes, or
/// commands that run one elsewhere).
fn fleet<'a>(lab: &'a Recorder<Servers>, suite: &'a ServerSuite) -> Option<Fleet<'a>> {
    suite.has_fleet().then(|| Fleet {
        local: suite.generators,
        commands: &suite.generator_commands,
        cpus: &lab.info.cpus,
        cancel: lab.cancel_flag(),
    })
}

/// The load generator's configuration for `requests` against a running variant: `connections`
/// of `streams` each, the suite's threads and timeout, spinning when it has CPUs of its own.
pub(super) fn load_config(
    lab: &Recorder<Servers>,
    suite: &ServerSuite,
    running: &Running,
    requests: &[SentRequest],
    connections: usize,
    streams: usize,
) -> anyhow::Result<LoadConfig> {
    let mut config = requests::load_config(&running.base_url(), requests)?;
    if let Some(tls) = &running.tls {
        config.ca_file = tls.ca_file.clone();
        config.insecure = tls.insecure;
    }
    config.connections = connections;
    config.http2 = running.protocol == Protocol::Http2;
    config.streams = streams;
    config.threads = suite.load_threads.min(connections);
    config.timeout = Duration::from_secs_f64(suite.timeout_secs);
    config.cancel = Some(lab.cancel_flag());
    // A generator on CPUs of its own spins rather than sleeps while it waits, so no server pays
    // to wake it (docs/method.md, Throughput): in the open loop too, whose rates are fractions
    // of a maximum measured that way.
    config.spin = lab.info.cpus.generator_alone(config.threads);
    Ok(config)
}

/// The terminal's line for a measured cell: what the load generator saw, and how busy the
/// variant's processes kept their CPUs.
fn cell_line(
    name: &str,
    workload: &str,
    what: &str,
    report: &LoadReport,
    resources: Option<&wasmlab_model::sample::Resources>,
) -> String {
    let busy = resources
        .and_then(|r| r.utilization)
        .map(|u| format!(", server {:.0}% busy", u * 100.0))
        .unwrap_or_default();
    match &report.open_loop {
        Some(o) => format!(
            "{:<22} {:<8} {what:<20} {:>9.0} req/s offered, p50 {:.3} ms p99 {:.3} ms (uncorrected p99 {:.3}), dropped {}, errors {}{busy}",
            name,
            workload,
            o.target_rate,
            report.latency_ms.p50,
            report.latency_ms.p99,
            o.uncorrected_ms.p99,
            o.dropped,
            report.errors.total()
        ),
        None => format!(
            "{:<22} {:<8} {what:<20} {:>9.0} req/s  p50 {:.3} ms  p99 {:.3} ms  errors {}{busy}{}",
            name,
            workload,
            report.rps,
            report.latency_ms.p50,
            report.latency_ms.p99,
            report.errors.total(),
            if report.generator_saturated {
                "  (generator saturated)"
            } else {
                ""
            }
        ),
    }
}
