//! A property test of the loop's timers (`call_later`, `call_at`, `TimerHandle::cancel`) on a
//! virtual clock, with the deadlines that break timer code: zero delays, deadlines in the past
//! (just past, a day past, two centuries past, which is before the loop's clock can count),
//! many equal deadlines, far-future ones and `Duration::MAX` ("never"); timers cancelled before
//! they are due, after they ran, twice, and by another timer due at the same instant; the loop
//! advanced by random amounts or run for one iteration. `timers/tests/model.rs` checks the
//! timer queue itself against a model; this checks what the loop makes of it. A model computes,
//! for each step, which callbacks must run and in which order:
//!
//! - a timer runs once every earlier step has left the loop at or past its deadline, and not
//!   before: its callback sees `time() >= when()`;
//! - timers run in deadline order, and in the order they were scheduled among equal deadlines
//!   (deadlines in the past keep their order too);
//! - a cancelled timer never runs, even when it is already due in the same iteration as the
//!   timer that cancels it; its closure is dropped by `cancel` itself, a run timer's closure
//!   once it has run, and every closure once the loop is closed;
//! - a "never" timer never runs and never moves the clock;
//! - the virtual clock stops exactly at the end of each advance (it jumps from deadline to
//!   deadline, never beyond what was asked).

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::event_loop::{Builder, LoopHandle, TimerHandle};
use evloop_tests::spin_once;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Two centuries: beyond the 146 years before boot that loop time can represent, so every
/// such deadline is the same (the earliest) loop time.
const ANCIENT: Duration = Duration::from_secs(200 * 365 * 86_400);

#[derive(Clone, Copy, Debug)]
enum When {
    /// `call_later(d)`.
    Later(Duration),
    /// `call_at(time() - d)`.
    Ago(Duration),
    /// `call_at(t0 + d)`: absolute instants shared by many timers (equal deadlines).
    Anchor(Duration),
    /// `call_at(t0 - ANCIENT)`.
    Ancient,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Schedule(When),
    /// Schedules a timer that, when it runs, cancels the timer with this index (mod the count).
    ScheduleCanceller(When, usize),
    Cancel(usize),
    /// Runs the loop until its time has moved forward by this much.
    Advance(Duration),
    /// One iteration, without moving the virtual clock.
    Iterate,
}

fn delay() -> impl Strategy<Value = Duration> {
    prop_oneof![
        3 => Just(Duration::ZERO),
        1 => Just(Duration::from_nanos(1)),
        3 => (1u64..=5).prop_map(Duration::from_millis),
        1 => Just(Duration::from_secs(1)),
        1 => Just(Duration::from_secs(3600)),
        1 => Just(Duration::from_secs(200 * 365 * 86_400)),
        1 => Just(Duration::MAX),
    ]
}

fn when() -> impl Strategy<Value = When> {
    prop_oneof![
        4 => delay().prop_map(When::Later),
        2 => prop_oneof![
            Just(Duration::from_nanos(1)),
            Just(Duration::from_millis(1)),
            Just(Duration::from_secs(1)),
            Just(Duration::from_secs(86_400)),
        ]
        .prop_map(When::Ago),
        3 => (0u64..=6).prop_map(|ms| When::Anchor(Duration::from_millis(ms))),
        1 => Just(When::Ancient),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => when().prop_map(Op::Schedule),
        2 => (when(), any::<usize>()).prop_map(|(w, v)| Op::ScheduleCanceller(w, v)),
        3 => any::<usize>().prop_map(Op::Cancel),
        3 => prop_oneof![
            Just(Duration::ZERO),
            Just(Duration::from_nanos(1)),
            (1u64..=4).prop_map(Duration::from_millis),
            Just(Duration::from_secs(2)),
            Just(Duration::from_secs(7200)),
        ]
        .prop_map(Op::Advance),
        2 => Just(Op::Iterate),
    ]
}

/// Deadlines as signed nanoseconds from the loop's creation (`t0`); `None` is never.
type Deadline = Option<i128>;

struct Timer {
    deadline: Deadline,
    when: Instant,
    /// Index of the timer this one cancels when it runs.
    cancels: Option<usize>,
    cancelled: bool,
    ran: bool,
}

/// Lives in each closure: tells the test when the closure is dropped.
struct Probe {
    id: usize,
    alive: Rc<RefCell<HashSet<usize>>>,
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.alive.borrow_mut().remove(&self.id);
    }
}

struct Harness {
    lp: LoopHandle,
    t0: Instant,
    timers: Vec<Timer>,
    handles: Rc<RefCell<Vec<TimerHandle>>>,
    /// (timer index, loop time when it ran).
    runs: Rc<RefCell<Vec<(usize, Instant)>>>,
    alive: Rc<RefCell<HashSet<usize>>>,
}

fn ns(d: Duration) -> i128 {
    i128::try_from(d.as_nanos()).unwrap_or(i128::MAX)
}

impl Harness {
    fn now(&self) -> i128 {
        ns(self.lp.time().duration_since(self.t0))
    }

