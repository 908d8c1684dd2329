//! Structured concurrency with `TaskGroup` (`runtime/src/sync/group.rs`, asyncio 3.11's TaskGroup).
//!
//! - `join` gives the children's values in spawn order, whatever order they finish in; an empty
//!   group joins to an empty `Vec`.
//! - A child returning `Err` makes the group cancel the others, whose destructors have run by
//!   the time `join` returns; `join` returns every child failure (two children failing in the same
//!   iteration both appear) and counts the torn-down siblings in `GroupError::cancelled`.
//! - A panicking child is `ChildError::Panicked` with the panic's message; a child cancelled from
//!   outside is `ChildError::Cancelled`; names given with `spawn_named` appear in the errors, and
//!   `GroupError`'s `Display` lists the failures.
//! - No child outlives its group: dropping a group without joining cancels its children, and so
//!   does cancelling the task that awaits `join` (afterwards `all_tasks()` has none of them and
//!   their destructors have run).
//!
//! Plus ports of CPython's `test_asyncio/test_taskgroups.py` cases that make sense in this API
//! (each says which one it ports).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use evloop::{
    event_loop::{EventLoop, ExceptionKind, LoopErrorKind, LoopHandle},
    task::{ChildError, GroupError, Promise, TaskGroup, TaskRef, TaskState, current_task, yield_now},
    time::sleep,
};
use evloop_tests::{
    DropLog, Log, entries, log, push, record_exceptions_with, run_bounded, run_one, spin_once, virtual_loop,
};

/// A child that keeps a guard, sleeps `ms` and then gives `out`.
async fn child<T, E>(name: &'static str, ms: u64, log: Log, out: Result<T, E>) -> Result<T, E> {
    let _g = DropLog::new(name, &log);
    sleep(Duration::from_millis(ms)).await;
    push(&log, format!("{name} finished"));
    out
}

/// A short description of each child error, for comparing.
fn describe<E: std::fmt::Debug>(e: &GroupError<E>) -> Vec<String> {
    e.errors
        .iter()
        .map(|c| match c {
            ChildError::Failed { task, error } => format!("{task} failed: {error:?}"),
            ChildError::Panicked { task, panic } => format!("{task} panicked: {}", panic.message()),
            ChildError::Cancelled { task } => format!("{task} cancelled"),
            other => format!("{other:?}"),
        })
        .collect()
}

/// The names of the live tasks of `lp`.
fn live(lp: &LoopHandle) -> Vec<String> {
    lp.all_tasks().iter().map(TaskRef::name).collect()
}

// ---------------------------------------------------------------------------------------------
// Values.

#[test]
fn group_join_gives_values_in_spawn_order() {
    // CPython test_taskgroups.py test_taskgroup_01.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        let mut g = TaskGroup::<&str, ()>::new().unwrap();
        g.spawn(child("first", 30, l.clone(), Ok("first"))).unwrap();
        g.spawn(child("second", 20, l.clone(), Ok("second"))).unwrap();
        g.spawn(child("third", 10, l.clone(), Ok("third"))).unwrap();
        g.spawn(async { Ok("immediate") }).unwrap();
        assert_eq!(g.len(), 4);
        g.join().await
    });
    assert_eq!(out.unwrap(), ["first", "second", "third", "immediate"]);
    assert_eq!(
        entries(&log),
        [
            "third finished",
            "drop third",
            "second finished",
            "drop second",
            "first finished",
            "drop first"
        ],
        "they finished in reverse"
    );
}

#[test]
fn group_empty_joins_to_an_empty_vec() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let (out, iterations) = run_bounded(&lp, async move {
        let g = TaskGroup::<u8, String>::new().unwrap();
        assert!(g.is_empty());
        assert_eq!(g.len(), 0);
        let before = h.stats().iterations;
        let out = g.join().await;
        (out, h.stats().iterations - before)
    });
    assert_eq!(out.unwrap(), Vec::<u8>::new());
    assert_eq!(iterations, 0, "nothing to wait for");
}

