//! A single-value channel that receivers watch for changes (tokio's `tokio::sync::watch`): the
//! sender replaces (or modifies) the value, and each receiver can read the latest value and
//! wait until it changes. Intermediate values a receiver did not look at are not queued.
//!
//! The state is the value, a version counted up by every send, and the number of senders and
//! receivers; a receiver remembers the version it saw last. Waiting receivers (`changed`) and a
//! sender waiting for the receivers to go (`closed`) are two lines of the sync layer's wait
//! queue, each granted as a whole. Like tokio's, the channel is bound to no loop.
//!
//! `borrow()` gives a `Ref` into the state: holding it across an `.await` while another task
//! sends panics with "already borrowed" (tokio's read lock would block the thread instead);
//! copy or clone what you need out of it first.

use std::cell::{Ref as CellRef, RefCell};
use std::fmt;
use std::future::poll_fn;
use std::ops::Deref;
use std::rc::Rc;

use crate::event_loop::budget;
use crate::sync::binding::LoopBinding;
use crate::sync::ops::WaitOp;
use crate::sync::wait_queue::{Line, WaitQueue, Waiter, WakeList};

use self::error::{RecvError, SendError};

/// The channel's errors (tokio's `watch::error`).
pub mod error {
    use std::fmt;

    /// A send with no receiver: the value comes back (and the channel keeps its old one).
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::watch::channel(0);
    /// drop(rx);
    /// assert_eq!(tx.send(1).unwrap_err().0, 1);
    /// ```
    #[derive(PartialEq, Eq, Clone, Copy)]
    pub struct SendError<T>(pub T);

    impl<T> fmt::Debug for SendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("SendError(..)")
        }
    }

    impl<T> fmt::Display for SendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("watch: channel closed (no receiver)")
        }
    }

    impl<T> std::error::Error for SendError<T> {}

    /// The sender is gone (and, for `changed`, the value did not change since it was seen).
    ///
    /// ```
    /// evloop::run(async {
    ///     let (tx, mut rx) = evloop::sync::watch::channel(0);
    ///     drop(tx);
    ///     assert!(rx.changed().await.is_err());
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    #[derive(Debug, PartialEq, Eq, Clone, Copy)]
    pub struct RecvError(pub(crate) ());

    impl fmt::Display for RecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("watch: channel closed")
        }
    }

    impl std::error::Error for RecvError {}
}

struct Shared<T> {
    value: T,
    /// Counted up by every send.
    version: u64,
    /// Live `Sender`s: the channel closes for receivers when the last one goes.
    senders: usize,
    receivers: usize,
    changed: WaitQueue<()>,
    closed: WaitQueue<()>,
    binding: LoopBinding,
}

/// The line of `Receiver::changed`; the carry is the version the receiver saw.
struct Changed<T>(std::marker::PhantomData<T>);

impl<T> Line for Changed<T> {
    type State = Shared<T>;
    type Grant = ();
    type Carry = u64;
    type Output = ();

    fn queue(st: &mut Shared<T>) -> &mut WaitQueue<()> {
        &mut st.changed
    }

    fn binding(st: &Shared<T>) -> &LoopBinding {
        &st.binding
    }

    fn arrive(st: &mut Shared<T>, seen: &mut u64, _: &mut WakeList) -> Option<()> {
        (st.version != *seen || st.senders == 0).then_some(())
    }

    fn take(_: &mut Shared<T>, (): (), _: &mut u64, _: &mut WakeList) {}

    fn pass_on(_: &mut Shared<T>, (): (), _: &mut WakeList) {}
}

/// The line of `Sender::closed`.
struct Closed<T>(std::marker::PhantomData<T>);

impl<T> Line for Closed<T> {
    type State = Shared<T>;
    type Grant = ();
    type Carry = ();
    type Output = ();

    fn queue(st: &mut Shared<T>) -> &mut WaitQueue<()> {
        &mut st.closed
    }

    fn binding(st: &Shared<T>) -> &LoopBinding {
        &st.binding
    }

    fn arrive(st: &mut Shared<T>, _: &mut (), _: &mut WakeList) -> Option<()> {
        (st.receivers == 0).then_some(())
    }

    fn take(_: &mut Shared<T>, (): (), _: &mut (), _: &mut WakeList) {}

    fn pass_on(_: &mut Shared<T>, (): (), _: &mut WakeList) {}
}

