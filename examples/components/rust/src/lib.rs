//! A small HTTP service as a wasi:http component (WASI 0.2's proxy world): the kind of component
//! `wasmlab run --component` measures, written without anything of wasmlab's.
//!
//! - `GET /` answers `hello from Rust`;
//! - `GET /greet?name=NAME` answers `hello, NAME`;
//! - `GET /env?name=KEY` answers the value of the environment variable KEY (404 when unset);
//! - `GET /fetch` sends `GET` to the URL in `FETCH_URL` (`http://host:port/path`) and answers the
//!   status it got, or 502 with the host's error when the request was refused or failed;
//! - `GET /trap` panics (the instance traps): a host answers 500 or drops the connection;
//! - `GET /hang` never answers: a host with a time limit ends it;
//! - anything else is 404.

use std::io::Write;

use wasip2::exports::http::incoming_handler::Guest;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingRequest, OutgoingResponse,
    ResponseOutparam, Scheme,
};

struct Service;

impl Guest for Service {
    fn handle(request: IncomingRequest, reply: ResponseOutparam) {
        let target = request.path_with_query().unwrap_or_else(|| "/".into());
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let (status, text) = match (request.method(), path) {
            (Method::Get, "/") => (200, "hello from Rust\n".to_owned()),
            (Method::Get, "/greet") => {
                let name = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("name="))
                    .unwrap_or("stranger");
                (200, format!("hello, {name}\n"))
            }
            (Method::Get, "/env") => {
                let key = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("name="))
                    .unwrap_or("");
                match std::env::var(key) {
                    Ok(v) => (200, format!("{v}\n")),
                    Err(_) => (404, format!("no variable {key:?}\n")),
                }
            }
            (Method::Get, "/fetch") => match std::env::var("FETCH_URL") {
                Ok(url) => match fetch(&url) {
                    Ok(status) => (200, format!("{url} answered {status}\n")),
                    Err(e) => (502, format!("{url}: {e}\n")),
                },
                Err(_) => (404, "no FETCH_URL in the environment\n".to_owned()),
            },
            (Method::Get, "/trap") => panic!("GET /trap: trapping as asked"),
            (Method::Get, "/hang") => loop {
                std::hint::spin_loop();
            },
            (Method::Get, _) => (404, format!("no route {path}\n")),
            _ => (405, "only GET\n".to_owned()),
        };
        send(reply, status, text.as_bytes());
    }
}

/// The status `GET url` answers with (`url` is `http://host:port/path`).
fn fetch(url: &str) -> Result<u16, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or("not an http:// URL")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let request = OutgoingRequest::new(Fields::new());
    request.set_scheme(Some(&Scheme::Http)).map_err(|()| "scheme")?;
    request.set_authority(Some(authority)).map_err(|()| "authority")?;
    request.set_path_with_query(Some(path)).map_err(|()| "path")?;
    // An empty body, finished: some hosts wait for it before they send the request.
    let body = request.body().map_err(|()| "the request's body")?;
    let sent = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    OutgoingBody::finish(body, None).map_err(|e| format!("{e:?}"))?;
    sent.subscribe().block();
    match sent.get() {
        Some(Ok(Ok(response))) => Ok(response.status()),
        Some(Ok(Err(e))) => Err(format!("{e:?}")),
        _ => Err("no response".into()),
    }
}

/// Answers `status` with `body` as plain text.
fn send(reply: ResponseOutparam, status: u16, body: &[u8]) {
    let headers = Fields::from_list(&[
        (
            "content-type".to_owned(),
            b"text/plain; charset=utf-8".to_vec(),
        ),
        (
            "content-length".to_owned(),
            body.len().to_string().into_bytes(),
        ),
    ])
    .expect("valid headers");
    let response = OutgoingResponse::new(headers);
    response.set_status_code(status).expect("a valid status");
    let outgoing = response.body().expect("the body, taken once");
    ResponseOutparam::set(reply, Ok(response));
    let mut stream = outgoing.write().expect("the body's stream, taken once");
    stream.write_all(body).expect("the body written");
    stream.flush().expect("the body flushed");
    drop(stream);
    OutgoingBody::finish(outgoing, None).expect("the body finished");
}

wasip2::http::proxy::export!(Service);
