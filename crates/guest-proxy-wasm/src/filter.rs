//! The proxy-wasm filter around [`Exchange`]: Envoy's callbacks in, local replies out.

use std::cell::Cell;
use std::time::Duration;

use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, ContextType, LogLevel, Status};
use wasmlab_handlers::Response;

use crate::{COUNTER_KEY, Calls, Exchange, TRAP_CONFIGURATION, TRAP_PATH, UPSTREAM_CLUSTER};

proxy_wasm::main! {{
    proxy_wasm::set_log_level(LogLevel::Warn);
    proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> { Box::new(Root) });
}}

thread_local! {
    // Whether this plugin's configuration adds the hostile route (an instance is one thread's).
    static TRAP_ROUTE: Cell<bool> = const { Cell::new(false) };
}

/// The upstream's answer is awaited this long, as the lab's gateways await theirs.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(10);

struct Root;

impl Context for Root {}

impl RootContext for Root {
    fn on_vm_start(&mut self, _size: usize) -> bool {
        // The counter made before any request: every worker's instance starts before Envoy
        // listens, so increments always compare-and-swap (a first write without a CAS, from two
        // workers at once, would count one request twice). A reloaded instance finds it there.
        if let Ok((None, _)) = hostcalls::get_shared_data(COUNTER_KEY) {
            let _ = hostcalls::set_shared_data(COUNTER_KEY, Some(&0u64.to_le_bytes()), None);
        }
        true
    }

    fn on_configure(&mut self, _size: usize) -> bool {
        let config = self.get_plugin_configuration().unwrap_or_default();
        TRAP_ROUTE.set(config == TRAP_CONFIGURATION.as_bytes());
        true
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }

    fn create_http_context(&self, _id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Filter::default()))
    }
}

/// The host's shared data and HTTP calls.
struct Envoy;

impl Calls for Envoy {
    fn increment(&self) -> Result<u64, String> {
        // Every worker's instance shares the counter: compare-and-swap until this one's write wins.
        loop {
            let (value, cas) = hostcalls::get_shared_data(COUNTER_KEY)
                .map_err(|s| format!("get_shared_data: {s:?}"))?;
            let n = value
                .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
                .map_or(0, u64::from_le_bytes)
                + 1;
            match hostcalls::set_shared_data(COUNTER_KEY, Some(&n.to_le_bytes()), cas) {
                Ok(()) => return Ok(n),
                Err(Status::CasMismatch) => continue,
                Err(s) => return Err(format!("set_shared_data: {s:?}")),
            }
        }
    }

    fn dispatch_get(&self, target: &str) -> Result<(), String> {
        hostcalls::dispatch_http_call(
            UPSTREAM_CLUSTER,
            vec![
                (":method", "GET"),
                (":path", target),
                (":authority", UPSTREAM_CLUSTER),
            ],
            None,
            vec![],
            UPSTREAM_TIMEOUT,
        )
        .map(|_| ())
        .map_err(|s| format!("dispatch_http_call to {UPSTREAM_CLUSTER}: {s:?}"))
    }
}

#[derive(Default)]
struct Filter {
    method: String,
    target: String,
    exchange: Option<Exchange>,
}

impl Filter {
    /// Handles the complete request; the filter answers it, now or when the upstream has.
    fn run(&mut self, body: Vec<u8>) -> Action {
        if TRAP_ROUTE.get() && self.target == TRAP_PATH {
            panic!("the hostile route traps");
        }
        let method = std::mem::take(&mut self.method);
        let target = std::mem::take(&mut self.target);
        let mut exchange = Exchange::start(Envoy, method, target, body);
        match exchange.poll() {
            Some(response) => respond(response),
            None => self.exchange = Some(exchange),
        }
        Action::Pause
    }
}

fn respond(r: Response) {
    let headers = r.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // Fails only if the stream is gone (the client left): nothing to answer then.
    let _ = hostcalls::send_http_response(r.status.into(), headers, Some(&r.body));
}

impl Context for Filter {
    fn on_http_call_response(
        &mut self,
        _token: u32,
        _headers: usize,
        size: usize,
        _trailers: usize,
    ) {
        let answer = match self.get_http_call_response_header(":status").as_deref() {
            Some("200") => Ok(self
                .get_http_call_response_body(0, size)
                .unwrap_or_default()),
            Some(status) => Err(format!("the upstream answered {status}")),
            None => Err("no answer from the upstream (reset or timed out)".to_owned()),
        };
        if let Some(response) = self.exchange.as_mut().and_then(|e| e.reply(answer)) {
            self.exchange = None;
            respond(response);
        }
    }
}

impl HttpContext for Filter {
    fn on_http_request_headers(&mut self, _headers: usize, end_of_stream: bool) -> Action {
        self.method = self.get_http_request_header(":method").unwrap_or_default();
        self.target = self.get_http_request_header(":path").unwrap_or_default();
        match end_of_stream {
            true => self.run(Vec::new()),
            // The body follows. Pausing here would stop Envoy calling this filter with it (a
            // proxy-wasm filter's pause on headers is Envoy's StopAllIteration): the headers go
            // on, to a filter that holds them from the router (the variants' buffer filter), and
            // the body is held here, chunk by chunk, until its end.
            false => Action::Continue,
        }
    }

    fn on_http_request_body(&mut self, size: usize, end_of_stream: bool) -> Action {
        if !end_of_stream {
            return Action::Pause;
        }
        // Every chunk paused before this one was buffered: `size` is the whole body's.
        let body = self.get_http_request_body(0, size).unwrap_or_default();
        self.run(body)
    }
}