#[test]
fn group_children_start_without_waiting_for_join() {
    // The children are tasks: their first step is scheduled at spawn, not when join is awaited.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        let mut g = TaskGroup::<u8, ()>::new().unwrap();
        let l2 = l.clone();
        g.spawn(async move {
            push(&l2, "child ran");
            Ok(1)
        })
        .unwrap();
        sleep(Duration::from_millis(5)).await;
        push(&l, "owner calls join");
        g.join().await
    });
    assert_eq!(out.unwrap(), [1]);
    assert_eq!(entries(&log), ["child ran", "owner calls join"]);
}

#[test]
fn group_children_run_as_their_own_tasks() {
    let lp = EventLoop::new().unwrap();
    let (owner, names) = run_bounded(&lp, async {
        let owner = current_task().unwrap().name();
        let mut g = TaskGroup::<String>::new().unwrap();
        for _ in 0..2 {
            g.spawn(async { Ok(current_task().unwrap().name()) }).unwrap();
        }
        (owner, g.join().await.unwrap())
    });
    assert_eq!(owner, "Task-1");
    assert_eq!(names, ["Task-2", "Task-3"]);
}

// ---------------------------------------------------------------------------------------------
// Failures.

#[test]
fn group_a_child_returning_err_cancels_the_others_before_join_returns() {
    // CPython test_taskgroups.py test_taskgroup_03 / test_cancel_children_on_child_error.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let (out, log_at_return, refs) = run_bounded(&lp, async move {
        let mut g = TaskGroup::<u32, String>::new().unwrap();
        let refs = vec![
            g.spawn_named("sibling-1", child("sibling-1", 100_000, l.clone(), Ok(1)))
                .unwrap(),
            g.spawn_named("failing", child("failing", 5, l.clone(), Err("broken".to_string())))
                .unwrap(),
            g.spawn_named("sibling-2", child("sibling-2", 100_000, l.clone(), Ok(2)))
                .unwrap(),
        ];
        let out = g.join().await;
        (out, entries(&l), refs)
    });
    let err = out.unwrap_err();
    assert_eq!(describe(&err), ["failing failed: \"broken\""]);
    assert_eq!(err.cancelled, 2, "two siblings torn down");
    let mut teardown = log_at_return[2..].to_vec();
    teardown.sort();
    assert_eq!(log_at_return[..2], ["failing finished", "drop failing"]);
    assert_eq!(
        teardown,
        ["drop sibling-1", "drop sibling-2"],
        "their destructors ran before join returned"
    );
    let states: Vec<TaskState> = refs.iter().map(TaskRef::state).collect();
    assert_eq!(states, [TaskState::Cancelled, TaskState::Done, TaskState::Cancelled]);
    assert!(lp.all_tasks().is_empty());
}

#[test]
fn group_two_children_failing_in_the_same_iteration_both_appear() {
    // CPython test_taskgroups.py test_taskgroup_14 (two children fail; both errors are in the
    // ExceptionGroup).
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        let mut g = TaskGroup::<(), &str>::new().unwrap();
        g.spawn_named("a", child("a", 10, l.clone(), Err("a broke"))).unwrap();
        g.spawn_named("slow", child("slow", 100_000, l.clone(), Ok(())))
            .unwrap();
        g.spawn_named("b", child("b", 10, l.clone(), Err("b broke"))).unwrap();
        g.join().await
    });
    let err = out.unwrap_err();
    assert_eq!(describe(&err), ["a failed: \"a broke\"", "b failed: \"b broke\""]);
    assert_eq!(err.cancelled, 1);
}

#[test]
fn group_errors_of_one_iteration_are_listed_in_spawn_order() {
    // Two children fail in one iteration, the later-spawned one first: join collects the
    // failures of one pass over the children in spawn order.
    let lp = virtual_loop();
    let h = lp.handle();
    let out = run_bounded(&lp, async move {
        let (pa, pb): (Promise<()>, Promise<()>) = (h.create_future(), h.create_future());
        let mut g = TaskGroup::<(), &str>::new().unwrap();
        let (wa, wb) = (pa.clone(), pb.clone());
        g.spawn_named("spawned-first", async move {
            wa.wait().await.unwrap();
            Err("first")
        })
        .unwrap();
        g.spawn_named("spawned-second", async move {
            wb.wait().await.unwrap();
            Err("second")
        })
        .unwrap();
        yield_now().await;
        // One callback completes both promises, b first: "spawned-second" is woken (and
        // finishes) first, in the same iteration as "spawned-first".
        h.call_soon(move || {
            pb.set_result(()).unwrap();
            pa.set_result(()).unwrap();
        })
        .unwrap();
        g.join().await
    });
    let err = out.unwrap_err();
    assert_eq!(
        describe(&err),
        ["spawned-first failed: \"first\"", "spawned-second failed: \"second\""]
    );
}

