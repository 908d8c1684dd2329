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
//! asyncio's timeout cancels the task it runs in when the deadline passes and turns that
//! cancellation into `TimeoutError` on the way out; evloop's does the same with its own means.
//! The first poll of [`Timeout::run`] notes the task it runs in and that task's cancel count
//! ([`TaskRef::cancelling`]), and arms a loop callback for the deadline (`call_at`, or
//! `call_soon` for a deadline already passed, as asyncio's `reschedule` does). When the callback
//! runs, the timeout counts a cancel request on the task and wakes it, but does not ask its step
//! to drop the future: the step polls it, and the timeout, seeing that it is expiring, drops the
//! bounded future (its destructors are the cleanup, as `CancelledError` unwinding is in asyncio;
//! timeouts nested inside take their own requests back as they are dropped), takes its request
//! back with [`TaskRef::uncancel`] and compares the count with the one it started with. Equal:
//! the cancellation was its own, and the result is `Err(Elapsed)`. More: someone else cancelled
//! the task too (a `cancel()` in the same iteration, in either order), so the task ends
//! cancelled, as in asyncio. An outside `cancel()` made before the step asks the step to drop the
//! whole future anyway. [`TimeoutHandle::reschedule`] re-arms the callback.
//!
//! # Nested timeouts
//! Two timeouts on the same deadline both count a request; the outer one, polled first, drops
//! the inner one (which takes its own request back as it goes, and says `expired()`), finds the
//! count back where it started and reports. So the outermost expired timeout reports, as in
//! asyncio, where the inner ones see a cancellation that is not theirs and let it through.
//!
//! A run polled outside any task (a future polled by hand on the loop's thread) has no task to
//! count on: its callback only marks it expiring and wakes the future's waker.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::event_loop::clock::instant_after;
use crate::event_loop::handle::{Handle, TimerHandle};
use crate::event_loop::{LoopHandle, with_running};
use crate::task::TaskRef;
use crate::task::error::InvalidStateError;
use crate::task::time::Elapsed;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// Made, not yet running a future.
    Created,
    /// Bounding a future.
    Active,
    /// Its deadline passed: it cancelled its task, and reports at the task's next step.
    Expiring,
    /// Its deadline passed while the future ran.
    Expired,
    /// The future finished in time, or the run was dropped before the deadline.
    Finished,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Created => "created",
            Phase::Active => "active",
            Phase::Expiring => "expiring",
            Phase::Expired => "expired",
            Phase::Finished => "finished",
        }
    }
}

/// The loop callback that fires at the deadline.
enum Armed {
    Soon(Handle),
    At(TimerHandle),
}

impl Armed {
    fn cancel(self) {
        match self {
            Armed::Soon(h) => h.cancel(),
            Armed::At(h) => h.cancel(),
        }
    }
}

struct State {
    /// The deadline in loop time; `None` never expires.
    when: Cell<Option<Instant>>,
    /// A delay not yet turned into a deadline (made outside a running loop).
    delay: Cell<Option<Duration>>,
    phase: Cell<Phase>,
    /// While it runs: the loop (to arm the callback on), the callback, the task it runs in and
    /// that task's cancel count when the run began.
    lp: RefCell<Option<LoopHandle>>,
    armed: RefCell<Option<Armed>>,
    task: RefCell<Option<TaskRef>>,
    entered_with: Cell<usize>,
    /// The waker of a run polled outside any task, which the callback wakes instead.
    waker: RefCell<Option<Waker>>,
}

impl State {
    /// Cancels the armed callback and, when active with a deadline, arms one for it.
    fn arm(self: &Rc<Self>) {
        if let Some(old) = self.armed.borrow_mut().take() {
            old.cancel();
        }
        let (Phase::Active, Some(when)) = (self.phase.get(), self.when.get()) else {
            return;
        };
        let Some(lp) = self.lp.borrow().clone() else { return };
        let me: Weak<State> = Rc::downgrade(self);
        let fire = move || {
            if let Some(me) = me.upgrade() {
                me.on_deadline();
            }
        };
        let armed = if when <= lp.time() {
            lp.call_soon(fire).ok().map(Armed::Soon)
        } else {
            lp.call_at(when, fire).ok().map(Armed::At)
        };
        *self.armed.borrow_mut() = armed;
    }

