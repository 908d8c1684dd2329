//! Synchronisation primitives for tasks: [`Event`], [`Lock`] and [`Mutex`], [`Semaphore`] and
//! [`BoundedSemaphore`], [`Condition`] and [`Barrier`] (asyncio's `asyncio.Event`, `asyncio.Lock`,
//! ...).
//!
//! They coordinate the tasks of one loop, on one thread: their state is a `RefCell`, never an
//! atomic or an OS mutex, and they are `!Send` and `!Sync`. To share one between tasks, put it in
//! an `Rc` (`let lock = Rc::new(Lock::new())`, then move a clone into each task). Nothing here
//! blocks the thread: a task that has to wait returns `Pending` and the loop runs something else.
//!
//! ```
//! use std::rc::Rc;
//! use evloop::{spawn, Lock};
//!
//! let order = evloop::run(async {
//!     let lock = Rc::new(Lock::new());
//!     let guard = lock.acquire().await; // held by the main task
//!     let tasks: Vec<_> = (0..3)
//!         .map(|i| {
//!             let lock = lock.clone();
//!             spawn(async move {
//!                 let _held = lock.acquire().await; // released when `_held` is dropped
//!                 i
//!             })
//!         })
//!         .collect();
//!     evloop::yield_now().await; // the three tasks queue up, in order
//!     drop(guard);
//!     let mut order = Vec::new();
//!     for t in tasks {
//!         order.push(t.await.unwrap());
//!     }
//!     order
//! })
//! .unwrap();
//! assert_eq!(order, [0, 1, 2]);
//! ```
//!
//! # FIFO fairness
//! asyncio guarantees that the task which has waited longest gets the lock (or the permit, or
//! the notification) first, and so does evloop. Every primitive keeps its waiters in one FIFO
//! queue, and a release *hands* the resource straight to the first waiter instead of putting it
//! back on the table for whoever asks next. A newcomer cannot barge ahead: an acquire completes
//! at once only when the resource is free **and** the queue is empty, including waiters that
//! were already handed a permit but whose task has not run yet (asyncio's "wait for others to
//! start even if `_value > 0`"). Such a newcomer queues behind them and is served in turn.
//!
//! # Cancellation safety: asyncio's `CancelledError` versus Rust's dropped future
//! In asyncio, cancelling a task throws `CancelledError` into the coroutine at its `await`;
//! `acquire()` catches it and undoes its bookkeeping (`_wake_up_first()`, `_value += 1`), then
//! re-raises. CPython has had a series of bugs in exactly that undoing: a waiter cancelled just
//! after it was woken swallowed the wakeup (bpo-32734, "2 locks are taken at once"; gh-90155,
//! the semaphore hang; gh-112202, a lost `Condition.notify`).
//!
//! In Rust a task is cancelled by *dropping* its future (evloop drops it at the task's next step;
//! `timeout` drops it when the deadline passes), so a waiter's cleanup is its `Drop`. Each
//! waiting future owns one entry of its primitive's queue, and when it is dropped it removes that
//! entry. If a release had already handed the entry a permit (or a notification) that the task
//! never got to see, the drop passes it on: to the next waiter, or back to the pool. Nothing is
//! lost, whichever way a release and a cancellation interleave, and a waiter dropped while still
//! waiting simply leaves the queue without disturbing the order of the others.
//!
//! # The fair wait queue
//! One small queue serves all the primitives. An entry is `Waiting(waker)` or `Granted(value)`
//! (the permit, the notification, the barrier index) and it has an id that its waiting future
//! keeps. Its invariants:
//! 1. Entries are in arrival order and their ids strictly increase from front to back, so a
//!    future finds its entry by binary search.
//! 2. Each entry belongs to exactly one live future, and only that future removes it: when it
//!    observes its grant (its poll returns `Ready`) or when it is dropped.
//! 3. Grants go to `Waiting` entries front to back, so at any time every `Granted` entry arrived
//!    before every `Waiting` one (FIFO service), and a granted entry's waker has been woken.
//! 4. A grant is owned by the queue until its future takes it; a future dropped before taking it
//!    gives it back to the primitive (which passes it on), so no grant is ever lost.
//! 5. For [`Lock`] and [`Semaphore`]: while a permit is available, no entry is `Waiting` (each
//!    operation that frees a permit or queues a waiter ends by handing out what it can).
//!
//! Wakers are woken after the primitive's state is released, so a waker that runs code at once
//! cannot find the state borrowed.
//!
//! # Where evloop differs from asyncio
//! - RAII: [`LockGuard`], [`MutexGuard`] and [`SemaphorePermit`] release on drop, so there is no
//!   `release()` to call twice or forget. A permit can still be kept past its guard with
//!   [`SemaphorePermit::forget`] and given back later ([`Semaphore::add_permits`],
//!   [`BoundedSemaphore::release`]).
//! - [`Condition::notify`] does not require holding the lock (asyncio raises `RuntimeError`).
//!   On one thread there is no window between checking a predicate and starting to wait, which
//!   is what the rule protects elsewhere. A [`Condition::wait`] that is cancelled does not
//!   re-acquire the lock before it ends (a dropped future cannot await): its guard is gone, so
//!   the lock simply stays released, which is what the `async with` around it would have done.
//! - [`BoundedSemaphore::release`] gives back only a permit that was [forgotten]
//!   (`SemaphorePermit::forget`), so a permit still held by a guard can never push the count
//!   past its bound when that guard drops later.
//! - [`Barrier`] hands out arrival indexes when it trips, so they are always `0..parties` with
//!   no gaps even if a waiter was cancelled, and a new round starts at once (asyncio makes
//!   newcomers wait while the previous round "drains").
//!
//! Misuse is an error value ([`SyncError`]), never a panic, except in one case below.
//!
//! [forgotten]: SemaphorePermit::forget
//!
//! # Bound to one loop
//! Two event loops can live on one thread, but only one runs at a time. A primitive whose
//! waiters are tasks of loop A can only be handed on by A's tasks; a task of loop B that waited
//! on it would wait while A cannot run: forever, silently. So each primitive (and each
//! [`Queue`](crate::Queue) and [`mpsc`](crate::channel::mpsc) or
//! [`oneshot`](mod@crate::channel::oneshot) channel) is **bound to the loop of the first task that
//! waits on it**, as asyncio's are (`_LoopBoundMixin`), and a task of another loop that would
//! wait on it fails at once, naming both loops:
//! - with an error value where the future's output has room for one:
//!   [`Condition::wait`] and [`Barrier::wait`] give [`SyncError::WrongLoop`], a oneshot
//!   receiver gives `RecvError::WrongLoop`;
//! - with a panic where it has none ([`Lock::acquire`], [`Mutex::lock`],
//!   [`Semaphore::acquire`], [`BoundedSemaphore::acquire`], [`Event::wait`], `Queue::get` /
//!   `put` / `join`, `mpsc` `send` / `recv`): the panic happens inside the waiting task, so
//!   the loop catches it and the task's awaiter gets `TaskError::Panicked` with the message
//!   (`run_until_complete` returns it), and the loop goes on. Returning a guard without the
//!   lock is not an option, and the silent hang was the bug.
//!
//! What does not wait binds nothing and works from anywhere: creating a primitive, `try_*`
//! and `*_nowait`, `Event::set`, `Condition::notify`, releasing (dropping a guard), a
//! `put` or `acquire` that completes at once. A wait outside any evloop loop (another executor
//! polling the future) checks nothing. The thread-safe channel
//! ([`channel::threadsafe`]) is not bound to any loop: it exists to
//! cross threads and loops.
//!
//! # The `sync/` folder (layer 3)
//! This file holds the primitives; beside them are [`queue`], [`channel`], the combinators
//! (`combinator`: `gather`, `wait`, `select`, `shield`, ...), `TaskGroup` (`group`) and the
//! `select!` / `join!` / `try_join!` macros (`macros`). It builds
//! on `task/` and `event_loop/`, and does not use `io/` (its sibling at the same rank).

pub mod channel;
pub(crate) mod combinator;
pub(crate) mod group;
pub(crate) mod macros;
pub mod queue;

use std::cell::{Cell, RefCell, RefMut};
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::event_loop::running_loop_id;
pub use crate::event_loop::trace::SyncOp;
use crate::event_loop::trace::{Awaiting, note_awaiting};

// ---------------------------------------------------------------------------------------------
// Errors.

