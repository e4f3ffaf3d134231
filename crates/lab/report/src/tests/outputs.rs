//! Every output of a run made up here: each section in summary.md and report.html with its
//! ratios, a run without samples, degenerate figures, number formats, a program run.

use super::*;
use wasmlab_model::run::AddedRepetitions;

#[test]
fn report_full_run() {
    let a = analysis();
    assert_eq!(a.reference_connections, Some(100));
    let html = render_html(&a).unwrap();
    for id in SECTION_IDS {
        assert!(
            html.contains(&format!("<h2 id=\"{id}\"")),
            "missing section {id}"
        );
    }
    assert_offline(&html);
    // Plots, section by section: throughput and loaded spectra one a workload, warm spectra one
    // a warm workload, cold start one, open loop one a workload, resources RSS and CPU one a
    // workload, capacity one a workload.
    let plots_in = |id: &str| {
        let from = html.find(&format!("<h2 id=\"{id}\"")).unwrap();
        let to = html[from + 1..]
            .find("<h2 id=")
            .map_or(html.len(), |i| from + 1 + i);
        html[from..to].matches("<svg").count()
    };
    let workloads = a.workloads.len();
    for (id, at_least) in [
        ("throughput", workloads),
        ("latency", workloads),
        ("cold-start", 1),
        ("open-loop", 1),
        ("resources", 1 + workloads),
        ("capacity", workloads),
    ] {
        assert!(plots_in(id) >= at_least, "{id}: {} plots", plots_in(id));
    }
    assert!(html.contains("<text"), "plots carry their text");
    assert!(!html.contains("not measured"), "every section has data");
    // Data strings are escaped.
    assert!(html.contains("a &lt;test&gt; suite &amp; co"));
    assert!(html.contains("build failed: &lt;linker&gt; &amp; such"));
    assert!(!html.contains("<linker>") && !html.contains("<test>"));
    // The saturated cell is flagged and the flag explained.
    assert!(html.contains("⚠ generator saturated in 1/2 runs"));
    // The note, from the same sentence every output uses (the page escapes its slash).
    assert!(html.contains("generator saturated in k&#x2f;n runs:"));
    assert!(html.len() < 400_000, "{} bytes", html.len());

    // Every ratio appears with its CI in both outputs.
    let md = render_summary_md(&a);
    let cell = a.throughput_cell("wasmtime-pooled", "hello", 100).unwrap();
    let r = SERVER_RATIO.estimate(cell.ratio_to_native.as_ref());
    assert!(r.contains('[') && r.contains("n=2"), "{r}");
    assert!(md.contains(&r), "summary.md lacks {r}:\n{md}");
    assert!(html.contains(&r));
    let cold = a
        .cold_start
        .iter()
        .find(|c| c.variant == "wasmtime-pooled")
        .unwrap();
    let r = SERVER_RATIO.estimate(cold.ratio_to_native.as_ref());
    assert!(
        r.starts_with("1.") && md.contains(&r) && html.contains(&r),
        "{r}"
    );
    let warm = a
        .warm
        .iter()
        .find(|w| w.variant == "wasmtime-pooled" && w.workload == "compute")
        .unwrap();
    let r = SERVER_RATIO.estimate(warm.ratio_to_native.as_ref());
    assert!(md.contains(&r) && html.contains(&r), "{r}");
    for section in [
        "## Throughput at 100 connections",
        "## Cold start",
        "## Warm latency",
        "## Open loop",
        "## Resources at 100 connections",
        "## Environment",
    ] {
        assert!(md.contains(section), "summary.md lacks {section}");
    }
    assert!(!md.contains("Not measured"), "{md}");
    assert!(md.contains("⚠ generator saturated in 1/2 runs"));
    assert!(md.contains("⚠ Variant **wasmtime-naive** failed"));
    // Every figure here is of one run, so none has an interval, and there is no spread to say.
    assert!(a.spread().is_none());
    assert!(!md.contains("The lead's 95% intervals") && !md.contains("a noisy machine"));
}

