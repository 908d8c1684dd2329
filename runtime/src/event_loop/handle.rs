//! Handles: the callbacks the loop has been asked to run, and the user's grip on them.
//!
//! `call_soon`, `call_later`, `call_at` and `add_reader`/`add_writer` each wrap the user's closure
//! in one reference-counted cell (a single allocation) that implements [`Callback`]. The loop's
//! ready queue, timer queue and reactor hold `Rc<dyn Callback>`s; the user holds a [`Handle`] or
//! [`TimerHandle`] pointing at the same cell. Cancelling sets a flag in the cell and drops the
//! closure it holds, with everything the closure captured, at once; the (small) cell stays: the
//! ready queue skips a cancelled callback when it reaches it, and a cancelled timer is also put
//! on the loop's cancel list so phase 1 of the next iteration takes it out of the heap.
//!
//! A cell never runs user code while anything in the loop is borrowed: the loop pops the `Rc`,
//! releases its borrows, then calls [`Callback::run`].

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::Location;
use std::rc::{Rc, Weak};
use std::time::Instant;

use evloop_timers::TimerId;

/// Which API created a handle; printed by trace mode and debug warnings.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum HandleKind {
    CallSoon,
    CallLater,
    Threadsafe,
    Reader,
    Writer,
    DoneCallback,
    /// The event handler of a socket owned by a transport or server.
    Io,
    /// A handler installed with `add_signal_handler`.
    Signal,
}

impl HandleKind {
    fn as_str(self) -> &'static str {
        match self {
            HandleKind::CallSoon => "call_soon",
            HandleKind::CallLater => "call_later",
            HandleKind::Threadsafe => "call_soon_threadsafe",
            HandleKind::Reader => "add_reader",
            HandleKind::Writer => "add_writer",
            HandleKind::DoneCallback => "done callback",
            HandleKind::Io => "I/O event:",
            HandleKind::Signal => "signal handler",
        }
    }
}

/// The state every callback cell shares: its cancelled flag and where it came from.
pub(crate) struct HandleMeta {
    cancelled: Cell<bool>,
    kind: HandleKind,
    site: &'static Location<'static>,
    /// The user's closure type when the cell wraps it in a closure of its own (done callbacks).
    name: Option<&'static str>,
}

impl HandleMeta {
    pub(crate) fn new(kind: HandleKind, site: &'static Location<'static>) -> Self {
        HandleMeta {
            cancelled: Cell::new(false),
            kind,
            site,
            name: None,
        }
    }
}

/// A callback the loop can run; implemented by the one-shot and repeating cells below.
pub(crate) trait Callback {
    /// Runs the callback. A one-shot callback runs at most once; later calls do nothing.
    fn run(&self);
    /// Its flag and origin.
    fn meta(&self) -> &HandleMeta;
    /// The closure's type name (`my_crate::main::{{closure}}`), for trace lines.
    fn type_name(&self) -> &'static str;

    fn cancelled(&self) -> bool {
        self.meta().cancelled.get()
    }

    /// Marks the callback cancelled and drops the user's closure at once, with everything it
    /// captured (asyncio's `Handle.cancel` drops its callback and arguments too). The cell
    /// itself stays until the ready queue, timer heap or reactor lets go of it. Never called
    /// while the loop holds a borrow: the closure's destructor may call back into the loop.
    fn cancel(&self) {
        self.meta().cancelled.set(true);
        self.release();
    }

    /// Drops the user's closure (cells that wrap one); a no-op for the loop's own handlers.
    fn release(&self) {}

    /// `call_soon demo::main::{{closure}} (src/main.rs:10:5)`.
    fn describe(&self) -> String {
        let m = self.meta();
        let name = short_type_name(m.name.unwrap_or_else(|| self.type_name()));
        format!("{} {name} ({})", m.kind.as_str(), m.site)
    }
}

/// A closure's type name without generic arguments, for trace lines:
/// `evloop::task::<impl LoopHandle>::run_until_complete<my::main::{{closure}}>::{{closure}}`
/// becomes `evloop::task::run_until_complete::{{closure}}`.
pub(crate) fn short_type_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    while out.contains("::::") {
        out = out.replace("::::", "::");
    }
    out
}

/// A `FnOnce` callback: `call_soon`, `call_later`, `call_at`, done callbacks.
pub(crate) struct OnceCallback<F> {
    meta: HandleMeta,
    f: Cell<Option<F>>,
}