    fn schedule(&mut self, w: When, cancels: Option<usize>) -> Result<(), TestCaseError> {
        let id = self.timers.len();
        let probe = Probe {
            id,
            alive: self.alive.clone(),
        };
        self.alive.borrow_mut().insert(id);
        let (lp, runs, handles) = (self.lp.clone(), self.runs.clone(), self.handles.clone());
        let f = move || {
            let _probe = probe;
            runs.borrow_mut().push((id, lp.time()));
            if let Some(v) = cancels {
                handles.borrow()[v].cancel();
            }
        };
        let now = self.lp.time();
        let (r, deadline) = match w {
            When::Later(d) => {
                let deadline = now.checked_add(d).map(|_| self.now() + ns(d));
                // Duration::MAX (and anything past what loop time counts) is never.
                let deadline = deadline.filter(|&n| n < ns(Duration::from_secs(400 * 365 * 86_400)));
                (self.lp.call_later(d, f), deadline)
            }
            When::Ago(d) => {
                let at = now - d;
                (self.lp.call_at(at, f), Some(self.now() - ns(d)))
            }
            When::Anchor(d) => (self.lp.call_at(self.t0 + d, f), Some(ns(d))),
            When::Ancient => (self.lp.call_at(self.t0 - ANCIENT, f), Some(-ns(ANCIENT))),
        };
        let handle = r.map_err(|e| TestCaseError::fail(format!("scheduling {w:?}: {e}")))?;
        let when = handle.when();
        self.handles.borrow_mut().push(handle);
        self.timers.push(Timer {
            deadline,
            when,
            cancels,
            cancelled: false,
            ran: false,
        });
        Ok(())
    }

    /// What must run, in order, when the loop's time reaches `upto`: the due timers by
    /// (deadline, scheduling order), skipping those cancelled by an earlier one.
    fn expected_runs(&mut self, upto: i128) -> Vec<usize> {
        let mut due: Vec<usize> = (0..self.timers.len())
            .filter(|&i| {
                let t = &self.timers[i];
                !t.cancelled && !t.ran && t.deadline.is_some_and(|d| d <= upto)
            })
            .collect();
        // Deadlines two centuries back all are the earliest loop time: equal, so FIFO.
        let floor = -ns(ANCIENT);
        due.sort_by_key(|&i| (self.timers[i].deadline.map(|d| d.max(floor)), i));
        let mut out = Vec::new();
        for i in due {
            if self.timers[i].cancelled {
                continue;
            }
            self.timers[i].ran = true;
            out.push(i);
            if let Some(v) = self.timers[i].cancels {
                if !self.timers[v].ran {
                    self.timers[v].cancelled = true;
                }
            }
        }
        out
    }

    fn check_runs(&mut self, upto: i128) -> Result<(), TestCaseError> {
        let expected = self.expected_runs(upto);
        let runs = std::mem::take(&mut *self.runs.borrow_mut());
        let ran: Vec<usize> = runs.iter().map(|r| r.0).collect();
        prop_assert_eq!(&ran, &expected, "timers run (upto {} ns after t0)", upto);
        for (i, at) in runs {
            prop_assert!(
                at >= self.timers[i].when,
                "timer {} ran early: at {:?}, when {:?}",
                i,
                at,
                self.timers[i].when
            );
            prop_assert!(
                !self.alive.borrow().contains(&i),
                "timer {}'s closure is dropped once it ran",
                i
            );
        }
        Ok(())
    }

    fn apply(&mut self, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::Schedule(w) => self.schedule(w, None)?,
            Op::ScheduleCanceller(w, v) => {
                // Any timer scheduled so far, or itself (a no-op while it runs).
                let v = v % (self.timers.len() + 1);
                self.schedule(w, Some(v))?;
            }
            Op::Cancel(i) => {
                if self.timers.is_empty() {
                    return Ok(());
                }
                let i = i % self.timers.len();
                self.handles.borrow()[i].cancel();
                let t = &mut self.timers[i];
                if !t.ran {
                    t.cancelled = true;
                }
                prop_assert!(
                    !self.alive.borrow().contains(&i),
                    "timer {}'s closure is dropped by cancel (or was, when it ran)",
                    i
                );
            }
            Op::Advance(d) => {
                let target = self.now() + ns(d);
                self.lp
                    .run_until_complete(evloop::time::sleep(d))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(self.now(), target, "the virtual clock stops at the end of the advance");
                self.check_runs(target)?;
            }
            Op::Iterate => {
                let now = self.now();
                spin_once(&self.lp);
                prop_assert_eq!(self.now(), now, "an iteration with work ready does not move the clock");
                self.check_runs(now)?;
            }
        }
        Ok(())
    }
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let lp = Builder::new()
        .virtual_clock(true)
        .build()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let alive = {
        let mut h = Harness {
            lp: lp.handle(),
            t0: lp.handle().time(),
            timers: Vec::new(),
            handles: Rc::default(),
            runs: Rc::default(),
            alive: Rc::default(),
        };
        for &op in ops {
            h.apply(op)?;
        }
        h.apply(Op::Iterate)?;
        let alive = h.alive.clone();
        // Every closure still alive belongs to a timer that has not run and was not cancelled.
        for &i in alive.borrow().iter() {
            let t = &h.timers[i];
            prop_assert!(
                !t.ran && !t.cancelled,
                "timer {}: ran {} cancelled {}",
                i,
                t.ran,
                t.cancelled
            );
        }
        alive
    };
    lp.close().map_err(|e| TestCaseError::fail(e.to_string()))?;
    drop(lp);
    prop_assert!(
        alive.borrow().is_empty(),
        "closures alive after close: {:?}",
        alive.borrow()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn timers_run_in_deadline_order_never_early_and_never_after_cancel(
        ops in prop::collection::vec(op(), 0..=60)
    ) {
        run(&ops)?;
    }
}