/// Misuse of a synchronisation primitive (asyncio's `ValueError`, `BrokenBarrierError`,
/// `RuntimeError`). The message names the primitive and the operation.
///
/// ```
/// use evloop::{BoundedSemaphore, SyncError};
///
/// let sem = BoundedSemaphore::new(1);
/// // No permit was forgotten, so releasing one would take the count past its bound.
/// let err = sem.release().unwrap_err();
/// assert_eq!(err, SyncError::OverReleased { bound: 1 });
/// assert!(err.to_string().starts_with("BoundedSemaphore.release"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SyncError {
    /// [`BoundedSemaphore::release`] with no forgotten permit to give back: releasing it would
    /// take the count past its initial value (asyncio's `ValueError`).
    OverReleased {
        /// The semaphore's initial (and maximum) number of permits.
        bound: usize,
    },
    /// [`Barrier::wait`] on a barrier that was aborted, or that was aborted or reset while the
    /// task waited (asyncio's `BrokenBarrierError`).
    BrokenBarrier {
        /// The barrier's number of parties.
        parties: usize,
    },
    /// [`Condition::wait`] was given the guard of a lock that is not the condition's.
    ForeignLockGuard,
    /// The primitive is bound to another event loop than the task that waited on it (asyncio's
    /// `RuntimeError: ... is bound to a different event loop`): see "Bound to one loop" in the
    /// module documentation.
    WrongLoop {
        /// The operation, e.g. `Condition.wait()`.
        op: SyncOp,
        /// The loop the primitive is bound to.
        bound: u64,
        /// The loop whose task waited.
        running: u64,
    },
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncError::OverReleased { bound } => write!(
                f,
                "BoundedSemaphore.release: released too many times (the semaphore was created with \
                 {bound} permit{} and none of them was forgotten to be given back)",
                if *bound == 1 { "" } else { "s" }
            ),
            SyncError::BrokenBarrier { parties } => write!(
                f,
                "Barrier.wait: the barrier ({parties} parties) is broken: it was aborted, or reset \
                 while this task waited"
            ),
            SyncError::ForeignLockGuard => {
                f.write_str("Condition.wait: the guard belongs to another lock than this condition's")
            }
            SyncError::WrongLoop { op, bound, running } => write!(
                f,
                "{}",
                WrongLoop {
                    bound: *bound,
                    running: *running
                }
                .message(*op)
            ),
        }
    }
}

impl std::error::Error for SyncError {}

impl From<SyncError> for io::Error {
    fn from(e: SyncError) -> io::Error {
        let kind = match e {
            SyncError::OverReleased { .. } | SyncError::ForeignLockGuard => io::ErrorKind::InvalidInput,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}

// ---------------------------------------------------------------------------------------------
// The fair wait queue (see "The fair wait queue" in the module documentation).

/// Wakers collected while a primitive's state is borrowed, woken after it is released. The
/// common case (one waker) does not allocate.
#[derive(Default)]
struct WakeList {
    first: Option<Waker>,
    rest: Vec<Waker>,
}

impl WakeList {
    fn push(&mut self, waker: Waker) {
        if self.first.is_none() {
            self.first = Some(waker);
        } else {
            self.rest.push(waker);
        }
    }

    fn wake(self) {
        if let Some(w) = self.first {
            w.wake();
        }
        for w in self.rest {
            w.wake();
        }
    }
}

enum Slot<G> {
    /// Queued; the waker of the task to wake when it is granted.
    Waiting(Waker),
    /// Granted (and its task woken); the grant waits for the future to take it.
    Granted(G),
}

struct Entry<G> {
    id: u64,
    slot: Slot<G>,
}

/// What a waiting future finds when it looks at its entry.
enum Polled<G> {
    Granted(G),
    Waiting,
    /// No such entry (cannot happen while the invariants hold; the future then arrives anew).
    Missing,
}

// ---------------------------------------------------------------------------------------------
// Bound to one loop (see the module documentation).

/// A task of one loop waited on a primitive bound to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WrongLoop {
    pub(crate) bound: u64,
    pub(crate) running: u64,
}

impl WrongLoop {
    pub(crate) fn message(self, op: impl fmt::Display) -> String {
        format!(
            "{op}: the primitive is bound to event loop #{} (a task of that loop waited on it first) \
             and cannot be waited on by a task of event loop #{}: only one of them runs at a \
             time, so the wait could only hang (asyncio: \"is bound to a different event loop\")",
            self.bound, self.running
        )
    }

    /// For the futures whose output has no room for an error: the task that waited fails with
    /// this panic, which the loop catches (its awaiter gets `TaskError::Panicked`), instead of
    /// hanging.
    pub(crate) fn fail(self, op: impl fmt::Display) -> ! {
        panic!("{}", self.message(op))
    }

    fn into_sync_error(self, op: SyncOp) -> SyncError {
        SyncError::WrongLoop {
            op,
            bound: self.bound,
            running: self.running,
        }
    }
}

/// The loop a primitive belongs to: the loop of the first task that waits on it (asyncio's
/// `_LoopBoundMixin`). Creating, setting, notifying or taking without waiting binds nothing,
/// and a wait outside any evloop loop (another executor) checks nothing.
#[derive(Default)]
pub(crate) struct LoopBinding {
    /// 0 while unbound (loop ids count from 1).
    bound: Cell<u64>,
}

impl LoopBinding {
    /// Binds to the running loop, or checks that it is the one bound to.
    pub(crate) fn bind(&self) -> Result<(), WrongLoop> {
        let Some(running) = running_loop_id() else {
            return Ok(());
        };
        match self.bound.get() {
            0 => {
                self.bound.set(running);
                Ok(())
            }
            bound if bound == running => Ok(()),
            bound => Err(WrongLoop { bound, running }),
        }
    }
}

/// A FIFO queue of waiters: the invariants are listed in the module documentation.
struct WaitQueue<G> {
    entries: VecDeque<Entry<G>>,
    next_id: u64,
    /// How many entries are `Waiting`.
    waiting: usize,
    /// The loop whose tasks may wait here.
    binding: LoopBinding,
}

impl<G> WaitQueue<G> {
    fn new() -> Self {
        WaitQueue {
            entries: VecDeque::new(),
            next_id: 0,
            waiting: 0,
            binding: LoopBinding::default(),
        }
    }

    /// No entries at all, waiting or granted.
    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries still waiting for a grant.
    fn waiting(&self) -> usize {
        self.waiting
    }

    /// Queues a new waiter at the back; returns its id.
    fn push(&mut self, waker: &Waker) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.entries.push_back(Entry {
            id,
            slot: Slot::Waiting(waker.clone()),
        });
        self.waiting += 1;
        id
    }

    fn position(&self, id: u64) -> Option<usize> {
        self.entries.binary_search_by_key(&id, |e| e.id).ok()
    }

    /// The owner's poll: takes its grant (removing the entry), or keeps its waker current.
    fn poll_entry(&mut self, id: u64, waker: &Waker) -> Polled<G> {
        let Some(i) = self.position(id) else {
            return Polled::Missing;
        };
        match &mut self.entries[i].slot {
            Slot::Waiting(w) => {
                if !w.will_wake(waker) {
                    *w = waker.clone();
                }
                Polled::Waiting
            }
            Slot::Granted(_) => match self.entries.remove(i) {
                Some(Entry {
                    slot: Slot::Granted(g), ..
                }) => Polled::Granted(g),
                _ => Polled::Missing,
            },
        }
    }

    /// The owner was dropped: removes its entry and returns what it held.
    fn remove(&mut self, id: u64) -> Option<Slot<G>> {
        let i = self.position(id)?;
        let entry = self.entries.remove(i)?;
        if matches!(entry.slot, Slot::Waiting(_)) {
            self.waiting -= 1;
        }
        Some(entry.slot)
    }

    /// Grants `Waiting` entries front to back, each the value `next` gives, until `next` gives
    /// none or nobody is left waiting; `next` is called only when there is a waiter to take the
    /// value. The granted entries' wakers go to `wakers`. Returns how many were granted.
    fn grant_while(&mut self, mut next: impl FnMut() -> Option<G>, wakers: &mut WakeList) -> usize {
        let mut granted = 0;
        for entry in self.entries.iter_mut() {
            if granted == self.waiting {
                break;
            }
            if !matches!(entry.slot, Slot::Waiting(_)) {
                continue;
            }
            let Some(value) = next() else { break };
            if let Slot::Waiting(w) = std::mem::replace(&mut entry.slot, Slot::Granted(value)) {
                wakers.push(w);
            }
            granted += 1;
        }
        self.waiting -= granted;
        granted
    }
}

/// The state of one primitive, as its waiting futures see it.
trait WaitState {
    /// What a waiter is handed: a permit, a notification, a barrier index.
    type Grant;

    fn queue(&mut self) -> &mut WaitQueue<Self::Grant>;

    /// A new arrival: its grant if it need not wait (this may grant others: a barrier trips).
    fn arrive(&mut self, wakers: &mut WakeList) -> Option<Self::Grant>;

    /// Called after the queue changed: a waiter was queued, took its grant, or was dropped
    /// (`abandoned` is then the grant it never took, to pass on).
    fn settle(&mut self, abandoned: Option<Self::Grant>, wakers: &mut WakeList);
}

/// The leaf future of every wait: it owns at most one queue entry and removes it when it
/// completes or is dropped (see "Cancellation safety" in the module documentation).
struct Waiter<'a, S: WaitState> {
    state: &'a RefCell<S>,
    /// For trace mode and the task dump.
    what: SyncOp,
    id: Option<u64>,
}

impl<'a, S: WaitState> Waiter<'a, S> {
    fn new(state: &'a RefCell<S>, what: SyncOp) -> Self {
        Waiter { state, what, id: None }
    }

    fn poll_state(&mut self, waker: &Waker, wakers: &mut WakeList) -> Poll<Result<S::Grant, WrongLoop>> {
        let mut st = self.state.borrow_mut();
        if let Some(id) = self.id {
            match st.queue().poll_entry(id, waker) {
                Polled::Granted(grant) => {
                    self.id = None;
                    st.settle(None, wakers);
                    return Poll::Ready(Ok(grant));
                }
                Polled::Waiting => return Poll::Pending,
                Polled::Missing => self.id = None,
            }
        }
        if let Some(grant) = st.arrive(wakers) {
            return Poll::Ready(Ok(grant));
        }
        // About to wait: only a task of the primitive's own loop may.
        st.queue().binding.bind()?;
        self.id = Some(st.queue().push(waker));
        st.settle(None, wakers);
        Poll::Pending
    }
}

