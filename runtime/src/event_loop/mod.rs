//! The event loop: asyncio's `BaseEventLoop`, one iteration at a time.
//!
//! # One iteration (asyncio's `_run_once`)
//! [`LoopInner::run_once`] runs five phases, each a method named after it:
//! 1. [`drop_cancelled_timers`](LoopInner::drop_cancelled_timers): timers cancelled since the
//!    last iteration leave the heap (a cancel only flags the handle and records its id, so the
//!    heap never accumulates garbage beyond one iteration's worth).
//! 2. [`compute_poll_timeout`](LoopInner::compute_poll_timeout): zero if anything is ready or a
//!    stop is pending; else the time to the earliest timer (exact to the nanosecond, so no timer
//!    fires early); else block.
//! 3. [`poll`](LoopInner::poll): `epoll_pwait2` through the reactor. Each fd event becomes a
//!    ready callback; the wake-up eventfd means other threads left work in the remote queue
//!    (task wakes, `call_soon_threadsafe` callbacks, `stop`), which moves to the ready queue.
//! 4. [`expire_timers`](LoopInner::expire_timers): every timer with deadline <= now, earliest
//!    first and FIFO among equals, moves to the ready queue (a sleeping task's timer wakes it).
//! 5. [`run_ready`](LoopInner::run_ready): runs exactly the handles that were ready when the phase
//!    began; whatever they schedule waits for the next iteration. This is the only place user
//!    callbacks and task steps run, and no `RefCell` of the loop is borrowed while they do.
//!
//! # Ownership
//! [`EventLoop`] owns a loop: dropping it closes the loop. [`LoopHandle`] is a cheap clone that
//! tasks and callbacks keep (`get_running_loop()` returns one); it can reach a closed loop, and
//! then every operation returns a "closed" error. Closing drops every task's future, every
//! callback and timer, deregisters every fd and closes the loop's own fds, which breaks the
//! reference cycles between the loop and the tasks it holds.
//!
//! # Threads
//! The loop and everything it holds live on one thread (`Rc`, `RefCell`). The only thread-safe
//! part is [`Shared`]: the remote queue and the wake-up eventfd, reached through
//! [`RemoteHandle`] and through task wakers.
//!
//! # The `event_loop/` folder (layer 1, just above the syscalls and timers crates)
//! This file is the loop itself; beside it are the mechanisms it is made of: `handle` (callback
//! cells), `clock` (loop time), `reactor` (epoll registrations), `slab` (keyed tables), `waker`
//! (task wakers), `trace` (trace lines), `error` (every error type) and `slots` (state that
//! other modules keep per loop). Nothing here imports `task`, `io`, `sync` or `os`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::ops::Deref;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::panic::{AssertUnwindSafe, Location, catch_unwind};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;
use std::time::{Duration, Instant};

use evloop_syscalls as sys;
use evloop_timers::{TimerId, TimerQueue};

use crate::event_loop::clock::{Clock, duration_to_ns};
use crate::event_loop::error::{LoopError, LoopErrorKind, Panic};
use crate::event_loop::handle::{
    Callback, Handle, HandleKind, OnceCallback, RepeatCallback, TimerCancels, TimerHandle,
};
use crate::event_loop::raw_task::{CurrentTask, Notified, OwnerToken, TaskPtr};
use crate::event_loop::reactor::{IoState, Reactor, Side};
use crate::event_loop::slots::LoopSlots;
use crate::event_loop::task_table::TaskTable;
use crate::event_loop::trace::{TraceSink, Tracer, fmt_duration};

pub(crate) mod clock;
pub(crate) mod error;
pub(crate) mod executor;
pub(crate) mod handle;
pub(crate) mod reactor;
// The raw task cell: one of the two modules of this crate allowed `unsafe` (docs/design.md).
#[allow(unsafe_code)]
pub(crate) mod raw_task;
pub(crate) mod sites;
pub(crate) mod slab;
pub(crate) mod slots;
pub(crate) mod task_table;
pub(crate) mod trace;
pub(crate) mod waker;

/// How many empty task extras a loop keeps for reuse.
pub(crate) const SPARE_EXTRAS: usize = 1024;

/// asyncio caps a poll at one day; a longer timer simply polls again.
const MAX_POLL: Duration = Duration::from_secs(86_400);

/// The largest timer slack [`Builder::timer_slack`] accepts: every timer of the loop may fire
/// that much late.
pub const MAX_TIMER_SLACK: Duration = Duration::from_secs(1);

/// asyncio's `ACCEPT_RETRY_DELAY`: how long a server waits before it retries `accept` after
/// running out of a resource.
pub const DEFAULT_ACCEPT_RETRY_DELAY: Duration = Duration::from_secs(1);

/// The range `Builder::accept_retry_delay` and `Server::set_accept_retry_delay` accept.
const ACCEPT_RETRY_DELAY_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(3600);

/// Checks an accept retry delay: a description of the problem if it is out of range.
pub(crate) fn check_accept_retry_delay(delay: Duration) -> Result<(), String> {
    if ACCEPT_RETRY_DELAY_RANGE.contains(&delay) {
        Ok(())
    } else {
        Err(format!(
            "an accept retry delay of {delay:?} is outside {:?}..={:?} (shorter would spin, longer never retries)",
            ACCEPT_RETRY_DELAY_RANGE.start(),
            ACCEPT_RETRY_DELAY_RANGE.end()
        ))
    }
}

/// Work in the ready queue: a callback, or a task to step (a counted reference to its cell).
pub(crate) enum Ready {
    Callback(Rc<dyn Callback>),
    Task(TaskPtr),
}

/// What a timer does when it expires: schedule a callback (`call_later`) or wake a task (`sleep`).
pub(crate) enum TimerEntry {
    Callback(Rc<dyn Callback>),
    Wake(Waker),
}

/// How the loop runs tasks without knowing what a task is: the `task` module registers these
/// functions with a loop when it creates the loop's first task. The loop keeps tasks as raw
/// cells (`raw_task`) in its ready queue and table; the semantics of a step (states, results,
/// cancellation, done callbacks) are the task module's.
pub(crate) struct TaskHooks {
    /// Runs one step of a task taken off the ready queue.
    pub(crate) step: fn(&Rc<LoopInner>, TaskPtr),
    /// Drops a task's future without scheduling anything (the loop is closing).
    pub(crate) shutdown: fn(&Rc<LoopInner>, TaskPtr),
}

/// Output that a higher layer buffered while phase 5 ran, sent when the phase ends: a
/// transport's write-behind, so that every write made to one connection during one iteration
/// leaves in one send (16 pipelined responses: one `send`, not 16).
pub(crate) trait DeferredFlush {
    /// Sends what is buffered (or leaves it for the next writable edge).
    fn flush(self: Rc<Self>);
}

/// The kind of problem passed to the exception handler.
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use evloop::ExceptionKind;
///
/// let lp = evloop::EventLoop::new()?;
/// let kinds = Rc::new(RefCell::new(Vec::new()));
/// let k = kinds.clone();
/// lp.set_exception_handler(Some(Box::new(move |_lp, ctx| k.borrow_mut().push(ctx.kind))));
/// lp.call_soon(|| panic!("a callback fails"))?;
/// lp.run_until_complete(async {})?; // the loop goes on
/// assert_eq!(*kinds.borrow(), [ExceptionKind::CallbackPanicked]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExceptionKind {
    /// A callback (`call_soon`, timer, fd callback, done callback) panicked.
    CallbackPanicked,
    /// A task failed (panicked) and nobody observed it: its handle was dropped, or dropped
    /// without awaiting it (asyncio's "Task exception was never retrieved").
    TaskFailureUnobserved,
    /// A task's destructor panicked while it was being cancelled or shut down.
    DestructorPanicked,
    /// A server could not accept a connection (out of fds, ...); it keeps serving.
    ServerError,
}

