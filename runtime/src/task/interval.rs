//! [`Interval`] (`evloop::time::interval`, tokio's `tokio::time::Interval`): ticks at a fixed
//! period, on the loop's clock, with tokio's [`MissedTickBehavior`] for ticks that came due
//! while the task was busy.
//!
//! An interval is a deadline and a [`Sleep`] until it. `tick()` waits for the sleep, returns the
//! deadline it was scheduled for, and computes the next one: one period later if the tick was on
//! time (within 5 ms, tokio's tolerance, so ordinary scheduling jitter is not a "miss"), or what
//! the missed-tick behaviour says otherwise. Under a virtual clock each tick costs one timer and
//! one loop iteration, however long the period.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::task::instant::Instant;
use crate::task::time::{Sleep, sleep_until};

/// What [`Interval::tick`] does when ticks were missed (the task came back later than 5 ms
/// after a deadline): tokio's `MissedTickBehavior`, same variants, same default.
///
/// ```
/// use std::time::Duration;
/// use evloop::time::{Instant, MissedTickBehavior, interval};
///
/// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
///     let mut iv = interval(Duration::from_secs(1));
///     iv.set_missed_tick_behavior(MissedTickBehavior::Delay);
///     let start = iv.tick().await; // the first tick is at once
///     evloop::time::sleep(Duration::from_millis(2500)).await; // busy: two ticks missed
///     assert_eq!(iv.tick().await, start + Duration::from_secs(1)); // the missed one, at once
///     assert_eq!(iv.tick().await, start + Duration::from_millis(3500)); // Delay: a period after it
///     let _ = Instant::now();
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MissedTickBehavior {
    /// Tick as fast as possible until caught up, then keep the original schedule (the default):
    /// ticks at 0, 1, 2 s missed until 2.5 s come at 2.5, 2.5, 3, 4 s.
    #[default]
    Burst,
    /// Restart the schedule from the late tick: the next tick is one period after it
    /// (2.5, 3.5, 4.5 s).
    Delay,
    /// Drop the missed ticks and keep the schedule's phase: the next tick is the next multiple
    /// of the period (2.5, 3, 4 s).
    Skip,
}

impl MissedTickBehavior {
    /// The deadline after a tick scheduled for `timeout` that ran at `now`, late.
    fn next_timeout(self, timeout: Instant, now: Instant, period: Duration) -> Instant {
        match self {
            MissedTickBehavior::Burst => timeout.saturating_add(period),
            MissedTickBehavior::Delay => now.saturating_add(period),
            MissedTickBehavior::Skip => {
                let late = (now - timeout).as_nanos() % period.as_nanos();
                // `late < period`, which is a `Duration`, so it fits in u64 nanoseconds.
                now.saturating_add(period - Duration::from_nanos(u64::try_from(late).unwrap_or(u64::MAX)))
            }
        }
    }
}

/// Ticks once at `Instant::now()` and then every `period` (tokio's `interval`).
///
/// # Panics
/// If `period` is zero (as tokio).
///
/// ```
/// use std::time::Duration;
/// use evloop::time::{Instant, interval};
///
/// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
///     let start = Instant::now();
///     let mut iv = interval(Duration::from_secs(10));
///     iv.tick().await; // at once
///     iv.tick().await;
///     iv.tick().await;
///     assert_eq!(start.elapsed(), Duration::from_secs(20)); // virtual: no real waiting
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    assert!(period > Duration::ZERO, "`period` must be non-zero.");
    interval_at(Instant::now(), period)
}

/// Ticks first at `start`, then every `period` (tokio's `interval_at`). `start` is an
/// [`Instant`] or a `std::time::Instant`.
///
/// # Panics
/// If `period` is zero.
///
/// ```
/// use std::time::Duration;
/// use evloop::time::{Instant, interval_at};
///
/// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
///     let start = Instant::now() + Duration::from_secs(5);
///     let mut iv = interval_at(start, Duration::from_secs(1));
///     assert_eq!(iv.tick().await, start);
///     assert_eq!(iv.tick().await, start + Duration::from_secs(1));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[track_caller]
pub fn interval_at(start: impl Into<Instant>, period: Duration) -> Interval {
    assert!(period > Duration::ZERO, "`period` must be non-zero.");
    let start = start.into();
    Interval {
        deadline: start,
        delay: sleep_until(start),
        period,
        missed_tick_behavior: MissedTickBehavior::default(),
    }
}

/// A schedule of ticks; see [`interval`]. `!Send` like everything bound to a loop's timers
/// once polled, and `Unpin`.
///
/// ```
/// use std::time::Duration;
///
/// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
///     let mut iv = evloop::time::interval(Duration::from_millis(100));
///     assert_eq!(iv.period(), Duration::from_millis(100));
///     iv.tick().await;
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[derive(Debug)]
pub struct Interval {
    /// The deadline of the next tick (what `tick()` returns).
    deadline: Instant,
    /// A sleep until `deadline`, replaced after each tick and each reset.
    delay: Sleep,
    period: Duration,
    missed_tick_behavior: MissedTickBehavior,
}