impl<S: WaitState> Future for Waiter<'_, S> {
    type Output = Result<S::Grant, WrongLoop>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut wakers = WakeList::default();
        let out = this.poll_state(cx.waker(), &mut wakers);
        wakers.wake();
        if out.is_pending() {
            note_awaiting(Awaiting::Sync(this.what));
        }
        out
    }
}

impl<S: WaitState> Drop for Waiter<'_, S> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let mut wakers = WakeList::default();
        let mut st = self.state.borrow_mut();
        let stale = match st.queue().remove(id) {
            // Handed a grant it never saw: the primitive passes it on.
            Some(Slot::Granted(grant)) => {
                st.settle(Some(grant), &mut wakers);
                None
            }
            // Dropped while waiting: it only leaves the queue.
            Some(Slot::Waiting(waker)) => {
                st.settle(None, &mut wakers);
                Some(waker)
            }
            None => None,
        };
        // The state is released before any waker is dropped or woken.
        drop(st);
        drop(stale);
        wakers.wake();
    }
}

// ---------------------------------------------------------------------------------------------
// Permits: the state behind Lock, Mutex, Semaphore and BoundedSemaphore.

struct PoolState {
    available: usize,
    /// Permits given up with `SemaphorePermit::forget` and not given back yet (what a bounded
    /// semaphore may release).
    forgotten: usize,
    queue: WaitQueue<()>,
}

impl PoolState {
    /// Hands available permits to waiters, first come first served (invariant 5).
    fn dispatch(&mut self, wakers: &mut WakeList) {
        if self.available == 0 {
            return;
        }
        let available = &mut self.available;
        self.queue.grant_while(
            || {
                (*available > 0).then(|| {
                    *available -= 1;
                })
            },
            wakers,
        );
    }

    /// Whether an acquire completes at once: a free permit and nobody queued (not even a waiter
    /// that was handed a permit and has not run yet).
    fn can_take(&self) -> bool {
        self.available > 0 && self.queue.is_empty()
    }
}

impl WaitState for PoolState {
    type Grant = ();

    fn queue(&mut self) -> &mut WaitQueue<()> {
        &mut self.queue
    }

    fn arrive(&mut self, _: &mut WakeList) -> Option<()> {
        self.can_take().then(|| self.available -= 1)
    }

    fn settle(&mut self, abandoned: Option<()>, wakers: &mut WakeList) {
        if abandoned.is_some() {
            // Handed a permit it never saw: the permit goes to the next waiter or to the pool.
            self.available = self.available.saturating_add(1);
        }
        self.dispatch(wakers);
    }
}

/// A counted pool of permits with a fair queue.
struct Pool {
    state: RefCell<PoolState>,
}

impl Pool {
    fn new(permits: usize) -> Pool {
        Pool {
            state: RefCell::new(PoolState {
                available: permits,
                forgotten: 0,
                queue: WaitQueue::new(),
            }),
        }
    }

    fn try_take(&self) -> bool {
        let mut st = self.state.borrow_mut();
        st.arrive(&mut WakeList::default()).is_some()
    }

    /// Returns `n` permits: to the first waiters, the rest to the pool.
    fn put_back(&self, n: usize) {
        let mut wakers = WakeList::default();
        {
            let mut st = self.state.borrow_mut();
            st.available = st.available.saturating_add(n);
            st.dispatch(&mut wakers);
        }
        wakers.wake();
    }

    fn available(&self) -> usize {
        self.state.borrow().available
    }

    fn locked(&self) -> bool {
        !self.state.borrow().can_take()
    }

    fn waiting(&self) -> usize {
        self.state.borrow().queue.waiting()
    }

    fn waiter(&self, what: SyncOp) -> Waiter<'_, PoolState> {
        Waiter::new(&self.state, what)
    }
}

// ---------------------------------------------------------------------------------------------
// Lock.

/// A mutual-exclusion lock for tasks (asyncio's `Lock`), FIFO-fair and cancellation-safe.
///
/// [`acquire`](Lock::acquire) gives a [`LockGuard`] that releases the lock when dropped. To
/// protect a value, [`Mutex`] puts it behind the lock.
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use evloop::Lock;
///
/// let log = evloop::run(async {
///     let lock = Rc::new(Lock::new());
///     let log = Rc::new(RefCell::new(Vec::new()));
///     let tasks: Vec<_> = ["a", "b"]
///         .into_iter()
///         .map(|name| {
///             let (lock, log) = (lock.clone(), log.clone());
///             evloop::spawn(async move {
///                 let _guard = lock.acquire().await; // `async with lock:`
///                 log.borrow_mut().push(format!("{name} in"));
///                 evloop::yield_now().await; // the other task cannot enter meanwhile
///                 log.borrow_mut().push(format!("{name} out"));
///             })
///         })
///         .collect();
///     for t in tasks {
///         t.await?;
///     }
///     Ok::<_, evloop::TaskError>(log.take())
/// })??;
/// assert_eq!(log, ["a in", "a out", "b in", "b out"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Lock {
    pool: Pool,
}

impl Lock {
    /// An unlocked lock.
    ///
    /// ```
    /// let lock = evloop::Lock::new();
    /// assert!(!lock.locked());
    /// assert_eq!(lock.waiters(), 0);
    /// ```
    pub fn new() -> Lock {
        Lock { pool: Pool::new(1) }
    }

    /// Waits for the lock (asyncio's `await lock.acquire()` / `async with lock`). Waiters are
    /// served in arrival order; dropping the future gives up its place (or passes the lock on, if
    /// it had just been handed over).
    ///
    /// # Panics
    /// When a task of another loop than the one the lock is bound to would have to wait (see
    /// "Bound to one loop" in the [module documentation](self)): the task fails instead of
    /// hanging.
    ///
    /// ```
    /// evloop::run(async {
    ///     let lock = evloop::Lock::new();
    ///     let guard = lock.acquire().await;
    ///     assert!(lock.locked());
    ///     drop(guard); // the guard releases the lock
    ///     assert!(!lock.locked());
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn acquire(&self) -> LockAcquire<'_> {
        self.acquire_as(SyncOp::LockAcquire)
    }

    fn acquire_as(&self, what: SyncOp) -> LockAcquire<'_> {
        LockAcquire {
            lock: self,
            waiter: self.pool.waiter(what),
        }
    }

    /// Takes the lock if that needs no wait: it is free and nobody is queued for it.
    ///
    /// ```
    /// let lock = evloop::Lock::new();
    /// let guard = lock.try_acquire().expect("the lock is free");
    /// assert!(lock.try_acquire().is_none()); // held: taking it would need a wait
    /// drop(guard);
    /// assert!(lock.try_acquire().is_some());
    /// ```
    pub fn try_acquire(&self) -> Option<LockGuard<'_>> {
        self.pool.try_take().then(|| LockGuard { lock: self })
    }

    /// Whether an acquire would have to wait: the lock is held, or handed to a waiter that has
    /// not run yet.
    ///
    /// ```
    /// let lock = evloop::Lock::new();
    /// assert!(!lock.locked());
    /// let _guard = lock.try_acquire();
    /// assert!(lock.locked());
    /// ```
    pub fn locked(&self) -> bool {
        self.pool.locked()
    }

    /// How many tasks are queued for the lock.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let lock = Rc::new(evloop::Lock::new());
    ///     let guard = lock.acquire().await;
    ///     let waiter = {
    ///         let lock = lock.clone();
    ///         evloop::spawn(async move { drop(lock.acquire().await) })
    ///     };
    ///     evloop::yield_now().await; // the task runs and queues up for the lock
    ///     assert_eq!(lock.waiters(), 1);
    ///     drop(guard); // hands the lock to the waiter
    ///     waiter.await?;
    ///     assert_eq!(lock.waiters(), 0);
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn waiters(&self) -> usize {
        self.pool.waiting()
    }
}

impl Default for Lock {
    fn default() -> Self {
        Lock::new()
    }
}

impl fmt::Debug for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("locked", &self.locked())
            .field("waiters", &self.waiters())
            .finish()
    }
}

/// Proof that the task holds a [`Lock`]; dropping it releases the lock (handing it to the first
/// waiter, if any).
///
/// ```
/// let lock = evloop::Lock::new();
/// {
///     let _guard = lock.try_acquire().expect("free");
///     assert!(lock.locked());
/// } // `_guard` is dropped here, and the lock released
/// assert!(!lock.locked());
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct LockGuard<'a> {
    lock: &'a Lock,
}

impl<'a> LockGuard<'a> {
    /// The lock this guard holds.
    ///
    /// ```
    /// let lock = evloop::Lock::new();
    /// let guard = lock.try_acquire().expect("free");
    /// assert!(std::ptr::eq(guard.lock(), &lock));
    /// ```
    pub fn lock(&self) -> &'a Lock {
        self.lock
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        self.lock.pool.put_back(1);
    }
}

impl fmt::Debug for LockGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LockGuard")
    }
}

