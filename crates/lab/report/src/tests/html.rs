//! report.html's markup: every table's rows as wide as its header, hostile names escaped, and
//! the size of a gateway-study-sized report.

use super::*;

#[test]
fn report_of_a_gateway_sized_study_stays_small() {
    // 5 variants × 4 workloads × 7 levels, by copying the cells of a small analysis.
    let base = analysis();
    let mut a = base.clone();
    let variants: Vec<String> = (0..5).map(|i| format!("variant-{i}")).collect();
    let workloads: Vec<String> = ["hello", "compute", "proxy", "state"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let levels = [10usize, 50, 100, 200, 400, 800, 1200];
    a.variants = variants.clone();
    a.workloads = workloads.clone();
    a.throughput.clear();
    a.spectra.clear();
    a.warm.clear();
    a.open_loop.clear();
    a.cold_start.clear();
    a.reference_connections = Some(100);
    for (vi, v) in variants.iter().enumerate() {
        let mut cs = base.cold_start[0].clone();
        cs.variant = v.clone();
        cs.values_ms = (0..30)
            .map(|i| 5.0 + f64::from(i) * (vi + 1) as f64)
            .collect();
        a.cold_start.push(cs);
        for w in &workloads {
            for (li, &c) in levels.iter().enumerate() {
                let mut cell = base.throughput[0].clone();
                cell.variant = v.clone();
                cell.workload = w.clone();
                cell.connections = c;
                cell.rps.value *= 1.0 + li as f64 * 0.1;
                a.throughput.push(cell);
            }
            let mut wr = base.warm[0].clone();
            wr.variant = v.clone();
            wr.workload = w.clone();
            a.warm.push(wr);
            for s in base.spectra.iter().take(2) {
                let mut s = s.clone();
                s.variant = v.clone();
                s.workload = w.clone();
                a.spectra.push(s);
            }
            for o in base.open_loop.iter().take(4) {
                let mut o = o.clone();
                o.variant = v.clone();
                o.workload = w.clone();
                a.open_loop.push(o);
            }
        }
    }
    let html = render_html(&a).unwrap();
    assert_offline(&html);
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
    let md = render_summary_md(&a);
    assert!(md.len() < 100_000);
}

/// Every table row has as many cells as its table's header; a key-value table, one key and one
/// value per row. Parses the rendered HTML crudely: tables are not nested, and SVG has none.
fn assert_rows_match_headers(html: &str) {
    let count = |s: &str, tag: &str| {
        s.matches(&format!("<{tag}>")).count() + s.matches(&format!("<{tag} ")).count()
    };
    let mut tables = 0;
    for chunk in html.split("<table").skip(1) {
        let table = chunk.split("</table>").next().unwrap();
        let rows: Vec<&str> = table
            .split("<tr>")
            .skip(1)
            .map(|r| r.split("</tr>").next().unwrap())
            .collect();
        assert!(!rows.is_empty(), "a table without rows: {table}");
        if table.starts_with(" class=\"kv\"") {
            for r in &rows {
                assert_eq!((count(r, "th"), count(r, "td")), (1, 1), "{r}");
            }
        } else {
            let head = count(rows[0], "th");
            assert!(head > 0 && count(rows[0], "td") == 0, "{}", rows[0]);
            for r in &rows[1..] {
                assert_eq!(
                    count(r, "td"),
                    head,
                    "a row unlike its header {}: {r}",
                    rows[0]
                );
                assert_eq!(count(r, "th"), 0, "{r}");
            }
        }
        tables += 1;
    }
    assert!(tables >= 3, "{tables} tables");
}

#[test]
fn report_rows_have_as_many_cells_as_headers() {
    let full = analysis();
    let mut i = info(RunState::Interrupted);
    i.header.finished_utc = None;
    i.orders.clear();
    i.artifacts.clear();
    let empty = analyse(&i, &[]);
    let mut no_baseline = full.clone();
    no_baseline.variants.retain(|v| v != BASELINE);
    no_baseline.throughput.retain(|c| c.variant != BASELINE);
    for a in [&full, &empty, &no_baseline] {
        assert_rows_match_headers(&render_html(a).unwrap());
    }
}

#[test]
fn report_escapes_hostile_names() {
    const EVIL: &str = "<script>&\"'|";
    const ESCAPED: &str = "&lt;script&gt;&amp;&quot;&#x27;|";
    let mut i = info(RunState::Complete);
    i.suite.description = format!("described {EVIL}");
    i.variants[2].reason = Some(format!("failed {EVIL}"));
    // The measured variant's name everywhere it is shown: tables, legends, orders, the suite.
    let mut s = samples();
    for x in &mut s {
        if x.variant == "wasmtime-pooled" {
            x.variant = format!("pooled{EVIL}");
        }
    }
    i.variants[1].name = format!("pooled{EVIL}");
    i.suite.variants[1] = format!("pooled{EVIL}");
    for o in &mut i.orders {
        for v in o.iter_mut().filter(|v| *v == "wasmtime-pooled") {
            *v = format!("pooled{EVIL}");
        }
    }
    let a = analyse(&i, &s);
    assert!(
        a.variants.iter().any(|v| v.contains(EVIL)),
        "{:?}",
        a.variants
    );
    let html = render_html(&a).unwrap();
    assert_offline(&html);
    assert!(!html.contains(EVIL), "unescaped");
    for shown in [
        format!("described {ESCAPED}"),
        format!("failed {ESCAPED}"),
        format!("</span>pooled{ESCAPED}</span></td>"),
    ] {
        assert!(html.contains(&shown), "{shown} missing");
    }
    assert_rows_match_headers(&html);
    // summary.md: in a table cell the name's `<` is an entity (no tag) and no `|` of it splits
    // the row: every row of a table has as many cells as its head.
    let md = render_summary_md(&a);
    assert!(md.contains("| pooled&lt;script>&\"'\\| |"), "{md}");
    let cells = |line: &str| line.replace("\\|", "").matches('|').count();
    for table in md.split("\n\n").filter(|b| b.starts_with('|')) {
        let mut lines = table.lines();
        let head = cells(lines.next().unwrap());
        assert!(lines.all(|l| cells(l) == head), "{table}");
    }
}