/// What the exception handler receives (asyncio's `context` dict).
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
///
/// let lp = evloop::EventLoop::new()?;
/// let seen = Rc::new(RefCell::new(None));
/// let s = seen.clone();
/// lp.set_exception_handler(Some(Box::new(move |_lp, ctx| {
///     // asyncio's context dict: what happened, where, and the panic.
///     *s.borrow_mut() = Some((ctx.task.clone(), ctx.panic.as_ref().map(|p| p.message().to_string())));
/// })));
/// let t = lp.create_task(async { panic!("lost") })?;
/// drop(t); // nobody will await it: its failure goes to the handler
/// lp.run_until_complete(evloop::yield_now())?;
/// let (task, message) = seen.take().expect("reported");
/// assert!(task.is_some_and(|name| name.starts_with("Task-")));
/// assert_eq!(message.as_deref(), Some("lost"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ExceptionContext {
    /// What happened.
    pub kind: ExceptionKind,
    /// A one-line description naming the callback or task.
    pub message: String,
    /// The caught panic, if the problem was a panic.
    pub panic: Option<Panic>,
    /// The task involved, by name.
    pub task: Option<String>,
    /// The callback involved (`call_soon my::closure (src/main.rs:10:5)`).
    pub handle: Option<String>,
}

type ExceptionHandler = dyn Fn(&LoopHandle, &ExceptionContext);

/// A boxed exception handler, as [`LoopHandle::set_exception_handler`] takes it.
pub type BoxedExceptionHandler = Box<ExceptionHandler>;

/// The installed exception handler, as [`LoopHandle::get_exception_handler`] returns it.
pub type SharedExceptionHandler = Rc<ExceptionHandler>;

/// The default exception handler: one line on stderr (asyncio logs at ERROR level).
///
/// ```
/// let lp = evloop::EventLoop::new()?;
/// // A handler that counts failures, then logs them the default way (one line on stderr).
/// let count = std::rc::Rc::new(std::cell::Cell::new(0));
/// let c = count.clone();
/// lp.set_exception_handler(Some(Box::new(move |_lp, ctx| {
///     c.set(c.get() + 1);
///     evloop::default_exception_handler(ctx);
/// })));
/// lp.call_soon(|| panic!("logged"))?;
/// lp.run_until_complete(async {})?;
/// assert_eq!(count.get(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn default_exception_handler(ctx: &ExceptionContext) {
    match &ctx.panic {
        Some(p) => eprintln!("evloop: {}: {}", ctx.message, p),
        None => eprintln!("evloop: {}", ctx.message),
    }
}

// ---------------------------------------------------------------------------------------------
// The thread-safe part: remote queue and wake-up eventfd.

/// Work that other threads hand to the loop.
pub(crate) enum Remote {
    Wake(Notified),
    Call(Box<dyn FnOnce() + Send>, &'static Location<'static>),
    Stop,
}

struct RemoteState {
    items: Vec<Remote>,
    closed: bool,
    /// Written under the lock, so a remote writer can never write after close() closed it
    /// (the fd number could already belong to someone else).
    eventfd: Option<OwnedFd>,
}

/// The part of the loop other threads may touch: the remote queue and the eventfd that wakes a
/// loop blocked in `epoll_pwait2`.
///
/// The protocol keeps same-thread work free of syscalls and wakes a sleeping loop once:
/// the loop sets `sleeping` before it blocks and re-checks `pending`; a pusher sets `pending`,
/// then writes the eventfd only if `sleeping` is set and nobody armed it yet (`armed`). Both
/// sides use `SeqCst`, so either the pusher sees `sleeping` or the loop sees `pending`.
pub(crate) struct Shared {
    pub(crate) loop_id: u32,
    remote: Mutex<RemoteState>,
    pending: AtomicBool,
    sleeping: AtomicBool,
    armed: AtomicBool,
}

fn lock_remote(m: &Mutex<RemoteState>) -> MutexGuard<'_, RemoteState> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Queues `item` for the loop and wakes it if it sleeps. Gives the item back if the loop is
    /// closed (so the caller drops it outside the lock).
    pub(crate) fn push(&self, item: Remote) -> Result<(), Remote> {
        let mut st = lock_remote(&self.remote);
        if st.closed {
            return Err(item);
        }
        st.items.push(item);
        self.pending.store(true, SeqCst);
        if self.sleeping.load(SeqCst) && !self.armed.swap(true, SeqCst) {
            if let Some(fd) = &st.eventfd {
                // EAGAIN (counter at its maximum) still leaves the eventfd readable, which is all
                // that matters. Nothing else can fail for a valid eventfd; should it all the
                // same, the write is tried once more, and if that fails too the eventfd is
                // disarmed so that the next push tries again: left armed, no push would ever
                // write it again, and the loop could sleep forever with this work queued.
                let written = |r: io::Result<()>| match r {
                    Ok(()) => true,
                    Err(e) => e.kind() == io::ErrorKind::WouldBlock,
                };
                if !written(sys::eventfd_write(fd.as_fd(), 1)) && !written(sys::eventfd_write(fd.as_fd(), 1)) {
                    self.armed.store(false, SeqCst);
                }
            }
        }
        Ok(())
    }

    fn has_pending(&self) -> bool {
        self.pending.load(SeqCst)
    }

    /// Moves the queued items into `out`; with `read_eventfd`, also resets the eventfd.
    fn drain(&self, out: &mut Vec<Remote>, read_eventfd: bool) {
        let mut st = lock_remote(&self.remote);
        if read_eventfd {
            if let Some(fd) = &st.eventfd {
                let _ = sys::eventfd_read(fd.as_fd());
            }
            self.armed.store(false, SeqCst);
        }
        std::mem::swap(&mut st.items, out);
        self.pending.store(false, SeqCst);
    }

    fn close(&self) -> (Vec<Remote>, Option<OwnedFd>) {
        let mut st = lock_remote(&self.remote);
        st.closed = true;
        self.pending.store(false, SeqCst);
        (std::mem::take(&mut st.items), st.eventfd.take())
    }

    fn is_closed(&self) -> bool {
        lock_remote(&self.remote).closed
    }
}

/// A `Send + Sync` handle to a loop for other threads: `call_soon_threadsafe` and `stop`.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::sync::Arc;
///
/// let lp = evloop::EventLoop::new()?;
/// let remote = lp.remote(); // Send + Sync
/// let hits = Arc::new(AtomicU32::new(0));
/// let h = hits.clone();
/// let worker = std::thread::spawn(move || {
///     remote.call_soon_threadsafe(move || {
///         h.fetch_add(1, Ordering::SeqCst); // runs on the loop's thread
///     })?;
///     remote.stop() // after the callback: both go through one FIFO queue
/// });
/// lp.run_forever()?; // wakes at once for the thread's calls, then stops
/// worker.join().expect("no panic")?;
/// assert_eq!(hits.load(Ordering::SeqCst), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct RemoteHandle {
    shared: Arc<Shared>,
}

impl RemoteHandle {
    /// Schedules `f` to run on the loop's thread, in the loop's next iteration, waking the loop
    /// at once if it is blocked (one eventfd write per sleep, however many calls).
    ///
    /// FIFO with `call_soon`, as in asyncio: called on the loop's own thread while the loop
    /// runs, it *is* `call_soon` (no remote queue, no eventfd); from another thread its
    /// callback waits in the remote queue, which the loop moves to its ready queue at the next
    /// poll or before the next `call_soon` of the loop's thread, whichever comes first, so a
    /// callback scheduled earlier runs earlier.
    ///
    /// ```
    /// use std::sync::mpsc;
    ///
    /// let lp = evloop::EventLoop::new()?;
    /// let remote = lp.remote();
    /// let (tx, rx) = mpsc::channel();
    /// std::thread::spawn(move || {
    ///     let stopper = remote.clone();
    ///     remote.call_soon_threadsafe(move || {
    ///         tx.send(std::thread::current().id()).expect("receiver alive");
    ///         let _ = stopper.stop();
    ///     })
    /// });
    /// lp.run_forever()?; // blocked in epoll until the eventfd write wakes it
    /// assert_eq!(rx.recv()?, std::thread::current().id()); // the callback ran here, on the loop's thread
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn call_soon_threadsafe<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<(), LoopError> {
        let site = Location::caller();
        // On the loop's own thread while it runs, this is `call_soon`: queued in order with
        // the callbacks scheduled around it (asyncio appends to `_ready` directly).
        let mut f = Some(f);
        let local = with_running(|lp| {
            if lp.id != self.shared.loop_id || lp.is_closed() {
                return false;
            }
            if let Some(f) = f.take() {
                lp.call_soon_local(HandleKind::Threadsafe, site, f);
            }
            true
        });
        if local == Some(true) {
            return Ok(());
        }
        let Some(f) = f else { return Ok(()) };
        let item = Remote::Call(Box::new(f), site);
        self.shared.push(item).map_err(|item| {
            drop(item);
            LoopError::new(LoopErrorKind::Closed, "call_soon_threadsafe")
        })
    }

