//! The server suite's parsing, validation and planning, tested on suites written inline.

use super::*;

#[test]
fn a_variant_meets_the_suite_without_what_it_does_not_serve() {
    let text = r#"name = "t"
variants = ["native"]
workloads = ["hello", "compute", "echo"]
verify_only = ["not-found"]
connections = [1]
duration_secs = 1.0
[warm]
duration_secs = 1.0
workloads = ["compute"]
[open_loop]
fractions = [0.5]
duration_secs = 1.0
connections = 10
[equal_load]
duration_secs = 1.0
"#;
    let suite = ServerSuite::parse(text).unwrap();
    let none = std::collections::BTreeMap::new();
    assert!(matches!(
        suite.served_by(&none),
        Some(std::borrow::Cow::Borrowed(_))
    ));
    let unserved: std::collections::BTreeMap<String, String> = [
        ("compute".to_owned(), "no SHA-256".to_owned()),
        ("not-found".to_owned(), "no 404".to_owned()),
    ]
    .into();
    let own = suite.served_by(&unserved).unwrap();
    assert_eq!(own.workloads, ["hello", "echo"]);
    assert!(own.verify_only.is_empty());
    // Warm named compute alone: nothing warm is measured, rather than every workload.
    assert!(own.warm.is_none());
    // Open loop and equal load named none: the suite's workloads, less compute.
    assert_eq!(own.open_loop_workloads(), ["hello", "echo"]);
    assert_eq!(own.equal_load_workloads(), ["hello", "echo"]);
    assert_eq!(own.named_workloads(), ["hello", "echo"]);
    let all: std::collections::BTreeMap<String, String> = ["hello", "compute", "echo"]
        .map(|w| (w.to_owned(), "no".to_owned()))
        .into();
    assert!(suite.served_by(&all).is_none());
}

#[test]
fn a_suite_s_component_is_relative_to_the_suite_file_and_its_variants_may_be_left_out() {
    let text = "name = \"mine\"\nworkloads = [\"hello\"]\nconnections = [1]\nduration_secs = 1\ncomponent = \"app.wasm\"\n";
    let s = ServerSuite::parse_in(text, Path::new("/srv/mine")).unwrap();
    assert_eq!(s.component.as_deref(), Some("/srv/mine/app.wasm"));
    assert!(s.variants.is_empty());
    let e = s
        .check_variants(&Catalog::builtin())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`variants` is empty") && e.contains("--component"),
        "{e}"
    );
}

#[test]
fn the_http2_axis_adds_twins_after_their_variants_and_splits_levels_into_streams() {
    let text = r#"name = "t"
variants = ["native", "native-close", "wasmtime-pooled"]
workloads = ["hello"]
connections = [1, 10, 50]
duration_secs = 1.0
[http2]
streams = 10
[[threshold]]
fail_if = ["errors>0"]
variants = ["native-h2"]
"#;
    let mut suite = ServerSuite::parse(text).unwrap();
    let catalog = suite.catalog(&[]).unwrap();
    suite.add_http2_twins(&catalog).unwrap();
    assert_eq!(
        suite.variants,
        [
            "native",
            "native-h2",
            "native-close",
            "wasmtime-pooled",
            "wasmtime-pooled-h2"
        ]
    );
    suite.check_variants(&catalog).unwrap();
    let twin = catalog.find("native-h2").unwrap();
    assert_eq!(twin.protocol, Protocol::Http2);
    assert_eq!(
        twin.start.as_ref().unwrap().command.last().unwrap(),
        "--http2"
    );
    // A level is the requests in flight: 50 on 5 connections of 10 streams, fewer than 10
    // on one connection.
    assert_eq!(suite.http2_split(50), (5, 10));
    assert_eq!(suite.http2_split(10), (1, 10));
    assert_eq!(suite.http2_split(1), (1, 1));
    let axis = suite.http2_axis().unwrap();
    assert!(
        axis.contains("native-h2, wasmtime-pooled-h2")
            && axis.contains("HTTP/1.1 only: native-close"),
        "{axis}"
    );
    // Twice is once.
    suite.add_http2_twins(&catalog).unwrap();
    assert_eq!(suite.variants.len(), 5);

    let refused = |text: String| {
        let mut suite = match ServerSuite::parse(&text) {
            Ok(s) => s,
            Err(e) => return format!("{e:#}"),
        };
        let catalog = suite.catalog(&[]).unwrap();
        let checked = suite
            .add_http2_twins(&catalog)
            .and_then(|()| suite.check_variants(&catalog));
        format!("{:#}", checked.unwrap_err())
    };
    assert!(
        refused(text.replace("[1, 10, 50]", "[25]"))
            .contains("25 connections is not a multiple of the 10 HTTP/2 streams")
    );
    assert!(
        refused(text.replace(
            "streams = 10",
            "streams = 10\nvariants = [\"native-close\"]"
        ))
        .contains("native-close does not say how it serves HTTP/2")
    );
    assert!(
        refused(text.replace(
            "streams = 10",
            "streams = 10\nvariants = [\"wasmtime-shared\"]"
        ))
        .contains("not one the suite measures")
    );
    assert!(refused(text.replace("streams = 10", "streams = 0")).contains("http2.streams"));
    assert!(
        refused(text.replace("streams = 10", "streams = 10\nhttp1_only = [\"x\"]"))
            .contains("written by a run")
    );
    // Without the axis, a twin named outright is measured all the same, and its levels checked.
    let named = text
        .replace("[http2]\nstreams = 10\n", "")
        .replace("\"native-close\"", "\"native-h2\"")
        .replace("[1, 10, 50]", "[15]");
    assert!(refused(named).contains("15 connections"));
}

