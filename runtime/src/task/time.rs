//! Time for tasks (`evloop::time`): `sleep`, `sleep_until`, and `timeout` / `timeout_at` (one
//! body, `race_timer`: asyncio's `wait_for` and `timeout_at`).
//!
//! A [`Sleep`] is the Rust counterpart of `asyncio.sleep(d)`: where asyncio creates a future, a
//! `TimerHandle` whose callback sets it, and awaits the future, evloop puts the task's waker
//! straight into the timer heap (no callback, no promise). Phase 4 of the loop pops the expired
//! timer and wakes the task; the task's next poll of the `Sleep` sees that loop time has
//! reached the deadline and completes. Dropping a `Sleep` early (a timeout fired, the task was
//! cancelled) cancels its timer, which phase 1 removes from the heap.

use std::fmt;
use std::future::Future;
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use evloop_timers::TimerId;

use crate::event_loop::clock::duration_to_ns;
use crate::event_loop::trace::{Awaiting, note_awaiting};
use crate::event_loop::{LoopInner, TimerEntry, get_running_loop, with_running};
use crate::task::instant::Instant as LoopInstant;

enum Deadline {
    /// Known in loop time (the loop was running when the sleep was created).
    At(u64),
    /// Relative; resolved against the loop's clock at the first poll.
    After(Duration),
    /// Absolute; resolved at the first poll.
    Instant(Instant),
}

/// A future that completes once loop time reaches a deadline; see [`sleep`] and [`sleep_until`].
///
/// Never early: it completes only when the loop's clock says the deadline has passed.
///
/// Not bound to a loop: a `Sleep` created under one loop (or none) and awaited by a task of
/// another keeps its deadline, and its timer moves to the loop that awaits it. (A loop with a
/// virtual clock measures its own time: a deadline computed there means nothing elsewhere.)
///
/// # Panics
/// Polling it outside a running evloop loop panics with a message saying so.
///
/// ```
/// use std::time::Duration;
/// use evloop::event_loop::Builder;
///
/// Builder::new().virtual_clock(true).run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let nap = evloop::time::sleep(Duration::from_secs(2));
///     let deadline = nap.deadline().expect("made inside a running loop");
///     nap.await;
///     assert!(lp.time() >= deadline); // never early
///     Ok::<(), evloop::event_loop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Sleep {
    deadline: Deadline,
    registered: Option<(Rc<LoopInner>, TimerId)>,
    /// It returned `Ready` (until a `reset`): tokio's `is_elapsed`.
    elapsed: bool,
}

/// Sleeps for `delay` (asyncio's `sleep(delay)`). A zero delay completes at the first poll
/// without yielding; use [`yield_now`](crate::task::yield_now::yield_now) to give other tasks a turn.
///
/// ```
/// use std::time::Duration;
/// use evloop::event_loop::Builder;
///
/// let order = Builder::new().virtual_clock(true).run(async {
///     let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
///     let tasks: Vec<_> = [(3, "c"), (1, "a"), (2, "b")]
///         .into_iter()
///         .map(|(s, name)| {
///             let log = log.clone();
///             evloop::spawn(async move {
///                 evloop::time::sleep(Duration::from_secs(s)).await; // await asyncio.sleep(s)
///                 log.borrow_mut().push(name);
///             })
///         })
///         .collect();
///     for t in tasks {
///         t.await?;
///     }
///     Ok::<_, evloop::task::TaskError>(log.take())
/// })??;
/// assert_eq!(order, ["a", "b", "c"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn sleep(delay: Duration) -> Sleep {
    let deadline = with_running(|lp| Deadline::At(lp.now().saturating_add(duration_to_ns(delay))))
        .unwrap_or(Deadline::After(delay));
    Sleep {
        deadline,
        registered: None,
        elapsed: false,
    }
}

/// Sleeps until `when` (loop time, see [`LoopHandle::time`](crate::event_loop::LoopHandle::time)):
/// an [`evloop::time::Instant`](crate::time::Instant) (tokio's spelling) or a
/// `std::time::Instant` (what `LoopHandle::time` returns).
///
/// ```
/// use std::time::Duration;
/// use evloop::event_loop::Builder;
///
/// Builder::new().virtual_clock(true).run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let when = lp.time() + Duration::from_secs(5); // loop time
///     evloop::time::sleep_until(when).await;
///     assert!(lp.time() >= when);
///     Ok::<(), evloop::event_loop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn sleep_until(when: impl Into<LoopInstant>) -> Sleep {
    let when = when.into().into_std();
    let deadline = with_running(|lp| Deadline::At(lp.clock.ns_of(when))).unwrap_or(Deadline::Instant(when));
    Sleep {
        deadline,
        registered: None,
        elapsed: false,
    }
}