    /// Asks the loop to stop after its current iteration (asyncio's `loop.stop()` via
    /// `call_soon_threadsafe`).
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?;
    /// let remote = lp.remote();
    /// std::thread::spawn(move || remote.stop()).join().expect("no panic")?;
    /// lp.run_forever()?; // returns after one iteration: the stop was waiting for it
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stop(&self) -> Result<(), LoopError> {
        self.shared
            .push(Remote::Stop)
            .map_err(|_| LoopError::new(LoopErrorKind::Closed, "stop"))
    }

    /// Whether the loop was closed.
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?;
    /// let remote = lp.remote();
    /// assert!(!remote.is_closed());
    /// lp.close()?;
    /// assert!(remote.is_closed());
    /// assert!(remote.call_soon_threadsafe(|| ()).is_err()); // refused, not lost silently
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }
}

impl fmt::Debug for RemoteHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RemoteHandle(loop #{})", self.shared.loop_id)
    }
}

// ---------------------------------------------------------------------------------------------
// Per-thread state: the running loop, and the timer slack we changed.

thread_local! {
    static RUNNING: RefCell<Option<Rc<LoopInner>>> = const { RefCell::new(None) };
    /// Every loop created on this thread that still exists, so that a task can find its loop by
    /// id when that loop is not the running one (cancelling leftovers between runs, say).
    static LOCAL_LOOPS: RefCell<Vec<std::rc::Weak<LoopInner>>> = const { RefCell::new(Vec::new()) };
    /// The loop in `RUNNING` is in trace mode: one load for hot paths (a fiber switch) that
    /// only need to know whether to format a trace line.
    static RUNNING_TRACES: Cell<bool> = const { Cell::new(false) };
    /// The id of the loop in `RUNNING` (ids start at 1; 0 is "none"): one load for the
    /// wrong-loop check every parking future makes, without borrowing `RUNNING`.
    static RUNNING_ID: Cell<u32> = const { Cell::new(0) };
    /// (loops alive on this thread that asked for a slack, the slack to restore).
    static SLACK: Cell<(u32, u64)> = const { Cell::new((0, 0)) };
}

/// Runs `f` with the loop running on this thread, if there is one.
#[inline]
pub(crate) fn with_running<R>(f: impl FnOnce(&Rc<LoopInner>) -> R) -> Option<R> {
    RUNNING.with(|r| match r.try_borrow() {
        Ok(r) => r.as_ref().map(f),
        Err(_) => None,
    })
}

/// The loop with `id`, if it was created on this thread and still exists (the running loop is
/// checked first).
pub(crate) fn local_loop(id: u32) -> Option<Rc<LoopInner>> {
    if let Some(lp) = with_running(|lp| (lp.id == id).then(|| lp.clone())).flatten() {
        return Some(lp);
    }
    LOCAL_LOOPS.with(|l| {
        l.try_borrow()
            .ok()?
            .iter()
            .filter_map(std::rc::Weak::upgrade)
            .find(|lp| lp.id == id)
    })
}

fn register_local(lp: &Rc<LoopInner>) {
    LOCAL_LOOPS.with(|l| {
        if let Ok(mut loops) = l.try_borrow_mut() {
            loops.retain(|w| w.strong_count() > 0);
            loops.push(Rc::downgrade(lp));
        }
    });
}

/// Whether the loop running on this thread is in trace mode (a thread-local load, for hot
/// paths; `with_running` then gives the loop to trace on).
#[inline]
pub(crate) fn running_loop_traces() -> bool {
    RUNNING_TRACES.try_with(Cell::get).unwrap_or(false)
}

/// The id of the loop running on this thread, if any (what loop-bound objects compare theirs
/// with before they let a task wait).
#[inline]
pub(crate) fn running_loop_id() -> Option<u64> {
    match RUNNING_ID.try_with(Cell::get) {
        Ok(0) | Err(_) => None,
        Ok(id) => Some(u64::from(id)),
    }
}

/// The loop running on this thread (asyncio's `get_running_loop()`).
///
/// ```
/// use evloop::LoopErrorKind;
///
/// let err = evloop::get_running_loop().unwrap_err();
/// assert_eq!(err.kind(), LoopErrorKind::NoRunningLoop);
/// evloop::run(async {
///     let lp = evloop::get_running_loop()?; // asyncio.get_running_loop()
///     assert!(lp.is_running());
///     Ok::<(), evloop::LoopError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn get_running_loop() -> Result<LoopHandle, LoopError> {
    with_running(|lp| LoopHandle { inner: lp.clone() })
        .ok_or_else(|| LoopError::new(LoopErrorKind::NoRunningLoop, "get_running_loop"))
}

fn acquire_timer_slack(ns: u64) {
    SLACK.with(|s| {
        let (count, saved) = s.get();
        if count == 0 {
            let saved = sys::timer_slack().unwrap_or(0);
            let _ = sys::set_timer_slack(ns.max(1));
            s.set((1, saved));
        } else {
            s.set((count + 1, saved));
        }
    });
}

fn release_timer_slack() {
    SLACK.with(|s| {
        let (count, saved) = s.get();
        if count == 1 && saved != 0 {
            let _ = sys::set_timer_slack(saved);
        }
        s.set((count.saturating_sub(1), saved));
    });
}

/// Marks a loop as running on this thread for as long as it lives (panic-safe).
struct RunGuard {
    lp: Rc<LoopInner>,
}

impl RunGuard {
    fn enter(lp: &Rc<LoopInner>, op: &'static str) -> Result<RunGuard, LoopError> {
        if lp.closed.get() {
            return Err(LoopError::new(LoopErrorKind::Closed, op));
        }
        if lp.running.get() {
            return Err(LoopError::new(LoopErrorKind::AlreadyRunning, op));
        }
        let entered = RUNNING.with(|r| {
            let mut r = r.borrow_mut();
            if r.is_some() {
                return false;
            }
            *r = Some(lp.clone());
            true
        });
        if !entered {
            return Err(LoopError::new(LoopErrorKind::AnotherLoopRunning, op));
        }
        lp.running.set(true);
        let _ = RUNNING_TRACES.try_with(|t| t.set(lp.tracing()));
        let _ = RUNNING_ID.try_with(|t| t.set(lp.id));
        Ok(RunGuard { lp: lp.clone() })
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.lp.running.set(false);
        let _ = RUNNING_TRACES.try_with(|t| t.set(false));
        let _ = RUNNING_ID.try_with(|t| t.set(0));
        RUNNING.with(|r| {
            // Take it out first, drop it after the borrow ends.
            let old = r.borrow_mut().take();
            drop(old);
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Configuration.

/// Builds an [`EventLoop`] with options (asyncio's debug mode, trace mode, a virtual clock, ...).
///
/// ```
/// use std::time::Duration;
///
/// let lp = evloop::EventLoop::builder()
///     .virtual_clock(true) // an hour of timers in milliseconds
///     .debug(true) // warn about slow callbacks
///     .executor_threads(2)
///     .build()?;
/// let out = lp.run_until_complete(async {
///     evloop::sleep(Duration::from_secs(3600)).await;
///     "an hour later"
/// })?;
/// assert_eq!(out, "an hour later");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Builder {
    debug: bool,
    slow_callback: Duration,
    trace: bool,
    trace_sink: Option<TraceSink>,
    virtual_clock: bool,
    timer_slack: Option<Duration>,
    eager_tasks: bool,
    executor_threads: usize,
    accept_retry_delay: Duration,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

/// asyncio's default executor bound: `min(32, cores + 4)`.
fn default_executor_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores + 4).min(32)
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).map(|v| !v.is_empty() && v != "0").unwrap_or(false)
}

impl Builder {
    /// Defaults: trace mode if `EVLOOP_TRACE` is set (non-empty, not `0`), debug mode if
    /// `EVLOOP_DEBUG` is, 100 ms slow-callback threshold, real clock, 1 ns timer slack, lazy
    /// task start, executor bound `min(32, cores + 4)`.
    ///
    /// ```
    /// let lp = evloop::Builder::new().build()?; // the same as EventLoop::new()
    /// assert!(!lp.is_running() && !lp.is_closed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Builder {
        Builder {
            debug: env_flag("EVLOOP_DEBUG"),
            slow_callback: Duration::from_millis(100),
            trace: env_flag("EVLOOP_TRACE"),
            trace_sink: None,
            virtual_clock: false,
            timer_slack: Some(Duration::from_nanos(1)),
            eager_tasks: false,
            executor_threads: default_executor_threads(),
            accept_retry_delay: DEFAULT_ACCEPT_RETRY_DELAY,
        }
    }

