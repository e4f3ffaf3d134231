//! The answer for a user's component (`wasmlab run --component`), a sentence a component and
//! workload, shared by the terminal, summary.md and report.html: the hosts cheapest first, each
//! with the component's CPU per request and its multiple of native's at the same rate, then
//! what the user's handler adds over each host's floor (the host running wasmlab's minimal
//! component at the same rate).

use wasmlab_analysis::ServerAnalysis;
use wasmlab_analysis::servers::{BASELINE, HandlerCost, ThroughputCell};
use wasmlab_analysis::stats::Estimate;
use wasmlab_model::run::Status;

use crate::format::{fmt_rps, fmt_us, times};

/// Each component's sentence on each workload it was measured on at equal load.
pub(crate) fn sentences(a: &ServerAnalysis) -> Vec<String> {
    let mut out = Vec::new();
    for c in &a.info.components {
        let runs_it = |h: &&HandlerCost| {
            a.info
                .variant_specs
                .iter()
                .any(|s| s.name == h.variant && s.component.as_deref() == Some(c.path.as_str()))
        };
        let unserved = unserved(a, &c.path);
        let mut said = false;
        for w in &a.workloads {
            let costs: Vec<&HandlerCost> = a
                .yours
                .iter()
                .filter(|h| &h.workload == w)
                .filter(runs_it)
                .collect();
            let mut s = match costs.is_empty() {
                false => sentence(c.file_name(), w, &costs),
                true => match saturated_sentence(a, &c.path, c.file_name(), w)
                    .or_else(|| unsaturated_sentence(a, &c.path, c.file_name(), w))
                {
                    Some(s) => s,
                    None => continue,
                },
            };
            if !unserved.is_empty() {
                s += &format!(" Not served in {}.", unserved.join(", "));
            }
            out.push(s);
            said = true;
        }
        if !said && !unserved.is_empty() {
            out.push(format!(
                "Your component {} was served in no host: {}.",
                c.file_name(),
                unserved.join(", ")
            ));
        }
    }
    out
}

/// The hosts that ran the component at `path` but measured nothing of it, each with its
/// outcome (`component-recycled (failed)`): the reasons are in the report's "not measured".
fn unserved(a: &ServerAnalysis, path: &str) -> Vec<String> {
    a.info
        .variants
        .iter()
        .filter(|o| o.status != Status::Measured && o.status != Status::Interrupted)
        .filter_map(|o| {
            let spec = a.info.variant_specs.iter().find(|s| s.name == o.name)?;
            (spec.component.as_deref() == Some(path)).then(|| {
                let host = spec.floor.as_deref().unwrap_or(&o.name);
                format!("{host} ({})", o.status.as_str())
            })
        })
        .collect()
}

/// Where a run measured no equal load (a suite of the user's routes without native), the
/// component's CPU per request at saturation in each host, cheapest first: from the throughput
/// cell at the most connections at which the host kept its CPUs busy. None where no host was
/// saturated.
fn saturated_sentence(
    a: &ServerAnalysis,
    path: &str,
    file: &str,
    workload: &str,
) -> Option<String> {
    let mut hosts: Vec<(&str, f64, f64, usize)> = host_cells(a, path, workload)
        .filter_map(|(host, cells)| {
            let cell = cells
                .filter(|t| !t.capacity_runs.is_empty())
                .max_by_key(|t| t.connections)?;
            let per_cpu_second = cell.capacity_runs.iter().map(|(_, c)| c).sum::<f64>()
                / cell.capacity_runs.len() as f64;
            Some((host, 1e6 / per_cpu_second, cell.rps.value, cell.connections))
        })
        .collect();
    hosts.sort_by(|x, y| x.1.total_cmp(&y.1));
    let ((host, us, rps, conns), others) = hosts.split_first()?;
    let mut s = format!(
        "Your component {file} on {workload}, its servers saturated (this run measured no equal \
         load): cheapest in {host} ({} µs a request, {} req/s at {conns} connections)",
        fmt_us(*us),
        fmt_rps(*rps)
    );
    for (host, us, _, _) in others {
        s += &format!("; {host} {} µs", fmt_us(*us));
    }
    Some(s + ".")
}

