//! A guest that misbehaves on request, built as a core module (handler ABI), as a WASI command,
//! (feature `component`) as a WASI 0.2 `wasi:http` component and (feature `component-p3`) as a
//! WASI 0.3 one, so the hardening tests can aim every kind of fault at every Wasm executor:
//!
//! | route | what the guest does |
//! |---|---|
//! | `/trap` | executes `unreachable` |
//! | `/loop` | spins forever |
//! | `/grow` | allocates until memory runs out |
//! | `/stack` | recurses until the stack overflows |
//! | `/secret/write?s=X` | writes X into a static buffer and the heap |
//! | `/secret/read` | returns what the static buffer holds (empty in a fresh instance) |
//! | `/fingerprint` | its state as a fresh instance has it the same every time: a counter in `.bss` and a value in `.data` (both changed on each call), where its stack and a new heap block are, its memory's size |
//! | `/header?name=N&value=V` | 200 `framed by the host` with the header `N: V` (any name, even one the host owns) |
//! | `/status?code=N` | answers status N (even one HTTP cannot end an exchange with) |
//! | `/block` | (component only) waits on a clock an hour away: a wait in the host, not in guest code |
//! | `/fetch?authority=A` | (component only) `GET http://A/`: the body, or 502 with why it failed |
//! | `/random` | (component only) what its WASI context's random generators give: `wasi:random`'s insecure seed and 8 insecure random bytes, in hex |
//! | `/no-response` | (WASI 0.2 component only) returns without setting its response, keeping the outparam |
//! | `/drop-response` | (WASI 0.2 component only) drops its outparam unset |
//! | `/unfinished` | (component only) sets a 200 and writes part of its body, never finishing it (WASI 0.3: declares 1000 bytes and ends its body after 27) |
//! | `/error` | (WASI 0.3 component only) answers with an error code instead of a response |
//! | `/trap-in-body` | (WASI 0.3 component only) returns a 200 whose body's writer traps |
//! | anything else | 200 `ok` |

use core::hint::black_box;
use core::sync::atomic::{AtomicUsize, Ordering};

use wasmlab_handlers::{Request, Response};

const SECRET_CAP: usize = 256;
static SECRET: [AtomicUsize; SECRET_CAP] = [const { AtomicUsize::new(0) }; SECRET_CAP];
static SECRET_LEN: AtomicUsize = AtomicUsize::new(0);
static CALLS: AtomicUsize = AtomicUsize::new(0);
static SEED: AtomicUsize = AtomicUsize::new(0x5eed);

pub fn hostile(req: Request<'_>) -> Response {
    match req.path() {
        "/trap" => trap(),
        "/loop" => {
            let spins = AtomicUsize::new(0);
            loop {
                spins.fetch_add(1, Ordering::Relaxed);
                black_box(&spins);
            }
        }
        "/grow" => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                // Touch every chunk so nothing is optimised away.
                hoard.push(black_box(vec![1u8; 1 << 20]));
            }
        }
        "/stack" => Response::text(200, recurse(black_box(1)).to_string()),
        "/secret/write" => {
            let s = req.query_param("s").unwrap_or("").as_bytes();
            let n = s.len().min(SECRET_CAP);
            for (slot, b) in SECRET.iter().zip(s) {
                slot.store(usize::from(*b), Ordering::Relaxed);
            }
            SECRET_LEN.store(n, Ordering::Relaxed);
            // A copy on the heap too, left behind for the next instance to find if memory leaked.
            black_box(s.to_vec().leak());
            Response::text(200, "stored")
        }
        "/secret/read" => {
            let n = SECRET_LEN.load(Ordering::Relaxed);
            let bytes: Vec<u8> = SECRET[..n]
                .iter()
                .map(|b| b.load(Ordering::Relaxed) as u8)
                .collect();
            Response::text(200, bytes)
        }
        "/fingerprint" => {
            let calls = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
            let seed = SEED.swap(0xdead, Ordering::Relaxed);
            let on_stack = black_box(0u8);
            let stack = core::ptr::addr_of!(on_stack) as usize;
            let heap = black_box(Box::new([0u8; 24]));
            #[cfg(target_arch = "wasm32")]
            let pages = core::arch::wasm32::memory_size(0);
            #[cfg(not(target_arch = "wasm32"))]
            let pages = 0;
            let heap = core::ptr::addr_of!(*heap) as usize;
            Response::text(
                200,
                format!(
                    "calls={calls} seed={seed:#x} stack={stack:#x} heap={heap:#x} pages={pages}"
                ),
            )
        }
        "/header" => {
            let mut resp = Response::text(200, "framed by the host");
            let name = req.query_param("name").unwrap_or("x-empty").to_owned();
            let value = req.query_param("value").unwrap_or("").to_owned();
            resp.headers.push((name.leak(), value));
            resp
        }
        "/status" => {
            let code = req.query_param("code").and_then(|c| c.parse().ok());
            let code = code.unwrap_or(200);
            Response::text(code, format!("status {code}"))
        }
        _ => Response::text(200, "ok"),
    }
}

