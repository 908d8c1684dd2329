//! A property test of the permit primitives (`Semaphore` and `Lock`): random interleavings of
//! arrivals (a task that acquires, holds until told, then releases), releases, manual releases
//! (`forget` + `add_permits`), cancellation of any live task (waiting, handed a permit but not
//! yet run, or holding), `try_acquire` from outside, and single loop iterations, all on one
//! loop. After every step the invariants are checked against what the tasks logged:
//!
//! - never more holders than permits, and holders + available permits never exceed the total
//!   (they are equal whenever the loop is idle: no permit is in flight);
//! - waiters are served in FIFO order: the tasks acquire in the order they arrived;
//! - nobody barges: a successful `try_acquire` means no task is queued;
//! - when the loop is idle, a free permit means nobody waits, and `waiters()` counts exactly
//!   the tasks that wait;
//! - at the end, once every holder has released, every task that was not cancelled got its
//!   permit, and all the permits are back.

use std::cell::RefCell;
use std::rc::Rc;

use evloop::{
    event_loop::EventLoop,
    sync::{Lock, Semaphore},
    task::{Promise, Task},
};
use evloop_tests::spin_once;
use proptest::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Arrived(usize),
    Acquired(usize),
    Released(usize),
    /// The task's future is gone: it completed, or it was dropped by cancellation.
    Left(usize),
}

type Events = Rc<RefCell<Vec<Ev>>>;

/// Logs `Left` when the task's future is dropped, whichever way it ends.
struct Leave(usize, Events);

impl Drop for Leave {
    fn drop(&mut self) {
        self.1.borrow_mut().push(Ev::Left(self.0));
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    /// A new task arrives: it acquires, holds until its gate opens, releases.
    Arrive,
    /// Opens the gate of the k-th holder (mod the number of holders): it releases by drop.
    Release(usize),
    /// Opens the gate of the k-th holder, which forgets its permit and adds one back by hand
    /// (a `Lock` holder just releases).
    ManualRelease(usize),
    /// Cancels the k-th live task.
    Cancel(usize),
    /// `try_acquire` from outside the tasks (the permit is dropped at once).
    TryAcquire,
    /// One more permit (`Semaphore` only).
    Grow,
    /// One loop iteration, if anything is ready.
    Step,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Arrive),
        2 => any::<usize>().prop_map(Op::Release),
        1 => any::<usize>().prop_map(Op::ManualRelease),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => Just(Op::TryAcquire),
        1 => Just(Op::Grow),
        5 => Just(Op::Step),
    ]
}

#[derive(Clone)]
enum Prim {
    Sem(Rc<Semaphore>),
    Lock(Rc<Lock>),
}

struct Harness {
    lp: EventLoop,
    prim: Prim,
    /// Permits in existence: the initial ones plus those added by `Grow`.
    total: usize,
    events: Events,
    tasks: Vec<Task<()>>,
    /// The gate of each task (opened with "forget the permit?").
    gates: Vec<Promise<bool>>,
    opened: Vec<bool>,
    cancelled: Vec<bool>,
    /// Something was done from outside the loop since its last iteration. Wakes made while
    /// the loop is not running wait in its remote queue, which `stats().ready` does not count.
    dirty: bool,
}

/// What the events say about each task.
#[derive(Default, Clone, Copy)]
struct Status {
    arrived: bool,
    acquired: bool,
    released: bool,
    left: bool,
}

impl Harness {
    fn new(prim: Prim, total: usize) -> Harness {
        Harness {
            lp: EventLoop::new().unwrap(),
            prim,
            total,
            events: Rc::default(),
            tasks: Vec::new(),
            gates: Vec::new(),
            opened: Vec::new(),
            cancelled: Vec::new(),
            dirty: false,
        }
    }

