//! The synchronisation primitives (`evloop::sync`): `Event`, `Lock` and `Mutex`, `Semaphore`
//! and `BoundedSemaphore`, `Condition`, `Barrier`.
//!
//! Each test checks one behaviour: FIFO service (three tasks queued A, B, C are served A, B, C,
//! and a newcomer never barges ahead of queued waiters), cancellation safety at each await point
//! (a waiter dropped by a `timeout` or by cancelling its task loses no permit and no wakeup, and
//! the next waiter proceeds), and each primitive's own contract. The tests named after a case of
//! CPython's `Lib/test/test_asyncio/test_locks.py` are rewrites of that case against this API
//! (asyncio's `await asyncio.sleep(0)` is `tick()` here, `task.cancel()` is the same).
//!
//! Every loop runs on a virtual clock, so timeouts expire at once and deterministically.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use evloop::sync::{BarrierWait, EventWait, LockAcquire, SemaphoreAcquire};
use evloop::{
    event_loop::get_running_loop,
    spawn,
    sync::{Barrier, BoundedSemaphore, Condition, Event, Lock, Mutex, Semaphore, SyncError},
    task::{Promise, Task, TaskError, yield_now},
    time::{sleep, timeout},
};
use evloop_tests::{Log, entries, log, push, run_bounded, settle, virtual_loop};

// ---------------------------------------------------------------------------------------------
// Helpers.

/// asyncio's `await asyncio.sleep(0)`: the tasks made ready before it run, then this task.
async fn tick() {
    yield_now().await;
}

/// `Some(output)` if `fut` completes at its first poll, without waiting; else `None` (and `fut`
/// is dropped: a zero timeout polls the inner future once before it looks at the timer).
async fn at_once<F: Future>(fut: F) -> Option<F::Output> {
    timeout(Duration::ZERO, fut).await.ok()
}

/// A promise on the running loop, used as a gate a task waits at until the test opens it.
fn gate() -> Promise<()> {
    get_running_loop().unwrap().create_future()
}

fn open(gate: &Promise<()>) {
    gate.set_result(()).unwrap();
}

/// Spawns a task that takes `lock`, logs `name`, holds the lock until `hold` opens (if given),
/// and logs `name-done` after releasing it.
fn lock_user(lock: &Rc<Lock>, log: &Log, name: &'static str, hold: Option<Promise<()>>) -> Task<()> {
    let lock = lock.clone();
    let log = log.clone();
    spawn(async move {
        let guard = lock.acquire().await.unwrap();
        push(&log, name);
        if let Some(h) = hold {
            h.wait().await.unwrap();
        }
        drop(guard);
        push(&log, format!("{name}-done"));
    })
}

/// Spawns a task that takes a permit of `sem`, logs `name`, and keeps the permit (forgotten),
/// as asyncio's `await sem.acquire()` without a release.
fn sem_taker(sem: &Rc<Semaphore>, log: &Log, name: &'static str) -> Task<()> {
    let sem = sem.clone();
    let log = log.clone();
    spawn(async move {
        sem.acquire().await.unwrap().forget();
        push(&log, name);
    })
}

// ---------------------------------------------------------------------------------------------
// Event.

#[test]
fn event_wait_returns_at_once_when_set() {
    run_bounded(&virtual_loop(), async {
        let ev = Event::new();
        assert!(!ev.is_set());
        assert!(
            at_once(ev.wait()).await.is_none(),
            "an unset event makes the waiter wait"
        );
        ev.set();
        assert!(ev.is_set());
        assert!(at_once(ev.wait()).await.is_some(), "a set event does not suspend");
        assert_eq!(ev.waiters(), 0, "the dropped waiter left the queue");
    });
}

#[test]
fn event_set_wakes_every_waiter_in_fifo_order() {
    run_bounded(&virtual_loop(), async {
        let ev = Rc::new(Event::new());
        let log = log();
        let tasks: Vec<Task<()>> = ["A", "B", "C"]
            .into_iter()
            .map(|name| {
                let (ev, log) = (ev.clone(), log.clone());
                spawn(async move {
                    ev.wait().await.unwrap();
                    push(&log, name);
                })
            })
            .collect();
        tick().await;
        assert_eq!(ev.waiters(), 3);
        assert!(entries(&log).is_empty());
        ev.set();
        ev.set(); // a second set changes nothing
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(entries(&log), ["A", "B", "C"]);
        assert_eq!(ev.waiters(), 0);
    });
}

/// CPython `EventTests.test_clear_with_waiters`: a waiter woken by `set()` returns even if the
/// event is cleared again before its task runs.
#[test]
fn event_waiter_woken_by_set_returns_even_if_cleared_before_it_runs() {
    run_bounded(&virtual_loop(), async {
        let ev = Rc::new(Event::new());
        let e = ev.clone();
        let t = spawn(async move { e.wait().await });
        tick().await;
        ev.set();
        ev.clear();
        assert!(!ev.is_set());
        tick().await;
        assert!(t.done(), "the waiter was woken by set() and finished");
        assert_eq!(ev.waiters(), 0);
    });
}

#[test]
fn event_clear_makes_later_waits_wait_for_the_next_set() {
    run_bounded(&virtual_loop(), async {
        let ev = Rc::new(Event::new());
        ev.set();
        ev.clear();
        let e = ev.clone();
        let t = spawn(async move { e.wait().await });
        settle(3).await;
        assert!(!t.done());
        ev.set();
        t.await.unwrap().unwrap();
    });
}

/// CPython `EventTests.test_wait_cancel`: a cancelled waiter leaves the queue; the others are
/// still woken by the next `set()`.
#[test]
fn event_waiter_dropped_by_timeout_or_cancel_leaves_the_others_waiting() {
    run_bounded(&virtual_loop(), async {
        let ev = Rc::new(Event::new());
        let log = log();
        let waiter = |name: &'static str| {
            let (ev, log) = (ev.clone(), log.clone());
            spawn(async move {
                ev.wait().await.unwrap();
                push(&log, name);
            })
        };
        let a = waiter("A");
        let e = ev.clone();
        let timed = spawn(async move { timeout(Duration::from_millis(5), e.wait()).await });
        let c = waiter("C");
        tick().await;
        assert_eq!(ev.waiters(), 3);
        a.cancel();
        assert!(timed.await.is_ok_and(|r| r.is_err()), "the wait timed out");
        assert_eq!(ev.waiters(), 1, "A (cancelled) and the timed-out waiter left");
        ev.set();
        c.await.unwrap();
        assert!(a.cancelled());
        assert_eq!(entries(&log), ["C"]);
    });
}