#[test]
fn group_a_panicking_child_is_a_panicked_child_error_with_the_message() {
    // CPython test_taskgroups.py test_taskgroup_21-ish: a BaseException in a child; here a panic.
    let lp = virtual_loop();
    let reports = record_exceptions_with(&lp, |_, ctx| ctx.kind);
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        let mut g = TaskGroup::<u8, String>::new().unwrap();
        g.spawn_named("ok", child("ok", 100_000, l.clone(), Ok(1))).unwrap();
        g.spawn_named("panicky", async {
            sleep(Duration::from_millis(1)).await;
            panic!("child exploded: {}", 42);
        })
        .unwrap();
        g.join().await
    });
    let err = out.unwrap_err();
    match &err.errors[..] {
        [ChildError::Panicked { task, panic }] => {
            assert_eq!(task, "panicky");
            assert_eq!(panic.message(), "child exploded: 42");
        }
        other => panic!("expected one Panicked, got {other:?}"),
    }
    assert_eq!(err.cancelled, 1, "a panic tears the siblings down like an Err");
    assert_eq!(entries(&log), ["drop ok"]);
    assert!(
        reports.borrow().is_empty(),
        "join observed the panic: nothing reaches the exception handler ({:?})",
        reports.borrow()
    );
}

#[test]
fn group_a_child_cancelled_from_outside_is_a_cancelled_child_error() {
    // asyncio's TaskGroup ignores a child that was cancelled; here join reports it (its value is
    // missing, so the Vec of values cannot be given) and the other children are left to finish.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        let mut g = TaskGroup::<u8, String>::new().unwrap();
        let victim = g
            .spawn_named("victim", child("victim", 100_000, l.clone(), Ok::<u8, String>(1)))
            .unwrap();
        g.spawn_named("bystander", child("bystander", 10, l.clone(), Ok(2)))
            .unwrap();
        evloop::spawn(async move {
            sleep(Duration::from_millis(1)).await;
            victim.cancel();
        })
        .detach();
        g.join().await
    });
    let err = out.unwrap_err();
    assert_eq!(describe(&err), ["victim cancelled"]);
    assert_eq!(
        err.cancelled, 0,
        "an outside cancel is not a failure: nothing was torn down"
    );
    assert_eq!(
        entries(&log),
        ["drop victim", "bystander finished", "drop bystander"],
        "the bystander ran to completion"
    );
    assert_eq!(err.to_string(), "task group: 1 child failure(s): victim was cancelled");
}

#[test]
fn group_spawn_named_names_appear_in_errors_and_unnamed_children_get_task_names() {
    // CPython test_taskgroups.py test_taskgroup_task_name.
    let lp = virtual_loop();
    let (err, named_ref) = run_bounded(&lp, async {
        let mut g = TaskGroup::<(), String>::new().unwrap();
        let r = g
            .spawn_named("fetch-users", async { Err("HTTP 500".to_string()) })
            .unwrap();
        let _ = g.spawn(async { Err::<(), _>("anonymous".to_string()) }).unwrap();
        (g.join().await.unwrap_err(), r)
    });
    assert_eq!(named_ref.name(), "fetch-users");
    assert_eq!(
        describe(&err),
        ["fetch-users failed: \"HTTP 500\"", "Task-3 failed: \"anonymous\""]
    );
}

