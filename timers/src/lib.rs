//! The timer queue behind evloop's `call_at` / `call_later`.
//!
//! A [`TimerQueue`] holds pending timers, each with a [`Deadline`] and a
//! payload of any type `T` (in the event loop, the callback handle). It
//! answers three questions quickly:
//!
//! * *When is the next timer due?* — [`TimerQueue::peek_deadline`], O(1). The
//!   event loop uses it to compute its poll timeout.
//! * *Which timers are due now?* — [`TimerQueue::pop_expired`] and
//!   [`TimerQueue::drain_expired`], O(log n) per timer.
//! * *Forget this timer.* — [`TimerQueue::cancel`], O(log n), given only the
//!   [`TimerId`] returned by [`TimerQueue::insert`].
//!
//! # Example
//!
//! ```
//! use evloop_timers::TimerQueue;
//!
//! let mut timers = TimerQueue::new();
//! let a = timers.insert(1_000, "a");
//! let b = timers.insert(500, "b");
//! let c = timers.insert(1_000, "c");
//!
//! // Cancelling hands the payload back, exactly once.
//! assert_eq!(timers.cancel(b), Some("b"));
//! assert_eq!(timers.cancel(b), None);
//!
//! // Nothing is due before t = 1000 ...
//! assert_eq!(timers.peek_deadline(), Some(1_000));
//! assert!(timers.pop_expired(999).is_none());
//!
//! // ... and at t = 1000 both remaining timers fire, in insertion order.
//! let first = timers.pop_expired(1_000).unwrap();
//! assert_eq!((first.id, first.deadline, first.payload), (a, 1_000, "a"));
//! let second = timers.pop_expired(1_000).unwrap();
//! assert_eq!((second.id, second.payload), (c, "c"));
//! assert!(timers.is_empty());
//!
//! // A fired timer's id is stale: it can no longer name anything.
//! assert!(!timers.contains(a));
//! ```
//!
//! # Ordering guarantee
//!
//! Timers come out in order of increasing deadline. **Among timers with equal
//! deadlines, the one inserted first comes out first** (FIFO). This is a
//! guarantee, not an accident of the implementation: every insertion takes
//! the next value of a `u64` sequence counter, and the heap is ordered by the
//! pair `(deadline, sequence)`, which is unique per timer. (At one insertion
//! per nanosecond the counter would take over 500 years to wrap.)
//! [`TimerQueue::reschedule`] takes a fresh sequence number, so a rescheduled
//! timer queues behind timers that already had the same deadline, exactly as
//! if it had been inserted at that moment.
//!
//! # Layout
//!
//! The queue is two vectors that point at each other:
//!
//! ```text
//!  heap: Vec<HeapEntry>                    slots: Vec<Slot<T>>  (the slab)
//!                                          0: Vacant   { next_generation, next_free }
//!                                          1: Retired
//!  0: { deadline, seq, id: (2, gen) } ---> 2: Occupied { generation, heap_index: 0, payload }
//!  1: { deadline, seq, id: (3, gen) } ---> 3: Occupied { generation, heap_index: 1, payload }
//! ```
//!
//! Every heap entry names its slot, and every occupied slot names its heap
//! position, so either can be reached from the other in O(1).
//!
//! * The **heap** is an implicit 4-ary min-heap. Each entry stores the
//!   comparison key `(deadline, seq)` inline, plus the timer's id (24 bytes in
//!   all). Sifting therefore only reads this one compact array; it never
//!   chases a pointer into the slab to compare two timers.
//! * The **slab** owns the payloads. An occupied slot records where its entry
//!   currently sits in the heap (`heap_index`, updated on every move), which
//!   is what lets [`TimerQueue::cancel`] find an arbitrary timer in O(1) and
//!   remove it in O(log n): swap the last heap entry into the hole, then sift
//!   it up or down, whichever way restores the heap order.
//! * Vacant slots form an intrusive singly-linked free list, so reusing a slot
//!   costs O(1) and no extra memory.
//!
//! # Ids and generations
//!
//! A [`TimerId`] is `(slot, generation)`. Each slot carries a generation
//! counter that is bumped every time the slot is vacated (by pop, cancel or
//! clear). An id is honoured only while its generation matches the slot's, so
//! after a timer has fired or been cancelled its id is *stale*, and every
//! method given it answers `None` / `false` — even after the slot has been
//! reused by a different timer. This is what makes it safe for the event loop
//! to hand ids out to user code and keep them around indefinitely.
//!
//! Generations are 32 bits. Rather than let one wrap to zero, which could make
//! a very old stale id valid again, **a slot whose generation is exhausted is
//! retired forever**: it is never put back on the free list. That costs one
//! dead slot per 2³² reuses of a slot, which is negligible, and in exchange a
//! stale id can never alias a live timer.
//!
//! [`TimerQueue::shrink_to_fit`] may drop vacant slots from the end of the
//! slab. To keep the guarantee when such a slot index is later created again,
//! the queue remembers the highest generation it ever discarded and starts
//! fresh slots there. It only discards slots whose generation is at most
//! 2³¹ − 1, so every fresh slot still has at least 2³¹ lives ahead of it.
//!
//! Ids from another queue or forged with [`TimerId::from_u64`] are harmless:
//! they are bounds- and generation-checked like any other id. (A forged id
//! that happens to equal a live timer's id does of course name that timer.)
//!
//! # Why a 4-ary heap
//!
//! In a binary heap a node at index `i` has children `2i+1, 2i+2`; here it has
//! four, `4i+1 ..= 4i+4`. The tree is half as deep (log₄ n levels instead of
//! log₂ n), so:
//!
//! * sifting *up* — what [`TimerQueue::insert`] does, and timer workloads are
//!   insert-heavy, because most timers (timeouts) are cancelled before they
//!   fire — needs half as many comparisons and moves;
//! * sifting *down* visits half as many levels, each picking the smallest of
//!   up to four children. That is more comparisons per level, but the four
//!   siblings are adjacent in memory (96 bytes, one or two cache lines), so
//!   the extra comparisons are cheap while the levels saved are the cache
//!   misses that dominate on a large heap.
//!
//! The arity is the single constant `ARITY` in the source; the code works for
//! any value ≥ 2.
//!
//! # Complexity
//!
//! | operation | cost |
//! |---|---|
//! | `insert`, `cancel`, `reschedule`, `pop`, `pop_expired` | O(log n) |
//! | `peek`, `peek_deadline`, `len`, `contains`, `get`, `get_mut`, `deadline` | O(1) |
//! | `clear`, building from an iterator (bottom-up heapify) | O(n) |
//! | `shrink_to_fit` | O(slab length) |
//!
//! # Panics
//!
//! No method panics because of its arguments: any deadline (including `0` and
//! `u64::MAX`) and any id are accepted. The only panic is
//! [`TimerQueue::insert`] running out of slot indices (more than 2³² − 1
//! slots), which, like a `Vec` overflowing its capacity, would need far more
//! memory than that first.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::fmt;
use std::iter::FusedIterator;
use std::mem;

