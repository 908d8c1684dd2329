//! Unix signals on the loop: asyncio's `add_signal_handler` / `remove_signal_handler`, and
//! awaitable signals ([`recv`], [`ctrl_c`]).
//!
//! # How a signal reaches the loop
//! The kernel runs a signal handler on whichever thread it picks, at any point, where almost
//! nothing is safe to do. evloop's handler (in the syscalls crate, `register_signal`) only sets
//! a flag and writes to an eventfd: the same idea as asyncio's `set_wakeup_fd` and libuv's
//! signal pipe. Each loop that watches signals owns one such eventfd, registered with its
//! reactor; the write wakes the loop (phase 3), and the loop's dispatch callback, running in
//! phase 5 like any callback, reads the flags and schedules the user's handlers with
//! `call_soon` and wakes the tasks awaiting [`recv`]. A burst of signals while the loop is busy
//! sets the same flag many times: the handler runs at least once, never in the signal
//! handler's context, and nothing can deadlock.
//!
//! Why not `signalfd`: it needs the signal blocked in *every* thread of the process (a thread
//! that leaves it unblocked, such as an executor or library thread created earlier, takes the
//! signal with its default action, often fatal), two loops each with a signalfd would steal
//! each other's signals, and child processes inherit the blocked mask unless every spawner
//! resets it. The handler approach leaves masks alone, broadcasts to every loop that asked,
//! and exec resets handled signals to their default in children. `docs/04-signals-and-processes.md`
//! has the longer story.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::panic::Location;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

pub use evloop_syscalls::Signal;
use evloop_syscalls::{self as sys, SignalRegistration};

use crate::event_loop::error::{LoopError, LoopErrorKind, WrongLoopError};
use crate::event_loop::handle::{Callback, HandleKind, HandleMeta, RepeatCallback};
use crate::event_loop::reactor::{IoState, ready};
use crate::event_loop::slots::LoopKey;
use crate::event_loop::trace::{AwaitKind, Awaiting, note_awaiting};
use crate::event_loop::{LoopHandle, LoopInner, Ready, with_running};

/// One watched signal of one loop.
struct Entry {
    registration: SignalRegistration,
    handler: Option<Rc<dyn Callback>>,
    /// Deliveries dispatched so far; a [`Recv`] completes once it moves past its start value.
    generation: u64,
    waiters: Vec<Waker>,
    /// Live [`Recv`] futures: the entry stays while it has a handler or a listener.
    listeners: usize,
}

/// A loop's signal machinery: one eventfd the signal handler writes to, registered with the
/// reactor, and the signals watched.
pub(crate) struct SignalState {
    eventfd: OwnedFd,
    io: Rc<IoState>,
    entries: RefCell<HashMap<i32, Entry>>,
}

/// The eventfd's event handler: collects the deliveries and hands them out.
struct Dispatch {
    meta: HandleMeta,
    lp: std::rc::Weak<LoopInner>,
}

impl Callback for Dispatch {
    fn run(&self) {
        let Some(lp) = self.lp.upgrade() else { return };
        let Some(state) = signals(&lp) else {
            return;
        };
        // Reading the eventfd back to zero wakes its writers, which the edge-triggered
        // registration reports as a new EPOLLOUT edge with no EPOLLIN. That edge carries no
        // delivery, so skip it rather than pay a read that can only give EAGAIN.
        if state.io.readiness() & ready::READABLE == 0 {
            return;
        }
        // Reset the eventfd; with an edge-triggered registration the next write raises a new edge.
        let _ = sys::eventfd_read(state.eventfd.as_fd());
        state.io.clear(ready::READABLE);
        let mut handlers = Vec::new();
        let mut wakers = Vec::new();
        {
            let mut entries = state.entries.borrow_mut();
            for (num, e) in entries.iter_mut() {
                if e.registration.take_pending() {
                    e.generation += 1;
                    lp.trace(|| format!("  signal {} delivered", Signal::new(*num).map_or("?", |s| s.name())));
                    if let Some(h) = &e.handler {
                        handlers.push(h.clone());
                    }
                    wakers.append(&mut e.waiters);
                }
            }
        }
        for h in handlers {
            lp.push_ready(Ready::Callback(h));
        }
        for w in wakers {
            w.wake();
        }
    }
    fn meta(&self) -> &HandleMeta {
        &self.meta
    }
    fn type_name(&self) -> &'static str {
        "signal dispatch"
    }
}

