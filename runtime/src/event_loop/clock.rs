//! The loop's clock: CLOCK_MONOTONIC in nanoseconds since the loop was created, or a virtual
//! clock that only moves when the loop is idle.
//!
//! Timers are keyed by `u64` nanoseconds of loop time (the timer queue is generic over nothing
//! but a number). The public API speaks `std::time::Instant`; this module converts between the
//! two. The conversion is arranged so that a timer can never fire before its `Instant`: the
//! `Instant` epoch is read *before* the raw clock, so the raw epoch is never earlier than the
//! `Instant` epoch and loop time can only lag real time by the few nanoseconds between the two
//! reads, never lead it.
//!
//! In virtual mode `now()` returns a counter that the loop advances to the next timer's deadline
//! when it has nothing else to do, so an hour of timers runs in milliseconds, deterministically.

use std::cell::Cell;
use std::time::{Duration, Instant};

use evloop_syscalls as sys;

/// See the module documentation.
pub(crate) struct Clock {
    epoch: Instant,
    epoch_raw: Duration,
    virtual_now: Option<Cell<u64>>,
}

impl Clock {
    pub(crate) fn new(virtual_time: bool) -> Clock {
        let epoch = Instant::now();
        let epoch_raw = sys::clock_monotonic();
        Clock {
            epoch,
            epoch_raw,
            virtual_now: virtual_time.then(|| Cell::new(0)),
        }
    }

    /// Loop time now, in nanoseconds since the loop's epoch.
    pub(crate) fn now(&self) -> u64 {
        match &self.virtual_now {
            Some(v) => v.get(),
            None => duration_to_ns(sys::clock_monotonic().saturating_sub(self.epoch_raw)),
        }
    }

    pub(crate) fn is_virtual(&self) -> bool {
        self.virtual_now.is_some()
    }

    /// Moves a virtual clock forward to `to` (never backwards). No effect on a real clock.
    pub(crate) fn advance_to(&self, to: u64) {
        if let Some(v) = &self.virtual_now {
            if to > v.get() {
                v.set(to);
            }
        }
    }

    /// Loop time of an `Instant`; instants before the epoch map to 0 (already due).
    pub(crate) fn ns_of(&self, when: Instant) -> u64 {
        when.checked_duration_since(self.epoch).map_or(0, duration_to_ns)
    }

    /// The `Instant` of a loop time.
    pub(crate) fn instant_of(&self, ns: u64) -> Instant {
        let d = Duration::from_nanos(ns);
        self.epoch
            .checked_add(d)
            .unwrap_or(self.epoch + Duration::from_secs(100 * 365 * 86_400))
    }
}

/// Saturating `Duration` to `u64` nanoseconds (584 years fit; beyond that means "never").
pub(crate) fn duration_to_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_time_never_leads_instant() {
        let c = Clock::new(false);
        for _ in 0..1000 {
            let t = c.instant_of(c.now());
            assert!(t <= Instant::now());
        }
    }

    #[test]
    fn instants_round_trip_and_saturate() {
        let c = Clock::new(false);
        let later = Instant::now() + Duration::from_millis(5);
        let ns = c.ns_of(later);
        assert_eq!(c.instant_of(ns), c.epoch + Duration::from_nanos(ns));
        assert_eq!(c.ns_of(c.epoch - Duration::from_secs(1)), 0);
        assert_eq!(duration_to_ns(Duration::MAX), u64::MAX);
        let _far = c.instant_of(u64::MAX);
    }

    #[test]
    fn virtual_clock_moves_only_forward_and_only_when_told() {
        let c = Clock::new(true);
        assert_eq!(c.now(), 0);
        c.advance_to(500);
        assert_eq!(c.now(), 500);
        c.advance_to(100);
        assert_eq!(c.now(), 500);
        assert!(c.is_virtual());
    }
}
