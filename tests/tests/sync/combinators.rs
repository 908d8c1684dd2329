//! Waiting on several things at once (`runtime/src/sync/combinator.rs`): `gather`, `try_gather`,
//! `wait` with `ReturnWhen`, `as_completed`, `select` and `race`.
//!
//! - `gather` over a `Vec` or a tuple of 2 to 6 futures of mixed types gives the outputs in input
//!   order, whatever order they finish in; with `Result` outputs every result comes back,
//!   errors included (asyncio's `return_exceptions=True`).
//! - `try_gather` fails fast: the first `Err` (in completion order) is returned at once; the
//!   futures still running are dropped (their destructors run), while tasks passed by handle are
//!   detached and keep running.
//! - `wait` returns `(done, pending)` for `FirstCompleted`, `FirstException` (a panic counts, a
//!   cancel does not) and `AllCompleted`, and with a timeout returns partial sets without
//!   cancelling anything.
//! - `as_completed` yields results in completion order, then `None`.
//! - `select` returns the first output and drops the loser; the first argument wins a tie.
//!   `race` is `select` for one output type.
//!
//! Plus ports of CPython's `test_asyncio/test_tasks.py` cases for gather, wait and as_completed
//! that make sense in this API (each says which one it ports).

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use evloop::{
    event_loop::EventLoop,
    spawn,
    task::{
        Either, ReturnWhen, Task, TaskError, TaskRef, TaskState, as_completed, current_task, gather, race, select,
        shield, try_gather, wait, yield_now,
    },
    time::{sleep, timeout},
};
use evloop_tests::{DropFlag, DropLog, Log, entries, log, push, record_exceptions_with, run_bounded, virtual_loop};

/// Sleeps `ms` milliseconds, logs `done <name>`, gives `value`.
async fn after<T>(ms: u64, name: &'static str, log: Log, value: T) -> T {
    sleep(Duration::from_millis(ms)).await;
    push(&log, format!("done {name}"));
    value
}

/// Sleeps 100 s with a guard alive (a future that only ever ends by being dropped).
async fn forever(name: &'static str, log: Log) {
    let _g = DropLog::new(name, &log);
    sleep(Duration::from_secs(100)).await;
    push(&log, format!("never: {name} finished"));
}

/// A boxed child of `try_gather` (children of different types in one `Vec`).
type BoxedChild = Pin<Box<dyn Future<Output = Result<u32, String>>>>;

/// A future that is ready at its first poll and counts its polls.
struct ReadyCounting(Rc<Cell<u32>>, u32);

impl Future for ReadyCounting {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u32> {
        self.0.set(self.0.get() + 1);
        Poll::Ready(self.1)
    }
}

/// Loop time of the running loop (virtual time on a virtual loop).
fn now() -> Instant {
    evloop::event_loop::get_running_loop().unwrap().time()
}

/// Waits (sleeping 1 ms at a time) until every task in `refs` has finished.
async fn until_all_done(refs: Vec<TaskRef>) {
    while !refs.iter().all(TaskRef::done) {
        sleep(Duration::from_millis(1)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// gather.

#[test]
fn gather_vec_gives_results_in_input_order_when_they_finish_in_reverse() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        let futs: Vec<_> = [("a", 8), ("b", 6), ("c", 4), ("d", 2)]
            .into_iter()
            .map(|(name, ms)| after(ms, name, l.clone(), name))
            .collect();
        gather(futs).await
    });
    assert_eq!(out, ["a", "b", "c", "d"], "input order");
    assert_eq!(entries(&log), ["done d", "done c", "done b", "done a"], "finish order");
}

