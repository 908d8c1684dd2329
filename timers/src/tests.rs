//! Unit tests. They live inside the crate so they can check the internal
//! invariants (heap order, back-pointers, free list) after every operation.

use super::*;
use std::cell::Cell;
use std::rc::Rc;

impl<T> TimerQueue<T> {
    /// Panics if any internal invariant is broken.
    fn check_invariants(&self) {
        // Heap order: no child is smaller than its parent.
        for pos in 1..self.heap.len() {
            let parent = (pos - 1) / ARITY;
            assert!(
                self.heap[parent].key() < self.heap[pos].key(),
                "heap order broken at {pos}"
            );
        }
        // Every heap entry points at an occupied slot that points back.
        for (pos, entry) in self.heap.iter().enumerate() {
            match &self.slots[entry.id.slot as usize] {
                Slot::Occupied {
                    generation, heap_index, ..
                } => {
                    assert_eq!(*generation, entry.id.generation);
                    assert_eq!(*heap_index as usize, pos);
                }
                _ => panic!("heap entry {pos} names a non-occupied slot"),
            }
        }
        let occupied = self.slots.iter().filter(|s| matches!(s, Slot::Occupied { .. })).count();
        assert_eq!(occupied, self.heap.len(), "one heap entry per occupied slot");
        // The free list visits every vacant slot exactly once.
        let vacant = self.slots.iter().filter(|s| matches!(s, Slot::Vacant { .. })).count();
        let mut walked = 0;
        let mut cursor = self.free_head;
        while cursor != NIL {
            walked += 1;
            assert!(walked <= vacant, "free list has a cycle");
            match self.slots[cursor as usize] {
                Slot::Vacant { next_free, .. } => cursor = next_free,
                _ => panic!("free list reaches a non-vacant slot"),
            }
        }
        assert_eq!(walked, vacant, "free list misses vacant slots");
        assert!(self.fresh_generation <= TRIM_GENERATION_LIMIT);
    }

    /// Sets the generation the next occupant of a vacant slot will get, to
    /// test generation exhaustion without 2^32 round trips.
    fn force_next_generation(&mut self, slot: u32, generation: u32) {
        match &mut self.slots[slot as usize] {
            Slot::Vacant { next_generation, .. } => *next_generation = generation,
            _ => panic!("slot {slot} is not vacant"),
        }
    }
}

/// Pops everything, returning `(deadline, payload)` pairs.
fn pop_all<T>(q: &mut TimerQueue<T>) -> Vec<(Deadline, T)> {
    let mut out = Vec::new();
    while let Some(e) = q.pop() {
        q.check_invariants();
        out.push((e.deadline, e.payload));
    }
    out
}

