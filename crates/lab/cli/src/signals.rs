//! SIGINT and SIGTERM ask a run to stop: the current measurement ends, and every file finished so
//! far stays complete, the report written from what was measured. A second one stops it at once:
//! the servers it runs and the lab's containerd are stopped without grace, and it exits (130)
//! without writing the report, what was measured left in the results directory for `wasmlab
//! report` or `wasmlab run --resume`. Before a run measures (planning, building), the first one
//! stops it at once, with what it started.

use std::io::Read;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

/// Set by SIGINT/SIGTERM; everything long-running polls it.
static CANCEL: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Set while a run plans and builds: a signal then stops it at once.
static AT_ONCE: AtomicBool = AtomicBool::new(false);

/// Until [`measuring`], the first signal stops the run at once, with what it started (its
/// containerd, a server it verified); the handlers are installed.
pub(crate) fn before_measuring() {
    AT_ONCE.store(true, Ordering::SeqCst);
    cancel_flag();
}

/// From now on the first signal stops the run gracefully (the current measurement ends, the
/// report is written).
pub(crate) fn measuring() {
    AT_ONCE.store(false, Ordering::SeqCst);
}

/// Stops every server and the lab's containerd now.
fn stop_everything() -> usize {
    let servers = wasmlab_measure::launch::live::count();
    wasmlab_measure::launch::live::stop_all_now();
    if let Err(e) = wasmlab_plan::containerd::stop() {
        eprintln!("wasmlab: stopping the lab's containerd: {e}");
    }
    servers
}

/// The pipe's end the handler writes a byte to per signal, for the thread that acts on them.
static WAKE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(_: libc::c_int) {
    // An atomic store and a write(2): both async-signal-safe. The OnceLock is set before the
    // handler is installed.
    if let Some(f) = CANCEL.get() {
        f.store(true, Ordering::SeqCst);
    }
    let fd = WAKE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: a one-byte write from a live buffer to our own pipe.
        unsafe {
            libc::write(fd, [1u8].as_ptr().cast(), 1);
        }
    }
}

/// The flag SIGINT/SIGTERM set, with the handlers installed (once).
pub(crate) fn cancel_flag() -> Arc<AtomicBool> {
    CANCEL
        .get_or_init(|| {
            let flag = Arc::new(AtomicBool::new(false));
            watch();
            // SAFETY: the handler only stores to an atomic and writes to a pipe.
            unsafe {
                libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
                libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
            }
            flag
        })
        .clone()
}

/// A thread that says, on the first signal, what stopping does and how to stop at once; on the
/// second, stops every server and exits.
fn watch() {
    let mut fds = [0; 2];
    // SAFETY: a pipe into a two-element array; close-on-exec, so no server inherits it.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        // Without it a signal still stops the run, only not at once the second time.
        return;
    }
    // SAFETY: the read end is ours alone from here.
    let mut read = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    WAKE.store(fds[1], Ordering::SeqCst);
    std::thread::spawn(move || {
        let mut byte = [0u8; 1];
        let mut signals = 0;
        while read.read_exact(&mut byte).is_ok() {
            signals += 1;
            if AT_ONCE.load(Ordering::SeqCst) {
                stop_everything();
                eprintln!("\nwasmlab: stopped before measuring anything");
                std::process::exit(130);
            }
            if signals == 1 {
                eprintln!(
                    "\nwasmlab: stopping: the current measurement ends and the report is written from what was \
                     measured; Ctrl-C again stops at once, without the report"
                );
                continue;
            }
            let servers = stop_everything();
            eprintln!(
                "\nwasmlab: stopped at once ({servers} server(s) killed): what was measured is in the results \
                 directory named above (samples.jsonl, run.json); `wasmlab report DIR` writes its report"
            );
            std::process::exit(130);
        }
    });
}
