//! `Queue`: asyncio's `Queue`, `LifoQueue` and `PriorityQueue` for tasks of one loop.
//!
//! A [`Queue<T>`] is a cheap handle (clone it into every task that uses it) to one shared
//! queue on this thread; it is `!Send`, like everything that lives on a loop. Producers
//! [`put`](Queue::put) items and wait while the queue is full (`maxsize` items, 0 for no bound);
//! consumers [`get`](Queue::get) them and wait while it is empty. [`task_done`](Queue::task_done)
//! and [`join`](Queue::join) count work that was taken but not finished, and
//! [`shutdown`](Queue::shutdown) has Python 3.13's semantics.
//!
//! ```
//! use evloop::{spawn, Queue};
//!
//! let total = evloop::run(async {
//!     let q = Queue::new(2);
//!     let producer = {
//!         let q = q.clone();
//!         spawn(async move {
//!             for i in 1..=5u32 {
//!                 q.put(i).await.unwrap(); // waits while 2 items are queued
//!             }
//!             q.shutdown(false); // the consumer drains what is left, then sees QueueShutDown
//!         })
//!     };
//!     let mut total = 0;
//!     while let Ok(i) = q.get().await {
//!         total += i;
//!     }
//!     producer.await.unwrap();
//!     total
//! })
//! .unwrap();
//! assert_eq!(total, 15);
//! ```
//!
//! # How the waiting works
//! The queue keeps two FIFO lines of waiters, getters and putters, in slab-backed linked lists
//! (a waiter that leaves the middle of a line costs O(1)). A future that must wait stores its
//! task's waker in its node and returns `Pending`, as a promise's awaiter does. The other side
//! does not merely wake it, it **hands over** what it was waiting for, so nobody can overtake
//! a waiter that was already served:
//!
//! - a put that finds getters waiting moves the item straight into the first getter's node;
//! - a get that frees a slot while putters wait **grants** that slot to the first putter: the
//!   slot counts as taken ([`full`](Queue::full) stays true, `put_nowait` fails) until the
//!   putter's task runs and moves its item in.
//!
//! So getters are served in the order they started waiting, and so are putters. Items always
//! come out in the queue's order (FIFO, LIFO, or smallest first with FIFO among equal items: each
//! item carries a sequence number, the way asyncio users put `(priority, count, item)` tuples
//! into a `PriorityQueue`).
//!
//! An item handed to a getter still counts in [`qsize`](Queue::qsize) until the getter's task
//! runs and takes it (asyncio counts it the same way), but it is promised to that getter:
//! `get_nowait` cannot take it. asyncio instead only wakes the getter, and a `get_nowait` in
//! between takes the item while the woken getter goes back to the end of the line.
//!
//! # Cancellation safety
//! A task is cancelled in Rust by dropping its future (evloop's `Task::cancel` drops it at the
//! task's next step; a `timeout` drops it at its deadline). Dropping a [`Get`], [`Put`] or
//! [`Join`] at any await point leaves the queue as if the operation had never started, with
//! nothing lost and nothing stuck:
//!
//! - a getter dropped while waiting leaves the line; one dropped after an item was handed to it
//!   passes the item on to the next waiting getter, or puts it back into the queue at the place
//!   its sequence number gives it (the front, for FIFO);
//! - a putter dropped while waiting leaves the line and its item is dropped with it (the put did
//!   not happen); one dropped after a slot was granted to it releases the slot, which goes to the
//!   next waiting putter.
//!
//! # Shutdown (Python 3.13)
//! After [`shutdown`](Queue::shutdown), `put` and `put_nowait` fail with [`QueueShutDown`] /
//! [`TryPutError::ShutDown`], giving the item back, and every waiting putter is woken with that
//! error. `get` keeps returning the items still queued, then fails with `QueueShutDown`; waiting
//! getters (the queue is empty while getters wait) are woken with it. `shutdown(true)` also
//! discards every queued item, counting a `task_done` for each so that `join` can return.
//!
//! # Misuse is an error, not a panic
//! `task_done` called more times than items were put is a [`TaskDoneError`] (asyncio's
//! `ValueError`).

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::event_loop::slab::{Key, Slab};
use crate::event_loop::trace::{Awaiting, QueueOp, note_awaiting};
use crate::sync::LoopBinding;

// ---------------------------------------------------------------------------------------------
// Errors.

/// The queue was shut down (asyncio's `QueueShutDown`).
///
/// From [`Queue::put`] it carries the item that was not put (`QueueShutDown<T>`); from
/// [`Queue::get`] it carries nothing (`QueueShutDown<()>`, the default).
///
/// ```
/// use evloop::{Queue, QueueShutDown};
///
/// evloop::run(async {
///     let q = Queue::new(0);
///     q.put("queued").await.expect("open");
///     q.shutdown(false);
///     // `put` gives the item back; `get` drains what is queued, then fails.
///     assert_eq!(q.put("late").await, Err(QueueShutDown("late")));
///     assert_eq!(q.get().await, Ok("queued"));
///     assert_eq!(q.get().await, Err(QueueShutDown(())));
/// })?;
/// # Ok::<(), evloop::RunError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct QueueShutDown<T = ()>(pub T);

impl<T> QueueShutDown<T> {
    /// The item that was not put.
    ///
    /// ```
    /// evloop::run(async {
    ///     let q = evloop::Queue::new(0);
    ///     q.shutdown(false);
    ///     let refused = q.put(String::from("job")).await.unwrap_err();
    ///     assert_eq!(refused.into_inner(), "job");
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for QueueShutDown<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QueueShutDown(..)")
    }
}

impl<T> fmt::Display for QueueShutDown<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the queue was shut down")
    }
}

impl<T> Error for QueueShutDown<T> {}