#[test]
fn gather_tuples_of_two_to_six_mixed_types_in_input_order() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    run_bounded(&lp, async move {
        let l = &l;
        let two = gather((after(2, "2a", l.clone(), 1u8), after(1, "2b", l.clone(), "two"))).await;
        assert_eq!(two, (1u8, "two"));
        let three = gather((
            after(3, "3a", l.clone(), 'x'),
            after(2, "3b", l.clone(), 2.5f64),
            after(1, "3c", l.clone(), String::from("s")),
        ))
        .await;
        assert_eq!(three, ('x', 2.5, String::from("s")));
        let four = gather((
            after(4, "4a", l.clone(), vec![1, 2]),
            after(3, "4b", l.clone(), Some(3u16)),
            after(2, "4c", l.clone(), ()),
            after(1, "4d", l.clone(), -4i64),
        ))
        .await;
        assert_eq!(four, (vec![1, 2], Some(3u16), (), -4i64));
        let five = gather((
            after(5, "5a", l.clone(), true),
            after(4, "5b", l.clone(), 5u32),
            after(3, "5c", l.clone(), "five"),
            after(2, "5d", l.clone(), Ok::<u8, ()>(5)),
            after(1, "5e", l.clone(), [5u8; 2]),
        ))
        .await;
        assert_eq!(five, (true, 5u32, "five", Ok(5), [5, 5]));
        let six = gather((
            after(6, "6a", l.clone(), 'a'),
            after(5, "6b", l.clone(), 6u64),
            after(4, "6c", l.clone(), "six"),
            after(3, "6d", l.clone(), Err::<(), i32>(-6)),
            after(2, "6e", l.clone(), (6, 6)),
            after(1, "6f", l.clone(), 6.0f32),
        ))
        .await;
        assert_eq!(six, ('a', 6u64, "six", Err(-6), (6, 6), 6.0f32));
    });
    let done: Vec<String> = entries(&log);
    let expected: Vec<String> = [
        "2b", "2a", "3c", "3b", "3a", "4d", "4c", "4b", "4a", "5e", "5d", "5c", "5b", "5a", "6f", "6e", "6d", "6c",
        "6b", "6a",
    ]
    .iter()
    .map(|n| format!("done {n}"))
    .collect();
    assert_eq!(done, expected, "each tuple finished in reverse");
}

#[test]
fn gather_collects_all_results_errors_included() {
    // CPython test_tasks.py GatherTestsBase.test_return_exceptions: with return_exceptions=True
    // every outcome comes back. Here errors are values: a Vec of Results is that mode.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        gather(vec![
            after(1, "err early", l.clone(), Err::<u32, &str>("first failure")),
            after(3, "ok late", l.clone(), Ok(2)),
            after(2, "err middle", l.clone(), Err("second failure")),
            after(4, "ok last", l.clone(), Ok(4)),
        ])
        .await
    });
    assert_eq!(out, [Err("first failure"), Ok(2), Err("second failure"), Ok(4)]);
    assert_eq!(
        entries(&log).len(),
        4,
        "an error did not stop the others: every future ran to completion"
    );
}

#[test]
fn gather_of_an_empty_vec_is_ready_at_once() {
    // CPython test_tasks.py GatherTestsBase.test_constructor_empty_sequence.
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let (out, iterations) = run_bounded(&lp, async move {
        let before = h.stats().iterations;
        let out: Vec<u8> = gather(Vec::<std::future::Ready<u8>>::new()).await;
        (out, h.stats().iterations - before)
    });
    assert!(out.is_empty());
    assert_eq!(iterations, 0);
    let tried = run_bounded(&lp, async {
        try_gather(Vec::<std::future::Ready<Result<u8, ()>>>::new()).await
    });
    assert_eq!(tried, Ok(vec![]));
}

#[test]
fn gather_polls_the_futures_in_place_inside_the_awaiting_task() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let (me, seen, tasks) = run_bounded(&lp, async move {
        let me = current_task().unwrap().name();
        let probe = |ms| async move {
            sleep(Duration::from_millis(ms)).await;
            current_task().unwrap().name()
        };
        let h2 = h.clone();
        let count = async move {
            yield_now().await;
            h2.all_tasks().len()
        };
        let (a, b, n) = gather((probe(2), probe(1), count)).await;
        (me, vec![a, b], n)
    });
    assert_eq!(seen, [me.clone(), me], "the children run as the gathering task");
    assert_eq!(tasks, 1, "no task was created for them");
}

#[test]
fn gather_dropped_drops_every_child_future() {
    // CPython test_tasks.py test_cancel_gather_1: cancelling the gather cancels its children.
    // Here the children live inside the gather future, so cancelling the awaiting task drops them.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let t = lp
        .create_task(async move { gather(vec![forever("x", l.clone()), forever("y", l.clone())]).await })
        .unwrap();
    let r = t.task_ref();
    run_bounded(&lp, async move {
        yield_now().await;
        yield_now().await;
        r.cancel();
    });
    assert!(run_bounded(&lp, t).unwrap_err().is_cancelled());
    assert_eq!(entries(&log), ["drop x", "drop y"]);
}