#[test]
fn equal_load_rates_are_shares_or_the_suites_own() {
    let base = r#"name = "t"
variants = ["native"]
workloads = ["hello", "compute"]
connections = [10]
duration_secs = 1.0
"#;
    let suite = |table: &str| ServerSuite::parse(&format!("{base}[equal_load]\n{table}"));
    let shares = suite("duration_secs = 0.5\n").unwrap();
    let e = shares.equal_load.as_ref().unwrap();
    assert_eq!((e.fractions.as_slice(), e.common_rate), (&[0.6][..], true));
    assert!(e.rates.of("hello").is_none() && e.probes(&shares.equal_load_workloads()));
    assert_eq!(shares.equal_load_workloads(), ["hello", "compute"]);
    let every = suite("duration_secs = 0.5\nrates = [1000, 5000]\n").unwrap();
    let e = every.equal_load.as_ref().unwrap();
    assert_eq!(e.rates.of("compute"), Some(&[1000.0, 5000.0][..]));
    assert!(!e.probes(&every.equal_load_workloads()));
    let by = suite(
        "duration_secs = 0.5\nrates = { hello = [20000] }\nworkloads = [\"hello\", \"compute\"]\n",
    )
    .unwrap();
    let e = by.equal_load.as_ref().unwrap();
    assert_eq!(e.rates.of("hello"), Some(&[20000.0][..]));
    assert!(e.rates.of("compute").is_none() && e.probes(&by.equal_load_workloads()));
    // Written back as read (run.json).
    let again = ServerSuite::parse(&toml::to_string(&by).unwrap()).unwrap();
    assert_eq!(
        again.equal_load.unwrap().rates.of("hello"),
        Some(&[20000.0][..])
    );

    let refused = |table: &str| format!("{:#}", suite(table).unwrap_err());
    for (table, says) in [
        ("duration_secs = 0.5\nfractions = [1.5]\n", "in (0, 1)"),
        ("duration_secs = 0.5\nfractions = [0]\n", "in (0, 1)"),
        (
            "duration_secs = 0\n",
            "`equal_load.duration_secs` must be > 0",
        ),
        (
            "duration_secs = 0.5\nconnections = 0\n",
            "`equal_load.connections`",
        ),
        (
            "duration_secs = 0.5\nrates = []\n",
            "`equal_load.rates` is empty",
        ),
        ("duration_secs = 0.5\nrates = [-5]\n", "requests per second"),
        (
            "duration_secs = 0.5\nrates = { echo = [100] }\n",
            "\"echo\" is not a workload measured at equal load",
        ),
        (
            "duration_secs = 0.5\nworkloads = [\"echo\"]\n",
            "is not one of the suite's `workloads`",
        ),
        (
            "duration_secs = 0.5\nfractions = []\n",
            "`equal_load.fractions` is empty",
        ),
        ("duration_secs = 0.5\nrate = [5]\n", "unknown field `rate`"),
    ] {
        let err = refused(table);
        assert!(err.contains(says), "{table}: {err}");
    }
}

