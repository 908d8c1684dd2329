//! The life of a transport, shared by the stream [`Transport`](crate::io::protocol::Transport)
//! and the [`DatagramTransport`](crate::io::datagram::DatagramTransport): its state (open,
//! closing, closed), its reactor registration and fd, its protocol, the `connection_made` and
//! `connection_lost` calls, and the event handler that keeps an open transport alive. Each
//! transport does its own reading and writing and calls in here where its life changes:
//! [`start`] when it is made, [`close`], [`finish_close`] (`abort()`, a fatal error) and
//! [`drained`] (its queued output is gone).
//!
//! # The rules
//! - `connection_made` is scheduled (`call_soon`) by [`start`]; `connection_lost` is scheduled
//!   exactly once, when the transport closes: after its queued output is sent for `close()`
//!   (it stays closing until then), at once for `abort()` and for a fatal error (with that
//!   error). On a closed loop it runs at once instead of never.
//! - Closing deregisters the fd from the reactor before closing it (epoll tracks the open file
//!   description, which a `dup` could keep alive), and drops the queued output.
//! - Once `connection_lost` has run, or its callback was dropped unrun by a closing loop, the
//!   protocol is dropped and then the transport's [`Endpoint::released`] hook runs (a server
//!   counts the connection off): the protocol usually holds the transport, so this breaks the
//!   protocol <-> transport cycle.
//! - The registration holds the transport's event handler and the handler holds the
//!   transport: an open transport lives with no other reference, like asyncio's selector
//!   holding its callbacks. The registration lets go of the handler when the transport closes,
//!   or when the loop closes under an open transport: then the handler's destructor closes the
//!   fd, drops the queued output and releases the protocol (no `connection_lost`: the loop that
//!   would run it is gone).
//!
//! # States
//! `Open` -> `Closing` (`close()` with output queued) -> `Closed` (that output sent, or
//! `abort()`, or a fatal error meanwhile); `Open` -> `Closed` directly (`abort()`, a fatal
//! error, `close()` with nothing queued, the loop closing). `Closed` is final: the fd is
//! closed and `connection_lost` scheduled (or, when the loop closed, the protocol released).

use std::cell::{Cell, Ref, RefCell};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::panic::Location;
use std::rc::Rc;

use evloop_syscalls as sys;

use crate::event_loop::handle::{Callback, HandleKind, HandleMeta, OnceCallback};
use crate::event_loop::reactor::IoState;
use crate::event_loop::{LoopInner, Ready};

/// Where a transport is in its life (see the module documentation for the transitions).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Reading and writing.
    Open,
    /// `close()` was called with output queued: no more reads or writes; closes once the
    /// output is sent.
    Closing,
    /// The fd is closed and `connection_lost` scheduled (or the loop closed under it).
    Closed,
}

impl State {
    /// The state as the transports' `Debug` output spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            State::Open => "open",
            State::Closing => "closing",
            State::Closed => "closed",
        }
    }
}

/// What a transport adds to the shared lifecycle: its protocol's type, its event handler's work,
/// and what closing does to its own output queue.
pub(crate) trait Endpoint: Sized + 'static {
    /// The user's callbacks (`dyn Protocol`, `dyn DatagramProtocol`).
    type Protocol: ?Sized + 'static;
    /// The event handler's name in traces and handle listings.
    const HANDLER_NAME: &'static str;

    /// The shared part of the transport.
    fn lifecycle(&self) -> &Lifecycle<Self::Protocol>;
    /// Runs on every reactor event for the fd: read what is there, send what is queued.
    fn on_ready(this: &Rc<Self>);
    /// Calls the protocol's `connection_lost`.
    fn connection_lost(protocol: &mut Self::Protocol, error: Option<io::Error>);
    /// Whether output is queued that `close()` must send first.
    fn has_queued_output(&self) -> bool;
    /// Drops the queued output: the fd is closed, nothing will be sent.
    fn discard_output(&self);
    /// The fd was just closed (a datagram endpoint removes the socket file it bound).
    fn fd_closed(&self) {}
    /// The protocol was released (a server's transport counts itself off its server).
    fn released(&self) {}
}

/// The shared part of a transport: the loop, the registration, the fd, the protocol and the
/// state. Only the functions of this module close the fd, drop the protocol or change the state.
pub(crate) struct Lifecycle<P: ?Sized> {
    lp: Rc<LoopInner>,
    io: Rc<IoState>,
    /// `Some` until the transport is closed.
    fd: RefCell<Option<OwnedFd>>,
    /// `Some` until it is released; borrowed while one of its callbacks runs.
    protocol: RefCell<Option<Box<P>>>,
    state: Cell<State>,
}