/// Each host that ran the component at `path` (named as its floor is), with its closed-loop
/// cells on `workload`.
fn host_cells<'a>(
    a: &'a ServerAnalysis,
    path: &'a str,
    workload: &'a str,
) -> impl Iterator<Item = (&'a str, impl Iterator<Item = &'a ThroughputCell>)> {
    a.info
        .variant_specs
        .iter()
        .filter(move |s| s.component.as_deref() == Some(path))
        .map(move |s| {
            let cells = a
                .throughput
                .iter()
                .filter(move |t| t.variant == s.name && t.workload == workload);
            (s.floor.as_deref().unwrap_or(&s.name), cells)
        })
}

/// Where the component was served but no host has a cost (no equal load, no saturated server),
/// what each host reached, fastest first: its most requests a second, at how many connections,
/// how busy its CPUs were and what set the pace instead. None where no host answered.
fn unsaturated_sentence(
    a: &ServerAnalysis,
    path: &str,
    file: &str,
    workload: &str,
) -> Option<String> {
    let mut hosts: Vec<(&str, &ThroughputCell)> = host_cells(a, path, workload)
        .filter_map(|(host, cells)| {
            let cell = cells
                .filter(|t| t.responses > 0)
                .max_by(|x, y| x.rps.value.total_cmp(&y.rps.value))?;
            Some((host, cell))
        })
        .collect();
    if hosts.is_empty() {
        return None;
    }
    hosts.sort_by(|x, y| y.1.rps.value.total_cmp(&x.1.rps.value));
    let reached: Vec<String> = hosts
        .iter()
        .map(|(host, cell)| {
            let busy = cell
                .utilization
                .map(|u| format!(", its CPUs {:.0}% busy", u * 100.0))
                .unwrap_or_default();
            // What set the pace of most of its runs instead of the server.
            let pace = cell
                .unsaturated()
                .into_iter()
                .max_by_key(|n| n.runs)
                .map(|n| format!(": {}", n.pace))
                .unwrap_or_default();
            format!(
                "{host} {} req/s at {} connections{busy}{pace}",
                fmt_rps(cell.rps.value),
                cell.connections
            )
        })
        .collect();
    Some(format!(
        "Your component {file} on {workload} was served in {}; no host kept its CPUs busy and \
         this run measured no equal load, so no cost a request is given (more connections, or \
         native in the run for equal load, would give one).",
        reached.join("; ")
    ))
}

fn sentence(file: &str, workload: &str, costs: &[&HandlerCost]) -> String {
    let mut measured: Vec<(&HandlerCost, &Estimate, f64)> = costs
        .iter()
        .filter_map(|h| Some((*h, h.cpu_us.as_ref()?, h.rate?)))
        .collect();
    // By the multiple of native's CPU where every host has one: each host is measured at the
    // highest rate it and its floor kept up with, and native's CPU per request falls as its rate
    // rises, so µs at different rates do not rank hosts; the multiple, native at the same rate,
    // does.
    match measured.iter().all(|(h, _, _)| h.over_native.is_some()) {
        true => measured.sort_by(|x, y| {
            let ratio = |h: &HandlerCost| h.over_native.map_or(f64::INFINITY, |e| e.value);
            ratio(x.0).total_cmp(&ratio(y.0))
        }),
        false => measured.sort_by(|x, y| x.1.value.total_cmp(&y.1.value)),
    }
    let mut s = format!("Your component {file} on {workload}: ");
    let native = |h: &HandlerCost| {
        h.over_native
            .map(|e| format!(", {} {BASELINE}'s", times(&e)))
            .unwrap_or_default()
    };
    let Some(((best, cpu, rate), others)) = measured.split_first() else {
        let notes: Vec<String> = costs
            .iter()
            .filter_map(|h| Some(format!("{}: {}", h.floor, h.note.as_ref()?)))
            .collect();
        return s + &format!("no host has a figure at equal load ({})", notes.join("; "));
    };
    s += &format!(
        "cheapest in {} ({} µs a request at {} req/s{})",
        best.floor,
        fmt_us(cpu.value),
        fmt_rps(*rate),
        native(best)
    );
    for (h, cpu, _) in others {
        s += &format!("; {} {} µs{}", h.floor, fmt_us(cpu.value), native(h));
    }
    // The first host's with its interval, the others' values alone: the table has them all, and
    // a sentence of seven intervals is not read.
    let adds: Vec<String> = measured
        .iter()
        .filter_map(|(h, _, _)| h.adds_us.map(|d| (h, d)))
        .enumerate()
        .map(|(i, (h, d))| match i {
            0 => format!("{} µs in {}", signed_us(&d), h.floor),
            _ => format!("{} in {}", signed_us(&Estimate { n: 1, ..d }), h.floor),
        })
        .collect();
    if !adds.is_empty() {
        s += &format!(
            ". Your handler adds {} over the host's floor (wasmlab's minimal component, at the same rate)",
            adds.join(", ")
        );
    }
    for h in costs.iter().filter(|h| h.adds_us.is_none()) {
        if let Some(n) = &h.note {
            s += &format!("; {}: {n}", h.floor);
        }
    }
    s + "."
}

