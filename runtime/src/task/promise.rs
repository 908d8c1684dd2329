//! Promises: asyncio's `Future`, a value that will be set later (`loop.create_future()`).
//!
//! A [`Promise<T>`] is a shared handle (clone it freely) to a cell that is pending, finished with
//! a value, or cancelled. Code that wants the value awaits the promise: the awaiting future
//! stores its task's waker in the promise and returns `Pending`. `set_result` stores the value,
//! wakes every stored waker (each wake queues its task on the loop) and schedules the done
//! callbacks with `call_soon`, in registration order, never running them inline; that is
//! asyncio's `Future.__schedule_callbacks`. Many tasks may await one promise; each gets a clone
//! of the value.
//!
//! Misuse is an error value, never a panic: setting a result twice gives an
//! [`InvalidStateError`], reading a pending one gives [`PromiseError::Pending`].

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::{Future, IntoFuture};
use std::panic::Location;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use crate::event_loop::error::WrongLoopError;
use crate::event_loop::handle::{CallbackId, HandleKind, OnceCallback};
use crate::event_loop::slots::CounterKey;
use crate::event_loop::trace::{AwaitKind, Awaiting, note_awaiting};
use crate::event_loop::{LoopHandle, LoopInner, Ready};
use crate::task::error::{InvalidStateError, PromiseError};

enum State<T> {
    Pending,
    Finished(T),
    Cancelled,
}

type PromiseCallback<T> = Box<dyn FnOnce(&Promise<T>)>;

/// A registered done callback: id, the closure's type name and where it was added.
type PromiseEntry<T> = (CallbackId, &'static str, &'static Location<'static>, PromiseCallback<T>);

struct Inner<T> {
    id: u64,
    lp: Weak<LoopInner>,
    /// The loop's id: only its tasks may wait for the promise (see `WrongLoopError`).
    loop_id: u64,
    state: RefCell<State<T>>,
    /// Wakers of the futures awaiting this promise; a dropped awaiter leaves `None` in its slot.
    waiters: RefCell<Vec<Option<Waker>>>,
    callbacks: RefCell<Vec<PromiseEntry<T>>>,
    next_callback: Cell<u64>,
}

/// A value that will be provided later (asyncio's `Future`). See the module documentation.
///
/// ```
/// let lp = evloop::event_loop::EventLoop::new()?;
/// let p = lp.create_future::<&str>(); // loop.create_future()
/// let setter = p.clone();
/// lp.call_soon(move || setter.set_result("later").expect("pending"))?;
/// let got = lp.run_until_complete(p.wait())?; // await fut
/// assert_eq!(got, Ok("later"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Promise<T> {
    inner: Rc<Inner<T>>,
}

impl<T> Clone for Promise<T> {
    fn clone(&self) -> Self {
        Promise {
            inner: self.inner.clone(),
        }
    }
}

/// The ids of a loop's promises (`Promise#N`), from 1: a per-loop counter of the task layer.
static PROMISE_IDS: CounterKey = CounterKey::new();

impl LoopHandle {
    /// A new pending promise bound to this loop (asyncio's `loop.create_future()`).
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let p = lp.create_future::<u32>();
    /// assert!(!p.done());
    /// p.set_result(1).expect("pending");
    /// assert_eq!(p.result(), Ok(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_future<T: 'static>(&self) -> Promise<T> {
        let lp = &self.inner;
        let id = lp.next_count(&PROMISE_IDS);
        Promise {
            inner: Rc::new(Inner {
                id,
                lp: Rc::downgrade(lp),
                loop_id: u64::from(lp.id),
                state: RefCell::new(State::Pending),
                waiters: RefCell::new(Vec::new()),
                callbacks: RefCell::new(Vec::new()),
                next_callback: Cell::new(0),
            }),
        }
    }
}

