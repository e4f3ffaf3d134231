//! The environment section of a server run's report: the machine, the tools, the suite's
//! parameters and the order the variants ran in.

use serde::Serialize;
use wasmlab_analysis::ServerAnalysis;
use wasmlab_model::idle::IdleRecord;
use wasmlab_model::suite::ServerSuite;

use crate::format::grouped;
use crate::view::{Cell, Table};

#[derive(Serialize)]
pub(super) struct Environment {
    cpu: String,
    cores: usize,
    memory_gib: Option<String>,
    kernel: String,
    cpus: String,
    /// How idle CPUs waited while the run measured.
    idle: String,
    sha_extensions: bool,
    compute_sha256: String,
    native_code: String,
    /// The environment the servers were started with, in a sentence (None for runs recorded
    /// before it was).
    server_env: Option<String>,
    /// (tool, version: None when unknown).
    tools: Vec<(&'static str, Option<String>)>,
    suite: SuiteParameters,
    /// What each workload sent and what its answers were checked for (None for runs recorded
    /// before workloads were data).
    workloads: Option<Table>,
    /// Each host a user's component (`--component`) ran in: its environment and where it may
    /// send requests there.
    components: Option<Table>,
    orders: Option<Table>,
    seed: u64,
}

#[derive(Serialize)]
struct SuiteParameters {
    variants: Vec<String>,
    workloads: Vec<String>,
    connections: Vec<usize>,
    duration_secs: String,
    warmup_secs: String,
    load_threads: usize,
    /// The generators of each load cell, when more than the lab's own: "2 local processes" ...
    generators: Option<String>,
    repetitions: u32,
    timeout_secs: String,
    start_timeout_secs: String,
    /// Runs recorded before workloads were data: the echo workload's body size.
    echo_body_bytes: Option<usize>,
    cold_start: Option<ColdStartParameters>,
    warm: Option<WarmParameters>,
    open_loop: Option<OpenLoopParameters>,
    http2: Option<String>,
}

#[derive(Serialize)]
struct ColdStartParameters {
    runs: u32,
    variants: Vec<String>,
}

#[derive(Serialize)]
struct WarmParameters {
    duration_secs: String,
    warmup_secs: String,
    workloads: Vec<String>,
}

#[derive(Serialize)]
struct OpenLoopParameters {
    /// As percentages of the variant's maximum.
    fractions: Vec<String>,
    duration_secs: String,
    connections: usize,
    workloads: Vec<String>,
}

/// One row per workload the suite named: its name, whether it was measured, what it is, its
/// request(s) and its check(s).
fn workloads(s: &ServerSuite) -> Option<Table> {
    let rows: Vec<Vec<Cell>> = s
        .named_workloads()
        .iter()
        .filter_map(|name| s.workload(name))
        .map(|w| {
            let role = match s.workloads.contains(&w.name) {
                true => "measured",
                false => "verified only",
            };
            let requests: Vec<String> = w.each_request().map(|r| r.describe()).collect();
            let mut checks: Vec<String> = Vec::new();
            for r in w.each_request() {
                let c = w.expect_for(r).describe();
                if !checks.contains(&c) {
                    checks.push(c);
                }
            }
            vec![
                w.name.clone().into(),
                role.into(),
                w.about.clone().into(),
                requests.join(", then ").into(),
                checks.join("; ").into(),
            ]
        })
        .collect();
    Table::some(
        &[
            "Workload",
            "",
            "What it asks",
            "Request",
            "Answer checked for",
        ],
        5,
        rows,
    )
}

pub(super) fn environment(a: &ServerAnalysis) -> Environment {
    let m = &a.info.header.machine;
    let s = &a.info.suite;
    let rows: Vec<Vec<Cell>> = a
        .info
        .orders
        .iter()
        .enumerate()
        .map(|(r, o)| vec![(r + 1).to_string().into(), o.join(" → ").into()])
        .collect();
    Environment {
        cpu: m.cpu_model.clone(),
        cores: m.cores,
        memory_gib: m.memory_kib.map(|k| grouped(k as f64 / 1024.0 / 1024.0, 1)),
        kernel: m.kernel.clone(),
        cpus: a.info.cpus.describe(),
        idle: IdleRecord::describe(a.info.idle.as_ref()),
        sha_extensions: m.cpu_sha_extensions,
        compute_sha256: m.compute_sha256.clone(),
        native_code: m.native_code.clone(),
        server_env: server_env(a),
        tools: vec![
            ("wasmlab", Some(m.tools.wasmlab.clone())),
            ("rustc", m.tools.rustc.clone()),
            ("wasmtime", m.tools.wasmtime.clone()),
            ("hyper", m.tools.hyper.clone()),
            ("tokio", m.tools.tokio.clone()),
        ],
        suite: SuiteParameters {
            variants: s.variants.clone(),
            workloads: s.workloads.clone(),
            connections: s.connections.clone(),
            duration_secs: s.duration_secs.to_string(),
            warmup_secs: s.warmup_secs.to_string(),
            load_threads: s.load_threads,
            generators: generators(s),
            repetitions: s.repetitions,
            timeout_secs: s.timeout_secs.to_string(),
            start_timeout_secs: s.start_timeout_secs.to_string(),
            echo_body_bytes: s.echo_body_bytes,
            cold_start: s.cold_start.as_ref().map(|c| ColdStartParameters {
                runs: c.runs,
                variants: s.cold_start_variants(),
            }),
            warm: s.warm.as_ref().map(|w| WarmParameters {
                duration_secs: w.duration_secs.to_string(),
                warmup_secs: w.warmup_secs.to_string(),
                workloads: s.warm_workloads(),
            }),
            http2: s.http2_axis(),
            open_loop: s.open_loop.as_ref().map(|o| OpenLoopParameters {
                fractions: o
                    .fractions
                    .iter()
                    .map(|f| format!("{:.0}%", f * 100.0))
                    .collect(),
                duration_secs: o.duration_secs.to_string(),
                connections: o.connections,
                workloads: s.open_loop_workloads(),
            }),
        },
        workloads: workloads(s),
        components: components(a),
        orders: (!rows.is_empty()).then(|| Table::new(&["Repetition", "Order"], 2, rows)),
        seed: a.info.header.seed,
    }
}

/// One row per host of a user's component: the variant that ran it, the environment it was
/// given, and where the host lets it send requests.
fn components(a: &ServerAnalysis) -> Option<Table> {
    let mut rows: Vec<Vec<Cell>> = Vec::new();
    for c in &a.info.components {
        let mut env = vec![format!(
            "{}=(the upstream's URL)",
            wasmlab_model::component::UPSTREAM_VAR
        )];
        env.extend(c.env.iter().map(|(k, v)| format!("{k}={v}")));
        for spec in a.info.variant_specs.iter() {
            if spec.component.as_deref() != Some(c.path.as_str()) {
                continue;
            }
            rows.push(vec![
                c.file_name().to_owned().into(),
                spec.name.clone().into(),
                env.join(" ").into(),
                spec.outgoing_requests
                    .clone()
                    .unwrap_or_else(|| "not said by the host's variant file".into())
                    .into(),
            ]);
        }
    }
    Table::some(
        &[
            "Your component",
            "Runs as",
            "Its environment",
            "Outgoing requests",
        ],
        4,
        rows,
    )
}

/// What the servers' environment held: the variables every measured variant had, by name (their
/// values are the lab's own: PATH, HOME…), then each variant's others with their values.
fn server_env(a: &ServerAnalysis) -> Option<String> {
    let envs: Vec<_> = a
        .info
        .variants
        .iter()
        .filter(|v| !v.env.is_empty())
        .collect();
    let first = envs.first()?;
    let common: Vec<&String> = first
        .env
        .iter()
        .filter(|(k, v)| envs.iter().all(|o| o.env.get(*k) == Some(v)))
        .map(|(k, _)| k)
        .collect();
    let mut text = format!(
        "{} from the lab's environment, nothing else of the caller's",
        common
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for v in &envs {
        let own: Vec<String> = v
            .env
            .iter()
            .filter(|(k, _)| !common.contains(k))
            .map(|(k, val)| format!("{k}={val}"))
            .collect();
        if !own.is_empty() {
            text += &format!("; {}: {}", v.name, own.join(", "));
        }
    }
    Some(text)
}

/// A suite's generators per load cell, when more than the lab's own one, for a reader: their
/// parts were merged (histograms added) into each cell's figures.
fn generators(s: &ServerSuite) -> Option<String> {
    if !s.has_fleet() {
        return None;
    }
    let mut parts = Vec::new();
    if s.generators > 0 {
        parts.push(format!(
            "{} local process{}",
            s.generators,
            if s.generators == 1 { "" } else { "es" }
        ));
    }
    parts.extend(s.generator_commands.iter().map(|c| format!("`{c}`")));
    Some(format!(
        "{} per load cell ({}), started together, their parts merged; warm latency: one",
        s.generator_count(),
        parts.join(", ")
    ))
}
