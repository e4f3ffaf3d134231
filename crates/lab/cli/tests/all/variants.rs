//! Variants of the user's: their own guest, their own variant files and a suite's own
//! variants, verified and measured like the built-in ones; one refused by verification is in no
//! table; one that cannot run here is skipped with the reason everywhere; and `wasmlab variants`
//! and `wasmlab setup` on them.

use std::process::Command;

use crate::support;

use support::*;

#[test]
fn run_with_your_own_guest() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = "name = \"byo\"\nvariants = [\"wasmtime-pooled\"]\nworkloads = [\"hello\"]\nconnections = [1]\nduration_secs = 0.2\n";
    // The documented minimal guest runs, and is verified like any guest: it says "hello from wat",
    // not "hello", so it is not measured.
    let wat = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../docs/examples/minimal-guest.wat"
    );
    let (out, results) = run_suite(tmp.path(), toml, &["--wasm", wat]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = read_json(&only_run_dir(&results).join("run.json"));
    assert!(
        run["core_guest"]
            .as_str()
            .unwrap()
            .ends_with("minimal-guest.wat")
    );
    let reason = run["variants"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("hello from wat"), "{reason}");

    // A file that is not Wasm: the gateway refuses it at start, and the reason says why.
    let tmp = tempfile::tempdir().unwrap();
    let junk = write(tmp.path(), "junk.wasm", "not wasm");
    let (out, results) = run_suite(tmp.path(), toml, &["--wasm", &junk]);
    assert_eq!(out.status.code(), Some(1));
    let run = read_json(&only_run_dir(&results).join("run.json"));
    let reason = run["variants"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("refused"), "{reason}");

    assert_fails_with(
        &["run", "--wasm", "/no/such/guest.wasm", "--no-build"],
        "no such file",
    );
}

#[test]
fn a_variant_refused_by_verification_is_in_no_table_and_listed_as_failed_in_every_output() {
    // The minimal guest answers "hello from wat" everywhere: verification refuses
    // wasmtime-pooled, which the suite also names for cold starts, warm latency and the open loop.
    let tmp = tempfile::tempdir().unwrap();
    let wat = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../docs/examples/minimal-guest.wat"
    );
    let (out, results) = run_suite(
        tmp.path(),
        r#"name = "refused"
variants = ["native", "wasmtime-pooled"]
workloads = ["hello"]
connections = [2]
duration_secs = 0.2
warmup_secs = 0.1

[cold_start]
runs = 2
variants = ["native", "wasmtime-pooled"]

[warm]
duration_secs = 0.2

[open_loop]
fractions = [0.5]
duration_secs = 0.2
connections = 2
workloads = ["hello"]
"#,
        &["--wasm", wat],
    );
    assert_eq!(out.status.code(), Some(1));
    let dir = only_run_dir(&results);
    let refused = |text: &str| text.contains("wasmtime-pooled");
    // Terminal: every table has native's rows and none of wasmtime-pooled; the reason follows.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (tables, after) = stdout
        .split_once("not measured (in no table above)")
        .unwrap_or_else(|| panic!("no table of what was not measured in {stdout}"));
    assert!(!refused(tables), "{tables}");
    let line = after
        .lines()
        .find(|l| l.starts_with("wasmtime-pooled: not measured (failed): verification failed"))
        .unwrap_or_else(|| panic!("no failure line in {after}"));
    assert!(line.contains("hello from wat"), "{line}");
    for title in ["cold start", "warm latency", "open loop"] {
        assert!(tables.contains(title), "no {title} table in {tables}");
    }
    // CSVs: native's rows only.
    for csv in [
        "throughput.csv",
        "warm.csv",
        "open_loop.csv",
        "cold_start.csv",
    ] {
        let text = std::fs::read_to_string(dir.join(csv)).unwrap();
        assert!(text.lines().count() > 1, "{csv} has no rows");
        assert!(!refused(&text), "{csv}: {text}");
    }
    // summary.md and report.html name it only where they list what failed.
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let md_mentions: Vec<&str> = md.lines().filter(|l| refused(l)).collect();
    assert_eq!(md_mentions.len(), 1, "{md_mentions:?}");
    assert!(md_mentions[0].contains("failed"), "{}", md_mentions[0]);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let svg_mentions = html
        .split("<svg")
        .skip(1)
        .filter(|svg| refused(svg.split("</svg>").next().unwrap()))
        .count();
    assert_eq!(svg_mentions, 0, "a plot shows the refused variant");
    // Beyond the plots: only where the report lists outcomes, the suite and the run order.
    for line in html.lines().filter(|l| refused(l)) {
        assert!(
            ["failed", "<th>Variants</th>", "<th>Cold starts</th>", " → "]
                .iter()
                .any(|ok| line.contains(ok)),
            "report.html shows the refused variant in {line}"
        );
    }
    // `wasmlab report` rebuilds the same from the raw data.
    let rebuilt = rebuild_report(&dir);
    assert!(rebuilt.status.success());
    let rebuilt = String::from_utf8_lossy(&rebuilt.stdout);
    let (tables, _) = rebuilt
        .split_once("not measured (in no table above)")
        .unwrap();
    assert!(!refused(tables), "{tables}");
}