/// A new watch channel holding `init`; the receiver has seen it.
///
/// ```
/// evloop::run(async {
///     let (tx, mut rx) = evloop::sync::watch::channel("idle");
///     evloop::spawn(async move {
///         tx.send("busy").unwrap();
///     });
///     rx.changed().await.unwrap();
///     assert_eq!(*rx.borrow_and_update(), "busy");
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub fn channel<T>(init: T) -> (Sender<T>, Receiver<T>) {
    let shared = Rc::new(RefCell::new(Shared {
        value: init,
        version: 0,
        senders: 1,
        receivers: 1,
        changed: WaitQueue::new(),
        closed: WaitQueue::new(),
        binding: LoopBinding::never(),
    }));
    (Sender { shared: shared.clone() }, Receiver { shared, seen: 0 })
}

/// A reference to the channel's value (tokio's `watch::Ref`); see the module documentation
/// about holding it across an `.await`.
///
/// ```
/// let (tx, rx) = evloop::sync::watch::channel(vec![1]);
/// let r = rx.borrow();
/// assert_eq!(r.len(), 1);
/// assert!(!r.has_changed());
/// ```
pub struct Ref<'a, T> {
    inner: CellRef<'a, T>,
    has_changed: bool,
}

impl<T> Ref<'_, T> {
    /// Whether the value was new to the receiver when it was borrowed.
    ///
    /// ```
    /// let (tx, mut rx) = evloop::sync::watch::channel(0);
    /// tx.send(1).unwrap();
    /// assert!(rx.borrow_and_update().has_changed());
    /// ```
    pub fn has_changed(&self) -> bool {
        self.has_changed
    }
}

impl<T> Deref for Ref<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: fmt::Debug> fmt::Debug for Ref<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

/// The sending side: clone it for more senders (tokio's `watch::Sender` is `Clone` too); the
/// receivers see the channel closed when the last sender goes.
///
/// ```
/// let (tx, rx) = evloop::sync::watch::channel(1);
/// let tx2 = tx.clone();
/// tx.send_modify(|v| *v += 1);
/// tx2.send_modify(|v| *v += 1);
/// assert_eq!(*rx.borrow(), 3);
/// drop(tx);
/// assert!(!rx.is_closed()); // tx2 is still there
/// ```
pub struct Sender<T> {
    shared: Rc<RefCell<Shared<T>>>,
}

impl<T> Sender<T> {
    /// A channel holding `init` with no receiver yet ([`subscribe`](Sender::subscribe) makes
    /// them; tokio's `Sender::new`).
    ///
    /// ```
    /// let tx = evloop::sync::watch::Sender::new(7);
    /// assert!(tx.is_closed());
    /// let rx = tx.subscribe();
    /// assert_eq!(*rx.borrow(), 7);
    /// ```
    pub fn new(init: T) -> Sender<T> {
        let (tx, rx) = channel(init);
        drop(rx);
        tx
    }

    /// The number of live senders, this one included.
    ///
    /// ```
    /// let (tx, _rx) = evloop::sync::watch::channel(0);
    /// let tx2 = tx.clone();
    /// assert_eq!(tx2.sender_count(), 2);
    /// ```
    pub fn sender_count(&self) -> usize {
        self.shared.borrow().senders
    }

    /// Whether both senders belong to one channel.
    ///
    /// ```
    /// let (tx, _rx) = evloop::sync::watch::channel(0);
    /// assert!(tx.same_channel(&tx.clone()));
    /// ```
    pub fn same_channel(&self, other: &Sender<T>) -> bool {
        Rc::ptr_eq(&self.shared, &other.shared)
    }