/// Payload that counts its drops, to prove payloads are dropped exactly once.
struct DropCounter(Rc<Cell<usize>>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// A tiny deterministic PRNG (xorshift64*), so tests need no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

// ----- construction ---------------------------------------------------------

#[test]
fn new_and_default_are_empty() {
    let q: TimerQueue<u8> = TimerQueue::new();
    assert!(q.is_empty());
    assert_eq!(q.len(), 0);
    assert_eq!(q.peek(), None);
    assert_eq!(q.peek_deadline(), None);
    let d: TimerQueue<u8> = TimerQueue::default();
    assert!(d.is_empty());
    q.check_invariants();
}

#[test]
fn with_capacity_preallocates_heap_and_slab() {
    let q: TimerQueue<u8> = TimerQueue::with_capacity(100);
    assert!(q.heap.capacity() >= 100);
    assert!(q.slots.capacity() >= 100);
    assert!(q.is_empty());
}

#[test]
fn a_capacity_that_cannot_be_allocated_is_no_panic_and_the_queue_still_works() {
    for n in [usize::MAX, 1 << 60, 1 << 40] {
        let mut q: TimerQueue<u8> = TimerQueue::with_capacity(n);
        assert!(q.is_empty());
        let id = q.insert(5, 1);
        assert_eq!(q.pop_expired(5).map(|e| (e.id, e.payload)), Some((id, 1)));
        q.check_invariants();
    }
}

// ----- ordering -------------------------------------------------------------

#[test]
fn pops_in_deadline_order() {
    let mut q = TimerQueue::new();
    for d in [50, 10, 40, 0, 30, 20, 60, 5] {
        q.insert(d, d);
        q.check_invariants();
    }
    let order: Vec<u64> = pop_all(&mut q).into_iter().map(|(d, _)| d).collect();
    assert_eq!(order, [0, 5, 10, 20, 30, 40, 50, 60]);
    assert!(q.pop().is_none());
}

#[test]
fn equal_deadlines_pop_in_fifo_insertion_order() {
    let mut q = TimerQueue::new();
    // Interleave two deadlines so ties are spread across the heap.
    for i in 0..40u32 {
        q.insert(if i % 2 == 0 { 7 } else { 3 }, i);
    }
    let popped: Vec<(u64, u32)> = pop_all(&mut q);
    let threes: Vec<u32> = (0..40).filter(|i| i % 2 == 1).collect();
    let sevens: Vec<u32> = (0..40).filter(|i| i % 2 == 0).collect();
    let expected: Vec<(u64, u32)> = threes
        .into_iter()
        .map(|i| (3, i))
        .chain(sevens.into_iter().map(|i| (7, i)))
        .collect();
    assert_eq!(popped, expected);
}

#[test]
fn fifo_among_equal_deadlines_survives_cancellations() {
    let mut q = TimerQueue::new();
    let ids: Vec<TimerId> = (0..20u32).map(|i| q.insert(1, i)).collect();
    for id in ids.iter().step_by(3) {
        q.cancel(*id).unwrap();
        q.check_invariants();
    }
    let remaining: Vec<u32> = pop_all(&mut q).into_iter().map(|(_, p)| p).collect();
    let expected: Vec<u32> = (0..20).filter(|i| i % 3 != 0).collect();
    assert_eq!(remaining, expected);
}

#[test]
fn peek_reports_earliest_without_removing_it() {
    let mut q = TimerQueue::new();
    q.insert(20, 'b');
    let a = q.insert(10, 'a');
    q.insert(10, 'c');
    assert_eq!(q.peek(), Some((10, a)));
    assert_eq!(q.peek_deadline(), Some(10));
    assert_eq!(q.len(), 3);
    assert_eq!(q.pop().unwrap().id, a);
}

// ----- cancel ---------------------------------------------------------------

#[test]
fn cancel_head_returns_payload_and_next_earliest_becomes_head() {
    let mut q = TimerQueue::new();
    let head = q.insert(1, "head");
    let second = q.insert(2, "second");
    q.insert(3, "third");
    assert_eq!(q.cancel(head), Some("head"));
    q.check_invariants();
    assert_eq!(q.peek(), Some((2, second)));
    assert_eq!(pop_all(&mut q), [(2, "second"), (3, "third")]);
}

#[test]
fn cancel_middle_keeps_remaining_order() {
    let mut q = TimerQueue::new();
    let ids: Vec<TimerId> = (0..50u64).map(|d| q.insert(d, d)).collect();
    for d in [25, 10, 40, 33, 1] {
        assert_eq!(q.cancel(ids[d]), Some(d as u64));
        q.check_invariants();
    }
    let rest: Vec<u64> = pop_all(&mut q).into_iter().map(|(d, _)| d).collect();
    let expected: Vec<u64> = (0..50).filter(|d| ![25, 10, 40, 33, 1].contains(d)).collect();
    assert_eq!(rest, expected);
}

#[test]
fn cancel_last_heap_entry_and_latest_deadline() {
    let mut q = TimerQueue::new();
    q.insert(1, 1);
    q.insert(2, 2);
    let last = q.insert(3, 3);
    // `last` is both the last heap slot and the latest deadline.
    assert_eq!(q.heap.last().unwrap().id, last);
    assert_eq!(q.cancel(last), Some(3));
    q.check_invariants();
    assert_eq!(pop_all(&mut q), [(1, 1), (2, 2)]);
}

#[test]
fn cancel_entry_that_must_sift_up_after_removal() {
    // Removing from one subtree moves the last leaf (from another subtree)
    // into the hole, where it can be smaller than its new parent.
    let mut q = TimerQueue::new();
    let mut ids = Vec::new();
    for d in [0, 100, 1, 200, 300, 400, 500, 101, 102, 103, 104] {
        ids.push(q.insert(d, d));
    }
    q.insert(2, 2); // last leaf, small deadline
    q.check_invariants();
    assert_eq!(q.cancel(ids[7]), Some(101));
    q.check_invariants();
    let order: Vec<u64> = pop_all(&mut q).into_iter().map(|(d, _)| d).collect();
    assert_eq!(order, [0, 1, 2, 100, 102, 103, 104, 200, 300, 400, 500]);
}

#[test]
fn cancel_only_timer_empties_queue() {
    let mut q = TimerQueue::new();
    let id = q.insert(9, ());
    assert_eq!(q.cancel(id), Some(()));
    assert!(q.is_empty());
    assert_eq!(q.peek(), None);
    q.check_invariants();
}

#[test]
fn cancel_twice_returns_none_the_second_time() {
    let mut q = TimerQueue::new();
    let id = q.insert(5, "x");
    q.insert(6, "y");
    assert_eq!(q.cancel(id), Some("x"));
    assert_eq!(q.cancel(id), None);
    assert_eq!(q.len(), 1);
    q.check_invariants();
}

// ----- stale and foreign ids ------------------------------------------------

#[test]
fn stale_id_after_pop_never_cancels_new_occupant_of_slot() {
    let mut q = TimerQueue::new();
    let old = q.insert(1, "old");
    assert_eq!(q.pop().unwrap().id, old);
    let new = q.insert(2, "new");
    assert_eq!(new.slot(), old.slot(), "the slot is reused");
    assert_ne!(new, old);
    assert_eq!(q.cancel(old), None);
    assert!(!q.contains(old));
    assert_eq!(q.get(old), None);
    assert_eq!(q.deadline(old), None);
    assert!(!q.reschedule(old, 0));
    assert_eq!(q.get(new), Some(&"new"));
    assert_eq!(q.deadline(new), Some(2));
    assert_eq!(q.cancel(new), Some("new"));
    q.check_invariants();
}

#[test]
fn stale_id_after_cancel_never_touches_new_occupant_of_slot() {
    let mut q = TimerQueue::new();
    let old = q.insert(1, 10);
    q.cancel(old).unwrap();
    let new = q.insert(1, 20);
    assert_eq!(new.slot(), old.slot());
    assert_eq!(q.cancel(old), None);
    assert_eq!(q.get_mut(old), None);
    assert_eq!(q.get(new), Some(&20));
    assert_eq!(q.len(), 1);
    q.check_invariants();
}

#[test]
fn stale_ids_stay_stale_across_many_reuses_of_a_slot() {
    let mut q = TimerQueue::new();
    let mut stale = Vec::new();
    for i in 0..1000u32 {
        let id = q.insert(u64::from(i), i);
        for s in &stale {
            assert!(!q.contains(*s));
        }
        stale.push(id);
        q.pop().unwrap();
    }
    assert_eq!(q.slots.len(), 1, "a single slot was recycled throughout");
}

#[test]
fn forged_ids_are_rejected_without_panicking() {
    let mut q = TimerQueue::new();
    let real = q.insert(3, "real");
    let forged = [
        TimerId::from_u64(0xFFFF_FFFF_FFFF_FFFF),
        TimerId::from_u64(u64::from(u32::MAX)),
        TimerId::from_u64(1 << 32),                      // right slot, wrong generation
        TimerId::from_u64(real.to_u64() + 1),            // slot past the end
        TimerId::from_u64(real.to_u64() + (5u64 << 32)), // future generation
        TimerId::from_u64(12_345_678),
    ];
    for id in forged {
        assert_ne!(id, real);
        assert!(!q.contains(id));
        assert_eq!(q.get(id), None);
        assert_eq!(q.get_mut(id), None);
        assert_eq!(q.deadline(id), None);
        assert!(!q.reschedule(id, 1));
        assert_eq!(q.cancel(id), None);
    }
    assert_eq!(q.get(real), Some(&"real"));
    assert_eq!(q.len(), 1);
    q.check_invariants();
}

#[test]
fn ids_from_another_queue_are_handled_without_panicking() {
    let mut big = TimerQueue::new();
    let foreign: Vec<TimerId> = (0..10u64).map(|d| big.insert(d, d)).collect();
    let mut small = TimerQueue::new();
    small.insert(1, 1u64);
    // Slot 0 generation 0 exists in both (such an id is indistinguishable);
    // the others point past the end of `small`'s slab.
    for id in &foreign[1..] {
        assert_eq!(small.cancel(*id), None);
        assert!(!small.contains(*id));
    }
    assert_eq!(small.len(), 1);
    small.check_invariants();
}

#[test]
fn timer_id_round_trips_through_u64() {
    let mut q = TimerQueue::new();
    let a = q.insert(1, ());
    q.pop();
    let b = q.insert(1, ()); // generation 1
    for id in [a, b] {
        assert_eq!(TimerId::from_u64(id.to_u64()), id);
    }
    assert_eq!(b.to_u64(), (1 << 32) | u64::from(b.slot()));
    let v = 0xDEAD_BEEF_0123_4567;
    let id = TimerId::from_u64(v);
    assert_eq!((id.generation(), id.slot()), (0xDEAD_BEEF, 0x0123_4567));
    assert_eq!(id.to_u64(), v);
}

#[test]
fn generation_exhaustion_retires_slot_instead_of_wrapping() {
    let mut q = TimerQueue::new();
    let first = q.insert(1, "first");
    q.pop().unwrap();
    // Pretend slot 0 has been reused 2^32 - 1 times already.
    q.force_next_generation(first.slot(), u32::MAX);
    let last = q.insert(1, "last");
    assert_eq!((last.slot(), last.generation()), (first.slot(), u32::MAX));
    q.pop().unwrap();
    q.check_invariants();
    assert!(matches!(q.slots[0], Slot::Retired));
    // The retired slot is never handed out again; a new slot is used, and
    // neither the old nor the last id of slot 0 names anything.
    let next = q.insert(1, "next");
    assert_ne!(next.slot(), first.slot());
    for id in [first, last, TimerId::from_u64(0)] {
        assert!(!q.contains(id));
        assert_eq!(q.cancel(id), None);
    }
    assert_eq!(q.get(next), Some(&"next"));
    // shrink_to_fit never discards a retired slot (doing so would let the
    // index be recreated with reusable generations).
    q.pop().unwrap();
    q.shrink_to_fit();
    assert_eq!(q.slots.len(), 1);
    assert!(matches!(q.slots[0], Slot::Retired));
    q.check_invariants();
}

// ----- pop_expired ----------------------------------------------------------

#[test]
fn pop_expired_fires_when_deadline_equals_now() {
    let mut q = TimerQueue::new();
    let id = q.insert(100, "t");
    let e = q.pop_expired(100).expect("deadline == now is due");
    assert_eq!((e.id, e.deadline, e.payload), (id, 100, "t"));
    assert!(q.is_empty());
}

#[test]
fn pop_expired_does_not_fire_one_tick_before_deadline() {
    let mut q = TimerQueue::new();
    q.insert(100, "t");
    assert!(q.pop_expired(99).is_none());
    assert_eq!(q.len(), 1);
    assert!(q.pop_expired(0).is_none());
    assert!(q.pop_expired(100).is_some());
}

#[test]
fn pop_expired_on_empty_queue_returns_none() {
    let mut q: TimerQueue<()> = TimerQueue::new();
    assert!(q.pop_expired(u64::MAX).is_none());
    assert!(q.pop().is_none());
}

#[test]
fn zero_deadline_is_due_at_time_zero() {
    let mut q = TimerQueue::new();
    q.insert(0, ());
    assert!(q.pop_expired(0).is_some());
}

#[test]
fn u64_max_deadlines_sort_last_and_fire_only_at_u64_max() {
    let mut q = TimerQueue::new();
    let a = q.insert(u64::MAX, 'a');
    q.insert(5, 'x');
    let b = q.insert(u64::MAX, 'b');
    assert_eq!(q.pop_expired(u64::MAX - 1).unwrap().payload, 'x');
    assert!(q.pop_expired(u64::MAX - 1).is_none());
    assert_eq!(q.peek(), Some((u64::MAX, a)));
    assert_eq!(q.deadline(b), Some(u64::MAX));
    assert_eq!(q.pop_expired(u64::MAX).unwrap().id, a);
    assert_eq!(q.pop_expired(u64::MAX).unwrap().id, b);
    assert!(q.is_empty());
}

// ----- drain_expired --------------------------------------------------------

#[test]
fn drain_expired_yields_due_timers_in_order_then_stays_none() {
    let mut q = TimerQueue::new();
    for d in [5, 1, 9, 3, 7, 3] {
        q.insert(d, d);
    }
    {
        let mut it = q.drain_expired(5);
        assert_eq!(it.size_hint(), (0, Some(6)));
        let due: Vec<u64> = it.by_ref().map(|e| e.deadline).collect();
        assert_eq!(due, [1, 3, 3, 5]);
        assert!(it.next().is_none(), "fused");
    }
    assert_eq!(q.len(), 2);
    assert_eq!(q.peek_deadline(), Some(7));
    q.check_invariants();
}

#[test]
fn drain_expired_partially_consumed_leaves_the_rest_in_queue() {
    let mut q = TimerQueue::new();
    let ids: Vec<TimerId> = (0..10u64).map(|d| q.insert(d, d)).collect();
    let taken: Vec<u64> = q.drain_expired(7).take(3).map(|e| e.payload).collect();
    assert_eq!(taken, [0, 1, 2]);
    // Due-but-not-yielded timers (3..=7) are still pending, as are later ones.
    assert_eq!(q.len(), 7);
    for (d, id) in ids.iter().enumerate() {
        assert_eq!(q.contains(*id), d >= 3);
    }
    q.check_invariants();
    let rest: Vec<u64> = q.drain_expired(7).map(|e| e.payload).collect();
    assert_eq!(rest, [3, 4, 5, 6, 7]);
    assert_eq!(q.len(), 2);
}

// ----- clear / shrink_to_fit / drop ----------------------------------------

#[test]
fn clear_drops_every_payload_and_makes_ids_stale() {
    let drops = Rc::new(Cell::new(0));
    let mut q = TimerQueue::new();
    let ids: Vec<TimerId> = (0..25u64)
        .map(|d| q.insert(d % 4, DropCounter(drops.clone())))
        .collect();
    q.clear();
    assert_eq!(drops.get(), 25);
    assert!(q.is_empty());
    assert_eq!(q.peek(), None);
    q.check_invariants();
    for id in &ids {
        assert!(!q.contains(*id));
        assert!(q.cancel(*id).is_none());
    }
    // The queue is fully usable afterwards and reuses the slots.
    let slab = q.slots.len();
    let fresh: Vec<TimerId> = (0..25u64).map(|d| q.insert(d, DropCounter(drops.clone()))).collect();
    assert_eq!(q.slots.len(), slab);
    for id in &ids {
        assert!(!q.contains(*id), "old ids do not alias the new timers");
    }
    assert!(fresh.iter().all(|id| q.contains(*id)));
    q.check_invariants();
}

#[test]
fn clear_survives_a_panicking_payload_drop() {
    struct Bomb(bool);
    impl Drop for Bomb {
        fn drop(&mut self) {
            if self.0 {
                panic!("payload drop panicked (expected by this test)");
            }
        }
    }
    let mut q = TimerQueue::new();
    for d in 0..10u64 {
        q.insert(d, Bomb(d == 4));
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| q.clear()));
    assert!(result.is_err());
    // Whatever was not cleared yet is still a valid queue.
    q.check_invariants();
    q.clear();
    assert!(q.is_empty());
    q.check_invariants();
}

