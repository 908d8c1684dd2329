//! [`Notify`] (tokio's `tokio::sync::Notify`): wakes one task, or every waiting task, without
//! carrying data; the building block of hand-made signalling.
//!
//! Its waiters are a line of the sync layer's wait queue. `notify_one` grants the first waiter
//! (FIFO, tokio's fairness; `notify_last` the last one) or, if nobody waits, stores one permit that the next `notified()`
//! consumes at once. `notify_waiters` grants every waiter and stores nothing; it also completes
//! every [`Notified`] created before it and not yet polled, which is why each `Notified` notes
//! the count of `notify_waiters` calls at its creation (tokio's rule: "a `Notified` created
//! before `notify_waiters` is notified by it"). A `Notified` dropped after `notify_one` chose it
//! passes the notification on to the next waiter, or back as the stored permit. Like tokio's, a
//! `Notify` is bound to no loop: its waiters are woken through their wakers.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::sync::binding::LoopBinding;
use crate::sync::ops::WaitOp;
use crate::sync::wait_queue::{Line, WaitQueue, Waiter, WakeList};

/// What a waiter was granted: by `notify_one` or `notify_last` (passed on if unused, to the
/// first or the last waiter left) or `notify_waiters`.
enum Grant {
    One,
    Last,
    All,
}

struct NotifyState {
    /// A `notify_one` with nobody waiting: at most one, consumed by the next `notified()`.
    permit: bool,
    /// How many times `notify_waiters` was called.
    waiters_calls: u64,
    queue: WaitQueue<Grant>,
    binding: LoopBinding,
}

impl NotifyState {
    fn notify_one(&mut self, wakers: &mut WakeList) {
        if self.queue.grant_first(Grant::One, wakers).is_err() {
            self.permit = true;
        }
    }

    fn notify_last(&mut self, wakers: &mut WakeList) {
        if self.queue.grant_last(Grant::Last, wakers).is_err() {
            self.permit = true;
        }
    }
}

impl Line for NotifyState {
    type State = NotifyState;
    type Grant = Grant;
    /// The `notify_waiters` count when the `Notified` was created.
    type Carry = u64;
    type Output = ();

    fn queue(st: &mut NotifyState) -> &mut WaitQueue<Grant> {
        &mut st.queue
    }

    fn binding(st: &NotifyState) -> &LoopBinding {
        &st.binding
    }

    fn arrive(st: &mut NotifyState, created_at: &mut u64, _: &mut WakeList) -> Option<()> {
        if st.waiters_calls != *created_at {
            return Some(()); // a `notify_waiters` since this `Notified` was created
        }
        std::mem::take(&mut st.permit).then_some(())
    }

    fn take(_: &mut NotifyState, _: Grant, _: &mut u64, _: &mut WakeList) {}

    fn pass_on(st: &mut NotifyState, grant: Grant, wakers: &mut WakeList) {
        // A `notify_one` (`notify_last`) chose a waiter that is gone: the first (last) one left
        // gets it, or it becomes the permit. A `notify_waiters` grant was for that waiter only.
        match grant {
            Grant::One => st.notify_one(wakers),
            Grant::Last => st.notify_last(wakers),
            Grant::All => {}
        }
    }
}

/// Notifies tasks without data (tokio's `Notify`): [`notify_one`](Notify::notify_one) wakes one
/// waiter or stores a permit, [`notify_waiters`](Notify::notify_waiters) wakes all. Share it in
/// an `Rc` (tokio's `Arc`).
///
/// ```
/// use std::rc::Rc;
/// use evloop::sync::Notify;
///
/// evloop::run(async {
///     let notify = Rc::new(Notify::new());
///     let n = notify.clone();
///     let waiter = evloop::spawn(async move {
///         n.notified().await;
///         "notified"
///     });
///     notify.notify_one(); // wakes the task, or is kept until it waits
///     assert_eq!(waiter.await.unwrap(), "notified");
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub struct Notify {
    state: RefCell<NotifyState>,
}

impl Notify {
    /// A `Notify` with no permit stored.
    ///
    /// ```
    /// let _n = evloop::sync::Notify::new();
    /// ```
    pub fn new() -> Notify {
        Notify {
            state: RefCell::new(NotifyState {
                permit: false,
                waiters_calls: 0,
                queue: WaitQueue::new(),
                binding: LoopBinding::never(),
            }),
        }
    }