/// Why [`Queue::put_nowait`] failed; both variants give the item back.
///
/// ```
/// use evloop::{Queue, TryPutError};
///
/// let q = Queue::new(1);
/// q.put_nowait(1).expect("room for one");
/// assert_eq!(q.put_nowait(2), Err(TryPutError::Full(2))); // asyncio's QueueFull
/// q.shutdown(false);
/// assert_eq!(q.put_nowait(3), Err(TryPutError::ShutDown(3)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TryPutError<T> {
    /// No free slot (asyncio's `QueueFull`). A slot granted to a waiting putter that has not run
    /// yet is not free.
    Full(T),
    /// The queue was shut down (asyncio's `QueueShutDown`).
    ShutDown(T),
}

impl<T> TryPutError<T> {
    /// The item that was not put.
    ///
    /// ```
    /// let q = evloop::Queue::new(1);
    /// q.put_nowait('a').expect("room for one");
    /// let err = q.put_nowait('b').unwrap_err();
    /// assert_eq!(err.into_inner(), 'b');
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TryPutError::Full(t) | TryPutError::ShutDown(t) => t,
        }
    }

    /// Whether the queue was full (rather than shut down).
    ///
    /// ```
    /// let q = evloop::Queue::new(1);
    /// q.put_nowait(1).expect("room for one");
    /// assert!(q.put_nowait(2).unwrap_err().is_full());
    /// q.shutdown(false);
    /// assert!(!q.put_nowait(3).unwrap_err().is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TryPutError::Full(_))
    }
}

impl<T> fmt::Debug for TryPutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryPutError::Full(_) => f.write_str("Full(..)"),
            TryPutError::ShutDown(_) => f.write_str("ShutDown(..)"),
        }
    }
}

impl<T> fmt::Display for TryPutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryPutError::Full(_) => f.write_str("Queue::put_nowait: the queue is full"),
            TryPutError::ShutDown(_) => f.write_str("Queue::put_nowait: the queue was shut down"),
        }
    }
}

impl<T> Error for TryPutError<T> {}

/// Why [`Queue::get_nowait`] failed.
///
/// ```
/// use evloop::{Queue, TryGetError};
///
/// let q = Queue::<u32>::new(0);
/// assert_eq!(q.get_nowait(), Err(TryGetError::Empty)); // asyncio's QueueEmpty
/// q.shutdown(false);
/// assert_eq!(q.get_nowait(), Err(TryGetError::ShutDown));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TryGetError {
    /// No item is available (asyncio's `QueueEmpty`). Items already handed to waiting getters
    /// are not available.
    Empty,
    /// The queue was shut down and has no items left (asyncio's `QueueShutDown`).
    ShutDown,
}

impl fmt::Display for TryGetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryGetError::Empty => f.write_str("Queue::get_nowait: the queue is empty"),
            TryGetError::ShutDown => f.write_str("Queue::get_nowait: the queue was shut down and is empty"),
        }
    }
}

impl Error for TryGetError {}

/// [`Queue::task_done`] was called more times than items were put (asyncio's `ValueError`).
///
/// ```
/// use evloop::{Queue, TaskDoneError};
///
/// let q = Queue::new(0);
/// q.put_nowait(1).expect("unbounded");
/// assert_eq!(q.get_nowait(), Ok(1));
/// assert_eq!(q.task_done(), Ok(()));
/// assert_eq!(q.task_done(), Err(TaskDoneError)); // one item, two task_done calls
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskDoneError;

impl fmt::Display for TaskDoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Queue::task_done: called more times than there were items put")
    }
}

impl Error for TaskDoneError {}

// ---------------------------------------------------------------------------------------------
// A FIFO line of waiters with O(1) removal from anywhere.

/// One waiter: its place in the line (while linked) and its state.
struct Node<S> {
    prev: Option<Key>,
    next: Option<Key>,
    linked: bool,
    state: S,
}

/// Waiters in the order they started waiting, in a slab-backed doubly linked list.
///
/// A node is *linked* while it waits in line. Serving a waiter unlinks its node but keeps it in
/// the slab, holding what the waiter was given, until the waiter's future collects it (or is
/// dropped); the future knows its node by the slab key (generation-checked, so a stale key never
/// reaches a node that reuses the slot).
pub(crate) struct WaitList<S> {
    nodes: Slab<Node<S>>,
    head: Option<Key>,
    tail: Option<Key>,
    linked: usize,
}

impl<S> WaitList<S> {
    pub(crate) fn new() -> Self {
        WaitList {
            nodes: Slab::default(),
            head: None,
            tail: None,
            linked: 0,
        }
    }

    /// How many waiters are in line (served ones not counted).
    pub(crate) fn waiting(&self) -> usize {
        self.linked
    }

    /// Adds a waiter at the end of the line.
    pub(crate) fn push_back(&mut self, state: S) -> Key {
        let key = self.nodes.insert(Node {
            prev: self.tail,
            next: None,
            linked: true,
            state,
        });
        match self.tail.and_then(|t| self.nodes.get_mut(t)) {
            Some(tail) => tail.next = Some(key),
            None => self.head = Some(key),
        }
        self.tail = Some(key);
        self.linked += 1;
        key
    }

    /// Takes the first waiter out of the line (its node stays) and returns its key.
    pub(crate) fn pop_front(&mut self) -> Option<Key> {
        let key = self.head?;
        self.unlink(key);
        Some(key)
    }

    /// Takes a waiter out of the line, wherever it is; its node stays.
    fn unlink(&mut self, key: Key) {
        let (prev, next) = match self.nodes.get_mut(key) {
            Some(n) if n.linked => {
                n.linked = false;
                (n.prev.take(), n.next.take())
            }
            _ => return,
        };
        match prev.and_then(|p| self.nodes.get_mut(p)) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match next.and_then(|n| self.nodes.get_mut(n)) {
            Some(n) => n.prev = prev,
            None => self.tail = prev,
        }
        self.linked -= 1;
    }

    pub(crate) fn state_mut(&mut self, key: Key) -> Option<&mut S> {
        self.nodes.get_mut(key).map(|n| &mut n.state)
    }

    /// Removes a waiter (from the line if it is still there) and returns its state.
    pub(crate) fn remove(&mut self, key: Key) -> Option<S> {
        self.unlink(key);
        self.nodes.remove(key).map(|n| n.state)
    }