#[test]
fn gather_of_task_handles_leaves_the_tasks_running_when_the_awaiter_is_cancelled() {
    let lp = virtual_loop();
    let log = log();
    let (l, l2) = (log.clone(), log.clone());
    let a = lp.create_task(after(5, "a", l, 1)).unwrap();
    let b = lp.create_task(after(5, "b", l2, 2)).unwrap();
    let refs = vec![a.task_ref(), b.task_ref()];
    let awaiter = lp.create_task(async move { gather(vec![a, b]).await }).unwrap();
    let ar = awaiter.task_ref();
    run_bounded(&lp, async move {
        yield_now().await;
        ar.cancel();
    });
    assert!(run_bounded(&lp, awaiter).unwrap_err().is_cancelled());
    run_bounded(&lp, until_all_done(refs.clone()));
    assert_eq!(entries(&log), ["done a", "done b"]);
    assert!(refs.iter().all(|r| r.state() == TaskState::Done));
}

#[test]
fn gather_of_shielded_tasks_gives_every_result() {
    // CPython test_tasks.py test_gather_shield.
    let lp = virtual_loop();
    let out = run_bounded(&lp, async {
        let a = spawn(async {
            sleep(Duration::from_millis(2)).await;
            "a"
        });
        let b = spawn(async { "b" });
        gather(vec![shield(a), shield(b)]).await
    });
    let values: Vec<&str> = out.into_iter().map(Result::unwrap).collect();
    assert_eq!(values, ["a", "b"]);
}

#[test]
fn gather_with_a_panicking_future_fails_the_awaiting_task_and_drops_the_others() {
    // The futures are polled inside the awaiting task, so a panic in one is a panic of that
    // task (asyncio would store the exception in the child task instead).
    let lp = virtual_loop();
    let reports = record_exceptions_with(&lp, |_, _| ());
    let log = log();
    let l = log.clone();
    let t = lp
        .create_task(async move {
            let boom = async {
                sleep(Duration::from_millis(1)).await;
                panic!("gathered panic");
            };
            let (_, _) = gather((boom, forever("sibling", l.clone()))).await;
        })
        .unwrap();
    let err = run_bounded(&lp, t).unwrap_err();
    assert_eq!(err.panic().unwrap().message(), "gathered panic");
    assert_eq!(entries(&log), ["drop sibling"]);
    assert!(reports.borrow().is_empty(), "observed through the handle: not reported");
}

// ---------------------------------------------------------------------------------------------
// try_gather.

#[test]
fn try_gather_all_ok_gives_values_in_input_order() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let (v, t) = run_bounded(&lp, async move {
        let v = try_gather(vec![
            after(3, "a", l.clone(), Ok::<_, String>(1)),
            after(1, "b", l.clone(), Ok(2)),
            after(2, "c", l.clone(), Ok(3)),
        ])
        .await;
        let t = try_gather((
            after(2, "t1", l.clone(), Ok::<_, String>("one")),
            after(1, "t2", l.clone(), Ok(2u8)),
        ))
        .await;
        (v, t)
    });
    assert_eq!(v, Ok(vec![1, 2, 3]));
    assert_eq!(t, Ok(("one", 2u8)));
}

#[test]
fn try_gather_returns_the_first_err_promptly_and_drops_the_remaining_futures() {
    // CPython test_tasks.py GatherTestsBase.test_one_exception (fail fast), with the remaining
    // children cancelled (asyncio leaves them running; futures polled in place cannot be).
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let (out, took, log_at_return) = run_bounded(&lp, async move {
        let slow = |name: &'static str, l: Log| async move {
            forever(name, l).await;
            Ok::<u32, String>(0)
        };
        let fail = |l: Log| async move {
            let _g = DropLog::new("failing", &l);
            sleep(Duration::from_millis(2)).await;
            Err::<u32, String>("boom".to_string())
        };
        let start = now();
        let futs: Vec<BoxedChild> = vec![
            Box::pin(slow("slow-1", l.clone())),
            Box::pin(fail(l.clone())),
            Box::pin(slow("slow-2", l.clone())),
        ];
        let out = try_gather(futs).await;
        (out, now() - start, entries(&l))
    });
    assert_eq!(out, Err("boom".to_string()));
    assert_eq!(
        took,
        Duration::from_millis(2),
        "returned as soon as the error was there"
    );
    assert_eq!(
        log_at_return,
        ["drop failing", "drop slow-1", "drop slow-2"],
        "the remaining futures were dropped before try_gather returned"
    );
    assert_eq!(entries(&log), log_at_return);
}

