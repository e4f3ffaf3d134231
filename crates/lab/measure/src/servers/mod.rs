//! A server suite's run, in the order it is measured: every variant of the repetitions
//! prepared, then verified before anything is measured (and its capacity probed, where the
//! suite's equal-load rates are shares of the slowest variant's; in a run of one repetition with
//! nothing to probe, only by the launch that measures it); then, for each repetition, each
//! variant in a shuffled order: launch, verify, its load cells (closed loop and equal load, warm,
//! open loop) with resources read, stop. After the first repetition, whose answer is said then,
//! the variants measured only for their cold start are prepared (a build of their own, minutes
//! the first time) and verified, and the cold starts run, each launch in a shuffled order on an
//! otherwise idle machine. Then the other repetitions and, where the suite allows more, as many
//! more as the first ones' intervals ask for.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use wasmlab_analysis::analyse_servers as analyse;
use wasmlab_analysis::servers::{NOISY_SPREAD, plus_minus};
use wasmlab_analysis::stats::stein_total;
use wasmlab_model::idle::IdleRecord;
use wasmlab_model::run::{AddedRepetitions, Run, RunState, ServerRunInfo};
use wasmlab_model::sample::Sample;
use wasmlab_model::suite::ServerSuite;
use wasmlab_plan::Plan;
use wasmlab_plan::idle::IdleHold;
use wasmlab_plan::tools::State;
use wasmlab_record::{Recorder, ResultsDir, Servers};

use crate::AnswerSoFar;
use crate::launch::prepare;
use crate::launch::{Exited, LaunchContext, Launchable, RunValues, Running};
use crate::requests::{SentRequest, Workloads};
use crate::verify;

mod cells;
mod cold_start;
mod equal_load;
mod open_loop;
mod throughput;
mod warm;

/// Measures a server suite's run, recorded into a new directory under `results`.
pub(crate) fn run(
    plan: &Plan,
    suite: &ServerSuite,
    results: &Path,
    resume: Option<crate::Resume<ServerRunInfo, Sample>>,
    cancel: Arc<AtomicBool>,
    so_far: AnswerSoFar,
) -> anyhow::Result<(ResultsDir, Run)> {
    // Body files are read here, once: one that went missing stops the run before it starts.
    let workloads = Workloads::of(suite)?;
    let ready = first_request(suite, &workloads)?;
    // Held from the first launch to the last cell, released when the run ends however it ends.
    let idle = IdleHold::take(suite.cpu_idle, &plan.cpus.all());
    let resumed = resume.is_some();
    let rec = match resume {
        None => start_recording(plan, suite, idle.record(), results, cancel)?,
        Some(resume) => resume_recording(plan, suite, idle.record(), resume, cancel)?,
    };
    let mut run = ServerRun {
        plan,
        suite,
        rec,
        client: verify::Client::new()?,
        start_timeout: Duration::from_secs_f64(suite.start_timeout_secs),
        ready: &ready,
        workloads: &workloads,
        upstream: None,
        so_far,
        answered: 0,
    };
    // The upstream echo server for /proxy, then the preparation of every variant the
    // repetitions measure.
    let upstream = run.start_upstream()?;
    if let Err(why) = wasmlab_plan::containerd::confine(&plan.cpus) {
        run.rec.say(why);
    }
    let upstream_url = format!("http://{}", upstream.addr);
    let in_rounds = |name: &str| suite.variants.iter().any(|v| v == name);
    let variants = run.prepare_all(&upstream_url, &in_rounds)?;
    // After the first repetition's answer: those measured only for their cold start, then the
    // cold starts. A run stopped before then has no cold starts; the answer came first.
    let mut cold_only = Vec::new();
    let mut measure = || -> anyhow::Result<()> {
        let measured: Vec<&Launchable> = variants.iter().collect();
        let probed = match verified_when_measured(suite) {
            true => {
                run.verify_when_measured(&measured);
                Vec::new()
            }
            false => run.verify_all(&measured)?,
        };
        // A resumed run offers the rates it chose before it was interrupted.
        if resumed && !run.rec.info.equal_load.is_empty() {
            for e in &run.rec.info.equal_load {
                run.rec.say(format!(
                    "equal load: {} at {}; as this run chose before it was interrupted",
                    e.workload,
                    e.describe()
                ));
            }
        } else {
            run.choose_equal_load_rates(&probed)?;
        }
        run.upstream = upstream.pid();
        run.repetitions(&named(&suite.variants, &[&variants]), &mut |run| {
            let Some(c) = &suite.cold_start else {
                return Ok(());
            };
            cold_only = run.prepare_all(&upstream_url, &|n| !in_rounds(n))?;
            run.verify_all(&cold_only.iter().collect::<Vec<_>>())?;
            let cold = named(&suite.cold_start_variants(), &[&variants, &cold_only]);
            run.cold_starts(&cold, c.runs)
        })
    };
    let measured = measure();
    run.rec.progress.finish_and_clear();
    upstream.stop();
    // However the measuring ended: what the variants made for the run (a container image) goes.
    for v in variants.iter().chain(&cold_only) {
        prepare::finish(v, &run.rec.dir.file(&format!("{}.log", v.name())), &|m| {
            run.rec.say(m)
        });
    }
    measured?;
    run.rec.info.idle = Some(idle.finish());
    run.rec.finish()
}