fn signal_state(lp: &Rc<LoopInner>, op: &'static str) -> io::Result<Rc<SignalState>> {
    if lp.is_closed() {
        return Err(LoopError::new(LoopErrorKind::Closed, op).into());
    }
    let slot = lp.slot_or_init(&SIGNALS, || RefCell::new(None));
    if let Some(state) = &*slot.borrow() {
        return Ok(state.clone());
    }
    let eventfd = sys::eventfd(0)?;
    let io = lp.register_io(eventfd.as_raw_fd())?;
    let dispatch: Rc<dyn Callback> = Rc::new(Dispatch {
        meta: HandleMeta::new(HandleKind::Io, Location::caller()),
        lp: Rc::downgrade(lp),
    });
    io.set_handler(Some(dispatch));
    let state = Rc::new(SignalState {
        eventfd,
        io,
        entries: RefCell::new(HashMap::new()),
    });
    *slot.borrow_mut() = Some(state.clone());
    Ok(state)
}

/// The loop's signal machinery, if it was created and the loop is not closed.
fn signals(lp: &LoopInner) -> Option<Rc<SignalState>> {
    lp.slot(&SIGNALS)?.borrow().clone()
}

/// Makes sure `signal` is watched by this loop; returns its current generation.
fn watch(state: &SignalState, signal: Signal) -> io::Result<u64> {
    let mut entries = state.entries.borrow_mut();
    if let Some(e) = entries.get(&signal.raw()) {
        return Ok(e.generation);
    }
    let registration = sys::register_signal(signal, state.eventfd.as_fd())?;
    entries.insert(
        signal.raw(),
        Entry {
            registration,
            handler: None,
            generation: 0,
            waiters: Vec::new(),
            listeners: 0,
        },
    );
    Ok(0)
}

/// Drops the entry of `signal` if nothing uses it any more; dropping its registration restores
/// the signal's previous disposition once no loop watches it.
fn release(state: &SignalState, signal: i32) {
    let removed = {
        let mut entries = state.entries.borrow_mut();
        match entries.get(&signal) {
            Some(e) if e.handler.is_none() && e.listeners == 0 => entries.remove(&signal),
            _ => None,
        }
    };
    drop(removed);
}

/// The loop's slot for its signal machinery, filled by the first signal handler or `recv`.
/// Closing the loop takes the state out of the slot, closes it, and drops the loop's `Rc`
/// (a [`Recv`] may keep the state a while longer).
static SIGNALS: LoopKey<RefCell<Option<Rc<SignalState>>>> = LoopKey::with_close(|slot, lp| {
    let state = slot.borrow_mut().take();
    if let Some(state) = state {
        state.close(lp);
    }
});

/// A signal, as what a task awaits (`signal::recv`): the id is the signal's number (`signal 15`).
static AWAITED_SIGNAL: AwaitKind = AwaitKind::new("signal", |n, f| write!(f, "signal {n}"));

impl SignalState {
    /// Closing the loop: the eventfd leaves the reactor, and every registration and handler is
    /// dropped (dispositions restored once no other loop watches the signal). The eventfd itself
    /// closes when the last `Rc` goes (a [`Recv`] held outside the loop may keep it a while).
    fn close(&self, lp: &Rc<LoopInner>) {
        lp.deregister_io(&self.io);
        let entries = std::mem::take(&mut *self.entries.borrow_mut());
        drop(entries);
    }
}

