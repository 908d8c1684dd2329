//! A loop's life: run it ([`LoopHandle::run_forever`], [`LoopHandle::run_once`]), stop it, and
//! close it.
//!
//! Running enters a `RunGuard` (the loop becomes this thread's running loop) and repeats
//! `LoopInner::run_once` until a stop request. Closing takes everything the loop holds apart in
//! an order that lets destructors call back into the loop: tasks first, then callbacks, timers,
//! the per-loop state of higher layers, the reactor, and the loop's own fds.

use evloop_syscalls as sys;

use crate::event_loop::error::{LoopError, LoopErrorKind};
use crate::event_loop::running::{RunGuard, release_timer_slack};
use crate::event_loop::{LoopHandle, Ready, TimerEntry, waker};

impl LoopHandle {
    /// Runs until [`stop`](LoopHandle::stop) is called (asyncio's `run_forever`). `stop()` makes
    /// it return after the current iteration.
    ///
    /// Errors: the loop is closed, already running, another loop runs on this thread, or the
    /// poll failed (an OS error, which would repeat if the loop went on).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let lp = evloop::event_loop::EventLoop::builder().virtual_clock(true).build()?;
    /// let h = lp.handle();
    /// lp.call_later(Duration::from_secs(1), move || h.stop())?;
    /// lp.run_forever()?; // loop.run_forever(): until stop()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_forever(&self) -> Result<(), LoopError> {
        let _guard = RunGuard::enter(&self.inner, "run_forever")?;
        let result = loop {
            if let Err(e) = self.inner.run_once() {
                break Err(e);
            }
            if self.inner.stopping.get() {
                break Ok(());
            }
        };
        // The stop request is consumed by the run it stopped (asyncio resets `_stopping` in
        // run_forever's `finally`).
        self.inner.stopping.set(false);
        result
    }

    /// Runs exactly one iteration (for tests and teaching; asyncio's `_run_once`). Like any
    /// iteration it blocks in the poll when nothing is ready and no timer is pending, until an
    /// fd event or another thread wakes it. A `stop()` made during it is kept for the next
    /// `run_forever`.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let ran = Rc::new(Cell::new(0));
    /// let (r, h) = (ran.clone(), lp.handle());
    /// lp.call_soon(move || {
    ///     r.set(r.get() + 1);
    ///     let r = r.clone();
    ///     h.call_soon(move || r.set(r.get() + 1)).expect("open"); // waits for the next iteration
    /// })?;
    /// lp.run_once()?;
    /// assert_eq!(ran.get(), 1);
    /// lp.run_once()?;
    /// assert_eq!(ran.get(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_once(&self) -> Result<(), LoopError> {
        let _guard = RunGuard::enter(&self.inner, "run_once")?;
        self.inner.run_once()
    }

    /// Makes `run_forever` return after the current iteration. Called while the loop is not
    /// running, the next `run_forever` runs one iteration (polling without blocking) and returns.
    /// On a closed loop it does nothing (asyncio's `stop()` only sets a flag).
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// lp.stop(); // before it runs: the next run_forever runs one iteration
    /// lp.run_forever()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stop(&self) {
        self.trace(|| "  stop requested".to_string());
        self.inner.stopping.set(true);
    }

    /// Whether the loop is running.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// assert!(!lp.is_running());
    /// let h = lp.handle();
    /// assert!(lp.run_until_complete(async move { h.is_running() })?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_running(&self) -> bool {
        self.inner.running.get()
    }

    /// Whether the loop was closed.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// assert!(!lp.is_closed());
    /// lp.close()?;
    /// assert!(lp.is_closed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.closed.get()
    }

    /// Closes the loop: drops every pending task's future (their destructors run), every
    /// callback and timer (the closures of those that never ran, even where the user still
    /// holds their handles), deregisters every fd, stops the executor's threads after their current
    /// job, and closes the loop's epoll fd and eventfd. Idempotent. An error if the loop is running.
    ///
    /// ```
    /// use evloop::event_loop::LoopErrorKind;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let h = lp.handle();
    /// let err = lp.run_until_complete(async move { h.close() })?.unwrap_err();
    /// assert_eq!(err.kind(), LoopErrorKind::Running); // not while it runs
    /// lp.close()?;
    /// lp.close()?; // idempotent
    /// assert!(lp.epoll_fd().is_none()); // its fds are closed
    /// assert_eq!(lp.call_soon(|| ()).unwrap_err().kind(), LoopErrorKind::Closed);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<(), LoopError> {
        let lp = &self.inner;
        if lp.running.get() {
            return Err(LoopError::new(LoopErrorKind::Running, "close"));
        }
        if lp.closed.get() {
            return Ok(());
        }
        lp.closed.set(true);
        lp.trace(|| format!("[loop #{}] closing", lp.id));
        let (remote, eventfd) = lp.shared.close();
        drop(remote);
        // Tasks first: their futures may hold handles, timers and fds. Each collection is taken
        // out of its RefCell before its contents drop, so destructors that call back into the
        // loop find it closed instead of finding a borrow.
        waker::unregister(lp.id);
        loop {
            let tasks = lp.tasks.borrow_mut().drain();
            if tasks.is_empty() {
                break;
            }
            for t in tasks {
                match lp.task_hooks.get() {
                    Some(hooks) => (hooks.shutdown)(lp, t),
                    None => drop(t.drop_future()),
                }
            }
        }
        // A callback that never ran lets go of its closure even while the user still holds its
        // handle: a closure that captured that handle (or what holds it) would otherwise keep
        // itself alive in a cycle that nothing can run or cancel any more.
        let ready = std::mem::take(&mut *lp.ready.borrow_mut());
        for r in &ready {
            if let Ready::Callback(cb) = r {
                cb.release();
            }
        }
        drop(ready);
        let flushes = std::mem::take(&mut *lp.deferred_flushes.borrow_mut());
        drop(flushes);
        let extras = std::mem::take(&mut *lp.spare_extras.borrow_mut());
        drop(extras);
        let mut timers = std::mem::take(&mut *lp.timers.borrow_mut());
        while let Some(timer) = timers.pop() {
            if let TimerEntry::Callback(cb) = timer.payload {
                cb.release();
            }
        }
        drop(timers);
        let cancels = std::mem::take(&mut *lp.timer_cancels.ids.borrow_mut());
        drop(cancels);
        // The slots of other modules before the reactor: signal dispatch stops watching
        // (dispositions restored) and closes its eventfd; the executor pool stops its threads
        // after their current job; the pipes' SIGPIPE block ends.
        lp.close_slots();
        let reactor = lp.reactor.borrow_mut().take();
        let mut result = Ok(());
        if let Some(reactor) = reactor {
            let (callbacks, closed) = reactor.close();
            for cb in &callbacks {
                cb.release();
            }
            drop(callbacks);
            if let Err(e) = closed {
                result = Err(LoopError::io("close (epoll fd)", e));
            }
        }
        if let Some(fd) = eventfd {
            if let Err(e) = sys::close(fd) {
                result = Err(LoopError::io("close (eventfd)", e));
            }
        }
        if lp.slack_acquired.replace(false) {
            release_timer_slack();
        }
        // A handler that captured a LoopHandle would otherwise keep the loop alive forever;
        // problems reported after close go to the default handler (stderr).
        let handler = lp.exception_handler.borrow_mut().take();
        drop(handler);
        result
    }
}