/// Whether each measured variant is verified only in the launch that measures it: one repetition
/// and no capacity to probe, where a launch only to verify would start every server twice (an
/// 18 MB Python component compiled twice: twice 25 s in a wasmCloud host on 2 cores) for nothing
/// the measuring launch does not check as well. A variant that answers wrongly is still measured
/// in no way at all: its launch is verified before its cells.
fn verified_when_measured(suite: &ServerSuite) -> bool {
    suite.repetitions == 1 && equal_load::probed_workloads(suite).is_empty()
}

/// The variants `names` names, in that order, from those prepared in `lists`.
fn named<'v>(names: &[String], lists: &[&'v [Launchable]]) -> Vec<&'v Launchable> {
    names
        .iter()
        .filter_map(|n| lists.iter().flat_map(|l| l.iter()).find(|v| v.name() == n))
        .collect()
}

/// The suite's first workload's first request: a launch is ready, and a cold start over, when it
/// is answered with its expected status.
fn first_request(suite: &ServerSuite, workloads: &Workloads) -> anyhow::Result<SentRequest> {
    let first = suite
        .workloads
        .first()
        .ok_or_else(|| anyhow::anyhow!("suite {} measures no workload", suite.name))?;
    workloads
        .requests(first)?
        .first()
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("workload {first:?} has no request"))
}

/// The results directory and run.json, every variant's outcome so far (those that cannot run
/// here skipped, with the reason), and the progress line.
fn start_recording(
    plan: &Plan,
    suite: &ServerSuite,
    idle: &IdleRecord,
    results: &Path,
    cancel: Arc<AtomicBool>,
) -> anyhow::Result<Recorder<Servers>> {
    let dir = ResultsDir::create(results)?;
    eprintln!(
        "wasmlab: suite {}; results in {}; {}",
        suite.name,
        dir.path.display(),
        plan.cpus.describe(),
    );
    eprintln!("wasmlab: {}", IdleRecord::describe(Some(idle)));
    if let Some(axis) = suite.http2_axis() {
        eprintln!("wasmlab: HTTP/2: {axis}");
    }
    for c in &plan.components {
        let hosts: Vec<&str> = plan
            .variants
            .iter()
            .filter(|p| p.spec.component.as_deref() == Some(c.path.as_str()))
            .map(|p| p.name())
            .collect();
        eprintln!(
            "wasmlab: your component {} ({} bytes, {}, {} imports) runs as {}",
            c.file_name(),
            c.bytes,
            c.world,
            c.imports.len(),
            hosts.join(", ")
        );
        if !c.env.is_empty() {
            let env: Vec<String> = c.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            eprintln!("wasmlab:   its environment: {}", env.join(" "));
        }
        // Each host's policy in short (its variant file's words up to the colon), hosts alike
        // together; the report's environment section has the whole sentence.
        let mut policies: Vec<(&str, Vec<&str>)> = Vec::new();
        for p in plan.variants.iter() {
            if p.spec.component.as_deref() != Some(c.path.as_str()) {
                continue;
            }
            let policy = p.spec.outgoing_requests.as_deref().unwrap_or("not said");
            let short = policy.split(':').next().unwrap_or(policy);
            match policies.iter_mut().find(|(s, _)| *s == short) {
                Some((_, hosts)) => hosts.push(p.name()),
                None => policies.push((short, vec![p.name()])),
            }
        }
        let said: Vec<String> = policies
            .iter()
            .map(|(policy, hosts)| format!("{policy} in {}", hosts.join(", ")))
            .collect();
        eprintln!("wasmlab:   its outgoing requests go {}", said.join("; "));
    }
    let info = ServerRunInfo {
        header: crate::header(plan, &dir.run_id),
        core_guest: plan.core_guest.as_ref().map(|p| p.display().to_string()),
        components: plan.components.clone(),
        orders: Vec::new(),
        cpus: plan.cpus.clone(),
        idle: Some(idle.clone()),
        suite: suite.clone(),
        artifacts: Vec::new(),
        variants: Vec::new(),
        variant_specs: plan.variants.iter().map(|p| p.spec.clone()).collect(),
        variant_tools: Vec::new(),
        container_engine: None,
        containerd: None,
        equal_load: Vec::new(),
        added_repetitions: None,
        resumed: Vec::new(),
    };
    debug_assert_eq!(info.header.state, RunState::Running);
    let progress = crate::progress_bar(planned_steps(plan, suite), "steps");
    let mut rec = Recorder::start(dir, info, cancel, progress)?;
    for p in &plan.variants {
        rec.outcome(p.name());
        if !matches!(p.state, State::Ready { .. }) {
            rec.skip(p.name(), p.state.describe(p.name()))?;
        }
    }
    rec.save_info()?;
    Ok(rec)
}