/// Deadlines are plain u64 nanoseconds on the caller's monotonic clock.
///
/// The queue never reads a clock itself; it only compares deadlines with
/// each other and with the `now` passed to [`TimerQueue::pop_expired`].
pub type Deadline = u64;

/// Number of children per heap node. See the crate docs for why it is 4.
const ARITY: usize = 4;

/// "No slot": terminates the free list. Because of it the largest usable
/// slot index is `u32::MAX - 1`.
const NIL: u32 = u32::MAX;

/// `shrink_to_fit` only discards vacant slots whose next generation is at most
/// this, so the generation floor for fresh slots stays at or below it and a
/// fresh slot can always be reused at least 2³¹ times before it retires.
const TRIM_GENERATION_LIMIT: u32 = u32::MAX / 2;

/// Handle to a timer in a [`TimerQueue`], returned by [`TimerQueue::insert`].
///
/// An id stays valid until its timer is popped, cancelled or cleared; after
/// that it is *stale* and every queue method treats it as unknown, even if
/// the same slot now holds another timer. Ids are small `Copy` values that
/// can be stored anywhere, and packed into a `u64` with [`TimerId::to_u64`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerId {
    /// Index into the queue's slab.
    slot: u32,
    /// Which occupant of that slot this id names.
    generation: u32,
}