    /// The deadline passed (asyncio's `_on_timeout`): cancel the task, which reports at its next
    /// step.
    fn on_deadline(&self) {
        if self.phase.get() != Phase::Active {
            return;
        }
        self.armed.borrow_mut().take();
        self.phase.set(Phase::Expiring);
        match self.task.borrow().as_ref() {
            Some(task) => {
                task.cancel_for_timeout();
            }
            None => {
                if let Some(w) = self.waker.borrow_mut().take() {
                    w.wake();
                }
            }
        }
    }

    /// The run ends (asyncio's `__aexit__`): disarm, and take back its own cancel request if it
    /// was expiring. Returns whether every request since the run began was its own (`true`
    /// without a task to count on).
    fn exit(&self, to: Phase) -> bool {
        if let Some(armed) = self.armed.borrow_mut().take() {
            armed.cancel();
        }
        let was = self.phase.replace(to);
        let task = self.task.borrow_mut().take();
        self.lp.borrow_mut().take();
        self.waker.borrow_mut().take();
        match (was, task) {
            (Phase::Expiring, Some(task)) => task.uncancel() <= self.entered_with.get(),
            _ => true,
        }
    }
}

/// Ends a run that is dropped before it returned (its task was cancelled, or an enclosing
/// timeout dropped it): the inner timeout's half of asyncio's nested `__aexit__`s.
struct ExitOnDrop(Rc<State>);

impl Drop for ExitOnDrop {
    fn drop(&mut self) {
        match self.0.phase.get() {
            Phase::Active => {
                self.0.exit(Phase::Finished);
            }
            Phase::Expiring => {
                self.0.exit(Phase::Expired);
            }
            _ => {}
        }
    }
}

/// A deadline for a future (asyncio's `asyncio.timeout()` / `timeout_at()`); see the module
/// documentation. Run a future under it with [`Timeout::run`]; keep a [`TimeoutHandle`]
/// (from [`Timeout::handle`]) to look at it or move it.
///
/// ```
/// use std::time::Duration;
/// use evloop::time::Timeout;
///
/// evloop::event_loop::Builder::new().virtual_clock(true).run(async {
///     let lp = evloop::event_loop::get_running_loop().unwrap();
///     let t = Timeout::after(Duration::from_secs(1));
///     let cm = t.handle();
///     let result = t
///         .run(async {
///             // More time is needed after all: move the deadline.
///             cm.reschedule(Some(lp.time() + Duration::from_secs(5))).unwrap();
///             evloop::time::sleep(Duration::from_secs(2)).await;
///             "done"
///         })
///         .await;
///     assert_eq!(result, Ok("done"));
///     assert!(!cm.expired());
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Timeout {
    state: Rc<State>,
}