#[test]
fn a_user_variant_file_and_a_suite_variant_are_verified_and_measured() {
    let tmp = tempfile::tempdir().unwrap();
    // A server the lab starts on a port it picks (the native gateway, as a stand-in for any
    // server of the user's), with a tool requirement whose version is recorded.
    let file = write(
        tmp.path(),
        "mine.toml",
        r#"name = "mine"
about = "the native gateway, started on a port the lab picks"
[[requires]]
tool = "sh"
version_args = ["-c", "echo sh from the test"]
[[prepare]]
about = "make a file"
run = ["sh", "-c", "echo prepared > {prepared}/marker"]
[[artifacts]]
name = "marker file"
path = "{prepared}/marker"
[start]
command = ["{bin}/wasmlab-gateway-native", "--host", "127.0.0.1", "--port", "{port}", "--upstream", "{upstream}"]
address = "port"
env = { WASMLAB_MINE = "set by the variant" }
"#,
    );
    let suite = format!(
        r#"variants = ["mine", "inline-one"]
{TINY}
[[variant]]
name = "inline-one"
about = "the native gateway, defined in the suite"
[variant.start]
command = ["{{bin}}/wasmlab-gateway-native", "--port", "{{port}}", "--upstream", "{{upstream}}"]
"#
    );
    let (out, results) = run_suite(tmp.path(), &suite, &["--variant-file", &file]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    for (i, name) in ["mine", "inline-one"].iter().enumerate() {
        assert_eq!(run["variants"][i]["name"], *name);
        assert_eq!(
            run["variants"][i]["status"], "measured",
            "{}",
            run["variants"]
        );
        assert_eq!(run["variant_specs"][i]["name"], *name);
    }
    assert_eq!(run["variant_tools"][0]["version"], "sh from the test");
    // The servers' environment is the lab's minimal one and the variant's own, recorded: the
    // caller's RUST_BACKTRACE=1 (run_suite sets it) does not reach them.
    let env = &run["variants"][0]["env"];
    assert_eq!(env["WASMLAB_MINE"], "set by the variant", "{env}");
    assert!(
        env["PATH"].is_string() && env.get("RUST_BACKTRACE").is_none(),
        "{env}"
    );
    let inline = run["variants"][1]["env"].as_object().unwrap();
    assert!(
        inline
            .keys()
            .all(|k| wasmlab_plan::environment::INHERITED.contains(&k.as_str())),
        "{inline:?}"
    );
    assert!(
        run["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "marker file" && a["bytes"] == 9),
        "{}",
        run["artifacts"]
    );
    let csv = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    for name in ["mine,hello,", "mine,state,", "inline-one,hello,"] {
        assert!(csv.contains(name), "{csv}");
    }
    let cold = std::fs::read_to_string(dir.join("cold_start.csv")).unwrap();
    assert_eq!(cold.lines().filter(|l| l.starts_with("mine,")).count(), 2);
}

#[test]
fn variants_that_cannot_run_here_are_skipped_with_the_reason_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = write(
        tmp.path(),
        "missing.toml",
        r#"name = "needs-a-tool"
about = "needs a tool nobody has"
[[requires]]
tool = "wasmlab-test-no-such-tool"
hint = "get it from the moon"
[start]
command = ["{tool:wasmlab-test-no-such-tool}"]
"#,
    );
    let long = write(
        tmp.path(),
        "long.toml",
        r#"name = "needs-a-long-setup"
about = "needs a tool wasmlab could install, slowly"
[[requires]]
tool = "wasmlab-test-slow-tool"
install = { from = "cargo", package = "wasmlab-test-slow-tool", version = "1.0.0", minutes = 30 }
[start]
command = ["{tool:wasmlab-test-slow-tool}"]
"#,
    );
    let suite =
        format!("variants = [\"native\", \"needs-a-tool\", \"needs-a-long-setup\"]\n{TINY}");
    let (out, results) = run_suite(
        tmp.path(),
        &suite,
        &["--variant-file", &missing, "--variant-file", &long],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Skipped is not a failure: native was measured.
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    let outcome = |name: &str| outcome(&run, name);
    assert_eq!(outcome("native")["status"], "measured");
    let tool = outcome("needs-a-tool");
    assert_eq!(tool["status"], "skipped");
    let why = tool["reason"].as_str().unwrap();
    assert!(
        why.contains("unavailable here") && why.contains("get it from the moon"),
        "{why}"
    );
    let slow = outcome("needs-a-long-setup");
    assert_eq!(slow["status"], "skipped");
    let why = slow["reason"].as_str().unwrap();
    assert!(
        why.contains("`wasmlab setup needs-a-long-setup`") && why.contains("30 min"),
        "{why}"
    );
    // The terminal, summary.md and report.html all say so.
    for (what, text) in [
        ("terminal", stdout.to_string()),
        (
            "summary.md",
            std::fs::read_to_string(dir.join("summary.md")).unwrap(),
        ),
        (
            "report.html",
            std::fs::read_to_string(dir.join("report.html")).unwrap(),
        ),
    ] {
        for needle in [
            "needs-a-tool",
            "get it from the moon",
            "wasmlab setup needs-a-long-setup",
        ] {
            assert!(text.contains(needle), "{what} lacks {needle:?}");
        }
        assert!(text.contains("skipped"), "{what}");
    }
    // Nothing was measured of them.
    let csv = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    assert!(!csv.contains("needs-a"), "{csv}");
}

#[test]
fn variants_lists_every_variant_with_its_state_and_checks_a_users_file() {
    let out = wasmlab(&["variants"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let state = |name: &str| {
        let line = text
            .lines()
            .find(|l| l.strip_prefix(name).is_some_and(|r| r.starts_with(':')))
            .unwrap_or_else(|| panic!("no state line for {name} in {text}"));
        line[name.len() + 1..].trim_start().to_owned()
    };
    // Those that need nothing but this repository's own builds are ready on any machine.
    for name in [
        "native",
        "native-close",
        "wasmtime-pooled",
        "wasmtime-pooled-cwasm",
        "wasmtime-naive",
    ] {
        assert_eq!(state(name), "ready", "{name}");
    }
    // Those that need a tool are ready where it is installed, else say how to set it up, or why
    // it cannot be here; under WASMLAB_NO_SKIP (CI, every tool installed) they must be ready.
    for name in ["native-container", "wasmtime-cli", "wasmtime-cli-cwasm"] {
        let s = state(name);
        if s.starts_with("ready") {
            continue;
        }
        assert!(
            s.starts_with(&format!("needs setup: `wasmlab setup {name}` ("))
                || s.starts_with("unavailable here: "),
            "{name}: {s}"
        );
        skipped(&format!("{name} is not ready here: {s}"));
    }
    // WasmEdge comes from no registry this lab installs from: the state says where to get it.
    let wasmedge = state("wasmedge-cli");
    if !wasmedge.starts_with("ready") {
        assert!(
            wasmedge.starts_with("unavailable here: ") && wasmedge.contains("https://wasmedge.org"),
            "{wasmedge}"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let bad = write(
        tmp.path(),
        "bad.toml",
        "name = \"bad\"\nabout = \"x\"\n[start]\ncommand = [\"{nope}\"]\n",
    );
    assert_fails_with(
        &["variants", "--variant-file", &bad],
        "unknown placeholder {nope}",
    );
    assert_fails_with(
        &["run", "--variant-file", "/no/such/file.toml", "--no-build"],
        "cannot read variant file /no/such/file.toml",
    );
}

#[test]
fn setup_says_what_it_would_install_and_what_no_registry_has() {
    let tools = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(WASMLAB)
            .args(args)
            .env("WASMLAB_TOOLS", tools.path())
            .output()
            .unwrap()
    };
    let out = run(&["setup", "--dry-run", "wasmtime-cli"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("would install wasmtime: cargo install wasmtime-cli")
            || text.contains("wasmtime is installed"),
        "{text}"
    );
    let out = run(&["setup", "wasmedge-cli"]);
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("wasmedge is installed") {
        support::skipped_not_installable("the unavailable case needs a machine without wasmedge");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("cannot set up wasmedge-cli"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be installed by wasmlab"));
}

#[test]
fn setup_within_a_time_leaves_what_does_not_fit_for_later_and_refuses_a_bad_time() {
    let tools = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "slow.toml",
        r#"name = "slow-to-set-up"
about = "a variant whose tool takes half an hour to build"

[[requires]]
tool = "wasmlab-no-such-tool"
install = { from = "local", path = "engines/no-such-engine", version = "1.0", minutes = 30 }

[start]
command = ["true"]
"#,
    );
    let out = Command::new(WASMLAB)
        .args(["setup", "--variant-file", &file, "--within", "1.5"])
        .arg("slow-to-set-up")
        .env("WASMLAB_TOOLS", tools.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // Not tried at all: the build of a directory that does not exist would fail at once.
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(
            "slow-to-set-up: wasmlab-no-such-tool left for later: build engines/no-such-engine of \
             this repository (about 30 min) would end past 1.5 min"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "left for later, not within the time given: wasmlab-no-such-tool (about 30 min)"
        ),
        "{text}"
    );
    assert!(
        !tools.path().join("logs").exists(),
        "an install was started"
    );
    for bad in ["0", "-3", "soon", "inf", "NaN"] {
        assert_fails_with(
            &["setup", &format!("--within={bad}")],
            "is not a positive number of minutes",
        );
    }
}