impl<T: 'static> Promise<T> {
    /// Its number in the loop (`Promise#N` in trace lines).
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let (a, b) = (lp.create_future::<()>(), lp.create_future::<()>());
    /// assert_ne!(a.id(), b.id());
    /// assert!(format!("{a:?}").contains(&format!("Promise#{}", a.id())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The loop it belongs to (asyncio's `Future.event_loop()`); `None` only once that loop is
    /// gone (its `EventLoop` and every `LoopHandle` dropped): a promise does not keep its loop
    /// alive.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let p = lp.create_future::<u32>();
    /// assert!(p.event_loop().is_some_and(|l| l.same_loop(&lp)));
    /// drop(lp);
    /// assert!(p.event_loop().is_none());
    /// # Ok::<(), evloop::event_loop::LoopError>(())
    /// ```
    pub fn event_loop(&self) -> Option<LoopHandle> {
        self.inner.lp.upgrade().map(|inner| LoopHandle { inner })
    }

    fn label(&self) -> String {
        format!("Promise#{}", self.inner.id)
    }

    fn state_name(&self) -> &'static str {
        match &*self.inner.state.borrow() {
            State::Pending => "pending",
            State::Finished(_) => "finished",
            State::Cancelled => "cancelled",
        }
    }

    /// Finished or cancelled.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let p = lp.create_future::<()>();
    /// assert!(!p.done());
    /// p.cancel();
    /// assert!(p.done()); // cancelled counts as done
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn done(&self) -> bool {
        !matches!(*self.inner.state.borrow(), State::Pending)
    }

    /// Cancelled.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let p = lp.create_future::<()>();
    /// p.set_result(()).expect("pending");
    /// assert!(!p.cancelled());
    /// assert!(!p.cancel()); // already done: false, nothing changes
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancelled(&self) -> bool {
        matches!(*self.inner.state.borrow(), State::Cancelled)
    }

    /// Stores the value, wakes every awaiter and schedules the done callbacks. An
    /// [`InvalidStateError`] if the promise is already finished or cancelled.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let p = lp.create_future::<u8>();
    /// assert!(p.set_result(1).is_ok());
    /// let err = p.set_result(2).unwrap_err(); // asyncio's InvalidStateError, not a panic
    /// assert_eq!(err.state(), "finished");
    /// assert_eq!(p.result(), Ok(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_result(&self, value: T) -> Result<(), InvalidStateError> {
        {
            let mut st = self.inner.state.borrow_mut();
            if !matches!(*st, State::Pending) {
                drop(st);
                return Err(InvalidStateError {
                    op: "set_result",
                    object: self.label(),
                    state: self.state_name(),
                });
            }
            *st = State::Finished(value);
        }
        self.complete("set_result");
        Ok(())
    }

    /// Cancels the promise: awaiters get [`PromiseError::Cancelled`], done callbacks are
    /// scheduled. Returns false if it was already done.
    ///
    /// ```
    /// use evloop::task::PromiseError;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let p = lp.create_future::<u8>();
    /// let waiter = lp.create_task(p.wait())?;
    /// assert!(p.cancel());
    /// let got = lp.run_until_complete(waiter)??;
    /// assert!(matches!(got, Err(PromiseError::Cancelled { .. }))); // the awaiter sees CancelledError
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(&self) -> bool {
        {
            let mut st = self.inner.state.borrow_mut();
            if !matches!(*st, State::Pending) {
                return false;
            }
            *st = State::Cancelled;
        }
        self.complete("cancel");
        true
    }

    fn complete(&self, how: &str) {
        let waiters = std::mem::take(&mut *self.inner.waiters.borrow_mut());
        let callbacks = std::mem::take(&mut *self.inner.callbacks.borrow_mut());
        let lp = self.inner.lp.upgrade();
        let mut woken = 0;
        for w in waiters.into_iter().flatten() {
            w.wake();
            woken += 1;
        }
        let scheduled = callbacks.len();
        match &lp {
            Some(lp) if !lp.is_closed() => {
                for (_, name, site, cb) in callbacks {
                    let me = self.clone();
                    let f = move || cb(&me);
                    lp.push_ready(Ready::Callback(OnceCallback::named_rc(
                        HandleKind::DoneCallback,
                        site,
                        name,
                        f,
                    )));
                }
            }
            // No loop to run them on: they can never run.
            _ => drop(callbacks),
        }
        if let Some(lp) = &lp {
            lp.trace(|| {
                format!(
                    "  {} {how} -> woke {woken} awaiter{}, scheduled {scheduled} callback{}",
                    self.label(),
                    if woken == 1 { "" } else { "s" },
                    if scheduled == 1 { "" } else { "s" }
                )
            });
        }
    }

    /// Adds a callback run with `call_soon` when the promise completes (at once, scheduled, if it
    /// already has). Callbacks run in the order they were added.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let p = lp.create_future::<u32>();
    /// let log = Rc::new(RefCell::new(Vec::new()));
    /// for name in ["first", "second"] {
    ///     let log = log.clone();
    ///     p.add_done_callback(move |p| log.borrow_mut().push(format!("{name}: {:?}", p.result())));
    /// }
    /// p.set_result(5).expect("pending");
    /// assert!(log.borrow().is_empty()); // scheduled with call_soon, not run inline
    /// lp.run_until_complete(async {})?; // one run of the loop runs them
    /// assert_eq!(*log.borrow(), ["first: Ok(5)", "second: Ok(5)"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn add_done_callback<F: FnOnce(&Promise<T>) + 'static>(&self, f: F) -> CallbackId {
        let id = CallbackId(self.inner.next_callback.get());
        self.inner.next_callback.set(id.0 + 1);
        if self.done() {
            if let Some(lp) = self.inner.lp.upgrade() {
                if !lp.is_closed() {
                    let me = self.clone();
                    let name = std::any::type_name::<F>();
                    let cb = OnceCallback::named_rc(HandleKind::DoneCallback, Location::caller(), name, move || f(&me));
                    lp.push_ready(Ready::Callback(cb));
                }
            }
        } else {
            self.inner
                .callbacks
                .borrow_mut()
                .push((id, std::any::type_name::<F>(), Location::caller(), Box::new(f)));
        }
        id
    }

    /// Removes a callback that has not been scheduled yet; returns how many were removed (0 or 1).
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let p = lp.create_future::<()>();
    /// let id = p.add_done_callback(|_| unreachable!("removed"));
    /// assert_eq!(p.remove_done_callback(id), 1);
    /// assert_eq!(p.remove_done_callback(id), 0);
    /// p.set_result(()).expect("pending");
    /// lp.run_until_complete(async {})?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_done_callback(&self, id: CallbackId) -> usize {
        let removed: Vec<PromiseEntry<T>> = {
            let mut cbs = self.inner.callbacks.borrow_mut();
            let (gone, kept) = std::mem::take(&mut *cbs).into_iter().partition(|(cid, ..)| *cid == id);
            *cbs = kept;
            gone
        };
        removed.len()
    }

    /// A future for the value that does not need `T: Clone` of the promise's users: it gives a
    /// clone of the value when the promise finishes.
    ///
    /// ```
    /// evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let p = lp.create_future::<String>();
    ///     // Two tasks wait for one promise; each gets a clone of the value.
    ///     let a = evloop::spawn(p.wait());
    ///     let b = evloop::spawn(p.wait());
    ///     evloop::task::yield_now().await;
    ///     p.set_result("shared".into()).expect("pending");
    ///     assert_eq!(a.await?, Ok("shared".to_string()));
    ///     assert_eq!(b.await?, Ok("shared".to_string()));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait(&self) -> PromiseFuture<T>
    where
        T: Clone,
    {
        PromiseFuture {
            promise: self.clone(),
            slot: None,
        }
    }
}