impl LoopHandle {
    /// Calls `f` on the loop thread, in the iteration after `signal` arrives (asyncio's
    /// `add_signal_handler`); adding again replaces the handler. Signals that arrive while the
    /// loop is busy are coalesced: the handler runs at least once.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    /// use evloop::signal::Signal;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let got = Rc::new(Cell::new(0));
    /// let (g, h) = (got.clone(), lp.handle());
    /// lp.add_signal_handler(Signal::USR1, move || {
    ///     g.set(g.get() + 1); // on the loop's thread, not in the signal handler's context
    ///     h.stop();
    /// })?;
    /// evloop_syscalls::raise_in_process(Signal::USR1)?; // kill(getpid(), SIGUSR1)
    /// lp.run_forever()?; // the delivery wakes the loop, which runs the handler
    /// assert_eq!(got.get(), 1);
    /// assert!(lp.remove_signal_handler(Signal::USR1)); // the old disposition is back
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// Errors: [`Signal::KILL`] / [`Signal::STOP`] (they cannot be caught), a closed loop.
    #[track_caller]
    pub fn add_signal_handler<F: FnMut() + 'static>(&self, signal: Signal, f: F) -> io::Result<()> {
        let signum = signal.raw();
        let state = signal_state(&self.inner, "add_signal_handler")?;
        watch(&state, signal)?;
        let cb = RepeatCallback::new_rc(HandleKind::Signal, Location::caller(), f);
        let old = state
            .entries
            .borrow_mut()
            .get_mut(&signum)
            .and_then(|e| e.handler.replace(cb));
        if let Some(old) = old {
            old.cancel();
        }
        self.trace(|| format!("  add_signal_handler({})", signal.name()));
        Ok(())
    }

    /// Prints the task tree (`LoopHandle::task_tree`: every live task, who awaits whom, and any
    /// deadlock) to stderr each time `signal` arrives: `kill -USR1 <pid>` on a stuck program
    /// shows what every task waits on. It is an ordinary signal handler of this loop (it
    /// replaces any other handler of `signal`, and `remove_signal_handler` removes it).
    ///
    /// ```
    /// use evloop::signal::Signal;
    /// evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop().unwrap();
    ///     lp.print_task_tree_on(Signal::USR1).unwrap();
    ///     assert!(lp.remove_signal_handler(Signal::USR1));
    /// })
    /// .unwrap();
    /// ```
    #[track_caller]
    pub fn print_task_tree_on(&self, signal: Signal) -> io::Result<()> {
        let lp = std::rc::Rc::downgrade(&self.inner);
        self.add_signal_handler(signal, move || {
            if let Some(inner) = lp.upgrade() {
                let tree = LoopHandle { inner }.task_tree();
                eprint!("evloop: task tree on {}:\n{tree}", signal.name());
            }
        })
    }

    /// Removes the handler of `signal`; returns whether there was one (asyncio's
    /// `remove_signal_handler`). When nothing else on this loop waits for the signal, its
    /// previous disposition is restored.
    ///
    /// ```
    /// use evloop::signal::Signal;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// assert!(!lp.remove_signal_handler(Signal::HUP)); // none installed
    /// lp.add_signal_handler(Signal::HUP, || ())?;
    /// assert!(lp.remove_signal_handler(Signal::HUP));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_signal_handler(&self, signal: Signal) -> bool {
        let signum = signal.raw();
        let Some(state) = signals(&self.inner) else {
            return false;
        };
        let old = state
            .entries
            .borrow_mut()
            .get_mut(&signum)
            .and_then(|e| e.handler.take());
        let removed = old.is_some();
        if let Some(old) = old {
            old.cancel();
        }
        release(&state, signum);
        removed
    }
}

/// Waits for the next delivery of `signal` to this process (on the loop running on this
/// thread). The signal is watched from the moment this is called (when a loop is running) or
/// first polled, so a delivery in between is not missed. A signal that cannot be caught
/// ([`Signal::KILL`], [`Signal::STOP`]) or a missing loop is an error the future returns.
///
/// ```
/// use evloop::signal::{self, Signal};
///
/// evloop::run(async {
///     let next = signal::recv(Signal::TERM); // watched from here on
///     evloop_syscalls::raise_in_process(Signal::TERM)?; // as `kill -TERM <pid>` would
///     next.await?; // the delivery: shut down cleanly instead of dying
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn recv(signal: Signal) -> Recv {
    let mut r = Recv {
        signal,
        state: None,
        loop_id: 0,
        start: 0,
        error: None,
    };
    if let Some(lp) = with_running(Rc::clone) {
        r.start_watching(&lp);
    }
    r
}