#[test]
fn dropping_the_queue_drops_pending_payloads_once() {
    let drops = Rc::new(Cell::new(0));
    let mut q = TimerQueue::new();
    for d in 0..10u64 {
        q.insert(d, DropCounter(drops.clone()));
    }
    let popped = q.pop().unwrap();
    let cancelled = q.cancel(q.peek().unwrap().1).unwrap();
    assert_eq!(drops.get(), 0, "moved out, not dropped");
    drop(q);
    assert_eq!(drops.get(), 8);
    drop((popped, cancelled));
    assert_eq!(drops.get(), 10);
}

#[test]
fn shrink_to_fit_gives_memory_back_after_a_burst() {
    let mut q = TimerQueue::new();
    let keep = q.insert(1, 0u64);
    let burst: Vec<TimerId> = (0..10_000u64).map(|d| q.insert(d + 2, d)).collect();
    for id in &burst {
        q.cancel(*id).unwrap();
    }
    assert_eq!(q.len(), 1);
    assert!(q.slots.len() > 10_000);
    q.shrink_to_fit();
    q.check_invariants();
    assert_eq!(q.slots.len(), 1, "the vacant tail was trimmed");
    assert!(q.slots.capacity() < 100);
    assert!(q.heap.capacity() < 100);
    assert_eq!(q.get(keep), Some(&0));
    assert_eq!(q.pop().unwrap().id, keep);
}