    /// Debug mode: warns (on stderr) about callbacks, task steps and whole iterations slower than
    /// [`slow_callback_duration`](Builder::slow_callback_duration).
    ///
    /// ```
    /// let lp = evloop::Builder::new().debug(true).build()?; // asyncio's debug=True
    /// assert!(lp.get_debug());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn debug(mut self, on: bool) -> Self {
        self.debug = on;
        self
    }

    /// The debug-mode threshold (asyncio's `slow_callback_duration`, default 100 ms).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// // Debug mode warns on stderr about any callback or task step slower than 10 ms.
    /// let lp = evloop::Builder::new()
    ///     .debug(true)
    ///     .slow_callback_duration(Duration::from_millis(10))
    ///     .build()?;
    /// lp.run_until_complete(async {})?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slow_callback_duration(mut self, d: Duration) -> Self {
        self.slow_callback = d;
        self
    }

    /// Trace mode: a line per loop phase, handle run, task step, wake and promise completion.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    ///
    /// let lines = Rc::new(RefCell::new(Vec::new()));
    /// let sink = lines.clone();
    /// let lp = evloop::Builder::new()
    ///     .trace(true) // or EVLOOP_TRACE=1
    ///     .trace_sink(move |line| sink.borrow_mut().push(line.to_string()))
    ///     .build()?;
    /// lp.run_until_complete(async {})?;
    /// assert!(lines.borrow().iter().any(|l| l.starts_with("[iter 1]")), "{:#?}", lines.borrow());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// Sends trace lines to `sink` instead of stderr (implies nothing: trace mode must be on).
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    ///
    /// let lines = Rc::new(RefCell::new(Vec::new()));
    /// let sink = lines.clone();
    /// evloop::run_with(
    ///     evloop::Builder::new().trace(true).trace_sink(move |line| sink.borrow_mut().push(line.to_string())),
    ///     async {},
    /// )?;
    /// assert!(lines.borrow().iter().any(|l| l.contains("Task-1")), "{:#?}", lines.borrow());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn trace_sink(mut self, sink: impl FnMut(&str) + 'static) -> Self {
        self.trace_sink = Some(Box::new(sink));
        self
    }

    /// Virtual time: the clock starts at zero and moves only when the loop is idle, jumping to
    /// the next timer's deadline. An hour of timers runs in milliseconds, deterministically.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let lp = evloop::Builder::new().virtual_clock(true).build()?;
    /// let (wall, start) = (Instant::now(), lp.time());
    /// lp.run_until_complete(evloop::sleep(Duration::from_secs(24 * 3600)))?;
    /// assert!(lp.time() - start >= Duration::from_secs(24 * 3600)); // a day of loop time ...
    /// assert!(wall.elapsed() < Duration::from_secs(24 * 3600)); // ... without waiting for it
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn virtual_clock(mut self, on: bool) -> Self {
        self.virtual_clock = on;
        self
    }

    /// The timer slack the loop's thread gets while a loop lives on it (`prctl(PR_SET_TIMERSLACK)`).
    /// The kernel stretches every poll timeout by the thread's slack (50 us by default), which
    /// makes timers late; evloop sets 1 ns by default and restores the old value when the last
    /// loop of the thread closes. `None` leaves the thread's slack alone; zero is taken as 1 ns
    /// (the kernel reads 0 as "back to the default").
    ///
    /// At most [`MAX_TIMER_SLACK`] (1 s): every timer of the loop may be that late, and the
    /// kernel would take anything up to 584 years (a `Duration::MAX` slack made a 10 ms sleep
    /// never finish). [`build`](Builder::build) refuses more.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{Builder, LoopErrorKind};
    ///
    /// let lp = Builder::new().timer_slack(None).build()?; // leave the thread's slack alone
    /// drop(lp);
    /// let err = Builder::new().timer_slack(Some(Duration::from_secs(2))).build().unwrap_err();
    /// assert_eq!(err.kind(), LoopErrorKind::InvalidConfig); // more than MAX_TIMER_SLACK
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn timer_slack(mut self, slack: Option<Duration>) -> Self {
        self.timer_slack = slack;
        self
    }

    /// asyncio 3.12's eager task start for every task: the first step runs inside `create_task`.
    ///
    /// ```
    /// evloop::run_with(evloop::Builder::new().eager_tasks(true), async {
    ///     let t = evloop::spawn(async { 1 });
    ///     assert!(t.done()); // its first (and only) step ran inside spawn
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn eager_tasks(mut self, on: bool) -> Self {
        self.eager_tasks = on;
        self
    }

    /// The executor pool's bound (at least 1).
    ///
    /// ```
    /// let lp = evloop::Builder::new().executor_threads(1).build()?;
    /// let a = lp.run_in_executor(|| 1)?;
    /// let b = lp.run_in_executor(|| 2)?; // waits for the one thread
    /// let (a, b) = lp.run_until_complete(async { (a.await, b.await) })?;
    /// assert_eq!((a?, b?), (1, 2));
    /// assert_eq!(lp.stats().executor_threads, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn executor_threads(mut self, n: usize) -> Self {
        self.executor_threads = n.max(1);
        self
    }

    /// How long a server waits before it tries `accept` again after the process or system ran
    /// out of a resource (`EMFILE`, `ENFILE`, `ENOMEM`, `ENOBUFS`, ...): asyncio's
    /// `ACCEPT_RETRY_DELAY`, 1 s by default. Connections keep queueing in the kernel meanwhile;
    /// a server still out of fds when the delay ends sheds them (see
    /// [`Server::shed_connections`](crate::Server::shed_connections)). Each server can change
    /// its own with [`Server::set_accept_retry_delay`](crate::Server::set_accept_retry_delay).
    ///
    /// It must lie within 1 ms (a shorter delay would make a server that cannot accept spin)
    /// and 1 hour; [`build`](Builder::build) refuses other values.
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::{Builder, LoopErrorKind};
    ///
    /// let lp = Builder::new().accept_retry_delay(Duration::from_millis(250)).build()?;
    /// drop(lp);
    /// let err = Builder::new().accept_retry_delay(Duration::ZERO).build().unwrap_err(); // would spin
    /// assert_eq!(err.kind(), LoopErrorKind::InvalidConfig);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn accept_retry_delay(mut self, delay: Duration) -> Self {
        self.accept_retry_delay = delay;
        self
    }

    /// Creates the loop: an epoll instance and a wake-up eventfd (both `O_CLOEXEC`).
    ///
    /// Errors: an option out of its range ([`LoopErrorKind::InvalidConfig`], naming the
    /// option), or the OS refused the epoll instance or the eventfd.
    ///
    /// ```
    /// let lp = evloop::Builder::new().build()?;
    /// assert!(lp.epoll_fd().is_some()); // an epoll instance (and a wake-up eventfd), O_CLOEXEC
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<EventLoop, LoopError> {
        check_accept_retry_delay(self.accept_retry_delay)
            .map_err(|e| LoopError::invalid_config("Builder::build (accept_retry_delay)", e))?;
        if let Some(slack) = self.timer_slack {
            if slack > MAX_TIMER_SLACK {
                return Err(LoopError::invalid_config(
                    "Builder::build (timer_slack)",
                    format!(
                        "a timer slack of {slack:?} exceeds the maximum of {MAX_TIMER_SLACK:?} (every timer may be that late)"
                    ),
                ));
            }
        }
        // Loop ids are u32 (a task's header stores its loop's id); ids are never reused, so a
        // wake can never reach a later loop. Four billion loops in one process is the limit.
        static NEXT_LOOP_ID: AtomicU32 = AtomicU32::new(1);
        let id = NEXT_LOOP_ID.fetch_add(1, SeqCst);
        if id == 0 || id == u32::MAX {
            NEXT_LOOP_ID.store(u32::MAX, SeqCst);
            return Err(LoopError::new(LoopErrorKind::Io, "EventLoop::new: out of loop ids"));
        }
        let mut reactor = Reactor::new().map_err(|e| LoopError::io("EventLoop::new (epoll_create1)", e))?;
        let eventfd = sys::eventfd(0).map_err(|e| LoopError::io("EventLoop::new (eventfd)", e))?;
        reactor
            .register_wake(eventfd.as_raw_fd())
            .map_err(|e| LoopError::io("EventLoop::new (epoll_ctl)", e))?;
        if let Some(slack) = self.timer_slack {
            acquire_timer_slack(duration_to_ns(slack));
        }
        let tracer = self.trace.then(|| Tracer::new(self.trace_sink));
        let inner = LoopInner {
            id,
            shared: Arc::new(Shared {
                loop_id: id,
                remote: Mutex::new(RemoteState {
                    items: Vec::new(),
                    closed: false,
                    eventfd: Some(eventfd),
                }),
                pending: AtomicBool::new(false),
                sleeping: AtomicBool::new(false),
                armed: AtomicBool::new(false),
            }),
            clock: Clock::new(self.virtual_clock),
            ready: RefCell::new(VecDeque::with_capacity(64)),
            timers: RefCell::new(TimerQueue::new()),
            timer_cancels: Rc::new(TimerCancels::default()),
            reactor: RefCell::new(Some(reactor)),
            remote_buf: RefCell::new(Vec::new()),
            tasks: RefCell::new(TaskTable::default()),
            current: CurrentTask::default(),
            owner: OwnerToken::new(id),
            task_hooks: Cell::new(None),
            running: Cell::new(false),
            stopping: Cell::new(false),
            closed: Cell::new(false),
            iteration: Cell::new(0),
            next_task_number: Cell::new(1),
            next_promise_id: Cell::new(1),
            exception_handler: RefCell::new(None),
            debug: Cell::new(self.debug),
            slow_callback: self.slow_callback,
            tracer,
            eager_tasks: self.eager_tasks,
            accept_retry_delay: self.accept_retry_delay,
            slack_acquired: Cell::new(self.timer_slack.is_some()),
            executor_threads: Cell::new(self.executor_threads),
            sigpipe_block: RefCell::new(None),
            read_buf: RefCell::new(Vec::new()),
            slots: LoopSlots::default(),
            expired_through: Cell::new(0),
            io_wakers: RefCell::new(Vec::new()),
            deferring: Cell::new(false),
            deferred: RefCell::new(Vec::new()),
            expiring: Cell::new(false),
            woken_by_timers: RefCell::new(Vec::new()),
            deferred_flushes: RefCell::new(Vec::new()),
            spare_extras: RefCell::new(Vec::new()),
            last_site: Cell::new((0, 0)),
        };
        let handle = LoopHandle { inner: Rc::new(inner) };
        waker::register(&handle.inner.shared);
        register_local(&handle.inner);
        handle.trace(|| {
            format!(
                "[loop #{id}] created: epoll fd + eventfd, clock={}",
                if self.virtual_clock {
                    "virtual"
                } else {
                    "CLOCK_MONOTONIC"
                }
            )
        });
        Ok(EventLoop { handle })
    }
}

