//! Per-loop state of the layers above the loop, in typed slots found in O(1).
//!
//! A layer that keeps state per loop (the task layer's task and promise counters, `io`'s receive
//! buffer and `SIGPIPE` block, the signal dispatcher of `os::signal`, the executor pool of
//! `executor`) must not make the loop name its types: that import would run up the layers.
//! Instead it declares a key once, as a `static`, and asks any loop for the state under that key:
//!
//! ```text
//! static READ_BUF: LoopKey<RefCell<Vec<u8>>> = LoopKey::new();
//!
//! let buf: &RefCell<Vec<u8>> = lp.slot_or_init(&READ_BUF, || RefCell::new(Vec::new()));
//! buf.borrow_mut().resize(64 * 1024, 0);
//! let pool: Option<&DefaultExecutor> = lp.slot(&DEFAULT_EXECUTOR); // None until created
//! ```
//!
//! A slot behaves like a field of [`LoopInner`] that a higher layer adds at run time: it is
//! created on first use, lives as long as the loop, and is borrowed from it (`&T`). State that
//! must outlive a borrow of the loop, or be dropped when the loop closes, sits in the slot as
//! an `Rc` in a `RefCell<Option<..>>` that the key's close hook empties (`os::signal`'s; the
//! pipes' `SIGPIPE` block is a plain `RefCell<Option<..>>` whose hook ends the block).
//!
//! # How a slot is found, and what it costs
//! A key's index is assigned the first time any loop uses it, once per process, from a
//! process-wide counter (`NEXT_INDEX`); each loop keeps an array of [`MAX_SLOTS`] cells indexed
//! by it ([`LoopSlots`]), each empty or holding a `Box<dyn Any>`. A read ([`LoopInner::slot`])
//! is one relaxed atomic load (the key's index), a bounds check, a null check and one downcast
//! (a `TypeId` comparison through the vtable): no scan, no hash, no `RefCell` borrow, no
//! reference count, no allocation. [`LoopInner::slot_or_init`] costs the same once the slot is
//! filled; the first use allocates the state's box. Measured under callgrind (release build):
//! a function, not inlined, that gets a `Cell<u64>` slot with `slot_or_init`, increments it and
//! reads it back costs 36 instructions a call, the downcast's `type_id` call included (it cost
//! 71 when a read cloned an `Rc` out of a `RefCell<Vec>`).
//!
//! A per-loop counter (the task layer's `Task-N` and `Promise#N`) has a cheaper kind of key,
//! [`CounterKey`]: every loop keeps [`MAX_COUNTERS`] plain `Cell<u64>`s, and
//! [`LoopInner::next_count`] is the key's index, a bounds check and an increment (no downcast,
//! which would add some 30 instructions to every spawn).
//!
//! # Closing
//! The loop's `close()` runs the close hooks (keys made with [`LoopKey::with_close`]) in the
//! order the slots were filled, before it closes the reactor: a hook releases what its state
//! holds (fds, registrations, threads), as `close()` does for the loop's own fields. The states
//! themselves are dropped with the loop, like its fields, so a state must not keep its own
//! loop alive (a `LoopHandle` in a slot would be a cycle) unless its close hook lets go of it.
//! A slot filled after `close()` is never closed, only dropped, so a layer checks for a closed
//! loop before it creates state.

use std::any::Any;
use std::cell::{Cell, OnceCell, RefCell};
use std::convert::Infallible;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::event_loop::LoopInner;

/// How many keys the process may declare (each loop has this many cells of two words).
pub(crate) const MAX_SLOTS: usize = 32;

/// The number of slot indices handed out so far, process-wide.
static NEXT_INDEX: AtomicUsize = AtomicUsize::new(0);

/// The key of one kind of per-loop state `T`; declare it once, as a `static` (see the module
/// documentation).
pub(crate) struct LoopKey<T: 'static> {
    /// The slot index plus one; 0 until the first use assigns it.
    index: AtomicUsize,
    /// Releases what the state holds when its loop closes.
    close: Option<fn(&T, &Rc<LoopInner>)>,
    // `fn() -> T`: the key holds no `T`, so it is `Sync` (a `static`) whatever `T` is.
    _state: PhantomData<fn() -> T>,
}