#[test]
fn shrink_to_fit_keeps_stale_ids_stale_when_trimmed_slots_are_recreated() {
    let mut q = TimerQueue::new();
    let mut stale = Vec::new();
    // Cycle slots 0..3 a few times so their generations climb.
    for round in 0..5u64 {
        let ids: Vec<TimerId> = (0..3).map(|i| q.insert(round, i)).collect();
        for id in ids {
            q.cancel(id).unwrap();
            stale.push(id);
        }
    }
    q.shrink_to_fit();
    assert_eq!(q.slots.len(), 0);
    q.check_invariants();
    // Recreate the same slot indices many times over.
    for _ in 0..10 {
        let ids: Vec<TimerId> = (0..3).map(|i| q.insert(1, i)).collect();
        for s in &stale {
            assert!(!q.contains(*s));
            assert!(!ids.contains(s), "a stale id was reissued");
        }
        for id in &ids {
            q.cancel(*id).unwrap();
        }
        stale.extend(ids);
        q.shrink_to_fit();
        q.check_invariants();
    }
}

#[test]
fn shrink_to_fit_stops_at_occupied_slot_and_keeps_pending_timers() {
    let mut q = TimerQueue::new();
    let ids: Vec<TimerId> = (0..8u64).map(|d| q.insert(d, d)).collect();
    // Free slots 0..3 and 5..8; slot 4 stays occupied.
    for (i, id) in ids.iter().enumerate() {
        if i != 4 {
            q.cancel(*id).unwrap();
        }
    }
    q.shrink_to_fit();
    q.check_invariants();
    assert_eq!(q.slots.len(), 5, "trimmed down to the occupied slot");
    assert_eq!(q.get(ids[4]), Some(&4));
    // The rebuilt free list hands out the lowest indices first.
    let reused: Vec<u32> = (0..4u64).map(|d| q.insert(d, d).slot()).collect();
    assert_eq!(reused, [0, 1, 2, 3]);
    q.check_invariants();
}