#[test]
fn group_error_display_lists_the_failures() {
    let lp = virtual_loop();
    let _reports = record_exceptions_with(&lp, |_, _| ());
    let err = run_bounded(&lp, async {
        let mut g = TaskGroup::<(), String>::new().unwrap();
        g.spawn_named("parse", async {
            sleep(Duration::from_millis(1)).await;
            Err("bad header".to_string())
        })
        .unwrap();
        g.spawn_named("render", async {
            sleep(Duration::from_millis(1)).await;
            panic!("index out of range");
        })
        .unwrap();
        g.spawn_named("upload", sleep(Duration::from_secs(100)).then_ok())
            .unwrap();
        g.spawn_named("notify", sleep(Duration::from_secs(100)).then_ok())
            .unwrap();
        g.join().await.unwrap_err()
    });
    assert_eq!(
        err.to_string(),
        "task group: 2 child failure(s) (2 sibling(s) cancelled): parse failed: bad header; \
         render panicked: index out of range"
    );
    assert_eq!(err.errors[0].to_string(), "parse failed: bad header");
    let as_std: &dyn std::error::Error = &err;
    assert!(as_std.to_string().starts_with("task group: 2 child failure(s)"));
}

/// `fut.then_ok()`: the future's output wrapped in `Ok`, for children that cannot fail.
trait ThenOk: std::future::Future + Sized {
    fn then_ok<E>(self) -> impl std::future::Future<Output = Result<Self::Output, E>> {
        async move { Ok(self.await) }
    }
}

impl<F: std::future::Future> ThenOk for F {}

#[test]
fn group_a_failure_after_some_children_finished_keeps_no_values() {
    // CPython test_taskgroups.py test_taskgroup_07-ish: finished children's values are
    // discarded when another fails; join gives the error only.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        let mut g = TaskGroup::<u8, &str>::new().unwrap();
        g.spawn_named("done early", child("done early", 1, l.clone(), Ok(1)))
            .unwrap();
        g.spawn_named("fails later", child("fails later", 5, l.clone(), Err("late")))
            .unwrap();
        g.spawn_named("still running", child("still running", 100_000, l.clone(), Ok(3)))
            .unwrap();
        g.join().await
    });
    let err = out.unwrap_err();
    assert_eq!(describe(&err), ["fails later failed: \"late\""]);
    assert_eq!(err.cancelled, 1, "the finished child is not counted as cancelled");
}

#[test]
fn group_a_panicking_destructor_during_teardown_is_reported_and_join_still_returns() {
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("cleanup failed");
        }
    }
    let lp = virtual_loop();
    let reports = record_exceptions_with(&lp, |_, ctx| (ctx.kind, ctx.task.clone()));
    let err = run_bounded(&lp, async {
        let mut g = TaskGroup::<(), &str>::new().unwrap();
        g.spawn_named("bad cleanup", async {
            let _p = PanicOnDrop;
            sleep(Duration::from_secs(100)).await;
            Ok(())
        })
        .unwrap();
        g.spawn_named("fails", async {
            sleep(Duration::from_millis(1)).await;
            Err("x")
        })
        .unwrap();
        g.join().await.unwrap_err()
    });
    assert_eq!(describe(&err), ["fails failed: \"x\""]);
    assert_eq!(err.cancelled, 1);
    assert_eq!(
        *reports.borrow(),
        [(ExceptionKind::DestructorPanicked, Some("bad cleanup".to_string()))]
    );
}

#[test]
fn group_a_failing_child_cancels_its_siblings_even_before_join_is_awaited() {
    // Like asyncio's TaskGroup, which reacts to a child's failure in the child's done callback,
    // the siblings are cancelled in the next iteration whatever the owner is doing, even
    // before it awaits join.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let out = run_bounded(&lp, async move {
        let mut g = TaskGroup::<(), &str>::new().unwrap();
        g.spawn_named("fails", child("fails", 1, l.clone(), Err("early failure")))
            .unwrap();
        g.spawn_named("sibling", child("sibling", 10, l.clone(), Ok(())))
            .unwrap();
        sleep(Duration::from_millis(50)).await; // the body does other work before joining
        g.join().await
    });
    let err = out.unwrap_err();
    assert_eq!(
        entries(&log),
        ["fails finished", "drop fails", "drop sibling"],
        "the sibling was cancelled when its sibling failed, not left to finish"
    );
    assert_eq!(err.cancelled, 1);
}