    /// Empties the line; returns the keys of every node, linked or served, line first.
    pub(crate) fn unlink_all(&mut self) -> Vec<Key> {
        let served: Vec<Key> = self.nodes.iter().filter(|(_, n)| !n.linked).map(|(k, _)| k).collect();
        let mut keys = Vec::with_capacity(self.nodes.len());
        while let Some(k) = self.pop_front() {
            keys.push(k);
        }
        keys.extend(served);
        keys
    }
}

// ---------------------------------------------------------------------------------------------
// Storage: the three orders.

/// Items with their sequence numbers. FIFO and LIFO keep them sorted by sequence number in a
/// deque (so an item given back by a dropped getter goes exactly where it was); the priority
/// order is a binary min-heap on (item, sequence number).
enum Store<T> {
    Fifo(VecDeque<(u64, T)>),
    Lifo(VecDeque<(u64, T)>),
    Priority(Heap<T>),
}

impl<T> Store<T> {
    fn len(&self) -> usize {
        match self {
            Store::Fifo(d) | Store::Lifo(d) => d.len(),
            Store::Priority(h) => h.items.len(),
        }
    }

    fn push(&mut self, seq: u64, item: T) {
        match self {
            Store::Fifo(d) | Store::Lifo(d) => d.push_back((seq, item)),
            Store::Priority(h) => h.push(seq, item),
        }
    }

    /// Puts back an item that was taken out earlier, where its sequence number places it.
    fn give_back(&mut self, seq: u64, item: T) {
        match self {
            Store::Fifo(d) | Store::Lifo(d) => {
                let at = d.partition_point(|(s, _)| *s < seq);
                d.insert(at, (seq, item));
            }
            Store::Priority(h) => h.push(seq, item),
        }
    }

    fn pop(&mut self) -> Option<(u64, T)> {
        match self {
            Store::Fifo(d) => d.pop_front(),
            Store::Lifo(d) => d.pop_back(),
            Store::Priority(h) => h.pop(),
        }
    }

    fn drain(&mut self) -> Vec<T> {
        match self {
            Store::Fifo(d) | Store::Lifo(d) => d.drain(..).map(|(_, t)| t).collect(),
            Store::Priority(h) => h.items.drain(..).map(|(_, t)| t).collect(),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Store::Fifo(_) => "Queue",
            Store::Lifo(_) => "LifoQueue",
            Store::Priority(_) => "PriorityQueue",
        }
    }
}

/// A binary min-heap ordered by the item, then by sequence number (FIFO among equal items).
/// The item order is a function pointer taken from `T: Ord` when the queue is created, so the
/// rest of the queue needs no `Ord` bound.
struct Heap<T> {
    items: Vec<(u64, T)>,
    cmp: fn(&T, &T) -> Ordering,
}

impl<T> Heap<T> {
    fn less(&self, a: usize, b: usize) -> bool {
        let (sa, ta) = &self.items[a];
        let (sb, tb) = &self.items[b];
        (self.cmp)(ta, tb).then(sa.cmp(sb)) == Ordering::Less
    }

    fn push(&mut self, seq: u64, item: T) {
        self.items.push((seq, item));
        let mut i = self.items.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.less(i, parent) {
                break;
            }
            self.items.swap(i, parent);
            i = parent;
        }
    }

    fn pop(&mut self) -> Option<(u64, T)> {
        let last = self.items.len().checked_sub(1)?;
        self.items.swap(0, last);
        let top = self.items.pop();
        let n = self.items.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut smallest = i;
            if l < n && self.less(l, smallest) {
                smallest = l;
            }
            if r < n && self.less(r, smallest) {
                smallest = r;
            }
            if smallest == i {
                break;
            }
            self.items.swap(i, smallest);
            i = smallest;
        }
        top
    }
}

// ---------------------------------------------------------------------------------------------
// The shared state.

/// A waiting getter's node.
pub(crate) enum GetSlot<T> {
    /// In line, with the waker of the task to wake.
    Waiting(Waker),
    /// Served: this item (with its sequence number) is promised to it.
    Handed(u64, T),
    /// Woken by a shutdown with nothing to give.
    ShutDown,
}

/// A waiting putter's node.
pub(crate) enum PutSlot {
    /// In line, with the waker of the task to wake.
    Waiting(Waker),
    /// Served: a slot is reserved for its item.
    Granted,
    /// Woken by a shutdown.
    ShutDown,
}

/// A `join` waiter's node.
pub(crate) enum JoinSlot {
    Waiting(Waker),
    Done,
}

/// Everything a queue is, behind one `RefCell`. Every method that changes it returns the wakers
/// to wake (and items to drop) instead of waking or dropping them itself, so the caller does
/// that after releasing the borrow: a waker or an item's destructor is foreign code that may
/// touch this queue again.
///
/// Invariants:
/// - getters wait only while `store` is empty (a put hands its item to the first waiting
///   getter instead of storing it);
/// - putters wait only while there is no free slot (a freed slot is granted to the first waiting
///   putter at once, and counts in `reserved` until that putter stores its item);
/// - `handed` is the number of items sitting in served getter nodes, `unfinished` the number of
///   items put and not yet marked done.
pub(crate) struct Core<T> {
    store: Store<T>,
    maxsize: usize,
    next_seq: u64,
    handed: usize,
    reserved: usize,
    unfinished: usize,
    shut_down: bool,
    getters: WaitList<GetSlot<T>>,
    putters: WaitList<PutSlot>,
    joiners: WaitList<JoinSlot>,
    /// The loop whose tasks may wait here (the first one that did; see `LoopBinding`).
    binding: LoopBinding,
}

/// Wakes whatever a queue operation left to wake, once the borrow is released.
pub(crate) fn wake_all(wakers: Vec<Waker>) {
    for w in wakers {
        w.wake();
    }
}

fn wake_opt(waker: Option<Waker>) {
    if let Some(w) = waker {
        w.wake();
    }
}

