//! wasmlab's handlers as a Fastly Compute program: each request runs in a fresh instance (as
//! Fastly and its local runtime, Viceroy, run every request), `/proxy` and `/state` go to the
//! lab's upstream through the backend named [`UPSTREAM`] (a Compute program keeps nothing between
//! requests and Fastly gives it no counter it could increment atomically: the counter is the
//! upstream's, as for wasmlab's wasi:http component).

use fastly::{Error, Request, Response};
use wasmlab_handlers::{Host, handle, run_ready};

/// The backend the service's configuration names for the lab's upstream.
const UPSTREAM: &str = "upstream";

/// The upstream's counter (`POST`, no body): `wasmlab_upstream::COUNTER_PATH`.
const COUNTER_PATH: &str = "/wasmlab/counter";

struct Backend;

impl Backend {
    /// `req` to the upstream: its body, or why there is none.
    fn send(req: Request) -> Result<Vec<u8>, String> {
        let resp = req.send(UPSTREAM).map_err(|e| e.to_string())?;
        match resp.get_status().as_u16() {
            200 => Ok(resp.into_body_bytes()),
            s => Err(format!("the upstream answered {s}")),
        }
    }
}

impl Host for Backend {
    async fn state_increment(&self) -> Result<u64, String> {
        let body = Self::send(Request::post(format!("http://{UPSTREAM}{COUNTER_PATH}")))?;
        let text = String::from_utf8_lossy(&body);
        text.trim()
            .parse()
            .map_err(|_| format!("the upstream's counter answered {text:?}"))
    }

    async fn proxy_get(&self, target: &str) -> Result<Vec<u8>, String> {
        Self::send(Request::get(format!("http://{UPSTREAM}{target}")))
    }
}

#[fastly::main]
fn main(mut req: Request) -> Result<Response, Error> {
    let body = req.take_body_bytes();
    let target = match req.get_query_str() {
        Some(q) => format!("{}?{q}", req.get_path()),
        None => req.get_path().to_owned(),
    };
    let request = wasmlab_handlers::Request::new(req.get_method_str(), &target, &body);
    let answer = run_ready(handle(request, &Backend));
    let mut resp = Response::from_status(answer.status).with_body(answer.body);
    for (name, value) in answer.headers {
        resp.set_header(name, value);
    }
    Ok(resp)
}