#[test]
fn the_servers_environment_is_said_where_the_run_recorded_it() {
    let mut i = info(RunState::Complete);
    let minimal = [("HOME", "/root"), ("PATH", "/usr/bin")];
    for v in &mut i.variants {
        v.env = minimal
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
    }
    i.variants[1].env.insert("EXTRA".into(), "1".into());
    let md = render_summary_md(&analyse(&i, &samples()));
    let line = format!(
        "- Servers' environment: HOME, PATH from the lab's environment, nothing else of the \
         caller's; {}: EXTRA=1",
        i.variants[1].name
    );
    assert!(md.contains(&line), "{md}");
    // A run recorded before the environment was says nothing of it.
    let old = render_summary_md(&analyse(&info(RunState::Complete), &samples()));
    assert!(!old.contains("Servers' environment"));
}

#[test]
fn report_without_samples() {
    let mut i = info(RunState::Interrupted);
    i.header.finished_utc = None;
    i.orders.clear();
    i.artifacts.clear();
    let a = analyse(&i, &[]);
    let html = render_html(&a).unwrap();
    for id in SECTION_IDS {
        assert!(
            html.contains(&format!("<h2 id=\"{id}\"")),
            "missing section {id}"
        );
    }
    assert_offline(&html);
    assert!(html.contains("not measured in this run"));
    assert!(html.contains("This run is <b>interrupted</b>"));
    let md = render_summary_md(&a);
    assert!(md.to_lowercase().contains("not measured"), "{md}");
    assert!(md.contains("not complete"));
}

#[test]
fn report_survives_degenerate_figures() {
    let mut a = analysis();
    // One point per series, NaN and zero figures, empty spectra, a missing baseline cell.
    a.throughput.retain(|c| c.connections == 100);
    for c in &mut a.throughput {
        c.rps.value = 0.0;
        c.rps.lo = f64::NAN;
        c.latency.p99 = f64::NAN;
        if let Some(r) = &mut c.resources {
            r.rps_per_core.value = f64::NAN;
            r.cpu_secs_per_1k = Estimate {
                value: 0.0,
                lo: 0.0,
                hi: 0.0,
                n: 1,
            };
        }
    }
    a.throughput
        .retain(|c| !(c.variant == "native" && c.workload == "compute"));
    for s in &mut a.spectra {
        s.points.truncate(1);
    }
    a.spectra.push(Spectrum {
        kind: Kind::Warm,
        variant: "native".into(),
        workload: "hello".into(),
        connections: 1,
        count: 0,
        points: Vec::new(),
    });
    for c in &mut a.cold_start {
        c.values_ms = vec![4.0];
    }
    a.cold_start[0].values_ms = vec![f64::NAN, 0.0];
    for o in &mut a.open_loop {
        o.offered_rps = 0.0;
        o.runs.corrected.p99 = 0.0;
        o.runs.uncorrected.p99 = f64::INFINITY;
    }
    a.open_loop.truncate(1);
    for wr in &mut a.warm {
        wr.ratio_to_native = Some(Estimate {
            value: f64::NAN,
            lo: f64::NAN,
            hi: f64::NAN,
            n: 0,
        });
    }
    let html = render_html(&a).unwrap();
    for id in SECTION_IDS {
        assert!(
            html.contains(&format!("<h2 id=\"{id}\"")),
            "missing section {id}"
        );
    }
    assert_offline(&html);
    let _ = render_summary_md(&a);
}

