//! A multi-producer, multi-consumer broadcast channel (tokio's `tokio::sync::broadcast`): every
//! receiver sees every value sent after it subscribed, the buffer is bounded, and a receiver
//! that falls behind by more than the capacity loses the oldest values and learns how many
//! ([`RecvError::Lagged`](error::RecvError::Lagged)).
//!
//! The values sit in a ring of `capacity` slots (rounded up to a power of two, as tokio's),
//! each tagged with its position in the stream and the number of receivers that have yet to
//! read it (the value is dropped when that reaches zero, or when the slot is overwritten). A
//! receiver is a position: it reads the slot at its position if the tag matches, is `Empty` at
//! the tail, and has lagged if the slot was overwritten since (it then jumps to the oldest
//! value kept). Waiting receivers are a line of the sync layer's wait queue that every send and
//! the last sender's drop grants as a whole; a woken receiver reads on its next poll, so a
//! dropped `recv` loses nothing. Like tokio's, the channel is bound to no loop.

use std::cell::RefCell;
use std::fmt;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

use crate::event_loop::budget;
use crate::sync::binding::LoopBinding;
use crate::sync::ops::WaitOp;
use crate::sync::wait_queue::{Line, WaitQueue, Waiter, WakeList};

use self::error::{RecvError, SendError, TryRecvError};

/// The channel's errors (tokio's `broadcast::error`).
pub mod error {
    use std::fmt;

    /// A send with no receiver: the value comes back.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::broadcast::channel::<u8>(4);
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
            f.write_str("broadcast: channel closed (no receiver)")
        }
    }

    impl<T> std::error::Error for SendError<T> {}

    /// Why `recv` gave no value.
    ///
    /// ```
    /// use evloop::sync::broadcast::{self, error::RecvError};
    ///
    /// evloop::run(async {
    ///     let (tx, mut rx) = broadcast::channel(2);
    ///     for i in 0..5 {
    ///         tx.send(i).unwrap();
    ///     }
    ///     assert_eq!(rx.recv().await, Err(RecvError::Lagged(3))); // 0, 1, 2 were overwritten
    ///     assert_eq!(rx.recv().await, Ok(3));
    ///     drop(tx);
    ///     assert_eq!(rx.recv().await, Ok(4));
    ///     assert_eq!(rx.recv().await, Err(RecvError::Closed));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    #[derive(Debug, PartialEq, Eq, Clone, Copy)]
    pub enum RecvError {
        /// Every sender is gone and every value was received.
        Closed,
        /// The receiver fell behind: this many values were overwritten before it read them;
        /// the next `recv` gives the oldest value still kept.
        Lagged(u64),
    }

    impl fmt::Display for RecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                RecvError::Closed => f.write_str("broadcast: channel closed"),
                RecvError::Lagged(n) => write!(f, "broadcast: receiver lagged by {n} value(s)"),
            }
        }
    }

    impl std::error::Error for RecvError {}

    /// Why `try_recv` gave no value.
    ///
    /// ```
    /// use evloop::sync::broadcast::{self, error::TryRecvError};
    ///
    /// let (tx, mut rx) = broadcast::channel::<u8>(2);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// drop(tx);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    /// ```
    #[derive(Debug, PartialEq, Eq, Clone, Copy)]
    pub enum TryRecvError {
        /// Nothing new yet.
        Empty,
        /// Every sender is gone and every value was received.
        Closed,
        /// The receiver fell behind by this many values (see [`RecvError::Lagged`]).
        Lagged(u64),
    }

    impl fmt::Display for TryRecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TryRecvError::Empty => f.write_str("broadcast: channel empty"),
                TryRecvError::Closed => f.write_str("broadcast: channel closed"),
                TryRecvError::Lagged(n) => write!(f, "broadcast: receiver lagged by {n} value(s)"),
            }
        }
    }

    impl std::error::Error for TryRecvError {}
}

struct Slot<T> {
    /// The stream position of the value (slots start tagged `u64::MAX`: never written).
    pos: u64,
    /// Receivers that have yet to read it.
    rem: usize,
    value: Option<T>,
}

struct Shared<T> {
    slots: Box<[Slot<T>]>,
    /// The position the next send writes.
    tail: u64,
    senders: usize,
    receivers: usize,
    queue: WaitQueue<()>,
    /// Tasks in `Sender::closed`, woken when the last receiver goes.
    closed_waiters: Vec<std::task::Waker>,
    binding: LoopBinding,
}

impl<T> Shared<T> {
    fn mask(&self) -> u64 {
        self.slots.len() as u64 - 1
    }

    fn closed(&self) -> bool {
        self.senders == 0
    }