/// The future of [`Lock::acquire`] (and [`Condition::acquire`]).
///
/// ```
/// use std::time::Duration;
/// use evloop::{Builder, Lock};
///
/// evloop::run_with(Builder::new().virtual_clock(true), async {
///     let lock = Lock::new();
///     let _held = lock.acquire().await;
///     // The timeout drops the waiting `LockAcquire`, which gives up its place in the queue.
///     let r = evloop::timeout(Duration::from_secs(1), lock.acquire()).await;
///     assert!(r.is_err());
///     assert_eq!(lock.waiters(), 0);
/// })?;
/// # Ok::<(), evloop::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct LockAcquire<'a> {
    lock: &'a Lock,
    waiter: Waiter<'a, PoolState>,
}

impl<'a> Future for LockAcquire<'a> {
    type Output = LockGuard<'a>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<LockGuard<'a>> {
        let this = self.get_mut();
        let lock = this.lock;
        let what = this.waiter.what;
        Pin::new(&mut this.waiter).poll(cx).map(|r| match r {
            Ok(()) => LockGuard { lock },
            Err(wrong) => wrong.fail(what),
        })
    }
}

impl fmt::Debug for LockAcquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockAcquire")
            .field("queued", &self.waiter.id.is_some())
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Mutex.

/// A value behind a [`Lock`]: [`lock`](Mutex::lock) waits for the lock and gives a
/// [`MutexGuard`] through which the value can be read and changed.
///
/// ```
/// use std::rc::Rc;
/// use evloop::Mutex;
///
/// let total = evloop::run(async {
///     let counter = Rc::new(Mutex::new(0));
///     let tasks: Vec<_> = (0..3)
///         .map(|_| {
///             let counter = counter.clone();
///             evloop::spawn(async move {
///                 let mut n = counter.lock().await;
///                 let seen = *n;
///                 evloop::yield_now().await; // nobody else can change the value meanwhile
///                 *n = seen + 1;
///             })
///         })
///         .collect();
///     for t in tasks {
///         t.await?;
///     }
///     let total = *counter.lock().await;
///     Ok::<_, evloop::TaskError>(total)
/// })??;
/// assert_eq!(total, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Mutex<T: ?Sized> {
    lock: Lock,
    // Borrowed (mutably) only by the one `MutexGuard`, which exists only while the lock is
    // held, so the borrow can never conflict.
    value: RefCell<T>,
}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    ///
    /// ```
    /// let m = evloop::Mutex::new(5);
    /// assert!(!m.locked());
    /// assert_eq!(*m.try_lock().expect("unlocked"), 5);
    /// ```
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            lock: Lock::new(),
            value: RefCell::new(value),
        }
    }

    /// The value (no lock needed: the mutex is consumed).
    ///
    /// ```
    /// let m = evloop::Mutex::new(String::from("a"));
    /// m.try_lock().expect("unlocked").push('b');
    /// assert_eq!(m.into_inner(), "ab");
    /// ```
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Waits for the lock, FIFO-fair and cancellation-safe like [`Lock::acquire`].
    ///
    /// # Panics
    /// Like [`Lock::acquire`], when a task of another loop would have to wait.
    ///
    /// ```
    /// let v = evloop::run(async {
    ///     let m = evloop::Mutex::new(Vec::new());
    ///     m.lock().await.push(1); // the guard is dropped at the end of the statement
    ///     m.lock().await.push(2);
    ///     let v = m.lock().await.clone();
    ///     v
    /// })?;
    /// assert_eq!(v, [1, 2]);
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn lock(&self) -> MutexLock<'_, T> {
        MutexLock {
            mutex: self,
            acquire: self.lock.acquire_as(SyncOp::MutexLock),
        }
    }

    /// Takes the lock if that needs no wait.
    ///
    /// ```
    /// let m = evloop::Mutex::new(0);
    /// let mut guard = m.try_lock().expect("unlocked");
    /// *guard += 1;
    /// assert!(m.try_lock().is_none()); // held by `guard`
    /// drop(guard);
    /// assert_eq!(*m.try_lock().expect("unlocked"), 1);
    /// ```
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.lock.try_acquire().map(|guard| self.guard(guard))
    }

    /// Whether a `lock()` would have to wait.
    ///
    /// ```
    /// let m = evloop::Mutex::new(());
    /// let guard = m.try_lock();
    /// assert!(m.locked());
    /// drop(guard);
    /// assert!(!m.locked());
    /// ```
    pub fn locked(&self) -> bool {
        self.lock.locked()
    }

    /// The value, through a unique reference (no lock needed: no guard can exist).
    ///
    /// ```
    /// let mut m = evloop::Mutex::new(1);
    /// *m.get_mut() += 1; // `&mut Mutex`: no guard can exist, so no lock is needed
    /// assert_eq!(m.into_inner(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    fn guard<'a>(&'a self, guard: LockGuard<'a>) -> MutexGuard<'a, T> {
        MutexGuard {
            // Cannot fail: the only other borrow is a guard's, and we hold the lock.
            value: self.value.borrow_mut(),
            _lock: guard,
        }
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Some(guard) => d.field("value", &&*guard),
            None => d.field("value", &format_args!("<locked>")),
        };
        d.finish()
    }
}

/// Access to a [`Mutex`]'s value while its lock is held; dropping it releases the lock.
///
/// ```
/// let m = evloop::Mutex::new(vec![1, 2]);
/// {
///     let mut guard = m.try_lock().expect("unlocked");
///     guard.push(3); // `DerefMut` to the value
///     assert_eq!(guard.len(), 3);
/// } // unlocked here
/// assert!(!m.locked());
/// assert_eq!(m.into_inner(), [1, 2, 3]);
/// ```
#[must_use = "the mutex is unlocked as soon as the guard is dropped"]
pub struct MutexGuard<'a, T: ?Sized> {
    // Declared first so that it is dropped before the lock is released.
    value: RefMut<'a, T>,
    _lock: LockGuard<'a>,
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.value, f)
    }
}

/// The future of [`Mutex::lock`].
///
/// ```
/// use std::rc::Rc;
///
/// let n = evloop::run(async {
///     let m = Rc::new(evloop::Mutex::new(0));
///     let guard = m.lock().await;
///     let adder = {
///         let m = m.clone();
///         evloop::spawn(async move { *m.lock().await += 1 })
///     };
///     evloop::yield_now().await;
///     assert!(!adder.done()); // its `MutexLock` waits for `guard`
///     drop(guard);
///     adder.await?;
///     let n = *m.lock().await;
///     Ok::<_, evloop::TaskError>(n)
/// })??;
/// assert_eq!(n, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct MutexLock<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    acquire: LockAcquire<'a>,
}

impl<'a, T: ?Sized> Future for MutexLock<'a, T> {
    type Output = MutexGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<MutexGuard<'a, T>> {
        let this = self.get_mut();
        let mutex = this.mutex;
        Pin::new(&mut this.acquire).poll(cx).map(|guard| mutex.guard(guard))
    }
}

impl<T: ?Sized> fmt::Debug for MutexLock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutexLock")
            .field("queued", &self.acquire.waiter.id.is_some())
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Semaphore and BoundedSemaphore.

/// A counter of permits (asyncio's `Semaphore`), FIFO-fair and cancellation-safe.
///
/// [`acquire`](Semaphore::acquire) waits for a permit and gives a [`SemaphorePermit`] that
/// returns it when dropped. [`add_permits`](Semaphore::add_permits) (or
/// [`release`](Semaphore::release), one at a time) adds permits, for instance to give back one
/// that was kept with [`SemaphorePermit::forget`]; there is no upper bound (see
/// [`BoundedSemaphore`] for one).
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use evloop::Semaphore;
///
/// let peak = evloop::run(async {
///     let sem = Rc::new(Semaphore::new(2)); // at most two tasks at a time
///     let (running, peak) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
///     let tasks: Vec<_> = (0..5)
///         .map(|_| {
///             let (sem, running, peak) = (sem.clone(), running.clone(), peak.clone());
///             evloop::spawn(async move {
///                 let _permit = sem.acquire().await; // `async with sem:`
///                 running.set(running.get() + 1);
///                 peak.set(peak.get().max(running.get()));
///                 evloop::yield_now().await;
///                 running.set(running.get() - 1);
///             })
///         })
///         .collect();
///     for t in tasks {
///         t.await?;
///     }
///     Ok::<_, evloop::TaskError>(peak.get())
/// })??;
/// assert_eq!(peak, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Semaphore {
    pool: Pool,
}

impl Semaphore {
    /// A semaphore with `permits` permits available.
    ///
    /// ```
    /// let sem = evloop::Semaphore::new(3);
    /// assert_eq!(sem.available_permits(), 3);
    /// assert!(!sem.locked());
    /// ```
    pub fn new(permits: usize) -> Semaphore {
        Semaphore {
            pool: Pool::new(permits),
        }
    }