    fn arrive(&mut self) {
        let i = self.tasks.len();
        let gate: Promise<bool> = self.lp.create_future();
        let (prim, ev, g) = (self.prim.clone(), self.events.clone(), gate.clone());
        let task = self
            .lp
            .create_task(async move {
                let _leave = Leave(i, ev.clone());
                ev.borrow_mut().push(Ev::Arrived(i));
                match &prim {
                    Prim::Sem(sem) => {
                        let permit = sem.acquire().await.unwrap();
                        ev.borrow_mut().push(Ev::Acquired(i));
                        if g.wait().await.unwrap() {
                            permit.forget();
                            sem.add_permits(1);
                        } else {
                            drop(permit);
                        }
                    }
                    Prim::Lock(lock) => {
                        let guard = lock.acquire().await.unwrap();
                        ev.borrow_mut().push(Ev::Acquired(i));
                        g.wait().await.unwrap();
                        drop(guard);
                    }
                }
                ev.borrow_mut().push(Ev::Released(i));
            })
            .unwrap();
        self.tasks.push(task);
        self.gates.push(gate);
        self.opened.push(false);
        self.cancelled.push(false);
    }

    fn statuses(&self) -> Vec<Status> {
        let mut st = vec![Status::default(); self.tasks.len()];
        for e in self.events.borrow().iter() {
            match *e {
                Ev::Arrived(i) => st[i].arrived = true,
                Ev::Acquired(i) => st[i].acquired = true,
                Ev::Released(i) => st[i].released = true,
                Ev::Left(i) => st[i].left = true,
            }
        }
        st
    }

    fn holders(&self) -> Vec<usize> {
        let st = self.statuses();
        (0..st.len())
            .filter(|&i| st[i].acquired && !st[i].released && !st[i].left)
            .collect()
    }

    /// Tasks in the primitive's queue: arrived, not served, still there.
    fn queued(&self) -> usize {
        self.statuses()
            .iter()
            .filter(|s| s.arrived && !s.acquired && !s.left)
            .count()
    }

    fn live(&self) -> Vec<usize> {
        (0..self.tasks.len())
            .filter(|&i| !self.tasks[i].done() && !self.cancelled[i])
            .collect()
    }

    fn open_gate(&mut self, i: usize, forget: bool) {
        if !self.opened[i] {
            self.opened[i] = true;
            self.gates[i].set_result(forget).unwrap();
        }
    }

    fn available(&self) -> usize {
        match &self.prim {
            Prim::Sem(s) => s.available_permits(),
            // A lock's one permit is available exactly when nobody holds it and nobody was
            // handed it: at rest, when it is not locked.
            Prim::Lock(l) => usize::from(!l.locked()),
        }
    }

    /// Nothing is ready and nothing is waiting in the remote queue: no permit is in flight.
    fn idle(&self) -> bool {
        !self.dirty && self.lp.stats().ready == 0
    }

    /// One iteration that never blocks (a no-op callback keeps the poll timeout at zero); its
    /// poll phase moves the remote queue's wakes into the ready queue and runs them.
    fn step(&mut self) {
        spin_once(&self.lp);
        self.dirty = false;
    }

    fn run_until_idle(&mut self) {
        for _ in 0..10_000 {
            self.step();
            if self.idle() {
                return;
            }
        }
        panic!("the loop never went idle");
    }

    fn apply(&mut self, op: Op) -> Result<(), TestCaseError> {
        if !matches!(op, Op::Step) {
            self.dirty = true;
        }
        match op {
            Op::Arrive => {
                if self.tasks.len() < 10 {
                    self.arrive();
                }
            }
            Op::Release(k) | Op::ManualRelease(k) => {
                let holders: Vec<usize> = self.holders().into_iter().filter(|&i| !self.opened[i]).collect();
                if !holders.is_empty() {
                    let i = holders[k % holders.len()];
                    self.open_gate(i, matches!(op, Op::ManualRelease(_)));
                }
            }
            Op::Cancel(k) => {
                let live = self.live();
                if !live.is_empty() {
                    let i = live[k % live.len()];
                    self.tasks[i].cancel();
                    self.cancelled[i] = true;
                }
            }
            Op::TryAcquire => {
                let queued = self.queued();
                let got = match &self.prim {
                    Prim::Sem(s) => s.try_acquire().is_ok(),
                    Prim::Lock(l) => l.try_acquire().is_some(),
                };
                if got {
                    prop_assert_eq!(queued, 0, "try_acquire barged ahead of {} queued task(s)", queued);
                }
            }
            Op::Grow => {
                if let Prim::Sem(s) = &self.prim {
                    s.add_permits(1);
                    self.total += 1;
                }
            }
            Op::Step => self.step(),
        }
        Ok(())
    }

