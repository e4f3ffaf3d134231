//! SIGINT and SIGTERM ask a run to stop: the current variant stops, and every file finished so
//! far stays complete.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Set by SIGINT/SIGTERM; everything long-running polls it.
static CANCEL: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe. The OnceLock is set before the handler.
    if let Some(f) = CANCEL.get() {
        f.store(true, Ordering::SeqCst);
    }
}

/// The flag SIGINT/SIGTERM set, with the handlers installed.
pub fn cancel_flag() -> Arc<AtomicBool> {
    let flag = CANCEL
        .get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone();
    // SAFETY: the handler only performs an atomic store.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    flag
}