#[test]
fn bad_suites_say_why() {
    let base = r#"name = "t"
variants = ["native"]
workloads = ["hello"]
connections = [1]
duration_secs = 1.0
"#;
    assert!(ServerSuite::parse(base).is_ok());
    let err = |text: String| {
        let checked = ServerSuite::parse(&text).and_then(|s| s.check_variants(&s.catalog(&[])?));
        format!("{:#}", checked.unwrap_err())
    };
    assert!(err(base.replace("\"native\"", "\"nope\"")).contains("unknown variant \"nope\""));
    assert!(err(base.replace("\"hello\"", "\"hi\"")).contains("unknown workload \"hi\""));
    assert!(err(format!("{base}echo_body_bytes = 64\n")).contains("body_size"));
    assert!(
        err(format!(
            "{base}[[workload]]\nname = \"x\"\nrequest = {{ path = \"/\" }}\n[[workload]]\nname = \"x\"\nrequest = {{ path = \"/\" }}\n"
        ))
        .contains("\"x\" is defined twice")
    );
    let unknown_field = err(format!(
        "{base}[[workload]]\nname = \"mine\"\nrequest = {{ path = \"/\" }}\nexpect = {{ stauts = 200 }}\n"
    ));
    assert!(
        unknown_field.contains("[[workload]] \"mine\"") && unknown_field.contains("stauts"),
        "{unknown_field}"
    );
    assert!(err(base.replace("[1]", "[0]")).contains("connections"));
    assert!(err(base.replace("1.0", "-1.0")).contains("duration_secs"));
    // Generators: each needs a connection; none at all, or an empty command, is refused.
    let two = base.replace("[1]", "[1, 4]") + "generators = 2\n";
    assert!(
        err(two.clone()).contains("2 generators need at least 2 connections"),
        "{}",
        err(two)
    );
    let ok = base.replace("[1]", "[2]") + "generators = 2\n";
    assert_eq!(ServerSuite::parse(&ok).unwrap().generator_count(), 2);
    assert!(err(format!("{base}generators = 0\n")).contains("needs `generator_commands`"));
    assert!(
        err(format!(
            "{base}generators = 0\ngenerator_commands = [\" \"]\n"
        ))
        .contains("an empty command")
    );
    assert!(err(format!("{base}colour = 1\n")).contains("colour"));
    assert!(err(base.replace("duration_secs = 1.0\n", "")).contains("duration_secs"));
    assert!(err(format!("{base}repetitions = 0\n")).contains("repetitions"));
    assert!(
        err(format!("{base}repetitions = 4\nmax_repetitions = 3\n"))
            .contains("`max_repetitions` (3) must be >= `repetitions` (4)")
    );
    assert!(
        err(format!("{base}repetitions = 1\nmax_repetitions = 4\n"))
            .contains("one repetition gives no interval")
    );
    assert!(
        err(format!(
            "{base}repetitions = 2\nmax_repetitions = 4\ninterval_target = 0\n"
        ))
        .contains("a positive share (0.05 for ±5%), not 0")
    );
    assert!(err(format!("{base}interval_target = 0.05\n")).contains("set both"));
    assert!(
        err(format!("{base}study = \"libsodium\"\n"))
            .contains("gateway-study, net-limits, wasi-test, wasmcloud, envoy-wasm")
    );
    assert!(ServerSuite::parse(&format!("{base}study = \"net-limits\"\n")).is_ok());
    assert!(
        err(format!(
            "{base}[cold_start]\nruns = 3\nvariants = [\"x\"]\n"
        ))
        .contains("unknown variant \"x\"")
    );
    assert!(
        err(format!(
            "{base}[open_loop]\nfractions = [0.5, 3.0]\nduration_secs = 1\nconnections = 4\n"
        ))
        .contains("fractions")
    );
    assert!(
        err(format!(
            "{base}[warm]\nduration_secs = 1\nworkloads = [\"z\"]\n"
        ))
        .contains("\"z\"")
    );
}