// ---------------------------------------------------------------------------------------------
// The loop's state.

/// Everything a loop owns. Fields are documented with the invariant they keep.
pub(crate) struct LoopInner {
    /// Process-unique id: wakers compare it with the running loop's to take the local path.
    pub(crate) id: u32,
    /// The thread-safe part, shared with wakers and remote handles.
    pub(crate) shared: Arc<Shared>,
    pub(crate) clock: Clock,
    /// Phase 5's input. Only this thread pushes (call_soon, wakes, phases 3 and 4).
    pub(crate) ready: RefCell<VecDeque<Ready>>,
    /// Pending timers. Entries whose handle was cancelled are listed in `timer_cancels` and
    /// removed by phase 1 of the next iteration.
    pub(crate) timers: RefCell<TimerQueue<TimerEntry>>,
    pub(crate) timer_cancels: Rc<TimerCancels>,
    /// `None` once closed.
    reactor: RefCell<Option<Reactor>>,
    /// Spare buffer for draining the remote queue without allocating.
    remote_buf: RefCell<Vec<Remote>>,
    /// Every task that has not finished: the loop holds them strongly (asyncio only keeps weak
    /// references, so an unreferenced task could vanish mid-run; evloop's cannot).
    pub(crate) tasks: RefCell<TaskTable>,
    /// The task being stepped, if any.
    pub(crate) current: CurrentTask,
    /// Proof of being on this loop's thread: turns remote wakes back into task references.
    pub(crate) owner: OwnerToken,
    /// How to step and shut down tasks; set by the task module with the first task.
    pub(crate) task_hooks: Cell<Option<&'static TaskHooks>>,
    pub(crate) running: Cell<bool>,
    stopping: Cell<bool>,
    closed: Cell<bool>,
    iteration: Cell<u64>,
    pub(crate) next_task_number: Cell<u64>,
    pub(crate) next_promise_id: Cell<u64>,
    exception_handler: RefCell<Option<Rc<ExceptionHandler>>>,
    debug: Cell<bool>,
    slow_callback: Duration,
    tracer: Option<Tracer>,
    pub(crate) eager_tasks: bool,
    /// The accept retry delay new servers start with (`Builder::accept_retry_delay`).
    pub(crate) accept_retry_delay: Duration,
    slack_acquired: Cell<bool>,
    /// The bound of the next executor pool (`Builder::executor_threads`, `set_default_executor`);
    /// the pool itself sits in one of the loop's slots (`executor`).
    pub(crate) executor_threads: Cell<usize>,
    /// Keeps `SIGPIPE` blocked on the loop's thread from the first pipe writer on (taken by the
    /// `pipe` module) until the loop closes, so a pipe write costs no signal-mask calls.
    pub(crate) sigpipe_block: RefCell<Option<sys::SigpipeBlock>>,
    /// State that other modules keep per loop (signal dispatch, the executor pool), in typed
    /// slots (`slots`), closed by `close()` before the reactor.
    slots: LoopSlots,
    /// The receive buffer every transport reads into (one per loop, 64 KiB once used).
    pub(crate) read_buf: RefCell<Vec<u8>>,
    /// The `now` of the last phase 4: every timer with a deadline at or before it has left the
    /// heap (a `Sleep` that completes need not cancel its timer then).
    pub(crate) expired_through: Cell<u64>,
    /// Reusable buffer for the wakers an I/O event wakes.
    io_wakers: RefCell<Vec<Waker>>,
    /// Trace mode: set during phases 1-4, whose lines wait in `deferred` for the summary line.
    deferring: Cell<bool>,
    deferred: RefCell<Vec<String>>,
    /// Set during phase 4 so that trace mode folds the wakes it causes into the iteration line.
    expiring: Cell<bool>,
    woken_by_timers: RefCell<Vec<String>>,
    /// Transports written to during this phase 5, flushed when it ends (`defer_flush`).
    deferred_flushes: RefCell<Vec<Rc<dyn DeferredFlush>>>,
    /// Tasks' extra parts (join waker, callbacks, ...) left empty when their task finished,
    /// reused by the next task that needs one (bounded by `SPARE_EXTRAS`).
    // Boxed on purpose: a spare moves into a task header as the Box it already is.
    #[allow(clippy::vec_box)]
    pub(crate) spare_extras: RefCell<Vec<Box<raw_task::TaskExtra>>>,
    /// The last task creation site interned, by address, with its id: most spawns repeat it.
    last_site: Cell<(usize, u32)>,
}