// ---------------------------------------------------------------------------------------------
// No child outlives its group.

#[test]
fn group_dropped_without_joining_cancels_its_children() {
    let lp = virtual_loop();
    let h = lp.handle();
    let log = log();
    let l = log.clone();
    let (during, after, refs) = run_bounded(&lp, async move {
        let mut g = TaskGroup::<(), ()>::new().unwrap();
        let refs = vec![
            g.spawn_named("c1", child("c1", 100_000, l.clone(), Ok(()))).unwrap(),
            g.spawn_named("c2", child("c2", 100_000, l.clone(), Ok(()))).unwrap(),
        ];
        yield_now().await;
        let during = live(&h);
        drop(g);
        (during, live(&h), refs)
    });
    assert_eq!(during, ["Task-1", "c1", "c2"]);
    assert_eq!(after, ["Task-1"], "dropping the group removed its children at once");
    assert_eq!(entries(&log), ["drop c1", "drop c2"]);
    assert!(refs.iter().all(|r| r.state() == TaskState::Cancelled));
}

#[test]
fn group_dropped_before_its_children_first_step_never_runs_them() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    run_bounded(&lp, async move {
        let mut g = TaskGroup::<(), ()>::new().unwrap();
        let l2 = l.clone();
        g.spawn(async move {
            push(&l2, "child body ran");
            Ok(())
        })
        .unwrap();
        drop(g);
        yield_now().await;
    });
    assert!(entries(&log).is_empty());
}

#[test]
fn group_cancelling_the_task_awaiting_join_cancels_every_child() {
    // CPython test_taskgroups.py test_taskgroup_04 / test_taskgroup_05: the task running the
    // group is cancelled while the children run; the children are cancelled too.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let children: Rc<RefCell<Vec<TaskRef>>> = Rc::new(RefCell::new(Vec::new()));
    let c = children.clone();
    let owner = lp
        .create_task(async move {
            let mut g = TaskGroup::<(), ()>::new().unwrap();
            for name in ["k1", "k2", "k3"] {
                let r = g.spawn_named(name, child(name, 100_000, l.clone(), Ok(()))).unwrap();
                c.borrow_mut().push(r);
            }
            g.join().await
        })
        .unwrap();
    run_one(&lp);
    run_one(&lp);
    assert_eq!(live(&lp), ["Task-1", "k1", "k2", "k3"]);
    assert!(owner.cancel());
    spin_once(&lp);
    assert!(
        lp.all_tasks().is_empty(),
        "no child outlives the group: {}",
        lp.dump_tasks()
    );
    let mut dropped = entries(&log);
    dropped.sort();
    assert_eq!(dropped, ["drop k1", "drop k2", "drop k3"]);
    for r in children.borrow().iter() {
        assert_eq!(r.state(), TaskState::Cancelled, "{}", r.name());
    }
    assert!(run_bounded(&lp, owner).unwrap_err().is_cancelled());
}

#[test]
fn group_cancelling_the_owner_before_join_also_cancels_the_children() {
    // The group is dropped with the owner's future wherever the owner is parked.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let owner = lp
        .create_task(async move {
            let mut g = TaskGroup::<(), ()>::new().unwrap();
            g.spawn_named("kid", child("kid", 100_000, l.clone(), Ok(()))).unwrap();
            sleep(Duration::from_secs(50)).await; // not in join yet
            g.join().await
        })
        .unwrap();
    run_one(&lp);
    run_one(&lp);
    owner.cancel();
    spin_once(&lp);
    assert!(lp.all_tasks().is_empty());
    assert_eq!(entries(&log), ["drop kid"]);
}

