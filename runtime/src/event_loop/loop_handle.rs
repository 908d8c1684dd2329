//! The public faces of a loop: [`EventLoop`] (the owner, which closes the loop when dropped)
//! and [`LoopHandle`] (a cheap clone that tasks and callbacks keep), with the handle's
//! introspection: debug mode, [`LoopStats`], the epoll fd, the loop's id.
//!
//! Both are thin: a handle is an `Rc<LoopInner>`, and its methods live beside the concept they
//! belong to: `lifecycle` (run, stop, close), `scheduling` (`call_soon`, `call_later`, ...),
//! `fds` (`add_reader`, ...), `exception`, `remote`, and the higher layers' own `impl LoopHandle`
//! blocks (`create_task`, `create_server`, `add_signal_handler`, ...).

use std::fmt;
use std::ops::Deref;
use std::os::fd::RawFd;
use std::rc::Rc;

use crate::event_loop::error::{LoopError, LoopErrorKind};
use crate::event_loop::{Builder, LoopInner, executor, with_running};

/// An event loop, owned: dropping it closes it (see [`LoopHandle::close`]). All the loop's
/// methods are on [`LoopHandle`], which this dereferences to.
///
/// ```
/// use std::time::Duration;
/// let lp = evloop::event_loop::EventLoop::new()?;
/// let out = lp.run_until_complete(async {
///     evloop::time::sleep(Duration::from_millis(1)).await;
///     10
/// })?;
/// assert_eq!(out, 10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct EventLoop {
    pub(super) handle: LoopHandle,
}

impl EventLoop {
    /// A loop with the default options (see [`Builder::new`]).
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?; // asyncio.new_event_loop()
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
    /// let lp = evloop::event_loop::EventLoop::builder().virtual_clock(true).build()?;
    /// assert!(!lp.is_closed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// A clone of the handle, to keep beyond the owner's scope.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
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
/// let lp = evloop::event_loop::EventLoop::new()?;
/// let h: evloop::event_loop::LoopHandle = lp.handle();
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

/// Counts of what the loop holds right now (for tests and the teaching docs).
///
/// ```
/// let lp = evloop::event_loop::EventLoop::new()?;
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
    /// Time the loop spent running its iterations (everything but waiting in the poll), when
    /// it measures it: [`Builder::measure_busy`](crate::event_loop::Builder::measure_busy),
    /// debug or trace mode; zero otherwise.
    pub busy: std::time::Duration,
    /// Connections accepted for this loop by the multi-loop runtime's listeners
    /// (`evloop::runtime`); zero for a loop outside a runtime.
    pub accepted: u64,
    /// Of those, the connections still open.
    pub connections: usize,
}

impl LoopHandle {
    #[inline]
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

    /// Whether debug mode is on.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::builder().debug(false).build()?;
    /// assert!(!lp.debug());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn debug(&self) -> bool {
        self.inner.debug.get()
    }

    /// Turns debug mode on or off.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::builder().debug(false).build()?;
    /// lp.set_debug(true); // loop.set_debug(True)
    /// assert!(lp.debug());
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
    /// let lp = evloop::event_loop::EventLoop::new()?;
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
            busy: lp.load.busy(),
            accepted: lp.load.accepted(),
            connections: lp.load.live(),
        }
    }

    /// The loop's epoll fd (`None` once closed), for diagnostics and syscall-level tests.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
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
    /// let (a, b) = (evloop::event_loop::EventLoop::new()?, evloop::event_loop::EventLoop::new()?);
    /// assert!(a.same_loop(&a.handle()));
    /// assert!(!a.same_loop(&b));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn same_loop(&self, other: &LoopHandle) -> bool {
        Rc::ptr_eq(&self.inner, &other.inner)
    }

    /// The loop's number: unique in the process, counting from 1 in creation order. Debug
    /// output (`<EventLoop #2 running ...>`) and [`WrongLoopError`](crate::event_loop::WrongLoopError) name
    /// loops by it.
    ///
    /// ```
    /// let (a, b) = (evloop::event_loop::EventLoop::new()?, evloop::event_loop::EventLoop::new()?);
    /// assert!(b.id() > a.id()); // in creation order, unique in the process
    /// assert!(format!("{a:?}").contains(&format!("#{}", a.id())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> u64 {
        u64::from(self.inner.id)
    }
}
