//! Scheduling callbacks: loop time ([`LoopHandle::time`]), `call_soon`, `call_soon_threadsafe`
//! (on the loop's own thread), `call_later` and `call_at`.
//!
//! A callback becomes a [`Handle`] in the ready queue (phase 5 of the next iteration runs it);
//! a timed one becomes a [`TimerHandle`] whose entry waits in the timer heap until phase 4
//! moves it to the ready queue.

use std::panic::Location;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::event_loop::clock::duration_to_ns;
use crate::event_loop::error::LoopError;
use crate::event_loop::handle::{Handle, HandleKind, OnceCallback, TimerHandle};
use crate::event_loop::{LoopHandle, TimerEntry};

impl LoopHandle {
    /// Loop time: `CLOCK_MONOTONIC` (or the virtual clock) as an `Instant`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let lp = evloop::event_loop::EventLoop::builder().virtual_clock(true).build()?;
    /// let start = lp.time(); // loop.time()
    /// lp.run_until_complete(evloop::time::sleep(Duration::from_secs(5)))?;
    /// assert_eq!(lp.time() - start, Duration::from_secs(5)); // the virtual clock jumped exactly there
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn time(&self) -> Instant {
        self.inner.clock.instant_of(self.inner.clock.now())
    }

    /// Schedules `f` for the next iteration (asyncio's `call_soon`). Callbacks run in FIFO
    /// order; one scheduled by a running callback runs in the next iteration.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let log = Rc::new(RefCell::new(Vec::new()));
    /// for i in 0..3 {
    ///     let log = log.clone();
    ///     lp.call_soon(move || log.borrow_mut().push(i))?; // loop.call_soon(cb)
    /// }
    /// let h = lp.handle();
    /// lp.call_soon(move || h.stop())?;
    /// lp.run_forever()?;
    /// assert_eq!(*log.borrow(), [0, 1, 2]); // FIFO
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn call_soon<F: FnOnce() + 'static>(&self, f: F) -> Result<Handle, LoopError> {
        self.check_open("call_soon")?;
        let cb = self.inner.call_soon_local(HandleKind::CallSoon, Location::caller(), f);
        Ok(Handle { inner: cb })
    }

    /// Schedules `f` (asyncio's `call_soon_threadsafe`). A `LoopHandle` lives on the loop's
    /// own thread, so here this is [`call_soon`](LoopHandle::call_soon) without the handle:
    /// FIFO with the callbacks scheduled around it. From other threads, use
    /// [`RemoteHandle::call_soon_threadsafe`](crate::event_loop::RemoteHandle::call_soon_threadsafe) (`lp.remote()`).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let done = Arc::new(AtomicBool::new(false));
    /// let d = done.clone();
    /// lp.call_soon_threadsafe(move || d.store(true, Ordering::SeqCst))?; // on the loop's own thread
    /// lp.run_until_complete(async {})?;
    /// assert!(done.load(Ordering::SeqCst));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn call_soon_threadsafe<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<(), LoopError> {
        self.check_open("call_soon_threadsafe")?;
        self.inner
            .call_soon_local(HandleKind::Threadsafe, Location::caller(), f);
        Ok(())
    }

    /// Runs `f` once `delay` has passed (asyncio's `call_later`); never early. A zero delay runs
    /// in the next iteration, after the handles that are already ready.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    /// use std::time::Duration;
    ///
    /// let lp = evloop::event_loop::EventLoop::builder().virtual_clock(true).build()?;
    /// let log = Rc::new(RefCell::new(Vec::new()));
    /// for (secs, name) in [(2, "two"), (1, "one"), (3, "three")] {
    ///     let log = log.clone();
    ///     lp.call_later(Duration::from_secs(secs), move || log.borrow_mut().push(name))?;
    /// }
    /// let h = lp.handle();
    /// lp.call_later(Duration::from_secs(4), move || h.stop())?;
    /// lp.run_forever()?;
    /// assert_eq!(*log.borrow(), ["one", "two", "three"]); // by deadline, never early
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn call_later<F: FnOnce() + 'static>(&self, delay: Duration, f: F) -> Result<TimerHandle, LoopError> {
        self.check_open("call_later")?;
        let deadline = self.inner.clock.now().saturating_add(duration_to_ns(delay));
        Ok(self.schedule_at(deadline, None, Location::caller(), f))
    }

    /// Runs `f` at `when` or later (asyncio's `call_at`); never early. Equal deadlines run in
    /// the order they were scheduled.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    /// use std::time::Duration;
    ///
    /// let lp = evloop::event_loop::EventLoop::builder().virtual_clock(true).build()?;
    /// let when = lp.time() + Duration::from_secs(10);
    /// let ran_at = Rc::new(Cell::new(None));
    /// let (r, h) = (ran_at.clone(), lp.handle());
    /// let timer = lp.call_at(when, move || {
    ///     r.set(Some(h.time()));
    ///     h.stop();
    /// })?;
    /// assert_eq!(timer.when(), when);
    /// lp.run_forever()?;
    /// assert!(ran_at.get().is_some_and(|t| t >= when)); // never early
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn call_at<F: FnOnce() + 'static>(&self, when: Instant, f: F) -> Result<TimerHandle, LoopError> {
        self.check_open("call_at")?;
        let deadline = self.inner.clock.ns_of(when);
        Ok(self.schedule_at(deadline, Some(when), Location::caller(), f))
    }

    /// Inserts the timer; `when` is the caller's own instant for `call_at` (kept as given).
    fn schedule_at<F: FnOnce() + 'static>(
        &self,
        deadline: u64,
        when: Option<Instant>,
        site: &'static Location<'static>,
        f: F,
    ) -> TimerHandle {
        let cb = OnceCallback::new_rc(HandleKind::CallLater, site, f);
        let id = self.inner.add_timer(deadline, TimerEntry::Callback(cb.clone()));
        TimerHandle {
            handle: Handle { inner: cb },
            when: when.unwrap_or_else(|| self.inner.clock.instant_of(deadline)),
            id,
            cancels: Rc::downgrade(&self.inner.timer_cancels),
        }
    }
}