#[test]
fn shrink_to_fit_does_not_trim_slots_with_high_generations() {
    let mut q = TimerQueue::new();
    let id = q.insert(1, ());
    q.cancel(id).unwrap();
    q.force_next_generation(id.slot(), TRIM_GENERATION_LIMIT + 1);
    q.shrink_to_fit();
    assert_eq!(q.slots.len(), 1, "kept, so fresh slots never start near exhaustion");
    assert_eq!(q.fresh_generation, 0);
    q.force_next_generation(id.slot(), TRIM_GENERATION_LIMIT);
    q.shrink_to_fit();
    assert_eq!(q.slots.len(), 0);
    assert_eq!(q.fresh_generation, TRIM_GENERATION_LIMIT);
    let again = q.insert(1, ());
    assert_eq!(again.generation(), TRIM_GENERATION_LIMIT);
    q.check_invariants();
}

// ----- payload access -------------------------------------------------------

#[test]
fn get_mut_modifies_payload_in_place() {
    let mut q = TimerQueue::new();
    let id = q.insert(3, vec![1]);
    q.get_mut(id).unwrap().push(2);
    assert_eq!(q.get(id), Some(&vec![1, 2]));
    assert_eq!(q.pop().unwrap().payload, [1, 2]);
    assert_eq!(q.get_mut(id), None);
}

