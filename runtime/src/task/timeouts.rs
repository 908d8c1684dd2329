//! asyncio 3.11's timeout object: a [`Timeout`] bounds a future, and its [`TimeoutHandle`]
//! reads and moves the deadline while the future runs (`when()`, `reschedule()`, `expired()`).
//!
//! ```text
//! asyncio                                         evloop
//! async with asyncio.timeout(10) as cm:           let t = Timeout::after(secs(10));
//!     cm.reschedule(loop.time() + 20)             let cm = t.handle();
//!     await work()                                t.run(async { cm.reschedule(..)?; work().await }).await
//! cm.expired()                                    cm.expired()
//! ```
//!
//! # How it works
//! [`Timeout::run`] polls the future first and then compares the loop's clock with the
//! deadline: a future that is ready wins, and on expiry the future is dropped (its destructors
//! are the cleanup, as `CancelledError` unwinding is in asyncio) and the result is
//! `Err(Elapsed)`. While the deadline is ahead, a [`Sleep`] for it keeps the task's waker in
//! the timer heap; `reschedule` changes the deadline and wakes the task, whose next poll
//! compares again and re-arms the timer.
//!
//! # Nested timeouts
//! asyncio cancels the task when a timeout expires and turns the cancellation into
//! `TimeoutError` at the *outermost* timeout whose deadline has passed: the inner ones see a
//! cancellation that is not theirs and let it through (`Task.uncancel()` counts them). Here the
//! same rule holds without cancel counts: each running timeout is on a per-thread stack for
//! the duration of its poll, and a timeout that finds its deadline passed first looks for an
//! enclosing one whose deadline has passed too. If there is one, it only marks itself expired
//! and returns `Pending`; the enclosing timeout, polling it right now, checks its own deadline
//! next, drops everything inside and reports `Elapsed`. So two timeouts on the same deadline
//! report it at the outer one, and both say `expired()`.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::event_loop::{LoopHandle, with_running};
use crate::task::error::InvalidStateError;
use crate::task::time::{Elapsed, Sleep, sleep_until};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// Made, not yet running a future.
    Created,
    /// Bounding a future.
    Active,
    /// Its deadline passed while the future ran.
    Expired,
    /// The future finished in time.
    Finished,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Created => "created",
            Phase::Active => "active",
            Phase::Expired => "expired",
            Phase::Finished => "finished",
        }
    }
}

struct State {
    /// The deadline in loop time; `None` never expires.
    when: Cell<Option<Instant>>,
    /// A delay not yet turned into a deadline (made outside a running loop).
    delay: Cell<Option<Duration>>,
    phase: Cell<Phase>,
    /// Bumped by `reschedule`, so the running future re-arms its timer.
    generation: Cell<u64>,
    /// The task running the bounded future, woken by `reschedule` from elsewhere.
    waker: RefCell<Option<Waker>>,
    /// True while the bounded future is being polled (a reschedule from inside needs no wake).
    polling: Cell<bool>,
}

thread_local! {
    /// The timeouts being polled right now, outermost first.
    static ACTIVE: RefCell<Vec<Rc<State>>> = const { RefCell::new(Vec::new()) };
}

/// Pops the stack on the way out of a poll, panics included.
struct OnStack;

impl OnStack {
    fn push(state: &Rc<State>) -> OnStack {
        ACTIVE.with(|a| a.borrow_mut().push(state.clone()));
        state.polling.set(true);
        OnStack
    }
}

impl Drop for OnStack {
    fn drop(&mut self) {
        if let Some(s) = ACTIVE.with(|a| a.borrow_mut().pop()) {
            s.polling.set(false);
        }
    }
}

/// Whether a timeout enclosing the one being checked (below it on the stack) has a deadline
/// at or before `now`.
fn an_enclosing_one_expired(now: Instant) -> bool {
    ACTIVE.with(|a| {
        a.borrow()
            .iter()
            .any(|s| s.phase.get() == Phase::Active && s.when.get().is_some_and(|w| w <= now))
    })
}