    /// Waits for a permit; waiters are served in arrival order.
    ///
    /// # Panics
    /// Like [`Lock::acquire`], when a task of another loop would have to wait.
    ///
    /// ```
    /// evloop::run(async {
    ///     let sem = evloop::Semaphore::new(1);
    ///     let permit = sem.acquire().await;
    ///     assert_eq!(sem.available_permits(), 0);
    ///     drop(permit); // gives the permit back
    ///     assert_eq!(sem.available_permits(), 1);
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn acquire(&self) -> SemaphoreAcquire<'_> {
        SemaphoreAcquire {
            pool: &self.pool,
            waiter: self.pool.waiter(SyncOp::SemaphoreAcquire),
        }
    }

    /// Takes a permit if that needs no wait: one is available and nobody is queued.
    ///
    /// ```
    /// let sem = evloop::Semaphore::new(1);
    /// let permit = sem.try_acquire().expect("one permit is free");
    /// assert!(sem.try_acquire().is_none());
    /// drop(permit);
    /// assert!(sem.try_acquire().is_some());
    /// ```
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        self.pool.try_take().then(|| SemaphorePermit { pool: &self.pool })
    }

    /// Permits nobody holds or has been handed (asyncio's `_value`).
    ///
    /// ```
    /// let sem = evloop::Semaphore::new(2);
    /// let _a = sem.try_acquire();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.pool.available()
    }

    /// Whether an acquire would have to wait (asyncio's `locked()`).
    ///
    /// ```
    /// let sem = evloop::Semaphore::new(1);
    /// assert!(!sem.locked());
    /// let _permit = sem.try_acquire();
    /// assert!(sem.locked()); // an acquire would wait
    /// ```
    pub fn locked(&self) -> bool {
        self.pool.locked()
    }

    /// How many tasks are queued for a permit.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let sem = Rc::new(evloop::Semaphore::new(0));
    ///     let waiter = {
    ///         let sem = sem.clone();
    ///         evloop::spawn(async move { sem.acquire().await.forget() })
    ///     };
    ///     evloop::yield_now().await; // the task queues up for a permit
    ///     assert_eq!(sem.waiters(), 1);
    ///     sem.release();
    ///     waiter.await?;
    ///     assert_eq!(sem.waiters(), 0);
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn waiters(&self) -> usize {
        self.pool.waiting()
    }

    /// Adds `n` permits, handing them to the first waiters (the count saturates at
    /// `usize::MAX`).
    ///
    /// ```
    /// let sem = evloop::Semaphore::new(0);
    /// assert!(sem.try_acquire().is_none());
    /// sem.add_permits(2);
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn add_permits(&self, n: usize) {
        self.pool.put_back(n);
    }

    /// Adds one permit (asyncio's `release()`).
    ///
    /// ```
    /// let sem = evloop::Semaphore::new(1);
    /// sem.try_acquire().expect("free").forget(); // asyncio's `acquire()` without `async with`
    /// assert_eq!(sem.available_permits(), 0);
    /// sem.release();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn release(&self) {
        self.add_permits(1);
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("available", &self.available_permits())
            .field("waiters", &self.waiters())
            .finish()
    }
}

/// A [`Semaphore`] that cannot be released beyond its initial number of permits (asyncio's
/// `BoundedSemaphore`): [`release`](BoundedSemaphore::release) gives back a permit kept with
/// [`SemaphorePermit::forget`], and is a [`SyncError::OverReleased`] when there is none.
///
/// ```
/// use evloop::{BoundedSemaphore, SyncError};
///
/// let sem = BoundedSemaphore::new(1);
/// sem.try_acquire().expect("free").forget();
/// assert_eq!(sem.release(), Ok(())); // gives the forgotten permit back
/// // A second release would push the count past its bound: refused, nothing changes.
/// assert_eq!(sem.release(), Err(SyncError::OverReleased { bound: 1 }));
/// assert_eq!(sem.available_permits(), 1);
/// ```
pub struct BoundedSemaphore {
    pool: Pool,
    bound: usize,
}

impl BoundedSemaphore {
    /// A semaphore with `permits` permits, which is also its maximum.
    ///
    /// ```
    /// let sem = evloop::BoundedSemaphore::new(2);
    /// assert_eq!(sem.available_permits(), 2);
    /// assert_eq!(sem.bound(), 2);
    /// ```
    pub fn new(permits: usize) -> BoundedSemaphore {
        BoundedSemaphore {
            pool: Pool::new(permits),
            bound: permits,
        }
    }

    /// Waits for a permit; waiters are served in arrival order.
    ///
    /// # Panics
    /// Like [`Lock::acquire`], when a task of another loop would have to wait.
    ///
    /// ```
    /// evloop::run(async {
    ///     let sem = evloop::BoundedSemaphore::new(1);
    ///     let permit = sem.acquire().await;
    ///     assert!(sem.locked());
    ///     drop(permit);
    ///     assert_eq!(sem.available_permits(), 1);
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn acquire(&self) -> SemaphoreAcquire<'_> {
        SemaphoreAcquire {
            pool: &self.pool,
            waiter: self.pool.waiter(SyncOp::BoundedSemaphoreAcquire),
        }
    }

    /// Takes a permit if that needs no wait.
    ///
    /// ```
    /// let sem = evloop::BoundedSemaphore::new(1);
    /// let permit = sem.try_acquire().expect("one permit is free");
    /// assert!(sem.try_acquire().is_none());
    /// drop(permit);
    /// assert!(sem.try_acquire().is_some());
    /// ```
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        self.pool.try_take().then(|| SemaphorePermit { pool: &self.pool })
    }

    /// Permits nobody holds or has been handed.
    ///
    /// ```
    /// let sem = evloop::BoundedSemaphore::new(3);
    /// let _a = sem.try_acquire();
    /// let _b = sem.try_acquire();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.pool.available()
    }

    /// The initial number of permits, which the count never exceeds.
    ///
    /// ```
    /// let sem = evloop::BoundedSemaphore::new(2);
    /// let _permit = sem.try_acquire();
    /// assert_eq!(sem.bound(), 2); // the bound does not move with the count
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn bound(&self) -> usize {
        self.bound
    }

    /// Whether an acquire would have to wait.
    ///
    /// ```
    /// let sem = evloop::BoundedSemaphore::new(1);
    /// let permit = sem.try_acquire();
    /// assert!(sem.locked());
    /// drop(permit);
    /// assert!(!sem.locked());
    /// ```
    pub fn locked(&self) -> bool {
        self.pool.locked()
    }

    /// How many tasks are queued for a permit.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let sem = Rc::new(evloop::BoundedSemaphore::new(1));
    ///     let permit = sem.acquire().await;
    ///     let waiter = {
    ///         let sem = sem.clone();
    ///         evloop::spawn(async move { drop(sem.acquire().await) })
    ///     };
    ///     evloop::yield_now().await;
    ///     assert_eq!(sem.waiters(), 1);
    ///     drop(permit); // handed to the waiter
    ///     waiter.await?;
    ///     assert_eq!(sem.waiters(), 0);
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn waiters(&self) -> usize {
        self.pool.waiting()
    }

    /// Gives back one permit that was kept with [`SemaphorePermit::forget`]. With none to give
    /// back, the count would exceed its initial value: [`SyncError::OverReleased`], and nothing
    /// changes.
    ///
    /// ```
    /// use evloop::{BoundedSemaphore, SyncError};
    ///
    /// let sem = BoundedSemaphore::new(2);
    /// let permit = sem.try_acquire().expect("free");
    /// permit.forget();
    /// assert_eq!(sem.available_permits(), 1);
    /// assert_eq!(sem.release(), Ok(()));
    /// assert_eq!(sem.available_permits(), 2);
    /// assert_eq!(sem.release(), Err(SyncError::OverReleased { bound: 2 }));
    /// ```
    pub fn release(&self) -> Result<(), SyncError> {
        {
            let mut st = self.pool.state.borrow_mut();
            if st.forgotten == 0 {
                return Err(SyncError::OverReleased { bound: self.bound });
            }
            st.forgotten -= 1;
        }
        self.pool.put_back(1);
        Ok(())
    }
}

impl fmt::Debug for BoundedSemaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundedSemaphore")
            .field("available", &self.available_permits())
            .field("bound", &self.bound)
            .field("waiters", &self.waiters())
            .finish()
    }
}

/// A permit of a [`Semaphore`] or [`BoundedSemaphore`]; dropping it returns the permit (to the
/// first waiter, if any).
///
/// ```
/// let sem = evloop::Semaphore::new(1);
/// {
///     let _permit = sem.try_acquire().expect("free");
///     assert_eq!(sem.available_permits(), 0);
/// } // the permit goes back here
/// assert_eq!(sem.available_permits(), 1);
/// ```
#[must_use = "the permit is returned as soon as it is dropped"]
pub struct SemaphorePermit<'a> {
    pool: &'a Pool,
}

impl SemaphorePermit<'_> {
    /// Keeps the permit out of the semaphore without a guard (asyncio's `acquire()` without a
    /// matching `release()`): give it back later with [`Semaphore::release`] /
    /// [`Semaphore::add_permits`], or [`BoundedSemaphore::release`].
    ///
    /// ```
    /// let sem = evloop::Semaphore::new(2);
    /// sem.try_acquire().expect("free").forget();
    /// assert_eq!(sem.available_permits(), 1); // still taken, with no guard to give it back
    /// sem.release(); // asyncio's `sem.release()`
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn forget(self) {
        let pool = self.pool;
        std::mem::forget(self);
        let mut st = pool.state.borrow_mut();
        st.forgotten = st.forgotten.saturating_add(1);
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        self.pool.put_back(1);
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SemaphorePermit")
    }
}

