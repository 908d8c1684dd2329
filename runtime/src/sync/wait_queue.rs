//! The one waiter queue of the sync layer. Every task that waits on a [`Lock`](crate::sync::Lock),
//! [`Mutex`](crate::sync::Mutex), [`Semaphore`](crate::sync::Semaphore),
//! [`BoundedSemaphore`](crate::sync::BoundedSemaphore), [`Event`](crate::sync::Event),
//! [`Condition`](crate::sync::Condition), [`Barrier`](crate::sync::Barrier), a [`Queue`](crate::sync::queue::Queue)'s
//! `get` / `put` / `join` or an [`mpsc`](crate::sync::mpsc) channel's `send` / `recv` waits in a
//! [`WaitQueue`], through a [`Waiter`]. The `oneshot` and `threadsafe` channels have a single
//! receiver, so they have no line to keep: they store that receiver's waker with [`park`], the
//! same rule the queue's entries follow.
//!
//! # How a wait goes
//! The waiting future owns a `Waiter`: a reference to the primitive's state (one `RefCell`), the
//! key of at most one entry of a queue in that state, and what the future carries while it waits
//! (a put's item). What differs between primitives is a [`Line`]: which queue of the state it
//! waits in, and four rules: `arrive` (can the wait end at once?), `take` (turn a grant into the
//! future's output), `pass_on` (where a grant goes whose future is gone) and `queued` (what the
//! state does when an entry joins); a line whose waiters want different amounts (a semaphore's
//! `acquire_many`) also says each entry's `need` and what to do when one `left` the line. A poll of the `Waiter`:
//! 1. if it has an entry, looks at it: `Granted` removes the entry and `take`s the grant;
//!    `Waiting` keeps the entry's waker current and stays pending;
//! 2. otherwise `arrive`s; if the wait cannot end at once, checks the loop binding (below) and
//!    pushes a `Waiting` entry at the back of the line.
//!
//! The other side (a release, `set`, `notify`, a put, a get that frees a slot, a shutdown) does
//! not wake a waiter and leave the resource on the table for whoever polls first: it **grants**
//! it, moving the value (a permit, a notification, an item, a reserved slot, an arrival index)
//! into the first `Waiting` entry, which leaves the line, and wakes that entry's task.
//!
//! # Invariants
//! 1. The line, a doubly linked list through a slab, holds exactly the `Waiting` entries, in
//!    arrival order. Grants are taken from its front, so waiters are served first come, first
//!    served; an entry leaves from anywhere in O(1).
//! 2. Each entry belongs to exactly one live `Waiter`, which knows it by its slab key (the
//!    slab's generations make a stale key miss), and only that `Waiter` removes it: when it takes
//!    its grant or when it is dropped.
//! 3. A `Granted` entry holds its grant until its `Waiter` takes it. [`WaitQueue::is_empty`]
//!    counts these entries too, so a primitive that lets a newcomer through only when nobody is
//!    queued also waits for the waiters that were served but have not run yet (asyncio's "wait
//!    for others to start even if `_value > 0`"): a newcomer cannot barge ahead.
//! 4. Nothing foreign runs while the state is borrowed: wakers to wake are collected in a
//!    [`WakeList`], and wakers or values to drop are carried out of the borrow; both happen after
//!    it ends, since waking or dropping runs code that may use the primitive again.
//!
//! # Cancellation safety
//! In asyncio, cancelling a task throws `CancelledError` into it at its `await`, and every
//! primitive's `acquire` must catch it and undo its bookkeeping; CPython has had a series of bugs
//! in exactly that undoing: a waiter cancelled just after it was woken swallowed the wakeup
//! (bpo-32734, "2 locks are taken at once"; gh-90155, the semaphore hang; gh-112202, a lost
//! `Condition.notify`). In Rust a task is cancelled by *dropping* its future (evloop drops it at
//! the task's next step; `timeout` drops it at its deadline), so the undoing is the `Waiter`'s
//! `Drop`, written once here for every user:
//! - **Dropped before it was chosen** (its entry `Waiting`): the entry leaves the line; the
//!   others keep their order. Nothing was handed to it, so nothing is lost.
//! - **Dropped after it was chosen and woken, before its task ran** (its entry `Granted`): the
//!   grant sits in the entry, never seen. `Drop` removes the entry and gives the grant to the
//!   line's `pass_on`, which hands it to the next waiter (a permit, a notification, an item, a
//!   reserved slot) or, if nobody waits, back to the state (the pool of permits, the queue's
//!   items at the place their sequence number gives them). Nothing is lost.
//! - **Never duplicated**: a grant is moved, never copied, so it is in exactly one place at a
//!   time: the state, one entry, or the output of one poll. `take` removes the entry in the same
//!   borrow that returns the grant, so a future that completed has nothing left to pass on.
//! - **Whatever the interleaving**: a grant and a drop each run entirely under the state's
//!   borrow, on one thread, so a drop sees either the `Waiting` entry (and the grant goes to
//!   somebody else) or the `Granted` one (and passes it on); there is no window in between.
//! - Broadcasts (an [`Event`](crate::sync::Event) set, a barrier's trip, `Queue::join` released, a
//!   shutdown) grant every waiter at once; there is nobody to pass such a grant to, and `pass_on`
//!   drops it.
//!
//! # Bound to one loop
//! Just before it queues, a `Waiter` binds the state's [`LoopBinding`] to the running loop, or
//! fails with the loop layer's `WrongLoopError` if a task of another loop waited there first (see "Bound to one loop"
//! in the [`sync`](crate::sync) module documentation). A wait that ends at once in `arrive`
//! needs no loop and checks nothing, and neither does the side that grants.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::ops::Deref;
use std::task::{Context, Poll, Waker};