    /// A receiver at `next` is gone (or moves to the tail): it will not read `next..tail`.
    /// Returns the values nobody else will read, to drop after the borrow.
    fn release(&mut self, next: u64) -> Vec<T> {
        let mut freed = Vec::new();
        let mask = self.mask();
        // Positions before the ring's oldest were overwritten: nothing of theirs is left.
        let oldest = self.tail.saturating_sub(self.slots.len() as u64);
        for pos in next.max(oldest)..self.tail {
            let slot = &mut self.slots[(pos & mask) as usize];
            if slot.pos == pos {
                slot.rem -= 1;
                if slot.rem == 0 {
                    freed.extend(slot.value.take());
                }
            }
        }
        freed
    }
}

/// The line of waiting receivers; the carry is the receiver's position.
impl<T> Line for Shared<T> {
    type State = Shared<T>;
    type Grant = ();
    type Carry = u64;
    type Output = ();

    fn queue(st: &mut Shared<T>) -> &mut WaitQueue<()> {
        &mut st.queue
    }

    fn binding(st: &Shared<T>) -> &LoopBinding {
        &st.binding
    }

    fn arrive(st: &mut Shared<T>, next: &mut u64, _: &mut WakeList) -> Option<()> {
        (*next < st.tail || st.closed()).then_some(())
    }

    fn take(_: &mut Shared<T>, (): (), _: &mut u64, _: &mut WakeList) {}

    // Sends and closes wake every receiver: nobody is left to pass a wakeup to.
    fn pass_on(_: &mut Shared<T>, (): (), _: &mut WakeList) {}
}

/// A new broadcast channel keeping the last `capacity` values (rounded up to a power of two).
///
/// # Panics
/// If `capacity` is zero (as tokio's).
///
/// ```
/// use evloop::sync::broadcast;
///
/// evloop::run(async {
///     let (tx, mut rx1) = broadcast::channel(16);
///     let mut rx2 = tx.subscribe();
///     tx.send("hello").unwrap();
///     assert_eq!(rx1.recv().await, Ok("hello"));
///     assert_eq!(rx2.recv().await, Ok("hello")); // every receiver gets every value
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub fn channel<T: Clone>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    assert!(capacity > 0, "broadcast channel capacity cannot be zero");
    let capacity = capacity.next_power_of_two();
    let slots = (0..capacity)
        .map(|_| Slot {
            pos: u64::MAX,
            rem: 0,
            value: None,
        })
        .collect();
    let shared = Rc::new(RefCell::new(Shared {
        slots,
        tail: 0,
        senders: 1,
        receivers: 1,
        queue: WaitQueue::new(),
        closed_waiters: Vec::new(),
        binding: LoopBinding::never(),
    }));
    (Sender { shared: shared.clone() }, Receiver { shared, next: 0 })
}

/// The sending side; clone it for more senders. The channel closes when the last one is
/// dropped.
///
/// ```
/// let (tx, _rx) = evloop::sync::broadcast::channel::<u8>(1);
/// let tx2 = tx.clone();
/// assert!(tx.same_channel(&tx2));
/// ```
pub struct Sender<T> {
    shared: Rc<RefCell<Shared<T>>>,
}

impl<T: Clone> Sender<T> {
    /// A channel with no receiver yet, keeping the last `capacity` values: receivers come from
    /// [`subscribe`](Sender::subscribe) (tokio's `Sender::new`).
    ///
    /// # Panics
    /// If `capacity` is zero, as [`channel`].
    ///
    /// ```
    /// let tx = evloop::sync::broadcast::Sender::new(4);
    /// assert!(tx.send(1).is_err()); // nobody receives yet
    /// let mut rx = tx.subscribe();
    /// tx.send(2).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(2));
    /// ```
    pub fn new(capacity: usize) -> Sender<T> {
        let (tx, rx) = channel(capacity);
        drop(rx);
        tx
    }
}

impl<T> Sender<T> {
    /// Sends `value` to every current receiver, returning how many there are; fails (giving the
    /// value back) when there is none, as tokio's: the value is not kept for later
    /// subscribers. Never waits: a full buffer overwrites its oldest value.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::broadcast::channel(4);
    /// let _rx2 = rx.resubscribe();
    /// assert_eq!(tx.send(1), Ok(2));
    /// ```
    pub fn send(&self, value: T) -> Result<usize, SendError<T>> {
        let mut wakers = WakeList::default();
        let (old, n) = {
            let mut st = self.shared.borrow_mut();
            if st.receivers == 0 {
                return Err(SendError(value));
            }
            let (pos, mask, n) = (st.tail, st.mask(), st.receivers);
            let slot = &mut st.slots[(pos & mask) as usize];
            slot.pos = pos;
            slot.rem = n;
            let old = slot.value.replace(value);
            st.tail += 1;
            st.queue.grant_while(|| Some(()), &mut wakers);
            (old, n)
        };
        drop(old);
        wakers.wake();
        Ok(n)
    }