impl<T> Core<T> {
    fn new(store: Store<T>, maxsize: usize) -> Self {
        Core {
            store,
            maxsize,
            next_seq: 0,
            handed: 0,
            reserved: 0,
            unfinished: 0,
            shut_down: false,
            getters: WaitList::new(),
            putters: WaitList::new(),
            joiners: WaitList::new(),
            binding: LoopBinding::default(),
        }
    }

    pub(crate) fn fifo(maxsize: usize) -> Self {
        Core::new(Store::Fifo(VecDeque::new()), maxsize)
    }

    pub(crate) fn qsize(&self) -> usize {
        self.store.len() + self.handed
    }

    pub(crate) fn has_room(&self) -> bool {
        self.maxsize == 0 || self.qsize() + self.reserved < self.maxsize
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down
    }

    /// Adds an item (room was checked): hands it to the first waiting getter or stores it.
    fn insert(&mut self, item: T) -> Option<Waker> {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.unfinished += 1;
        self.hand_or_store(seq, item, false)
    }

    /// Gives `item` to the first waiting getter, or stores it (`back`: where it came from).
    fn hand_or_store(&mut self, seq: u64, item: T, back: bool) -> Option<Waker> {
        if let Some(key) = self.getters.pop_front() {
            if let Some(slot) = self.getters.state_mut(key) {
                let old = std::mem::replace(slot, GetSlot::Handed(seq, item));
                self.handed += 1;
                return match old {
                    GetSlot::Waiting(w) => Some(w),
                    _ => None,
                };
            }
            // Unreachable: a linked key always has a node.
            return None;
        }
        if back {
            self.store.give_back(seq, item);
        } else {
            self.store.push(seq, item);
        }
        None
    }

    /// A slot was freed: grant it to the first waiting putter, if any.
    fn release_slot(&mut self) -> Option<Waker> {
        if self.putters.waiting() == 0 || !self.has_room() {
            return None;
        }
        let key = self.putters.pop_front()?;
        let slot = self.putters.state_mut(key)?;
        self.reserved += 1;
        match std::mem::replace(slot, PutSlot::Granted) {
            PutSlot::Waiting(w) => Some(w),
            _ => None,
        }
    }

    pub(crate) fn try_put(&mut self, item: T) -> Result<Option<Waker>, TryPutError<T>> {
        if self.shut_down {
            return Err(TryPutError::ShutDown(item));
        }
        if !self.has_room() {
            return Err(TryPutError::Full(item));
        }
        Ok(self.insert(item))
    }

    pub(crate) fn try_get(&mut self) -> Result<(T, Option<Waker>), TryGetError> {
        match self.store.pop() {
            Some((_, item)) => Ok((item, self.release_slot())),
            None if self.shut_down => Err(TryGetError::ShutDown),
            None => Err(TryGetError::Empty),
        }
    }

    /// Marks every join waiter done; returns their wakers.
    fn finish_joiners(&mut self, wakers: &mut Vec<Waker>) {
        for key in self.joiners.unlink_all() {
            if let Some(slot) = self.joiners.state_mut(key) {
                if let JoinSlot::Waiting(w) = std::mem::replace(slot, JoinSlot::Done) {
                    wakers.push(w);
                }
            }
        }
    }

    fn task_done(&mut self) -> Result<Vec<Waker>, TaskDoneError> {
        if self.unfinished == 0 {
            return Err(TaskDoneError);
        }
        self.unfinished -= 1;
        let mut wakers = Vec::new();
        if self.unfinished == 0 {
            self.finish_joiners(&mut wakers);
        }
        Ok(wakers)
    }

    /// Shuts the queue down; returns the wakers to wake and the discarded items to drop.
    pub(crate) fn shutdown(&mut self, immediate: bool) -> (Vec<Waker>, Vec<T>) {
        self.shut_down = true;
        let mut wakers = Vec::new();
        let mut discarded = Vec::new();
        if immediate {
            discarded = self.store.drain();
        }
        for key in self.getters.unlink_all() {
            let Some(slot) = self.getters.state_mut(key) else {
                continue;
            };
            match slot {
                GetSlot::Handed(..) if !immediate => {}
                _ => match std::mem::replace(slot, GetSlot::ShutDown) {
                    GetSlot::Waiting(w) => wakers.push(w),
                    GetSlot::Handed(_, item) => {
                        // Its task was woken when the item was handed over; it will find ShutDown.
                        self.handed -= 1;
                        discarded.push(item);
                    }
                    GetSlot::ShutDown => {}
                },
            }
        }
        for key in self.putters.unlink_all() {
            let Some(slot) = self.putters.state_mut(key) else {
                continue;
            };
            match std::mem::replace(slot, PutSlot::ShutDown) {
                PutSlot::Waiting(w) => wakers.push(w),
                // Already woken; it will find ShutDown and keep its item.
                PutSlot::Granted => self.reserved -= 1,
                PutSlot::ShutDown => {}
            }
        }
        if immediate {
            self.unfinished -= discarded.len().min(self.unfinished);
            if self.unfinished == 0 {
                self.finish_joiners(&mut wakers);
            }
        }
        (wakers, discarded)
    }

    fn register_getter(&mut self, waker: &Waker) -> Key {
        self.getters.push_back(GetSlot::Waiting(waker.clone()))
    }

    fn register_putter(&mut self, waker: &Waker) -> Key {
        self.putters.push_back(PutSlot::Waiting(waker.clone()))
    }
}

/// Replaces a stored waker if the task polling now is a different one; returns the old waker so
/// it is dropped after the borrow.
fn refresh(slot: &mut Waker, cx: &Context<'_>) -> Option<Waker> {
    if slot.will_wake(cx.waker()) {
        None
    } else {
        Some(std::mem::replace(slot, cx.waker().clone()))
    }
}

pub(crate) type SharedCore<T> = Rc<RefCell<Core<T>>>;

// ---------------------------------------------------------------------------------------------
// The public handle.