#[test]
fn try_gather_tuple_fails_fast_with_mixed_types() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        try_gather((
            async {
                forever("str", l.clone()).await;
                Ok::<&str, u8>("never")
            },
            after(1, "fail", l.clone(), Err::<u64, u8>(7)),
            async {
                forever("vec", l.clone()).await;
                Ok::<Vec<u8>, u8>(vec![])
            },
        ))
        .await
    });
    assert_eq!(out, Err(7));
    assert_eq!(entries(&log), ["done fail", "drop str", "drop vec"]);
}

#[test]
fn try_gather_returns_the_first_err_in_completion_order_not_input_order() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        try_gather(vec![
            after(20, "late error", l.clone(), Err::<(), &str>("late")),
            after(2, "early error", l.clone(), Err("early")),
        ])
        .await
    });
    assert_eq!(out, Err("early"));
    assert_eq!(entries(&log), ["done early error"], "the later one never finished");
}

#[test]
fn try_gather_of_task_handles_leaves_the_remaining_tasks_running() {
    // Passed by handle, the tasks run on their own: failing fast drops the handles, which
    // detaches the tasks (asyncio's gather does the same with the remaining tasks).
    let lp = virtual_loop();
    let reports = record_exceptions_with(&lp, |_, ctx| ctx.kind);
    let log = log();
    let l = log.clone();
    let (out, refs, pending_at_return) = run_bounded(&lp, async move {
        let a = spawn(after(10, "task a", l.clone(), 1));
        let boom = spawn(async {
            sleep(Duration::from_millis(1)).await;
            panic!("task failed");
        });
        let c = spawn(after(10, "task c", l.clone(), 3));
        let refs = vec![a.task_ref(), boom.task_ref(), c.task_ref()];
        let out = try_gather(vec![a, boom, c]).await;
        let pending: Vec<bool> = refs.iter().map(|r| !r.done()).collect();
        (out, refs, pending)
    });
    let err = out.unwrap_err();
    assert_eq!(err.panic().unwrap().message(), "task failed");
    assert_eq!(pending_at_return, [true, false, true], "a and c still running");
    run_bounded(&lp, until_all_done(refs.clone()));
    assert_eq!(entries(&log), ["done task a", "done task c"]);
    assert_eq!(refs[0].state(), TaskState::Done);
    assert_eq!(refs[2].state(), TaskState::Done);
    assert!(reports.borrow().is_empty(), "the panic was observed by try_gather");
}

#[test]
fn try_gather_of_futures_owning_task_handles_detaches_the_tasks_on_failure() {
    // The same with a user-level error: each future awaits a task and flattens its outcome.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let (out, refs) = run_bounded(&lp, async move {
        let a = spawn(after(10, "a", l.clone(), Ok::<u32, String>(1)));
        let b = spawn(after(1, "b", l.clone(), Err::<u32, String>("b failed".into())));
        let refs = vec![a.task_ref(), b.task_ref()];
        let flatten = |t: Task<Result<u32, String>>| async move { t.await.map_err(|e| e.to_string())? };
        (try_gather(vec![flatten(a), flatten(b)]).await, refs)
    });
    assert_eq!(out, Err("b failed".to_string()));
    assert!(!refs[0].done());
    run_bounded(&lp, until_all_done(refs));
    assert_eq!(entries(&log), ["done b", "done a"]);
}

#[test]
fn try_gather_of_a_cancelled_task_fails_fast_with_cancelled() {
    let lp = virtual_loop();
    let out = run_bounded(&lp, async {
        let a = spawn(sleep(Duration::from_secs(100)));
        let b = spawn(sleep(Duration::from_secs(100)));
        a.cancel();
        try_gather(vec![a, b]).await
    });
    assert!(matches!(out, Err(TaskError::Cancelled { .. })), "{out:?}");
}