impl<P: ?Sized + 'static> Lifecycle<P> {
    /// An open transport's shared part; `io` is `fd`'s registration with `lp`.
    pub(crate) fn new(lp: &Rc<LoopInner>, io: Rc<IoState>, fd: OwnedFd, protocol: Box<P>) -> Lifecycle<P> {
        Lifecycle {
            lp: lp.clone(),
            io,
            fd: RefCell::new(Some(fd)),
            protocol: RefCell::new(Some(protocol)),
            state: Cell::new(State::Open),
        }
    }

    /// The loop the transport runs on.
    #[inline]
    pub(crate) fn lp(&self) -> &Rc<LoopInner> {
        &self.lp
    }

    /// The fd's registration (its readiness bits).
    #[inline]
    pub(crate) fn io(&self) -> &IoState {
        &self.io
    }

    /// The fd, `None` once the transport is closed.
    #[inline]
    pub(crate) fn fd(&self) -> Ref<'_, Option<OwnedFd>> {
        self.fd.borrow()
    }

    /// The fd's number while the transport is open.
    pub(crate) fn raw_fd(&self) -> Option<RawFd> {
        self.fd.borrow().as_ref().map(|f| f.as_raw_fd())
    }

    #[inline]
    pub(crate) fn state(&self) -> State {
        self.state.get()
    }

    /// Neither closing nor closed.
    #[inline]
    pub(crate) fn is_open(&self) -> bool {
        self.state.get() == State::Open
    }

    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.state.get() == State::Closed
    }

    /// Runs `f` on the protocol; skipped once the protocol is released, or while one of its own
    /// callbacks runs.
    #[inline]
    pub(crate) fn with_protocol(&self, f: impl FnOnce(&mut P)) {
        if let Ok(mut p) = self.protocol.try_borrow_mut() {
            if let Some(p) = p.as_mut() {
                f(&mut **p);
            }
        }
    }

    /// Runs `f` on the protocol now if it is free (or skips it if the protocol is released);
    /// gives `f` back when the protocol is busy in one of its own callbacks, for the caller to
    /// schedule.
    pub(crate) fn try_with_protocol<F: FnOnce(&mut P)>(&self, f: F) -> Result<(), F> {
        match self.protocol.try_borrow_mut() {
            Ok(mut p) => {
                if let Some(p) = p.as_mut() {
                    f(&mut **p);
                }
                Ok(())
            }
            Err(_) => Err(f),
        }
    }

    /// Enters `Closed` unless it is there already: `false` if it was (every closing path
    /// checks this first, so each runs once).
    fn enter_closed(&self) -> bool {
        self.state.replace(State::Closed) != State::Closed
    }

    /// Closes the fd (the registration must be gone or going).
    fn close_fd(&self) -> bool {
        match self.fd.try_borrow_mut().ok().and_then(|mut fd| fd.take()) {
            Some(fd) => {
                let _ = sys::close(fd);
                true
            }
            None => false,
        }
    }
}

/// Installs `e`'s event handler in its registration and schedules `made` (the protocol's
/// `connection_made`, which needs the transport's public handle, so the caller writes it).
pub(crate) fn start<E: Endpoint>(e: &Rc<E>, site: &'static Location<'static>, made: impl FnOnce() + 'static) {
    let life = e.lifecycle();
    let handler: Rc<dyn Callback> = Rc::new(EventHandler {
        meta: HandleMeta::new(HandleKind::Io, site),
        endpoint: e.clone(),
    });
    life.io.set_handler(Some(handler));
    life.lp
        .push_ready(Ready::Callback(OnceCallback::new_rc(HandleKind::CallSoon, site, made)));
}

/// `close()`: closes once the queued output is sent ([`drained`]), at once when none is
/// queued. Idempotent.
pub(crate) fn close<E: Endpoint>(e: &Rc<E>) {
    let life = e.lifecycle();
    if !life.is_open() {
        return;
    }
    life.state.set(State::Closing);
    if !e.has_queued_output() {
        finish_close(e, None);
    }
}

/// The transport's queued output was all sent: a closing transport closes now.
#[inline]
pub(crate) fn drained<E: Endpoint>(e: &Rc<E>) {
    if e.lifecycle().state() == State::Closing {
        finish_close(e, None);
    }
}

/// Closes now (`abort()`, a fatal error, the end of `close()`): deregisters and closes the fd,
/// drops the queued output, and schedules `connection_lost(error)`, after which the protocol is
/// released. Does nothing on a closed transport.
pub(crate) fn finish_close<E: Endpoint>(e: &Rc<E>, error: Option<io::Error>) {
    let life = e.lifecycle();
    if !life.enter_closed() {
        return;
    }
    life.lp.deregister_io(&life.io);
    if life.close_fd() {
        e.fd_closed();
    }
    e.discard_output();
    let release = Release(e.clone());
    let lost = OnceCallback::new_rc(HandleKind::CallSoon, Location::caller(), move || {
        let e = &release.0;
        e.lifecycle().with_protocol(|p| E::connection_lost(p, error));
        drop(release);
    });
    if life.lp.is_closed() {
        // No loop to run it: deliver now rather than never.
        lost.run();
    } else {
        life.lp.push_ready(Ready::Callback(lost));
    }
}

