//! What the executor tests share: a request's outcome as a test reads it, and their runtime.

#![allow(dead_code)]

use bytes::Bytes;
use wasmlab_gateway::{ExecRequest, Executor, Failure};

/// The status and body of a reply, or of a failure its status and diagnosis (what the server logs).
pub struct Answer {
    pub status: u16,
    pub text: String,
    pub failed: bool,
}

/// `GET target` through `ex`.
pub async fn get<E: Executor>(ex: &E, target: &str) -> Answer {
    let outcome = ex
        .execute(ExecRequest::new(
            hyper::Method::GET,
            target.to_owned(),
            Bytes::new(),
        ))
        .await;
    match outcome {
        Ok(r) => Answer {
            status: r.status,
            text: String::from_utf8_lossy(&r.body).into_owned(),
            failed: false,
        },
        Err(Failure { status, detail }) => Answer {
            status,
            text: detail,
            failed: true,
        },
    }
}

/// Two worker threads, as a gateway on two cores runs.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