// ---------------------------------------------------------------------------------------------
// wait.

/// Names of tasks, for comparing `wait`'s sets.
fn names<T>(tasks: &[Task<T>]) -> Vec<String> {
    tasks.iter().map(|t| t.name()).collect()
}

fn named<F>(name: &str, fut: F) -> Task<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    evloop::task::TaskBuilder::new().name(name).spawn(fut).unwrap()
}

#[test]
fn wait_first_completed_returns_as_soon_as_one_finishes() {
    // CPython test_tasks.py test_wait_first_completed.
    let lp = virtual_loop();
    let (done, pending, pending_after) = run_bounded(&lp, async {
        let tasks = vec![
            named("slow", async {
                sleep(Duration::from_millis(20)).await;
                1
            }),
            named("fast", async {
                sleep(Duration::from_millis(1)).await;
                2
            }),
            named("slower", async {
                sleep(Duration::from_millis(30)).await;
                3
            }),
        ];
        let (done, pending) = wait(tasks, ReturnWhen::FirstCompleted, None).await;
        let (d, p) = (names(&done), names(&pending));
        let mut values = Vec::new();
        for t in done.into_iter().chain(pending) {
            values.push(t.await.unwrap());
        }
        (d, p, values)
    });
    assert_eq!(done, ["fast"]);
    assert_eq!(pending, ["slow", "slower"], "input order kept");
    assert_eq!(
        pending_after,
        [2, 1, 3],
        "nothing was cancelled; results stay in the handles"
    );
}

#[test]
fn wait_first_completed_with_a_finished_task_returns_at_once() {
    // CPython test_tasks.py test_wait_really_done.
    let lp = virtual_loop();
    let h = lp.handle();
    let (done, pending, iterations) = run_bounded(&lp, async move {
        let finished = named("finished", async { 1 });
        yield_now().await;
        let sleeping = named("sleeping", async {
            sleep(Duration::from_millis(50)).await;
            2
        });
        let before = h.stats().iterations;
        let (done, pending) = wait(vec![sleeping, finished], ReturnWhen::FirstCompleted, None).await;
        (names(&done), names(&pending), h.stats().iterations - before)
    });
    assert_eq!(done, ["finished"]);
    assert_eq!(pending, ["sleeping"]);
    assert_eq!(iterations, 0, "no iteration passed: it was satisfied at its first poll");
}

#[test]
fn wait_first_exception_returns_at_the_first_panic() {
    // CPython test_tasks.py test_wait_first_exception_in_wait.
    let lp = virtual_loop();
    let _reports = record_exceptions_with(&lp, |_, _| ());
    let (done, pending) = run_bounded(&lp, async {
        let tasks = vec![
            named("sleeper", async {
                sleep(Duration::from_millis(50)).await;
            }),
            named("ok", async {
                sleep(Duration::from_millis(1)).await;
            }),
            named("panics", async {
                sleep(Duration::from_millis(5)).await;
                panic!("failure in wait");
            }),
        ];
        let (done, pending) = wait(tasks, ReturnWhen::FirstException, None).await;
        let r = (names(&done), names(&pending));
        for t in done {
            if t.name() == "panics" {
                assert_eq!(t.await.unwrap_err().panic().unwrap().message(), "failure in wait");
            }
        }
        r
    });
    assert_eq!(done, ["ok", "panics"]);
    assert_eq!(pending, ["sleeper"]);
}

#[test]
fn wait_first_exception_does_not_count_a_cancelled_task() {
    let lp = virtual_loop();
    let (done, pending, took) = run_bounded(&lp, async {
        let start = now();
        let cancelled = named("cancelled", sleep(Duration::from_secs(100)));
        let finishing = named("finishing", sleep(Duration::from_millis(15)));
        let c = cancelled.task_ref();
        evloop::spawn(async move {
            sleep(Duration::from_millis(1)).await;
            c.cancel();
        })
        .detach();
        let (done, pending) = wait(vec![cancelled, finishing], ReturnWhen::FirstException, None).await;
        (names(&done), names(&pending), now() - start)
    });
    assert_eq!(done, ["cancelled", "finishing"], "it waited for every task");
    assert!(pending.is_empty());
    assert_eq!(
        took,
        Duration::from_millis(15),
        "a cancel is not an exception: it waited for all"
    );
}