/// An interrupted run's recorder, to measure on: its samples kept, each variant's outcome as it
/// was (one interrupted measured again), what it recorded of its planning (artifacts) made anew.
fn resume_recording(
    plan: &Plan,
    suite: &ServerSuite,
    idle: &IdleRecord,
    resume: crate::Resume<ServerRunInfo, Sample>,
    cancel: Arc<AtomicBool>,
) -> anyhow::Result<Recorder<Servers>> {
    let crate::Resume {
        dir,
        mut info,
        samples,
    } = resume;
    eprintln!(
        "wasmlab: suite {}; resuming {} ({} samples kept); {}",
        suite.name,
        dir.path.display(),
        samples.len(),
        plan.cpus.describe(),
    );
    eprintln!("wasmlab: {}", IdleRecord::describe(Some(idle)));
    for o in &mut info.variants {
        if o.status == wasmlab_model::run::Status::Interrupted {
            o.status = wasmlab_model::run::Status::Measured;
        }
    }
    info.artifacts.clear();
    info.idle = Some(idle.clone());
    let progress = crate::progress_bar(planned_steps(plan, &info.suite), "steps");
    let mut rec = Recorder::resume(dir, info, samples, cancel, progress)?;
    for p in &plan.variants {
        if !matches!(p.state, State::Ready { .. }) && !rec.out(p.name()) {
            rec.skip(p.name(), p.state.describe(p.name()))?;
        }
    }
    Ok(rec)
}

/// Progress steps: verification of each variant, cold launches, then per repetition and variant
/// its cells.
fn planned_steps(plan: &Plan, suite: &ServerSuite) -> u64 {
    let cold = suite
        .cold_start
        .as_ref()
        .map_or(0, |c| c.runs as usize * suite.cold_start_variants().len());
    (plan.variants.len() + cold) as u64
        + u64::from(suite.repetitions) * suite.variants.len() as u64 * variant_steps(suite)
}

/// Progress steps of one variant in one repetition: its cells.
fn variant_steps(suite: &ServerSuite) -> u64 {
    let fractions = suite.open_loop.as_ref().map_or(0, |o| o.fractions.len());
    let equal_load: usize = suite.equal_load.as_ref().map_or(0, |e| {
        suite
            .equal_load_workloads()
            .iter()
            .map(|w| e.rates.of(w).map_or(e.fractions.len(), <[f64]>::len))
            .sum()
    });
    (suite.workloads.len() * suite.connections.len()
        + equal_load
        + suite.warm_workloads().len()
        + suite.open_loop_workloads().len() * fractions) as u64
}

