//! A loop's load, kept where other threads can read it: the busy time of its iterations and
//! the connections it serves. The loop adds its busy time at the end of each iteration (only
//! when asked to measure it, or in debug or trace mode: two clock reads per iteration); the
//! layers that accept connections count them here. [`LoopStats`](crate::event_loop::LoopStats)
//! reads them on the loop's thread, and a pool of loops reads them from any thread to compare
//! the loops (its least-connections acceptor picks the loop with the fewest live connections).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

/// Counters of one loop, shared through an `Arc`. Relaxed: each is a statistic read on its
/// own, never used to order other memory.
#[derive(Debug, Default)]
pub(crate) struct Load {
    busy_ns: AtomicU64,
    accepted: AtomicU64,
    live: AtomicUsize,
}

impl Load {
    #[inline]
    pub(crate) fn add_busy(&self, busy: Duration) {
        self.busy_ns
            .fetch_add(u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX), Relaxed);
    }

    pub(crate) fn busy(&self) -> Duration {
        Duration::from_nanos(self.busy_ns.load(Relaxed))
    }

    /// A connection was accepted for this loop: one more accepted, one more live.
    pub(crate) fn connection_opened(&self) {
        self.accepted.fetch_add(1, Relaxed);
        self.live.fetch_add(1, Relaxed);
    }

    /// A connection of this loop ended.
    pub(crate) fn connection_closed(&self) {
        let _ = self.live.fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
    }

    pub(crate) fn accepted(&self) -> u64 {
        self.accepted.load(Relaxed)
    }

    pub(crate) fn live(&self) -> usize {
        self.live.load(Relaxed)
    }
}