/// asyncio's `Queue` (and `LifoQueue`, `PriorityQueue`): see the [module documentation](self).
///
/// Cloning gives another handle to the same queue.
///
/// ```
/// use evloop::Queue;
///
/// let done = evloop::run(async {
///     let q = Queue::new(0);
///     let worker = {
///         let q = q.clone(); // another handle to the same queue
///         evloop::spawn(async move {
///             let mut done = Vec::new();
///             while let Ok(job) = q.get().await {
///                 done.push(job * 10);
///                 q.task_done().expect("one per get");
///             }
///             done
///         })
///     };
///     for job in 1..=3 {
///         q.put(job).await.expect("open");
///     }
///     q.join().await; // every job was marked done
///     q.shutdown(false); // the worker's next get fails: it returns
///     worker.await
/// })??;
/// assert_eq!(done, [10, 20, 30]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Queue<T> {
    core: SharedCore<T>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Queue {
            core: self.core.clone(),
        }
    }
}

impl<T> Queue<T> {
    fn with_store(store: Store<T>, maxsize: usize) -> Self {
        Queue {
            core: Rc::new(RefCell::new(Core::new(store, maxsize))),
        }
    }

    /// A FIFO queue holding at most `maxsize` items; 0 means no bound (asyncio's `Queue`).
    ///
    /// ```
    /// let q = evloop::Queue::new(2);
    /// q.put_nowait("a").expect("room");
    /// q.put_nowait("b").expect("room");
    /// assert!(q.full());
    /// assert_eq!(q.get_nowait(), Ok("a")); // first in, first out
    /// ```
    pub fn new(maxsize: usize) -> Self {
        Queue::with_store(Store::Fifo(VecDeque::new()), maxsize)
    }

    /// A LIFO queue: the most recently put item comes out first (asyncio's `LifoQueue`).
    ///
    /// ```
    /// let q = evloop::Queue::lifo(0);
    /// for i in 1..=3 {
    ///     q.put_nowait(i).expect("unbounded");
    /// }
    /// assert_eq!(q.get_nowait(), Ok(3)); // last in, first out
    /// assert_eq!(q.get_nowait(), Ok(2));
    /// ```
    pub fn lifo(maxsize: usize) -> Self {
        Queue::with_store(Store::Lifo(VecDeque::new()), maxsize)
    }

    /// A priority queue: the smallest item comes out first, equal items in the order they were
    /// put (asyncio's `PriorityQueue`, with the `(priority, count, item)` tie-break built in).
    ///
    /// ```
    /// let q = evloop::Queue::priority(0);
    /// q.put_nowait((2, "low")).expect("unbounded");
    /// q.put_nowait((1, "high")).expect("unbounded");
    /// q.put_nowait((2, "low, later")).expect("unbounded");
    /// assert_eq!(q.get_nowait(), Ok((1, "high"))); // smallest first
    /// assert_eq!(q.get_nowait(), Ok((2, "low")));
    /// assert_eq!(q.get_nowait(), Ok((2, "low, later")));
    /// ```
    pub fn priority(maxsize: usize) -> Self
    where
        T: Ord,
    {
        Queue::with_store(
            Store::Priority(Heap {
                items: Vec::new(),
                cmp: T::cmp,
            }),
            maxsize,
        )
    }

    /// Puts `item` into the queue, waiting while it is full. Fails with the item if the queue is
    /// (or while waiting becomes) shut down. Dropping the future before it completes means the
    /// item was not put, and it is dropped with the future.
    ///
    /// # Panics
    /// When a task of another loop than the one the queue is bound to (the loop of its first
    /// waiter) would have to wait: see "Bound to one loop" in the [`sync`](crate::sync) module.
    ///
    /// ```
    /// evloop::run(async {
    ///     let q = evloop::Queue::new(1);
    ///     q.put(1).await.expect("room: returns at once");
    ///     let putter = {
    ///         let q = q.clone();
    ///         evloop::spawn(async move { q.put(2).await }) // waits: the queue is full
    ///     };
    ///     evloop::yield_now().await;
    ///     assert!(!putter.done());
    ///     assert_eq!(q.get().await, Ok(1)); // frees the slot for the waiting put
    ///     putter.await?.expect("open");
    ///     assert_eq!(q.get().await, Ok(2));
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put(&self, item: T) -> Put<T> {
        Put::new_on(&self.core, item)
    }