/// Counts of what the loop holds right now (for tests and the teaching docs).
///
/// ```
/// let lp = evloop::EventLoop::new()?;
/// lp.call_soon(|| ())?;
/// lp.create_task(std::future::pending::<()>())?;
/// let stats = lp.stats();
/// assert_eq!((stats.ready, stats.tasks, stats.timers), (2, 1, 0)); // a callback and a first step
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopStats {
    /// Iterations run so far.
    pub iterations: u64,
    /// Handles and task steps in the ready queue.
    pub ready: usize,
    /// Timers in the heap (including ones cancelled since the last iteration began).
    pub timers: usize,
    /// Tasks that have not finished.
    pub tasks: usize,
    /// Fds with `add_reader`/`add_writer` callbacks.
    pub fds: usize,
    /// Edge-triggered registrations: sockets and `AsyncFd`s.
    pub io_registrations: usize,
    /// Threads the executor pool has started (it starts them lazily).
    pub executor_threads: usize,
    /// Work other threads (or wakes made while the loop was not running) left in the remote
    /// queue: the next iteration will not block.
    pub remote_pending: bool,
}

struct PollStats {
    timeout: Option<Duration>,
    events: usize,
    /// Time spent blocked in the kernel (measured only in trace and debug modes).
    waited: Duration,
}

impl LoopInner {
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.get()
    }

    #[inline]
    pub(crate) fn tracing(&self) -> bool {
        self.tracer.is_some()
    }

    /// Emits a trace line; `line` is only called when trace mode is on (inlined, so that with
    /// trace mode off a call site costs one test of `tracer`).
    #[inline(always)]
    pub(crate) fn trace(&self, line: impl FnOnce() -> String) {
        if self.tracer.is_some() {
            self.emit_trace(line());
        }
    }

    #[cold]
    #[inline(never)]
    fn emit_trace(&self, line: String) {
        if let Some(t) = &self.tracer {
            if self.deferring.get() {
                self.deferred.borrow_mut().push(line);
            } else {
                t.line(&line);
            }
        }
    }

    pub(crate) fn debug(&self) -> bool {
        self.debug.get()
    }

    pub(crate) fn slow_callback(&self) -> Duration {
        self.slow_callback
    }

    /// The interned id of a task creation site (`sites::intern`), cached for the common case of
    /// a spawn from the same line as the last one.
    #[inline]
    pub(crate) fn site_id(&self, site: &'static Location<'static>) -> u32 {
        let addr = site as *const Location<'static> as usize;
        let (last, id) = self.last_site.get();
        if last == addr {
            return id;
        }
        let id = sites::intern(site);
        self.last_site.set((addr, id));
        id
    }

    /// Loop time, nanoseconds since the loop's epoch.
    pub(crate) fn now(&self) -> u64 {
        self.clock.now()
    }

    /// `call_soon` on the loop's thread, after the checks: the callback joins the ready queue
    /// behind whatever was scheduled before it, including work other threads queued remotely
    /// before this call (moved over first), so scheduling is FIFO across threads as in
    /// asyncio, whose `call_soon_threadsafe` appends to the same deque.
    pub(crate) fn call_soon_local<F: FnOnce() + 'static>(
        self: &Rc<Self>,
        kind: HandleKind,
        site: &'static Location<'static>,
        f: F,
    ) -> Rc<dyn Callback> {
        if self.shared.has_pending() {
            self.drain_remote(false);
        }
        let cb = OnceCallback::new_rc(kind, site, f);
        self.push_ready(Ready::Callback(cb.clone()));
        cb
    }

    /// Schedules a one-shot callback for the next phase 5 (call_soon without the checks).
    #[inline]
    pub(crate) fn push_ready(&self, item: Ready) {
        self.ready.borrow_mut().push_back(item);
    }

    /// Inserts a timer; returns its id.
    pub(crate) fn add_timer(&self, deadline: u64, entry: TimerEntry) -> TimerId {
        self.timers.borrow_mut().insert(deadline, entry)
    }

    /// Asks phase 1 to remove a timer (stale ids are ignored there).
    pub(crate) fn cancel_timer(&self, id: TimerId) {
        if let Ok(mut ids) = self.timer_cancels.ids.try_borrow_mut() {
            ids.push(id);
        }
    }

    /// Routes a problem to the exception handler (or stderr), never letting it panic the loop.
    pub(crate) fn report(self: &Rc<Self>, ctx: ExceptionContext) {
        let handler = self.exception_handler.borrow().clone();
        match handler {
            Some(h) => {
                let lp = LoopHandle { inner: self.clone() };
                if let Err(p) = catch_unwind(AssertUnwindSafe(|| h(&lp, &ctx))) {
                    let p = Panic::from_payload(p);
                    eprintln!(
                        "evloop: the exception handler panicked ({p}) while handling: {}",
                        ctx.message
                    );
                    default_exception_handler(&ctx);
                }
            }
            None => default_exception_handler(&ctx),
        }
    }

    /// One iteration: the five phases.
    pub(crate) fn run_once(self: &Rc<Self>) -> Result<(), LoopError> {
        let iteration = self.iteration.get() + 1;
        self.iteration.set(iteration);
        let timed = self.debug() || self.tracing();
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

    /// Moves remote work into the ready queue; returns how many items there were.
    fn drain_remote(self: &Rc<Self>, read_eventfd: bool) -> usize {
        let mut items = std::mem::take(&mut *self.remote_buf.borrow_mut());
        self.shared.drain(&mut items, read_eventfd);
        let n = items.len();
        for item in items.drain(..) {
            match item {
                Remote::Wake(task) => {
                    if let Some(task) = task.into_local(&self.owner) {
                        self.trace(|| format!("  wake {} (from another thread)", task.header().label()));
                        self.push_ready(Ready::Task(task));
                    }
                }
                Remote::Call(f, site) => {
                    let cb = OnceCallback::new_rc(HandleKind::Threadsafe, site, f);
                    self.push_ready(Ready::Callback(cb));
                }
                Remote::Stop => self.stopping.set(true),
            }
        }
        *self.remote_buf.borrow_mut() = items;
        n
    }

    /// Phase 4: every due timer moves to the ready queue (or wakes its task), earliest first.
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

    /// Registers `fd` edge-triggered with the reactor (sockets, `AsyncFd`).
    pub(crate) fn register_io(&self, fd: RawFd) -> io::Result<Rc<IoState>> {
        match self.reactor.borrow_mut().as_mut() {
            Some(r) => r.register_io(fd),
            None => Err(LoopError::new(LoopErrorKind::Closed, "register (AsyncFd)").into()),
        }
    }

    /// Deregisters an edge-triggered registration; parked wakers are woken (after the borrow)
    /// so no task waits forever on an fd that is going away.
    pub(crate) fn deregister_io(&self, state: &IoState) {
        if let Ok(mut r) = self.reactor.try_borrow_mut() {
            if let Some(r) = r.as_mut() {
                r.deregister_io(state);
            }
        }
        let (reader, writer) = state.take_wakers();
        state.set_handler(None);
        if let Some(w) = reader {
            w.wake();
        }
        if let Some(w) = writer {
            w.wake();
        }
    }

    /// Trace line for a task wake on the loop thread (folded into the iteration line in phase 4).
    pub(crate) fn trace_wake(&self, label: String) {
        if self.expiring.get() {
            self.woken_by_timers.borrow_mut().push(label);
        } else {
            self.trace(|| format!("  wake {label}"));
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

// ---------------------------------------------------------------------------------------------
// The public faces: EventLoop (owner) and LoopHandle (clone).

/// An event loop, owned: dropping it closes it (see [`LoopHandle::close`]). All the loop's
/// methods are on [`LoopHandle`], which this dereferences to.
///
/// ```
/// use std::time::Duration;
/// let lp = evloop::EventLoop::new()?;
/// let out = lp.run_until_complete(async {
///     evloop::sleep(Duration::from_millis(1)).await;
///     10
/// })?;
/// assert_eq!(out, 10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct EventLoop {
    handle: LoopHandle,
}

impl EventLoop {
    /// A loop with the default options (see [`Builder::new`]).
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?; // asyncio.new_event_loop()
    /// assert_eq!(lp.run_until_complete(async { 1 + 1 })?, 2);
    /// drop(lp); // closes it: every fd it opened is released
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Result<EventLoop, LoopError> {
        Builder::new().build()
    }

    /// A builder for a loop with options.
    ///
    /// ```
    /// let lp = evloop::EventLoop::builder().virtual_clock(true).build()?;
    /// assert!(!lp.is_closed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// A clone of the handle, to keep beyond the owner's scope.
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?;
    /// let h = lp.handle(); // cheap to clone, e.g. into callbacks
    /// lp.call_soon(move || h.stop())?;
    /// lp.run_forever()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn handle(&self) -> LoopHandle {
        self.handle.clone()
    }
}

impl Deref for EventLoop {
    type Target = LoopHandle;
    fn deref(&self) -> &LoopHandle {
        &self.handle
    }
}

impl Drop for EventLoop {
    fn drop(&mut self) {
        let _ = self.handle.close();
    }
}

impl fmt::Debug for EventLoop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.handle.fmt(f)
    }
}