    fn check(&self) -> Result<(), TestCaseError> {
        let holders = self.holders().len();
        let available = self.available();
        prop_assert!(holders <= self.total, "{} holders of {} permits", holders, self.total);
        prop_assert!(
            holders + available <= self.total,
            "{} holders + {} available > {} permits",
            holders,
            available,
            self.total
        );

        // FIFO: tasks acquire in the order they arrived.
        let events = self.events.borrow();
        let arrival: Vec<usize> = events
            .iter()
            .filter_map(|e| match e {
                Ev::Arrived(i) => Some(*i),
                _ => None,
            })
            .collect();
        let rank = |i: usize| arrival.iter().position(|&a| a == i).unwrap();
        let served: Vec<usize> = events
            .iter()
            .filter_map(|e| match e {
                Ev::Acquired(i) => Some(rank(*i)),
                _ => None,
            })
            .collect();
        drop(events);
        prop_assert!(
            served.windows(2).all(|w| w[0] < w[1]),
            "served out of arrival order: {:?}",
            served
        );

        let queued = self.queued();
        let waiters = match &self.prim {
            Prim::Sem(s) => s.waiters(),
            Prim::Lock(l) => l.waiters(),
        };
        prop_assert!(waiters <= queued, "{} waiters but {} queued tasks", waiters, queued);
        if self.idle() {
            // At rest no permit is in flight to a woken task.
            prop_assert_eq!(holders + available, self.total, "a permit was lost or invented");
            prop_assert_eq!(waiters, queued);
            if available > 0 {
                prop_assert_eq!(queued, 0, "a permit is free while tasks wait");
            }
        }
        Ok(())
    }

    /// Releases every holder until all the tasks are finished; then checks that every task not
    /// cancelled got its permit and released it, and that every permit is back.
    fn finish(&mut self) -> Result<(), TestCaseError> {
        if self.total == 0 {
            // A semaphore created empty and never grown: one permit lets the queue drain.
            self.apply(Op::Grow)?;
        }
        for _ in 0..100 {
            self.run_until_idle();
            self.check()?;
            let holders = self.holders();
            if holders.is_empty() {
                break;
            }
            for i in holders {
                self.open_gate(i, false);
            }
        }
        let st = self.statuses();
        for (i, s) in st.iter().enumerate() {
            prop_assert!(self.tasks[i].done(), "task {} never finished", i);
            if !self.cancelled[i] {
                prop_assert!(
                    s.acquired && s.released,
                    "task {} was not cancelled but never served",
                    i
                );
            }
        }
        if let Prim::Sem(s) = &self.prim {
            prop_assert_eq!(s.available_permits(), self.total);
            prop_assert_eq!(s.waiters(), 0);
        }
        if let Prim::Lock(l) = &self.prim {
            prop_assert!(!l.locked());
        }
        Ok(())
    }
}

fn run_case(prim: Prim, total: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut h = Harness::new(prim, total);
    for &op in ops {
        h.apply(op)?;
        h.check()?;
    }
    h.finish()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn semaphore_random_interleavings_keep_the_invariants(
        permits in 0usize..=3,
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        run_case(Prim::Sem(Rc::new(Semaphore::new(permits))), permits, &ops)?;
    }

    #[test]
    fn lock_random_interleavings_keep_the_invariants(ops in proptest::collection::vec(op(), 1..80)) {
        run_case(Prim::Lock(Rc::new(Lock::new())), 1, &ops)?;
    }
}