/// Waits for Ctrl-C (`SIGINT`).
///
/// ```
/// evloop::run(async {
///     let interrupted = evloop::signal::ctrl_c(); // SIGINT is caught from here on
///     evloop_syscalls::raise_in_process(evloop::signal::Signal::INT)?; // what Ctrl-C sends
///     interrupted.await?;
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn ctrl_c() -> Recv {
    recv(Signal::INT)
}

/// The future of [`recv`].
///
/// ```
/// use std::time::Duration;
/// use evloop::signal::{self, Signal};
///
/// evloop::run(async {
///     // Either the work finishes or SIGUSR2 arrives, whichever comes first.
///     let work = evloop::time::sleep(Duration::from_secs(3600));
///     let stop = signal::recv(Signal::USR2);
///     evloop_syscalls::raise_in_process(Signal::USR2)?;
///     match evloop::task::select(stop, work).await {
///         evloop::task::Either::Left(delivered) => delivered?,
///         evloop::task::Either::Right(()) => unreachable!("the signal comes first"),
///     }
///     // An uncatchable signal is an error the future returns.
///     assert!(signal::recv(Signal::KILL).await.is_err());
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Recv {
    signal: Signal,
    state: Option<Rc<SignalState>>,
    /// The loop whose signal dispatch `state` is: only its tasks can be told of a delivery.
    loop_id: u64,
    start: u64,
    error: Option<io::Error>,
}

impl Recv {
    fn start_watching(&mut self, lp: &Rc<LoopInner>) {
        let signal = self.signal;
        let watched = (|| {
            let state = signal_state(lp, "signal::recv")?;
            let start = watch(&state, signal)?;
            if let Some(e) = state.entries.borrow_mut().get_mut(&signal.raw()) {
                e.listeners += 1;
            }
            Ok::<_, io::Error>((state, start))
        })();
        match watched {
            Ok((state, start)) => {
                self.state = Some(state);
                self.loop_id = u64::from(lp.id);
                self.start = start;
            }
            Err(e) => self.error = Some(e),
        }
    }
}

impl Future for Recv {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(e) = this.error.take() {
            return Poll::Ready(Err(e));
        }
        if this.state.is_none() {
            match with_running(Rc::clone) {
                Some(lp) => this.start_watching(&lp),
                None => return Poll::Ready(Err(LoopError::new(LoopErrorKind::NoRunningLoop, "signal::recv").into())),
            }
            if let Some(e) = this.error.take() {
                return Poll::Ready(Err(e));
            }
        }
        let Some(state) = &this.state else { return Poll::Pending };
        let mut entries = state.entries.borrow_mut();
        let Some(e) = entries.get_mut(&this.signal.raw()) else {
            return Poll::Ready(Err(LoopError::new(LoopErrorKind::Closed, "signal::recv").into()));
        };
        if e.generation > this.start {
            return Poll::Ready(Ok(()));
        }
        if let Err(e) = WrongLoopError::check(this.loop_id, "signal::recv", || {
            format!("the watch of {}", this.signal.name())
        }) {
            return Poll::Ready(Err(e.into()));
        }
        if !e.waiters.iter().any(|w| w.will_wake(cx.waker())) {
            e.waiters.push(cx.waker().clone());
        }
        note_awaiting(Awaiting::Object(&AWAITED_SIGNAL, this.signal.raw() as u64));
        Poll::Pending
    }
}

impl Drop for Recv {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            let listed = match state.entries.try_borrow_mut() {
                Ok(mut entries) => match entries.get_mut(&self.signal.raw()) {
                    Some(e) => {
                        e.listeners = e.listeners.saturating_sub(1);
                        true
                    }
                    None => false,
                },
                Err(_) => false,
            };
            if listed {
                release(&state, self.signal.raw());
            }
        }
    }
}

impl std::fmt::Debug for Recv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "signal::Recv({})", self.signal)
    }
}
