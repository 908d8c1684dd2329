//! Per-loop state of the layers above the loop, in typed slots found in O(1).
//!
//! A layer that keeps state per loop (the signal dispatcher of `os::signal`, the executor pool
//! of `executor`) must not make the loop name its types: that import would run up the layers.
//! Instead it declares a key once, as a `static`, and asks any loop for the state under that key:
//!
//! ```text
//! static READ_BUF: LoopKey<RefCell<Vec<u8>>> = LoopKey::new();
//!
//! let buf = lp.slot_or_init(&READ_BUF, || RefCell::new(Vec::with_capacity(64 * 1024)));
//! let state = lp.slot(&SIGNALS); // Option<Rc<SignalState>>: None until created
//! ```
//!
//! # How a slot is found
//! A key's index is assigned the first time any loop uses it, once per process, from a
//! process-wide counter (`NEXT_INDEX`); each loop keeps a vector indexed by it
//! ([`LoopSlots`]), holding each filled slot as an `Rc<dyn Any>`. A read is
//! [`LoopInner::slot`]: one relaxed atomic load (the key's index), a `RefCell` borrow, a bounds
//! check, an `Rc` clone and one downcast (a `TypeId` comparison through the vtable); no scan, no
//! hash, no allocation. [`LoopInner::slot_or_init`] costs the same once the slot is filled; the
//! first use allocates the state's `Rc` and grows the loop's vector to the key's index (keys
//! are few, one per kind of state in the whole program, so the vector stays short). That is
//! cheap enough for a per-recv path: the order of a dozen instructions.
//!
//! # Closing
//! The loop's `close()` empties the slots (before it closes the reactor) in the order they were
//! filled: for a key made with [`LoopKey::with_close`], the hook releases what the state holds
//! (fds, registrations, threads); then the loop drops its `Rc` (the state lives on while others
//! hold one). During `close()` every slot already reads as empty, and a slot filled after it
//! is only dropped with the loop, so a layer checks for a closed loop before it creates state.