#[test]
fn group_nested_cancelling_the_outer_owner_tears_down_the_inner_groups_children() {
    // CPython test_taskgroups.py test_taskgroup_10/11 (nested groups, outer cancelled).
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let owner = lp
        .create_task(async move {
            let mut outer = TaskGroup::<(), GroupError<()>>::new().unwrap();
            let l2 = l.clone();
            outer
                .spawn_named("inner-owner", async move {
                    let mut inner = TaskGroup::<(), ()>::new().unwrap();
                    inner
                        .spawn_named("leaf-1", child("leaf-1", 100_000, l2.clone(), Ok(())))
                        .unwrap();
                    inner
                        .spawn_named("leaf-2", child("leaf-2", 100_000, l2.clone(), Ok(())))
                        .unwrap();
                    inner.join().await.map(|_| ())
                })
                .unwrap();
            outer.join().await
        })
        .unwrap();
    for _ in 0..3 {
        run_one(&lp);
    }
    assert_eq!(live(&lp), ["Task-1", "inner-owner", "leaf-1", "leaf-2"]);
    owner.cancel();
    spin_once(&lp);
    assert!(lp.all_tasks().is_empty(), "{}", lp.dump_tasks());
    let mut dropped = entries(&log);
    dropped.sort();
    assert_eq!(dropped, ["drop leaf-1", "drop leaf-2"]);
}

#[test]
fn group_nested_an_inner_failure_fails_the_outer_group() {
    // CPython test_taskgroups.py test_taskgroup_12-ish: the inner group's error becomes the
    // outer child's error, and the outer group tears its other children down.
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let err = run_bounded(&lp, async move {
        let mut outer = TaskGroup::<(), String>::new().unwrap();
        let l2 = l.clone();
        outer
            .spawn_named("inner-owner", async move {
                let mut inner = TaskGroup::<(), &str>::new().unwrap();
                inner
                    .spawn_named("leaf-ok", child("leaf-ok", 100_000, l2.clone(), Ok(())))
                    .unwrap();
                inner
                    .spawn_named("leaf-bad", child("leaf-bad", 2, l2.clone(), Err("leaf broke")))
                    .unwrap();
                inner.join().await.map(|_| ()).map_err(|e| e.to_string())
            })
            .unwrap();
        outer
            .spawn_named("outer-sibling", child("outer-sibling", 100_000, l.clone(), Ok(())))
            .unwrap();
        outer.join().await.unwrap_err()
    });
    assert_eq!(
        describe(&err),
        [
            "inner-owner failed: \"task group: 1 child failure(s) (1 sibling(s) cancelled): leaf-bad failed: leaf broke\""
        ]
    );
    assert_eq!(err.cancelled, 1);
    let log = entries(&log);
    assert!(log.contains(&"drop leaf-ok".to_string()), "{log:?}");
    assert!(log.contains(&"drop outer-sibling".to_string()), "{log:?}");
}

// ---------------------------------------------------------------------------------------------
// The rest of the API.

#[test]
fn group_cancel_tears_down_the_running_children_now() {
    let lp = virtual_loop();
    let log = log();
    let l = log.clone();
    let (n, log_after_cancel, out) = run_bounded(&lp, async move {
        let mut g = TaskGroup::<u8, ()>::new().unwrap();
        g.spawn_named("done", async { Ok(1) }).unwrap();
        g.spawn_named("x", child("x", 100_000, l.clone(), Ok(2))).unwrap();
        g.spawn_named("y", child("y", 100_000, l.clone(), Ok(3))).unwrap();
        yield_now().await;
        let n = g.cancel();
        let log_after_cancel = entries(&l);
        (n, log_after_cancel, g.join().await)
    });
    assert_eq!(n, 2, "the finished child is not counted");
    assert_eq!(log_after_cancel, ["drop x", "drop y"], "dropped inside cancel()");
    let err = out.unwrap_err();
    assert_eq!(describe(&err), ["x cancelled", "y cancelled"]);
    assert_eq!(err.cancelled, 0);
}

#[test]
fn group_new_outside_a_running_loop_is_an_error_and_with_loop_works() {
    // CPython test_taskgroups.py test_taskgroup_without_parent_task.
    let lp = virtual_loop();
    match TaskGroup::<(), ()>::new() {
        Err(e) => assert_eq!(e.kind(), LoopErrorKind::NoRunningLoop),
        Ok(g) => panic!("expected an error, got {g:?}"),
    }
    let mut g = TaskGroup::<u8, ()>::with_loop(&lp);
    g.spawn(async { Ok(5) }).unwrap();
    assert_eq!(format!("{g:?}"), "<TaskGroup 1 children, 1 running>");
    assert_eq!(run_bounded(&lp, g.join()).unwrap(), [5]);
}

