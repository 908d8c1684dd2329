//! Model-based test: random operation sequences are applied both to a
//! `TimerQueue` and to a trivially correct model built on a `BTreeMap`
//! ordered by `(deadline, insertion sequence)`, and the two must agree after
//! every single step: same results, same `len`, same `peek`, and stale ids
//! are always rejected.

use std::collections::{BTreeMap, HashMap, HashSet};

use evloop_timers::{Deadline, TimerId, TimerQueue};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// One step of a test case.
#[derive(Clone, Debug)]
enum Op {
    Insert(Deadline),
    /// Cancel an id chosen among every id issued so far, live or stale
    /// (`index % issued.len()`).
    Cancel(usize),
    /// Cancel an arbitrary, probably never issued, id.
    CancelForged(u64),
    PopExpired(Deadline),
    Pop,
    Peek,
    /// Move an issued id (live or stale) to a new deadline.
    Reschedule(usize, Deadline),
    /// Change the payload of an issued id (live or stale) through `get_mut`.
    GetMut(usize),
    Clear,
    ShrinkToFit,
}

/// Deadlines from a small range so that ties are frequent, plus the extremes.
fn deadline() -> impl Strategy<Value = Deadline> {
    prop_oneof![
        10 => 0u64..8,
        1 => Just(u64::MAX),
        1 => Just(u64::MAX - 1),
    ]
}

fn now() -> impl Strategy<Value = Deadline> {
    prop_oneof![
        8 => 0u64..9,
        1 => Just(u64::MAX - 1),
        1 => Just(u64::MAX),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => deadline().prop_map(Op::Insert),
        12 => any::<usize>().prop_map(Op::Cancel),
        2 => any::<u64>().prop_map(Op::CancelForged),
        10 => now().prop_map(Op::PopExpired),
        6 => Just(Op::Pop),
        3 => Just(Op::Peek),
        5 => (any::<usize>(), deadline()).prop_map(|(i, d)| Op::Reschedule(i, d)),
        3 => any::<usize>().prop_map(Op::GetMut),
        1 => Just(Op::Clear),
        2 => Just(Op::ShrinkToFit),
    ]
}

/// The reference implementation: obviously correct, not fast.
#[derive(Default)]
struct Model {
    /// Pending timers in firing order.
    timers: BTreeMap<(Deadline, u64), (TimerId, u64)>,
    /// Where each live id sits in `timers`.
    keys: HashMap<TimerId, (Deadline, u64)>,
    /// Sequence counter, advanced on insert and reschedule like the queue's.
    next_seq: u64,
}

impl Model {
    fn next_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    fn insert(&mut self, id: TimerId, deadline: Deadline, payload: u64) {
        let key = (deadline, self.next_seq());
        self.timers.insert(key, (id, payload));
        self.keys.insert(id, key);
    }

    fn cancel(&mut self, id: TimerId) -> Option<u64> {
        let key = self.keys.remove(&id)?;
        self.timers.remove(&key).map(|(_, payload)| payload)
    }

    fn peek(&self) -> Option<(Deadline, TimerId)> {
        self.timers
            .first_key_value()
            .map(|(&(deadline, _), &(id, _))| (deadline, id))
    }

    fn pop(&mut self) -> Option<(TimerId, Deadline, u64)> {
        let ((deadline, _), (id, payload)) = self.timers.pop_first()?;
        self.keys.remove(&id);
        Some((id, deadline, payload))
    }

    fn pop_expired(&mut self, now: Deadline) -> Option<(TimerId, Deadline, u64)> {
        match self.peek() {
            Some((deadline, _)) if deadline <= now => self.pop(),
            _ => None,
        }
    }

    fn reschedule(&mut self, id: TimerId, deadline: Deadline) -> bool {
        let Some(payload) = self.cancel(id) else {
            return false;
        };
        self.insert(id, deadline, payload);
        true
    }

    fn get(&self, id: TimerId) -> Option<(Deadline, u64)> {
        let key = self.keys.get(&id)?;
        Some((key.0, self.timers[key].1))
    }

    fn get_mut(&mut self, id: TimerId) -> Option<&mut u64> {
        let key = self.keys.get(&id)?;
        self.timers.get_mut(key).map(|(_, payload)| payload)
    }
}