/// A shared view of a [`Timeout`]: its deadline, moving it, and whether it expired. Clone it
/// freely (into the bounded future, for instance).
///
/// ```
/// use std::time::Duration;
/// use evloop::{event_loop::Builder, time::Timeout};
///
/// Builder::new().virtual_clock(true).run(async {
///     let t = Timeout::after(Duration::from_secs(1));
///     let handle = t.handle(); // kept outside, valid after the run
///     let r = t.run(evloop::time::sleep(Duration::from_secs(5))).await;
///     assert!(r.is_err());
///     assert!(handle.expired());
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
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
                lp: RefCell::new(None),
                armed: RefCell::new(None),
                task: RefCell::new(None),
                entered_with: Cell::new(0),
                waker: RefCell::new(None),
            }),
        }
    }

    /// A deadline `delay` from now in loop time (`asyncio.timeout(delay)`). Made outside a
    /// running loop, the delay counts from the first poll of [`Timeout::run`] and
    /// [`TimeoutHandle::when`] is `None` until then.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{event_loop::Builder, time::Timeout};
    ///
    /// Builder::new().virtual_clock(true).run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let t = Timeout::after(Duration::from_secs(2)); // async with asyncio.timeout(2):
    ///     assert_eq!(t.when(), Some(lp.time() + Duration::from_secs(2)));
    ///     assert_eq!(t.run(async { "in time" }).await, Ok("in time"));
    ///     Ok::<(), evloop::event_loop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn after(delay: Duration) -> Timeout {
        match with_running(|lp| LoopHandle { inner: lp.clone() }.time()) {
            Some(now) => Timeout::with(Some(instant_after(now, delay)), None),
            None => Timeout::with(None, Some(delay)),
        }
    }

    /// A deadline at `when` in loop time ([`LoopHandle::time`]), or none (`asyncio.timeout_at`).
    /// A deadline already passed expires at the first check, after one poll of the future.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{event_loop::Builder, time::Timeout};
    ///
    /// Builder::new().virtual_clock(true).run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let deadline = lp.time() + Duration::from_secs(1);
    ///     let r = Timeout::at(Some(deadline)).run(evloop::time::sleep(Duration::from_secs(3))).await;
    ///     assert!(r.is_err());
    ///     assert!(lp.time() >= deadline);
    ///     Ok::<(), evloop::event_loop::LoopError>(())
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
    /// use evloop::{event_loop::Builder, time::Timeout};
    ///
    /// Builder::new().virtual_clock(true).run(async {
    ///     let t = Timeout::never(); // asyncio.timeout(None)
    ///     assert!(t.when().is_none());
    ///     let r = t.run(async {
    ///         evloop::time::sleep(Duration::from_secs(100)).await;
    ///         "no deadline"
    ///     });
    ///     assert_eq!(r.await, Ok("no deadline"));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn never() -> Timeout {
        Timeout::with(None, None)
    }

    /// A handle to look at and move the deadline, valid before, during and after the run.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{event_loop::Builder, time::Timeout};
    ///
    /// Builder::new().virtual_clock(true).run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let t = Timeout::never();
    ///     let cm = t.handle();
    ///     let r = t
    ///         .run(async move {
    ///             // Decide the deadline from inside: `async with asyncio.timeout(None) as cm:`
    ///             cm.reschedule(Some(lp.time() + Duration::from_secs(1))).expect("running");
    ///             evloop::time::sleep(Duration::from_secs(5)).await;
    ///         })
    ///         .await;
    ///     assert!(r.is_err());
    ///     Ok::<(), evloop::event_loop::LoopError>(())
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
    /// let t = evloop::time::Timeout::after(Duration::from_secs(1));
    /// assert!(t.when().is_none()); // made outside a loop: counted from the first poll of run
    /// ```
    pub fn when(&self) -> Option<Instant> {
        self.state.when.get()
    }

    /// Runs `fut` until it completes (`Ok` with its output) or the deadline passes (`Err`;
    /// `fut` is dropped, which cancels it). The first poll always polls `fut`, so a future that
    /// is ready at once wins, and a deadline in the past still lets it run up to its first
    /// `Pending`. After that, the deadline's callback decides (see the module documentation):
    /// once it has run, the next poll reports without polling `fut` again, and a `cancel()` of
    /// the task in the same iteration makes the task end cancelled instead.
    ///
    /// # Panics
    /// Polled outside a running evloop loop (as [`sleep`](crate::task::time::sleep) does):
    /// there is no clock to measure the deadline against.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{event_loop::Builder, time::Timeout};
    ///
    /// Builder::new().virtual_clock(true).run(async {
    ///     let outer = Timeout::after(Duration::from_secs(1));
    ///     let inner = Timeout::after(Duration::from_secs(1));
    ///     let (outer_h, inner_h) = (outer.handle(), inner.handle());
    ///     // Nested on the same deadline: the outer one reports the timeout (an `Err` of the
    ///     // outer run, not an `Ok(Err(..))` from the inner one), and both say they expired.
    ///     let r = outer.run(async move { inner.run(evloop::time::sleep(Duration::from_secs(5))).await }).await;
    ///     assert!(r.is_err());
    ///     assert!(outer_h.expired() && inner_h.expired());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn run<F: Future>(self, fut: F) -> Result<F::Output, Elapsed> {
        let state = self.state;
        // Declared before the future: dropped after it, as `__aexit__` runs after the body
        // unwound.
        let _exit = ExitOnDrop(state.clone());
        let mut fut = pin!(Some(fut));
        let mut start: Option<Instant> = None;
        poll_fn(|cx| {
            // asyncio raises RuntimeError here; a deadline needs a loop's clock to be measured,
            // and with none the run would wait forever for a timer nobody sets.
            let Some(lp) = with_running(|lp| LoopHandle { inner: lp.clone() }) else {
                panic!("evloop::time::Timeout::run polled outside a running evloop event loop")
            };
            if start.is_none() {
                let now = lp.time();
                start = Some(now);
                if let Some(d) = state.delay.take() {
                    state.when.set(Some(instant_after(now, d)));
                }
                let task = crate::task::current_task();
                state.entered_with.set(task.as_ref().map_or(0, TaskRef::cancelling));
                *state.task.borrow_mut() = task;
                *state.lp.borrow_mut() = Some(lp);
                state.phase.set(Phase::Active);
                // Armed before the first poll of the future, as asyncio's `__aenter__` does: a
                // deadline already passed fires before the wake of whatever the future awaits.
                state.arm();
            }
            match state.phase.get() {
                Phase::Expiring => {
                    // Unwind: the future's destructors run, inner timeouts take their own
                    // requests back; then see whose requests are left.
                    fut.set(None);
                    if state.exit(Phase::Expired) {
                        let when = state.when.get().or(start).unwrap_or_else(Instant::now);
                        let after = when.saturating_duration_since(start.unwrap_or(when));
                        return Poll::Ready(Err(Elapsed::new(after)));
                    }
                    // Someone else cancelled the task too: it ends cancelled (asyncio lets the
                    // CancelledError through). Its next step drops what is left of it.
                    if let Some(task) = crate::task::current_task() {
                        task.insist_on_cancel();
                    }
                    return Poll::Pending;
                }
                // Expired without reporting: its task is about to be dropped.
                Phase::Expired | Phase::Finished => return Poll::Pending,
                Phase::Created | Phase::Active => {}
            }
            if let Some(f) = fut.as_mut().as_pin_mut() {
                if let Poll::Ready(v) = f.poll(cx) {
                    state.exit(Phase::Finished);
                    return Poll::Ready(Ok(v));
                }
            }
            if state.task.borrow().is_none() {
                store_waker(&state, cx);
            }
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
    /// use evloop::{event_loop::Builder, time::Timeout};
    ///
    /// Builder::new().virtual_clock(true).run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let cm = Timeout::after(Duration::from_secs(3)).handle();
    ///     assert_eq!(cm.when(), Some(lp.time() + Duration::from_secs(3)));
    ///     assert!(Timeout::never().handle().when().is_none());
    ///     Ok::<(), evloop::event_loop::LoopError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn when(&self) -> Option<Instant> {
        self.state.when.get()
    }

    /// Moves the deadline (`None` removes it), asyncio's `reschedule()`. Works before the run
    /// and while it runs, from inside the bounded future or from anywhere on the loop's
    /// thread (it re-arms the deadline's callback); an [`InvalidStateError`] once the deadline
    /// passed (expiring or expired) or the future finished.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{event_loop::Builder, time::Timeout};
    ///
    /// Builder::new().virtual_clock(true).run(async {
    ///     let t = Timeout::after(Duration::from_secs(1));
    ///     let cm = t.handle();
    ///     cm.reschedule(None).expect("not started"); // no deadline after all
    ///     assert_eq!(t.run(evloop::time::sleep(Duration::from_secs(2))).await, Ok(()));
    ///     assert!(cm.reschedule(None).is_err()); // finished: InvalidStateError
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn reschedule(&self, when: Option<Instant>) -> Result<(), InvalidStateError> {
        let phase = self.state.phase.get();
        if matches!(phase, Phase::Expiring | Phase::Expired | Phase::Finished) {
            return Err(InvalidStateError {
                op: "Timeout::reschedule",
                object: format!("the timeout (deadline {:?})", self.state.when.get()),
                state: phase.name(),
            });
        }
        self.state.when.set(when);
        self.state.delay.set(None);
        self.state.arm();
        Ok(())
    }

    /// Whether the deadline passed while the future ran (asyncio's `expired()`): true for an
    /// inner timeout too when an enclosing one on the same deadline reported it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{event_loop::Builder, time::Timeout};
    ///
    /// Builder::new().virtual_clock(true).run(async {
    ///     let t = Timeout::after(Duration::from_secs(1));
    ///     let cm = t.handle();
    ///     assert!(!cm.expired());
    ///     let _ = t.run(std::future::pending::<()>()).await;
    ///     assert!(cm.expired());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
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