#[test]
fn group_debug_counts_children_and_running_ones() {
    let lp = virtual_loop();
    let text = run_bounded(&lp, async {
        let mut g = TaskGroup::<(), ()>::new().unwrap();
        g.spawn(async { Ok(()) }).unwrap();
        g.spawn(sleep(Duration::from_secs(1)).then_ok()).unwrap();
        yield_now().await;
        let text = format!("{g:?}");
        g.join().await.unwrap();
        text
    });
    assert_eq!(text, "<TaskGroup 2 children, 1 running>");
}

#[test]
fn group_spawn_on_a_closed_loop_is_an_error() {
    let lp = virtual_loop();
    let h = lp.handle();
    let mut g = TaskGroup::<(), ()>::with_loop(&h);
    lp.close().unwrap();
    let err = g.spawn(async { Ok(()) }).unwrap_err();
    assert_eq!(err.kind(), LoopErrorKind::Closed);
    assert!(g.is_empty());
}

#[test]
fn group_join_awaited_inside_one_of_its_own_children_does_not_spin_when_a_sibling_fails() {
    // A child that joins its own group: join leaves the running child out (it cannot wait for
    // itself) and reports it; the sibling's failure tears the joiner down afterwards. Once, a
    // join here aborted and re-checked forever inside one poll; the loop runs on its own
    // thread so a regression fails instead of hanging.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let lp = virtual_loop();
        let out = lp.run_until_complete(async {
            type Slot = Rc<RefCell<Option<TaskGroup<(), &'static str>>>>;
            let slot: Slot = Rc::new(RefCell::new(None));
            let mut g = TaskGroup::new().unwrap();
            let s = slot.clone();
            let joiner = g
                .spawn_named("joiner", async move {
                    sleep(Duration::from_millis(1)).await;
                    let own = s.borrow_mut().take().expect("the group was stored");
                    own.join().await.map(|_| ()).map_err(|_| "joined a failed group")
                })
                .unwrap();
            g.spawn_named("fails", async {
                sleep(Duration::from_millis(5)).await;
                Err("boom")
            })
            .unwrap();
            *slot.borrow_mut() = Some(g);
            sleep(Duration::from_millis(50)).await;
            joiner.state()
        });
        let _ = tx.send(format!("{out:?}"));
    });
    let out = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the loop is stuck inside join()");
    assert_eq!(out, "Ok(Cancelled)", "the joining child was torn down with its group");
}

#[test]
fn group_join_awaited_inside_one_of_its_own_children_returns_when_a_sibling_panics() {
    // Like the test above with a panicking sibling: join sees the failure first and tears down
    // itself, skipping the running joiner; the joiner must still finish instead of waiting
    // for itself forever.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let lp = virtual_loop();
        let out = lp.run_until_complete(async {
            type Slot = Rc<RefCell<Option<TaskGroup<(), &'static str>>>>;
            let slot: Slot = Rc::new(RefCell::new(None));
            let mut g = TaskGroup::new().unwrap();
            let s = slot.clone();
            let joiner = g
                .spawn_named("joiner", async move {
                    sleep(Duration::from_millis(1)).await;
                    let own = s.borrow_mut().take().expect("the group was stored");
                    let err = own.join().await.expect_err("a sibling panicked");
                    let names: Vec<String> = err.errors.iter().map(|e| e.to_string()).collect();
                    assert!(
                        names.iter().any(|e| e.contains("joiner awaited its own group")),
                        "{names:?}"
                    );
                    assert!(names.iter().any(|e| e.contains("panicks")), "{names:?}");
                    Ok(())
                })
                .unwrap();
            g.spawn_named("panicks", async {
                sleep(Duration::from_millis(5)).await;
                panic!("sibling panic")
            })
            .unwrap();
            *slot.borrow_mut() = Some(g);
            sleep(Duration::from_millis(50)).await;
            joiner.state()
        });
        let _ = tx.send(format!("{out:?}"));
    });
    let out = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the joining child never finished");
    assert!(
        out == "Ok(Done)" || out == "Ok(Cancelled)",
        "the joiner finished: {out}"
    );
}