// ---------------------------------------------------------------------------------------------
// Lock.

#[test]
fn lock_try_acquire_and_locked_follow_the_guard() {
    let lock = Lock::new();
    assert!(!lock.locked());
    let g = lock.try_acquire().expect("a free lock");
    assert!(lock.locked());
    assert!(lock.try_acquire().is_none(), "held");
    assert!(
        lock.locked(),
        "a failed try_acquire leaves no trace (no phantom release)"
    );
    assert!(std::ptr::eq(g.lock(), &lock));
    drop(g);
    assert!(!lock.locked());
    assert!(lock.try_acquire().is_some());
    assert!(!lock.locked(), "the temporary guard was dropped at once");
    let only = lock.try_acquire().expect("free");
    assert!(
        lock.try_acquire().is_none(),
        "one holder at a time, however often it was tried"
    );
    drop(only);
}

#[test]
fn lock_waiters_are_served_in_arrival_order() {
    run_bounded(&virtual_loop(), async {
        let lock = Rc::new(Lock::new());
        let log = log();
        let held = lock.acquire().await.unwrap();
        let tasks: Vec<Task<()>> = ["A", "B", "C"]
            .into_iter()
            .map(|n| lock_user(&lock, &log, n, None))
            .collect();
        tick().await;
        assert_eq!(lock.waiters(), 3);
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(entries(&log), ["A", "A-done", "B", "B-done", "C", "C-done"]);
        assert!(!lock.locked());
    });
}

#[test]
fn lock_newcomer_does_not_barge_ahead_of_a_woken_waiter() {
    run_bounded(&virtual_loop(), async {
        let lock = Rc::new(Lock::new());
        let log = log();
        let held = lock.acquire().await.unwrap();
        let a = lock_user(&lock, &log, "A", None);
        tick().await;
        drop(held); // handed to A, whose task has not run yet
        assert!(lock.locked(), "handed over, not free");
        assert!(lock.try_acquire().is_none(), "try_acquire cannot barge");
        assert!(at_once(lock.acquire()).await.is_none(), "neither can acquire");
        let newcomer = lock_user(&lock, &log, "N", None);
        a.await.unwrap();
        newcomer.await.unwrap();
        assert_eq!(entries(&log), ["A", "A-done", "N", "N-done"]);
    });
}

/// CPython `LockTests.test_acquire_cancel`: an acquire cancelled while queued does not take the
/// lock and leaves the queue.
#[test]
fn lock_acquire_dropped_by_timeout_does_not_take_the_lock() {
    run_bounded(&virtual_loop(), async {
        let lock = Lock::new();
        let held = lock.acquire().await.unwrap();
        assert!(timeout(Duration::from_millis(10), lock.acquire()).await.is_err());
        assert_eq!(lock.waiters(), 0);
        drop(held);
        assert!(!lock.locked(), "nobody was handed the lock");
        assert!(lock.try_acquire().is_some());
    });
}

/// CPython `LockTests.test_cancel_race`: A holds the lock, B and C are queued; B is cancelled and
/// A releases in the same tick. C must get the lock (B's wakeup must not be lost with B).
#[test]
fn lock_cancel_race_the_waiter_after_a_cancelled_one_gets_the_lock() {
    run_bounded(&virtual_loop(), async {
        let lock = Rc::new(Lock::new());
        let log = log();
        let a_hold = gate();
        let a = lock_user(&lock, &log, "A", Some(a_hold.clone()));
        let b = lock_user(&lock, &log, "B", None);
        let c = lock_user(&lock, &log, "C", None);
        tick().await;
        assert_eq!(entries(&log), ["A"]);
        assert_eq!(lock.waiters(), 2);
        open(&a_hold); // A releases first (handing the lock to B)...
        b.cancel(); // ...and B's cancellation is processed after that
        a.await.unwrap();
        c.await.unwrap();
        assert!(b.cancelled());
        assert_eq!(entries(&log), ["A", "A-done", "C", "C-done"]);
        assert!(!lock.locked());
    });
}

/// CPython `LockTests.test_cancel_release_race` (bpo-32734, "2 locks are taken at once"): the
/// lock is released to t1 and t1 is cancelled in the same tick; exactly one of the others (t2,
/// the next in line) gets it, t3 keeps waiting.
#[test]
fn lock_cancel_release_race_hands_the_lock_to_one_waiter_only() {
    run_bounded(&virtual_loop(), async {
        let lock = Rc::new(Lock::new());
        let log = log();
        let held = lock.acquire().await.unwrap();
        let hold2 = gate();
        let t1 = lock_user(&lock, &log, "t1", None);
        let t2 = lock_user(&lock, &log, "t2", Some(hold2.clone()));
        let t3 = lock_user(&lock, &log, "t3", None);
        tick().await;
        drop(held); // t1 is handed the lock...
        t1.cancel(); // ...and cancelled before it runs
        settle(2).await;
        assert!(t1.cancelled());
        assert_eq!(entries(&log), ["t2"], "t1's lock went to t2 and nobody else");
        assert!(lock.locked());
        assert!(!t3.done());
        assert_eq!(lock.waiters(), 1);
        open(&hold2);
        t2.await.unwrap();
        t3.await.unwrap();
        assert_eq!(entries(&log), ["t2", "t2-done", "t3", "t3-done"]);
    });
}

/// CPython `LockTests.test_finished_waiter_cancelled`: tb waits; tc is created; tb is
/// cancelled and the lock released to it in the same tick. tb's drop hands the lock on to tc,
/// which arrived behind it.
#[test]
fn lock_finished_waiter_cancelled_passes_the_lock_on() {
    run_bounded(&virtual_loop(), async {
        let lock = Rc::new(Lock::new());
        let log = log();
        let held = lock.acquire().await.unwrap();
        let tb = lock_user(&lock, &log, "tb", None);
        tick().await;
        assert_eq!(lock.waiters(), 1);
        let tc = lock_user(&lock, &log, "tc", None);
        tb.cancel();
        drop(held); // handed to tb, whose cancellation is pending
        tick().await;
        assert!(lock.locked(), "passed on to tc, not dropped");
        assert!(tb.cancelled());
        tc.await.unwrap();
        assert_eq!(entries(&log), ["tc", "tc-done"]);
        assert!(!lock.locked());
    });
}