    /// Replaces the value and notifies the receivers; fails, giving `value` back and keeping the
    /// old value, when there is no receiver (tokio's rule; see [`send_replace`](Sender::send_replace)).
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::watch::channel(0);
    /// tx.send(5).unwrap();
    /// assert_eq!(*rx.borrow(), 5);
    /// ```
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        if self.shared.borrow().receivers == 0 {
            return Err(SendError(value));
        }
        drop(self.send_replace(value));
        Ok(())
    }

    /// Replaces the value whether or not anyone receives, and returns the old one.
    ///
    /// ```
    /// let (tx, _) = evloop::sync::watch::channel(1);
    /// assert_eq!(tx.send_replace(2), 1);
    /// assert_eq!(*tx.borrow(), 2);
    /// ```
    pub fn send_replace(&self, value: T) -> T {
        let mut old = Some(value);
        self.send_if_modified(|v| {
            if let Some(new) = old.take() {
                old = Some(std::mem::replace(v, new));
            }
            true
        });
        old.expect("the closure ran")
    }

    /// Changes the value in place and notifies the receivers, whether or not anyone receives.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::watch::channel(vec![1]);
    /// tx.send_modify(|v| v.push(2));
    /// assert_eq!(*rx.borrow(), [1, 2]);
    /// ```
    pub fn send_modify(&self, modify: impl FnOnce(&mut T)) {
        self.send_if_modified(|v| {
            modify(v);
            true
        });
    }

    /// Changes the value in place and notifies the receivers only if `modify` returns true;
    /// returns what it returned.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::watch::channel(1);
    /// assert!(!tx.send_if_modified(|v| *v == 2)); // unchanged: nobody notified
    /// assert!(!rx.has_changed().unwrap());
    /// ```
    pub fn send_if_modified(&self, modify: impl FnOnce(&mut T) -> bool) -> bool {
        let mut wakers = WakeList::default();
        let modified = {
            let mut st = self.shared.borrow_mut();
            // `modify` runs under the borrow: it must not use the channel (as under tokio's
            // write lock).
            let modified = modify(&mut st.value);
            if modified {
                st.version += 1;
                st.changed.grant_while(|| Some(()), &mut wakers);
            }
            modified
        };
        wakers.wake();
        modified
    }

    /// The current value.
    ///
    /// ```
    /// let (tx, _rx) = evloop::sync::watch::channel('x');
    /// assert_eq!(*tx.borrow(), 'x');
    /// ```
    pub fn borrow(&self) -> Ref<'_, T> {
        Ref {
            inner: CellRef::map(self.shared.borrow(), |s| &s.value),
            has_changed: false,
        }
    }

    /// A new receiver, which has seen the current value.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::watch::channel(0);
    /// drop(rx);
    /// let rx = tx.subscribe();
    /// assert!(!rx.has_changed().unwrap());
    /// ```
    pub fn subscribe(&self) -> Receiver<T> {
        let mut st = self.shared.borrow_mut();
        st.receivers += 1;
        Receiver {
            shared: self.shared.clone(),
            seen: st.version,
        }
    }

    /// How many receivers there are.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::watch::channel(0);
    /// let _rx2 = rx.clone();
    /// assert_eq!(tx.receiver_count(), 2);
    /// ```
    pub fn receiver_count(&self) -> usize {
        self.shared.borrow().receivers
    }

    /// Whether every receiver is gone.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::watch::channel(0);
    /// drop(rx);
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.borrow().receivers == 0
    }

    /// Waits until every receiver is gone.
    ///
    /// ```
    /// evloop::run(async {
    ///     let (tx, rx) = evloop::sync::watch::channel(0);
    ///     evloop::spawn(async move { drop(rx) });
    ///     tx.closed().await;
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn closed(&self) {
        let mut waiter: Waiter<&RefCell<Shared<T>>, Closed<T>> = Waiter::new(&self.shared, ());
        // Never loop-bound (`LoopBinding::never`), so the wait cannot fail.
        let _ = poll_fn(|cx| waiter.poll_wait(cx, WaitOp::WatchClosed)).await;
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.borrow_mut().senders += 1;
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut wakers = WakeList::default();
        {
            let mut st = self.shared.borrow_mut();
            st.senders -= 1;
            if st.senders == 0 {
                st.changed.grant_while(|| Some(()), &mut wakers);
            }
        }
        wakers.wake();
    }
}

impl<T: fmt::Debug> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("watch::Sender")
            .field("value", &self.shared.borrow().value)
            .finish()
    }
}

/// The receiving side: clone it for more receivers.
///
/// ```
/// let (tx, rx) = evloop::sync::watch::channel(0);
/// let rx2 = rx.clone();
/// tx.send(3).unwrap();
/// assert_eq!((*rx.borrow(), *rx2.borrow()), (3, 3));
/// ```
pub struct Receiver<T> {
    shared: Rc<RefCell<Shared<T>>>,
    /// The version this receiver saw last.
    seen: u64,
}

