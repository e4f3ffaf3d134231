//! Running the same request sequence through two executors and comparing what each answered:
//! how the isolation tests and the `recycled_equals_fresh` fuzz target prove that a recycled
//! instance behaves exactly as a fresh one.

use bytes::Bytes;
use wasmlab_gateway::{ExecRequest, Executor};

/// The guest of those tests (crates/guest-hostile/secret-keeper.wat): state in a global, a
/// table, memory and the memory's size, all shown in every answer.
pub const SECRET_KEEPER: &str = include_str!("../../guest-hostile/secret-keeper.wat");

/// One answer: the status, and the body (or the failure's status with an empty body; the
/// diagnosis may name instance internals that differ between executors).
pub type Answer = (u16, Bytes);

/// `GET target` for each target in turn, and what came back.
pub async fn answers<E: Executor>(ex: &E, targets: &[String]) -> Vec<Answer> {
    let mut out = Vec::with_capacity(targets.len());
    for t in targets {
        let outcome = ex
            .execute(ExecRequest::new(
                hyper::Method::GET,
                t.clone(),
                Bytes::new(),
            ))
            .await;
        out.push(match outcome {
            Ok(r) => (r.status, r.body),
            Err(f) => (f.status, Bytes::new()),
        });
    }
    out
}

/// The hostile guest's component, fresh per request and recycled, under `limits`: the pair the
/// component isolation tests and the `component_recycled_equals_fresh` fuzz target compare.
#[cfg(all(feature = "components", feature = "compiler"))]
pub fn hostile_components(
    limits: crate::GuestLimits,
) -> (crate::ComponentExecutor, crate::ComponentExecutor) {
    let make = |recycled| {
        let options = crate::ComponentOptions {
            recycled,
            ..crate::ComponentOptions::default()
        };
        crate::ComponentExecutor::new(wasmlab_guest_artifacts::HOSTILE_HTTP, options, limits)
            .expect("the hostile component loads")
    };
    (make(false), make(true))
}

/// A request sequence for the hostile guest's component from arbitrary bytes (each byte one
/// request): its state (`/fingerprint`, the secret), faults that discard an instance, and plain
/// answers.
pub fn hostile_component_targets(bytes: &[u8]) -> Vec<String> {
    const ROUTES: &[&str] = &[
        "/fingerprint",
        "/secret/write?s=hunter2",
        "/secret/read",
        "/",
        "/header?name=x-a&value=b",
        "/status?code=201",
        "/trap",
        "/stack",
        "/grow",
        "/no-response",
        "/drop-response",
        "/unfinished",
    ];
    bytes
        .iter()
        .map(|b| ROUTES[*b as usize % ROUTES.len()].to_owned())
        .collect()
}

/// A request sequence for the secret keeper from arbitrary bytes (each byte one request).
pub fn secret_keeper_targets(bytes: &[u8]) -> Vec<String> {
    const COMMANDS: &[&str] = &["/g", "/t", "/m", "/w", "/x", "/r"];
    bytes
        .iter()
        .map(|b| COMMANDS[*b as usize % COMMANDS.len()].to_owned())
        .collect()
}