impl TimerId {
    /// Packs the id into a `u64` (generation in the high half, slot in the
    /// low half), e.g. to keep it in an `AtomicU64` or print it in a trace.
    ///
    /// ```
    /// # use evloop_timers::{TimerId, TimerQueue};
    /// let mut q = TimerQueue::new();
    /// let id = q.insert(10, ());
    /// assert_eq!(TimerId::from_u64(id.to_u64()), id);
    /// ```
    pub const fn to_u64(self) -> u64 {
        ((self.generation as u64) << 32) | self.slot as u64
    }

    /// Unpacks an id produced by [`TimerId::to_u64`].
    ///
    /// Every `u64` decodes to *some* id; one that was never issued by a queue
    /// is simply unknown to it, so this cannot be used to cause a panic.
    pub const fn from_u64(v: u64) -> TimerId {
        TimerId {
            slot: v as u32,
            generation: (v >> 32) as u32,
        }
    }

    /// The slab slot this id refers to (diagnostics only).
    pub const fn slot(self) -> u32 {
        self.slot
    }

    /// The generation of the slot this id was issued for (diagnostics only).
    pub const fn generation(self) -> u32 {
        self.generation
    }
}

/// A timer removed from the queue by [`TimerQueue::pop`],
/// [`TimerQueue::pop_expired`] or [`TimerQueue::drain_expired`].
///
/// By the time you hold one, `id` is already stale: the timer is no longer in
/// the queue and the payload has been moved out to you.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expired<T> {
    /// The id [`TimerQueue::insert`] returned for this timer.
    pub id: TimerId,
    /// The deadline the timer was scheduled for (not the time it was popped).
    pub deadline: Deadline,
    /// The payload given to [`TimerQueue::insert`].
    pub payload: T,
}

/// One element of the heap array. `Copy` and free of `T`, so the sift loops
/// move 24-byte values around and never touch payloads.
#[derive(Copy, Clone, Debug)]
struct HeapEntry {
    deadline: Deadline,
    /// Insertion order; breaks ties between equal deadlines (FIFO).
    seq: u64,
    /// Back-pointer into the slab, and the generation to report in
    /// `peek`/`pop` without touching the slab.
    id: TimerId,
}

// The cache-locality argument in the crate docs relies on this size.
const _: () = assert!(mem::size_of::<HeapEntry>() == 24);

impl HeapEntry {
    /// The heap order. Unique per timer because `seq` is.
    #[inline]
    fn key(&self) -> u128 {
        // One 128-bit comparison orders by deadline, then by sequence number: the same order as
        // the tuple `(deadline, seq)`, in two machine compares instead of a branch per field.
        (u128::from(self.deadline) << 64) | u128::from(self.seq)
    }
}

/// One slab cell.
enum Slot<T> {
    /// Holds a pending timer.
    Occupied {
        /// The generation of the id that was handed out for this timer.
        generation: u32,
        /// Where this timer's entry currently is in the heap array.
        heap_index: u32,
        /// The caller's payload; the only place it is stored.
        payload: T,
    },
    /// Free, and linked into the free list.
    Vacant {
        /// The generation the next occupant will get. Every id ever issued
        /// for this slot has a smaller generation, hence is stale.
        next_generation: u32,
        /// Next vacant slot in the free list, or `NIL`.
        next_free: u32,
    },
    /// Generation space exhausted: never used again, so no id can alias.
    Retired,
}

