//! The instances an executor keeps between requests: one pool for every executor, whose reuse
//! policy is a setting, as `wasmtime serve` keeps one handler pool. The executor decides whether
//! an instance may be kept at all (it answered, its reset held, nothing grew); the pool, how many
//! requests it may serve. Last in, first out: the instance used last is the one whose memory is
//! still in the caches.

use std::sync::Mutex;

/// How many requests a kept instance may serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// None kept: a fresh instance per request (`component`).
    #[cfg_attr(not(feature = "components"), allow(dead_code))]
    Never,
    /// Any number (`recycled`, `shared`, `component-recycled`).
    Always,
    /// Up to this many, then replaced (`component-reused`, as `wasmtime serve` reuses a WASI 0.3
    /// instance).
    #[cfg_attr(not(feature = "components-p3"), allow(dead_code))]
    UpTo(u32),
}

/// Idle instances, with how many requests each has served.
pub(crate) struct InstancePool<T> {
    idle: Mutex<Vec<(T, u32)>>,
    keep: Keep,
}

impl<T> InstancePool<T> {
    pub(crate) fn new(keep: Keep) -> Self {
        Self {
            idle: Mutex::new(Vec::new()),
            keep,
        }
    }

    /// Whether this pool keeps instances at all.
    #[cfg_attr(not(feature = "components"), allow(dead_code))]
    pub(crate) fn keeps(&self) -> bool {
        self.keep != Keep::Never
    }

    /// The idle instance used last, and how many requests it has served; None when none waits.
    pub(crate) fn take(&self) -> Option<(T, u32)> {
        if self.keep == Keep::Never {
            // A fresh instance per request takes no lock.
            return None;
        }
        self.idle.lock().expect("never poisoned").pop()
    }

    /// An instance made ahead of its first request (none served yet), kept whatever the policy
    /// counts.
    #[cfg_attr(not(feature = "components-p3"), allow(dead_code))]
    pub(crate) fn hold(&self, instance: T) {
        self.idle
            .lock()
            .expect("never poisoned")
            .push((instance, 0));
    }

    /// After a request the instance answered and may serve again (`served` before it): kept if
    /// the policy allows one more; else dropped. Whether it was kept.
    pub(crate) fn give_back(&self, instance: T, served: u32) -> bool {
        let served = served + 1;
        let kept = match self.keep {
            Keep::Never => false,
            Keep::Always => true,
            Keep::UpTo(n) => served < n,
        };
        if kept {
            self.idle
                .lock()
                .expect("never poisoned")
                .push((instance, served));
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_policy_keeps_what_it_says() {
        let never = InstancePool::new(Keep::Never);
        assert!(!never.keeps());
        assert!(!never.give_back("a", 0));
        assert!(never.take().is_none());

        let always = InstancePool::new(Keep::Always);
        assert!(always.give_back("a", 0) && always.give_back("b", 1_000_000));
        // Last in, first out, with the requests each has served.
        assert_eq!(always.take(), Some(("b", 1_000_001)));
        assert_eq!(always.take(), Some(("a", 1)));
        assert_eq!(always.take(), None);

        // Serves three requests, then goes.
        let three = InstancePool::new(Keep::UpTo(3));
        three.hold("x");
        let (x, served) = three.take().unwrap();
        assert_eq!(served, 0);
        assert!(three.give_back(x, served));
        let (x, served) = three.take().unwrap();
        assert!(three.give_back(x, served));
        let (x, served) = three.take().unwrap();
        assert_eq!(served, 2);
        assert!(!three.give_back(x, served), "a fourth request");
        assert!(three.take().is_none());
    }
}