/// A handle to an event loop: every loop operation (asyncio's loop methods) lives here.
///
/// ```
/// let lp = evloop::EventLoop::new()?;
/// let h: evloop::LoopHandle = lp.handle();
/// assert!(h.same_loop(&lp));
/// drop(lp); // the owner closes the loop ...
/// assert!(h.is_closed()); // ... which every handle sees
/// assert!(h.call_soon(|| ()).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct LoopHandle {
    pub(crate) inner: Rc<LoopInner>,
}

impl fmt::Debug for LoopHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lp = &self.inner;
        let state = if lp.closed.get() {
            "closed"
        } else if lp.running.get() {
            "running"
        } else {
            "stopped"
        };
        write!(f, "<EventLoop #{} {state} debug={}>", lp.id, lp.debug.get())
    }
}

impl LoopHandle {
    pub(crate) fn check_open(&self, op: &'static str) -> Result<(), LoopError> {
        if self.inner.closed.get() {
            Err(LoopError::new(LoopErrorKind::Closed, op))
        } else {
            Ok(())
        }
    }

    #[inline(always)]
    pub(crate) fn trace(&self, line: impl FnOnce() -> String) {
        self.inner.trace(line)
    }

    /// The checks `run_forever` makes, without running (so `run_until_complete` refuses before
    /// it creates a task).
    pub(crate) fn check_can_run(&self, op: &'static str) -> Result<(), LoopError> {
        let lp = &self.inner;
        if lp.closed.get() {
            return Err(LoopError::new(LoopErrorKind::Closed, op));
        }
        if lp.running.get() {
            return Err(LoopError::new(LoopErrorKind::AlreadyRunning, op));
        }
        if with_running(|_| ()).is_some() {
            return Err(LoopError::new(LoopErrorKind::AnotherLoopRunning, op));
        }
        Ok(())
    }