impl Sleep {
    fn resolve(&mut self, lp: &LoopInner) -> u64 {
        let ns = match self.deadline {
            Deadline::At(ns) => ns,
            Deadline::After(d) => lp.now().saturating_add(duration_to_ns(d)),
            Deadline::Instant(i) => lp.clock.ns_of(i),
        };
        self.deadline = Deadline::At(ns);
        ns
    }

    /// The deadline as an `Instant`, once known (after the first poll, or at creation inside a
    /// running loop).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let outside = evloop::time::sleep(Duration::from_secs(1));
    /// assert!(outside.deadline().is_none()); // no loop yet: known at the first poll
    /// evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let inside = evloop::time::sleep(Duration::from_millis(1));
    ///     assert!(inside.deadline().is_some_and(|d| d >= lp.time()));
    ///     Ok::<(), evloop::event_loop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn deadline(&self) -> Option<Instant> {
        match (&self.deadline, &self.registered) {
            (Deadline::Instant(i), _) => Some(*i),
            (Deadline::At(ns), Some((lp, _))) => Some(lp.clock.instant_of(*ns)),
            (Deadline::At(ns), None) => with_running(|lp| lp.clock.instant_of(*ns)),
            (Deadline::After(_), _) => None,
        }
    }

    /// Whether it has completed: returned `Ready`, or its timer has fired and the next poll will
    /// (tokio's `Sleep::is_elapsed`). A sleep whose deadline has passed but that was never polled
    /// is not elapsed yet. `reset` makes it not elapsed again.
    ///
    /// ```
    /// use std::pin::pin;
    /// use std::time::Duration;
    ///
    /// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
    ///     let mut nap = pin!(evloop::time::sleep(Duration::from_millis(10)));
    ///     assert!(!nap.is_elapsed());
    ///     nap.as_mut().await;
    ///     assert!(nap.is_elapsed());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn is_elapsed(&self) -> bool {
        self.elapsed
            || self
                .registered
                .as_ref()
                .is_some_and(|(lp, id)| !lp.timers.borrow().contains(*id))
    }

    /// Moves the deadline to `deadline` (tokio's `Sleep::reset`), before or after it completed:
    /// a completed sleep becomes pending again until the new deadline. The waker of the last poll
    /// is kept, so the task that awaits it is woken at the new deadline without polling again
    /// first; a deadline already passed wakes it now.
    ///
    /// ```
    /// use std::pin::pin;
    /// use std::time::Duration;
    /// use evloop::time::{self, Instant};
    ///
    /// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
    ///     let start = Instant::now();
    ///     let mut nap = pin!(time::sleep(Duration::from_secs(1)));
    ///     nap.as_mut().reset(start + Duration::from_secs(5)); // longer now
    ///     nap.as_mut().await;
    ///     assert_eq!(start.elapsed(), Duration::from_secs(5));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn reset(self: Pin<&mut Self>, deadline: impl Into<LoopInstant>) {
        let this = self.get_mut();
        let when = deadline.into().into_std();
        this.elapsed = false;
        let Some((lp, id)) = this.registered.take() else {
            this.deadline = with_running(|lp| Deadline::At(lp.clock.ns_of(when))).unwrap_or(Deadline::Instant(when));
            return;
        };
        let ns = lp.clock.ns_of(when);
        this.deadline = Deadline::At(ns);
        if ns > lp.now() {
            // Still in the heap (not fired): move it, waker and all.
            if lp.timers.borrow_mut().reschedule(id, ns) {
                this.registered = Some((lp, id));
            }
            // Fired already: the next poll registers a new timer.
            return;
        }
        // Due now: wake whoever waits, as the timer would have; the next poll completes.
        let waker = match lp.timers.borrow_mut().get_mut(id) {
            Some(TimerEntry::Wake(w)) => Some(w.clone()),
            _ => None,
        };
        lp.cancel_timer(id);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let running = with_running(Rc::clone);
        let lp = match (&this.registered, running) {
            // Awaited by a task of another loop than the one that registered its timer: that
            // timer would fire only when its loop runs again. A deadline means the same instant
            // on every loop with a real clock, so the sleep simply moves its timer here.
            (Some((old, id)), Some(lp)) if !Rc::ptr_eq(old, &lp) => {
                old.cancel_timer(*id);
                this.registered = None;
                lp
            }
            (Some((lp, _)), _) => lp.clone(),
            (None, Some(lp)) => lp,
            (None, None) => panic!("evloop::time::sleep polled outside a running evloop event loop"),
        };
        let deadline = this.resolve(&lp);
        if lp.now() >= deadline {
            this.elapsed = true;
            if let Some((lp, id)) = this.registered.take() {
                // Phase 4 already popped every timer due by `expired_through`, so this one is
                // gone (the usual case: it woke us); otherwise it is still in the heap.
                if deadline > lp.expired_through.get() {
                    lp.cancel_timer(id);
                }
            }
            return Poll::Ready(());
        }
        match &this.registered {
            Some((lp, id)) => {
                // Re-polled before the deadline: keep the stored waker current.
                let mut timers = lp.timers.borrow_mut();
                match timers.get_mut(*id) {
                    Some(TimerEntry::Wake(w)) => {
                        if !w.will_wake(cx.waker()) {
                            *w = cx.waker().clone();
                        }
                    }
                    _ => {
                        drop(timers);
                        let id = lp.add_timer(deadline, TimerEntry::Wake(cx.waker().clone()));
                        this.registered = Some((lp.clone(), id));
                    }
                }
            }
            None => {
                let id = lp.add_timer(deadline, TimerEntry::Wake(cx.waker().clone()));
                this.registered = Some((lp.clone(), id));
            }
        }
        note_awaiting(Awaiting::Sleep(Duration::from_nanos(
            deadline.saturating_sub(lp.clock.origin()),
        )));
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some((lp, id)) = self.registered.take() {
            lp.cancel_timer(id);
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep").field("deadline", &self.deadline()).finish()
    }
}