// ---------------------------------------------------------------------------------------------
// A failing group refuses new children (issue 19 item 2).

#[test]
fn group_a_child_spawned_into_a_failing_group_never_runs_even_with_eager_start() {
    // asyncio's create_task raises RuntimeError on a group that is shutting down, before the
    // task exists. Here the spawn gives a task that is already cancelled: its future was dropped
    // without a step, even on a loop whose tasks start eagerly (their first step runs inside
    // the spawn), and join counts it with the siblings the failure tore down.
    for eager in [false, true] {
        let lp = evloop_tests::loop_with(
            evloop::event_loop::Builder::new()
                .virtual_clock(true)
                .eager_tasks(eager),
        );
        let log = log();
        let l = log.clone();
        let (late_state, seen, err) = run_bounded(&lp, async move {
            let mut g = TaskGroup::<(), &str>::new().unwrap();
            g.spawn_named("fails", async { Err("broken") }).unwrap();
            yield_now().await; // it has failed (with eager start, already inside its spawn)
            let ll = l.clone();
            let guard = DropLog::new("late", &l);
            let late = g
                .spawn_named("late", async move {
                    let _g = guard;
                    push(&ll, "late ran");
                    Ok(())
                })
                .expect("refused as a cancelled task, not an error");
            let late_state = late.state();
            let seen = entries(&l);
            (late_state, seen, g.join().await.unwrap_err())
        });
        assert_eq!(
            late_state,
            TaskState::Cancelled,
            "eager={eager}: cancelled before spawn returned"
        );
        assert_eq!(seen, ["drop late"], "eager={eager}: dropped without a step");
        assert_eq!(entries(&log), ["drop late"], "eager={eager}: it never ran");
        assert_eq!(describe(&err), ["fails failed: \"broken\""], "eager={eager}");
        assert_eq!(err.cancelled, 1, "eager={eager}");
    }
}

#[test]
fn group_tells_a_child_cancelled_from_outside_from_one_it_tore_down_in_both_orders() {
    // The cancel count tells them apart (asyncio's TaskGroup uses it for its owner): a child
    // whose cancel() from outside returned true is reported as cancelled even when a sibling
    // fails in the same iteration, whichever runs first; the sibling the failure tore down is
    // counted.
    for cancel_first in [true, false] {
        let lp = virtual_loop();
        let h = lp.handle();
        let (err, returned) = run_bounded(&lp, async move {
            let returned = Rc::new(std::cell::Cell::new(None));
            let target: Rc<RefCell<Option<TaskRef>>> = Rc::default();
            let schedule_cancel = || {
                let (target, returned) = (target.clone(), returned.clone());
                h.call_later(Duration::from_millis(10), move || {
                    returned.set(target.borrow().as_ref().map(TaskRef::cancel))
                })
                .unwrap();
            };
            if cancel_first {
                schedule_cancel();
            }
            let mut g = TaskGroup::<(), &str>::new().unwrap();
            let victim = g.spawn_named("victim", std::future::pending()).unwrap();
            g.spawn_named("sibling", std::future::pending()).unwrap();
            g.spawn_named("fails", async {
                sleep(Duration::from_millis(10)).await;
                Err("boom")
            })
            .unwrap();
            *target.borrow_mut() = Some(victim);
            if !cancel_first {
                yield_now().await; // the failing child's timer is armed first
                schedule_cancel();
            }
            (g.join().await.unwrap_err(), returned.get())
        });
        assert_eq!(returned, Some(true), "cancel_first={cancel_first}");
        let mut errors = describe(&err);
        errors.sort(); // in the order they finished, which is the order of the two callbacks
        assert_eq!(
            errors,
            ["fails failed: \"boom\"", "victim cancelled"],
            "cancel_first={cancel_first}"
        );
        assert_eq!(err.cancelled, 1, "cancel_first={cancel_first}: the sibling");
    }
}