impl<F: FnOnce() + 'static> OnceCallback<F> {
    pub(crate) fn new_rc(kind: HandleKind, site: &'static Location<'static>, f: F) -> Rc<dyn Callback> {
        Rc::new(OnceCallback {
            meta: HandleMeta::new(kind, site),
            f: Cell::new(Some(f)),
        })
    }

    /// A cell wrapping `f` that describes itself as `name` (the closure `f` wraps).
    pub(crate) fn named_rc(
        kind: HandleKind,
        site: &'static Location<'static>,
        name: &'static str,
        f: F,
    ) -> Rc<dyn Callback> {
        let mut meta = HandleMeta::new(kind, site);
        meta.name = Some(name);
        Rc::new(OnceCallback {
            meta,
            f: Cell::new(Some(f)),
        })
    }
}

impl<F: FnOnce()> Callback for OnceCallback<F> {
    fn run(&self) {
        if let Some(f) = self.f.take() {
            f();
        }
    }
    fn release(&self) {
        drop(self.f.take());
    }
    fn meta(&self) -> &HandleMeta {
        &self.meta
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<F>()
    }
}

/// A `FnMut` callback run every time its fd is ready: `add_reader`, `add_writer`.
pub(crate) struct RepeatCallback<F> {
    meta: HandleMeta,
    /// `None` once cancelled (the closure is dropped then, or right after the run that
    /// cancelled it).
    f: RefCell<Option<F>>,
}

impl<F: FnMut() + 'static> RepeatCallback<F> {
    pub(crate) fn new_rc(kind: HandleKind, site: &'static Location<'static>, f: F) -> Rc<dyn Callback> {
        Rc::new(RepeatCallback {
            meta: HandleMeta::new(kind, site),
            f: RefCell::new(Some(f)),
        })
    }
}

impl<F: FnMut()> Callback for RepeatCallback<F> {
    fn run(&self) {
        // A callback that re-enters itself (it cannot, short of calling the loop recursively)
        // is skipped rather than panicking on the RefCell.
        if let Ok(mut f) = self.f.try_borrow_mut() {
            if let Some(f) = f.as_mut() {
                f();
            }
        }
        // Cancelled while it ran (an fd callback that removed itself): its closure could not
        // be dropped then, so it goes now.
        if self.cancelled() {
            self.release();
        }
    }
    fn release(&self) {
        // While the closure runs it is borrowed: `run` drops it when it returns.
        let f = match self.f.try_borrow_mut() {
            Ok(mut f) => f.take(),
            Err(_) => None,
        };
        drop(f);
    }
    fn meta(&self) -> &HandleMeta {
        &self.meta
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<F>()
    }
}

/// A scheduled callback (asyncio's `Handle`), returned by `call_soon` and friends.
///
/// Cancelling before it runs means it never runs; cancelling again, or after it ran, does nothing.
/// Cancelling drops the closure, and everything it captured, at once (not when the handle is
/// dropped and the loop gets to the cancelled entry).
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// let lp = evloop::event_loop::EventLoop::new()?;
/// let ran = Rc::new(Cell::new(false));
/// let r = ran.clone();
/// let handle = lp.call_soon(move || r.set(true))?;
/// handle.cancel(); // before it runs: it never runs
/// lp.run_until_complete(async {})?;
/// assert!(!ran.get());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Handle {
    pub(crate) inner: Rc<dyn Callback>,
}

impl Handle {
    /// Cancels the callback if it has not run yet, dropping its closure now. Idempotent.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let big = Rc::new(vec![0u8; 1 << 20]);
    /// let captured = big.clone();
    /// let handle = lp.call_soon(move || drop(captured))?;
    /// handle.cancel(); // the closure, and what it captured, is dropped now
    /// assert_eq!(Rc::strong_count(&big), 1);
    /// handle.cancel(); // idempotent
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(&self) {
        self.inner.cancel();
    }

    /// Whether [`cancel`](Handle::cancel) was called.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let handle = lp.call_soon(|| ())?;
    /// assert!(!handle.cancelled());
    /// handle.cancel();
    /// assert!(handle.cancelled());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancelled(&self) -> bool {
        self.inner.cancelled()
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.cancelled() { " cancelled" } else { "" };
        write!(f, "<Handle{state} {}>", self.inner.describe())
    }
}

