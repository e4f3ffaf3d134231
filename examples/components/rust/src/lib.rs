//! A small HTTP service as a wasi:http component (WASI 0.2's proxy world): the kind of component
//! `wasmlab run --component` measures, written without anything of wasmlab's.
//!
//! - `GET /` answers `hello from Rust`;
//! - `GET /greet?name=NAME` answers `hello, NAME`;
//! - `GET /trap` panics (the instance traps): a host answers 500 or drops the connection;
//! - `GET /hang` never answers: a host with a time limit ends it;
//! - anything else is 404.

use std::io::Write;

use wasip2::exports::http::incoming_handler::Guest;
use wasip2::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
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
