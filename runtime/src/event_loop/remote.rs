//! The thread-safe part of a loop: the remote queue other threads (and task wakers) push work
//! onto, and the eventfd that wakes the loop when it sleeps in `epoll_pwait2`.
//!
//! Other threads reach a loop only through [`Shared`]: [`RemoteHandle`] (`call_soon_threadsafe`,
//! `stop`) and the wakers of its tasks push [`Remote`] items; the loop's thread moves them to its
//! ready queue with [`LoopInner::drain_remote`], in phase 3 or before a `call_soon` of its own
//! (so scheduling stays FIFO across threads).

use std::fmt;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::panic::Location;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};

use evloop_syscalls as sys;

use crate::event_loop::error::{LoopError, LoopErrorKind};
use crate::event_loop::handle::{HandleKind, OnceCallback};
use crate::event_loop::raw_task::Notified;
use crate::event_loop::{LoopHandle, LoopInner, Ready, with_running};

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
    /// Set by phase 3 while it may block in the poll.
    pub(super) sleeping: AtomicBool,
    armed: AtomicBool,
}

fn lock_remote(m: &Mutex<RemoteState>) -> MutexGuard<'_, RemoteState> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// The thread-safe part of loop `loop_id`, with its wake-up eventfd.
    pub(super) fn new(loop_id: u32, eventfd: OwnedFd) -> Shared {
        Shared {
            loop_id,
            remote: Mutex::new(RemoteState {
                items: Vec::new(),
                closed: false,
                eventfd: Some(eventfd),
            }),
            pending: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            armed: AtomicBool::new(false),
        }
    }

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

    #[inline]
    pub(super) fn has_pending(&self) -> bool {
        self.pending.load(SeqCst)
    }

    /// Moves the queued items into `out`; with `read_eventfd`, also resets the eventfd.
    pub(super) fn drain(&self, out: &mut Vec<Remote>, read_eventfd: bool) {
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

    pub(super) fn close(&self) -> (Vec<Remote>, Option<OwnedFd>) {
        let mut st = lock_remote(&self.remote);
        st.closed = true;
        self.pending.store(false, SeqCst);
        (std::mem::take(&mut st.items), st.eventfd.take())
    }

    pub(super) fn is_closed(&self) -> bool {
        lock_remote(&self.remote).closed
    }
}

/// A `Send + Sync` handle to a loop for other threads: `call_soon_threadsafe` and `stop`.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::sync::Arc;
///
/// let lp = evloop::event_loop::EventLoop::new()?;
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
    /// let lp = evloop::event_loop::EventLoop::new()?;
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
    /// let lp = evloop::event_loop::EventLoop::new()?;
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
    /// let lp = evloop::event_loop::EventLoop::new()?;
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

impl LoopInner {
    /// Moves remote work into the ready queue; returns how many items there were.
    pub(super) fn drain_remote(self: &Rc<Self>, read_eventfd: bool) -> usize {
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
}

impl LoopHandle {
    /// A `Send + Sync` handle for other threads.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
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
}
