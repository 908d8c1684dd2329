//! One iteration of the loop, asyncio's `_run_once`: [`LoopInner::run_once`] and its five
//! phases, each a method named after it (the module documentation of `event_loop` lists them),
//! plus what phase 5 needs to run a callback (trace, slow-callback warning, panic report) and to
//! flush the output transports buffered while it ran.
//!
//! Data flows one way: timers, fd events and remote work become [`Ready`] items in phases 1-4,
//! and phase 5 runs exactly the items that were ready when it began.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};

use evloop_syscalls as sys;

use crate::event_loop::error::{LoopError, LoopErrorKind, Panic};
use crate::event_loop::handle::Callback;
use crate::event_loop::trace::fmt_duration;
use crate::event_loop::{DeferredFlush, ExceptionContext, ExceptionKind, LoopInner, Ready, TimerEntry};

/// asyncio caps a poll at one day; a longer timer simply polls again.
const MAX_POLL: Duration = Duration::from_secs(86_400);

struct PollStats {
    timeout: Option<Duration>,
    events: usize,
    /// Time spent blocked in the kernel (measured only in trace and debug modes).
    waited: Duration,
}

impl LoopInner {
    /// One iteration: the five phases.
    pub(crate) fn run_once(self: &Rc<Self>) -> Result<(), LoopError> {
        let iteration = self.iteration.get() + 1;
        self.iteration.set(iteration);
        let timed = self.measure_busy || self.debug() || self.tracing();
        let started = timed.then(Instant::now);

        // Trace lines of phases 1-4 (remote wakes, stale events) are held back so that they
        // print under the iteration's summary line, in the order things happened.
        self.deferring.set(self.tracing());
        let dropped = self.drop_cancelled_timers();
        let timeout = self.compute_poll_timeout();
        let polled = self.poll(timeout, timed);
        let (expired, max_late) = match polled {
            Ok(_) => self.expire_timers(),
            Err(_) => (0, 0),
        };
        self.deferring.set(false);
        let polled = match polled {
            Ok(p) => p,
            Err(e) => {
                self.deferred.borrow_mut().clear();
                return Err(e);
            }
        };

        self.trace(|| {
            let timeout = match polled.timeout {
                None => "none (block)".to_string(),
                Some(t) => fmt_duration(t),
            };
            let mut line = format!("[iter {iteration}] ");
            if dropped > 0 {
                line += &format!("dropped {dropped} cancelled timer{} | ", plural(dropped));
            }
            line += &format!(
                "poll timeout={timeout} -> {} event{}",
                polled.events,
                plural(polled.events)
            );
            line += &format!(" | expired {expired} timer{}", plural(expired));
            if expired > 0 {
                line += &format!(" (late {})", fmt_duration(Duration::from_nanos(max_late)));
                let woken = std::mem::take(&mut *self.woken_by_timers.borrow_mut());
                if !woken.is_empty() {
                    line += &format!(" -> wake {}", woken.join(", "));
                }
            }
            let ready = self.ready.borrow().len();
            line += &format!(" | run {ready} handle{}", plural(ready));
            line
        });
        if self.tracing() {
            let deferred = std::mem::take(&mut *self.deferred.borrow_mut());
            for line in deferred {
                self.trace(|| line);
            }
        }

        let ran = self.run_ready();

        if let Some(started) = started {
            // The iteration's busy time: everything but the wait inside the poll.
            let busy = started.elapsed().saturating_sub(polled.waited);
            self.load.add_busy(busy);
            self.trace(|| {
                format!(
                    "[iter {iteration}] end: ran {ran} handle{} in {} busy",
                    plural(ran),
                    fmt_duration(busy)
                )
            });
            if self.debug() && busy >= self.slow_callback {
                eprintln!(
                    "evloop: warning: iteration {iteration} was busy for {} ({ran} handles run; the loop could not serve I/O meanwhile)",
                    fmt_duration(busy)
                );
            }
        }
        Ok(())
    }