use crate::event_loop::budget;
use crate::event_loop::error::WrongLoopError;
use crate::event_loop::slab::{Key, Slab};
use crate::event_loop::trace::note_awaiting;
use crate::sync::binding::LoopBinding;
use crate::sync::ops::WaitOp;

// ---------------------------------------------------------------------------------------------
// Wakers.

/// Wakers collected while a state is borrowed, woken after it is released (invariant 4). The
/// common cases, no waker or one, do not allocate.
#[derive(Default)]
pub(crate) struct WakeList {
    first: Option<Waker>,
    rest: Option<Vec<Waker>>,
}

// Inlined: on the hot paths (a put, a get, a release) the list is empty or holds one waker, and
// a call would cost more than the checks.
impl WakeList {
    #[inline]
    pub(crate) fn push(&mut self, waker: Waker) {
        if self.first.is_none() {
            self.first = Some(waker);
        } else {
            self.rest.get_or_insert_with(Vec::new).push(waker);
        }
    }

    #[inline]
    pub(crate) fn wake(self) {
        let WakeList { first, rest } = self;
        if let Some(w) = first {
            w.wake();
        }
        if let Some(rest) = rest {
            wake_all(rest);
        }
    }
}

#[cold]
fn wake_all(wakers: Vec<Waker>) {
    for w in wakers {
        w.wake();
    }
}

/// Keeps `slot` waking the task that polls now: replaces it unless it already wakes the same
/// task, and returns the replaced waker for the caller to drop once its state is released.
#[inline]
fn refresh(slot: &mut Waker, waker: &Waker) -> Option<Waker> {
    if slot.will_wake(waker) {
        None
    } else {
        Some(std::mem::replace(slot, waker.clone()))
    }
}

