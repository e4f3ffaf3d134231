//! Whether the current worker thread has stayed busy, without a timer: the server uses it to let
//! an expensive executor's replies leave in bursts under load and at once otherwise.

use std::cell::Cell;

thread_local! {
    /// Times this worker thread has gone idle.
    static PARKS: Cell<u64> = const { Cell::new(0) };
    /// `PARKS` when this worker last finished a request.
    static PARKS_AT_LAST_REPLY: Cell<u64> = const { Cell::new(u64::MAX) };
}

/// Counts one park of the current worker thread. The gateway's runtime calls it just before a
/// worker goes idle (`on_thread_park`).
pub fn note_park() {
    PARKS.with(|p| p.set(p.get().wrapping_add(1)));
}

/// Notes that the current worker finished a request, and says whether it has stayed busy (not
/// gone idle once) since it finished its previous one. On threads of a runtime that does not call
/// [`note_park`] every request after the first counts as busy.
pub fn finished_while_busy() -> bool {
    let parks = PARKS.with(Cell::get);
    PARKS_AT_LAST_REPLY.with(|last| last.replace(parks) == parks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_until_the_worker_parks() {
        std::thread::spawn(|| {
            assert!(
                !finished_while_busy(),
                "the first request has no predecessor"
            );
            assert!(finished_while_busy());
            assert!(finished_while_busy());
            note_park();
            assert!(!finished_while_busy(), "the worker went idle in between");
            assert!(finished_while_busy());
        })
        .join()
        .unwrap();
    }
}