#[test]
fn report_number_formats() {
    assert_eq!(thousands(1_234_567.4), "1,234,567");
    assert_eq!(thousands(-999.6), "-1,000");
    assert_eq!(thousands(f64::NAN), "–");
    assert_eq!(fmt_ms(0.123_456), "0.123");
    assert_eq!(fmt_ms(12.345), "12.35");
    assert_eq!(fmt_ms(1234.6), "1,235");
    // One ratio formatter: a server's to native, a program's to its baseline.
    use crate::format::PROGRAM_RATIO;
    let e = |value, n| Estimate {
        value,
        lo: 0.611,
        hi: 0.69,
        n,
    };
    assert_eq!(
        SERVER_RATIO.estimate(Some(&e(0.652, 3))),
        "0.652 [0.611–0.690] n=3"
    );
    assert_eq!(SERVER_RATIO.estimate(Some(&e(0.652, 1))), "0.652 n=1");
    assert_eq!(SERVER_RATIO.estimate(Some(&e(f64::NAN, 3))), "–");
    assert_eq!(SERVER_RATIO.estimate(None), "–");
    assert_eq!(
        PROGRAM_RATIO.estimate(Some(&e(0.652, 2))),
        "0.65× [0.61×–0.69×] n=2"
    );
    let cell = crate::table::Value::ratio(PROGRAM_RATIO, Some(&e(0.652, 2)));
    assert_eq!(
        (cell.text.as_str(), cell.note.as_deref()),
        ("0.65×", Some("[0.61×–0.69×] n=2"))
    );
    assert_eq!(cell.mark, crate::table::Mark::Significant, "1 is outside");
    assert_eq!(cell.plain(), PROGRAM_RATIO.estimate(Some(&e(0.652, 2))));
    let e = Estimate {
        value: 0.6523,
        lo: 0.611,
        hi: 0.69,
        n: 3,
    };
    assert_eq!(SERVER_RATIO.estimate(Some(&e)), "0.652 [0.611–0.690] n=3");
    assert_eq!(SERVER_RATIO.estimate(None), "–");
    assert_eq!(fmt_errors(&ErrorCounts::default()), "0");
    let errs = ErrorCounts {
        connect: 2,
        read_write: 0,
        timeout: 1_000,
        non_2xx: 0,
    };
    assert_eq!(fmt_errors(&errs), "1,002 (connect 2, timeout 1,000)");
    assert_eq!(crate::format::rate_short(50_000.0), "50k/s");
    assert_eq!(crate::format::rate_short(2_500.0), "2.5k/s");
    assert_eq!(crate::format::rate_short(95.0), "95/s");
    assert_eq!(crate::format::rate_short(1_200_000.0), "1.2M/s");
    assert_eq!(fmt_bytes(3 * 1024 * 1024), "3.00 MiB");
    assert_eq!(fmt_bytes(2048), "2.0 KiB");
}

fn program_analysis(iterations: u32) -> ProgramAnalysis {
    ProgramAnalysis {
        run_id: "r".into(),
        suite: "s".into(),
        description: String::new(),
        baseline: "native-portable".into(),
        repetitions: 1,
        programs: vec!["kdf".into()],
        program_set: serde_json::json!({ "iterations": iterations }),
        machine: "m".into(),
        cpus: "c".into(),
        engines: Vec::new(),
        cells: Vec::new(),
        study: Some(Study::load("libsodium").unwrap()),
        beside_study: Vec::new(),
        state: RunState::Complete,
        resumed: Vec::new(),
    }
}

#[test]
fn another_iteration_count_than_the_studys_is_said_beside_it() {
    let other = program_analysis(10);
    assert!(
        crate::view::programs(&other)
            .summary_md
            .unwrap()
            .contains("Not the study's iteration count")
    );
    assert!(
        crate::view::programs(&other)
            .report_html
            .unwrap()
            .contains("Not the study's iteration count")
    );
    let same = program_analysis(200);
    assert!(
        !crate::view::programs(&same)
            .summary_md
            .unwrap()
            .contains("Not the study's iteration count")
    );
    assert!(
        !crate::view::programs(&same)
            .report_html
            .unwrap()
            .contains("iteration count")
    );
}