/// A queue of timers ordered by deadline. See the [crate docs](crate) for the
/// ordering guarantee, the id rules and the data layout.
pub struct TimerQueue<T> {
    /// Implicit `ARITY`-ary min-heap ordered by `HeapEntry::key`.
    heap: Vec<HeapEntry>,
    /// Owns the payloads; `heap[i].id.slot` indexes it.
    slots: Vec<Slot<T>>,
    /// First vacant slot, or `NIL` when the free list is empty.
    free_head: u32,
    /// Sequence number for the next insertion (or reschedule).
    next_seq: u64,
    /// Generation given to slots newly pushed onto the slab: the highest
    /// generation `shrink_to_fit` ever discarded, so that a slot index that
    /// is trimmed and later recreated never reissues an old id.
    fresh_generation: u32,
}

impl<T> Default for TimerQueue<T> {
    /// Same as [`TimerQueue::new`]. (Written by hand because deriving would
    /// needlessly require `T: Default`.)
    fn default() -> Self {
        Self::new()
    }
}

impl<T> TimerQueue<T> {
    /// Creates an empty queue. Does not allocate.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// Creates an empty queue with room for `n` timers before reallocating, as far as the
    /// memory can be had: a capacity that cannot be allocated (or overflows, such as
    /// `usize::MAX`) is not an error, the queue simply starts smaller and grows as timers come.
    pub fn with_capacity(n: usize) -> Self {
        let mut heap = Vec::new();
        let mut slots = Vec::new();
        if heap.try_reserve_exact(n).is_err() || slots.try_reserve_exact(n).is_err() {
            heap = Vec::new();
            slots = Vec::new();
        }
        TimerQueue {
            heap,
            slots,
            free_head: NIL,
            next_seq: 0,
            fresh_generation: 0,
        }
    }

    /// Number of pending timers.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// `true` when no timer is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `payload` for `deadline` and returns its id. O(log n).
    ///
    /// Any deadline is accepted, including ones already in the past (they
    /// are simply due immediately) and `u64::MAX`. Timers with equal
    /// deadlines fire in the order they were inserted.
    ///
    /// # Panics
    ///
    /// Only if the queue would need more than 2³² − 1 slots, which requires
    /// far more memory than any real machine has to spare.
    pub fn insert(&mut self, deadline: Deadline, payload: T) -> TimerId {
        let pos = self.heap.len();
        // `pos` fits in u32: there is one heap entry per occupied slot, and
        // `occupy_slot` refuses to create slot `u32::MAX` or beyond.
        let id = self.occupy_slot(pos as u32, payload);
        let seq = self.next_seq;
        // Wrapping, not `+`: the counter cannot realistically wrap (see the
        // crate docs), but if it did we want misordering, not a panic.
        self.next_seq = seq.wrapping_add(1);
        self.heap.push(HeapEntry { deadline, seq, id });
        self.sift_up(pos);
        id
    }

    /// Cancels a pending timer and hands its payload back. O(log n).
    ///
    /// Returns `None`, and changes nothing, if `id` is stale (the timer
    /// already fired or was cancelled), from another queue, or forged.
    ///
    /// ```
    /// # use evloop_timers::TimerQueue;
    /// let mut q = TimerQueue::new();
    /// let id = q.insert(5, String::from("hello"));
    /// assert_eq!(q.cancel(id).as_deref(), Some("hello"));
    /// assert_eq!(q.cancel(id), None);
    /// ```
    pub fn cancel(&mut self, id: TimerId) -> Option<T> {
        let pos = self.position(id)?;
        let removed = self.remove_at(pos);
        debug_assert_eq!(removed.id, id);
        Some(self.vacate(id.slot))
    }