fn trap() -> ! {
    #[cfg(target_arch = "wasm32")]
    core::arch::wasm32::unreachable();
    #[cfg(not(target_arch = "wasm32"))]
    panic!("trap");
}

/// Recursion the optimiser cannot turn into a loop (a frame per level, kept live by black_box).
#[inline(never)]
#[allow(unconditional_recursion, reason = "the stack overflow is the point")]
fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth; 32]);
    black_box(recurse(black_box(depth + 1))) + frame[(depth % 32) as usize]
}

#[cfg(not(any(feature = "component", feature = "component-p3")))]
wasmlab_guest_core::export_handler!(hostile);

#[cfg(all(feature = "component-p3", target_arch = "wasm32"))]
mod service;

#[cfg(all(feature = "component", target_arch = "wasm32"))]
const _: () = {
    use wasip2::http::types::{Fields, IncomingRequest, OutgoingResponse, ResponseOutparam};
    use wasmlab_guest_http::wasip2;

    struct Hostile;

    /// Every route of `component::hostile`, and those that fail to answer, which need the
    /// request's outparam itself.
    impl wasip2::exports::http::incoming_handler::Guest for Hostile {
        fn handle(request: IncomingRequest, out: ResponseOutparam) {
            match request.path_with_query().as_deref() {
                // Returns with the outparam still held: the host is never told.
                Some("/no-response") => core::mem::forget(out),
                Some("/drop-response") => drop(out),
                Some("/unfinished") => {
                    let response = OutgoingResponse::new(Fields::new());
                    let body = response.body().expect("a new response's body");
                    ResponseOutparam::set(out, Ok(response));
                    let stream = body.write().expect("a new body's stream");
                    let _ = stream.blocking_write_and_flush(b"the first part, and no more");
                    // Neither finished nor dropped: held until the instance goes.
                    core::mem::forget(stream);
                    core::mem::forget(body);
                }
                _ => wasmlab_guest_http::serve(request, out, component::hostile),
            }
        }
    }

    wasip2::http::proxy::export!(Hostile);
};

#[cfg(feature = "component")]
mod component {
    use wasmlab_guest_http::UpstreamHost;
    use wasmlab_handlers::{Request, Response};

    /// The routes every build has, and those only a component can misbehave with: a wait the
    /// host carries out, and an outgoing request to anywhere.
    pub fn hostile(req: Request<'_>, _host: &UpstreamHost) -> Response {
        match req.path() {
            #[cfg(target_arch = "wasm32")]
            "/block" => {
                use wasmlab_guest_http::wasip2::clocks::monotonic_clock;
                monotonic_clock::subscribe_duration(3_600_000_000_000).block();
                Response::text(200, "woke")
            }
            #[cfg(target_arch = "wasm32")]
            "/random" => {
                use wasmlab_guest_http::wasip2::random::{insecure, insecure_seed};
                let (hi, lo) = insecure_seed::insecure_seed();
                let bytes: String = insecure::get_insecure_random_bytes(8)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                Response::text(200, format!("seed={hi:016x}{lo:016x} bytes={bytes}"))
            }
            #[cfg(target_arch = "wasm32")]
            "/fetch" => {
                let authority = req.query_param("authority").unwrap_or("");
                match fetch(authority) {
                    Ok(body) => Response::bytes(200, body),
                    Err(e) => Response::text(502, e),
                }
            }
            _ => super::hostile(req),
        }
    }

    /// `GET http://AUTHORITY/`, the body of its answer or the error.
    #[cfg(target_arch = "wasm32")]
    fn fetch(authority: &str) -> Result<Vec<u8>, String> {
        use wasmlab_guest_http::wasip2::http::outgoing_handler;
        use wasmlab_guest_http::wasip2::http::types::{Fields, OutgoingRequest, Scheme};
        let request = OutgoingRequest::new(Fields::new());
        let _ = request.set_scheme(Some(&Scheme::Http));
        let _ = request.set_authority(Some(authority));
        let _ = request.set_path_with_query(Some("/"));
        let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
        let response = loop {
            match pending.get() {
                Some(outcome) => break outcome,
                None => pending.subscribe().block(),
            }
        };
        let response = response
            .map_err(|()| "taken".to_owned())?
            .map_err(|e| format!("{e:?}"))?;
        let body = response.consume().map_err(|()| "taken".to_owned())?;
        let stream = body.stream().map_err(|()| "taken".to_owned())?;
        let mut bytes = Vec::new();
        while let Ok(chunk) = stream.blocking_read(64 << 10) {
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }
}
