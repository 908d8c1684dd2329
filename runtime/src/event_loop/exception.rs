//! Exception handling: what a loop does with a problem it cannot return to anyone (a callback
//! or task that panicked, a server that cannot accept), asyncio's `call_exception_handler`.
//!
//! Whoever meets the problem builds an [`ExceptionContext`] and hands it to
//! [`LoopInner::report`], which passes it to the handler installed with
//! [`LoopHandle::set_exception_handler`] or, without one, to [`default_exception_handler`]
//! (one line on stderr). A handler that panics is caught too: the loop never dies of a report.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use crate::event_loop::error::Panic;
use crate::event_loop::{LoopHandle, LoopInner};

/// The kind of problem passed to the exception handler.
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use evloop::event_loop::ExceptionKind;
///
/// let lp = evloop::event_loop::EventLoop::new()?;
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
/// let lp = evloop::event_loop::EventLoop::new()?;
/// let seen = Rc::new(RefCell::new(None));
/// let s = seen.clone();
/// lp.set_exception_handler(Some(Box::new(move |_lp, ctx| {
///     // asyncio's context dict: what happened, where, and the panic.
///     *s.borrow_mut() = Some((ctx.task.clone(), ctx.panic.as_ref().map(|p| p.message().to_string())));
/// })));
/// let t = lp.create_task(async { panic!("lost") })?;
/// drop(t); // nobody will await it: its failure goes to the handler
/// lp.run_until_complete(evloop::task::yield_now())?;
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

pub(super) type ExceptionHandler = dyn Fn(&LoopHandle, &ExceptionContext);

/// A boxed exception handler, as [`LoopHandle::set_exception_handler`] takes it.
pub type BoxedExceptionHandler = Box<ExceptionHandler>;

/// The installed exception handler, as [`LoopHandle::exception_handler`] returns it.
pub type SharedExceptionHandler = Rc<ExceptionHandler>;

/// The default exception handler: one line on stderr (asyncio logs at ERROR level).
///
/// ```
/// let lp = evloop::event_loop::EventLoop::new()?;
/// // A handler that counts failures, then logs them the default way (one line on stderr).
/// let count = std::rc::Rc::new(std::cell::Cell::new(0));
/// let c = count.clone();
/// lp.set_exception_handler(Some(Box::new(move |_lp, ctx| {
///     c.set(c.get() + 1);
///     evloop::event_loop::default_exception_handler(ctx);
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

impl LoopInner {
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
}

impl LoopHandle {
    /// Replaces the exception handler (`None` restores the default, which prints to stderr).
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
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
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// assert!(lp.exception_handler().is_none());
    /// lp.set_exception_handler(Some(Box::new(|_lp, ctx| eprintln!("first: {}", ctx.message))));
    /// let first = lp.exception_handler().expect("installed");
    /// // A second handler that adds a line and then calls the first.
    /// lp.set_exception_handler(Some(Box::new(move |lp, ctx| {
    ///     eprintln!("second");
    ///     first(lp, ctx);
    /// })));
    /// # Ok::<(), evloop::event_loop::LoopError>(())
    /// ```
    pub fn exception_handler(&self) -> Option<SharedExceptionHandler> {
        self.inner.exception_handler.borrow().clone()
    }

    /// Passes `ctx` to the exception handler (asyncio's `call_exception_handler`).
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    /// use evloop::event_loop::{ExceptionContext, ExceptionKind};
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
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
}