/// [`refresh`] for a slot that may be empty: the one waiter of a single-receiver channel.
#[inline]
pub(crate) fn park(slot: &mut Option<Waker>, waker: &Waker) -> Option<Waker> {
    match slot {
        Some(w) => refresh(w, waker),
        None => {
            *slot = Some(waker.clone());
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The queue.

pub(crate) enum Slot<G> {
    /// In the line; the waker of the task to wake when it is granted.
    Waiting(Waker),
    /// Out of the line, its task woken; the grant waits for the future to take it.
    Granted(G),
}

struct Node<G> {
    /// Neighbours in the line (both `None` once the entry is granted).
    prev: Option<Key>,
    next: Option<Key>,
    /// How much of the resource the entry waits for ([`Line::need`]: the permits of a
    /// semaphore's `acquire_many`; 1 elsewhere).
    need: u32,
    slot: Slot<G>,
}

/// What a waiting future finds when it looks at its entry.
pub(crate) enum Polled<G> {
    Granted(G),
    /// Still waiting; the waker it replaced, if any, to drop after the borrow.
    Waiting(Option<Waker>),
    /// No such entry (cannot happen while the invariants hold; the future then arrives anew).
    Missing,
}

/// A FIFO queue of waiters with grants: see the module documentation for its invariants.
pub(crate) struct WaitQueue<G> {
    nodes: Slab<Node<G>>,
    head: Option<Key>,
    tail: Option<Key>,
    /// How many entries are `Waiting` (the length of the line).
    waiting: usize,
}

impl<G> WaitQueue<G> {
    pub(crate) fn new() -> Self {
        WaitQueue {
            nodes: Slab::default(),
            head: None,
            tail: None,
            waiting: 0,
        }
    }

    /// Entries still waiting for a grant.
    #[inline]
    pub(crate) fn waiting(&self) -> usize {
        self.waiting
    }

    /// No entries at all, waiting or granted (invariant 3).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.len() == 0
    }

    /// What the first waiter waits for ([`Line::need`]), if anybody waits.
    #[inline]
    pub(crate) fn head_need(&self) -> Option<u32> {
        self.head.and_then(|k| self.nodes.get(k)).map(|n| n.need)
    }

    /// Queues a new waiter, which waits for `need` ([`Line::need`]), at the back of the line;
    /// returns its key.
    pub(crate) fn push(&mut self, waker: &Waker, need: u32) -> Key {
        let key = self.nodes.insert(Node {
            prev: self.tail,
            next: None,
            need,
            slot: Slot::Waiting(waker.clone()),
        });
        match self.tail.and_then(|t| self.nodes.get_mut(t)) {
            Some(tail) => tail.next = Some(key),
            None => self.head = Some(key),
        }
        self.tail = Some(key);
        self.waiting += 1;
        key
    }

    /// Takes a `Waiting` entry out of the line, wherever it is; the node stays in the slab.
    fn unlink(&mut self, key: Key) {
        let Some(node) = self.nodes.get_mut(key) else { return };
        let (prev, next) = (node.prev.take(), node.next.take());
        match prev.and_then(|p| self.nodes.get_mut(p)) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match next.and_then(|n| self.nodes.get_mut(n)) {
            Some(n) => n.prev = prev,
            None => self.tail = prev,
        }
        self.waiting -= 1;
    }

    /// The owner's poll: takes its grant (removing the entry), or keeps its waker current.
    pub(crate) fn poll_entry(&mut self, key: Key, waker: &Waker) -> Polled<G> {
        let Some(node) = self.nodes.get_mut(key) else {
            return Polled::Missing;
        };
        match &mut node.slot {
            Slot::Waiting(w) => Polled::Waiting(refresh(w, waker)),
            Slot::Granted(_) => match self.nodes.remove(key) {
                Some(Node {
                    slot: Slot::Granted(g), ..
                }) => Polled::Granted(g),
                _ => Polled::Missing,
            },
        }
    }

    /// The owner was dropped: removes its entry, from the line if it is still there, and returns
    /// what it held.
    pub(crate) fn remove(&mut self, key: Key) -> Option<Slot<G>> {
        if matches!(self.nodes.get(key)?.slot, Slot::Waiting(_)) {
            self.unlink(key);
        }
        self.nodes.remove(key).map(|n| n.slot)
    }

    /// Grants `value` to the first waiter, whose waker goes to `wakers`; gives the value back
    /// when nobody waits.
    #[inline]
    pub(crate) fn grant_first(&mut self, value: G, wakers: &mut WakeList) -> Result<(), G> {
        self.grant_at(self.head, value, wakers)
    }

    /// Grants `value` to the waiter at `key` (the line's head or tail), or gives it back.
    #[inline]
    fn grant_at(&mut self, key: Option<Key>, value: G, wakers: &mut WakeList) -> Result<(), G> {
        let Some(key) = key else {
            return Err(value);
        };
        self.unlink(key);
        match self.nodes.get_mut(key) {
            Some(node) => {
                if let Slot::Waiting(w) = std::mem::replace(&mut node.slot, Slot::Granted(value)) {
                    wakers.push(w);
                }
                Ok(())
            }
            // Unreachable: a key in the line always has a node.
            None => Err(value),
        }
    }

    /// Grants `value` to the last waiter (the newest; tokio's `Notify::notify_last`), as
    /// [`grant_first`](Self::grant_first) does to the first.
    pub(crate) fn grant_last(&mut self, value: G, wakers: &mut WakeList) -> Result<(), G> {
        self.grant_at(self.tail, value, wakers)
    }

    /// Grants waiters front to back, each the value `next` gives, until `next` gives none or
    /// nobody is left waiting; `next` is called only when there is a waiter to take the value.
    /// Returns how many were granted.
    pub(crate) fn grant_while(&mut self, mut next: impl FnMut() -> Option<G>, wakers: &mut WakeList) -> usize {
        let mut granted = 0;
        while self.head.is_some() {
            let Some(value) = next() else { break };
            if self.grant_first(value, wakers).is_err() {
                break;
            }
            granted += 1;
        }
        granted
    }

    /// Changes the grants that wait to be taken (a shutdown revokes what it must).
    pub(crate) fn for_each_grant(&mut self, mut f: impl FnMut(&mut G)) {
        let granted: Vec<Key> = self
            .nodes
            .iter()
            .filter(|(_, n)| matches!(n.slot, Slot::Granted(_)))
            .map(|(k, _)| k)
            .collect();
        for key in granted {
            if let Some(Node {
                slot: Slot::Granted(g), ..
            }) = self.nodes.get_mut(key)
            {
                f(g);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Lines and waiters.

/// One kind of wait: which queue of a state it waits in, and the rules of the primitive (see
/// "How a wait goes" in the module documentation). Implemented by each primitive's state, or
/// by a marker type when one state has several lines (a queue's getters, putters, joiners).
pub(crate) trait Line {
    /// What the `RefCell` holds.
    type State;
    /// What a waiter is handed: a permit, a notification, an item, an arrival index.
    type Grant;
    /// What the waiting future holds while it waits (a put's item; `()` for most).
    type Carry;
    /// What the wait gives its future.
    type Output;

    fn queue(st: &mut Self::State) -> &mut WaitQueue<Self::Grant>;

    fn binding(st: &Self::State) -> &LoopBinding;

    /// A new arrival: its output if it need not wait (this may grant others: a barrier trips).
    fn arrive(st: &mut Self::State, carry: &mut Self::Carry, wakers: &mut WakeList) -> Option<Self::Output>;

    /// The waiter takes its grant.
    fn take(st: &mut Self::State, grant: Self::Grant, carry: &mut Self::Carry, wakers: &mut WakeList) -> Self::Output;

    /// A waiter was dropped holding a grant it never took: give it to the next waiter, or back
    /// to the state.
    fn pass_on(st: &mut Self::State, grant: Self::Grant, wakers: &mut WakeList);

    /// A waiter was queued (a pool with a free permit grants it at once).
    fn queued(_st: &mut Self::State, _wakers: &mut WakeList) {}

    /// How much of the resource a waiter carrying `carry` waits for, recorded in its entry
    /// ([`WaitQueue::head_need`]): a semaphore's `acquire_many(n)` waits for `n` permits. 1, the
    /// default, for the lines whose grants are all alike.
    fn need(_carry: &Self::Carry) -> u32 {
        1
    }

    /// A waiter left the line without a grant (dropped while it waited). Nothing by default; a
    /// pool whose first waiter needed more permits than were free grants the next ones now.
    fn left(_st: &mut Self::State, _wakers: &mut WakeList) {}

    /// Whether a new arrival would complete at once, without changing anything: asked only
    /// when the task's budget is spent, to tell a wait that must yield (it would complete) from
    /// one that may take its place in the line (it would wait anyway). `true`, the default,
    /// makes every spent-budget arrival yield before it queues; a line whose order is a promise
    /// (a lock's FIFO) says exactly.
    fn would_arrive(_st: &Self::State, _carry: &Self::Carry) -> bool {
        true
    }
}

/// The leaf of every wait: it owns at most one entry of `L`'s queue in the state behind `R`
/// (a reference or an `Rc`) and removes it when it completes or is dropped.
pub(crate) struct Waiter<R: Deref<Target = RefCell<L::State>>, L: Line> {
    state: R,
    key: Option<Key>,
    carry: L::Carry,
    // `fn() -> L`: the marker is never stored, so it does not change the waiter's auto traits.
    _line: PhantomData<fn() -> L>,
}

impl<R: Deref<Target = RefCell<L::State>>, L: Line> Waiter<R, L> {
    pub(crate) fn new(state: R, carry: L::Carry) -> Self {
        Waiter {
            state,
            key: None,
            carry,
            _line: PhantomData,
        }
    }

    /// Whether it has an entry in the queue (waiting, or granted and not yet taken).
    pub(crate) fn is_queued(&self) -> bool {
        self.key.is_some()
    }

    pub(crate) fn carry_mut(&mut self) -> &mut L::Carry {
        &mut self.carry
    }

    /// One poll of the wait; `op` is noted as what the task awaits when it stays pending, and
    /// named in the error when the state is bound to another loop.
    #[inline(always)]
    pub(crate) fn poll_wait(&mut self, cx: &mut Context<'_>, op: WaitOp) -> Poll<Result<L::Output, WrongLoopError>> {
        // A wait that completes spends the task's budget, as a ready socket does: a task looping
        // on a channel that is never empty (or a closed `watch`, a `Notify` with a permit) yields
        // after `BUDGET` of them instead of holding the loop forever (tokio's coop). With the
        // budget spent, a wait that would complete yields (woken at once, nothing changed); one
        // that would wait anyway still takes its place in the line, so a spent budget never
        // costs a lock its FIFO order (tokio's `mutex_fifo_with_coop_budget`).
        if budget::spent() && self.would_complete() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let mut wakers = WakeList::default();
        let mut stale = None;
        let out = self.poll_state(cx.waker(), &mut wakers, &mut stale, op);
        if out.is_ready() {
            budget::spend();
        }
        drop(stale);
        wakers.wake();
        if out.is_pending() {
            note_awaiting(op.awaiting());
        }
        out
    }

    /// With the budget spent: whether this poll might complete (a queued waiter may hold its
    /// grant; a new one asks its line).
    #[cold]
    fn would_complete(&self) -> bool {
        self.key.is_some() || L::would_arrive(&self.state.borrow(), &self.carry)
    }

    #[inline(always)]
    fn poll_state(
        &mut self,
        waker: &Waker,
        wakers: &mut WakeList,
        stale: &mut Option<Waker>,
        op: WaitOp,
    ) -> Poll<Result<L::Output, WrongLoopError>> {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        if let Some(key) = self.key {
            match L::queue(st).poll_entry(key, waker) {
                Polled::Granted(grant) => {
                    self.key = None;
                    return Poll::Ready(Ok(L::take(st, grant, &mut self.carry, wakers)));
                }
                Polled::Waiting(old) => {
                    *stale = old;
                    return Poll::Pending;
                }
                Polled::Missing => self.key = None,
            }
        }
        if let Some(out) = L::arrive(st, &mut self.carry, wakers) {
            return Poll::Ready(Ok(out));
        }
        // About to wait: only a task of the state's own loop may.
        L::binding(st).bind(op)?;
        self.key = Some(L::queue(st).push(waker, L::need(&self.carry)));
        L::queued(st, wakers);
        Poll::Pending
    }
}

impl<R: Deref<Target = RefCell<L::State>>, L: Line> Drop for Waiter<R, L> {
    #[inline]
    fn drop(&mut self) {
        // Most waits end at once or take their grant, and leave nothing behind.
        if let Some(key) = self.key.take() {
            self.leave(key);
        }
    }
}

impl<R: Deref<Target = RefCell<L::State>>, L: Line> Waiter<R, L> {
    /// The cancellation-safety rule of the module documentation: a dropped waiter leaves the
    /// line, and a grant it never took goes on.
    #[inline(never)]
    fn leave(&mut self, key: Key) {
        let Ok(mut st) = self.state.try_borrow_mut() else {
            // Unreachable: nothing foreign runs while the state is borrowed (invariant 4).
            return;
        };
        let mut wakers = WakeList::default();
        let stale = match L::queue(&mut st).remove(key) {
            // Chosen and woken, but its task never ran: the grant goes on.
            Some(Slot::Granted(grant)) => {
                L::pass_on(&mut st, grant, &mut wakers);
                None
            }
            // Dropped while waiting: it leaves the line, which may let the next waiters through.
            Some(Slot::Waiting(waker)) => {
                L::left(&mut st, &mut wakers);
                Some(waker)
            }
            None => None,
        };
        drop(st);
        drop(stale);
        wakers.wake();
    }
}

#[cfg(test)]
mod tests;