/// A difference in µs with its sign and, over several runs, its interval: `+3.2 [2.9–3.5]`.
pub(crate) fn signed_us(e: &Estimate) -> String {
    let v = |x: f64| match x < 0.0 {
        true => format!("−{}", fmt_us(-x)),
        false => fmt_us(x),
    };
    let head = match e.value < 0.0 {
        true => v(e.value),
        false => format!("+{}", v(e.value)),
    };
    match (e.n >= 2, e.lo.is_finite() && e.hi.is_finite()) {
        (true, true) => format!("{head} [{}–{}]", v(e.lo), v(e.hi)),
        _ => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(value: f64, lo: f64, hi: f64) -> Estimate {
        Estimate {
            value,
            lo,
            hi,
            n: 4,
        }
    }

    fn cost(floor: &str, cpu: Option<f64>, adds: f64, x: f64) -> HandlerCost {
        HandlerCost {
            variant: format!("mine-in-{floor}"),
            floor: floor.into(),
            workload: "root".into(),
            rate: cpu.map(|_| 12_000.0),
            cpu_us: cpu.map(|c| est(c, c - 1.0, c + 1.0)),
            floor_cpu_us: cpu.map(|c| est(c - adds, c - adds - 1.0, c - adds + 1.0)),
            adds_us: cpu.map(|_| est(adds, adds - 0.5, adds + 0.5)),
            over_native: cpu.map(|_| est(x, x - 0.1, x + 0.1)),
            note: cpu
                .is_none()
                .then(|| "kept up with no equal-load rate".into()),
        }
    }

    #[test]
    fn the_sentence_leads_with_the_cheapest_host_and_says_what_the_handler_adds() {
        let a = cost("component-pooled", Some(30.0), 4.0, 2.5);
        let b = cost("component-recycled", Some(20.0), 3.0, 1.7);
        let c = cost("jco-serve", None, 0.0, 0.0);
        let s = sentence("mine.wasm", "root", &[&a, &b, &c]);
        assert!(
            s.starts_with("Your component mine.wasm on root: cheapest in component-recycled ("),
            "{s}"
        );
        assert!(s.contains("1.70× [1.60–1.80] native's"), "{s}");
        assert!(s.contains("; component-pooled 30"), "{s}");
        assert!(s.contains("Your handler adds +3"), "{s}");
        assert!(s.contains("µs in component-recycled, +4"), "{s}");
        assert!(
            s.contains("jco-serve: kept up with no equal-load rate"),
            "{s}"
        );
        let none = sentence("mine.wasm", "root", &[&c]);
        assert!(
            none.contains("no host has a figure at equal load"),
            "{none}"
        );
        // A host whose floor was not in the run: its own figure, and why there is no difference.
        let mut d = cost("wasmcloud-host", Some(8_000.0), 0.0, 0.0);
        (d.adds_us, d.floor_cpu_us, d.over_native) = (None, None, None);
        d.note = Some("its floor (wasmlab's component in wasmcloud-host) not measured".into());
        let s = sentence("mine.wasm", "root", &[&d]);
        assert!(
            s.starts_with("Your component mine.wasm on root: cheapest in wasmcloud-host (8,000 µs"),
            "{s}"
        );
        assert!(
            s.ends_with(
                "; wasmcloud-host: its floor (wasmlab's component in wasmcloud-host) not measured."
            ),
            "{s}"
        );
        assert!(!s.contains("adds"), "{s}");
    }

    /// A user's component at `path`, as run.json records one.
    fn component_at(path: &str) -> wasmlab_model::component::UserComponent {
        wasmlab_model::component::UserComponent {
            path: path.into(),
            name: "mine".into(),
            bytes: 1,
            wasi: wasmlab_model::component::WasiHttp::P2,
            world: "wasi:http/proxy (WASI 0.2)".into(),
            exports: Vec::new(),
            imports: Vec::new(),
            env: Default::default(),
        }
    }

    /// Without equal load (a suite of the user's routes, no native), the hosts are compared by
    /// their CPU per request at saturation, at the most connections measured, cheapest first.
    #[test]
    fn without_equal_load_the_hosts_are_compared_at_saturation() {
        let mut a = crate::tests::analysis();
        let path = "/c/mine.wasm";
        a.info.components.push(component_at(path));
        a.equal_load.clear();
        let template = a.throughput[0].clone();
        let w = template.workload.clone();
        for (host, per_cpu_second, conns) in [
            ("wasmtime-serve", 200.0, 4),
            ("component-pooled", 500.0, 4),
            // A level at which the host was not saturated has no capacity, and is passed over.
            ("component-pooled", 0.0, 16),
            ("jco-serve", 0.0, 4),
        ] {
            let name = format!("mine-in-{host}");
            if !a.info.variant_specs.iter().any(|s| s.name == name) {
                let mut spec = crate::tests::spec(&name);
                spec.component = Some(path.into());
                spec.floor = Some(host.into());
                a.info.variant_specs.push(spec);
            }
            let mut cell = template.clone();
            cell.variant = name;
            cell.connections = conns;
            cell.capacity_runs = match per_cpu_second > 0.0 {
                true => vec![(0, per_cpu_second * 0.9), (1, per_cpu_second * 1.1)],
                false => Vec::new(),
            };
            a.throughput.push(cell);
        }
        let said = sentences(&a);
        assert_eq!(said.len(), 1, "{said:?}");
        let s = &said[0];
        assert!(
            s.starts_with(&format!(
                "Your component mine.wasm on {w}, its servers saturated (this run measured no \
                 equal load): cheapest in component-pooled (2,000 µs a request, "
            )),
            "{s}"
        );
        assert!(
            s.contains(" req/s at 4 connections); wasmtime-serve 5,000 µs."),
            "{s}"
        );
        assert!(!s.contains("jco-serve"), "{s}");
        // No host saturated: what each reached, not "served in no host".
        for cell in &mut a.throughput {
            cell.capacity_runs.clear();
        }
        let said = sentences(&a);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with(&format!("Your component mine.wasm on {w} was served in ")),
            "{said:?}"
        );
        for host in ["wasmtime-serve", "component-pooled", "jco-serve"] {
            assert!(said[0].contains(&format!("{host} ")), "{said:?}");
        }
        assert!(said[0].contains("no cost a request is given"), "{said:?}");
        assert!(!said[0].contains("  "), "one space between words: {said:?}");
    }

    #[test]
    fn the_hosts_that_did_not_serve_a_component_are_named() {
        let mut a = crate::tests::analysis();
        let path = "/c/mine.wasm";
        a.info.components.push(component_at(path));
        for (host, status) in [
            ("component-recycled", Status::Failed),
            ("jco-serve", Status::Skipped),
        ] {
            let name = format!("mine-in-{host}");
            let mut spec = crate::tests::spec(&name);
            spec.component = Some(path.into());
            spec.floor = Some(host.into());
            a.info.variant_specs.push(spec);
            a.info
                .variants
                .push(crate::tests::outcome(&name, status, Some("why")));
        }
        assert_eq!(
            sentences(&a),
            [
                "Your component mine.wasm was served in no host: component-recycled (failed), \
                 jco-serve (skipped)."
            ]
        );
    }
}