/// A lock's waiter in the middle of the queue is cancelled; the queue keeps its order.
#[test]
fn lock_waiter_cancelled_in_the_middle_keeps_the_fifo_order() {
    run_bounded(&virtual_loop(), async {
        let lock = Rc::new(Lock::new());
        let log = log();
        let held = lock.acquire().await.unwrap();
        let tasks: Vec<Task<()>> = ["A", "B", "C", "D"]
            .into_iter()
            .map(|n| lock_user(&lock, &log, n, None))
            .collect();
        tick().await;
        tasks[1].cancel();
        tick().await;
        assert_eq!(lock.waiters(), 3);
        drop(held);
        for (i, t) in tasks.into_iter().enumerate() {
            assert_eq!(t.await.is_ok(), i != 1);
        }
        assert_eq!(entries(&log), ["A", "A-done", "C", "C-done", "D", "D-done"]);
    });
}

#[test]
fn lock_waiter_is_noted_in_the_task_dump() {
    run_bounded(&virtual_loop(), async {
        let lock = Rc::new(Lock::new());
        let held = lock.acquire().await.unwrap();
        let l = lock.clone();
        let t = spawn(async move {
            let _g = l.acquire().await.unwrap();
        });
        tick().await;
        assert_eq!(t.awaiting().to_string(), "Lock.acquire()");
        let dump = get_running_loop().unwrap().dump_tasks();
        assert!(dump.contains("awaiting Lock.acquire()"), "{dump}");
        drop(held);
        t.await.unwrap();
    });
}

#[test]
fn lock_named_futures_can_be_stored_and_polled_later() {
    run_bounded(&virtual_loop(), async {
        let lock = Lock::new();
        let held = lock.acquire().await.unwrap();
        let pending: LockAcquire<'_> = lock.acquire();
        let mut pending = Box::pin(pending);
        assert!(at_once(pending.as_mut()).await.is_none());
        assert_eq!(lock.waiters(), 1, "the first poll queued it");
        drop(held);
        let _g = pending.await;
        assert!(lock.locked());
    });
}

// ---------------------------------------------------------------------------------------------
// Mutex.

#[test]
fn mutex_guard_gives_access_and_unlocks_on_drop() {
    run_bounded(&virtual_loop(), async {
        let m = Mutex::new(vec![1]);
        {
            let mut g = m.lock().await;
            g.push(2);
            assert!(m.locked());
            assert!(m.try_lock().is_err());
            assert_eq!(*g, [1, 2]);
        }
        assert!(!m.locked());
        assert_eq!(*m.try_lock().unwrap(), [1, 2]);
        assert_eq!(format!("{m:?}"), "Mutex { data: [1, 2] }");
        let _g = m.lock().await;
        assert_eq!(format!("{m:?}"), "Mutex { data: <locked> }");
    });
}

#[test]
fn mutex_into_inner_and_get_mut_need_no_lock() {
    let mut m = Mutex::new(String::from("a"));
    m.get_mut().push('b');
    assert_eq!(m.into_inner(), "ab");
    let d: Mutex<u8> = Mutex::default();
    assert_eq!(d.into_inner(), 0);
}

#[test]
fn mutex_waiters_change_the_value_in_arrival_order() {
    run_bounded(&virtual_loop(), async {
        let m = Rc::new(Mutex::new(Vec::<&str>::new()));
        let held = m.lock().await;
        let tasks: Vec<Task<()>> = ["A", "B", "C"]
            .into_iter()
            .map(|n| {
                let m = m.clone();
                spawn(async move {
                    let mut g = m.lock().await;
                    g.push(n);
                    yield_now().await; // hold it across a suspension
                    g.push(n);
                })
            })
            .collect();
        tick().await;
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*m.lock().await, ["A", "A", "B", "B", "C", "C"]);
    });
}

#[test]
fn mutex_lock_dropped_while_queued_loses_nothing() {
    run_bounded(&virtual_loop(), async {
        let m = Rc::new(Mutex::new(0));
        let held = m.lock().await;
        assert!(timeout(Duration::from_millis(1), m.lock()).await.is_err());
        let m2 = m.clone();
        let t = spawn(async move { *m2.lock().await += 1 });
        tick().await;
        drop(held);
        t.await.unwrap();
        assert_eq!(*m.try_lock().expect("free again"), 1);
    });
}

// ---------------------------------------------------------------------------------------------
// Semaphore.

#[test]
fn semaphore_permits_count_down_and_back_up() {
    let sem = Semaphore::new(2);
    assert_eq!(sem.available_permits(), 2);
    let p1 = sem.try_acquire().unwrap();
    let p2 = sem.try_acquire().unwrap();
    assert_eq!(sem.available_permits(), 0);
    assert!(sem.locked());
    assert!(sem.try_acquire().is_err());
    drop(p1);
    assert_eq!(sem.available_permits(), 1);
    assert!(!sem.locked());
    drop(p2);
    assert_eq!(sem.available_permits(), 2);
    let p = sem.try_acquire().unwrap();
    let q = sem.try_acquire().unwrap();
    assert!(sem.try_acquire().is_err());
    assert!(sem.try_acquire().is_err());
    drop((p, q));
    assert_eq!(sem.available_permits(), 2, "failed try_acquires invent no permits");
    let zero = Semaphore::new(0);
    assert!(zero.locked());
    assert!(zero.try_acquire().is_err());
}

/// CPython `SemaphoreTests.test_acquire`: with 3 permits, three tasks get one at once and a
/// fourth waits until one is released; waiters are served in order.
#[test]
fn semaphore_waiters_are_served_in_arrival_order() {
    run_bounded(&virtual_loop(), async {
        let sem = Rc::new(Semaphore::new(3));
        let log = log();
        let tasks: Vec<Task<()>> = ["A", "B", "C", "D", "E", "F"]
            .into_iter()
            .map(|n| sem_taker(&sem, &log, n))
            .collect();
        tick().await;
        assert_eq!(entries(&log), ["A", "B", "C"]);
        assert_eq!(sem.waiters(), 3);
        sem.release();
        tick().await;
        assert_eq!(entries(&log), ["A", "B", "C", "D"]);
        sem.add_permits(2);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(entries(&log), ["A", "B", "C", "D", "E", "F"]);
        assert_eq!(sem.available_permits(), 0);
    });
}