    /// Moves a pending timer to a new deadline, keeping its id and payload.
    /// O(log n). Returns `false` (and does nothing) for a stale or unknown id.
    ///
    /// For tie-breaking the timer counts as inserted *now*: it fires after
    /// every timer that already has the same deadline.
    pub fn reschedule(&mut self, id: TimerId, deadline: Deadline) -> bool {
        let Some(pos) = self.position(id) else {
            return false;
        };
        let seq = self.next_seq;
        self.next_seq = seq.wrapping_add(1);
        let entry = &mut self.heap[pos];
        let old_key = entry.key();
        entry.deadline = deadline;
        entry.seq = seq;
        if entry.key() < old_key {
            self.sift_up(pos);
        } else {
            self.sift_down(pos);
        }
        true
    }

    /// `true` if `id` names a pending timer of this queue.
    pub fn contains(&self, id: TimerId) -> bool {
        self.position(id).is_some()
    }

    /// The deadline of a pending timer, or `None` for a stale/unknown id.
    pub fn deadline(&self, id: TimerId) -> Option<Deadline> {
        self.position(id).map(|pos| self.heap[pos].deadline)
    }

    /// Shared access to a pending timer's payload, or `None` for a
    /// stale/unknown id.
    pub fn get(&self, id: TimerId) -> Option<&T> {
        match self.slots.get(id.slot as usize)? {
            Slot::Occupied {
                generation, payload, ..
            } if *generation == id.generation => Some(payload),
            _ => None,
        }
    }

    /// Mutable access to a pending timer's payload, or `None` for a
    /// stale/unknown id. (The deadline is changed with
    /// [`TimerQueue::reschedule`], never through the payload.)
    pub fn get_mut(&mut self, id: TimerId) -> Option<&mut T> {
        match self.slots.get_mut(id.slot as usize)? {
            Slot::Occupied {
                generation, payload, ..
            } if *generation == id.generation => Some(payload),
            _ => None,
        }
    }

    /// The earliest pending timer's deadline and id, without removing it.
    /// O(1).
    pub fn peek(&self) -> Option<(Deadline, TimerId)> {
        self.heap.first().map(|e| (e.deadline, e.id))
    }

    /// The earliest pending deadline, e.g. to compute how long the event loop
    /// may sleep. O(1).
    pub fn peek_deadline(&self) -> Option<Deadline> {
        self.heap.first().map(|e| e.deadline)
    }

    /// Removes and returns the earliest timer, whatever its deadline.
    /// O(log n).
    pub fn pop(&mut self) -> Option<Expired<T>> {
        if self.heap.is_empty() {
            return None;
        }
        let entry = self.remove_at(0);
        let payload = self.vacate(entry.id.slot);
        Some(Expired {
            id: entry.id,
            deadline: entry.deadline,
            payload,
        })
    }

    /// Removes and returns the earliest timer if it is due, i.e. if its
    /// deadline is `<= now`. O(log n).
    ///
    /// A timer whose deadline equals `now` is due: a timer set for `t` fires
    /// when the clock reads `t`, not one tick later.
    pub fn pop_expired(&mut self, now: Deadline) -> Option<Expired<T>> {
        if self.peek_deadline()? <= now { self.pop() } else { None }
    }