/// A variant of ours the study sets beside its figures gets a row where this run has it, and
/// none where the run skipped it (a row of dashes says nothing).
#[test]
fn a_skipped_variant_has_no_row_beside_a_study() {
    let mut a = crate::tests::analysis();
    a.study = Study::load("envoy-wasm").unwrap();
    a.study.beside = vec!["wasmtime-pooled".into(), "absent".into()];
    a.variants.push("absent".into());
    let rows = |a: &wasmlab_analysis::ServerAnalysis| -> Vec<String> {
        wasmlab_analysis::study::beside_servers(a, &a.study)
            .into_iter()
            .flat_map(|c| c.rows.into_iter().map(|r| r.variant))
            .collect()
    };
    assert!(rows(&a).iter().any(|v| v == "absent"), "{:?}", rows(&a));
    a.info.variants.push(crate::tests::outcome(
        "absent",
        Status::Skipped,
        Some("not here"),
    ));
    let now = rows(&a);
    assert!(!now.iter().any(|v| v == "absent"), "{now:?}");
    assert!(now.iter().any(|v| v == "wasmtime-pooled"), "{now:?}");
}

#[test]
fn a_studys_sizing_rule_is_set_beside_every_measured_servers_capacity() {
    let mut a = crate::tests::analysis();
    a.study = Study::load("wasmcloud").unwrap();
    a.beside_study = wasmlab_analysis::study::beside_servers(&a, &a.study);
    a.capacity_planning = wasmlab_analysis::study::capacity_planning(&a, &a.study);
    let plan = a
        .capacity_planning
        .as_ref()
        .expect("a plan: the run sampled CPU");
    // The study's cell is hello at 150; this run measured 10 and 100.
    assert_eq!(plan.ours_at.as_deref(), Some("ours at 100 connections"));
    // wasmtime-pooled was saturated in both runs; native in one (the generator set the pace of
    // the other), so its figure is from that one, with no interval, and says so.
    let pooled = plan
        .ours
        .iter()
        .find(|r| r.variant == "wasmtime-pooled")
        .unwrap();
    let per_core = a
        .throughput_cell("wasmtime-pooled", "hello", 100)
        .unwrap()
        .resources
        .unwrap()
        .rps_per_core;
    assert_eq!(pooled.per_core.unwrap().value, per_core.value);
    let needed = pooled.cores_for_target.unwrap();
    assert!((needed - 100_000.0 / per_core.value).abs() < 1e-9);
    let (lo, hi) = pooled.cores_interval.expect("two runs: an interval");
    assert!(lo <= needed && needed <= hi);
    let native = plan.ours.iter().find(|r| r.variant == "native").unwrap();
    assert_eq!(native.per_core.unwrap().n, 1);
    assert_eq!(
        native.note.as_deref(),
        Some("native generator-limited in 1/2 runs")
    );
    // 17,500 req/s per node of 8 to 16 cores: 1,094 to 2,188 req/s per core.
    let md = render_summary_md(&a);
    assert!(
        md.contains("### Capacity planning: hello at 150 connections (ours at 100 connections)"),
        "{md}"
    );
    assert!(md.contains(
        "| the study: wasmCloud, clustered (per node) | 17,500 req/s per node of 8–16 cores"
    ));
    assert!(md.contains("| 1,094–2,188 | 45.7–91.4 |"), "{md}");
    assert!(
        md.contains(&format!("| {} [", crate::format::thousands(per_core.value)))
            && md.contains(&format!("| {needed:.1} [{lo:.1}–{hi:.1}] |")),
        "{md}"
    );
    assert!(
        md.contains("| 21,053 n=1 (left out: native generator-limited in 1/2 runs) | 4.8 |"),
        "native from its one saturated run: {md}"
    );
    let html = render_html(&a).unwrap();
    assert!(html.contains("Capacity planning: hello at 150 connections"));
    assert!(
        html.contains("nodes needed = target req"),
        "the rule in the page"
    );
}