#[test]
fn semaphore_add_permits_wakes_that_many_waiters_in_order() {
    run_bounded(&virtual_loop(), async {
        let sem = Rc::new(Semaphore::new(0));
        let log = log();
        let tasks: Vec<Task<()>> = ["A", "B", "C", "D"]
            .into_iter()
            .map(|n| sem_taker(&sem, &log, n))
            .collect();
        tick().await;
        sem.add_permits(2);
        assert_eq!(sem.available_permits(), 0, "both went straight to waiters");
        assert_eq!(sem.waiters(), 2);
        tick().await;
        assert_eq!(entries(&log), ["A", "B"]);
        sem.add_permits(5);
        assert_eq!(sem.available_permits(), 3);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(entries(&log), ["A", "B", "C", "D"]);
    });
}

#[test]
fn semaphore_forgotten_permit_comes_back_with_add_permits() {
    run_bounded(&virtual_loop(), async {
        let sem = Semaphore::new(1);
        sem.acquire().await.unwrap().forget();
        assert_eq!(sem.available_permits(), 0);
        assert!(sem.try_acquire().is_err());
        sem.add_permits(1);
        assert_eq!(sem.available_permits(), 1);
        let p = sem.acquire().await.unwrap();
        drop(p);
        assert_eq!(sem.available_permits(), 1);
        sem.add_permits(0);
        assert_eq!(sem.available_permits(), 1);
    });
}