/// A server suite's run in progress.
struct ServerRun<'a> {
    plan: &'a Plan,
    suite: &'a ServerSuite,
    rec: Recorder<Servers>,
    /// Verifies each launch's answers.
    client: verify::Client,
    start_timeout: Duration,
    /// What a launch waits for: the first workload's first request.
    ready: &'a SentRequest,
    /// Every workload's requests.
    workloads: &'a Workloads,
    /// The upstream server's process, whose CPU each cell reads beside the variant's.
    upstream: Option<u32>,
    /// The answer so far, said after each repetition but the last.
    so_far: AnswerSoFar<'a>,
    /// How many repetitions the answer said last was made of.
    answered: u32,
}

impl<'a> ServerRun<'a> {
    /// How `name` is launched in this run: on the servers' CPUs, its stderr in `NAME.log`.
    fn ctx(&self, name: &str) -> LaunchContext<'a> {
        LaunchContext {
            cpus: &self.plan.cpus,
            start_timeout: self.start_timeout,
            log_path: self.rec.dir.file(&format!("{name}.log")),
            ready: self.ready,
        }
    }

    /// The upstream echo server for /proxy: wasmlab itself, as a child process like the
    /// variants.
    fn start_upstream(&self) -> anyhow::Result<Running> {
        let mut cmd = std::process::Command::new(wasmlab_plan::exec::own_exe()?);
        cmd.args(["upstream", "--port", "0"]);
        let ready = SentRequest::get("/");
        let ctx = LaunchContext {
            ready: &ready,
            ..self.ctx("upstream")
        };
        crate::launch::spawn_server(
            "upstream",
            cmd,
            &ctx,
            &ready,
            None,
            crate::launch::WRONG_STATUS_GRACE,
            None,
        )
    }

    /// The runnable variants `which` names, with this run's values, each prepared (a failed
    /// preparation fails the variant), and the sizes of what they run recorded (wasmlab's own
    /// binaries first, with the first call).
    fn prepare_all(
        &mut self,
        upstream: &str,
        which: &dyn Fn(&str) -> bool,
    ) -> anyhow::Result<Vec<Launchable>> {
        let plan = self.plan;
        let host_triple = wasmlab_plan::machine::host_triple();
        let results = self.rec.dir.path.clone();
        let values = RunValues {
            bin: &plan.bin_dir,
            workspace: plan.workspace.as_deref(),
            tools: &plan.tools,
            results: &results,
            core_guest: plan.core_guest.as_deref(),
            upstream,
            server_cpus: plan.cpus.server_list(),
            run_id: &self.rec.dir.run_id.clone(),
            host_triple: &host_triple,
        };
        if self.rec.info.artifacts.is_empty() {
            self.rec.info.artifacts = prepare::own_artifacts(
                &plan.bin_dir,
                &plan.own_binaries(),
                plan.core_guest.as_deref(),
            );
        }
        let mut variants = Vec::new();
        for p in plan.ready().filter(|p| which(p.name())) {
            let State::Ready {
                tools,
                container,
                containerd,
            } = &p.state
            else {
                continue;
            };
            let info = &mut self.rec.info;
            for t in tools {
                if !info.variant_tools.contains(t) {
                    info.variant_tools.push(t.clone());
                }
            }
            if container.is_some() {
                info.container_engine = container.clone();
            }
            if containerd.is_some() {
                info.containerd = containerd.clone();
            }
            let v = Launchable::new(
                &p.spec,
                &values,
                tools,
                (container.as_ref(), containerd.as_ref()),
            );
            let log = self.rec.dir.file(&format!("{}.log", p.name()));
            let rec = &self.rec;
            match prepare::prepare(&v, &log, &|m| rec.say(m)) {
                Ok(()) => self.rec.info.artifacts.extend(prepare::artifacts(&v)),
                Err(e) => self.rec.fail(p.name(), format!("{e:#}"))?,
            }
            variants.push(v);
        }
        self.rec.save_info()?;
        Ok(variants)
    }

    /// (variant, another) whose equal-load rates are shared, so that the two are read at the same
    /// loads: a user's component and its host's floor, a variant and the path it adds Wasm to
    /// (`adds_to`), a variant and each it is set beside (`compare_with`).
    fn floors(&self) -> Vec<(String, String)> {
        self.plan
            .variants
            .iter()
            .flat_map(|p| {
                let name = &p.spec.name;
                p.spec
                    .floor
                    .iter()
                    .chain(&p.spec.adds_to)
                    .chain(&p.spec.compare_with)
                    .map(move |other| (name.clone(), other.clone()))
            })
            .collect()
    }

    /// The suite as `v` meets it: without the workloads it does not serve (`unserved`).
    fn suite_for(&self, v: &Launchable) -> std::borrow::Cow<'a, ServerSuite> {
        let suite: &'a ServerSuite = self.suite;
        suite
            .served_by(&v.spec.unserved)
            .unwrap_or(std::borrow::Cow::Borrowed(suite))
    }

    /// Why `v` cannot be measured in this suite at all, from the workloads it does not serve:
    /// none of those measured, or not the first, which readiness and cold starts wait for.
    fn unservable(&self, v: &Launchable) -> Option<String> {
        let unserved = &v.spec.unserved;
        if self.suite.served_by(unserved).is_none() {
            return Some(format!(
                "serves none of the suite's workloads ({})",
                said_unserved(unserved)
            ));
        }
        let first = self.suite.workloads.first()?;
        let why = unserved.get(first)?;
        Some(format!(
            "does not serve {first}, the suite's first workload, which readiness and cold starts \
             wait for: {why}"
        ))
    }

    /// Launches `v` and verifies its answers; a variant that does not start or answers wrongly
    /// is marked failed (and `None` returned).
    fn launch_verified(
        &mut self,
        v: &Launchable,
        ctx: &LaunchContext<'_>,
    ) -> anyhow::Result<Option<Running>> {
        if let Some(why) = self.unservable(v) {
            self.rec.skip(v.name(), why)?;
            return Ok(None);
        }
        let running = match v.launch(ctx) {
            Ok(running) => running,
            // A server whose build lacks what the variant needs (Envoy without a Wasm runtime)
            // says so and exits: the variant cannot run here, in the server's own words.
            Err(e)
                if e.downcast_ref::<Exited>().is_some()
                    && let Some(line) = unavailable_line(&v.spec, &ctx.log_path) =>
            {
                self.rec
                    .skip(v.name(), format!("unavailable here: {line}"))?;
                return Ok(None);
            }
            // A host that exits on being given a user's component (a world it does not serve,
            // imports it lacks, a rewrite that refuses it) cannot run that component: said in
            // its own words, and not the run's failure. One that starts and answers wrongly,
            // or not at all, fails.
            Err(e) if v.spec.component.is_some() && e.downcast_ref::<Exited>().is_some() => {
                self.rec.skip(
                    v.name(),
                    format!("this host cannot run the component: {e:#}"),
                )?;
                return Ok(None);
            }
            Err(e) => {
                self.rec.fail(v.name(), format!("{e:#}"))?;
                return Ok(None);
            }
        };
        self.rec
            .progress
            .set_message(format!("{}: verifying", v.name()));
        let checks = verify::verify(&self.client, &running, &self.suite_for(v), self.workloads);
        let failed: Vec<String> = checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{}: {}", c.what, c.detail))
            .collect();
        let outcome = self.rec.outcome(v.name());
        outcome.checks = checks;
        outcome.env = running.env.clone();
        if !failed.is_empty() {
            running.stop();
            self.rec.fail(
                v.name(),
                format!("verification failed ({})", failed.join("; ")),
            )?;
            return Ok(None);
        }
        Ok(Some(running))
    }

    /// Verifies every variant once, before any measurement: one that answers wrongly is
    /// measured in no way at all, its cold starts included. Each measured variant's capacity is
    /// probed then where equal-load rates are chosen from it: (variant, workload, req/s).
    fn verify_all(
        &mut self,
        variants: &[&Launchable],
    ) -> anyhow::Result<Vec<(String, String, f64)>> {
        let mut probed = Vec::new();
        for v in variants {
            if self.rec.cancelled() {
                break;
            }
            self.rec.progress.inc(1);
            if self.rec.out(v.name()) {
                continue;
            }
            if let Some(mut running) = self.launch_verified(v, &self.ctx(v.name()))? {
                self.say_unserved(v);
                if self.suite.variants.iter().any(|n| n == v.name()) {
                    let suite = self.suite_for(v);
                    let found = equal_load::probe(
                        &mut self.rec,
                        &suite,
                        self.workloads,
                        v.name(),
                        &running,
                    );
                    match found {
                        Ok(found) => probed.extend(
                            found
                                .into_iter()
                                .map(|(w, rps)| (v.name().to_owned(), w, rps)),
                        ),
                        Err(e) => self.rec.fail(v.name(), format!("probe failed: {e:#}"))?,
                    }
                    if let Some(status) = running.exited() {
                        self.rec.fail(
                            v.name(),
                            format!("exited while its capacity was probed ({status})"),
                        )?;
                    }
                }
                running.stop();
            }
        }
        self.rec.save_info()?;
        Ok(probed)
    }

    /// In place of [`Self::verify_all`] where [`verified_when_measured`]: nothing launched, what
    /// each variant does not serve said as its verification would.
    fn verify_when_measured(&mut self, variants: &[&Launchable]) {
        self.rec.say(
            "wasmlab: one repetition and no capacity to probe: each variant is verified in the \
             launch that measures it"
                .to_owned(),
        );
        for v in variants {
            self.rec.progress.inc(1);
            if !self.rec.out(v.name()) && self.unservable(v).is_none() {
                self.say_unserved(v);
            }
        }
    }

    /// The workloads of the suite `v` does not serve, said once: neither verified nor measured.
    fn say_unserved(&mut self, v: &Launchable) {
        let unserved = &v.spec.unserved;
        let left: Vec<String> = self
            .suite
            .named_workloads()
            .iter()
            .filter_map(|w| unserved.get(w).map(|why| format!("{w} ({why})")))
            .collect();
        if !left.is_empty() {
            self.rec.say(format!(
                "{}: not verified or measured on what it does not serve: {}",
                v.name(),
                left.join("; ")
            ));
        }
    }

    /// The suite's repetitions, then those its intervals ask for (see [`Self::add_repetitions`]);
    /// `after_first` runs once the first repetition's answer is said (unless the run was
    /// stopped), and is not counted in the time a repetition takes.
    fn repetitions(
        &mut self,
        variants: &[&Launchable],
        after_first: &mut dyn FnMut(&mut Self) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let first = self.suite.repetitions;
        let started = Instant::now();
        self.rounds(variants, 0..first.min(1))?;
        let took_first = started.elapsed();
        if self.rec.cancelled() {
            return Ok(());
        }
        self.say_answer_so_far(1);
        after_first(self)?;
        let started = Instant::now() - took_first;
        self.rounds(variants, 1.min(first)..first)?;
        let Some(max) = self.suite.max_repetitions.filter(|m| *m > first) else {
            return Ok(());
        };
        if self.rec.cancelled() {
            return Ok(());
        }
        // A resumed run adds what it decided before it was interrupted.
        let added = match &self.rec.info.added_repetitions {
            Some(a) => a.added,
            None => self.add_repetitions(variants.len(), first, max, started.elapsed())?,
        };
        self.rounds(variants, first..first + added)
    }

    /// After the first `first` repetitions, how many more the lead's intervals ask for, up to
    /// `max` in all: none when they are as narrow as the suite's `interval_target` (by default a
    /// quiet machine's, [`NOISY_SPREAD`]) at the median, else as many as Stein's two-stage rule
    /// says bring the median to it ([`stein_total`]). The run looks at its own figures as
    /// `wasmlab report` would, so the rule judges exactly what the outputs will show. Recorded in
    /// run.json, and the suite's repetitions there become the total.
    fn add_repetitions(
        &mut self,
        variants: usize,
        first: u32,
        max: u32,
        took: Duration,
    ) -> anyhow::Result<u32> {
        let target = self.suite.interval_target.unwrap_or(NOISY_SPREAD);
        let spread = analyse(&self.rec.info, &self.rec.samples)
            .spread()
            .map(|s| s.median);
        let total = spread.map_or(first, |w| stein_total(first, w, target, max));
        let added = total - first;
        self.rec.say(match spread {
            None => format!(
                "wasmlab: after {first} repetitions no figure of the lead has an interval to \
                 judge the machine by: none added"
            ),
            Some(w) if added == 0 => format!(
                "wasmlab: after {first} repetitions the lead's 95% intervals are {} at the \
                 median, within the {} aimed for: none added (up to {max} in all when wider)",
                plus_minus(w),
                plus_minus(target)
            ),
            Some(w) => format!(
                "wasmlab: after {first} repetitions the lead's 95% intervals are {} at the \
                 median, wider than the {} aimed for: {added} more ({total} in all, at most \
                 {max}), about {} min",
                plus_minus(w),
                plus_minus(target),
                ((took.as_secs_f64() / f64::from(first) * f64::from(added)) / 60.0).ceil()
            ),
        });
        self.rec.info.added_repetitions = Some(AddedRepetitions {
            after: first,
            spread,
            target,
            added,
            max,
        });
        self.rec.info.suite.repetitions = total;
        let more = u64::from(added) * variants as u64 * variant_steps(self.suite);
        self.rec.progress.inc_length(more);
        self.rec.save_info()?;
        Ok(added)
    }

    /// The answer after `done` repetitions, as the caller words it, from the figures measured so
    /// far: the user sees one minutes before the run ends, narrower after each repetition. Said
    /// once for each number of repetitions, and not after the last.
    fn say_answer_so_far(&mut self, done: u32) {
        let total = self.rec.info.suite.repetitions;
        if done <= self.answered || done >= total {
            return;
        }
        self.answered = done;
        if let Some(text) = (self.so_far)(&analyse(&self.rec.info, &self.rec.samples), done, total)
        {
            self.rec.say(text);
        }
    }

    /// Repetitions `rounds`: each variant launched, verified again and measured, in a shuffled
    /// order each time (recorded in run.json).
    fn rounds(&mut self, variants: &[&Launchable], rounds: Range<u32>) -> anyhow::Result<()> {
        let steps = variant_steps(self.suite);
        crate::repetitions(
            self.plan,
            variants,
            rounds,
            self,
            |run| run.rec.cancelled(),
            |run, r, order| {
                // Repetition r is about to start, so r are done and at least one is to come.
                if r > 0 && !run.rec.cancelled() {
                    run.say_answer_so_far(r);
                }
                // A resumed run recorded the orders of the repetitions it began.
                if r as usize >= run.rec.info.orders.len() {
                    run.rec
                        .info
                        .orders
                        .push(order.iter().map(|v| v.name().to_owned()).collect());
                }
                run.rec.save_info()
            },
            |run, v, r| {
                let done_before = run.rec.progress.position();
                if !run.measure_variant(v, r)? {
                    run.rec.progress.set_position(done_before + steps);
                }
                Ok(())
            },
        )
    }

    /// Launches, verifies and measures one variant in repetition `r`. False when it was not
    /// measured (out of the run, failed at start or died while measured).
    fn measure_variant(&mut self, v: &Launchable, r: u32) -> anyhow::Result<bool> {
        if self.rec.out(v.name()) {
            return Ok(false);
        }
        // A resumed run's repetition that has all of the variant's cells needs no launch.
        let suite = self.suite_for(v);
        let planned = cells::planned(&suite, &self.rec, v.name());
        let samples = &self.rec.samples;
        if !planned.is_empty()
            && planned
                .iter()
                .all(|c| cells::recorded(samples, v.name(), r, c).is_some())
        {
            self.rec.progress.inc(planned.len() as u64);
            return Ok(true);
        }
        self.rec
            .progress
            .set_message(format!("{}: starting (run {})", v.name(), r + 1));
        let ctx = self.ctx(v.name());
        // Each launch is verified again: it is a new process.
        let Some(mut running) = self.launch_verified(v, &ctx)? else {
            return Ok(false);
        };
        let mut subject = cells::Subject {
            name: v.name(),
            r,
            running: &mut running,
            log: &ctx.log_path,
            upstream: self.upstream,
        };
        let measured = match cells::measure_variant(
            &mut self.rec,
            &suite,
            self.workloads,
            &mut subject,
            planned,
        ) {
            Ok(()) => true,
            Err(e) if e.is::<cells::VariantDied>() => {
                self.rec.fail(v.name(), format!("{e:#}"))?;
                false
            }
            Err(e) => return Err(e),
        };
        running.stop();
        self.rec.save_info()?;
        Ok(measured)
    }
}