/// Identifies a done callback, for `remove_done_callback` on tasks and promises.
///
/// ```
/// evloop::run(async {
///     let t = evloop::spawn(async {});
///     let id: evloop::event_loop::CallbackId = t.add_done_callback(|_| ());
///     assert_eq!(t.remove_done_callback(id), 1); // the id names the callback to remove
///     t.await
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallbackId(pub(crate) u64);

/// The loop's list of cancelled timers, drained by phase 1 of each iteration.
#[derive(Default)]
pub(crate) struct TimerCancels {
    pub(crate) ids: RefCell<Vec<TimerId>>,
}

/// A callback scheduled for a point in time (asyncio's `TimerHandle`), returned by `call_later`
/// and `call_at`.
///
/// ```
/// use std::time::Duration;
///
/// let lp = evloop::event_loop::EventLoop::builder().virtual_clock(true).build()?;
/// let timer = lp.call_later(Duration::from_secs(30), || unreachable!("cancelled"))?;
/// assert_eq!(timer.when(), lp.time() + Duration::from_secs(30));
/// timer.cancel();
/// lp.run_until_complete(evloop::time::sleep(Duration::from_secs(60)))?; // past the deadline
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TimerHandle {
    pub(crate) handle: Handle,
    pub(crate) when: Instant,
    pub(crate) id: TimerId,
    pub(crate) cancels: Weak<TimerCancels>,
}

impl TimerHandle {
    /// Cancels the timer: it will not run, its closure is dropped now, and the next loop
    /// iteration removes its (now small) entry from the timer heap (no garbage accumulates).
    /// Idempotent; a no-op once the callback has run.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let timer = lp.call_later(Duration::from_secs(3600), || ())?;
    /// timer.cancel();
    /// lp.stop();
    /// lp.run_forever()?; // the next iteration removes the entry from the heap
    /// assert_eq!(lp.stats().timers, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(&self) {
        if self.handle.cancelled() {
            return;
        }
        self.handle.cancel();
        if let Some(c) = self.cancels.upgrade() {
            if let Ok(mut ids) = c.ids.try_borrow_mut() {
                ids.push(self.id);
            }
        }
    }

    /// Whether [`cancel`](TimerHandle::cancel) was called.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let timer = lp.call_later(Duration::from_secs(1), || ())?;
    /// assert!(!timer.cancelled());
    /// timer.cancel();
    /// assert!(timer.cancelled());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancelled(&self) -> bool {
        self.handle.cancelled()
    }

    /// The deadline this timer was scheduled for.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let lp = evloop::event_loop::EventLoop::builder().virtual_clock(true).build()?;
    /// let at = lp.time() + Duration::from_secs(5);
    /// assert_eq!(lp.call_at(at, || ())?.when(), at); // TimerHandle.when()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn when(&self) -> Instant {
        self.when
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.cancelled() { " cancelled" } else { "" };
        write!(
            f,
            "<TimerHandle{state} when={:?} {}>",
            self.when,
            self.handle.inner.describe()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_callback_runs_once_and_cancel_is_a_flag() {
        let hits = Rc::new(Cell::new(0));
        let h = hits.clone();
        let cb = OnceCallback::new_rc(HandleKind::CallSoon, Location::caller(), move || h.set(h.get() + 1));
        cb.run();
        cb.run();
        assert_eq!(hits.get(), 1);
        let handle = Handle { inner: cb };
        assert!(!handle.cancelled());
        handle.cancel();
        handle.cancel();
        assert!(handle.cancelled());
        assert!(format!("{handle:?}").contains("call_soon"));
    }

    #[test]
    fn type_names_lose_their_generic_arguments() {
        assert_eq!(
            short_type_name(
                "evloop::task::<impl evloop::event_loop::LoopHandle>::run_until_complete<a::b<u8>>::{{closure}}"
            ),
            "evloop::task::run_until_complete::{{closure}}"
        );
        assert_eq!(
            short_type_name("demo::wait_all<u64>::{{closure}}"),
            "demo::wait_all::{{closure}}"
        );
    }

    #[test]
    fn repeat_callback_runs_every_time() {
        let hits = Rc::new(Cell::new(0));
        let h = hits.clone();
        let cb = RepeatCallback::new_rc(HandleKind::Reader, Location::caller(), move || h.set(h.get() + 1));
        cb.run();
        cb.run();
        assert_eq!(hits.get(), 2);
        assert!(cb.describe().starts_with("add_reader"));
    }
}