/// A deadline for a future (asyncio's `asyncio.timeout()` / `timeout_at()`); see the module
/// documentation. Run a future under it with [`Timeout::run`]; keep a [`TimeoutHandle`]
/// (from [`Timeout::handle`]) to look at it or move it.
///
/// ```
/// use std::time::Duration;
/// use evloop::Timeout;
///
/// evloop::run_with(evloop::Builder::new().virtual_clock(true), async {
///     let lp = evloop::get_running_loop().unwrap();
///     let t = Timeout::after(Duration::from_secs(1));
///     let cm = t.handle();
///     let result = t
///         .run(async {
///             // More time is needed after all: move the deadline.
///             cm.reschedule(Some(lp.time() + Duration::from_secs(5))).unwrap();
///             evloop::sleep(Duration::from_secs(2)).await;
///             "done"
///         })
///         .await;
///     assert_eq!(result, Ok("done"));
///     assert!(!cm.expired());
/// })?;
/// # Ok::<(), evloop::RunError>(())
/// ```
pub struct Timeout {
    state: Rc<State>,
}

/// A shared view of a [`Timeout`]: its deadline, moving it, and whether it expired. Clone it
/// freely (into the bounded future, for instance).
///
/// ```
/// use std::time::Duration;
/// use evloop::{Builder, Timeout};
///
/// evloop::run_with(Builder::new().virtual_clock(true), async {
///     let t = Timeout::after(Duration::from_secs(1));
///     let handle = t.handle(); // kept outside, valid after the run
///     let r = t.run(evloop::sleep(Duration::from_secs(5))).await;
///     assert!(r.is_err());
///     assert!(handle.expired());
/// })?;
/// # Ok::<(), evloop::RunError>(())
/// ```
#[derive(Clone)]
pub struct TimeoutHandle {
    state: Rc<State>,
}

impl Timeout {
    fn with(when: Option<Instant>, delay: Option<Duration>) -> Timeout {
        Timeout {
            state: Rc::new(State {
                when: Cell::new(when),
                delay: Cell::new(delay),
                phase: Cell::new(Phase::Created),
                generation: Cell::new(0),
                waker: RefCell::new(None),
                polling: Cell::new(false),
            }),
        }
    }