    /// Runs until [`stop`](LoopHandle::stop) is called (asyncio's `run_forever`). `stop()` makes
    /// it return after the current iteration.
    ///
    /// Errors: the loop is closed, already running, another loop runs on this thread, or the
    /// poll failed (an OS error, which would repeat if the loop went on).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let lp = evloop::EventLoop::builder().virtual_clock(true).build()?;
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
    /// let lp = evloop::EventLoop::new()?;
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
    /// let lp = evloop::EventLoop::new()?;
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
    /// let lp = evloop::EventLoop::new()?;
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
    /// let lp = evloop::EventLoop::new()?;
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
    /// use evloop::LoopErrorKind;
    ///
    /// let lp = evloop::EventLoop::new()?;
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
        // after their current job.
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
        let sigpipe = lp.sigpipe_block.borrow_mut().take();
        drop(sigpipe);
        if lp.slack_acquired.replace(false) {
            release_timer_slack();
        }
        // A handler that captured a LoopHandle would otherwise keep the loop alive forever;
        // problems reported after close go to the default handler (stderr).
        let handler = lp.exception_handler.borrow_mut().take();
        drop(handler);
        result
    }

    /// Loop time: `CLOCK_MONOTONIC` (or the virtual clock) as an `Instant`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let lp = evloop::EventLoop::builder().virtual_clock(true).build()?;
    /// let start = lp.time(); // loop.time()
    /// lp.run_until_complete(evloop::sleep(Duration::from_secs(5)))?;
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
    /// let lp = evloop::EventLoop::new()?;
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
    /// [`RemoteHandle::call_soon_threadsafe`] (`lp.remote()`).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    ///
    /// let lp = evloop::EventLoop::new()?;
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
    /// let lp = evloop::EventLoop::builder().virtual_clock(true).build()?;
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
    /// let lp = evloop::EventLoop::builder().virtual_clock(true).build()?;
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

    /// A `Send + Sync` handle for other threads.
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?;
    /// let remote = lp.remote();
    /// let worker = std::thread::spawn(move || remote.stop()); // from another thread
    /// lp.run_forever()?;
    /// worker.join().expect("no panic")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remote(&self) -> RemoteHandle {
        RemoteHandle {
            shared: self.inner.shared.clone(),
        }
    }

    /// Calls `f` whenever `fd` is readable (level-triggered, asyncio's `add_reader`): once per
    /// iteration for as long as it stays readable. Adding again replaces the callback.
    ///
    /// The fd stays owned by the caller, who must call [`remove_reader`](LoopHandle::remove_reader)
    /// before closing it. Errors name the fd: it is not open (`EBADF`), it cannot be polled
    /// (`EPERM`, a regular file), it is the loop's own, or the loop is closed.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::io::{Read, Write};
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    /// use std::rc::Rc;
    ///
    /// let lp = evloop::EventLoop::new()?;
    /// let (mut a, mut b) = UnixStream::pair()?;
    /// a.set_nonblocking(true)?;
    /// let fd = a.as_raw_fd();
    /// let got = Rc::new(RefCell::new(Vec::new()));
    /// let (g, h) = (got.clone(), lp.handle());
    /// lp.add_reader(fd, move || {
    ///     // Level-triggered: called while `fd` is readable, so read what is there.
    ///     let mut buf = [0; 64];
    ///     let n = a.read(&mut buf).unwrap_or(0);
    ///     g.borrow_mut().extend_from_slice(&buf[..n]);
    ///     h.stop();
    /// })?;
    /// b.write_all(b"ready")?;
    /// lp.run_forever()?;
    /// assert!(lp.remove_reader(fd)); // before the fd is closed (here: with the callback)
    /// assert_eq!(*got.borrow(), b"ready");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn add_reader<F: FnMut() + 'static>(&self, fd: RawFd, f: F) -> io::Result<()> {
        self.add_fd_callback(
            fd,
            Side::Read,
            RepeatCallback::new_rc(HandleKind::Reader, Location::caller(), f),
        )
    }

    /// Calls `f` whenever `fd` is writable (level-triggered, asyncio's `add_writer`).
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    /// use std::rc::Rc;
    ///
    /// let lp = evloop::EventLoop::new()?;
    /// let (a, _b) = UnixStream::pair()?;
    /// let calls = Rc::new(Cell::new(0));
    /// let (c, h) = (calls.clone(), lp.handle());
    /// lp.add_writer(a.as_raw_fd(), move || {
    ///     c.set(c.get() + 1); // an empty send buffer: writable
    ///     h.stop();
    /// })?;
    /// lp.run_forever()?;
    /// assert!(lp.remove_writer(a.as_raw_fd()));
    /// assert_eq!(calls.get(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn add_writer<F: FnMut() + 'static>(&self, fd: RawFd, f: F) -> io::Result<()> {
        self.add_fd_callback(
            fd,
            Side::Write,
            RepeatCallback::new_rc(HandleKind::Writer, Location::caller(), f),
        )
    }

    fn add_fd_callback(&self, fd: RawFd, side: Side, cb: Rc<dyn Callback>) -> io::Result<()> {
        let op = match side {
            Side::Read => "add_reader",
            Side::Write => "add_writer",
        };
        self.check_open(op)?;
        let (replaced, dead) = {
            let mut reactor = self.inner.reactor.borrow_mut();
            match reactor.as_mut() {
                Some(r) => {
                    let replaced = r.set_callback(fd, side, cb);
                    (replaced, r.take_graveyard())
                }
                None => return Err(LoopError::new(LoopErrorKind::Closed, op).into()),
            }
        };
        for cb in &dead {
            cb.cancel();
        }
        drop(dead);
        if let Some(old) = replaced? {
            old.cancel();
        }
        Ok(())
    }

    /// Stops watching `fd` for reading; returns whether a reader was registered.
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    ///
    /// let lp = evloop::EventLoop::new()?;
    /// let (a, _b) = UnixStream::pair()?;
    /// assert!(!lp.remove_reader(a.as_raw_fd())); // nothing registered
    /// lp.add_reader(a.as_raw_fd(), || ())?;
    /// assert!(lp.remove_reader(a.as_raw_fd()));
    /// assert_eq!(lp.stats().fds, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_reader(&self, fd: RawFd) -> bool {
        self.remove_fd_callback(fd, Side::Read)
    }

    /// Stops watching `fd` for writing; returns whether a writer was registered.
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    ///
    /// let lp = evloop::EventLoop::new()?;
    /// let (a, _b) = UnixStream::pair()?;
    /// lp.add_writer(a.as_raw_fd(), || ())?;
    /// assert!(lp.remove_writer(a.as_raw_fd()));
    /// assert!(!lp.remove_writer(a.as_raw_fd())); // already gone
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_writer(&self, fd: RawFd) -> bool {
        self.remove_fd_callback(fd, Side::Write)
    }

    fn remove_fd_callback(&self, fd: RawFd, side: Side) -> bool {
        let (removed, dead) = match self.inner.reactor.borrow_mut().as_mut() {
            Some(r) => (r.remove_callback(fd, side), r.take_graveyard()),
            None => (None, Vec::new()),
        };
        for cb in &dead {
            cb.cancel();
        }
        drop(dead);
        match removed {
            Some(cb) => {
                // A run already queued for this iteration must not happen any more.
                cb.cancel();
                true
            }
            None => false,
        }
    }

    /// Replaces the exception handler (`None` restores the default, which prints to stderr).
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    ///
    /// let lp = evloop::EventLoop::new()?;
    /// let messages = Rc::new(RefCell::new(Vec::new()));
    /// let m = messages.clone();
    /// lp.set_exception_handler(Some(Box::new(move |_lp, ctx| {
    ///     m.borrow_mut().push(ctx.panic.as_ref().map(|p| p.message().to_string()));
    /// })));
    /// lp.call_soon(|| panic!("first"))?;
    /// lp.call_soon(|| panic!("second"))?; // the loop survives both
    /// lp.run_until_complete(async {})?;
    /// assert_eq!(*messages.borrow(), [Some("first".to_string()), Some("second".to_string())]);
    /// lp.set_exception_handler(None); // back to the default (stderr)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_exception_handler(&self, handler: Option<BoxedExceptionHandler>) {
        let new: Option<Rc<ExceptionHandler>> = handler.map(Rc::from);
        let old = std::mem::replace(&mut *self.inner.exception_handler.borrow_mut(), new);
        drop(old);
    }

    /// The handler installed with [`LoopHandle::set_exception_handler`], `None` while the
    /// default one is in use (asyncio's `get_exception_handler`). Keep it to chain to it from
    /// a new handler, or to put it back later.
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?;
    /// assert!(lp.get_exception_handler().is_none());
    /// lp.set_exception_handler(Some(Box::new(|_lp, ctx| eprintln!("first: {}", ctx.message))));
    /// let first = lp.get_exception_handler().expect("installed");
    /// // A second handler that adds a line and then calls the first.
    /// lp.set_exception_handler(Some(Box::new(move |lp, ctx| {
    ///     eprintln!("second");
    ///     first(lp, ctx);
    /// })));
    /// # Ok::<(), evloop::LoopError>(())
    /// ```
    pub fn get_exception_handler(&self) -> Option<SharedExceptionHandler> {
        self.inner.exception_handler.borrow().clone()
    }

    /// Passes `ctx` to the exception handler (asyncio's `call_exception_handler`).
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    /// use evloop::{ExceptionContext, ExceptionKind};
    ///
    /// let lp = evloop::EventLoop::new()?;
    /// let calls = Rc::new(Cell::new(0));
    /// let c = calls.clone();
    /// lp.set_exception_handler(Some(Box::new(move |_lp, _ctx| c.set(c.get() + 1))));
    /// lp.call_exception_handler(ExceptionContext {
    ///     kind: ExceptionKind::ServerError,
    ///     message: "accept failed, retrying in 1 s".into(),
    ///     panic: None,
    ///     task: None,
    ///     handle: None,
    /// });
    /// assert_eq!(calls.get(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn call_exception_handler(&self, ctx: ExceptionContext) {
        self.inner.report(ctx);
    }

    /// Whether debug mode is on.
    ///
    /// ```
    /// let lp = evloop::EventLoop::builder().debug(false).build()?;
    /// assert!(!lp.get_debug());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_debug(&self) -> bool {
        self.inner.debug.get()
    }

    /// Turns debug mode on or off.
    ///
    /// ```
    /// let lp = evloop::EventLoop::builder().debug(false).build()?;
    /// lp.set_debug(true); // loop.set_debug(True)
    /// assert!(lp.get_debug());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_debug(&self, on: bool) {
        self.inner.debug.set(on);
    }

    /// What the loop holds right now.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let lp = evloop::EventLoop::new()?;
    /// let timer = lp.call_later(Duration::from_secs(60), || ())?;
    /// assert_eq!(lp.stats().timers, 1);
    /// timer.cancel();
    /// lp.stop();
    /// lp.run_forever()?; // one iteration: phase 1 drops the cancelled timer
    /// assert_eq!(lp.stats().timers, 0);
    /// assert!(lp.stats().iterations >= 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> LoopStats {
        let lp = &self.inner;
        LoopStats {
            iterations: lp.iteration.get(),
            ready: lp.ready.borrow().len(),
            timers: lp.timers.borrow().len(),
            tasks: lp.tasks.borrow().len(),
            fds: lp.reactor.borrow().as_ref().map_or(0, |r| r.len()),
            io_registrations: lp.reactor.borrow().as_ref().map_or(0, |r| r.io_len()),
            executor_threads: executor::threads(lp),
            remote_pending: lp.shared.has_pending(),
        }
    }

    /// The loop's epoll fd (`None` once closed), for diagnostics and syscall-level tests.
    ///
    /// ```
    /// let lp = evloop::EventLoop::new()?;
    /// let fd = lp.epoll_fd().expect("open");
    /// assert!(std::fs::read_link(format!("/proc/self/fd/{fd}"))?.to_string_lossy().contains("eventpoll"));
    /// lp.close()?;
    /// assert_eq!(lp.epoll_fd(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn epoll_fd(&self) -> Option<RawFd> {
        self.inner.reactor.borrow().as_ref().map(|r| r.epoll_fd())
    }

    /// Whether both handles refer to the same loop.
    ///
    /// ```
    /// let (a, b) = (evloop::EventLoop::new()?, evloop::EventLoop::new()?);
    /// assert!(a.same_loop(&a.handle()));
    /// assert!(!a.same_loop(&b));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn same_loop(&self, other: &LoopHandle) -> bool {
        Rc::ptr_eq(&self.inner, &other.inner)
    }

    /// The loop's number: unique in the process, counting from 1 in creation order. Debug
    /// output (`<EventLoop #2 running ...>`) and [`WrongLoopError`](crate::WrongLoopError) name
    /// loops by it.
    ///
    /// ```
    /// let (a, b) = (evloop::EventLoop::new()?, evloop::EventLoop::new()?);
    /// assert!(b.id() > a.id()); // in creation order, unique in the process
    /// assert!(format!("{a:?}").contains(&format!("#{}", a.id())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> u64 {
        u64::from(self.inner.id)
    }
}
