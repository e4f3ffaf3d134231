//! What the executor tests share: a request's outcome as a test reads it, and their runtime.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use wasmlab_gateway::{ExecRequest, Executor, Failure, Reply};
use wasmlab_gateway_wasm::GuestLimits;

/// The hostile tests' deadline: short, and long enough that an answer before it is not its.
pub(crate) const DEADLINE: Duration = Duration::from_millis(300);

/// The hostile tests' limits: one instance slot (every request reuses the same slot and its
/// memory), 16 MiB of memory, [`DEADLINE`].
pub(crate) fn hostile_limits() -> GuestLimits {
    GuestLimits {
        max_instances: 1,
        max_memory_bytes: 16 << 20,
        deadline: DEADLINE,
        ..GuestLimits::default()
    }
}

/// A lab upstream on an ephemeral loopback port, as `http://ADDR`.
pub(crate) async fn upstream() -> String {
    let addr = wasmlab_upstream::spawn("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    format!("http://{addr}")
}

/// A component's reply without the `content-length` it declares (the server drops a length that
/// matches the body, as it frames every response itself).
pub(crate) fn unframed(mut r: Reply) -> Reply {
    if let Some(n) = r.headers.remove(hyper::header::CONTENT_LENGTH) {
        assert_eq!(n.to_str().unwrap(), r.body.len().to_string());
    }
    r
}

/// The status and body of a reply, or of a failure its status and diagnosis (what the server logs).
pub(crate) struct Answer {
    pub status: u16,
    pub text: String,
    pub failed: bool,
}

/// `GET target` through `ex`.
pub(crate) async fn get<E: Executor>(ex: &E, target: &str) -> Answer {
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
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// With one instance slot, a queue of one and a 50 ms queue timeout (the test's limits): while the
/// hostile guest's `/loop` holds the slot until its deadline, one request waits in the queue and
/// times out, the one after it finds the queue full (both 503), and the slot serves again after.
pub(crate) async fn a_full_pool_queues_then_answers_503<E: Executor>(ex: Arc<E>) {
    let busy = {
        let ex = ex.clone();
        tokio::spawn(async move { get(ex.as_ref(), "/loop").await.status })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (waiter, overflow) = tokio::join!(get(ex.as_ref(), "/"), async {
        tokio::time::sleep(Duration::from_millis(5)).await;
        get(ex.as_ref(), "/").await
    });
    assert_eq!(waiter.status, 503, "{:?}", waiter.text);
    assert_eq!(overflow.status, 503, "{:?}", overflow.text);
    assert_eq!(busy.await.unwrap(), 504);
    assert_eq!(get(ex.as_ref(), "/").await.status, 200);
}