/// The workloads a variant does not serve, with why: `compute (why); echo (why)`.
fn said_unserved(unserved: &std::collections::BTreeMap<String, String>) -> String {
    unserved
        .iter()
        .map(|(w, why)| format!("{w}: {why}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The first line of the server's log holding one of the variant's `unavailable_if` texts.
fn unavailable_line(spec: &wasmlab_model::variant::VariantSpec, log: &Path) -> Option<String> {
    let texts = &spec.start.as_ref()?.unavailable_if;
    let log = std::fs::read_to_string(log).ok()?;
    let line = log
        .lines()
        .find(|l| texts.iter().any(|t| l.contains(t.as_str())))?;
    Some(without_log_prefix(line).to_owned())
}

/// A log line without the bracketed fields a logger puts before its message (Envoy's
/// `[time][thread][level][logger] [file:line]`).
fn without_log_prefix(line: &str) -> &str {
    let mut rest = line.trim();
    while let Some(after) = rest.strip_prefix('[')
        && let Some((_, tail)) = after.split_once(']')
    {
        rest = tail.trim_start();
    }
    if rest.is_empty() { line.trim() } else { rest }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_repetition_with_nothing_to_probe_verifies_in_the_measuring_launch() {
        let suite = |more: &str| {
            ServerSuite::parse(&format!(
                "name = \"s\"\nvariants = [\"native\"]\nworkloads = [\"hello\", \"compute\"]\nconnections = [4]\nduration_secs = 1.0\n{more}"
            ))
            .unwrap()
        };
        assert!(verified_when_measured(&suite("")));
        assert!(!verified_when_measured(&suite("repetitions = 2\n")));
        // Rates that are shares of a probed capacity need the probe, so a launch before measuring.
        assert!(!verified_when_measured(&suite(
            "[equal_load]\nduration_secs = 1.0\n"
        )));
        // Rates given: nothing to probe.
        assert!(verified_when_measured(&suite(
            "[equal_load]\nduration_secs = 1.0\nrates = [1000]\n"
        )));
        assert!(!verified_when_measured(&suite(
            "[equal_load]\nduration_secs = 1.0\nrates = { compute = [100] }\n"
        )));
    }

    #[test]
    fn a_log_line_is_said_without_its_logger_s_fields() {
        let envoy = "[2026-11-30 10:35:33.765][15168][warning][wasm] [source/extensions/common/wasm/wasm_vm.cc:102] Failed to create Wasm VM using envoy.wasm.runtime.wamr runtime. Envoy was compiled without support for it";
        assert_eq!(
            without_log_prefix(envoy),
            "Failed to create Wasm VM using envoy.wasm.runtime.wamr runtime. Envoy was compiled without support for it"
        );
        assert_eq!(without_log_prefix("  plain words "), "plain words");
        // Brackets and nothing else: the line as it is.
        assert_eq!(without_log_prefix("[a][b]"), "[a][b]");
        assert_eq!(without_log_prefix("[unclosed words"), "[unclosed words");
    }

    #[test]
    fn the_line_that_says_a_build_cannot_run_the_variant_is_found_in_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("v.log");
        std::fs::write(
            &log,
            "[t][1][info] starting\n[t][1][warning] Failed: compiled without support for it\n[t][1][critical] exiting\n",
        )
        .unwrap();
        let spec = |texts: &str| {
            wasmlab_model::variant::VariantSpec::parse(
                &format!(
                    "name = \"v\"\nabout = \"v\"\n[start]\ncommand = [\"x\"]\nunavailable_if = [{texts}]\n"
                ),
                "test",
            )
            .unwrap()
        };
        assert_eq!(
            unavailable_line(&spec("\"without support\""), &log).as_deref(),
            Some("Failed: compiled without support for it")
        );
        assert_eq!(unavailable_line(&spec("\"no such words\""), &log), None);
        assert_eq!(unavailable_line(&spec(""), &log), None);
        assert!(
            wasmlab_model::variant::VariantSpec::parse(
                "name = \"v\"\nabout = \"v\"\n[start]\ncommand = [\"x\"]\nunavailable_if = [\" \"]\n",
                "test"
            )
            .is_err()
        );
    }
}