    /// Takes an item, waiting while the queue is empty. After a shutdown it returns the items
    /// still queued, then fails with [`QueueShutDown`]. Dropping the future never loses an item.
    ///
    /// # Panics
    /// Like [`Queue::put`], when a task of another loop would have to wait.
    ///
    /// ```
    /// evloop::run(async {
    ///     let q = evloop::Queue::new(0);
    ///     let getter = {
    ///         let q = q.clone();
    ///         evloop::spawn(async move { q.get().await }) // waits: the queue is empty
    ///     };
    ///     evloop::yield_now().await;
    ///     q.put("item").await.expect("open");
    ///     assert_eq!(getter.await?, Ok("item"));
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self) -> Get<T> {
        Get::new_on(&self.core)
    }

    /// Puts `item` without waiting: [`TryPutError::Full`] if no slot is free,
    /// [`TryPutError::ShutDown`] after a shutdown, each with the item.
    ///
    /// ```
    /// use evloop::{Queue, TryPutError};
    ///
    /// let q = Queue::new(1);
    /// assert_eq!(q.put_nowait(1), Ok(()));
    /// assert_eq!(q.put_nowait(2), Err(TryPutError::Full(2)));
    /// ```
    pub fn put_nowait(&self, item: T) -> Result<(), TryPutError<T>> {
        let woken = self.core.borrow_mut().try_put(item)?;
        wake_opt(woken);
        Ok(())
    }

    /// Takes an item without waiting: [`TryGetError::Empty`] if none is available,
    /// [`TryGetError::ShutDown`] if the queue was shut down and is empty.
    ///
    /// ```
    /// use evloop::{Queue, TryGetError};
    ///
    /// let q = Queue::new(0);
    /// q.put_nowait(7).expect("unbounded");
    /// assert_eq!(q.get_nowait(), Ok(7));
    /// assert_eq!(q.get_nowait(), Err(TryGetError::Empty));
    /// ```
    pub fn get_nowait(&self) -> Result<T, TryGetError> {
        let (item, woken) = self.core.borrow_mut().try_get()?;
        wake_opt(woken);
        Ok(item)
    }

    /// The number of items in the queue, counting items handed to getters that have not run yet.
    ///
    /// ```
    /// let q = evloop::Queue::new(0);
    /// q.put_nowait(1).expect("unbounded");
    /// q.put_nowait(2).expect("unbounded");
    /// assert_eq!(q.qsize(), 2);
    /// ```
    pub fn qsize(&self) -> usize {
        self.core.borrow().qsize()
    }

    /// `qsize() == 0`.
    ///
    /// ```
    /// let q = evloop::Queue::new(0);
    /// assert!(q.empty());
    /// q.put_nowait(()).expect("unbounded");
    /// assert!(!q.empty());
    /// ```
    pub fn empty(&self) -> bool {
        self.qsize() == 0
    }

    /// Whether `put_nowait` would find no free slot: `maxsize` items are queued or promised to
    /// putters that were granted a slot. Never true for an unbounded queue.
    ///
    /// ```
    /// let q = evloop::Queue::new(1);
    /// assert!(!q.full());
    /// q.put_nowait(1).expect("room");
    /// assert!(q.full());
    /// assert!(!evloop::Queue::<u8>::new(0).full()); // unbounded: never full
    /// ```
    pub fn full(&self) -> bool {
        !self.core.borrow().has_room()
    }

    /// The bound given at creation (0: unbounded).
    ///
    /// ```
    /// assert_eq!(evloop::Queue::<u8>::new(8).maxsize(), 8);
    /// assert_eq!(evloop::Queue::<u8>::new(0).maxsize(), 0); // unbounded
    /// ```
    pub fn maxsize(&self) -> usize {
        self.core.borrow().maxsize
    }

    /// Whether [`shutdown`](Queue::shutdown) was called.
    ///
    /// ```
    /// let q = evloop::Queue::<u8>::new(0);
    /// assert!(!q.is_shut_down());
    /// q.shutdown(false);
    /// assert!(q.is_shut_down());
    /// ```
    pub fn is_shut_down(&self) -> bool {
        self.core.borrow().shut_down
    }

    /// Marks one item taken from the queue as processed. When every item ever put has been
    /// marked, every [`join`](Queue::join) waiter is woken. A [`TaskDoneError`] if called more
    /// times than items were put.
    ///
    /// ```
    /// evloop::run(async {
    ///     let q = evloop::Queue::new(0);
    ///     q.put_nowait("job").expect("unbounded");
    ///     let job = q.get().await.expect("queued");
    ///     assert_eq!(job, "job");
    ///     q.task_done().expect("one item was put"); // the item is processed
    ///     q.join().await; // returns at once: nothing is pending
    /// })?;
    /// # Ok::<(), evloop::RunError>(())
    /// ```
    pub fn task_done(&self) -> Result<(), TaskDoneError> {
        let woken = self.core.borrow_mut().task_done()?;
        wake_all(woken);
        Ok(())
    }

    /// Waits until every item put has been marked with [`task_done`](Queue::task_done) (at once
    /// if none is pending).
    ///
    /// # Panics
    /// Like [`Queue::put`], when a task of another loop would have to wait.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::rc::Rc;
    ///
    /// evloop::run(async {
    ///     let q = evloop::Queue::new(0);
    ///     for job in 1..=3 {
    ///         q.put_nowait(job).expect("unbounded");
    ///     }
    ///     let processed = Rc::new(Cell::new(0));
    ///     let worker = {
    ///         let (q, processed) = (q.clone(), processed.clone());
    ///         evloop::spawn(async move {
    ///             while let Ok(job) = q.get().await {
    ///                 evloop::yield_now().await; // the work
    ///                 processed.set(processed.get() + job);
    ///                 q.task_done().expect("one per item");
    ///             }
    ///         })
    ///     };
    ///     q.join().await; // until every item was marked done
    ///     assert_eq!(processed.get(), 6);
    ///     q.shutdown(false); // ends the worker's loop
    ///     worker.await?;
    ///     Ok::<(), evloop::TaskError>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join(&self) -> Join<T> {
        Join {
            core: self.core.clone(),
            key: None,
        }
    }

    /// Shuts the queue down (Python 3.13): puts fail from now on and waiting putters are woken
    /// with [`QueueShutDown`]; gets drain the remaining items, then fail, and waiting getters are
    /// woken with `QueueShutDown`. With `immediate`, the remaining items (including those handed
    /// to getters that have not run yet) are discarded, with a `task_done` counted for each.
    /// Calling it again is allowed (`shutdown(true)` after `shutdown(false)` discards the rest).
    ///
    /// ```
    /// use evloop::{Queue, TryGetError};
    ///
    /// let q = Queue::new(0);
    /// q.put_nowait(1).expect("unbounded");
    /// q.put_nowait(2).expect("unbounded");
    /// q.shutdown(false); // puts fail, the items already queued can still be taken
    /// assert_eq!(q.get_nowait(), Ok(1));
    /// q.shutdown(true); // discards the rest
    /// assert_eq!(q.get_nowait(), Err(TryGetError::ShutDown));
    /// ```
    pub fn shutdown(&self, immediate: bool) {
        let (wakers, discarded) = self.core.borrow_mut().shutdown(immediate);
        wake_all(wakers);
        drop(discarded);
    }

    /// Whether two handles refer to the same queue.
    ///
    /// ```
    /// let q = evloop::Queue::<u8>::new(0);
    /// assert!(q.same_queue(&q.clone()));
    /// assert!(!q.same_queue(&evloop::Queue::new(0)));
    /// ```
    pub fn same_queue(&self, other: &Queue<T>) -> bool {
        Rc::ptr_eq(&self.core, &other.core)
    }
}