impl<T: 'static> LoopKey<T> {
    /// A key whose state needs nothing done when its loop closes (it is dropped with the loop).
    pub(crate) const fn new() -> LoopKey<T> {
        LoopKey {
            index: AtomicUsize::new(0),
            close: None,
            _state: PhantomData,
        }
    }

    /// A key whose state is released by `close` when its loop closes, before the loop's reactor
    /// and fds are closed.
    pub(crate) const fn with_close(close: fn(&T, &Rc<LoopInner>)) -> LoopKey<T> {
        LoopKey {
            index: AtomicUsize::new(0),
            close: Some(close),
            _state: PhantomData,
        }
    }

    /// The key's slot index, the same in every loop of the process.
    #[inline]
    fn index(&self) -> usize {
        key_index(&self.index, &NEXT_INDEX, MAX_SLOTS)
    }
}

/// The index of a key whose own word is `index` (the index plus one, 0 until assigned), handed
/// out from the counter `next` below `max`.
#[inline]
fn key_index(index: &AtomicUsize, next: &AtomicUsize, max: usize) -> usize {
    match index.load(Relaxed) {
        0 => assign_index(index, next, max),
        i => i - 1,
    }
}

/// The first use of a key anywhere: takes the next index. Two threads racing here both take one,
/// and the first to store its own wins; the other index is never used. Relaxed is enough:
/// nothing but the index itself is published.
#[cold]
fn assign_index(index: &AtomicUsize, next: &AtomicUsize, max: usize) -> usize {
    let mine = next.fetch_add(1, Relaxed) + 1;
    let index = match index.compare_exchange(0, mine, Relaxed, Relaxed) {
        Ok(_) => mine - 1,
        Err(theirs) => theirs - 1,
    };
    // Keys are `static`s of this crate, so this fails (at the first use, every time) only when a
    // change declares more of them than there are cells.
    assert!(index < max, "more than {max} per-loop keys of one kind");
    index
}

/// How many counter keys the process may declare (each loop has this many `Cell<u64>`s).
pub(crate) const MAX_COUNTERS: usize = 8;

/// The number of counter indices handed out so far, process-wide.
static NEXT_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// The key of a per-loop counter of a higher layer (the task layer's `Task-N` and `Promise#N`):
/// a `u64` every loop keeps in a plain array, found by index without the downcast a typed slot
/// costs, for the paths where those instructions would show (every spawn).
pub(crate) struct CounterKey {
    /// The counter's index plus one; 0 until the first use assigns it.
    index: AtomicUsize,
}

impl CounterKey {
    /// A counter key; declare it once, as a `static`.
    pub(crate) const fn new() -> CounterKey {
        CounterKey {
            index: AtomicUsize::new(0),
        }
    }
}

/// A key with its state's type erased, so that the loop can close slots of any type.
trait CloseSlot {
    fn close(&self, state: &dyn Any, lp: &Rc<LoopInner>);
}

impl<T: 'static> CloseSlot for LoopKey<T> {
    fn close(&self, state: &dyn Any, lp: &Rc<LoopInner>) {
        if let (Some(close), Some(state)) = (self.close, state.downcast_ref::<T>()) {
            close(state, lp);
        }
    }
}

/// One loop's slots (a field of [`LoopInner`]).
pub(crate) struct LoopSlots {
    /// By key index; a cell is filled once and keeps its state until the loop is dropped.
    states: [OnceCell<Box<dyn Any>>; MAX_SLOTS],
    /// The filled slots in the order they were filled, with their key, to close them.
    filled: RefCell<Vec<(usize, &'static dyn CloseSlot)>>,
    /// The counters, by counter key index; 0 until first advanced.
    counters: [Cell<u64>; MAX_COUNTERS],
}

impl Default for LoopSlots {
    fn default() -> LoopSlots {
        LoopSlots {
            states: std::array::from_fn(|_| OnceCell::new()),
            filled: RefCell::new(Vec::new()),
            counters: Default::default(),
        }
    }
}

impl LoopInner {
    /// The state under `key` on this loop, if it was created.
    #[inline]
    pub(crate) fn slot<T: 'static>(&self, key: &'static LoopKey<T>) -> Option<&T> {
        self.slots.states.get(key.index())?.get()?.downcast_ref::<T>()
    }

