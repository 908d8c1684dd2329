//! The loop's clock: CLOCK_MONOTONIC in nanoseconds, or a virtual clock that only moves when
//! the loop is idle.
//!
//! Timers are keyed by `u64` nanoseconds of loop time (the timer queue is generic over nothing
//! but a number). The public API speaks `std::time::Instant`; this module converts between the
//! two. The conversion is arranged so that a timer can never fire before its `Instant`: the
//! `Instant` epoch is read *before* the raw clock, so the raw epoch is never earlier than the
//! `Instant` epoch and loop time can only lag real time by the few nanoseconds between the two
//! reads, never lead it.
//!
//! # The origin
//! Loop time is `BASE` plus CLOCK_MONOTONIC, not nanoseconds since the loop was created:
//! * instants *before* the loop existed keep their order. With the loop's creation as zero,
//!   every earlier instant saturated to 0, so `call_at(now - 1 s, a)` and
//!   `call_at(now - 2 s, b)` had equal deadlines and ran a before b. `BASE` (2^62 ns, 146
//!   years) leaves room below CLOCK_MONOTONIC's own zero (boot), which a freshly booted machine
//!   is close to;
//! * every loop with a real clock measures the same time, so a deadline computed on one loop
//!   (a `Sleep` created there) means the same instant on another.
//!
//! In virtual mode `now()` is a counter, starting where the real clock stood at the loop's
//! creation, that the loop advances to the next timer's deadline when it has nothing else to
//! do, so an hour of timers runs in milliseconds, deterministically.
//!
//! # Pausing a running clock (tokio's `time::pause`, `resume`, `advance`)
//! A real clock can be paused: it becomes a virtual one, frozen at the time it showed, and moves
//! only when told (`advance`) or when the loop is idle. Resuming goes back to CLOCK_MONOTONIC
//! plus an offset, so that loop time continues from where the virtual clock stood and never
//! goes back (an hour `advance`d stays an hour ahead of CLOCK_MONOTONIC). A resumed clock is the
//! only one whose loop time differs from another loop's; tokio's resumed clock does the same.

use std::cell::Cell;
use std::time::{Duration, Instant};

use evloop_syscalls as sys;

/// Added to CLOCK_MONOTONIC: instants up to 146 years before boot keep distinct loop times, and
/// the 438 years left above are far beyond any deadline (later ones saturate to "never").
const BASE: u64 = 1 << 62;

/// See the module documentation.
pub(crate) struct Clock {
    epoch: Instant,
    /// The loop time of `epoch`: `BASE` plus CLOCK_MONOTONIC read just after it.
    origin: u64,
    /// `Some(t)`: virtual (or paused), at loop time `t`.
    virtual_now: Cell<Option<u64>>,
    /// Added to the real clock after a resume (0 until then).
    offset: Cell<u64>,
}

impl Clock {
    pub(crate) fn new(virtual_time: bool) -> Clock {
        let epoch = Instant::now();
        let origin = BASE.saturating_add(duration_to_ns(sys::clock_monotonic()));
        Clock {
            epoch,
            origin,
            virtual_now: Cell::new(virtual_time.then_some(origin)),
            offset: Cell::new(0),
        }
    }

    /// Loop time now, in nanoseconds (see "The origin").
    pub(crate) fn now(&self) -> u64 {
        match self.virtual_now.get() {
            Some(v) => v,
            None => self.real_now(),
        }
    }

    /// The loop time of the loop's creation: `now() - origin()` is the time the loop has
    /// existed (what trace lines show).
    pub(crate) fn origin(&self) -> u64 {
        self.origin
    }

    pub(crate) fn is_virtual(&self) -> bool {
        self.virtual_now.get().is_some()
    }

    fn real_now(&self) -> u64 {
        BASE.saturating_add(duration_to_ns(sys::clock_monotonic()))
            .saturating_add(self.offset.get())
    }

    /// Moves a virtual clock forward to `to` (never backwards). No effect on a real clock.
    pub(crate) fn advance_to(&self, to: u64) {
        if let Some(v) = self.virtual_now.get() {
            if to > v {
                self.virtual_now.set(Some(to));
            }
        }
    }

    /// Freezes a real clock at the time it shows: it is virtual from now on. `false` if it
    /// already was.
    pub(crate) fn pause(&self) -> bool {
        if self.is_virtual() {
            return false;
        }
        self.virtual_now.set(Some(self.real_now()));
        true
    }