impl<T: Clone + 'static> Promise<T> {
    /// The value, if it is set (asyncio's `Future.result()`): [`PromiseError::Pending`] if not
    /// yet, [`PromiseError::Cancelled`] if cancelled.
    ///
    /// ```
    /// use evloop::task::PromiseError;
    ///
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let p = lp.create_future::<u8>();
    /// assert!(matches!(p.result(), Err(PromiseError::Pending { .. })));
    /// p.set_result(9).expect("pending");
    /// assert_eq!(p.result(), Ok(9)); // Future.result()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn result(&self) -> Result<T, PromiseError> {
        match &*self.inner.state.borrow() {
            State::Finished(v) => Ok(v.clone()),
            State::Pending => Err(PromiseError::Pending { promise: self.label() }),
            State::Cancelled => Err(PromiseError::Cancelled { promise: self.label() }),
        }
    }
}

impl<T: 'static> fmt::Debug for Promise<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} {}>", self.label(), self.state_name())
    }
}

/// The future of awaiting a [`Promise`]: `Ok(value)` or `Err(PromiseError::Cancelled)`.
///
/// ```
/// evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let p = lp.create_future::<u8>();
///     let setter = p.clone();
///     lp.call_soon(move || drop(setter.set_result(3)))?;
///     assert_eq!(p.wait().await, Ok(3)); // or `p.await`: a promise is IntoFuture
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct PromiseFuture<T: 'static> {
    promise: Promise<T>,
    slot: Option<usize>,
}