#[test]
fn under_the_lead_every_output_says_how_wide_the_intervals_were() {
    // Every server saturated in both runs (the generator nowhere the limit); wasmtime-pooled's
    // CPU 4% higher in its second run than its first when `drift` (native's steady): a capacity
    // ratio a run, so an interval, wide or not. The drifting run also added repetitions, said in
    // the same line.
    let run = |drift: f64| {
        let mut samples = samples();
        for s in samples.iter_mut().filter(|s| s.kind == Kind::Throughput) {
            let vi = usize::from(s.variant == "wasmtime-pooled");
            let cpu = 0.95 * (1.0 + drift * vi as f64 * f64::from(s.repetition));
            s.load.as_mut().unwrap().generator_saturated = false;
            s.resources = Some(super::resources(vi, cpu));
        }
        let mut info = info(RunState::Complete);
        info.added_repetitions = (drift > 0.0).then_some(AddedRepetitions {
            after: 1,
            spread: Some(0.2),
            target: 0.05,
            added: 1,
            max: 2,
        });
        analyse(&info, &samples)
    };
    for (drift, noisy) in [(0.0, false), (0.04, true)] {
        let a = run(drift);
        let spread = a.spread().expect("saturated ratios of two runs");
        assert_eq!(spread.noisy(), noisy, "{spread:?}");
        let note = crate::notes::spread_note(&spread, a.info.repetitions_added(), false);
        assert_eq!(
            note.contains("This run measured 2 repetitions, not 1"),
            noisy,
            "{note}"
        );
        // `wasmlab compare`'s last line says it too.
        let line = crate::terminal::spreads(&a, &a);
        assert_eq!(
            line.contains(
                "(noisy) after 2 repetitions (±20.0% after the first 1: noisy, measured \
                 longer)"
            ),
            noisy,
            "{line}"
        );
        assert!(render_summary_md(&a).contains(&note), "{note}");
        assert!(crate::terminal::servers(&a, true).contains(&note));
        let (class, start) = match noisy {
            true => ("warn", "⚠ a noisy machine: the lead's 95% intervals are ±"),
            false => ("note", "The lead's 95% intervals are ±0.0% at the median"),
        };
        // In report.html under the lead's first paragraph, escaped by the page.
        let html = render_html(&a).unwrap();
        let start = start.replace('\'', "&#x27;");
        let at = html.find(&format!("<p class=\"{class}\">{start}"));
        assert!(at.is_some(), "{note}");
        assert!(at < html.find("Variant</th>"), "before the table");
    }
}

#[test]
fn the_lead_says_how_busy_native_was_at_each_equal_load_rate() {
    // Native spends 20 µs a request in the fixture, so at 2,000 req/s it is 4% busy: a figure
    // whose ratio is mostly native waking for each request, which the lead has to say.
    let a = analysis();
    let cost = a
        .costs("hello")
        .into_iter()
        .find(|c| c.variant == "wasmtime-pooled")
        .unwrap();
    let (rate, _) = cost.equal_load.unwrap();
    assert_eq!(rate, 2_000.0, "{cost:?}");
    // Native's mean over its runs at that rate (0.0400 and 0.0404).
    let busy = cost.native_busy.unwrap();
    assert!((busy - 0.0402).abs() < 1e-9, "{busy}");
    let shown = crate::format::percent(busy);
    let md = render_summary_md(&a);
    let lead = &md[md.find("## What a request costs").unwrap()..];
    let lead = &lead[..lead.find("\n## ").unwrap_or(lead.len())];
    assert!(
        lead.contains("| Native busy |") && lead.contains(&format!("| 2,000 | {shown} |")),
        "{lead}"
    );
    let html = render_html(&a).unwrap();
    // Under the ratio's interval and rate (escaped by the page: its slash), on a line of its own.
    assert!(
        html.contains(&format!(
            "at 2k&#x2f;s</span><br><span class=\"ci\">native {shown} busy</span>"
        )),
        "{shown}"
    );
    // The narrow terminal keeps its width: the cells' lines say how busy native was.
    assert!(!crate::terminal::servers(&a, false).contains("Native busy"));
    assert!(crate::terminal::servers(&a, true).contains("Native busy"));
}