    /// Back to the real clock, continuing from the virtual time (never backwards). `false` if the
    /// clock was not virtual.
    pub(crate) fn resume(&self) -> bool {
        let Some(v) = self.virtual_now.get() else {
            return false;
        };
        let real = self.real_now().saturating_sub(self.offset.get());
        self.offset.set(v.saturating_sub(real));
        self.virtual_now.set(None);
        true
    }

    /// Loop time of an `Instant`, in the past as well as in the future (saturating only
    /// beyond 146 years either way).
    pub(crate) fn ns_of(&self, when: Instant) -> u64 {
        match when.checked_duration_since(self.epoch) {
            Some(after) => self.origin.saturating_add(duration_to_ns(after)),
            None => self
                .origin
                .saturating_sub(duration_to_ns(self.epoch.saturating_duration_since(when))),
        }
    }

    /// The `Instant` of a loop time.
    pub(crate) fn instant_of(&self, ns: u64) -> Instant {
        if ns >= self.origin {
            let d = Duration::from_nanos(ns - self.origin);
            self.epoch
                .checked_add(d)
                .unwrap_or(self.epoch + Duration::from_secs(100 * 365 * 86_400))
        } else {
            let d = Duration::from_nanos(self.origin - ns);
            self.epoch.checked_sub(d).unwrap_or(self.epoch)
        }
    }
}

/// `now + d`, or a point about 30 years after `now` when that overflows `Instant` (a delay of
/// `Duration::MAX` means "never"; `Instant + Duration` would panic).
pub(crate) fn instant_after(now: Instant, d: Duration) -> Instant {
    const NEVER: Duration = Duration::from_secs(86_400 * 365 * 30);
    now.checked_add(d)
        .or_else(|| now.checked_add(NEVER.min(d)))
        .unwrap_or(now)
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
        assert_eq!(c.instant_of(ns), c.epoch + Duration::from_nanos(ns - c.origin));
        assert_eq!(duration_to_ns(Duration::MAX), u64::MAX);
        let _far = c.instant_of(u64::MAX);
        let _near = c.instant_of(0);
    }

    #[test]
    fn instants_before_the_loop_keep_their_order_and_round_trip() {
        let c = Clock::new(false);
        let one = c.epoch - Duration::from_secs(1);
        let two = c.epoch - Duration::from_secs(2);
        assert!(c.ns_of(two) < c.ns_of(one), "earlier instants have earlier loop times");
        assert_eq!(c.ns_of(c.epoch) - c.ns_of(one), 1_000_000_000);
        assert_eq!(c.instant_of(c.ns_of(two)), two);
    }

    #[test]
    fn two_real_clocks_agree_on_an_instant() {
        let a = Clock::new(false);
        let b = Clock::new(false);
        let when = Instant::now() + Duration::from_secs(3);
        let (na, nb) = (a.ns_of(when), b.ns_of(when));
        // Each lags real time by the few ns between its two reads at creation, never leads.
        assert!(na.abs_diff(nb) < 1_000_000, "{na} vs {nb}");
    }

    #[test]
    fn virtual_clock_moves_only_forward_and_only_when_told() {
        let c = Clock::new(true);
        let start = c.now();
        assert_eq!(start, c.origin());
        c.advance_to(start + 500);
        assert_eq!(c.now(), start + 500);
        c.advance_to(start + 100);
        assert_eq!(c.now(), start + 500);
        assert!(c.is_virtual());
    }

    #[test]
    fn a_paused_clock_stands_still_and_resumes_where_it_stood() {
        let c = Clock::new(false);
        assert!(c.pause());
        assert!(!c.pause(), "already paused");
        let frozen = c.now();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(c.now(), frozen, "a paused clock does not move by itself");
        c.advance_to(frozen + 3_600_000_000_000);
        assert!(c.resume());
        assert!(!c.resume(), "not paused");
        let after = c.now();
        assert!(after >= frozen + 3_600_000_000_000, "continues from the advanced time");
        assert!(c.now() >= after, "and moves forward with the real clock");
        // A second pause and resume keep the hour.
        assert!(c.pause());
        assert!(c.resume());
        assert!(c.now() >= after);
    }
}