/// The future of [`Semaphore::acquire`] and [`BoundedSemaphore::acquire`].
///
/// ```
/// use std::rc::Rc;
///
/// evloop::run(async {
///     let sem = Rc::new(evloop::Semaphore::new(0));
///     let first = {
///         let sem = sem.clone();
///         evloop::spawn(async move { sem.acquire().await.forget() })
///     };
///     evloop::yield_now().await; // `first` waits in line
///     sem.release(); // the permit is handed to `first` ...
///     assert!(sem.try_acquire().is_none()); // ... so a newcomer cannot take it
///     first.await?;
///     Ok::<(), evloop::TaskError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct SemaphoreAcquire<'a> {
    pool: &'a Pool,
    waiter: Waiter<'a, PoolState>,
}

impl<'a> Future for SemaphoreAcquire<'a> {
    type Output = SemaphorePermit<'a>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<SemaphorePermit<'a>> {
        let this = self.get_mut();
        let pool = this.pool;
        let what = this.waiter.what;
        Pin::new(&mut this.waiter).poll(cx).map(|r| match r {
            Ok(()) => SemaphorePermit { pool },
            Err(wrong) => wrong.fail(what),
        })
    }
}

impl fmt::Debug for SemaphoreAcquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphoreAcquire")
            .field("queued", &self.waiter.id.is_some())
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Event.

struct EventState {
    set: bool,
    queue: WaitQueue<()>,
}

impl WaitState for EventState {
    type Grant = ();

    fn queue(&mut self) -> &mut WaitQueue<()> {
        &mut self.queue
    }

    fn arrive(&mut self, _: &mut WakeList) -> Option<()> {
        self.set.then_some(())
    }

    fn settle(&mut self, _: Option<()>, _: &mut WakeList) {}
}

/// A flag tasks can wait for (asyncio's `Event`): [`set`](Event::set) wakes every waiter.
///
/// A waiter woken by `set()` returns even if the event is cleared again before its task runs.
///
/// ```
/// use std::rc::Rc;
///
/// let got = evloop::run(async {
///     let ready = Rc::new(evloop::Event::new());
///     let waiter = {
///         let ready = ready.clone();
///         evloop::spawn(async move {
///             ready.wait().await;
///             "woken"
///         })
///     };
///     evloop::yield_now().await;
///     assert!(!waiter.done());
///     ready.set();
///     waiter.await
/// })??;
/// assert_eq!(got, "woken");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Event {
    state: RefCell<EventState>,
}

impl Event {
    /// A new event, not set.
    ///
    /// ```
    /// let event = evloop::Event::new();
    /// assert!(!event.is_set());
    /// ```
    pub fn new() -> Event {
        Event {
            state: RefCell::new(EventState {
                set: false,
                queue: WaitQueue::new(),
            }),
        }
    }

    /// Sets the flag and wakes every waiter.
    ///
    /// ```
    /// evloop::run(async {
    ///     let event = evloop::Event::new();
    ///     event.set();
    ///     assert!(event.is_set());
    ///     event.wait().await; // set: returns at once
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn set(&self) {
        let mut wakers = WakeList::default();
        {
            let mut st = self.state.borrow_mut();
            if st.set {
                return;
            }
            st.set = true;
            st.queue.grant_while(|| Some(()), &mut wakers);
        }
        wakers.wake();
    }

    /// Clears the flag: later waits wait for the next `set()`.
    ///
    /// ```
    /// let event = evloop::Event::new();
    /// event.set();
    /// event.clear();
    /// assert!(!event.is_set()); // a wait would wait for the next `set()`
    /// ```
    pub fn clear(&self) {
        self.state.borrow_mut().set = false;
    }

    /// Whether the flag is set.
    ///
    /// ```
    /// let event = evloop::Event::new();
    /// assert!(!event.is_set());
    /// event.set();
    /// assert!(event.is_set());
    /// ```
    pub fn is_set(&self) -> bool {
        self.state.borrow().set
    }

    /// Waits until the flag is set (at once if it is).
    ///
    /// # Panics
    /// Like [`Lock::acquire`], when a task of another loop would have to wait.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let event = Rc::new(evloop::Event::new());
    ///     let setter = event.clone();
    ///     evloop::spawn(async move { setter.set() });
    ///     event.wait().await; // until the task sets it
    ///     assert!(event.is_set());
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn wait(&self) -> EventWait<'_> {
        EventWait {
            waiter: Waiter::new(&self.state, SyncOp::EventWait),
        }
    }

    /// How many tasks wait for the flag.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let event = Rc::new(evloop::Event::new());
    ///     let tasks: Vec<_> = (0..2)
    ///         .map(|_| {
    ///             let event = event.clone();
    ///             evloop::spawn(async move { event.wait().await })
    ///         })
    ///         .collect();
    ///     evloop::yield_now().await;
    ///     assert_eq!(event.waiters(), 2);
    ///     event.set(); // wakes both
    ///     for t in tasks {
    ///         t.await?;
    ///     }
    ///     assert_eq!(event.waiters(), 0);
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn waiters(&self) -> usize {
        self.state.borrow().queue.waiting()
    }
}

impl Default for Event {
    fn default() -> Self {
        Event::new()
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("set", &self.is_set())
            .field("waiters", &self.waiters())
            .finish()
    }
}

/// The future of [`Event::wait`].
///
/// ```
/// use std::time::Duration;
/// use evloop::{Builder, Event};
///
/// evloop::run_with(Builder::new().virtual_clock(true), async {
///     let event = Event::new();
///     // Nobody sets it: the timeout drops the `EventWait`, which leaves the waiters.
///     let r = evloop::timeout(Duration::from_secs(1), event.wait()).await;
///     assert!(r.is_err());
///     assert_eq!(event.waiters(), 0);
/// })?;
/// # Ok::<(), evloop::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct EventWait<'a> {
    waiter: Waiter<'a, EventState>,
}

impl Future for EventWait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let waiter = &mut self.get_mut().waiter;
        let what = waiter.what;
        Pin::new(waiter).poll(cx).map(|r| match r {
            Ok(()) => (),
            Err(wrong) => wrong.fail(what),
        })
    }
}

impl fmt::Debug for EventWait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventWait")
            .field("queued", &self.waiter.id.is_some())
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Condition.

struct NotifyState {
    queue: WaitQueue<()>,
}

impl WaitState for NotifyState {
    type Grant = ();

    fn queue(&mut self) -> &mut WaitQueue<()> {
        &mut self.queue
    }

    fn arrive(&mut self, _: &mut WakeList) -> Option<()> {
        None
    }

    fn settle(&mut self, abandoned: Option<()>, wakers: &mut WakeList) {
        if abandoned.is_some() {
            // Notified but dropped before it saw it: the notification goes to the next waiter.
            let mut one = Some(());
            self.queue.grant_while(|| one.take(), wakers);
        }
    }
}

/// A condition variable over a [`Lock`] (asyncio's `Condition`): tasks holding the lock wait
/// for a notification; [`notify`](Condition::notify) wakes the longest waiters.
///
/// [`wait`](Condition::wait) takes the lock's guard, releases the lock while it waits and
/// re-acquires it before returning the guard. A waiter notified but dropped before it returned
/// (cancelled, timed out) passes the notification on to the next waiter, so a notification is
/// never lost (CPython gh-112202).
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use evloop::Condition;
///
/// let got = evloop::run(async {
///     let cond = Rc::new(Condition::new());
///     let items = Rc::new(Cell::new(0));
///     let consumer = {
///         let (cond, items) = (cond.clone(), items.clone());
///         evloop::spawn(async move {
///             let guard = cond.acquire().await; // `async with cond:`
///             let _guard = cond.wait_for(guard, || items.get() > 0).await?;
///             Ok::<_, evloop::SyncError>(items.get())
///         })
///     };
///     evloop::yield_now().await; // the consumer waits, with the lock released
///     let guard = cond.acquire().await;
///     items.set(3);
///     cond.notify_all();
///     drop(guard);
///     consumer.await
/// })???;
/// assert_eq!(got, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Condition {
    lock: Rc<Lock>,
    notify: RefCell<NotifyState>,
}

impl Condition {
    /// A condition with its own lock.
    ///
    /// ```
    /// let cond = evloop::Condition::new();
    /// assert!(!cond.locked());
    /// assert_eq!(cond.waiters(), 0);
    /// ```
    pub fn new() -> Condition {
        Condition::with_lock(Rc::new(Lock::new()))
    }

    /// A condition over `lock`, which other conditions may share (asyncio's `Condition(lock)`).
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::{Condition, Lock};
    ///
    /// let lock = Rc::new(Lock::new());
    /// let not_empty = Condition::with_lock(lock.clone());
    /// let not_full = Condition::with_lock(lock.clone());
    /// let _guard = not_empty.try_acquire().expect("free");
    /// assert!(not_full.locked()); // one lock behind both conditions
    /// ```
    pub fn with_lock(lock: Rc<Lock>) -> Condition {
        Condition {
            lock,
            notify: RefCell::new(NotifyState {
                queue: WaitQueue::new(),
            }),
        }
    }

    /// The condition's lock.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// let lock = Rc::new(evloop::Lock::new());
    /// let cond = evloop::Condition::with_lock(lock.clone());
    /// assert!(Rc::ptr_eq(cond.lock(), &lock));
    /// ```
    pub fn lock(&self) -> &Rc<Lock> {
        &self.lock
    }