impl<T> fmt::Debug for Queue<T> {
    /// `<Queue maxsize=2 qsize=1 getters=0 putters=1 tasks=3 shutdown>` (asyncio's `_format`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ok(c) = self.core.try_borrow() else {
            return f.write_str("<Queue (busy)>");
        };
        write!(f, "<{} maxsize={} qsize={}", c.store.kind(), c.maxsize, c.qsize())?;
        if c.getters.waiting() > 0 {
            write!(f, " getters={}", c.getters.waiting())?;
        }
        if c.putters.waiting() > 0 {
            write!(f, " putters={}", c.putters.waiting())?;
        }
        if c.unfinished > 0 {
            write!(f, " tasks={}", c.unfinished)?;
        }
        if c.shut_down {
            f.write_str(" shutdown")?;
        }
        f.write_str(">")
    }
}

// ---------------------------------------------------------------------------------------------
// The futures.

/// The future of [`Queue::get`]: an item, or [`QueueShutDown`] once the queue is shut down and
/// empty. Cancellation-safe (see the module documentation). Polled again after it completed, it
/// starts another get.
///
/// ```
/// use std::time::Duration;
/// use evloop::{Builder, Queue};
///
/// evloop::run_with(Builder::new().virtual_clock(true), async {
///     let q = Queue::new(0);
///     // A `Get` dropped by a timeout loses nothing and leaves no waiter behind.
///     assert!(evloop::timeout(Duration::from_secs(1), q.get()).await.is_err());
///     q.put_nowait(5).expect("unbounded");
///     assert_eq!(q.get().await, Ok(5));
/// })?;
/// # Ok::<(), evloop::RunError>(())
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Get<T> {
    core: SharedCore<T>,
    key: Option<Key>,
}

impl<T> Get<T> {
    pub(crate) fn new_on(core: &SharedCore<T>) -> Self {
        Get {
            core: core.clone(),
            key: None,
        }
    }

    /// One poll, shared with the channels (which name the operation in traces).
    pub(crate) fn poll_get(&mut self, cx: &mut Context<'_>, op: QueueOp) -> Poll<Result<T, QueueShutDown>> {
        let mut core = self.core.borrow_mut();
        if let Some(key) = self.key {
            let stale = match core.getters.state_mut(key) {
                Some(GetSlot::Waiting(w)) => refresh(w, cx),
                Some(_) => {
                    self.key = None;
                    let got = core.getters.remove(key);
                    return match got {
                        Some(GetSlot::Handed(_, item)) => {
                            core.handed -= 1;
                            let woken = core.release_slot();
                            drop(core);
                            wake_opt(woken);
                            Poll::Ready(Ok(item))
                        }
                        _ => Poll::Ready(Err(QueueShutDown(()))),
                    };
                }
                None => {
                    // Unreachable: the node lives until this future removes it.
                    self.key = None;
                    return Poll::Ready(Err(QueueShutDown(())));
                }
            };
            drop(core);
            drop(stale);
            note_awaiting(Awaiting::Queue(op));
            return Poll::Pending;
        }
        match core.try_get() {
            Ok((item, woken)) => {
                drop(core);
                wake_opt(woken);
                Poll::Ready(Ok(item))
            }
            Err(TryGetError::ShutDown) => Poll::Ready(Err(QueueShutDown(()))),
            Err(TryGetError::Empty) => {
                if let Err(wrong) = core.binding.bind() {
                    drop(core);
                    wrong.fail(op);
                }
                self.key = Some(core.register_getter(cx.waker()));
                drop(core);
                note_awaiting(Awaiting::Queue(op));
                Poll::Pending
            }
        }
    }
}

impl<T> Future for Get<T> {
    type Output = Result<T, QueueShutDown>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().poll_get(cx, QueueOp::QueueGet)
    }
}

impl<T> Drop for Get<T> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let Ok(mut core) = self.core.try_borrow_mut() else {
            // Unreachable: no queue code runs foreign code while it holds the borrow.
            return;
        };
        let mut woken = None;
        let mut stale = None;
        match core.getters.remove(key) {
            Some(GetSlot::Handed(seq, item)) => {
                // The item was promised to us: pass it on to the next getter, or put it back.
                core.handed -= 1;
                woken = core.hand_or_store(seq, item, true);
            }
            Some(GetSlot::Waiting(w)) => stale = Some(w),
            _ => {}
        }
        drop(core);
        drop(stale);
        wake_opt(woken);
    }
}

impl<T> fmt::Debug for Get<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.key.is_some() { "Get(waiting)" } else { "Get" })
    }
}

/// The future of [`Queue::put`]: `Ok(())` once the item is in the queue, or the item back in
/// [`QueueShutDown`]. Cancellation-safe (see the module documentation).
///
/// ```
/// use std::time::Duration;
/// use evloop::{Builder, Queue};
///
/// evloop::run_with(Builder::new().virtual_clock(true), async {
///     let q = Queue::new(1);
///     q.put(1).await.expect("room");
///     // The queue stays full: the timeout drops the `Put`, and item 2 is not put.
///     assert!(evloop::timeout(Duration::from_secs(1), q.put(2)).await.is_err());
///     assert_eq!(q.qsize(), 1);
/// })?;
/// # Ok::<(), evloop::RunError>(())
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Put<T> {
    core: SharedCore<T>,
    item: Option<T>,
    key: Option<Key>,
}

// The item is moved in and out by value and never pinned in place.
impl<T> Unpin for Put<T> {}

impl<T> Put<T> {
    pub(crate) fn new_on(core: &SharedCore<T>, item: T) -> Self {
        Put {
            core: core.clone(),
            item: Some(item),
            key: None,
        }
    }