    /// Phase 1: cancelled timers leave the heap; their payloads are dropped after the borrow.
    pub(crate) fn drop_cancelled_timers(&self) -> usize {
        if self.timer_cancels.ids.borrow().is_empty() {
            return 0;
        }
        let ids = std::mem::take(&mut *self.timer_cancels.ids.borrow_mut());
        let mut n = 0;
        for id in &ids {
            // The payload is dropped after the borrow ends: its destructor may touch the timers.
            let payload = self.timers.borrow_mut().cancel(*id);
            n += usize::from(payload.is_some());
            drop(payload);
        }
        // Hand the (emptied) vector back so steady-state cancels do not allocate.
        let mut ids = ids;
        ids.clear();
        if let Ok(mut slot) = self.timer_cancels.ids.try_borrow_mut() {
            if slot.is_empty() {
                *slot = ids;
            }
        }
        n
    }

    /// Phase 2: how long phase 3 may block.
    pub(crate) fn compute_poll_timeout(&self) -> Option<Duration> {
        if !self.ready.borrow().is_empty() || self.stopping.get() || self.shared.has_pending() {
            return Some(Duration::ZERO);
        }
        let deadline = self.timers.borrow().peek_deadline()?;
        if self.clock.is_virtual() {
            // Virtual time never sleeps for a timer; phase 3 jumps the clock instead.
            return Some(Duration::ZERO);
        }
        // Exact nanoseconds: epoll_pwait2 sleeps at least this long, so the timer is due when
        // the poll returns. The epoll_wait fallback rounds up to whole milliseconds.
        let now = self.clock.now();
        Some(Duration::from_nanos(deadline.saturating_sub(now)).min(MAX_POLL))
    }

    /// Phase 3: wait for I/O, then turn events and remote work into ready work.
    fn poll(self: &Rc<Self>, timeout: Option<Duration>, timed: bool) -> Result<PollStats, LoopError> {
        let mut timeout = timeout;
        let blocking = timeout != Some(Duration::ZERO);
        if blocking {
            self.shared.sleeping.store(true, SeqCst);
            if self.shared.has_pending() {
                timeout = Some(Duration::ZERO);
            }
        }
        let wait_started = timed.then(Instant::now);
        let waited = match self.reactor.borrow_mut().as_mut() {
            Some(r) => r.wait(timeout),
            None => return Err(LoopError::new(LoopErrorKind::Closed, "poll")),
        };
        let wait_time = wait_started.map_or(Duration::ZERO, |t| t.elapsed());
        if blocking {
            self.shared.sleeping.store(false, SeqCst);
        }
        let n = waited.map_err(|e| {
            let op = match sys::epoll_wait_timeout_call() {
                "epoll_wait" => "poll (epoll_wait)",
                _ => "poll (epoll_pwait2)",
            };
            LoopError::io(op, e)
        })?;

        let (dispatched, wakers) = {
            let mut reactor = self.reactor.borrow_mut();
            let mut ready = self.ready.borrow_mut();
            match reactor.as_mut() {
                Some(r) => {
                    let d = r.dispatch(n, &mut ready);
                    let wakers = r.has_wakers().then(|| {
                        let mut wakers = std::mem::take(&mut *self.io_wakers.borrow_mut());
                        r.take_wakers(&mut wakers);
                        wakers
                    });
                    (d, wakers)
                }
                None => Default::default(),
            }
        };
        if let Some(mut wakers) = wakers {
            // Tasks parked on I/O are woken with no loop borrow held: a wake pushes onto
            // `ready`.
            for w in wakers.drain(..) {
                w.wake();
            }
            *self.io_wakers.borrow_mut() = wakers;
        }
        let mut remote = 0;
        if dispatched.woken || self.shared.has_pending() {
            remote = self.drain_remote(dispatched.woken);
        }
        if self.clock.is_virtual() && n == 0 && remote == 0 && !self.stopping.get() && self.ready.borrow().is_empty() {
            if let Some(deadline) = self.timers.borrow().peek_deadline() {
                self.clock.advance_to(deadline);
            }
        }
        if dispatched.stale > 0 {
            self.trace(|| format!("  dropped {} event(s) for closed registrations", dispatched.stale));
        }
        Ok(PollStats {
            timeout,
            events: n,
            waited: wait_time,
        })
    }