    /// Waits for the lock (asyncio's `async with cond`).
    ///
    /// ```
    /// evloop::run(async {
    ///     let cond = evloop::Condition::new();
    ///     let guard = cond.acquire().await;
    ///     assert!(cond.locked());
    ///     drop(guard);
    ///     assert!(!cond.locked());
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn acquire(&self) -> LockAcquire<'_> {
        self.lock.acquire()
    }

    /// Takes the lock if that needs no wait.
    ///
    /// ```
    /// let cond = evloop::Condition::new();
    /// let guard = cond.try_acquire().expect("free");
    /// assert!(cond.try_acquire().is_none());
    /// drop(guard);
    /// ```
    pub fn try_acquire(&self) -> Option<LockGuard<'_>> {
        self.lock.try_acquire()
    }

    /// Whether the lock is taken.
    ///
    /// ```
    /// let cond = evloop::Condition::new();
    /// let _guard = cond.try_acquire();
    /// assert!(cond.locked());
    /// assert!(cond.lock().locked()); // the same lock
    /// ```
    pub fn locked(&self) -> bool {
        self.lock.locked()
    }

    /// Releases the lock held by `guard`, waits for a notification, re-acquires the lock and
    /// returns its guard. [`SyncError::ForeignLockGuard`] (and the guard is dropped) if `guard`
    /// holds another lock.
    ///
    /// Dropping the future while it waits leaves the lock released (the guard was given up) and
    /// passes on a notification it had already received.
    ///
    /// [`SyncError::WrongLoop`] (and the lock released) when the condition, or its lock, is
    /// bound to another loop than the waiting task's (see "Bound to one loop" in the
    /// [module documentation](self)).
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::{Condition, Lock, SyncError};
    ///
    /// evloop::run(async {
    ///     let cond = Rc::new(Condition::new());
    ///     let waiter = {
    ///         let cond = cond.clone();
    ///         evloop::spawn(async move {
    ///             let guard = cond.acquire().await;
    ///             let guard = cond.wait(guard).await?; // the lock is released while it waits
    ///             assert!(guard.lock().locked()); // and held again when it returns
    ///             Ok::<(), SyncError>(())
    ///         })
    ///     };
    ///     evloop::yield_now().await;
    ///     assert!(!cond.locked());
    ///     assert_eq!(cond.notify(1), 1);
    ///     waiter.await??;
    ///
    ///     // The guard of another lock is refused.
    ///     let other = Lock::new();
    ///     let r = cond.wait(other.acquire().await).await;
    ///     assert_eq!(r.err(), Some(SyncError::ForeignLockGuard));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn wait<'g>(&self, guard: LockGuard<'g>) -> Result<LockGuard<'g>, SyncError> {
        let lock = guard.lock;
        if !std::ptr::eq(lock, &*self.lock) {
            return Err(SyncError::ForeignLockGuard);
        }
        let notified = Waiter::new(&self.notify, SyncOp::ConditionWait);
        // Releasing and queueing happen in the same step (the first poll below comes before any
        // other task can run), so no notification can slip in between.
        drop(guard);
        notified.await.map_err(|w| w.into_sync_error(SyncOp::ConditionWait))?;
        // Notified. Until the lock is back, a drop passes the notification on (CPython does the
        // same; at worst the next waiter sees a spurious wakeup, which the protocol allows).
        let pass_on = PassOn { cond: Some(self) };
        Waiter::new(&lock.pool.state, SyncOp::ConditionReacquire)
            .await
            .map_err(|w| w.into_sync_error(SyncOp::ConditionReacquire))?;
        pass_on.disarm();
        Ok(LockGuard { lock })
    }

    /// Waits until `predicate` returns true (asyncio's `wait_for`): checks it with the lock
    /// held, and waits for a notification each time it is false.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let cond = Rc::new(evloop::Condition::new());
    ///     let count = Rc::new(Cell::new(0));
    ///     let watcher = {
    ///         let (cond, count) = (cond.clone(), count.clone());
    ///         evloop::spawn(async move {
    ///             let guard = cond.acquire().await;
    ///             // Woken by each notify, it waits again until the predicate holds.
    ///             let _guard = cond.wait_for(guard, || count.get() >= 2).await?;
    ///             Ok::<_, evloop::SyncError>(count.get())
    ///         })
    ///     };
    ///     for _ in 0..2 {
    ///         evloop::yield_now().await;
    ///         count.set(count.get() + 1);
    ///         cond.notify_all();
    ///     }
    ///     assert_eq!(watcher.await??, 2);
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn wait_for<'g>(
        &self,
        mut guard: LockGuard<'g>,
        mut predicate: impl FnMut() -> bool,
    ) -> Result<LockGuard<'g>, SyncError> {
        if !std::ptr::eq(guard.lock, &*self.lock) {
            return Err(SyncError::ForeignLockGuard);
        }
        while !predicate() {
            guard = self.wait(guard).await?;
        }
        Ok(guard)
    }

    /// Wakes up to `n` waiters, longest-waiting first; returns how many it woke. The lock need
    /// not be held.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let cond = Rc::new(evloop::Condition::new());
    ///     let tasks: Vec<_> = (0..2)
    ///         .map(|_| {
    ///             let cond = cond.clone();
    ///             evloop::spawn(async move {
    ///                 let guard = cond.acquire().await;
    ///                 drop(cond.wait(guard).await);
    ///             })
    ///         })
    ///         .collect();
    ///     evloop::yield_now().await;
    ///     assert_eq!(cond.notify(1), 1); // the longest waiter
    ///     assert_eq!(cond.waiters(), 1);
    ///     assert_eq!(cond.notify(5), 1); // only one was left
    ///     for t in tasks {
    ///         t.await?;
    ///     }
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn notify(&self, n: usize) -> usize {
        let mut wakers = WakeList::default();
        let woken = {
            let mut left = n;
            self.notify.borrow_mut().queue.grant_while(
                || {
                    (left > 0).then(|| {
                        left -= 1;
                    })
                },
                &mut wakers,
            )
        };
        wakers.wake();
        woken
    }

    /// Wakes every waiter; returns how many.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let cond = Rc::new(evloop::Condition::new());
    ///     let tasks: Vec<_> = (0..3)
    ///         .map(|_| {
    ///             let cond = cond.clone();
    ///             evloop::spawn(async move {
    ///                 let guard = cond.acquire().await;
    ///                 drop(cond.wait(guard).await);
    ///             })
    ///         })
    ///         .collect();
    ///     evloop::yield_now().await;
    ///     assert_eq!(cond.notify_all(), 3);
    ///     for t in tasks {
    ///         t.await?;
    ///     }
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn notify_all(&self) -> usize {
        self.notify(usize::MAX)
    }

    /// How many tasks wait for a notification.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let cond = Rc::new(evloop::Condition::new());
    ///     let waiter = {
    ///         let cond = cond.clone();
    ///         evloop::spawn(async move {
    ///             let guard = cond.acquire().await;
    ///             drop(cond.wait(guard).await);
    ///         })
    ///     };
    ///     evloop::yield_now().await;
    ///     assert_eq!(cond.waiters(), 1);
    ///     cond.notify(1);
    ///     waiter.await?;
    ///     assert_eq!(cond.waiters(), 0);
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn waiters(&self) -> usize {
        self.notify.borrow().queue.waiting()
    }
}

impl Default for Condition {
    fn default() -> Self {
        Condition::new()
    }
}

impl fmt::Debug for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condition")
            .field("locked", &self.locked())
            .field("waiters", &self.waiters())
            .finish()
    }
}

/// Passes a received notification on if dropped before it is disarmed.
struct PassOn<'c> {
    cond: Option<&'c Condition>,
}

impl PassOn<'_> {
    fn disarm(mut self) {
        self.cond = None;
    }
}