#[test]
fn contains_get_and_deadline_report_pending_timers() {
    let mut q = TimerQueue::new();
    let a = q.insert(10, 'a');
    let b = q.insert(20, 'b');
    assert!(q.contains(a) && q.contains(b));
    assert_eq!((q.deadline(a), q.deadline(b)), (Some(10), Some(20)));
    assert_eq!((q.get(a), q.get(b)), (Some(&'a'), Some(&'b')));
}

#[test]
fn payloads_are_moved_not_cloned_and_need_no_trait_bounds() {
    // Neither Clone, Debug, Default nor anything else.
    struct Opaque(u32);
    let mut q = TimerQueue::new();
    let id = q.insert(1, Opaque(7));
    q.insert(2, Opaque(8));
    assert_eq!(q.cancel(id).map(|o| o.0), Some(7));
    assert_eq!(q.pop().map(|e| e.payload.0), Some(8));
}

// ----- reschedule -----------------------------------------------------------

#[test]
fn reschedule_moves_timer_earlier_or_later_and_keeps_its_id() {
    let mut q = TimerQueue::new();
    let a = q.insert(10, 'a');
    let b = q.insert(20, 'b');
    let c = q.insert(30, 'c');
    assert!(q.reschedule(c, 5));
    q.check_invariants();
    assert_eq!(q.peek(), Some((5, c)));
    assert!(q.reschedule(c, 25));
    assert!(q.reschedule(a, 40));
    q.check_invariants();
    let order: Vec<(TimerId, u64)> = std::iter::from_fn(|| q.pop()).map(|e| (e.id, e.deadline)).collect();
    assert_eq!(order, [(b, 20), (c, 25), (a, 40)]);
}