use std::any::Any;
use std::cell::RefCell;
use std::convert::Infallible;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::event_loop::LoopInner;

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
    /// A key whose state is simply dropped when its loop closes.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "its first users are LoopInner's fields of higher layers (read_buf, ...), which move next"
        )
    )]
    pub(crate) const fn new() -> LoopKey<T> {
        LoopKey {
            index: AtomicUsize::new(0),
            close: None,
            _state: PhantomData,
        }
    }

    /// A key whose state is released by `close` when its loop closes (before the loop's
    /// reactor and fds are closed), then dropped.
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
        match self.index.load(Relaxed) {
            0 => self.assign_index(),
            i => i - 1,
        }
    }

    /// The first use of the key anywhere: takes the next index. Two threads racing here both
    /// take one, and the first to store its own wins; the other index is never used. Relaxed is
    /// enough: nothing but the index itself is published.
    #[cold]
    fn assign_index(&self) -> usize {
        let mine = NEXT_INDEX.fetch_add(1, Relaxed) + 1;
        match self.index.compare_exchange(0, mine, Relaxed, Relaxed) {
            Ok(_) => mine - 1,
            Err(theirs) => theirs - 1,
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
#[derive(Default)]
pub(crate) struct LoopSlots {
    /// By key index; `None` where this loop has not used the key (or past the vector's end).
    states: RefCell<Vec<Option<Rc<dyn Any>>>>,
    /// The filled slots in the order they were filled, with their key, to close them.
    filled: RefCell<Vec<(usize, &'static dyn CloseSlot)>>,
}

impl LoopInner {
    /// The state under `key` on this loop, if it was created.
    #[inline]
    pub(crate) fn slot<T: 'static>(&self, key: &'static LoopKey<T>) -> Option<Rc<T>> {
        let index = key.index();
        let state = self.slots.states.borrow().get(index)?.clone()?;
        state.downcast::<T>().ok()
    }

    /// The state under `key`, created by `init` if this loop has none yet.
    #[inline]
    pub(crate) fn slot_or_init<T: 'static>(&self, key: &'static LoopKey<T>, init: impl FnOnce() -> T) -> Rc<T> {
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
    ) -> Result<Rc<T>, E> {
        if let Some(state) = self.slot(key) {
            return Ok(state);
        }
        // `init` runs with nothing borrowed: it may use the loop, its other slots included.
        let state = Rc::new(init()?);
        Ok(self.fill(key, state))
    }

    /// Stores a new state under `key`, unless `init` already filled the slot itself (then the
    /// first state stays, and is returned).
    #[cold]
    fn fill<T: 'static>(&self, key: &'static LoopKey<T>, state: Rc<T>) -> Rc<T> {
        if let Some(first) = self.slot(key) {
            return first;
        }
        let index = key.index();
        {
            let mut states = self.slots.states.borrow_mut();
            if states.len() <= index {
                states.resize_with(index + 1, || None);
            }
            states[index] = Some(state.clone());
        }
        self.slots.filled.borrow_mut().push((index, key));
        state
    }

    /// Empties every slot (the loop is closing), in the order they were filled: the key's close
    /// hook runs, then the loop's `Rc` is dropped.
    pub(crate) fn close_slots(self: &Rc<Self>) {
        let filled = std::mem::take(&mut *self.slots.filled.borrow_mut());
        let mut states = std::mem::take(&mut *self.slots.states.borrow_mut());
        for (index, key) in filled {
            if let Some(state) = states.get_mut(index).and_then(Option::take) {
                key.close(&*state, self);
                drop(state);
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
    fn a_slot_is_empty_until_created_then_shared() {
        static COUNTER: LoopKey<Cell<u64>> = LoopKey::new();
        let lp = EventLoop::new().expect("loop");
        assert!(lp.inner.slot(&COUNTER).is_none());
        let a = lp.inner.slot_or_init(&COUNTER, || Cell::new(7));
        let b = lp.inner.slot_or_init(&COUNTER, || Cell::new(99)); // not called
        assert!(Rc::ptr_eq(&a, &b));
        a.set(8);
        assert_eq!(lp.inner.slot(&COUNTER).map(|c| c.get()), Some(8));
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
        assert_eq!(one.inner.slot(&A).map(|c| c.get()), Some(1));
        assert_eq!(one.inner.slot(&B).map(|c| c.get()), Some(2));
        assert_eq!(two.inner.slot(&A).map(|c| c.get()), Some(10));
        assert!(two.inner.slot(&B).is_none());
    }

    #[test]
    fn a_failed_init_leaves_the_slot_empty() {
        static KEY: LoopKey<u8> = LoopKey::new();
        let lp = EventLoop::new().expect("loop");
        assert_eq!(lp.inner.try_slot_or_init(&KEY, || Err("no")).err(), Some("no"));
        assert!(lp.inner.slot(&KEY).is_none());
        assert_eq!(lp.inner.try_slot_or_init(&KEY, || Ok::<_, ()>(3)).map(|s| *s), Ok(3));
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
        assert_eq!(lp.inner.slot(&INNER).map(|s| *s), Some(1));
    }

    thread_local! {
        static CLOSED: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    }

    struct Named(&'static str);

    impl Named {
        fn close(&self, lp: &Rc<LoopInner>) {
            // Every slot reads as empty while the loop closes them.
            assert!(lp.slot(&FIRST).is_none() && lp.slot(&SECOND).is_none());
            CLOSED.with(|c| c.borrow_mut().push(self.0));
        }
    }

    static FIRST: LoopKey<Named> = LoopKey::with_close(Named::close);
    static SECOND: LoopKey<Named> = LoopKey::with_close(Named::close);

    #[test]
    fn close_runs_the_hooks_in_fill_order_and_empties_the_slots() {
        let lp = EventLoop::new().expect("loop");
        let kept = lp.inner.slot_or_init(&SECOND, || Named("second"));
        lp.inner.slot_or_init(&FIRST, || Named("first"));
        lp.close().expect("close");
        assert_eq!(CLOSED.with(|c| c.borrow().clone()), ["second", "first"]);
        assert!(lp.inner.slot(&FIRST).is_none() && lp.inner.slot(&SECOND).is_none());
        assert_eq!(kept.0, "second"); // an Rc held elsewhere outlives the slot
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
