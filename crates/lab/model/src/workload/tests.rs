use super::*;

fn workload(text: &str) -> anyhow::Result<Workload> {
    let w: Workload = toml::from_str(text)?;
    w.validate()?;
    Ok(w)
}

fn err(text: &str) -> String {
    format!("{:#}", workload(text).unwrap_err())
}

fn answer(status: u16, body: &str) -> Answer {
    Answer {
        status,
        headers: vec![("Content-Type".into(), "text/plain".into())],
        body: body.as_bytes().to_vec(),
    }
}

fn expect(text: &str) -> Expect {
    let e: Expect = toml::from_str(text).unwrap();
    e.validate("expect", b"sent", false).unwrap();
    e
}

#[test]
fn the_library_is_what_the_handlers_serve() {
    let lib = library();
    for w in lib {
        w.validate().unwrap_or_else(|e| panic!("{e:#}"));
    }
    let find = |name: &str| lib.iter().find(|w| w.name == name).unwrap();
    for route in wasmlab_handlers::ROUTES {
        let r = find(route.workload).first_request();
        assert_eq!(
            (r.method.as_str(), r.path.as_str()),
            (route.method, route.path)
        );
        if let Some(body) = wasmlab_handlers::expected_body(route.workload) {
            assert_eq!(
                find(route.workload)
                    .expect
                    .body
                    .as_deref()
                    .map(str::as_bytes),
                Some(&body[..])
            );
        }
    }
    let proxy = find("proxy");
    assert_eq!(
        proxy.expect.body.as_deref(),
        Some(wasmlab_upstream::echo_of("GET", &proxy.first_request().path).as_str())
    );
    assert_eq!(
        find("not-found").expect.body.as_deref(),
        Some(wasmlab_handlers::NOT_FOUND_BODY)
    );
    assert_eq!(
        find("wrong-method").expect.body.as_deref(),
        Some(wasmlab_handlers::METHOD_NOT_ALLOWED_BODY)
    );
    assert!(find("echo").expect.echo);
    assert!(find("state").expect.increments);
}

