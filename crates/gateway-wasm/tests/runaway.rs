//! After a guest's endless loop is stopped at its deadline, nothing keeps burning CPU. In its own
//! test binary, so no other test's work is counted.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use wasmlab_gateway::{Capabilities, ExecRequest, Executor};
use wasmlab_gateway_wasm::{GuestLimits, NaiveExecutor, PooledExecutor};

fn process_cpu() -> Duration {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[test]
fn a_stopped_loop_burns_no_cpu() {
    let limits = GuestLimits {
        deadline: Duration::from_millis(200),
        ..GuestLimits::default()
    };
    let caps = Arc::new(Capabilities::new(None).unwrap());
    let pooled =
        PooledExecutor::new(wasmlab_guest_artifacts::HOSTILE_CORE, caps.clone(), limits).unwrap();
    let naive = NaiveExecutor::new(wasmlab_guest_artifacts::HOSTILE_COMMAND, caps, limits).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let req = || ExecRequest::new(hyper::Method::GET, "/loop", Bytes::new());
    rt.block_on(async {
        assert_eq!(pooled.execute(req()).await.unwrap_err().status, 504);
        assert_eq!(naive.execute(req()).await.unwrap_err().status, 504);
    });
    let before = process_cpu();
    std::thread::sleep(Duration::from_millis(500));
    let burnt = process_cpu() - before;
    assert!(
        burnt < Duration::from_millis(50),
        "{burnt:?} of CPU in 500 ms after the loops stopped"
    );
}