    /// A future that completes when this `Notify` is notified: by a `notify_one` (the stored
    /// permit, or a call while it waits: first come, first served) or by a `notify_waiters` made
    /// after this call. Cancel-safe: dropped after being chosen, it passes the notification on.
    ///
    /// ```
    /// let notify = evloop::sync::Notify::new();
    /// evloop::run(async move {
    ///     notify.notify_one(); // nobody waits: a permit is stored
    ///     notify.notified().await; // and consumed at once
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn notified(&self) -> Notified<'_> {
        let created_at = self.state.borrow().waiters_calls;
        Notified {
            waiter: Waiter::new(&self.state, created_at),
            done: false,
        }
    }

    /// [`notified`](Notify::notified) for a `Notify` in an `Rc`: the future owns a clone, so it
    /// can move into a spawned task (tokio's `notified_owned` on an `Arc`).
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let notify = Rc::new(evloop::sync::Notify::new());
    ///     let wait = notify.clone().notified_owned();
    ///     let t = evloop::spawn(wait);
    ///     evloop::task::yield_now().await;
    ///     notify.notify_waiters();
    ///     t.await.unwrap();
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn notified_owned(self: Rc<Self>) -> OwnedNotified {
        let created_at = self.state.borrow().waiters_calls;
        OwnedNotified {
            waiter: Waiter::new(NotifyRef(self), created_at),
            done: false,
        }
    }

    /// Wakes the first waiting task; with nobody waiting, stores a permit (at most one) that the
    /// next `notified()` consumes at once.
    ///
    /// ```
    /// let notify = evloop::sync::Notify::new();
    /// notify.notify_one();
    /// notify.notify_one(); // still one permit
    /// evloop::run(async move {
    ///     notify.notified().await;
    ///     let second = evloop::time::timeout(std::time::Duration::from_millis(1), notify.notified()).await;
    ///     assert!(second.is_err());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn notify_one(&self) {
        let mut wakers = WakeList::default();
        self.state.borrow_mut().notify_one(&mut wakers);
        wakers.wake();
    }

    /// Wakes the task that started waiting last (LIFO), or stores one permit if nobody waits:
    /// tokio's `notify_last`, the mirror of [`notify_one`](Notify::notify_one).
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::sync::Notify;
    ///
    /// evloop::run(async {
    ///     let notify = Rc::new(Notify::new());
    ///     let order = Rc::new(std::cell::RefCell::new(Vec::new()));
    ///     let tasks: Vec<_> = (0..2)
    ///         .map(|i| {
    ///             let (n, o) = (notify.clone(), order.clone());
    ///             evloop::spawn(async move {
    ///                 n.notified().await;
    ///                 o.borrow_mut().push(i);
    ///             })
    ///         })
    ///         .collect();
    ///     evloop::task::yield_now().await; // both wait now, 0 first
    ///     notify.notify_last();
    ///     notify.notify_last();
    ///     for t in tasks {
    ///         t.await.unwrap();
    ///     }
    ///     assert_eq!(*order.borrow(), [1, 0]); // the newest waiter was woken first
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn notify_last(&self) {
        let mut wakers = WakeList::default();
        {
            self.state.borrow_mut().notify_last(&mut wakers);
        }
        wakers.wake();
    }

    /// Wakes every waiting task, and completes every [`Notified`] created before this call;
    /// stores no permit.
    ///
    /// ```
    /// let notify = evloop::sync::Notify::new();
    /// let early = notify.notified(); // created before the call, not yet polled
    /// notify.notify_waiters();
    /// evloop::task::block_on(early)?; // completes (block_on: `early` borrows `notify`)
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub fn notify_waiters(&self) {
        let mut wakers = WakeList::default();
        {
            let mut st = self.state.borrow_mut();
            st.waiters_calls = st.waiters_calls.wrapping_add(1);
            st.queue.grant_while(|| Some(Grant::All), &mut wakers);
        }
        wakers.wake();
    }
}

impl Default for Notify {
    fn default() -> Self {
        Notify::new()
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        f.debug_struct("Notify")
            .field("permit", &st.permit)
            .field("waiters", &st.queue.waiting())
            .finish()
    }
}

/// The future of [`Notify::notified`].
///
/// ```
/// use std::pin::pin;
///
/// let notify = evloop::sync::Notify::new();
/// evloop::run(async move {
///     let mut wait = pin!(notify.notified());
///     assert!(!wait.as_mut().enable()); // queued now: the next notify_one is its own
///     notify.notify_one();
///     wait.await;
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Notified<'a> {
    waiter: Waiter<&'a RefCell<NotifyState>, NotifyState>,
    done: bool,
}

impl Notified<'_> {
    /// Queues this future as a waiter without waiting (tokio's `enable`): a `notify_one` made
    /// from now on can choose it. True if it is already notified.
    pub fn enable(self: Pin<&mut Self>) -> bool {
        let this = self.get_mut();
        poll_notified(
            &mut this.waiter,
            &mut this.done,
            &mut Context::from_waker(Waker::noop()),
        )
        .is_ready()
    }
}

impl Future for Notified<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        poll_notified(&mut this.waiter, &mut this.done, cx)
    }
}

impl fmt::Debug for Notified<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notified")
            .field("queued", &self.waiter.is_queued())
            .finish()
    }
}

/// An `Rc<Notify>` seen as the state behind it, for the owned waiter.
struct NotifyRef(Rc<Notify>);

impl std::ops::Deref for NotifyRef {
    type Target = RefCell<NotifyState>;
    fn deref(&self) -> &RefCell<NotifyState> {
        &self.0.state
    }
}

/// The future of [`Notify::notified_owned`]: a [`Notified`] that owns its `Rc<Notify>`.
///
/// ```
/// use std::rc::Rc;
///
/// let notify = Rc::new(evloop::sync::Notify::new());
/// let wait: evloop::sync::OwnedNotified = notify.clone().notified_owned();
/// notify.notify_one();
/// evloop::run(wait)?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct OwnedNotified {
    waiter: Waiter<NotifyRef, NotifyState>,
    done: bool,
}

impl Future for OwnedNotified {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        poll_notified(&mut this.waiter, &mut this.done, cx)
    }
}

impl fmt::Debug for OwnedNotified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedNotified")
            .field("queued", &self.waiter.is_queued())
            .finish()
    }
}

/// One poll of either future; `done` keeps a completed one (by `enable`) complete.
fn poll_notified<R: std::ops::Deref<Target = RefCell<NotifyState>>>(
    waiter: &mut Waiter<R, NotifyState>,
    done: &mut bool,
    cx: &mut Context<'_>,
) -> Poll<()> {
    if *done {
        return Poll::Ready(());
    }
    // Never loop-bound (`LoopBinding::never`), so the wait cannot fail.
    match waiter.poll_wait(cx, WaitOp::Notified) {
        Poll::Ready(_) => {
            *done = true;
            Poll::Ready(())
        }
        Poll::Pending => Poll::Pending,
    }
}