    /// Returns how many expired and the largest lateness in nanoseconds.
    pub(crate) fn expire_timers(&self) -> (usize, u64) {
        // No timer, no clock read: an I/O-only iteration costs nothing here.
        if self.timers.borrow().is_empty() {
            return (0, 0);
        }
        let now = self.clock.now();
        self.expiring.set(true);
        self.expired_through.set(now);
        let mut count = 0;
        let mut max_late = 0;
        loop {
            let expired = self.timers.borrow_mut().pop_expired(now);
            let Some(e) = expired else { break };
            count += 1;
            max_late = max_late.max(now - e.deadline);
            match e.payload {
                TimerEntry::Callback(cb) => {
                    if !cb.cancelled() {
                        self.push_ready(Ready::Callback(cb));
                    }
                }
                TimerEntry::Wake(w) => w.wake(),
            }
        }
        self.expiring.set(false);
        (count, max_late)
    }

    /// Phase 5: run what was ready when the phase began. Returns how many ran.
    pub(crate) fn run_ready(self: &Rc<Self>) -> usize {
        let n = self.ready.borrow().len();
        let mut ran = 0;
        for _ in 0..n {
            let item = self.ready.borrow_mut().pop_front();
            match item {
                None => break,
                Some(Ready::Callback(cb)) => {
                    if !cb.cancelled() {
                        self.run_callback(&*cb);
                        ran += 1;
                    }
                }
                Some(Ready::Task(task)) => {
                    if let Some(hooks) = self.task_hooks.get() {
                        (hooks.step)(self, task);
                        ran += 1;
                    }
                }
            }
        }
        self.flush_deferred();
        ran
    }

    /// Asks for `f.flush()` at the end of the current (or next) phase 5. The caller keeps a
    /// flag so that it asks once per iteration.
    pub(crate) fn defer_flush(&self, f: Rc<dyn DeferredFlush>) {
        self.deferred_flushes.borrow_mut().push(f);
    }

    /// The end of phase 5: send what transports buffered while it ran. A flush may schedule
    /// callbacks (`connection_lost`) or run a protocol's `pause_writing`/`resume_writing`; a
    /// panic there is reported like a callback's. Flushes asked for by flushes run too.
    fn flush_deferred(self: &Rc<Self>) {
        // One at a time, so that a flush may ask for more (a `resume_writing` that writes) and
        // nothing is borrowed while a flush runs; the order among transports does not matter.
        loop {
            let next = self.deferred_flushes.borrow_mut().pop();
            let Some(f) = next else { break };
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| f.flush())) {
                self.report(ExceptionContext {
                    kind: ExceptionKind::CallbackPanicked,
                    message: "exception in a transport's write flush".to_string(),
                    panic: Some(Panic::from_payload(p)),
                    task: None,
                    handle: None,
                });
            }
        }
    }

    fn run_callback(self: &Rc<Self>, cb: &dyn Callback) {
        self.trace(|| format!("  run {}", cb.describe()));
        let started = self.debug().then(Instant::now);
        let result = catch_unwind(AssertUnwindSafe(|| cb.run()));
        if let Some(started) = started {
            let took = started.elapsed();
            if took >= self.slow_callback {
                eprintln!(
                    "evloop: warning: executing {} took {}",
                    cb.describe(),
                    fmt_duration(took)
                );
            }
        }
        if let Err(p) = result {
            let desc = cb.describe();
            self.report(ExceptionContext {
                kind: ExceptionKind::CallbackPanicked,
                message: format!("exception in callback {desc}"),
                panic: Some(Panic::from_payload(p)),
                task: None,
                handle: Some(desc),
            });
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