    /// Iterator that calls [`TimerQueue::pop_expired`]`(now)` until it
    /// returns `None`: all due timers, earliest first.
    ///
    /// Timers are removed one at a time as the iterator advances, so if it is
    /// dropped early the timers not yet yielded stay in the queue.
    ///
    /// ```
    /// # use evloop_timers::TimerQueue;
    /// let mut q = TimerQueue::new();
    /// for d in [30, 10, 20, 40] {
    ///     q.insert(d, d);
    /// }
    /// let due: Vec<u64> = q.drain_expired(25).map(|e| e.payload).collect();
    /// assert_eq!(due, [10, 20]);
    /// assert_eq!(q.len(), 2);
    /// ```
    pub fn drain_expired(&mut self, now: Deadline) -> DrainExpired<'_, T> {
        DrainExpired { queue: self, now }
    }

    /// Removes every timer, dropping the payloads. All their ids go stale.
    /// Keeps the allocated memory; see [`TimerQueue::shrink_to_fit`].
    pub fn clear(&mut self) {
        // Remove from the back of the heap: dropping the last element of a
        // heap keeps it a heap, so no sifting is needed, and the queue is
        // consistent after every step. If a payload's `Drop` panics, the
        // remaining timers are still correctly queued.
        while let Some(entry) = self.heap.pop() {
            drop(self.vacate(entry.id.slot));
        }
    }

    /// Gives memory back after a burst of timers.
    ///
    /// Discards vacant slots at the end of the slab (those not yet reused
    /// more than 2³¹ times; a retired or occupied slot stops the trimming),
    /// then shrinks both vectors' capacity to their length. Stale ids stay
    /// stale (see the crate docs). O(slab length).
    pub fn shrink_to_fit(&mut self) {
        while let Some(Slot::Vacant { next_generation, .. }) = self.slots.last() {
            if *next_generation > TRIM_GENERATION_LIMIT {
                break;
            }
            self.fresh_generation = self.fresh_generation.max(*next_generation);
            self.slots.pop();
        }
        // The free list may point at discarded slots, so rebuild it. Ordering
        // it lowest index first also makes later inserts fill the front of
        // the slab, which leaves the tail free for the next trim.
        self.free_head = NIL;
        for (index, slot) in self.slots.iter_mut().enumerate().rev() {
            if let Slot::Vacant { next_free, .. } = slot {
                *next_free = self.free_head;
                // Fits: slot indices are always below `NIL`.
                self.free_head = index as u32;
            }
        }
        self.slots.shrink_to_fit();
        self.heap.shrink_to_fit();
    }

    // ----- slab helpers -------------------------------------------------

    /// Heap position of the timer `id` names, if it is pending.
    fn position(&self, id: TimerId) -> Option<usize> {
        match self.slots.get(id.slot as usize)? {
            Slot::Occupied {
                generation, heap_index, ..
            } if *generation == id.generation => Some(*heap_index as usize),
            _ => None,
        }
    }

    /// Stores `payload` in a free slot (reusing one if possible) and returns
    /// the id of the new occupant.
    fn occupy_slot(&mut self, heap_index: u32, payload: T) -> TimerId {
        if self.free_head != NIL {
            let slot = self.free_head;
            let cell = &mut self.slots[slot as usize];
            if let Slot::Vacant {
                next_generation,
                next_free,
            } = *cell
            {
                self.free_head = next_free;
                *cell = Slot::Occupied {
                    generation: next_generation,
                    heap_index,
                    payload,
                };
                return TimerId {
                    slot,
                    generation: next_generation,
                };
            }
            unreachable!("TimerQueue invariant broken: free list entry is not vacant");
        }
        let slot = self.slots.len();
        assert!(
            slot < NIL as usize,
            "TimerQueue: out of slot indices (more than 2^32 - 1 slots)"
        );
        let generation = self.fresh_generation;
        self.slots.push(Slot::Occupied {
            generation,
            heap_index,
            payload,
        });
        TimerId {
            slot: slot as u32,
            generation,
        }
    }

    /// Empties an occupied slot and returns its payload. Bumps the slot's
    /// generation so every id issued for it goes stale, or retires the slot
    /// if the generation is exhausted.
    fn vacate(&mut self, slot: u32) -> T {
        let cell = &mut self.slots[slot as usize];
        match mem::replace(cell, Slot::Retired) {
            Slot::Occupied {
                generation, payload, ..
            } => {
                // `checked_add` fails only for generation u32::MAX; then the
                // slot stays `Retired` and is never handed out again.
                if let Some(next_generation) = generation.checked_add(1) {
                    *cell = Slot::Vacant {
                        next_generation,
                        next_free: self.free_head,
                    };
                    self.free_head = slot;
                }
                payload
            }
            _ => unreachable!("TimerQueue invariant broken: heap entry names a non-occupied slot"),
        }
    }

    // ----- heap helpers -------------------------------------------------

    /// Writes `entry` at heap position `pos` and records `pos` in its slot.
    /// Every move in the heap goes through here, so the back-pointers can
    /// never get out of date.
    #[inline]
    fn place(&mut self, pos: usize, entry: HeapEntry) {
        self.heap[pos] = entry;
        match self.slots.get_mut(entry.id.slot as usize) {
            Some(Slot::Occupied { heap_index, .. }) => *heap_index = pos as u32,
            _ => debug_assert!(false, "heap entry names a non-occupied slot"),
        }
    }

    /// Restores heap order after the key at `pos` decreased (or was added at
    /// the bottom). Uses a "hole": parents are shifted down into it, and the
    /// moving entry is written once at its final position.
    fn sift_up(&mut self, mut pos: usize) {
        let entry = self.heap[pos];
        while pos > 0 {
            let parent = (pos - 1) / ARITY;
            let parent_entry = self.heap[parent];
            if parent_entry.key() <= entry.key() {
                break;
            }
            self.place(pos, parent_entry);
            pos = parent;
        }
        self.place(pos, entry);
    }

    /// Restores heap order after the key at `pos` increased: the entry sinks,
    /// swapping places with its smallest child while that child is smaller.
    fn sift_down(&mut self, mut pos: usize) {
        let len = self.heap.len();
        let entry = self.heap[pos];
        loop {
            // Saturating so the index maths cannot overflow even on a 32-bit
            // target with a gigantic heap; a saturated index is >= len anyway.
            let first_child = pos.saturating_mul(ARITY).saturating_add(1);
            if first_child >= len {
                break;
            }
            let end = first_child.saturating_add(ARITY).min(len);
            let mut best = first_child;
            for child in first_child + 1..end {
                if self.heap[child].key() < self.heap[best].key() {
                    best = child;
                }
            }
            let best_entry = self.heap[best];
            if entry.key() <= best_entry.key() {
                break;
            }
            self.place(pos, best_entry);
            pos = best;
        }
        self.place(pos, entry);
    }

    /// Removes the heap entry at `pos` and returns it; the caller vacates its
    /// slot.
    fn remove_at(&mut self, pos: usize) -> HeapEntry {
        let removed = self.heap.swap_remove(pos);
        if pos < self.heap.len() {
            // The former last leaf now fills the hole. It came from another
            // part of the tree, so it may be smaller than its new parent
            // (sift up) or larger than its new children (sift down); at most
            // one of the two applies.
            let parent_is_larger = pos > 0 && self.heap[(pos - 1) / ARITY].key() > self.heap[pos].key();
            if parent_is_larger {
                self.sift_up(pos);
            } else {
                self.sift_down(pos);
            }
        }
        removed
    }

    /// The heap's array as it is laid out, index by index: each pending timer's deadline, its
    /// insertion sequence number (the tie-breaker) and its id. The children of index `i` are at
    /// `4i+1 ..= 4i+4`. This is for teaching and debugging (the book prints it to show sifting);
    /// the layout is not part of the queue's contract.
    ///
    /// ```
    /// # use evloop_timers::TimerQueue;
    /// let mut q = TimerQueue::new();
    /// q.insert(30, "c");
    /// q.insert(10, "a"); // sifts up to the root
    /// let deadlines: Vec<u64> = q.heap_layout().map(|(deadline, _seq, _id)| deadline).collect();
    /// assert_eq!(deadlines, [10, 30]);
    /// ```
    pub fn heap_layout(&self) -> impl ExactSizeIterator<Item = (Deadline, u64, TimerId)> + '_ {
        self.heap.iter().map(|e| (e.deadline, e.seq, e.id))
    }

    /// Restores heap order over the whole array bottom-up (Floyd's heapify): every internal node,
    /// from the last one back to the root, sinks into its subtree, which is already a heap. Most
    /// nodes are near the bottom and sink at most a level or two, so this costs O(n), against
    /// O(n log n) for n inserts.
    fn heapify(&mut self) {
        let len = self.heap.len();
        if len < 2 {
            return;
        }
        let last_parent = (len - 2) / ARITY;
        for pos in (0..=last_parent).rev() {
            self.sift_down(pos);
        }
    }

    /// Payload of an occupied slot (for `Debug`).
    fn payload_of(&self, slot: u32) -> Option<&T> {
        match self.slots.get(slot as usize)? {
            Slot::Occupied { payload, .. } => Some(payload),
            _ => None,
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for TimerQueue<T> {
    /// Shows the pending timers in firing order (sorting a copy of the heap,
    /// so this allocates; it is meant for debugging, not hot paths).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerQueue")
            .field("len", &self.len())
            .field("timers", &PendingTimers(self))
            .finish()
    }
}

/// `Debug` helper: the queue's timers as a list, earliest first.
struct PendingTimers<'a, T>(&'a TimerQueue<T>);