#[test]
fn each_kind_of_check_passes_and_fails() {
    let ok = |e: &Expect, a: &Answer| e.judge(a, b"sent", None);
    let status_only = expect("status = 201");
    assert!(ok(&status_only, &answer(201, "anything")).is_ok());
    let why = ok(&status_only, &answer(200, "x")).unwrap_err();
    assert!(why.contains("status 200, expected 201"), "{why}");

    let body = expect(r#"body = "hello""#);
    assert!(ok(&body, &answer(200, "hello")).is_ok());
    let why = ok(&body, &answer(200, "hellO")).unwrap_err();
    assert!(why.contains(r#"body "hellO", expected "hello""#), "{why}");

    let pattern = expect(r#"body_matches = '^\{"id":\d+\}$'"#);
    assert!(ok(&pattern, &answer(200, r#"{"id":42}"#)).is_ok());
    let why = ok(&pattern, &answer(200, r#"{"id":"x"}"#)).unwrap_err();
    assert!(why.contains("does not match"), "{why}");

    let length = expect("body_length = 5");
    assert!(ok(&length, &answer(200, "12345")).is_ok());
    assert!(
        ok(&length, &answer(200, "1234"))
            .unwrap_err()
            .contains("4 bytes, expected 5")
    );

    // printf hello | sha256sum
    let digest = expect(
        r#"body_sha256 = "2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824""#,
    );
    assert!(ok(&digest, &answer(200, "hello")).is_ok());
    assert!(
        ok(&digest, &answer(200, "hullo"))
            .unwrap_err()
            .contains("SHA-256")
    );

    let echo = expect("echo = true");
    assert!(ok(&echo, &answer(200, "sent")).is_ok());
    assert!(
        ok(&echo, &answer(200, "sen"))
            .unwrap_err()
            .contains("the request's body (4 bytes)")
    );

    let counter = expect("increments = true");
    assert!(counter.judge(&answer(200, "41"), b"", None).is_ok());
    assert!(counter.judge(&answer(200, "42\n"), b"", Some(41)).is_ok());
    let why = counter
        .judge(&answer(200, "43"), b"", Some(41))
        .unwrap_err();
    assert!(why.contains("counter 43, expected 42"), "{why}");
    assert!(
        counter
            .judge(&answer(200, "many"), b"", None)
            .unwrap_err()
            .contains("not a number")
    );

    let header = expect(r#"headers = { "content-type" = "text/plain" }"#);
    assert!(ok(&header, &answer(200, "")).is_ok());
    let mut wrong = answer(200, "");
    wrong.headers[0].1 = "text/html".into();
    assert!(
        ok(&header, &wrong)
            .unwrap_err()
            .contains("header content-type")
    );
    wrong.headers.clear();
    assert!(
        ok(&header, &wrong)
            .unwrap_err()
            .contains("no content-type header")
    );
}

#[test]
fn any_success_is_2xx_and_nothing_else_is_a_class() {
    let e = expect(r#"status = "2xx""#);
    assert_eq!(e.status, ExpectStatus::Success);
    for ok in [200, 201, 203, 299] {
        assert_eq!(e.judge(&answer(ok, "x"), b"", None), Ok(()), "{ok}");
    }
    let why = e.judge(&answer(404, "x"), b"", None).unwrap_err();
    assert!(why.contains("status 404, expected 2xx"), "{why}");
    assert_eq!(e.status.code(), None);
    assert_eq!(e.describe(), "2xx, status only");
    assert_eq!(expect("status = 201").status.code(), Some(201));
    let bad: Result<Expect, _> = toml::from_str(r#"status = "3xx""#);
    let bad = bad.unwrap_err().to_string();
    assert!(bad.contains(r#"give a number (200) or "2xx""#), "{bad}");
    // Written back as it was given.
    let json = serde_json::to_string(&e).unwrap();
    assert!(json.contains(r#""status":"2xx""#), "{json}");
}

#[test]
fn requests_rotate_and_carry_their_own_checks() {
    let w = workload(
        r#"name = "items"
requests = [
  { path = "/items/1", expect = { body = "one" } },
  { method = "PUT", path = "/items/2?x=1", headers = { "x-key" = "k" }, body = "two" },
]
expect = { status = 200, echo = true }
"#,
    )
    .unwrap();
    let rs: Vec<_> = w.each_request().collect();
    assert_eq!(rs.len(), 2);
    assert_eq!(w.expect_for(rs[0]).body.as_deref(), Some("one"));
    assert!(w.expect_for(rs[1]).echo);
    assert_eq!(rs[1].load_body().unwrap(), b"two");
    assert_eq!(
        rs[1].describe(),
        "PUT /items/2?x=1 + 1 header (3-byte body)"
    );
    assert_eq!(w.first_request().path, "/items/1");
}

#[test]
fn bodies_come_inline_from_a_file_or_generated() {
    let dir = std::env::temp_dir().join(format!("wasmlab-workload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("payload.json"), br#"{"a":1}"#).unwrap();
    let mut w: Workload = toml::from_str(
        r#"name = "file"
request = { method = "POST", path = "/", body_file = "payload.json" }
expect = { echo = true, body_length = 7 }
"#,
    )
    .unwrap();
    w.resolve_paths(&dir);
    w.validate().unwrap();
    assert_eq!(w.first_request().load_body().unwrap(), br#"{"a":1}"#);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(generated_body(40).len(), 40);
    assert_eq!(&generated_body(38)[34..], b"89ab");
}

#[test]
fn malformed_definitions_say_which_field() {
    let base = "name = \"w\"\nrequest = { path = \"/\" }\n";
    assert!(workload(base).is_ok());
    let cases: &[(&str, &str)] = &[
        (
            "name = \"w\"\nrequest = { path = \"/\", bdy = \"x\" }\n",
            "unknown field `bdy`",
        ),
        ("name = \"w\"\n", "no request"),
        ("name = \"a b\"\nrequest = { path = \"/\" }\n", "a name is"),
        (
            "name = \"w\"\nrequest = { path = \"/\" }\nrequests = [{ path = \"/\" }]\n",
            "not both",
        ),
        (
            "name = \"w\"\nrequest = { path = \"x\" }\n",
            "`request.path` \"x\"",
        ),
        (
            "name = \"w\"\nrequest = { method = \"G T\", path = \"/\" }\n",
            "`request.method`",
        ),
        (
            "name = \"w\"\nrequest = { path = \"/\", headers = { \"content-length\" = \"3\" } }\n",
            "frames the body itself",
        ),
        (
            "name = \"w\"\nrequest = { path = \"/\", body = \"x\", body_size = 3 }\n",
            "one of `body`, `body_file` and `body_size`",
        ),
        (
            "name = \"w\"\nrequest = { path = \"/\", body_file = \"/no/such/file\" }\n",
            "`request.body_file` /no/such/file",
        ),
        (
            "name = \"w\"\nrequests = [{ path = \"/\" }, { path = \"/\", expect = { body_matches = \"(\" } }]\n",
            "`requests[1].expect.body_matches` \"(\" is not a regular expression",
        ),
        (
            &format!("{base}expect = {{ body_sha256 = \"abc\" }}\n"),
            "`expect.body_sha256`",
        ),
        (
            &format!("{base}expect = {{ status = 700 }}\n"),
            "`expect.status` 700",
        ),
        (
            &format!("{base}expect = {{ status = 100 }}\n"),
            "`expect.status` 100",
        ),
    ];
    for (text, want) in cases {
        let e = err(text);
        assert!(e.contains(want), "{text}: {e}");
        assert!(
            text.contains("bdy") || e.contains("workload \""),
            "{text}: {e}"
        );
    }
}

#[test]
fn checks_no_answer_could_pass_are_refused() {
    let base = "name = \"w\"\nrequest = { path = \"/\" }\n";
    let impossible = [
        "expect = { body = \"hello\", body_length = 4 }",
        "expect = { body = \"hello\", body_matches = \"^x\" }",
        "expect = { body = \"hello\", body_sha256 = \"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9825\" }",
        "expect = { status = 204, body = \"x\" }",
        "expect = { status = 304, body_length = 1 }",
        "expect = { increments = true, body = \"1\" }",
        "expect = { increments = true, status = 204 }",
        "expect = { echo = true, body = \"x\" }",
    ];
    for e in impossible {
        let why = err(&format!("{base}{e}\n"));
        assert!(why.contains("no answer could pass"), "{e}: {why}");
    }
    let head = err(
        "name = \"w\"\nrequest = { method = \"HEAD\", path = \"/\" }\nexpect = { body = \"x\" }\n",
    );
    assert!(head.contains("HEAD answer has no body"), "{head}");
    // Consistent combinations pass.
    for e in [
        "expect = { body = \"hello\", body_length = 5, body_matches = \"ell\" }",
        "expect = { status = 204 }",
        "expect = { status = 204, body_length = 0 }",
        "expect = { increments = true, body_matches = \"^[0-9]+$\" }",
        "expect = { echo = true, body_length = 0 }",
    ] {
        assert!(workload(&format!("{base}{e}\n")).is_ok(), "{e}");
    }
}

#[test]
fn checks_describe_themselves() {
    let lib = library();
    let d = |n: &str| lib.iter().find(|w| w.name == n).unwrap().expect.describe();
    assert_eq!(d("hello"), "200, body \"hello\"");
    assert_eq!(d("echo"), "200, the request's body back");
    assert_eq!(expect("status = 201").describe(), "201, status only");
}

#[test]
fn the_examples_in_the_docs_are_suites_that_read() {
    let dir = std::env::temp_dir().join(format!("wasmlab-docs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("payload.json"), b"{}").unwrap();
    for (doc, text) in [
        ("README.md", include_str!("../../../../../README.md")),
        (
            "docs/workloads.md",
            include_str!("../../../../../docs/workloads.md"),
        ),
    ] {
        let example = text
            .split("```toml")
            .skip(1)
            .filter_map(|block| block.split("```").next())
            .find(|block| block.contains("[[workload]]"))
            .unwrap_or_else(|| panic!("{doc} has no workload example"));
        let suite = crate::suite::ServerSuite::parse_in(example, &dir)
            .unwrap_or_else(|e| panic!("{doc}'s example: {e:#}"));
        assert!(suite.workload(&suite.workloads[0]).is_some(), "{doc}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_readmes_remote_example_is_a_suite_that_reads() {
    let readme = include_str!("../../../../../README.md");
    let example = readme
        .split("```toml")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .find(|block| block.contains("url = "))
        .expect("README has a remote example");
    let suite = crate::suite::ServerSuite::parse(example).unwrap();
    let catalog = suite.catalog(&[]).unwrap();
    suite.check_variants(&catalog).unwrap();
    assert!(catalog.find("spin-on-k8s").unwrap().is_remote());
}