#[test]
fn wait_first_exception_without_a_failure_waits_for_all() {
    // CPython test_tasks.py test_wait_first_exception without an exception: same as ALL_COMPLETED.
    let lp = virtual_loop();
    let (done, pending) = run_bounded(&lp, async {
        let tasks = vec![
            named("a", sleep(Duration::from_millis(3))),
            named("b", sleep(Duration::from_millis(1))),
        ];
        let (done, pending) = wait(tasks, ReturnWhen::FirstException, None).await;
        (names(&done), names(&pending))
    });
    assert_eq!(done, ["a", "b"]);
    assert!(pending.is_empty());
}

#[test]
fn wait_all_completed_waits_for_every_task() {
    // CPython test_tasks.py test_wait.
    let lp = virtual_loop();
    let _reports = record_exceptions_with(&lp, |_, _| ());
    let (done, states) = run_bounded(&lp, async {
        let tasks = vec![
            named("a", async {
                sleep(Duration::from_millis(5)).await;
            }),
            named("b", async {
                sleep(Duration::from_millis(1)).await;
                panic!("b fails");
            }),
            named("c", async {
                sleep(Duration::from_millis(3)).await;
            }),
        ];
        let (done, pending) = wait(tasks, ReturnWhen::AllCompleted, None).await;
        assert!(pending.is_empty());
        let states: Vec<TaskState> = done.iter().map(|t| t.state()).collect();
        (names(&done), states)
    });
    assert_eq!(done, ["a", "b", "c"], "a panic does not end an AllCompleted wait");
    assert_eq!(states, [TaskState::Done, TaskState::Failed, TaskState::Done]);
}

#[test]
fn wait_with_a_timeout_returns_partial_sets_and_cancels_nothing() {
    // CPython test_tasks.py test_wait_with_timeout.
    let lp = virtual_loop();
    let (done, pending, took, refs) = run_bounded(&lp, async {
        let start = now();
        let tasks = vec![
            named("quick", sleep(Duration::from_millis(1))),
            named("slow", sleep(Duration::from_millis(40))),
        ];
        let refs: Vec<TaskRef> = tasks.iter().map(|t| t.task_ref()).collect();
        let (done, pending) = wait(tasks, ReturnWhen::AllCompleted, Some(Duration::from_millis(10))).await;
        (names(&done), names(&pending), now() - start, refs)
    });
    assert_eq!(done, ["quick"]);
    assert_eq!(pending, ["slow"]);
    assert_eq!(took, Duration::from_millis(10), "returned at the timeout");
    assert_eq!(
        refs[1].state(),
        TaskState::Pending,
        "the pending task was not cancelled"
    );
    run_bounded(&lp, until_all_done(refs.clone()));
    assert_eq!(refs[1].state(), TaskState::Done);
}

#[test]
fn wait_with_a_timeout_and_nothing_finishing_returns_everything_pending() {
    let lp = virtual_loop();
    let (done, pending) = run_bounded(&lp, async {
        let tasks = vec![named("x", sleep(Duration::from_millis(30)))];
        let (done, pending) = wait(tasks, ReturnWhen::FirstCompleted, Some(Duration::from_millis(2))).await;
        (names(&done), names(&pending))
    });
    assert!(done.is_empty());
    assert_eq!(pending, ["x"]);
}

#[test]
fn wait_with_no_tasks_returns_two_empty_sets() {
    // CPython test_tasks.py test_wait_errors: asyncio raises ValueError for an empty set; here
    // there is nothing to wait for and wait returns at once.
    let lp = EventLoop::new().unwrap();
    let (done, pending) = run_bounded(&lp, async {
        wait(Vec::<Task<()>>::new(), ReturnWhen::AllCompleted, None).await
    });
    assert!(done.is_empty() && pending.is_empty());
}

#[test]
fn wait_cancelled_while_waiting_leaves_the_tasks_running() {
    let lp = virtual_loop();
    let task = lp.create_task(sleep(Duration::from_millis(5))).unwrap();
    let r = task.task_ref();
    let waiter = lp
        .create_task(async move { wait(vec![task], ReturnWhen::AllCompleted, None).await })
        .unwrap();
    let w = waiter.task_ref();
    run_bounded(&lp, async move {
        yield_now().await;
        w.cancel();
    });
    assert!(run_bounded(&lp, waiter).unwrap_err().is_cancelled());
    assert!(!r.done());
    run_bounded(&lp, until_all_done(vec![r.clone()]));
    assert_eq!(r.state(), TaskState::Done);
}