    /// The state under `key`, created by `init` if this loop has none yet.
    #[inline]
    pub(crate) fn slot_or_init<T: 'static>(&self, key: &'static LoopKey<T>, init: impl FnOnce() -> T) -> &T {
        match self.try_slot_or_init(key, || Ok::<T, Infallible>(init())) {
            Ok(state) => state,
            Err(never) => match never {},
        }
    }

    /// The state under `key`, created by `init` if this loop has none yet; an error from `init`
    /// is returned as it is and leaves the slot empty.
    #[inline]
    pub(crate) fn try_slot_or_init<T: 'static, E>(
        &self,
        key: &'static LoopKey<T>,
        init: impl FnOnce() -> Result<T, E>,
    ) -> Result<&T, E> {
        match self.slot(key) {
            Some(state) => Ok(state),
            None => self.fill(key, init),
        }
    }

    /// Creates the state under `key`. `init` runs with nothing borrowed: it may use the loop,
    /// its other slots included; if it fills this very slot itself, that first state stays.
    #[cold]
    fn fill<T: 'static, E>(&self, key: &'static LoopKey<T>, init: impl FnOnce() -> Result<T, E>) -> Result<&T, E> {
        let state: Box<dyn Any> = Box::new(init()?);
        let index = key.index();
        let cell = &self.slots.states[index];
        if cell.set(state).is_ok() {
            self.slots.filled.borrow_mut().push((index, key));
        }
        // The cell holds a `T` now, whoever filled it: its index belongs to `key` alone.
        Ok(self.slot(key).expect("the slot was just filled"))
    }

    /// Advances the counter under `key` and returns its new value: 1 at the first call on this
    /// loop, then 2, 3, ... (wrapping after `u64::MAX`).
    #[inline]
    pub(crate) fn next_count(&self, key: &'static CounterKey) -> u64 {
        let counter = &self.slots.counters[key_index(&key.index, &NEXT_COUNTER, MAX_COUNTERS)];
        let n = counter.get().wrapping_add(1);
        counter.set(n);
        n
    }

    /// Runs the close hooks of the filled slots (the loop is closing), in the order they were
    /// filled; each runs once.
    pub(crate) fn close_slots(self: &Rc<Self>) {
        let filled = std::mem::take(&mut *self.slots.filled.borrow_mut());
        for (index, key) in filled {
            if let Some(state) = self.slots.states[index].get() {
                key.close(&**state, self);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::event_loop::EventLoop;

    #[test]
    fn a_slot_is_empty_until_created_then_the_same_state() {
        static COUNTER: LoopKey<Cell<u64>> = LoopKey::new();
        let lp = EventLoop::new().expect("loop");
        assert!(lp.inner.slot(&COUNTER).is_none());
        let a = lp.inner.slot_or_init(&COUNTER, || Cell::new(7));
        let b = lp.inner.slot_or_init(&COUNTER, || Cell::new(99)); // not called
        assert!(std::ptr::eq(a, b));
        a.set(8);
        assert_eq!(lp.inner.slot(&COUNTER).map(Cell::get), Some(8));
    }

    #[test]
    fn keys_are_distinct_and_loops_separate() {
        static A: LoopKey<Cell<u32>> = LoopKey::new();
        static B: LoopKey<Cell<u32>> = LoopKey::new();
        let (one, two) = (EventLoop::new().expect("loop"), EventLoop::new().expect("loop"));
        one.inner.slot_or_init(&B, || Cell::new(2));
        one.inner.slot_or_init(&A, || Cell::new(1));
        two.inner.slot_or_init(&A, || Cell::new(10));
        assert_ne!(A.index(), B.index());
        assert_eq!(one.inner.slot(&A).map(Cell::get), Some(1));
        assert_eq!(one.inner.slot(&B).map(Cell::get), Some(2));
        assert_eq!(two.inner.slot(&A).map(Cell::get), Some(10));
        assert!(two.inner.slot(&B).is_none());
    }

    #[test]
    fn a_failed_init_leaves_the_slot_empty() {
        static KEY: LoopKey<u8> = LoopKey::new();
        let lp = EventLoop::new().expect("loop");
        assert_eq!(lp.inner.try_slot_or_init(&KEY, || Err("no")).err(), Some("no"));
        assert!(lp.inner.slot(&KEY).is_none());
        assert_eq!(lp.inner.try_slot_or_init(&KEY, || Ok::<_, ()>(3)).copied(), Ok(3));
    }

    #[test]
    fn an_init_may_use_other_slots_and_even_its_own() {
        static OUTER: LoopKey<u32> = LoopKey::new();
        static INNER: LoopKey<u32> = LoopKey::new();
        let lp = EventLoop::new().expect("loop");
        let outer = lp.inner.slot_or_init(&OUTER, || {
            let inner = lp.inner.slot_or_init(&INNER, || 1);
            let again = lp.inner.slot_or_init(&OUTER, || 5); // fills OUTER first
            *inner + *again
        });
        assert_eq!(*outer, 5); // the first state stays
        assert_eq!(lp.inner.slot(&INNER).copied(), Some(1));
    }

    thread_local! {
        static CLOSED: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    }

    struct Named(&'static str);

    impl Named {
        fn close(&self, lp: &Rc<LoopInner>) {
            // The other slots are still there while the hooks run.
            assert!(lp.slot(&FIRST).is_some() && lp.slot(&SECOND).is_some());
            CLOSED.with(|c| c.borrow_mut().push(self.0));
        }
    }

    static FIRST: LoopKey<Named> = LoopKey::with_close(Named::close);
    static SECOND: LoopKey<Named> = LoopKey::with_close(Named::close);

    #[test]
    fn close_runs_the_hooks_once_in_fill_order() {
        let lp = EventLoop::new().expect("loop");
        lp.inner.slot_or_init(&SECOND, || Named("second"));
        lp.inner.slot_or_init(&FIRST, || Named("first"));
        lp.close().expect("close");
        lp.inner.close_slots(); // nothing left to close
        assert_eq!(CLOSED.with(|c| c.borrow().clone()), ["second", "first"]);
    }

    #[test]
    fn a_state_is_dropped_with_its_loop_not_at_close() {
        static HELD: LoopKey<Rc<()>> = LoopKey::new();
        let probe = Rc::new(());
        let lp = EventLoop::new().expect("loop");
        lp.inner.slot_or_init(&HELD, || probe.clone());
        lp.close().expect("close");
        assert_eq!(Rc::strong_count(&probe), 2); // like a field of the loop
        drop(lp);
        assert_eq!(Rc::strong_count(&probe), 1);
    }

    #[test]
    fn counters_count_from_one_per_loop_and_key() {
        static TICKETS: CounterKey = CounterKey::new();
        static SEATS: CounterKey = CounterKey::new();
        let (one, two) = (EventLoop::new().expect("loop"), EventLoop::new().expect("loop"));
        assert_eq!([one.inner.next_count(&TICKETS), one.inner.next_count(&TICKETS)], [1, 2]);
        assert_eq!(one.inner.next_count(&SEATS), 1);
        assert_eq!(two.inner.next_count(&TICKETS), 1);
        assert_eq!(one.inner.next_count(&TICKETS), 3);
    }

    #[test]
    fn threads_racing_for_a_new_key_agree_on_its_index() {
        static RACED: LoopKey<u8> = LoopKey::new();
        let seen: Vec<usize> = (0..4)
            .map(|_| std::thread::spawn(|| RACED.index()))
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().expect("no panic"))
            .collect();
        assert!(seen.iter().all(|&i| i == RACED.index()), "{seen:?}");
    }
}