    /// A deadline `delay` from now in loop time (`asyncio.timeout(delay)`). Made outside a
    /// running loop, the delay counts from the first poll of [`Timeout::run`] and
    /// [`TimeoutHandle::when`] is `None` until then.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{Builder, Timeout};
    ///
    /// evloop::run_with(Builder::new().virtual_clock(true), async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let t = Timeout::after(Duration::from_secs(2)); // async with asyncio.timeout(2):
    ///     assert_eq!(t.when(), Some(lp.time() + Duration::from_secs(2)));
    ///     assert_eq!(t.run(async { "in time" }).await, Ok("in time"));
    ///     Ok::<(), evloop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn after(delay: Duration) -> Timeout {
        match with_running(|lp| LoopHandle { inner: lp.clone() }.time()) {
            Some(now) => Timeout::with(Some(now + delay), None),
            None => Timeout::with(None, Some(delay)),
        }
    }

    /// A deadline at `when` in loop time ([`LoopHandle::time`]), or none (`asyncio.timeout_at`).
    /// A deadline already passed expires at the first check, after one poll of the future.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{Builder, Timeout};
    ///
    /// evloop::run_with(Builder::new().virtual_clock(true), async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let deadline = lp.time() + Duration::from_secs(1);
    ///     let r = Timeout::at(Some(deadline)).run(evloop::sleep(Duration::from_secs(3))).await;
    ///     assert!(r.is_err());
    ///     assert!(lp.time() >= deadline);
    ///     Ok::<(), evloop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn at(when: Option<Instant>) -> Timeout {
        Timeout::with(when, None)
    }

    /// No deadline until [`TimeoutHandle::reschedule`] sets one (`asyncio.timeout(None)`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{Builder, Timeout};
    ///
    /// evloop::run_with(Builder::new().virtual_clock(true), async {
    ///     let t = Timeout::never(); // asyncio.timeout(None)
    ///     assert!(t.when().is_none());
    ///     let r = t.run(async {
    ///         evloop::sleep(Duration::from_secs(100)).await;
    ///         "no deadline"
    ///     });
    ///     assert_eq!(r.await, Ok("no deadline"));
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn never() -> Timeout {
        Timeout::with(None, None)
    }

    /// A handle to look at and move the deadline, valid before, during and after the run.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{Builder, Timeout};
    ///
    /// evloop::run_with(Builder::new().virtual_clock(true), async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let t = Timeout::never();
    ///     let cm = t.handle();
    ///     let r = t
    ///         .run(async move {
    ///             // Decide the deadline from inside: `async with asyncio.timeout(None) as cm:`
    ///             cm.reschedule(Some(lp.time() + Duration::from_secs(1))).expect("running");
    ///             evloop::sleep(Duration::from_secs(5)).await;
    ///         })
    ///         .await;
    ///     assert!(r.is_err());
    ///     Ok::<(), evloop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle(&self) -> TimeoutHandle {
        TimeoutHandle {
            state: self.state.clone(),
        }
    }

    /// The deadline (see [`TimeoutHandle::when`]).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let t = evloop::Timeout::after(Duration::from_secs(1));
    /// assert!(t.when().is_none()); // made outside a loop: counted from the first poll of run
    /// ```
    pub fn when(&self) -> Option<Instant> {
        self.state.when.get()
    }

    /// Runs `fut` until it completes (`Ok` with its output) or the deadline passes (`Err`;
    /// `fut` is dropped, which cancels it). `fut` is always polled before the deadline is
    /// checked, so a future that is ready wins, and a deadline in the past still lets it run
    /// up to its first `Pending`.
    ///
    /// # Panics
    /// Polled outside a running evloop loop (as [`sleep`](crate::task::time::sleep) does):
    /// there is no clock to measure the deadline against.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{Builder, Timeout};
    ///
    /// evloop::run_with(Builder::new().virtual_clock(true), async {
    ///     let outer = Timeout::after(Duration::from_secs(1));
    ///     let inner = Timeout::after(Duration::from_secs(1));
    ///     let (outer_h, inner_h) = (outer.handle(), inner.handle());
    ///     // Nested on the same deadline: the outer one reports the timeout (an `Err` of the
    ///     // outer run, not an `Ok(Err(..))` from the inner one), and both say they expired.
    ///     let r = outer.run(async move { inner.run(evloop::sleep(Duration::from_secs(5))).await }).await;
    ///     assert!(r.is_err());
    ///     assert!(outer_h.expired() && inner_h.expired());
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub async fn run<F: Future>(self, fut: F) -> Result<F::Output, Elapsed> {
        let state = self.state;
        let mut fut = pin!(fut);
        let mut timer: Option<(u64, Sleep)> = None;
        let mut start: Option<Instant> = None;
        poll_fn(|cx| {
            // asyncio raises RuntimeError here; a deadline needs a loop's clock to be measured,
            // and with none the run would wait forever for a timer nobody sets.
            let Some(now) = with_running(|lp| LoopHandle { inner: lp.clone() }.time()) else {
                panic!("evloop::Timeout::run polled outside a running evloop event loop")
            };
            if start.is_none() {
                start = Some(now);
                state.phase.set(Phase::Active);
                if let Some(d) = state.delay.take() {
                    state.when.set(Some(now + d));
                }
            }
            // Deferred to an enclosing timeout that then did not report (it is gone, or its
            // future completed): report here rather than poll a future that is out of time.
            if state.phase.get() == Phase::Expired {
                let when = state.when.get().unwrap_or(now);
                let after = when.saturating_duration_since(start.unwrap_or(when));
                return Poll::Ready(Err(Elapsed::new(after)));
            }
            {
                let _on = OnStack::push(&state);
                if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                    state.phase.set(Phase::Finished);
                    state.waker.borrow_mut().take();
                    return Poll::Ready(Ok(v));
                }
            }
            let Some(when) = state.when.get() else {
                // No deadline: wait for the future or a reschedule.
                timer = None;
                store_waker(&state, cx);
                return Poll::Pending;
            };
            if now >= when {
                state.phase.set(Phase::Expired);
                state.waker.borrow_mut().take();
                if an_enclosing_one_expired(now) {
                    // The enclosing timeout reports it (asyncio: the outermost expired one); it
                    // is polling us right now and checks its own deadline next. Should it not
                    // report after all, the wake brings us back to report it ourselves.
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                let after = when.saturating_duration_since(start.unwrap_or(when));
                return Poll::Ready(Err(Elapsed::new(after)));
            }
            let generation = state.generation.get();
            if !matches!(&timer, Some((g, _)) if *g == generation) {
                timer = Some((generation, sleep_until(when)));
            }
            if let Some((_, sleep)) = timer.as_mut() {
                if Pin::new(sleep).poll(cx).is_ready() {
                    // Loop time reached the deadline between the check and now: look again
                    // at once rather than wait for a wake that will not come.
                    cx.waker().wake_by_ref();
                }
            }
            store_waker(&state, cx);
            Poll::Pending
        })
        .await
    }
}