impl Interval {
    /// Waits for the next tick and returns the instant it was scheduled for (which may be
    /// earlier than now, if the task came late). Cancel-safe: dropped before it completes, it
    /// consumes no tick.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::time::{Instant, interval};
    ///
    /// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
    ///     let mut iv = interval(Duration::from_secs(2));
    ///     let first = iv.tick().await;
    ///     let second = iv.tick().await;
    ///     assert_eq!(second - first, Duration::from_secs(2));
    ///     assert_eq!(Instant::now(), second);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick: the poll form of [`tick`](Interval::tick), for a hand-written
    /// future or stream. On `Pending`, `cx`'s waker is woken at the tick.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
    ///     let mut iv = evloop::time::interval(Duration::from_secs(1));
    ///     let t = std::future::poll_fn(|cx| iv.poll_tick(cx)).await;
    ///     assert_eq!(t, evloop::time::Instant::now());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        if Pin::new(&mut self.delay).poll(cx).is_pending() {
            return Poll::Pending;
        }
        let timeout = self.deadline;
        let now = Instant::now();
        // tokio's tolerance: a tick less than 5 ms late is on time, not a miss.
        let next = if now.saturating_duration_since(timeout) > Duration::from_millis(5) {
            self.missed_tick_behavior.next_timeout(timeout, now, self.period)
        } else {
            timeout.checked_add(self.period).unwrap_or_else(Instant::far_future)
        };
        self.set_deadline(next);
        Poll::Ready(timeout)
    }

    fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = deadline;
        self.delay = sleep_until(deadline);
    }

    /// Restarts the schedule: the next tick is one period from now.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::time::{Instant, interval};
    ///
    /// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
    ///     let mut iv = interval(Duration::from_secs(1));
    ///     iv.tick().await;
    ///     evloop::time::sleep(Duration::from_millis(500)).await;
    ///     iv.reset();
    ///     let now = Instant::now();
    ///     assert_eq!(iv.tick().await, now + Duration::from_secs(1));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn reset(&mut self) {
        self.set_deadline(Instant::now().saturating_add(self.period));
    }

    /// Makes the next tick due at once; the schedule continues from it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::time::{Instant, interval};
    ///
    /// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
    ///     let mut iv = interval(Duration::from_secs(60));
    ///     iv.tick().await;
    ///     iv.reset_immediately();
    ///     let now = Instant::now();
    ///     assert_eq!(iv.tick().await, now);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn reset_immediately(&mut self) {
        self.set_deadline(Instant::now());
    }

    /// Makes the next tick due `after` from now.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::time::{Instant, interval};
    ///
    /// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
    ///     let mut iv = interval(Duration::from_secs(60));
    ///     iv.tick().await;
    ///     iv.reset_after(Duration::from_secs(3));
    ///     let now = Instant::now();
    ///     assert_eq!(iv.tick().await, now + Duration::from_secs(3));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn reset_after(&mut self, after: Duration) {
        self.set_deadline(Instant::now().saturating_add(after));
    }

    /// Makes the next tick due at `deadline`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::time::{Instant, interval};
    ///
    /// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
    ///     let mut iv = interval(Duration::from_secs(60));
    ///     iv.tick().await;
    ///     let at = Instant::now() + Duration::from_secs(7);
    ///     iv.reset_at(at);
    ///     assert_eq!(iv.tick().await, at);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn reset_at(&mut self, deadline: impl Into<Instant>) {
        self.set_deadline(deadline.into());
    }

    /// The period.
    ///
    /// ```
    /// let iv = evloop::time::interval(std::time::Duration::from_secs(3));
    /// assert_eq!(iv.period(), std::time::Duration::from_secs(3));
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What happens to missed ticks (default [`MissedTickBehavior::Burst`]).
    ///
    /// ```
    /// use evloop::time::{MissedTickBehavior, interval};
    ///
    /// let iv = interval(std::time::Duration::from_secs(1));
    /// assert_eq!(iv.missed_tick_behavior(), MissedTickBehavior::Burst);
    /// ```
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed_tick_behavior
    }

    /// Sets what happens to missed ticks.
    ///
    /// ```
    /// use evloop::time::{MissedTickBehavior, interval};
    ///
    /// let mut iv = interval(std::time::Duration::from_secs(1));
    /// iv.set_missed_tick_behavior(MissedTickBehavior::Skip);
    /// assert_eq!(iv.missed_tick_behavior(), MissedTickBehavior::Skip);
    /// ```
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed_tick_behavior = behavior;
    }
}