/// Drops the protocol (unless one of its callbacks is running: then whoever runs it finishes
/// first), then runs the transport's `released` hook.
fn release<E: Endpoint>(e: &E) {
    let life = e.lifecycle();
    if let Ok(mut p) = life.protocol.try_borrow_mut() {
        let protocol = p.take();
        drop(p);
        drop(protocol);
    }
    e.released();
}

/// Releases the protocol when the `connection_lost` callback has run or has been dropped unrun
/// (a loop closing with it still queued): either way the protocol <-> transport cycle is broken.
struct Release<E: Endpoint>(Rc<E>);

impl<E: Endpoint> Drop for Release<E> {
    fn drop(&mut self) {
        release(&*self.0);
    }
}

/// The registration's handler: runs the transport's read/write work on each event.
struct EventHandler<E: Endpoint> {
    meta: HandleMeta,
    endpoint: Rc<E>,
}

impl<E: Endpoint> Callback for EventHandler<E> {
    #[inline]
    fn run(&self) {
        E::on_ready(&self.endpoint);
    }
    fn meta(&self) -> &HandleMeta {
        &self.meta
    }
    fn type_name(&self) -> &'static str {
        E::HANDLER_NAME
    }
}

impl<E: Endpoint> Drop for EventHandler<E> {
    /// The registration lets go of the handler when the transport closes (nothing left to do)
    /// or when the loop closes under an open transport: then the fd is closed here and the
    /// protocol released, which breaks the protocol <-> transport cycle so nothing leaks.
    fn drop(&mut self) {
        let e = &*self.endpoint;
        let life = e.lifecycle();
        if life.enter_closed() {
            if life.close_fd() {
                e.fd_closed();
            }
            e.discard_output();
            release(e);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The rules of the module documentation, on a fake transport over one end of a socket
    //! pair: each test drives the lifecycle and reads the order of events from a shared log.

    use std::os::fd::AsRawFd;

    use evloop_syscalls::{Domain, SockType};

    use super::*;
    use crate::event_loop::EventLoop;

    type Log = Rc<RefCell<Vec<String>>>;

    /// The protocol: logs its drop (`connection_lost` is logged by the endpoint).
    struct Proto(Log);

    impl Drop for Proto {
        fn drop(&mut self) {
            self.0.borrow_mut().push("protocol dropped".into());
        }
    }

    struct Fake {
        life: Lifecycle<Proto>,
        /// Bytes "queued" for sending.
        queued: Cell<usize>,
        log: Log,
        _peer: OwnedFd,
    }

    impl Endpoint for Fake {
        type Protocol = Proto;
        const HANDLER_NAME: &'static str = "fake transport";

        fn lifecycle(&self) -> &Lifecycle<Proto> {
            &self.life
        }
        fn on_ready(_this: &Rc<Self>) {}
        fn connection_lost(p: &mut Proto, error: Option<io::Error>) {
            p.0.borrow_mut().push(format!("lost {:?}", error.map(|e| e.kind())));
        }
        fn has_queued_output(&self) -> bool {
            self.queued.get() > 0
        }
        fn discard_output(&self) {
            self.queued.set(0);
        }
        fn fd_closed(&self) {
            self.log.borrow_mut().push("fd closed".into());
        }
        fn released(&self) {
            self.log.borrow_mut().push("released".into());
        }
    }

    /// A started fake transport with `queued` bytes of output, its `connection_made` run.
    fn started(lp: &EventLoop, queued: usize) -> (Rc<Fake>, Log) {
        let (fd, peer) = evloop_syscalls::socketpair(Domain::Unix, SockType::Stream).expect("socketpair");
        let io = lp.inner.register_io(fd.as_raw_fd()).expect("register");
        let log: Log = Rc::default();
        let e = Rc::new(Fake {
            life: Lifecycle::new(&lp.inner, io, fd, Box::new(Proto(log.clone()))),
            queued: Cell::new(queued),
            log: log.clone(),
            _peer: peer,
        });
        let made = log.clone();
        start(&e, Location::caller(), move || made.borrow_mut().push("made".into()));
        assert!(log.borrow().is_empty(), "connection_made is scheduled, not called");
        lp.run_once().expect("run");
        assert_eq!(*log.borrow(), ["made"]);
        log.borrow_mut().clear();
        (e, log)
    }

    #[test]
    fn close_with_nothing_queued_closes_now_and_loses_the_connection_once() {
        let lp = EventLoop::new().expect("loop");
        let registrations = lp.stats().io_registrations;
        let (e, log) = started(&lp, 0);
        assert_eq!(lp.stats().io_registrations, registrations + 1);
        close(&e);
        close(&e);
        finish_close(&e, None);
        assert_eq!(e.life.state(), State::Closed);
        assert_eq!(e.life.raw_fd(), None);
        assert_eq!(lp.stats().io_registrations, registrations, "deregistered");
        assert_eq!(*log.borrow(), ["fd closed"], "connection_lost is scheduled, not called");
        lp.run_once().expect("run");
        assert_eq!(
            *log.borrow(),
            ["fd closed", "lost None", "protocol dropped", "released"]
        );
        assert_eq!(Rc::strong_count(&e), 1, "nothing holds the transport any more");
    }

    #[test]
    fn close_waits_for_the_queued_output() {
        let lp = EventLoop::new().expect("loop");
        let (e, log) = started(&lp, 10);
        close(&e);
        assert_eq!(e.life.state(), State::Closing);
        assert!(e.life.raw_fd().is_some(), "the fd stays open while output is queued");
        close(&e);
        assert_eq!(e.life.state(), State::Closing);
        // The transport sent its queue.
        e.queued.set(0);
        drained(&e);
        assert_eq!(e.life.state(), State::Closed);
        lp.run_once().expect("run");
        assert_eq!(
            *log.borrow(),
            ["fd closed", "lost None", "protocol dropped", "released"]
        );
    }

    #[test]
    fn abort_drops_the_queued_output_and_loses_the_connection_at_once() {
        let lp = EventLoop::new().expect("loop");
        let (e, log) = started(&lp, 10);
        close(&e); // closing, waiting for the queue ...
        finish_close(&e, None); // ... abort() wins
        assert_eq!(e.life.state(), State::Closed);
        assert_eq!(e.queued.get(), 0, "the queued output is dropped");
        drained(&e);
        close(&e);
        lp.run_once().expect("run");
        assert_eq!(
            *log.borrow(),
            ["fd closed", "lost None", "protocol dropped", "released"]
        );
    }

    #[test]
    fn a_fatal_error_reaches_connection_lost() {
        let lp = EventLoop::new().expect("loop");
        let (e, log) = started(&lp, 10);
        finish_close(&e, Some(io::ErrorKind::ConnectionReset.into()));
        finish_close(&e, Some(io::ErrorKind::BrokenPipe.into()));
        lp.run_once().expect("run");
        assert_eq!(
            *log.borrow(),
            [
                "fd closed",
                "lost Some(ConnectionReset)",
                "protocol dropped",
                "released"
            ]
        );
    }

    #[test]
    fn drained_leaves_an_open_transport_open() {
        let lp = EventLoop::new().expect("loop");
        let (e, log) = started(&lp, 0);
        drained(&e);
        assert!(e.life.is_open());
        assert!(log.borrow().is_empty());
        finish_close(&e, None);
        lp.run_once().expect("run");
    }

    #[test]
    fn the_loop_closing_under_an_open_transport_releases_it_without_connection_lost() {
        let lp = EventLoop::new().expect("loop");
        let (e, log) = started(&lp, 10);
        lp.close().expect("close");
        assert_eq!(e.life.state(), State::Closed);
        assert_eq!(e.queued.get(), 0);
        assert_eq!(*log.borrow(), ["fd closed", "protocol dropped", "released"]);
        assert_eq!(Rc::strong_count(&e), 1, "the handler let go of the transport");
        finish_close(&e, None);
        assert_eq!(log.borrow().len(), 3, "closing again does nothing");
    }

    #[test]
    fn a_connection_lost_callback_dropped_unrun_still_releases_the_protocol() {
        let lp = EventLoop::new().expect("loop");
        let (e, log) = started(&lp, 0);
        close(&e);
        lp.close().expect("close"); // drops the queued connection_lost unrun
        assert_eq!(*log.borrow(), ["fd closed", "protocol dropped", "released"]);
        assert_eq!(Rc::strong_count(&e), 1);
    }

    #[test]
    fn a_busy_protocol_is_not_called_again_but_handed_back() {
        let lp = EventLoop::new().expect("loop");
        let (e, _log) = started(&lp, 0);
        let mut inner_call = None;
        e.life.with_protocol(|_| {
            inner_call = Some(e.life.try_with_protocol(|_| ()).is_err());
        });
        assert_eq!(
            inner_call,
            Some(true),
            "re-entrant: the call comes back to be scheduled"
        );
        assert!(e.life.try_with_protocol(|_| ()).is_ok());
        finish_close(&e, None);
        lp.run_once().expect("run");
        let mut called = false;
        e.life.with_protocol(|_| called = true);
        assert!(!called, "a released protocol is not called");
    }
}