fn store_waker(state: &State, cx: &Context<'_>) {
    let mut w = state.waker.borrow_mut();
    match &*w {
        Some(old) if old.will_wake(cx.waker()) => {}
        _ => *w = Some(cx.waker().clone()),
    }
}

impl TimeoutHandle {
    /// The deadline in loop time, `None` for none (asyncio's `when()`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{Builder, Timeout};
    ///
    /// evloop::run_with(Builder::new().virtual_clock(true), async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let cm = Timeout::after(Duration::from_secs(3)).handle();
    ///     assert_eq!(cm.when(), Some(lp.time() + Duration::from_secs(3)));
    ///     assert!(Timeout::never().handle().when().is_none());
    ///     Ok::<(), evloop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn when(&self) -> Option<Instant> {
        self.state.when.get()
    }

    /// Moves the deadline (`None` removes it), asyncio's `reschedule()`. Works before the run
    /// and while it runs, from inside the bounded future or from anywhere on the loop's
    /// thread; an [`InvalidStateError`] once the timeout expired or its future finished.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{Builder, Timeout};
    ///
    /// evloop::run_with(Builder::new().virtual_clock(true), async {
    ///     let t = Timeout::after(Duration::from_secs(1));
    ///     let cm = t.handle();
    ///     cm.reschedule(None).expect("not started"); // no deadline after all
    ///     assert_eq!(t.run(evloop::sleep(Duration::from_secs(2))).await, Ok(()));
    ///     assert!(cm.reschedule(None).is_err()); // finished: InvalidStateError
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn reschedule(&self, when: Option<Instant>) -> Result<(), InvalidStateError> {
        let phase = self.state.phase.get();
        if matches!(phase, Phase::Expired | Phase::Finished) {
            return Err(InvalidStateError {
                op: "Timeout::reschedule",
                object: format!("the timeout (deadline {:?})", self.state.when.get()),
                state: phase.name(),
            });
        }
        self.state.when.set(when);
        self.state.delay.set(None);
        self.state.generation.set(self.state.generation.get().wrapping_add(1));
        if !self.state.polling.get() {
            if let Some(w) = self.state.waker.borrow().as_ref() {
                w.wake_by_ref();
            }
        }
        Ok(())
    }

    /// Whether the deadline passed while the future ran (asyncio's `expired()`): true for an
    /// inner timeout too when an enclosing one on the same deadline reported it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{Builder, Timeout};
    ///
    /// evloop::run_with(Builder::new().virtual_clock(true), async {
    ///     let t = Timeout::after(Duration::from_secs(1));
    ///     let cm = t.handle();
    ///     assert!(!cm.expired());
    ///     let _ = t.run(std::future::pending::<()>()).await;
    ///     assert!(cm.expired());
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn expired(&self) -> bool {
        self.state.phase.get() == Phase::Expired
    }
}

impl fmt::Debug for TimeoutHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("state", &self.state.phase.get().name())
            .field("when", &self.state.when.get())
            .finish()
    }
}

impl fmt::Debug for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.handle().fmt(f)
    }
}
