//! The loop's configuration: [`Builder`] collects the options (debug and trace modes, the
//! virtual clock, timer slack, eager tasks, the executor bound), checks
//! them in [`Builder::build`], and creates the loop: its id, its epoll instance and wake-up
//! eventfd, and the [`LoopInner`] every handle shares.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use evloop_syscalls as sys;
use evloop_timers::TimerQueue;

use crate::event_loop::clock::{Clock, duration_to_ns};
use crate::event_loop::error::{LoopError, LoopErrorKind};
use crate::event_loop::handle::TimerCancels;
use crate::event_loop::raw_task::{CurrentTask, OwnerToken};
use crate::event_loop::reactor::Reactor;
use crate::event_loop::remote::Shared;
use crate::event_loop::running::{acquire_timer_slack, register_local};
use crate::event_loop::slots::LoopSlots;
use crate::event_loop::task_table::TaskTable;
use crate::event_loop::trace::{TraceSink, Tracer};
use crate::event_loop::{EventLoop, LoopHandle, LoopInner, waker};

/// The largest timer slack [`Builder::timer_slack`] accepts: every timer of the loop may fire
/// that much late.
pub const MAX_TIMER_SLACK: Duration = Duration::from_secs(1);

/// Builds an [`EventLoop`] with options (asyncio's debug mode, trace mode, a virtual clock, ...).
///
/// ```
/// use std::time::Duration;
///
/// let lp = evloop::event_loop::EventLoop::builder()
///     .virtual_clock(true) // an hour of timers in milliseconds
///     .debug(true) // warn about slow callbacks
///     .executor_threads(2)
///     .build()?;
/// let out = lp.run_until_complete(async {
///     evloop::time::sleep(Duration::from_secs(3600)).await;
///     "an hour later"
/// })?;
/// assert_eq!(out, "an hour later");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "builders do nothing until they are built, run or awaited"]
pub struct Builder {
    debug: bool,
    slow_callback: Duration,
    trace: bool,
    trace_sink: Option<TraceSink>,
    virtual_clock: bool,
    timer_slack: Option<Duration>,
    eager_tasks: bool,
    executor_threads: usize,
    measure_busy: bool,
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
    /// let lp = evloop::event_loop::Builder::new().build()?; // the same as EventLoop::new()
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
            measure_busy: false,
        }
    }

    /// Debug mode: warns (on stderr) about callbacks, task steps and whole iterations slower than
    /// [`slow_callback_duration`](Builder::slow_callback_duration).
    ///
    /// ```
    /// let lp = evloop::event_loop::Builder::new().debug(true).build()?; // asyncio's debug=True
    /// assert!(lp.debug());
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
    /// let lp = evloop::event_loop::Builder::new()
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
    /// let lp = evloop::event_loop::Builder::new()
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
    /// evloop::event_loop::Builder::new()
    ///     .trace(true)
    ///     .trace_sink(move |line| sink.borrow_mut().push(line.to_string()))
    ///     .run(async {})?;
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
    /// let lp = evloop::event_loop::Builder::new().virtual_clock(true).build()?;
    /// let (wall, start) = (Instant::now(), lp.time());
    /// lp.run_until_complete(evloop::time::sleep(Duration::from_secs(24 * 3600)))?;
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
    /// use evloop::event_loop::{Builder, LoopErrorKind};
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
    /// evloop::event_loop::Builder::new().eager_tasks(true).run(async {
    ///     let t = evloop::spawn(async { 1 });
    ///     assert!(t.done()); // its first (and only) step ran inside spawn
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn eager_tasks(mut self, on: bool) -> Self {
        self.eager_tasks = on;
        self
    }

    /// The executor pool's bound (at least 1).
    ///
    /// ```
    /// let lp = evloop::event_loop::Builder::new().executor_threads(1).build()?;
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

    /// Measures every iteration's busy time (everything but the wait in the poll) into
    /// [`LoopStats::busy`](crate::event_loop::LoopStats::busy): two clock reads per iteration,
    /// so it is off by default (debug and trace modes measure it anyway). The multi-loop
    /// runtime turns it on for its loops, to compare their load.
    ///
    /// ```
    /// let lp = evloop::event_loop::Builder::new().measure_busy(true).build()?;
    /// lp.run_until_complete(async { std::thread::sleep(std::time::Duration::from_millis(2)) })?;
    /// assert!(lp.stats().busy >= std::time::Duration::from_millis(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn measure_busy(mut self, on: bool) -> Self {
        self.measure_busy = on;
        self
    }

    /// Creates the loop: an epoll instance and a wake-up eventfd (both `O_CLOEXEC`).
    ///
    /// Errors: an option out of its range ([`LoopErrorKind::InvalidConfig`], naming the
    /// option), or the OS refused the epoll instance or the eventfd.
    ///
    /// ```
    /// let lp = evloop::event_loop::Builder::new().build()?;
    /// assert!(lp.epoll_fd().is_some()); // an epoll instance (and a wake-up eventfd), O_CLOEXEC
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<EventLoop, LoopError> {
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
            shared: Arc::new(Shared::new(id, eventfd)),
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
            exception_handler: RefCell::new(None),
            debug: Cell::new(self.debug),
            slow_callback: self.slow_callback,
            tracer,
            eager_tasks: self.eager_tasks,
            slack_acquired: Cell::new(self.timer_slack.is_some()),
            executor_threads: Cell::new(self.executor_threads),
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
            load: Arc::default(),
            measure_busy: self.measure_busy,
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