/// The error of [`timeout`]: the deadline passed first. The inner future was dropped.
///
/// ```
/// use std::time::Duration;
/// use evloop::event_loop::Builder;
///
/// Builder::new().virtual_clock(true).run(async {
///     let err = evloop::time::timeout(Duration::from_secs(1), std::future::pending::<()>()).await.unwrap_err();
///     assert_eq!(err.to_string(), "timed out after 1s");
///     let io: std::io::Error = err.into(); // `?` in an io::Result function
///     assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed {
    after: Duration,
}

impl Elapsed {
    pub(crate) fn new(after: Duration) -> Elapsed {
        Elapsed { after }
    }

    /// The timeout that elapsed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::event_loop::Builder;
    ///
    /// Builder::new().virtual_clock(true).run(async {
    ///     let err = evloop::time::timeout(Duration::from_millis(250), std::future::pending::<()>()).await.unwrap_err();
    ///     assert_eq!(err.after(), Duration::from_millis(250));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn after(&self) -> Duration {
        self.after
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timed out after {:?}", self.after)
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(e: Elapsed) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::TimedOut, e)
    }
}

/// Runs `fut` for at most `limit` (asyncio's `wait_for` / `timeout`). On expiry the inner
/// future is dropped (its destructors are the cleanup) and `Err(Elapsed)` is returned. The
/// inner future is always polled at least once, even with a zero limit, and it is polled
/// before the timer is checked, so a future that is ready wins.
///
/// ```
/// use std::time::Duration;
/// use evloop::event_loop::Builder;
///
/// Builder::new().virtual_clock(true).run(async {
///     let slow = evloop::time::sleep(Duration::from_secs(10));
///     assert!(evloop::time::timeout(Duration::from_secs(1), slow).await.is_err()); // asyncio.wait_for
///     let quick = async { 5 };
///     assert_eq!(evloop::time::timeout(Duration::ZERO, quick).await, Ok(5)); // polled once: ready wins
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub async fn timeout<F: Future>(limit: Duration, fut: F) -> Result<F::Output, Elapsed> {
    race_timer(fut, sleep(limit), limit).await
}

/// [`timeout`] with a deadline instead of a duration (asyncio's `timeout_at`): the
/// inner future is dropped once loop time reaches `deadline`; it is always polled at least once.
/// The deadline is an [`evloop::time::Instant`](crate::time::Instant) or a `std::time::Instant`,
/// as for [`sleep_until`].
///
/// ```
/// use std::time::Duration;
/// use evloop::event_loop::Builder;
///
/// Builder::new().virtual_clock(true).run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let deadline = lp.time() + Duration::from_secs(1); // loop time, asyncio's loop.time() + 1
///     let r = evloop::time::timeout_at(deadline, evloop::time::sleep(Duration::from_secs(5))).await;
///     assert!(r.is_err());
///     assert!(lp.time() >= deadline);
///     Ok::<(), evloop::event_loop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn timeout_at<F: Future>(deadline: impl Into<LoopInstant>, fut: F) -> Result<F::Output, Elapsed> {
    let deadline = deadline.into().into_std();
    // Loop time: under a virtual clock it differs from `Instant::now()`.
    let started = get_running_loop().map_or_else(|_| Instant::now(), |lp| lp.time());
    race_timer(fut, sleep_until(deadline), deadline.saturating_duration_since(started)).await
}

/// The one body of [`timeout`] and [`timeout_at`]: `fut` first (a ready future wins, and it is
/// always polled once), then the timer; `after` is what the `Elapsed` reports.
async fn race_timer<F: Future>(fut: F, mut timer: Sleep, after: Duration) -> Result<F::Output, Elapsed> {
    let mut fut = pin!(fut);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(&mut timer).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed { after })),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}