impl<T: Clone + 'static> Future for PromiseFuture<T> {
    type Output = Result<T, PromiseError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let inner = &this.promise.inner;
        match &*inner.state.borrow() {
            State::Finished(v) => return Poll::Ready(Ok(v.clone())),
            State::Cancelled => {
                return Poll::Ready(Err(PromiseError::Cancelled {
                    promise: this.promise.label(),
                }));
            }
            State::Pending => {}
        }
        // Only the promise's own loop can complete it (its callbacks set it, its tasks resolve
        // it): a task of another loop would wait while that loop cannot run.
        if let Err(e) = WrongLoopError::check(inner.loop_id, "await", || this.promise.label()) {
            return Poll::Ready(Err(PromiseError::WrongLoop(e)));
        }
        let mut waiters = inner.waiters.borrow_mut();
        match this.slot.and_then(|i| waiters.get_mut(i)) {
            Some(Some(w)) if w.will_wake(cx.waker()) => {}
            Some(slot) => *slot = Some(cx.waker().clone()),
            None => {
                waiters.push(Some(cx.waker().clone()));
                this.slot = Some(waiters.len() - 1);
            }
        }
        note_awaiting(Awaiting::Object(&AWAITED_PROMISE, inner.id));
        Poll::Pending
    }
}

/// A promise, as what a task awaits: the id is the promise's (`Promise#3`).
static AWAITED_PROMISE: AwaitKind = AwaitKind::new("Promise", |id, f| write!(f, "Promise#{id}"));

impl<T: 'static> Drop for PromiseFuture<T> {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            let old = {
                let Ok(mut waiters) = self.promise.inner.waiters.try_borrow_mut() else {
                    return;
                };
                let old = waiters.get_mut(i).and_then(Option::take);
                while matches!(waiters.last(), Some(None)) {
                    waiters.pop();
                }
                old
            };
            drop(old);
        }
    }
}

impl<T: Clone + 'static> IntoFuture for Promise<T> {
    type Output = Result<T, PromiseError>;
    type IntoFuture = PromiseFuture<T>;
    fn into_future(self) -> PromiseFuture<T> {
        PromiseFuture {
            promise: self,
            slot: None,
        }
    }
}

impl<T: Clone + 'static> IntoFuture for &Promise<T> {
    type Output = Result<T, PromiseError>;
    type IntoFuture = PromiseFuture<T>;
    fn into_future(self) -> PromiseFuture<T> {
        self.wait()
    }
}