    /// A new receiver that gets the values sent from now on.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::broadcast::channel(4);
    /// drop(rx);
    /// let mut late = tx.subscribe();
    /// tx.send(5).unwrap();
    /// assert_eq!(late.try_recv(), Ok(5));
    /// ```
    pub fn subscribe(&self) -> Receiver<T> {
        let mut st = self.shared.borrow_mut();
        st.receivers += 1;
        Receiver {
            shared: self.shared.clone(),
            next: st.tail,
        }
    }

    /// How many receivers there are.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::broadcast::channel::<u8>(4);
    /// assert_eq!(tx.receiver_count(), 1);
    /// drop(rx);
    /// assert_eq!(tx.receiver_count(), 0);
    /// ```
    pub fn receiver_count(&self) -> usize {
        self.shared.borrow().receivers
    }

    /// How many values are queued: sent and not yet seen by every receiver that was there
    /// when each was sent (and not overwritten since). tokio's `Sender::len`.
    ///
    /// ```
    /// let (tx, mut rx) = evloop::sync::broadcast::channel(4);
    /// tx.send(1).unwrap();
    /// tx.send(2).unwrap();
    /// assert_eq!(tx.len(), 2);
    /// rx.try_recv().unwrap();
    /// assert_eq!(tx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        let st = self.shared.borrow();
        let mask = st.mask();
        let oldest = st.tail.saturating_sub(st.slots.len() as u64);
        (oldest..st.tail)
            .filter(|&pos| {
                let slot = &st.slots[(pos & mask) as usize];
                slot.pos == pos && slot.rem > 0
            })
            .count()
    }

    /// Whether no value is queued ([`len`](Self::len) is 0).
    ///
    /// ```
    /// let (tx, _rx) = evloop::sync::broadcast::channel::<u8>(4);
    /// assert!(tx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Completes when every receiver is gone (tokio's `Sender::closed`): at once if there is
    /// none now.
    ///
    /// ```
    /// evloop::run(async {
    ///     let (tx, rx) = evloop::sync::broadcast::channel::<u8>(4);
    ///     evloop::spawn(async move { drop(rx) });
    ///     tx.closed().await; // until the task dropped the last receiver
    ///     assert_eq!(tx.receiver_count(), 0);
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn closed(&self) {
        poll_fn(|cx| {
            let mut st = self.shared.borrow_mut();
            if st.receivers == 0 {
                return Poll::Ready(());
            }
            if !st.closed_waiters.iter().any(|w| w.will_wake(cx.waker())) {
                st.closed_waiters.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    /// Whether both senders belong to one channel.
    ///
    /// ```
    /// let (a, _) = evloop::sync::broadcast::channel::<u8>(1);
    /// let (b, _) = evloop::sync::broadcast::channel::<u8>(1);
    /// assert!(!a.same_channel(&b));
    /// ```
    pub fn same_channel(&self, other: &Sender<T>) -> bool {
        Rc::ptr_eq(&self.shared, &other.shared)
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
            if st.closed() {
                st.queue.grant_while(|| Some(()), &mut wakers);
            }
        }
        wakers.wake();
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("broadcast::Sender").finish_non_exhaustive()
    }
}

/// The receiving side: a position in the channel's stream of values.
///
/// ```
/// evloop::run(async {
///     let (tx, mut rx) = evloop::sync::broadcast::channel(4);
///     evloop::spawn(async move {
///         for i in 0..3 {
///             tx.send(i).unwrap();
///         }
///     });
///     let mut got = Vec::new();
///     while let Ok(v) = rx.recv().await {
///         got.push(v);
///     }
///     assert_eq!(got, [0, 1, 2]);
/// })?;
/// # Ok::<(), evloop::task::RunError>(())
/// ```
pub struct Receiver<T> {
    shared: Rc<RefCell<Shared<T>>>,
    /// The position of the next value to read.
    next: u64,
}

impl<T: Clone> Receiver<T> {
    /// The next value, waiting for one; `Err(Lagged(n))` if `n` values were overwritten before
    /// this receiver read them (the next call gives the oldest kept), `Err(Closed)` once every
    /// sender is gone and everything was read. Cancel-safe.
    ///
    /// ```
    /// evloop::run(async {
    ///     let (tx, mut rx) = evloop::sync::broadcast::channel(1);
    ///     tx.send('a').unwrap();
    ///     assert_eq!(rx.recv().await, Ok('a'));
    /// })?;
    /// # Ok::<(), evloop::task::RunError>(())
    /// ```
    pub async fn recv(&mut self) -> Result<T, RecvError> {
        let mut waiter: Waiter<Rc<RefCell<Shared<T>>>, Shared<T>> = Waiter::new(self.shared.clone(), self.next);
        poll_fn(|cx| {
            // A value that is there at once spends the task's budget, as every wait of the
            // sync layer does (`wait_queue.rs`): a receiver that never finds the channel empty
            // still yields to the loop.
            std::task::ready!(budget::poll_proceed(cx));
            loop {
                match self.try_recv() {
                    Ok(v) => return Poll::Ready(Ok(v)),
                    Err(TryRecvError::Closed) => return Poll::Ready(Err(RecvError::Closed)),
                    Err(TryRecvError::Lagged(n)) => return Poll::Ready(Err(RecvError::Lagged(n))),
                    Err(TryRecvError::Empty) => {}
                }
                *waiter.carry_mut() = self.next;
                // Never loop-bound (`LoopBinding::never`), so the wait cannot fail.
                match waiter.poll_wait(cx, WaitOp::BroadcastRecv) {
                    Poll::Ready(_) => continue,
                    Poll::Pending => return Poll::Pending,
                }
            }
        })
        .await
    }

    /// The next value if one is there.
    ///
    /// ```
    /// use evloop::sync::broadcast::error::TryRecvError;
    ///
    /// let (tx, mut rx) = evloop::sync::broadcast::channel(2);
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// ```
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        {
            let mut st = self.shared.borrow_mut();
            let (mask, tail, cap) = (st.mask(), st.tail, st.slots.len() as u64);
            let slot = &mut st.slots[(self.next & mask) as usize];
            if slot.pos == self.next && self.next < tail {
                // Counted read and the cursor moved before the clone: a `Clone` that panics
                // leaves this receiver past the value (as tokio's) and the count right, instead
                // of a receiver that reads the value again and counts it twice.
                slot.rem -= 1;
                self.next += 1;
                let out = if slot.rem == 0 {
                    slot.value.take()
                } else {
                    slot.value.clone()
                };
                // `None` is unreachable: a value stays until every receiver counted read it.
                out.ok_or(TryRecvError::Empty)
            } else if self.next >= tail {
                Err(if st.closed() {
                    TryRecvError::Closed
                } else {
                    TryRecvError::Empty
                })
            } else {
                // Overwritten: jump to the oldest value kept.
                let oldest = tail - cap;
                let missed = oldest - self.next;
                self.next = oldest;
                Err(TryRecvError::Lagged(missed))
            }
        }
    }
}

impl<T> Receiver<T> {
    /// A new receiver at the tail of the stream (it gets only values sent from now on), as
    /// tokio's `resubscribe`.
    ///
    /// ```
    /// let (tx, mut rx) = evloop::sync::broadcast::channel(4);
    /// tx.send(1).unwrap();
    /// let mut rx2 = rx.resubscribe();
    /// tx.send(2).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert_eq!(rx2.try_recv(), Ok(2));
    /// ```
    pub fn resubscribe(&self) -> Receiver<T> {
        let mut st = self.shared.borrow_mut();
        st.receivers += 1;
        Receiver {
            shared: self.shared.clone(),
            next: st.tail,
        }
    }

    /// How many values this receiver has yet to read (more than the capacity if it lagged).
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::broadcast::channel(4);
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        (self.shared.borrow().tail - self.next) as usize
    }

    /// Whether there is nothing to read.
    ///
    /// ```
    /// let (_tx, rx) = evloop::sync::broadcast::channel::<u8>(4);
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether every sender is gone.
    ///
    /// ```
    /// let (tx, rx) = evloop::sync::broadcast::channel::<u8>(4);
    /// drop(tx);
    /// assert!(rx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.borrow().closed()
    }

    /// Whether both receivers belong to one channel.
    ///
    /// ```
    /// let (_tx, rx) = evloop::sync::broadcast::channel::<u8>(4);
    /// assert!(rx.same_channel(&rx.resubscribe()));
    /// ```
    pub fn same_channel(&self, other: &Receiver<T>) -> bool {
        Rc::ptr_eq(&self.shared, &other.shared)
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let freed = {
            let mut st = self.shared.borrow_mut();
            st.receivers -= 1;
            let waiters = if st.receivers == 0 {
                std::mem::take(&mut st.closed_waiters)
            } else {
                Vec::new()
            };
            (st.release(self.next), waiters)
        };
        // Woken after the borrow: a woken task may use the channel at once.
        freed.1.into_iter().for_each(std::task::Waker::wake);
        drop(freed.0);
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("broadcast::Receiver").field("next", &self.next).finish()
    }
}