// ---------------------------------------------------------------------------------------------
// as_completed.

#[test]
fn as_completed_yields_in_completion_order_then_none() {
    // CPython test_tasks.py test_as_completed.
    let lp = virtual_loop();
    let out = run_bounded(&lp, async {
        let tasks = vec![
            named("c", async {
                sleep(Duration::from_millis(9)).await;
                'c'
            }),
            named("a", async {
                sleep(Duration::from_millis(1)).await;
                'a'
            }),
            named("b", async {
                sleep(Duration::from_millis(5)).await;
                'b'
            }),
        ];
        let mut it = as_completed(tasks);
        let mut out = Vec::new();
        assert_eq!(it.remaining(), 3);
        while let Some(r) = it.next().await {
            out.push((r.unwrap(), it.remaining()));
        }
        assert!(it.next().await.is_none(), "None again after the end");
        assert_eq!(format!("{it:?}"), "AsCompleted { remaining: 0 }");
        out
    });
    assert_eq!(out, [('a', 2), ('b', 1), ('c', 0)]);
}

#[test]
fn as_completed_with_already_finished_tasks_yields_in_input_order() {
    let lp = virtual_loop();
    let out = run_bounded(&lp, async {
        let tasks: Vec<Task<u8>> = (0..4).map(|i| spawn(async move { i })).collect();
        yield_now().await;
        let mut it = as_completed(tasks);
        let mut out = Vec::new();
        while let Some(r) = it.next().await {
            out.push(r.unwrap());
        }
        out
    });
    assert_eq!(out, [0, 1, 2, 3]);
}

#[test]
fn as_completed_gives_panics_and_cancellations_as_errors() {
    let lp = virtual_loop();
    let _reports = record_exceptions_with(&lp, |_, _| ());
    let out = run_bounded(&lp, async {
        let gate = evloop::event_loop::get_running_loop().unwrap().create_future::<()>();
        let g = gate.clone();
        let ok = named("ok", async move {
            g.wait().await.unwrap();
            1
        });
        let panics = named("panics", async {
            sleep(Duration::from_millis(1)).await;
            panic!("p");
        });
        let cancelled = named("cancelled", async {
            sleep(Duration::from_secs(100)).await;
            3
        });
        let c = cancelled.task_ref();
        let mut it = as_completed(vec![ok, panics, cancelled]);
        let first = it.next().await.unwrap();
        c.cancel();
        let second = it.next().await.unwrap();
        gate.set_result(()).unwrap();
        let third = it.next().await.unwrap();
        [first, second, third].map(|r| match r {
            Ok(v) => format!("ok {v}"),
            Err(e) if e.is_panic() => "panic".to_string(),
            Err(e) if e.is_cancelled() => "cancelled".to_string(),
            Err(e) => format!("other {e}"),
        })
    });
    assert_eq!(out, ["panic", "cancelled", "ok 1"]);
}

#[test]
fn as_completed_next_under_a_timeout_loses_no_task() {
    // CPython test_tasks.py test_as_completed_with_timeout, reshaped: a timeout around next()
    // gives up on that wait only; the tasks stay in the iterator.
    let lp = virtual_loop();
    let out = run_bounded(&lp, async {
        let tasks = vec![named("late", async {
            sleep(Duration::from_millis(10)).await;
            "late"
        })];
        let mut it = as_completed(tasks);
        let first = timeout(Duration::from_millis(1), it.next()).await;
        assert!(first.is_err());
        assert_eq!(it.remaining(), 1);
        it.next().await.unwrap().unwrap()
    });
    assert_eq!(out, "late");
}

// ---------------------------------------------------------------------------------------------
// select and race.

#[test]
fn select_returns_the_first_and_drops_the_loser() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let (out, log_at_return) = run_bounded(&lp, async move {
        let out = select(after(2, "winner", l.clone(), 1u8), forever("loser", l.clone())).await;
        (out, entries(&l))
    });
    assert_eq!(out, Either::Left(1));
    assert_eq!(
        log_at_return,
        ["done winner", "drop loser"],
        "the loser was dropped before select returned"
    );
}

