//! A guest that misbehaves on request, built both as a core module (handler ABI) and as a WASI
//! command, so the hardening tests can aim every kind of fault at every Wasm executor:
//!
//! | route | what the guest does |
//! |---|---|
//! | `/trap` | executes `unreachable` |
//! | `/loop` | spins forever |
//! | `/grow` | allocates until memory runs out |
//! | `/stack` | recurses until the stack overflows |
//! | `/secret/write?s=X` | writes X into a static buffer and the heap |
//! | `/secret/read` | returns what the static buffer holds (empty in a fresh instance) |
//! | `/header?name=N&value=V` | 200 `framed by the host` with the header `N: V` (any name, even one the host owns) |
//! | `/status?code=N` | answers status N (even one HTTP cannot end an exchange with) |
//! | anything else | 200 `ok` |

use core::hint::black_box;
use core::sync::atomic::{AtomicUsize, Ordering};

use wasmlab_handlers::{Request, Response};

const SECRET_CAP: usize = 256;
static SECRET: [AtomicUsize; SECRET_CAP] = [const { AtomicUsize::new(0) }; SECRET_CAP];
static SECRET_LEN: AtomicUsize = AtomicUsize::new(0);

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

wasmlab_guest_core::export_handler!(hostile);