/// `Debug` helper: one pending timer.
struct PendingTimer<'a, T> {
    id: TimerId,
    deadline: Deadline,
    payload: &'a T,
}

impl<T: fmt::Debug> fmt::Debug for PendingTimer<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timer")
            .field("id", &self.id)
            .field("deadline", &self.deadline)
            .field("payload", self.payload)
            .finish()
    }
}

impl<T: fmt::Debug> fmt::Debug for PendingTimers<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let queue = self.0;
        let mut order: Vec<&HeapEntry> = queue.heap.iter().collect();
        order.sort_unstable_by_key(|e| e.key());
        f.debug_list()
            .entries(order.into_iter().filter_map(|e| {
                Some(PendingTimer {
                    id: e.id,
                    deadline: e.deadline,
                    payload: queue.payload_of(e.id.slot)?,
                })
            }))
            .finish()
    }
}

impl<T> FromIterator<(Deadline, T)> for TimerQueue<T> {
    /// Builds a queue from `(deadline, payload)` pairs in O(n): the entries go into the array
    /// in the iterator's order (which is also their insertion order, for FIFO among equal
    /// deadlines), and one bottom-up heapify puts it in heap order.
    ///
    /// ```
    /// # use evloop_timers::TimerQueue;
    /// let mut q: TimerQueue<&str> = [(30, "c"), (10, "a"), (20, "b"), (10, "a2")].into_iter().collect();
    /// let order: Vec<&str> = std::iter::from_fn(|| q.pop().map(|e| e.payload)).collect();
    /// assert_eq!(order, ["a", "a2", "b", "c"]);
    /// ```
    fn from_iter<I: IntoIterator<Item = (Deadline, T)>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut q = TimerQueue::with_capacity(iter.size_hint().0);
        for (deadline, payload) in iter {
            let pos = q.heap.len();
            // Fits in u32 for the same reason as in `insert`.
            let id = q.occupy_slot(pos as u32, payload);
            let seq = q.next_seq;
            q.next_seq = seq.wrapping_add(1);
            q.heap.push(HeapEntry { deadline, seq, id });
        }
        q.heapify();
        q
    }
}

/// Iterator returned by [`TimerQueue::drain_expired`]: yields due timers,
/// earliest first, removing each one as it is yielded.
#[derive(Debug)]
pub struct DrainExpired<'a, T> {
    queue: &'a mut TimerQueue<T>,
    now: Deadline,
}

impl<T> Iterator for DrainExpired<'_, T> {
    type Item = Expired<T>;

    fn next(&mut self) -> Option<Expired<T>> {
        self.queue.pop_expired(self.now)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // Could be anything from none to all of the pending timers.
        (0, Some(self.queue.len()))
    }
}

// Once `next` returns `None` the earliest timer is later than `now`, and the
// queue cannot change while this iterator borrows it, so it stays `None`.
impl<T> FusedIterator for DrainExpired<'_, T> {}

#[cfg(test)]
mod tests;
