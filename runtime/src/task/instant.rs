//! [`Instant`] (`evloop::time::Instant`, tokio's `tokio::time::Instant`): a point in time that
//! follows the running loop's clock, so a loop with a virtual clock governs it.
//!
//! `std::time::Instant::now()` always reads CLOCK_MONOTONIC: under a virtual clock a program
//! that stamps a key's expiry with it and then sleeps sees real time barely move while loop
//! time jumps an hour, so the key never expires (and a loop that retries in a loop spins).
//! `Instant::now()` here asks the running loop instead (`LoopHandle::time`: the virtual
//! counter, or CLOCK_MONOTONIC for a real clock) and reads CLOCK_MONOTONIC only outside a
//! loop. It wraps a `std::time::Instant` (the loop's clock maps loop time to std instants), so
//! the two convert freely and every deadline API of the crate takes either.

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

use crate::event_loop::with_running;

/// A point in loop time; see the module documentation. tokio's `Instant`, with its methods.
///
/// ```
/// use std::time::Duration;
/// use evloop::time::{Instant, sleep};
///
/// // Under a virtual clock an hour passes at once, and `Instant` sees it pass.
/// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
///     let start = Instant::now();
///     sleep(Duration::from_secs(3600)).await;
///     assert!(start.elapsed() >= Duration::from_secs(3600));
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    std: std::time::Instant,
}

impl Instant {
    /// Now: the running loop's time (its virtual clock, if it has one), or CLOCK_MONOTONIC
    /// outside a loop.
    ///
    /// ```
    /// let a = evloop::time::Instant::now();
    /// let b = evloop::time::Instant::now();
    /// assert!(b >= a);
    /// ```
    pub fn now() -> Instant {
        let std = with_running(|lp| lp.clock.instant_of(lp.now())).unwrap_or_else(std::time::Instant::now);
        Instant { std }
    }

    /// The `Instant` of a `std::time::Instant` (the same point: loop time is measured in std
    /// instants, see [`LoopHandle::time`](crate::event_loop::LoopHandle::time)).
    ///
    /// ```
    /// let std = std::time::Instant::now();
    /// assert_eq!(evloop::time::Instant::from_std(std).into_std(), std);
    /// ```
    pub fn from_std(std: std::time::Instant) -> Instant {
        Instant { std }
    }

    /// The `std::time::Instant` of this point.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let t = lp.run_until_complete(async { evloop::time::Instant::now() })?;
    /// let _: std::time::Instant = t.into_std();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_std(self) -> std::time::Instant {
        self.std
    }

    /// The time from `earlier` to `self`, zero if `earlier` is later (tokio's and std's
    /// `duration_since` both saturate).
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::time::Instant;
    ///
    /// let a = Instant::now();
    /// let b = a + Duration::from_secs(2);
    /// assert_eq!(b.duration_since(a), Duration::from_secs(2));
    /// assert_eq!(a.duration_since(b), Duration::ZERO);
    /// ```
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }

    /// The time from `earlier` to `self`, `None` if `earlier` is later.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::time::Instant;
    ///
    /// let a = Instant::now();
    /// assert_eq!((a + Duration::from_secs(1)).checked_duration_since(a), Some(Duration::from_secs(1)));
    /// assert_eq!(a.checked_duration_since(a + Duration::from_secs(1)), None);
    /// ```
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        self.std.checked_duration_since(earlier.std)
    }

    /// The time from `earlier` to `self`, zero if `earlier` is later.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::time::Instant;
    ///
    /// let a = Instant::now();
    /// assert_eq!(a.saturating_duration_since(a + Duration::from_secs(1)), Duration::ZERO);
    /// ```
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }

    /// The time since `self`, on the same clock as [`Instant::now`] (so a virtual clock's).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
    ///     let t = evloop::time::Instant::now();
    ///     evloop::time::sleep(Duration::from_secs(5)).await;
    ///     assert_eq!(t.elapsed(), Duration::from_secs(5)); // exactly: the virtual clock jumps to the deadline
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(*self)
    }

    /// `self + d`, `None` on overflow.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let t = evloop::time::Instant::now();
    /// assert!(t.checked_add(Duration::from_secs(1)).is_some());
    /// assert!(t.checked_add(Duration::MAX).is_none());
    /// ```
    pub fn checked_add(&self, d: Duration) -> Option<Instant> {
        self.std.checked_add(d).map(Instant::from_std)
    }

    /// `self - d`, `None` if it would come before what the platform can represent.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let t = evloop::time::Instant::now();
    /// assert!(t.checked_sub(Duration::MAX).is_none());
    /// ```
    pub fn checked_sub(&self, d: Duration) -> Option<Instant> {
        self.std.checked_sub(d).map(Instant::from_std)
    }

    /// A deadline far enough away to mean "never" (about 30 years on), for a timer that
    /// should not fire (tokio's internal `far_future`).
    pub(crate) fn far_future() -> Instant {
        Instant::now().saturating_add(Duration::MAX)
    }

    /// `self + d`, or about 30 years on when that overflows: a deadline that means "never"
    /// instead of `Add`'s panic (the timers' arithmetic: `Interval::reset_after(Duration::MAX)`).
    pub(crate) fn saturating_add(self, d: Duration) -> Instant {
        Instant::from_std(crate::event_loop::clock::instant_after(self.std, d))
    }
}

impl From<std::time::Instant> for Instant {
    fn from(std: std::time::Instant) -> Instant {
        Instant { std }
    }
}

impl From<Instant> for std::time::Instant {
    fn from(i: Instant) -> std::time::Instant {
        i.std
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    fn add(self, d: Duration) -> Instant {
        Instant { std: self.std + d }
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.std += d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    fn sub(self, d: Duration) -> Instant {
        Instant { std: self.std - d }
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, d: Duration) {
        self.std -= d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    /// Saturates at zero, as tokio's does.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.std.fmt(f)
    }
}
