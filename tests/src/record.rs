//! Recording what happened, for the test to compare afterwards: a shared [`Log`], what the
//! loop's exception handler is given, destructors that ran ([`DropFlag`], [`DropLog`]) and polls
//! a future received ([`CountPolls`]).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use evloop::event_loop::{ExceptionContext, ExceptionKind, LoopHandle};

/// A shared, growable record of what happened, in order (by default, of strings).
pub type Log<T = String> = Rc<RefCell<Vec<T>>>;

/// A new, empty [`Log`].
pub fn log<T>() -> Log<T> {
    Rc::new(RefCell::new(Vec::new()))
}

/// Appends `s` to a string log.
pub fn push(log: &Log, s: impl Into<String>) {
    log.borrow_mut().push(s.into());
}

/// A copy of everything recorded in `log` so far.
pub fn entries<T: Clone>(log: &Log<T>) -> Vec<T> {
    log.borrow().clone()
}

/// Installs an exception handler on `lp` that records, for every context it is given, what
/// `record` makes of it (called with the handler's loop handle and the context).
pub fn record_exceptions_with<T: 'static>(
    lp: &LoopHandle,
    record: impl Fn(&LoopHandle, &ExceptionContext) -> T + 'static,
) -> Log<T> {
    let seen = log();
    let s = seen.clone();
    lp.set_exception_handler(Some(Box::new(move |h: &LoopHandle, ctx: &ExceptionContext| {
        s.borrow_mut().push(record(h, ctx));
    })));
    seen
}

/// Installs an exception handler on `lp` that records the kind and message of every context
/// ([`record_exceptions_with`] for the common case).
pub fn record_exception_messages(lp: &LoopHandle) -> Log<(ExceptionKind, String)> {
    record_exceptions_with(lp, |_, ctx| (ctx.kind, ctx.message.clone()))
}

/// Sets its flag when dropped: proves a future's destructors ran.
pub struct DropFlag(pub Rc<Cell<bool>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// A new flag, `false` until something (e.g. a [`DropFlag`]) sets it.
pub fn flag() -> Rc<Cell<bool>> {
    Rc::new(Cell::new(false))
}

/// Logs `drop <name>` when dropped: keep one alive across an await point to see in the log when
/// (and in which order) a future's destructors ran.
pub struct DropLog {
    name: String,
    log: Log,
}

impl DropLog {
    /// A guard that will log `drop <name>` to `log`.
    pub fn new(name: impl Into<String>, log: &Log) -> DropLog {
        DropLog {
            name: name.into(),
            log: log.clone(),
        }
    }
}

impl Drop for DropLog {
    fn drop(&mut self) {
        push(&self.log, format!("drop {}", self.name));
    }
}

/// A future that counts its polls in the shared cell and is pending forever (until dropped).
pub struct CountPolls(pub Rc<Cell<u32>>);

impl Future for CountPolls {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        self.0.set(self.0.get() + 1);
        Poll::Pending
    }
}