#[test]
fn reschedule_to_an_existing_deadline_queues_behind_it() {
    let mut q = TimerQueue::new();
    let first = q.insert(1, "first");
    let second = q.insert(1, "second");
    assert!(q.reschedule(first, 1));
    assert_eq!(q.pop().unwrap().id, second);
    assert_eq!(q.pop().unwrap().id, first);
}

// ----- Debug ----------------------------------------------------------------

#[test]
fn debug_lists_pending_timers_in_firing_order() {
    let mut q = TimerQueue::new();
    q.insert(20, "late");
    q.insert(10, "early");
    let s = format!("{q:?}");
    assert!(s.starts_with("TimerQueue { len: 2, timers: ["), "{s}");
    let early = s.find("\"early\"").unwrap();
    let late = s.find("\"late\"").unwrap();
    assert!(early < late, "{s}");
}

#[test]
fn expired_implements_debug() {
    let mut q = TimerQueue::new();
    q.insert(4, 'z');
    let s = format!("{:?}", q.pop().unwrap());
    assert_eq!(
        s,
        "Expired { id: TimerId { slot: 0, generation: 0 }, deadline: 4, payload: 'z' }"
    );
}

// ----- randomized -----------------------------------------------------------

#[test]
fn random_workload_keeps_heap_and_slab_invariants() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut q = TimerQueue::new();
    let mut live: Vec<TimerId> = Vec::new();
    for step in 0..20_000u32 {
        match rng.below(10) {
            0..=3 => live.push(q.insert(rng.below(1_000), step)),
            4 | 5 if !live.is_empty() => {
                let id = live.swap_remove(rng.below(live.len() as u64) as usize);
                assert!(q.cancel(id).is_some());
            }
            6 if !live.is_empty() => {
                let id = live[rng.below(live.len() as u64) as usize];
                assert!(q.reschedule(id, rng.below(1_000)));
            }
            7 => {
                if let Some(e) = q.pop_expired(rng.below(1_000)) {
                    live.retain(|id| *id != e.id);
                }
            }
            8 => {
                if let Some(e) = q.pop() {
                    live.retain(|id| *id != e.id);
                }
            }
            _ => {
                if step % 1000 == 999 {
                    q.shrink_to_fit();
                }
            }
        }
        assert_eq!(q.len(), live.len());
        if step % 97 == 0 {
            q.check_invariants();
        }
    }
    q.check_invariants();
    let drained: Vec<u64> = pop_all(&mut q).into_iter().map(|(d, _)| d).collect();
    assert!(drained.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn collecting_heapifies_bottom_up_and_pops_like_inserting_one_by_one() {
    let mut rng = Rng(7);
    for n in [0usize, 1, 2, 3, 4, 5, 6, 17, 64, 257, 1000] {
        let pairs: Vec<(Deadline, usize)> = (0..n).map(|i| (rng.below(50), i)).collect();
        let mut built: TimerQueue<usize> = pairs.iter().copied().collect();
        built.check_invariants();
        let mut inserted = TimerQueue::new();
        for (d, p) in &pairs {
            inserted.insert(*d, *p);
        }
        // Same order, FIFO among equal deadlines included (only 50 distinct deadlines).
        assert_eq!(pop_all(&mut built), pop_all(&mut inserted), "n = {n}");
    }
}

#[test]
fn a_collected_queue_cancels_and_inserts_like_any_other() {
    let mut q: TimerQueue<u64> = (0..100).rev().map(|d| (d, d)).collect();
    let ids: Vec<TimerId> = q.heap_layout().map(|(_, _, id)| id).collect();
    for id in ids.iter().step_by(3) {
        assert!(q.cancel(*id).is_some());
        q.check_invariants();
    }
    q.insert(0, 1000);
    q.check_invariants();
    assert_eq!(q.pop().map(|e| e.payload), Some(1000));
}

#[test]
fn heap_layout_lists_the_array_with_the_root_first() {
    let mut q = TimerQueue::new();
    for d in [50, 40, 30, 20, 10] {
        q.insert(d, ());
    }
    let layout: Vec<Deadline> = q.heap_layout().map(|(d, _, _)| d).collect();
    assert_eq!(layout.len(), 5);
    assert_eq!(layout[0], 10);
    // 4-ary: indices 1..=4 are the root's children, each no earlier than the root.
    assert!(layout[1..].iter().all(|&d| d >= 10));
}