impl<T> Receiver<T> {
    /// The current value, without marking it seen.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::watch::channel(0);
    /// tx.send(1).unwrap();
    /// assert!(rx.borrow().has_changed());
    /// assert!(rx.has_changed().unwrap()); // still unseen
    /// ```
    pub fn borrow(&self) -> Ref<'_, T> {
        let st = self.shared.borrow();
        let has_changed = st.version != self.seen;
        Ref {
            inner: CellRef::map(st, |s| &s.value),
            has_changed,
        }
    }

    /// The current value, marking it seen.
    ///
    /// ```
    /// let (tx, mut rx) = evloop::sync::watch::channel(0);
    /// tx.send(1).unwrap();
    /// assert_eq!(*rx.borrow_and_update(), 1);
    /// assert!(!rx.has_changed().unwrap());
    /// ```
    pub fn borrow_and_update(&mut self) -> Ref<'_, T> {
        let st = self.shared.borrow();
        let has_changed = st.version != self.seen;
        self.seen = st.version;
        Ref {
            inner: CellRef::map(st, |s| &s.value),
            has_changed,
        }
    }

    /// Whether the value changed since this receiver saw it; `Err` once the sender is gone.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::watch::channel(0);
    /// assert_eq!(rx.has_changed(), Ok(false));
    /// drop(tx);
    /// assert!(rx.has_changed().is_err());
    /// ```
    pub fn has_changed(&self) -> Result<bool, RecvError> {
        let st = self.shared.borrow();
        if st.senders == 0 {
            return Err(RecvError(()));
        }
        Ok(st.version != self.seen)
    }

    /// Makes the current value count as unseen.
    ///
    /// ```
    /// let (_tx, mut rx) = evloop::sync::watch::channel(0);
    /// rx.mark_changed();
    /// assert_eq!(rx.has_changed(), Ok(true));
    /// ```
    pub fn mark_changed(&mut self) {
        self.seen = self.shared.borrow().version.wrapping_sub(1);
    }

    /// Makes the current value count as seen.
    ///
    /// ```
    /// let (tx, mut rx) = evloop::sync::watch::channel(0);
    /// tx.send(1).unwrap();
    /// rx.mark_unchanged();
    /// assert_eq!(rx.has_changed(), Ok(false));
    /// ```
    pub fn mark_unchanged(&mut self) {
        self.seen = self.shared.borrow().version;
    }

    /// Waits until the value changes from the one this receiver saw, and marks the new one
    /// seen; `Err` once the sender is gone and nothing new is left to see. Cancel-safe.
    ///
    /// ```
    /// evloop::run(async {
    ///     let (tx, mut rx) = evloop::sync::watch::channel(0);
    ///     evloop::spawn(async move { tx.send(1).unwrap() });
    ///     rx.changed().await.unwrap();
    ///     assert_eq!(*rx.borrow(), 1);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn changed(&mut self) -> Result<(), RecvError> {
        let mut waiter: Waiter<&RefCell<Shared<T>>, Changed<T>> = Waiter::new(&self.shared, self.seen);
        // Never loop-bound (`LoopBinding::never`), so the wait cannot fail.
        let _ = poll_fn(|cx| waiter.poll_wait(cx, WaitOp::WatchChanged)).await;
        drop(waiter);
        let st = self.shared.borrow();
        if st.version != self.seen {
            self.seen = st.version;
            Ok(())
        } else {
            Err(RecvError(()))
        }
    }

    /// Waits until `f` holds for the value (checking the current one first), marks it seen
    /// and returns it; `Err` if the sender goes first.
    ///
    /// ```
    /// evloop::run(async {
    ///     let (tx, mut rx) = evloop::sync::watch::channel(0);
    ///     evloop::spawn(async move {
    ///         for i in 1..=5 {
    ///             tx.send(i).unwrap();
    ///             evloop::task::yield_now().await;
    ///         }
    ///     });
    ///     assert_eq!(*rx.wait_for(|v| *v >= 3).await.unwrap(), 3);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn wait_for(&mut self, mut f: impl FnMut(&T) -> bool) -> Result<Ref<'_, T>, RecvError> {
        // A value that already holds returns without waiting: spend the task's budget first,
        // as every wait does (`wait_queue.rs`), or a loop of such calls never yields.
        poll_fn(budget::poll_proceed).await;
        loop {
            {
                let st = self.shared.borrow();
                if f(&st.value) {
                    let has_changed = st.version != self.seen;
                    self.seen = st.version;
                    drop(st);
                    let st = self.shared.borrow();
                    return Ok(Ref {
                        inner: CellRef::map(st, |s| &s.value),
                        has_changed,
                    });
                }
            }
            self.changed().await?;
        }
    }

    /// Whether every sender is gone (the value stays readable; [`changed`](Receiver::changed)
    /// then fails once this receiver has seen it).
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::watch::channel(0);
    /// assert!(!rx.is_closed());
    /// drop(tx);
    /// assert!(rx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.borrow().senders == 0
    }

    /// Whether both receivers belong to one channel.
    ///
    /// ```
    /// let (_tx, rx) = evloop::sync::watch::channel(0);
    /// assert!(rx.same_channel(&rx.clone()));
    /// ```
    pub fn same_channel(&self, other: &Receiver<T>) -> bool {
        Rc::ptr_eq(&self.shared, &other.shared)
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.shared.borrow_mut().receivers += 1;
        Receiver {
            shared: self.shared.clone(),
            seen: self.seen,
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut wakers = WakeList::default();
        {
            let mut st = self.shared.borrow_mut();
            st.receivers -= 1;
            if st.receivers == 0 {
                st.closed.grant_while(|| Some(()), &mut wakers);
            }
        }
        wakers.wake();
    }
}

impl<T: fmt::Debug> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("watch::Receiver").field("seen", &self.seen).finish()
    }
}