impl Drop for PassOn<'_> {
    fn drop(&mut self) {
        if let Some(cond) = self.cond {
            cond.notify(1);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Barrier.

/// Why a barrier wait failed (the public error is built with the party count).
#[derive(Clone, Copy)]
struct Broken;

struct BarrierState {
    parties: usize,
    broken: bool,
    queue: WaitQueue<Result<usize, Broken>>,
}

impl BarrierState {
    /// Fails every waiter of the current round.
    fn break_waiters(&mut self, wakers: &mut WakeList) {
        self.queue.grant_while(|| Some(Err(Broken)), wakers);
    }
}

impl WaitState for BarrierState {
    type Grant = Result<usize, Broken>;

    fn queue(&mut self) -> &mut WaitQueue<Self::Grant> {
        &mut self.queue
    }

    fn arrive(&mut self, wakers: &mut WakeList) -> Option<Self::Grant> {
        if self.broken {
            return Some(Err(Broken));
        }
        if self.queue.waiting() + 1 < self.parties {
            return None;
        }
        // The last party: the barrier trips. The waiters get their arrival indexes in order,
        // this task the last one, and the next round starts empty.
        let mut index = 0;
        self.queue.grant_while(
            || {
                let i = index;
                index += 1;
                Some(Ok(i))
            },
            wakers,
        );
        Some(Ok(index))
    }

    fn settle(&mut self, _: Option<Self::Grant>, _: &mut WakeList) {}
}

/// A meeting point for a fixed number of tasks (asyncio 3.11's `Barrier`): each
/// [`wait`](Barrier::wait) blocks until `parties` tasks are waiting, then all of them continue,
/// and the barrier is ready for the next round.
///
/// `wait()` returns the task's arrival index in its round, `0..parties` (the last to arrive gets
/// `parties - 1`). A waiter dropped before the barrier trips leaves the round (it no longer
/// counts). [`abort`](Barrier::abort) breaks the barrier for good, [`reset`](Barrier::reset)
/// breaks the current round only; the waiters they break get [`SyncError::BrokenBarrier`].
///
/// ```
/// use std::rc::Rc;
///
/// let mut indexes = evloop::run(async {
///     let barrier = Rc::new(evloop::Barrier::new(3));
///     let tasks: Vec<_> = (0..3)
///         .map(|_| {
///             let barrier = barrier.clone();
///             evloop::spawn(async move { barrier.wait().await })
///         })
///         .collect();
///     let mut indexes = Vec::new();
///     for t in tasks {
///         indexes.push(t.await??); // each returns once all three wait
///     }
///     Ok::<_, Box<dyn std::error::Error>>(indexes)
/// })??;
/// indexes.sort();
/// assert_eq!(indexes, [0, 1, 2]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Barrier {
    state: RefCell<BarrierState>,
}

impl Barrier {
    /// A barrier for `parties` tasks. Zero is taken as one (asyncio raises `ValueError`; a
    /// barrier for nobody has no meaning, and this constructor does not fail).
    ///
    /// ```
    /// let barrier = evloop::Barrier::new(2);
    /// assert_eq!(barrier.parties(), 2);
    /// assert_eq!(evloop::Barrier::new(0).parties(), 1); // zero is taken as one
    /// ```
    pub fn new(parties: usize) -> Barrier {
        Barrier {
            state: RefCell::new(BarrierState {
                parties: parties.max(1),
                broken: false,
                queue: WaitQueue::new(),
            }),
        }
    }

    /// Waits until `parties` tasks wait; gives this task's arrival index, or
    /// [`SyncError::BrokenBarrier`] if the barrier is or gets broken, or
    /// [`SyncError::WrongLoop`] if it is bound to another loop than the waiting task's.
    ///
    /// ```
    /// evloop::run(async {
    ///     let barrier = evloop::Barrier::new(1);
    ///     // One party: the barrier trips at once, for every round.
    ///     assert_eq!(barrier.wait().await, Ok(0));
    ///     assert_eq!(barrier.wait().await, Ok(0));
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn wait(&self) -> BarrierWait<'_> {
        BarrierWait {
            barrier: self,
            waiter: Waiter::new(&self.state, SyncOp::BarrierWait),
        }
    }

    /// The number of tasks needed to trip the barrier.
    ///
    /// ```
    /// let barrier = evloop::Barrier::new(4);
    /// assert_eq!(barrier.parties(), 4);
    /// ```
    pub fn parties(&self) -> usize {
        self.state.borrow().parties
    }

    /// How many tasks wait in the current round.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let barrier = Rc::new(evloop::Barrier::new(2));
    ///     let first = {
    ///         let barrier = barrier.clone();
    ///         evloop::spawn(async move { barrier.wait().await })
    ///     };
    ///     evloop::yield_now().await;
    ///     assert_eq!(barrier.n_waiting(), 1);
    ///     assert_eq!(barrier.wait().await, Ok(1)); // the second party trips it
    ///     assert_eq!(first.await?, Ok(0));
    ///     assert_eq!(barrier.n_waiting(), 0);
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn n_waiting(&self) -> usize {
        self.state.borrow().queue.waiting()
    }

    /// Whether the barrier was aborted (and not reset since).
    ///
    /// ```
    /// let barrier = evloop::Barrier::new(2);
    /// assert!(!barrier.broken());
    /// barrier.abort();
    /// assert!(barrier.broken());
    /// barrier.reset();
    /// assert!(!barrier.broken());
    /// ```
    pub fn broken(&self) -> bool {
        self.state.borrow().broken
    }

    /// Breaks the barrier: current and future waits fail with [`SyncError::BrokenBarrier`]
    /// until [`reset`](Barrier::reset).
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::SyncError;
    ///
    /// evloop::run(async {
    ///     let barrier = Rc::new(evloop::Barrier::new(3));
    ///     let waiter = {
    ///         let barrier = barrier.clone();
    ///         evloop::spawn(async move { barrier.wait().await })
    ///     };
    ///     evloop::yield_now().await;
    ///     barrier.abort(); // the waiter fails, and so does every later wait
    ///     assert_eq!(waiter.await?, Err(SyncError::BrokenBarrier { parties: 3 }));
    ///     assert_eq!(barrier.wait().await, Err(SyncError::BrokenBarrier { parties: 3 }));
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abort(&self) {
        let mut wakers = WakeList::default();
        {
            let mut st = self.state.borrow_mut();
            st.broken = true;
            st.break_waiters(&mut wakers);
        }
        wakers.wake();
    }

    /// Returns the barrier to its empty state: the tasks waiting now get
    /// [`SyncError::BrokenBarrier`], later waits start a new round (an aborted barrier works
    /// again).
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::SyncError;
    ///
    /// evloop::run(async {
    ///     let barrier = Rc::new(evloop::Barrier::new(2));
    ///     let waiter = {
    ///         let barrier = barrier.clone();
    ///         evloop::spawn(async move { barrier.wait().await })
    ///     };
    ///     evloop::yield_now().await;
    ///     barrier.reset(); // breaks the current round only
    ///     assert_eq!(waiter.await?, Err(SyncError::BrokenBarrier { parties: 2 }));
    ///     assert!(!barrier.broken()); // later waits start a new round
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self) {
        let mut wakers = WakeList::default();
        {
            let mut st = self.state.borrow_mut();
            st.broken = false;
            st.break_waiters(&mut wakers);
        }
        wakers.wake();
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier")
            .field("parties", &self.parties())
            .field("n_waiting", &self.n_waiting())
            .field("broken", &self.broken())
            .finish()
    }
}

/// The future of [`Barrier::wait`].
///
/// ```
/// use std::time::Duration;
/// use evloop::{Barrier, Builder};
///
/// evloop::run_with(Builder::new().virtual_clock(true), async {
///     let barrier = Barrier::new(2);
///     // Nobody else arrives: the timeout drops the `BarrierWait`, which leaves the round.
///     let r = evloop::timeout(Duration::from_secs(1), barrier.wait()).await;
///     assert!(r.is_err());
///     assert_eq!(barrier.n_waiting(), 0);
/// })?;
/// # Ok::<(), evloop::RunError>(())
/// ```
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct BarrierWait<'a> {
    barrier: &'a Barrier,
    waiter: Waiter<'a, BarrierState>,
}

impl Future for BarrierWait<'_> {
    type Output = Result<usize, SyncError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let barrier = this.barrier;
        Pin::new(&mut this.waiter).poll(cx).map(|r| match r {
            Ok(r) => r.map_err(|Broken| SyncError::BrokenBarrier {
                parties: barrier.parties(),
            }),
            Err(wrong) => Err(wrong.into_sync_error(SyncOp::BarrierWait)),
        })
    }
}

impl fmt::Debug for BarrierWait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BarrierWait")
            .field("queued", &self.waiter.id.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting_waker() -> (Arc<Count>, Waker) {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    /// Grants go to waiting entries front to back, skipping granted ones; ids find entries.
    #[test]
    fn queue_grants_in_fifo_order_and_skips_granted_entries() {
        let (count, w) = counting_waker();
        let mut q = WaitQueue::<u32>::new();
        let ids: Vec<u64> = (0..4).map(|_| q.push(&w)).collect();
        let mut wakers = WakeList::default();
        let mut n = 10;
        let granted = q.grant_while(
            || {
                n += 1;
                (n <= 11).then_some(n)
            },
            &mut wakers,
        );
        assert_eq!(granted, 1);
        assert_eq!(q.waiting(), 3);
        let mut next = 20;
        q.grant_while(
            || {
                next += 1;
                (next <= 22).then_some(next)
            },
            &mut wakers,
        );
        wakers.wake();
        assert_eq!(count.0.load(Ordering::SeqCst), 3);
        assert!(matches!(q.poll_entry(ids[0], &w), Polled::Granted(11)));
        assert!(matches!(q.poll_entry(ids[2], &w), Polled::Granted(22)));
        assert!(matches!(q.poll_entry(ids[1], &w), Polled::Granted(21)));
        assert!(matches!(q.poll_entry(ids[3], &w), Polled::Waiting));
        assert!(matches!(q.poll_entry(ids[0], &w), Polled::Missing));
        assert!(matches!(q.remove(ids[3]), Some(Slot::Waiting(_))));
        assert!(q.is_empty());
        assert_eq!(q.waiting(), 0);
    }

    /// A granted permit whose waiter is dropped goes to the next waiter.
    #[test]
    fn dropped_granted_waiter_passes_its_permit_on() {
        let (count, w) = counting_waker();
        let mut cx = Context::from_waker(&w);
        let pool = Pool::new(0);
        let mut a = pool.waiter(SyncOp::SemaphoreAcquire);
        let mut b = pool.waiter(SyncOp::SemaphoreAcquire);
        assert!(Pin::new(&mut a).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut b).poll(&mut cx).is_pending());
        pool.put_back(1);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        drop(a);
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
        assert!(Pin::new(&mut b).poll(&mut cx).is_ready());
        assert_eq!(pool.available(), 0);
        drop(b);
        pool.put_back(1);
        assert_eq!(pool.available(), 1);
    }
}