/// CPython `SemaphoreTests.test_acquire_fifo_order`: one permit, three tasks that each hold it
/// across a sleep: they run one after the other, in order.
#[test]
fn semaphore_fifo_order_with_holders_that_sleep() {
    run_bounded(&virtual_loop(), async {
        let sem = Rc::new(Semaphore::new(1));
        let log = log();
        let tasks: Vec<Task<()>> = ["c1", "c2", "c3"]
            .into_iter()
            .map(|tag| {
                let (sem, log) = (sem.clone(), log.clone());
                spawn(async move {
                    let _p = sem.acquire().await.unwrap();
                    push(&log, format!("{tag}_1"));
                    sleep(Duration::from_millis(10)).await;
                    push(&log, format!("{tag}_2"));
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(entries(&log), ["c1_1", "c1_2", "c2_1", "c2_2", "c3_1", "c3_2"]);
    });
}

/// CPython `SemaphoreTests.test_acquire_fifo_order_2`: a task that releases and re-acquires
/// while another waiter has been woken but has not run yet queues behind it (no barging).
#[test]
fn semaphore_reacquire_does_not_barge_ahead_of_a_woken_waiter() {
    run_bounded(&virtual_loop(), async {
        let sem = Rc::new(Semaphore::new(1));
        let log = log();
        let (s, l) = (sem.clone(), log.clone());
        let t1 = spawn(async move {
            s.acquire().await.unwrap().forget();
            push(&l, "1");
        });
        let (s, l) = (sem.clone(), log.clone());
        let t2 = spawn(async move {
            s.acquire().await.unwrap().forget();
            push(&l, "2");
            s.release();
            s.acquire().await.unwrap().forget();
            push(&l, "4");
        });
        let t3 = sem_taker(&sem, &log, "3");
        tick().await;
        sem.release();
        sem.release();
        t1.await.unwrap();
        t2.await.unwrap();
        t3.await.unwrap();
        assert_eq!(entries(&log), ["1", "2", "3", "4"]);
    });
}

/// CPython `SemaphoreTests.test_acquire_fifo_order_3`: a cancelled waiter at the head of the
/// queue is skipped; the releases go to the next ones.
#[test]
fn semaphore_cancelled_head_waiter_is_skipped() {
    run_bounded(&virtual_loop(), async {
        let sem = Rc::new(Semaphore::new(0));
        let log = log();
        let t1 = sem_taker(&sem, &log, "1");
        let t2 = sem_taker(&sem, &log, "2");
        let t3 = sem_taker(&sem, &log, "3");
        tick().await;
        t1.cancel();
        tick().await;
        sem.release();
        sem.release();
        t2.await.unwrap();
        t3.await.unwrap();
        assert!(t1.cancelled());
        assert_eq!(entries(&log), ["2", "3"]);
    });
}

/// CPython `SemaphoreTests.test_acquire_fifo_order_4`: releases that find the head waiter woken
/// but not yet run leave the permits available; later arrivals queue behind it and are served
/// in order, each only after the one before it.
#[test]
fn semaphore_woken_head_waiter_keeps_its_place_before_later_arrivals() {
    run_bounded(&virtual_loop(), async {
        let sem = Rc::new(Semaphore::new(0));
        let log = log();
        let t4: Rc<RefCell<Option<Task<()>>>> = Rc::default();
        let (s, l, t4s) = (sem.clone(), log.clone(), t4.clone());
        let t1 = spawn(async move {
            s.acquire().await.unwrap().forget();
            // Started now, it must run after t3 (already served) and not before.
            let l4 = l.clone();
            *t4s.borrow_mut() = Some(spawn(async move { push(&l4, "4") }));
            push(&l, "1");
        });
        let (s, l) = (sem.clone(), log.clone());
        let t2 = spawn(async move {
            s.release();
            s.release();
            s.release();
            assert_eq!(s.available_permits(), 2, "one went to t1, which has not run yet");
            assert!(s.locked(), "t1 is queued: nobody may take a permit at once");
            s.acquire().await.unwrap().forget();
            push(&l, "2");
        });
        let t3 = sem_taker(&sem, &log, "3");
        tick().await;
        t1.await.unwrap();
        t2.await.unwrap();
        t3.await.unwrap();
        let t4 = t4.borrow_mut().take().unwrap();
        t4.await.unwrap();
        assert_eq!(entries(&log), ["1", "2", "3", "4"]);
        assert_eq!(sem.available_permits(), 0);
    });
}

/// CPython `SemaphoreTests.test_acquire_cancel`: an acquire cancelled while queued takes no
/// permit.
#[test]
fn semaphore_acquire_dropped_by_timeout_keeps_the_permits() {
    run_bounded(&virtual_loop(), async {
        let sem = Semaphore::new(1);
        let p = sem.acquire().await.unwrap();
        assert!(timeout(Duration::from_millis(10), sem.acquire()).await.is_err());
        assert_eq!(sem.waiters(), 0);
        drop(p);
        assert_eq!(sem.available_permits(), 1);
        let mut stored: SemaphoreAcquire<'_> = sem.acquire();
        let _p = (&mut stored).await;
        assert_eq!(sem.available_permits(), 0);
    });
}

/// CPython `SemaphoreTests.test_acquire_cancel_before_awoken`: t1 and t2 are cancelled, then a
/// permit is released in the same tick. The permit travels past the two cancelled waiters to t3;
/// t4 keeps waiting.
#[test]
fn semaphore_waiters_cancelled_before_awoken_pass_the_permit_on() {
    run_bounded(&virtual_loop(), async {
        let sem = Rc::new(Semaphore::new(0));
        let log = log();
        let ts: Vec<Task<()>> = ["t1", "t2", "t3", "t4"]
            .into_iter()
            .map(|n| sem_taker(&sem, &log, n))
            .collect();
        tick().await;
        ts[0].cancel();
        ts[1].cancel();
        sem.release();
        settle(2).await;
        assert!(ts[2].done());
        assert!(!ts[3].done());
        assert_eq!(entries(&log), ["t3"]);
        assert_eq!(sem.available_permits(), 0);
        assert_eq!(sem.waiters(), 1);
        ts[3].cancel();
        tick().await;
        assert_eq!(sem.waiters(), 0);
        assert_eq!(sem.available_permits(), 0, "no permit was invented or lost");
    });
}

/// CPython `SemaphoreTests.test_acquire_hang` (gh-90155): t1 is cancelled, a permit is
/// released in the same tick, and t2 must not hang.
#[test]
fn semaphore_cancel_with_release_race_does_not_hang_the_next_waiter() {
    run_bounded(&virtual_loop(), async {
        let sem = Rc::new(Semaphore::new(0));
        let log = log();
        let t1 = sem_taker(&sem, &log, "t1");
        let t2 = sem_taker(&sem, &log, "t2");
        tick().await;
        t1.cancel();
        sem.release();
        settle(2).await;
        assert!(sem.locked());
        assert!(t2.done());
        assert!(t1.cancelled());
        assert_eq!(entries(&log), ["t2"]);
    });
}

/// CPython `SemaphoreTests.test_acquire_no_hang`: the holder cancels the task queued behind it
/// while holding the permit; afterwards the semaphore is free again.
#[test]
fn semaphore_holder_cancelling_the_next_waiter_does_not_hang() {
    run_bounded(&virtual_loop(), async {
        let sem = Rc::new(Semaphore::new(1));
        let victim: Rc<RefCell<Option<Task<()>>>> = Rc::default();
        let (s, v) = (sem.clone(), victim.clone());
        let t1 = spawn(async move {
            let _p = s.acquire().await.unwrap();
            yield_now().await;
            v.borrow().as_ref().unwrap().cancel();
        });
        let s = sem.clone();
        *victim.borrow_mut() = Some(spawn(async move {
            let _p = s.acquire().await.unwrap();
            unreachable!("t2 is cancelled while it waits");
        }));
        t1.await.unwrap();
        let t2 = victim.borrow_mut().take().unwrap();
        assert!(matches!(t2.await, Err(TaskError::Cancelled { .. })));
        assert!(timeout(Duration::from_secs(1), sem.acquire()).await.is_ok());
        assert_eq!(sem.available_permits(), 1);
    });
}

// ---------------------------------------------------------------------------------------------
// BoundedSemaphore.

/// CPython `SemaphoreTests.test_release_not_acquired`: releasing a bounded semaphore beyond its
/// initial value is an error (asyncio's `ValueError`), not a panic, and changes nothing.
#[test]
fn bounded_semaphore_release_beyond_its_initial_value_is_an_error() {
    let sem = BoundedSemaphore::new(2);
    let err = sem.release().unwrap_err();
    assert_eq!(err, SyncError::OverReleased { bound: 2 });
    let msg = err.to_string();
    assert!(msg.contains("BoundedSemaphore.release"), "{msg}");
    assert!(msg.contains("2 permits"), "{msg}");
    assert_eq!(sem.available_permits(), 2);
    let io: std::io::Error = err.into();
    assert_eq!(io.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn bounded_semaphore_gives_back_forgotten_permits_only() {
    run_bounded(&virtual_loop(), async {
        let sem = BoundedSemaphore::new(1);
        assert_eq!(sem.bound(), 1);
        let held = sem.acquire().await.unwrap();
        assert!(
            sem.release().is_err(),
            "a permit held by a guard is not the caller's to release"
        );
        drop(held);
        assert_eq!(sem.available_permits(), 1);
        sem.acquire().await.unwrap().forget();
        assert_eq!(sem.available_permits(), 0);
        sem.release().unwrap();
        assert_eq!(sem.available_permits(), 1);
        assert!(sem.release().is_err());
        assert_eq!(sem.available_permits(), 1, "never beyond the bound");
    });
}

#[test]
fn bounded_semaphore_release_hands_the_permit_to_the_first_waiter() {
    run_bounded(&virtual_loop(), async {
        let sem = Rc::new(BoundedSemaphore::new(1));
        let log = log();
        sem.acquire().await.unwrap().forget();
        let tasks: Vec<Task<()>> = ["A", "B"]
            .into_iter()
            .map(|n| {
                let (sem, log) = (sem.clone(), log.clone());
                spawn(async move {
                    let _p = sem.acquire().await.unwrap();
                    push(&log, n);
                })
            })
            .collect();
        tick().await;
        assert_eq!(sem.waiters(), 2);
        sem.release().unwrap();
        assert_eq!(sem.available_permits(), 0, "handed to A");
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(entries(&log), ["A", "B"]);
        assert_eq!(sem.available_permits(), 1);
    });
}

// ---------------------------------------------------------------------------------------------
// Condition.

/// Spawns a task that waits on `cond` once (holding its lock around the wait) and logs `name`
/// with the lock held after the wait.
fn cond_waiter(cond: &Rc<Condition>, log: &Log, name: &'static str) -> Task<()> {
    let (cond, log) = (cond.clone(), log.clone());
    spawn(async move {
        let g = cond.acquire().await.unwrap();
        let g = cond.wait(g).await.unwrap();
        assert!(cond.locked());
        push(&log, name);
        drop(g);
    })
}

#[test]
fn condition_wait_releases_the_lock_and_reacquires_it() {
    run_bounded(&virtual_loop(), async {
        let cond = Rc::new(Condition::new());
        let log = log();
        let t = cond_waiter(&cond, &log, "woken");
        tick().await;
        assert!(!cond.locked(), "the waiter released the lock while it waits");
        assert_eq!(cond.waiters(), 1);
        let g = cond.acquire().await.unwrap();
        assert_eq!(cond.notify(1), 1);
        settle(3).await;
        assert!(entries(&log).is_empty(), "notified, but the lock is still ours");
        drop(g);
        t.await.unwrap();
        assert_eq!(entries(&log), ["woken"]);
        assert!(!cond.locked());
    });
}

/// CPython `ConditionTests.test_notify`: notify(1) wakes the longest waiter; notify(n) the next
/// n.
#[test]
fn condition_notify_one_wakes_the_waiters_in_fifo_order() {
    run_bounded(&virtual_loop(), async {
        let cond = Rc::new(Condition::new());
        let log = log();
        let tasks: Vec<Task<()>> = ["A", "B", "C"]
            .into_iter()
            .map(|n| cond_waiter(&cond, &log, n))
            .collect();
        tick().await;
        assert_eq!(cond.waiters(), 3);
        assert_eq!(cond.notify(1), 1);
        settle(2).await;
        assert_eq!(entries(&log), ["A"]);
        assert_eq!(cond.notify(1), 1);
        settle(2).await;
        assert_eq!(entries(&log), ["A", "B"]);
        assert_eq!(cond.notify(2048), 1, "only C was left");
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(entries(&log), ["A", "B", "C"]);
        assert_eq!(cond.notify(1), 0);
    });
}

/// CPython `ConditionTests.test_notify_all`.
#[test]
fn condition_notify_all_wakes_every_waiter() {
    run_bounded(&virtual_loop(), async {
        let cond = Rc::new(Condition::new());
        let log = log();
        let tasks: Vec<Task<()>> = ["A", "B", "C"]
            .into_iter()
            .map(|n| cond_waiter(&cond, &log, n))
            .collect();
        tick().await;
        assert_eq!(cond.notify_all(), 3);
        assert_eq!(cond.notify_all(), 0, "already notified waiters are not counted twice");
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(entries(&log), ["A", "B", "C"]);
    });
}

/// CPython `ConditionTests.test_wait_for`: the predicate is checked under the lock, the waiter
/// waits through notifications until it holds.
#[test]
fn condition_wait_for_waits_until_the_predicate_holds() {
    run_bounded(&virtual_loop(), async {
        let cond = Rc::new(Condition::new());
        let presult = Rc::new(Cell::new(false));
        let checks = Rc::new(Cell::new(0));
        let (c, p, n) = (cond.clone(), presult.clone(), checks.clone());
        let t = spawn(async move {
            let g = c.acquire().await.unwrap();
            let g = c
                .wait_for(g, || {
                    assert!(c.locked());
                    n.set(n.get() + 1);
                    p.get()
                })
                .await
                .unwrap();
            drop(g);
        });
        tick().await;
        assert_eq!(checks.get(), 1);
        cond.notify(1);
        settle(2).await;
        assert_eq!(checks.get(), 2);
        assert!(!t.done(), "the predicate was still false");
        presult.set(true);
        cond.notify(1);
        t.await.unwrap();
        assert_eq!(checks.get(), 3);
        // A predicate that already holds does not wait at all.
        let g = cond.acquire().await.unwrap();
        assert!(at_once(cond.wait_for(g, || true)).await.is_some());
    });
}

/// CPython `ConditionTests.test_wait_unacquired` / `test_explicit_lock`'s mismatch case: the
/// guard must be the condition's lock's.
#[test]
fn condition_wait_with_another_locks_guard_is_an_error() {
    run_bounded(&virtual_loop(), async {
        let cond = Condition::new();
        let other = Lock::new();
        let g = other.acquire().await.unwrap();
        let err = cond.wait(g).await.unwrap_err();
        assert_eq!(err, SyncError::ForeignLockGuard);
        assert!(err.to_string().contains("Condition.wait"), "{err}");
        assert!(!other.locked(), "the foreign guard was dropped");
        let g = other.acquire().await.unwrap();
        assert!(cond.wait_for(g, || true).await.is_err());
        assert_eq!(cond.waiters(), 0);
    });
}

/// CPython `ConditionTests.test_explicit_lock`: two conditions over one lock.
#[test]
fn condition_two_conditions_can_share_one_lock() {
    run_bounded(&virtual_loop(), async {
        let lock = Rc::new(Lock::new());
        let c1 = Rc::new(Condition::with_lock(lock.clone()));
        let c2 = Rc::new(Condition::with_lock(lock.clone()));
        assert!(Rc::ptr_eq(c1.lock(), c2.lock()));
        let g = c1.acquire().await.unwrap();
        assert!(c2.locked());
        assert!(lock.locked());
        drop(g);
        let log = log();
        let t = cond_waiter(&c2, &log, "c2");
        tick().await;
        assert_eq!(c1.notify(1), 0, "c1 has no waiters");
        assert_eq!(c2.notify(1), 1);
        t.await.unwrap();
        assert!(!lock.locked());
    });
}

/// CPython `ConditionTests.test_wait_cancel`: a waiter cancelled before any notification
/// leaves the queue; the lock is free.
#[test]
fn condition_waiter_cancelled_before_notify_leaves_the_queue() {
    run_bounded(&virtual_loop(), async {
        let cond = Rc::new(Condition::new());
        let log = log();
        let t = cond_waiter(&cond, &log, "never");
        tick().await;
        t.cancel();
        tick().await;
        assert_eq!(cond.waiters(), 0);
        assert_eq!(cond.notify(1), 0);
        assert!(!cond.locked());
        assert!(t.await.is_err());
    });
}

/// CPython `ConditionTests.test_timeout_in_block`: `wait` under a timeout; after it expires
/// the lock is not held (the guard went with the dropped future) and the queue is empty.
#[test]
fn condition_wait_timeout_leaves_the_lock_free_and_the_queue_empty() {
    run_bounded(&virtual_loop(), async {
        let cond = Condition::new();
        let g = cond.acquire().await.unwrap();
        assert!(timeout(Duration::from_millis(500), cond.wait(g)).await.is_err());
        assert!(!cond.locked());
        assert_eq!(cond.waiters(), 0);
        assert!(cond.try_acquire().is_some());
    });
}

/// CPython `ConditionTests.test_cancelled_wakeup` (gh-112202, "notify after cancel"): A and B
/// wait; A is notified and cancelled in the same tick. The notification must reach B.
#[test]
fn condition_notify_then_cancel_in_the_same_tick_wakes_the_next_waiter() {
    run_bounded(&virtual_loop(), async {
        let cond = Rc::new(Condition::new());
        let log = log();
        let a = cond_waiter(&cond, &log, "A");
        let b = cond_waiter(&cond, &log, "B");
        tick().await;
        assert_eq!(cond.notify(1), 1);
        a.cancel();
        b.await.unwrap();
        assert!(a.await.is_err());
        assert_eq!(entries(&log), ["B"]);
        assert!(!cond.locked());
        assert_eq!(cond.waiters(), 0);
    });
}

/// CPython `ConditionTests.test_cancelled_wakeup_relock` / `test_wait_cancel_contested`: A is
/// notified while the notifier still holds the lock, so A waits to re-acquire it; A is
/// cancelled there. The notification is passed on to B, and the lock ends free.
#[test]
fn condition_waiter_cancelled_while_reacquiring_passes_the_notification_on() {
    run_bounded(&virtual_loop(), async {
        let cond = Rc::new(Condition::new());
        let log = log();
        let a = cond_waiter(&cond, &log, "A");
        let b = cond_waiter(&cond, &log, "B");
        tick().await;
        let g = cond.acquire().await.unwrap();
        assert_eq!(cond.notify(1), 1);
        settle(2).await;
        assert_eq!(a.awaiting().to_string(), "Condition.wait(): re-acquiring the lock");
        assert_eq!(cond.waiters(), 1, "B still waits for a notification");
        a.cancel();
        tick().await;
        assert_eq!(cond.waiters(), 0, "A's notification went to B");
        drop(g);
        b.await.unwrap();
        assert!(a.await.is_err());
        assert_eq!(entries(&log), ["B"]);
        assert!(!cond.locked());
    });
}

/// CPython `ConditionTests.test_wait_cancel_after_notify` (bpo-32841): the waiter is notified,
/// then cancelled before it wakes; the lock must not be left locked.
#[test]
fn condition_cancel_after_notify_does_not_leave_the_lock_locked() {
    run_bounded(&virtual_loop(), async {
        let cond = Rc::new(Condition::new());
        let log = log();
        let waiter = cond_waiter(&cond, &log, "never");
        tick().await;
        {
            let _g = cond.acquire().await.unwrap();
            assert_eq!(cond.notify(1), 1);
            waiter.cancel();
        }
        settle(2).await;
        assert!(waiter.cancelled());
        assert!(!cond.locked());
        assert_eq!(cond.waiters(), 0);
        assert!(entries(&log).is_empty());
        assert!(cond.try_acquire().is_some());
    });
}

// ---------------------------------------------------------------------------------------------
// Barrier.

fn barrier_waiter(
    barrier: &Rc<Barrier>,
    log: &Log<(&'static str, Result<usize, SyncError>)>,
    name: &'static str,
) -> Task<()> {
    let (barrier, log) = (barrier.clone(), log.clone());
    spawn(async move {
        let r = barrier.wait().await;
        log.borrow_mut().push((name, r));
    })
}

/// The barrier log sorted by task name (the party that trips the barrier returns in its own
/// step, before the parties it woke).
fn by_name(log: &Log<(&'static str, Result<usize, SyncError>)>) -> Vec<(&'static str, Result<usize, SyncError>)> {
    let mut v = entries(log);
    v.sort_by_key(|(name, _)| *name);
    v
}

/// CPython `BarrierTests.test_barrier`: every party gets a distinct arrival index, the last
/// arrival trips the barrier.
#[test]
fn barrier_wait_returns_each_arrival_index_once() {
    run_bounded(&virtual_loop(), async {
        let barrier = Rc::new(Barrier::new(3));
        let log = log();
        let a = barrier_waiter(&barrier, &log, "A");
        let b = barrier_waiter(&barrier, &log, "B");
        tick().await;
        assert_eq!(barrier.n_waiting(), 2);
        assert!(entries(&log).is_empty());
        assert_eq!(
            at_once(barrier.wait()).await,
            Some(Ok(2)),
            "the last party does not wait"
        );
        assert_eq!(barrier.n_waiting(), 0, "the next round starts empty");
        a.await.unwrap();
        b.await.unwrap();
        assert_eq!(entries(&log), [("A", Ok(0)), ("B", Ok(1))]);
    });
}

#[test]
fn barrier_parties_and_n_waiting() {
    run_bounded(&virtual_loop(), async {
        let barrier = Rc::new(Barrier::new(2));
        assert_eq!(barrier.parties(), 2);
        assert_eq!(barrier.n_waiting(), 0);
        assert!(!barrier.broken());
        let log = log();
        let a = barrier_waiter(&barrier, &log, "A");
        tick().await;
        assert_eq!(barrier.n_waiting(), 1);
        let mut w: BarrierWait<'_> = barrier.wait();
        assert_eq!((&mut w).await, Ok(1));
        a.await.unwrap();
        assert_eq!(
            format!("{barrier:?}"),
            "Barrier { parties: 2, n_waiting: 0, broken: false }"
        );
    });
}

/// CPython `BarrierTests.test_wait_more_times_than_parties` / the cyclic barrier: each round
/// trips separately and numbers its arrivals from 0.
#[test]
fn barrier_trips_once_per_round_and_is_reusable() {
    run_bounded(&virtual_loop(), async {
        let barrier = Rc::new(Barrier::new(2));
        let log = log();
        let tasks: Vec<Task<()>> = ["A", "B", "C", "D", "E", "F"]
            .into_iter()
            .map(|n| barrier_waiter(&barrier, &log, n))
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(
            by_name(&log),
            [
                ("A", Ok(0)),
                ("B", Ok(1)),
                ("C", Ok(0)),
                ("D", Ok(1)),
                ("E", Ok(0)),
                ("F", Ok(1))
            ]
        );
        assert_eq!(barrier.n_waiting(), 0);
    });
}

/// CPython `BarrierTests.test_abort_barrier` and `test_wait_on_broken_barrier`: aborting fails
/// the waiters with a broken-barrier error, and every later wait fails at once.
#[test]
fn barrier_abort_breaks_the_waiters_and_every_later_wait() {
    run_bounded(&virtual_loop(), async {
        let barrier = Rc::new(Barrier::new(3));
        let log = log();
        let a = barrier_waiter(&barrier, &log, "A");
        let b = barrier_waiter(&barrier, &log, "B");
        tick().await;
        barrier.abort();
        assert!(barrier.broken());
        assert_eq!(barrier.n_waiting(), 0);
        a.await.unwrap();
        b.await.unwrap();
        let broken = Err(SyncError::BrokenBarrier { parties: 3 });
        assert_eq!(by_name(&log), [("A", broken.clone()), ("B", broken)]);
        let err = at_once(barrier.wait())
            .await
            .expect("no wait on a broken barrier")
            .unwrap_err();
        assert!(err.to_string().contains("Barrier.wait"), "{err}");
        assert!(err.to_string().contains("broken"), "{err}");
    });
}

/// CPython `BarrierTests.test_reset_barrier` / `test_reset_barrier_while_tasks_waiting`: reset
/// breaks the current waiters only; the barrier then works for a full new round.
#[test]
fn barrier_reset_breaks_the_current_waiters_and_starts_afresh() {
    run_bounded(&virtual_loop(), async {
        let barrier = Rc::new(Barrier::new(2));
        let log = log();
        let a = barrier_waiter(&barrier, &log, "A");
        tick().await;
        barrier.reset();
        assert!(!barrier.broken());
        a.await.unwrap();
        let b = barrier_waiter(&barrier, &log, "B");
        let c = barrier_waiter(&barrier, &log, "C");
        b.await.unwrap();
        c.await.unwrap();
        assert_eq!(
            by_name(&log),
            [
                ("A", Err(SyncError::BrokenBarrier { parties: 2 })),
                ("B", Ok(0)),
                ("C", Ok(1))
            ]
        );
    });
}

/// CPython `BarrierTests.test_abort_and_reset_barrier`: an aborted barrier works again after
/// `reset()`.
#[test]
fn barrier_aborted_then_reset_works_again() {
    run_bounded(&virtual_loop(), async {
        let barrier = Rc::new(Barrier::new(2));
        barrier.abort();
        assert!(barrier.wait().await.is_err());
        barrier.reset();
        assert!(!barrier.broken());
        let log = log();
        let a = barrier_waiter(&barrier, &log, "A");
        tick().await;
        assert_eq!(barrier.wait().await, Ok(1));
        a.await.unwrap();
        assert_eq!(entries(&log), [("A", Ok(0))]);
    });
}

/// A waiter dropped (timed out, cancelled) before the barrier trips leaves the round: it no
/// longer counts, and the indexes stay `0..parties` without gaps.
#[test]
fn barrier_waiter_dropped_before_the_trip_leaves_the_round() {
    run_bounded(&virtual_loop(), async {
        let barrier = Rc::new(Barrier::new(3));
        let log = log();
        let a = barrier_waiter(&barrier, &log, "A");
        tick().await;
        assert!(timeout(Duration::from_millis(5), barrier.wait()).await.is_err());
        assert_eq!(barrier.n_waiting(), 1, "the timed-out wait left");
        let b = barrier_waiter(&barrier, &log, "B");
        tick().await;
        assert_eq!(barrier.n_waiting(), 2);
        a.cancel();
        tick().await;
        assert_eq!(barrier.n_waiting(), 1, "the cancelled A left");
        let c = barrier_waiter(&barrier, &log, "C");
        tick().await;
        assert_eq!(barrier.n_waiting(), 2);
        assert_eq!(barrier.wait().await, Ok(2));
        b.await.unwrap();
        c.await.unwrap();
        assert!(a.await.is_err());
        assert_eq!(entries(&log), [("B", Ok(0)), ("C", Ok(1))]);
    });
}

#[test]
fn barrier_of_one_or_zero_parties_never_waits() {
    run_bounded(&virtual_loop(), async {
        let one = Barrier::new(1);
        assert_eq!(at_once(one.wait()).await, Some(Ok(0)));
        let zero = Barrier::new(0);
        assert_eq!(zero.parties(), 1, "zero parties is taken as one");
        assert_eq!(at_once(zero.wait()).await, Some(Ok(0)));
    });
}

// ---------------------------------------------------------------------------------------------
// Futures stored by name, errors.

#[test]
fn event_wait_future_can_be_stored_and_dropped_unpolled() {
    run_bounded(&virtual_loop(), async {
        let ev = Event::new();
        let w: EventWait<'_> = ev.wait();
        drop(w);
        assert_eq!(ev.waiters(), 0, "an unpolled wait never queued");
        let mut w = Box::pin(ev.wait());
        assert!(at_once(w.as_mut()).await.is_none());
        assert_eq!(ev.waiters(), 1);
        ev.set();
        w.await.unwrap();
    });
}

#[test]
fn sync_errors_name_the_primitive_and_convert_to_io_errors() {
    let cases = [
        (SyncError::OverReleased { bound: 1 }, "BoundedSemaphore.release"),
        (SyncError::BrokenBarrier { parties: 4 }, "Barrier.wait"),
        (SyncError::ForeignLockGuard, "Condition.wait"),
    ];
    for (err, name) in cases {
        assert!(err.to_string().starts_with(name), "{err}");
        let io: std::io::Error = err.into();
        assert!(io.to_string().starts_with(name));
    }
    assert!(SyncError::OverReleased { bound: 1 }.to_string().contains("1 permit "));
}