#[test]
fn select_second_wins_when_it_finishes_first() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        select(
            async {
                forever("slow left", l.clone()).await;
                "left"
            },
            after(1, "right", l.clone(), 2.5f32),
        )
        .await
    });
    assert_eq!(out, Either::Right(2.5));
    assert_eq!(entries(&log), ["done right", "drop slow left"]);
}

#[test]
fn select_first_argument_wins_a_tie() {
    let lp = virtual_loop();
    let polls_b = Rc::new(Cell::new(0));
    let pb = polls_b.clone();
    let (ready_tie, timed_tie) = run_bounded(&lp, async move {
        let ready_tie = select(async { "a" }, ReadyCounting(pb, 2)).await;
        // Both woken by the same timer expiry: the first is polled first.
        let p = evloop::event_loop::get_running_loop().unwrap().create_future::<u8>();
        let (p1, p2) = (p.clone(), p.clone());
        evloop::event_loop::get_running_loop()
            .unwrap()
            .call_later(Duration::from_millis(1), move || p.set_result(1).unwrap())
            .unwrap();
        let timed_tie = select(p1.wait(), p2.wait()).await;
        (ready_tie, timed_tie)
    });
    assert_eq!(ready_tie, Either::Left("a"));
    assert_eq!(polls_b.get(), 0, "the second was not even polled");
    assert!(matches!(timed_tie, Either::Left(Ok(1))), "{timed_tie:?}");
}

#[test]
fn select_with_a_task_handle_as_loser_detaches_the_task() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let (out, r) = run_bounded(&lp, async move {
        let task = spawn(after(5, "task", l.clone(), "task"));
        let r = task.task_ref();
        (select(async { "now" }, task).await, r)
    });
    assert!(matches!(out, Either::Left("now")));
    run_bounded(&lp, until_all_done(vec![r.clone()]));
    assert_eq!(entries(&log), ["done task"], "the losing task ran to completion");
}

#[test]
fn select_inside_a_cancelled_task_drops_both() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let t = lp
        .create_task(async move { select(forever("left", l.clone()), forever("right", l.clone())).await })
        .unwrap();
    let r = t.task_ref();
    run_bounded(&lp, async move {
        yield_now().await;
        r.cancel();
    });
    assert!(run_bounded(&lp, t).unwrap_err().is_cancelled());
    assert_eq!(entries(&log), ["drop right", "drop left"]);
}

#[test]
fn race_gives_the_first_output_and_drops_the_other() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let dropped = Rc::new(Cell::new(false));
    let d = dropped.clone();
    let out = run_bounded(&lp, async move {
        let slow = async move {
            let _f = DropFlag(d);
            after(50, "slow", l.clone(), "slow").await
        };
        let fast = after(1, "fast", log.clone(), "fast");
        race(slow, fast).await
    });
    assert_eq!(out, "fast");
    assert!(dropped.get());
}

#[test]
fn race_as_a_hand_made_timeout() {
    let lp = virtual_loop();
    let out = run_bounded(&lp, async {
        race(
            async {
                sleep(Duration::from_secs(100)).await;
                Ok(1)
            },
            async {
                sleep(Duration::from_millis(2)).await;
                Err("timed out")
            },
        )
        .await
    });
    assert_eq!(out, Err("timed out"));
}

#[test]
fn wait_tasks_finishing_at_the_timeout_count_as_done() {
    // CPython test_tasks.py test_wait_concurrent_complete, with an exact deadline tie. The
    // tasks start (and arm their timers) before wait arms its own, so at the shared deadline
    // "on time" is woken and steps first; then wait checks the tasks before its timer.
    let lp = virtual_loop();
    let (done, pending) = run_bounded(&lp, async {
        let tasks = vec![
            named("on time", sleep(Duration::from_millis(10))),
            named("too late", sleep(Duration::from_millis(11))),
        ];
        yield_now().await; // their first steps run: their sleeps are in the heap first
        let (done, pending) = wait(tasks, ReturnWhen::AllCompleted, Some(Duration::from_millis(10))).await;
        (names(&done), names(&pending))
    });
    assert_eq!(done, ["on time"]);
    assert_eq!(pending, ["too late"]);
}