/// Applies `ops` to a queue and the model, comparing them after each step.
fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut queue: TimerQueue<u64> = TimerQueue::new();
    let mut model = Model::default();
    // Every id ever issued, in issue order, and the subset known to be stale.
    let mut issued: Vec<TimerId> = Vec::new();
    let mut stale: HashSet<TimerId> = HashSet::new();
    let mut next_payload = 0u64;

    let pick = |issued: &[TimerId], index: usize| -> Option<TimerId> {
        (!issued.is_empty()).then(|| issued[index % issued.len()])
    };

    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Insert(deadline) => {
                let payload = next_payload;
                next_payload += 1;
                let id = queue.insert(deadline, payload);
                prop_assert!(!stale.contains(&id), "step {step}: reissued stale id {id:?}");
                prop_assert!(!model.keys.contains_key(&id), "step {step}: duplicate live id");
                model.insert(id, deadline, payload);
                issued.push(id);
            }
            Op::Cancel(index) => {
                if let Some(id) = pick(&issued, index) {
                    let expected = model.cancel(id);
                    prop_assert_eq!(queue.cancel(id), expected, "step {}: cancel", step);
                    prop_assert_eq!(queue.cancel(id), None, "step {}: second cancel", step);
                    stale.insert(id);
                }
            }
            Op::CancelForged(raw) => {
                let id = TimerId::from_u64(raw);
                let expected = model.cancel(id);
                prop_assert_eq!(queue.cancel(id), expected, "step {}: forged cancel", step);
                if expected.is_some() {
                    stale.insert(id);
                }
            }
            Op::PopExpired(now) => {
                let got = queue.pop_expired(now).map(|e| (e.id, e.deadline, e.payload));
                let expected = model.pop_expired(now);
                prop_assert_eq!(got, expected, "step {}: pop_expired({})", step, now);
                if let Some((id, deadline, _)) = got {
                    prop_assert!(deadline <= now);
                    stale.insert(id);
                }
            }
            Op::Pop => {
                let got = queue.pop().map(|e| (e.id, e.deadline, e.payload));
                prop_assert_eq!(got, model.pop(), "step {}: pop", step);
                if let Some((id, _, _)) = got {
                    stale.insert(id);
                }
            }
            Op::Peek => {
                prop_assert_eq!(queue.peek(), model.peek(), "step {}: peek", step);
            }
            Op::Reschedule(index, deadline) => {
                if let Some(id) = pick(&issued, index) {
                    let expected = model.reschedule(id, deadline);
                    prop_assert_eq!(queue.reschedule(id, deadline), expected, "step {}", step);
                }
            }
            Op::GetMut(index) => {
                if let Some(id) = pick(&issued, index) {
                    match (queue.get_mut(id), model.get_mut(id)) {
                        (Some(q), Some(m)) => {
                            prop_assert_eq!(*q, *m, "step {}: get_mut", step);
                            *q += 1_000_000;
                            *m += 1_000_000;
                        }
                        (None, None) => {}
                        (q, m) => {
                            return Err(TestCaseError::fail(format!(
                                "step {step}: get_mut disagrees: queue {q:?}, model {m:?}"
                            )));
                        }
                    }
                }
            }
            Op::Clear => {
                queue.clear();
                stale.extend(model.keys.keys().copied());
                model.timers.clear();
                model.keys.clear();
            }
            Op::ShrinkToFit => queue.shrink_to_fit(),
        }

        // Whole-state comparison after every step.
        prop_assert_eq!(queue.len(), model.timers.len(), "step {}: len", step);
        prop_assert_eq!(queue.is_empty(), model.timers.is_empty());
        prop_assert_eq!(queue.peek(), model.peek(), "step {}: peek", step);
        prop_assert_eq!(queue.peek_deadline(), model.peek().map(|(d, _)| d));
        for &id in &issued {
            let expected = model.get(id);
            prop_assert_eq!(queue.contains(id), expected.is_some(), "step {}: contains", step);
            prop_assert_eq!(queue.deadline(id), expected.map(|(d, _)| d), "step {}", step);
            prop_assert_eq!(queue.get(id).copied(), expected.map(|(_, p)| p), "step {}", step);
            if stale.contains(&id) {
                prop_assert!(!queue.contains(id), "step {}: stale id {:?} accepted", step, id);
            }
        }
    }

    // Finally, the queue drains in exactly the model's order.
    let rest: Vec<_> = std::iter::from_fn(|| queue.pop())
        .map(|e| (e.id, e.deadline, e.payload))
        .collect();
    let expected: Vec<_> = std::iter::from_fn(|| model.pop()).collect();
    prop_assert_eq!(rest, expected);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        ..ProptestConfig::default()
    })]

    #[test]
    fn queue_matches_btreemap_model_step_by_step(ops in prop::collection::vec(op(), 0..=300)) {
        run(&ops)?;
    }
}

/// A fixed sequence, so the model comparison also runs deterministically.
#[test]
fn model_agrees_on_a_fixed_tie_heavy_sequence() {
    let mut ops = Vec::new();
    for i in 0..200usize {
        ops.push(Op::Insert((i % 3) as u64));
        if i % 4 == 0 {
            ops.push(Op::Cancel(i * 7));
        }
        if i % 5 == 0 {
            ops.push(Op::PopExpired(1));
        }
        if i % 50 == 49 {
            ops.push(Op::ShrinkToFit);
        }
    }
    ops.push(Op::Clear);
    ops.extend((0..20).map(|i| Op::Insert(i % 2)));
    run(&ops).unwrap();
}