    pub(crate) fn poll_put(&mut self, cx: &mut Context<'_>, op: QueueOp) -> Poll<Result<(), QueueShutDown<T>>> {
        let Some(item) = self.item.take() else {
            // Polled again after it completed.
            return Poll::Ready(Ok(()));
        };
        let mut core = self.core.borrow_mut();
        if let Some(key) = self.key {
            let stale = match core.putters.state_mut(key) {
                Some(PutSlot::Waiting(w)) => refresh(w, cx),
                Some(_) => {
                    self.key = None;
                    return match core.putters.remove(key) {
                        Some(PutSlot::Granted) => {
                            core.reserved -= 1;
                            let woken = core.insert(item);
                            drop(core);
                            wake_opt(woken);
                            Poll::Ready(Ok(()))
                        }
                        _ => Poll::Ready(Err(QueueShutDown(item))),
                    };
                }
                None => {
                    self.key = None;
                    return Poll::Ready(Err(QueueShutDown(item)));
                }
            };
            drop(core);
            self.item = Some(item);
            drop(stale);
            note_awaiting(Awaiting::Queue(op));
            return Poll::Pending;
        }
        match core.try_put(item) {
            Ok(woken) => {
                drop(core);
                wake_opt(woken);
                Poll::Ready(Ok(()))
            }
            Err(TryPutError::ShutDown(item)) => Poll::Ready(Err(QueueShutDown(item))),
            Err(TryPutError::Full(item)) => {
                if let Err(wrong) = core.binding.bind() {
                    drop(core);
                    drop(item);
                    wrong.fail(op);
                }
                self.key = Some(core.register_putter(cx.waker()));
                drop(core);
                self.item = Some(item);
                note_awaiting(Awaiting::Queue(op));
                Poll::Pending
            }
        }
    }
}

impl<T> Future for Put<T> {
    type Output = Result<(), QueueShutDown<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().poll_put(cx, QueueOp::QueuePut)
    }
}

impl<T> Drop for Put<T> {
    fn drop(&mut self) {
        // The item (if any) is dropped after this, with the field, outside any borrow.
        let Some(key) = self.key.take() else { return };
        let Ok(mut core) = self.core.try_borrow_mut() else {
            return;
        };
        let mut woken = None;
        let mut stale = None;
        match core.putters.remove(key) {
            Some(PutSlot::Granted) => {
                // The slot reserved for us goes to the next putter in line.
                core.reserved -= 1;
                woken = core.release_slot();
            }
            Some(PutSlot::Waiting(w)) => stale = Some(w),
            _ => {}
        }
        drop(core);
        drop(stale);
        wake_opt(woken);
    }
}

impl<T> fmt::Debug for Put<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.key.is_some() { "Put(waiting)" } else { "Put" })
    }
}

/// The future of [`Queue::join`]: completes when every item put has been marked done. Woken by
/// the `task_done` that brought the count to zero, it completes even if more items were put
/// before its task ran (as asyncio's `Event` works).
///
/// ```
/// evloop::run(async {
///     let q = evloop::Queue::new(0);
///     q.put_nowait("a").expect("unbounded");
///     let joiner = {
///         let q = q.clone();
///         evloop::spawn(async move { q.join().await })
///     };
///     evloop::yield_now().await;
///     assert!(!joiner.done()); // one item is not marked done
///     q.get_nowait().expect("queued");
///     q.task_done().expect("one item was put");
///     joiner.await?;
///     Ok::<(), evloop::TaskError>(())
/// })??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Join<T> {
    core: SharedCore<T>,
    key: Option<Key>,
}

impl<T> Future for Join<T> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let mut core = this.core.borrow_mut();
        let stale = match this.key {
            Some(key) => match core.joiners.state_mut(key) {
                Some(JoinSlot::Waiting(w)) => refresh(w, cx),
                _ => {
                    this.key = None;
                    core.joiners.remove(key);
                    return Poll::Ready(());
                }
            },
            None => {
                if core.unfinished == 0 {
                    return Poll::Ready(());
                }
                if let Err(wrong) = core.binding.bind() {
                    drop(core);
                    wrong.fail(QueueOp::QueueJoin);
                }
                this.key = Some(core.joiners.push_back(JoinSlot::Waiting(cx.waker().clone())));
                None
            }
        };
        drop(core);
        drop(stale);
        note_awaiting(Awaiting::Queue(QueueOp::QueueJoin));
        Poll::Pending
    }
}

impl<T> Drop for Join<T> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let removed = match self.core.try_borrow_mut() {
            Ok(mut core) => core.joiners.remove(key),
            Err(_) => None,
        };
        drop(removed);
    }
}

impl<T> fmt::Debug for Join<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.key.is_some() { "Join(waiting)" } else { "Join" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_list_removes_from_the_middle_and_keeps_order() {
        let mut l: WaitList<u32> = WaitList::new();
        let a = l.push_back(1);
        let b = l.push_back(2);
        let c = l.push_back(3);
        assert_eq!(l.remove(b), Some(2));
        assert_eq!(l.waiting(), 2);
        assert_eq!(l.pop_front(), Some(a));
        assert_eq!(l.state_mut(a).copied(), Some(1), "a served node keeps its state");
        let d = l.push_back(4);
        assert_eq!(l.pop_front(), Some(c));
        assert_eq!(l.pop_front(), Some(d));
        assert_eq!(l.pop_front(), None);
        assert_eq!(l.remove(b), None, "a stale key misses");
        assert_eq!(l.unlink_all().len(), 3, "served nodes are still there");
    }

    #[test]
    fn heap_is_smallest_first_and_fifo_among_equals() {
        let mut h = Heap {
            items: Vec::new(),
            cmp: |a: &(u8, char), b: &(u8, char)| a.0.cmp(&b.0),
        };
        for (seq, x) in [(1, 'a'), (0, 'b'), (2, 'c'), (1, 'd'), (0, 'e')]
            .into_iter()
            .enumerate()
        {
            h.push(seq as u64, x);
        }
        let out: Vec<char> = std::iter::from_fn(|| h.pop()).map(|(_, (_, c))| c).collect();
        assert_eq!(out, vec!['b', 'e', 'a', 'd', 'c']);
    }
}
