//! `select!`, `join!` and `try_join!` (runtime/src/sync/macros.rs): tokio's syntax (patterns,
//! preconditions, `else`, `biased;`), the losing branches dropped before the handler runs,
//! rotating fairness, handlers that `break`/`continue`/`?`/`.await`, and join's concurrency and
//! early drops, on a virtual clock so times are exact.

use std::cell::Cell;
use std::future::{Future, pending, ready};
use std::rc::Rc;
use std::time::Duration;

use evloop::{event_loop::LoopHandle, time::sleep};
use evloop_tests::{CountPolls, DropFlag, flag, virtual_loop};

/// `run_until_complete` without the hang bound of `run_bounded`: on a virtual clock its timeout
/// would be virtual too, and fire before the long sleeps these tests race.
fn run_unbounded<F: Future + 'static>(lp: &LoopHandle, fut: F) -> F::Output
where
    F::Output: 'static,
{
    lp.run_until_complete(fut).expect("the future completed")
}

/// `v`, after `ms` milliseconds.
async fn ready_after<T>(ms: u64, v: T) -> T {
    sleep(Duration::from_millis(ms)).await;
    v
}

#[test]
fn select_runs_the_first_to_complete_and_gives_the_handler_its_value() {
    let lp = virtual_loop();
    let h = lp.handle();
    let start = h.time();
    let got = run_unbounded(&h, async {
        evloop::select! {
            v = ready_after(30, "slow") => format!("a {v}"),
            v = ready_after(10, "fast") => format!("b {v}"),
            _ = pending::<()>() => unreachable!(),
        }
    });
    assert_eq!(got, "b fast");
    assert_eq!(
        h.time() - start,
        Duration::from_millis(10),
        "it returned when the first finished"
    );
}

#[test]
fn losing_branches_are_dropped_before_the_handler_runs() {
    let lp = virtual_loop();
    let dropped = flag();
    let d = dropped.clone();
    let seen = run_unbounded(&lp.handle(), async move {
        let guard = DropFlag(d.clone());
        let loser = async move {
            let _g = guard;
            sleep(Duration::from_secs(3600)).await;
        };
        evloop::select! {
            _ = loser => false,
            _ = ready_after(1, ()) => d.get(), // already dropped here
        }
    });
    assert!(seen, "the loser was dropped before the winner's handler ran");
    assert!(dropped.get());
}

#[test]
fn a_pattern_that_does_not_match_disables_only_its_branch() {
    let lp = virtual_loop();
    let out = run_unbounded(&lp.handle(), async {
        evloop::select! {
            Some(v) = ready(None::<u32>) => v,
            Some(v) = ready_after(5, Some(7u32)) => v * 10,
        }
    });
    assert_eq!(out, 70);
}

#[test]
fn else_runs_when_every_branch_is_disabled_by_precondition_or_pattern() {
    let lp = virtual_loop();
    let polls = Rc::new(Cell::new(0));
    let p = polls.clone();
    let out = run_unbounded(&lp.handle(), async move {
        let by_precondition = evloop::select! {
            _ = CountPolls(p.clone()), if false => "polled",
            else => "else",
        };
        let by_pattern = evloop::select! {
            Ok(v) = ready(Err::<u32, &str>("no")) => v.to_string(),
            Some(v) = ready(None::<u32>) => v.to_string(),
            else => { "else".to_string() }
        };
        (by_precondition, by_pattern)
    });
    assert_eq!(out, ("else", "else".to_string()));
    assert_eq!(polls.get(), 0, "a disabled branch's future is never polled");
}

#[test]
fn every_branch_disabled_without_else_panics_with_a_message_saying_so() {
    let lp = virtual_loop();
    let r = lp.run_until_complete(async {
        evloop::select! {
            Some(v) = ready(None::<u32>) => v,
        }
    });
    let e = r.unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("every branch is disabled") && msg.contains("else"),
        "{msg}"
    );
}

#[test]
fn patterns_may_bind_mutably_and_destructure_structs_and_tuples() {
    struct Point {
        x: i32,
        y: Vec<i32>,
    }
    let lp = virtual_loop();
    let out = run_unbounded(&lp.handle(), async {
        let a = evloop::select! {
            Some(mut v) = ready(Some(vec![1])) => {
                v.push(2);
                v
            }
        };
        let b = evloop::select! {
            Point { x, y: mut ys } = ready(Point { x: 3, y: vec![4] }) => {
                ys.push(x);
                ys
            }
        };
        let c = evloop::select! {
            (mut n, [first, ..]) = ready((10, [5, 6])) => {
                n += first;
                n
            }
        };
        let d = evloop::select! {
            std::result::Result::Ok::<i32, ()>(n) = ready(Ok(8)) => n,
        };
        (a, b, c, d)
    });
    assert_eq!(out, (vec![1, 2], vec![4, 3], 15, 8));
}

#[test]
fn handlers_can_await_use_question_mark_break_and_continue() {
    let lp = virtual_loop();
    let h = lp.handle();
    let out: Result<Vec<u32>, String> = run_unbounded(&h, async {
        let mut seen = Vec::new();
        let mut i = 0u32;
        loop {
            i += 1;
            evloop::select! {
                biased;
                _ = ready(()), if i == 2 => continue,
                _ = ready(()), if i == 5 => break,
                v = ready(Ok::<u32, String>(i)) => {
                    sleep(Duration::from_millis(1)).await;
                    seen.push(v?);
                }
            }
        }
        Ok(seen)
    });
    assert_eq!(out, Ok(vec![1, 3, 4]));
}

#[test]
fn rotation_gives_every_always_ready_branch_its_turn_and_biased_does_not() {
    let lp = virtual_loop();
    let (fair, biased) = run_unbounded(&lp.handle(), async {
        let mut fair = [0u32; 3];
        let mut biased = [0u32; 3];
        for _ in 0..300 {
            evloop::select! {
                _ = ready(()) => fair[0] += 1,
                _ = ready(()) => fair[1] += 1,
                _ = ready(()) => fair[2] += 1,
            }
            evloop::select! {
                biased;
                _ = ready(()) => biased[0] += 1,
                _ = ready(()) => biased[1] += 1,
                _ = ready(()) => biased[2] += 1,
            }
        }
        (fair, biased)
    });
    assert_eq!(fair, [100, 100, 100], "the start branch rotates at every poll");
    assert_eq!(biased, [300, 0, 0], "biased polls in order");
}

#[test]
fn select_takes_into_future_values_tasks_and_promises() {
    let lp = virtual_loop();
    let h = lp.handle();
    let out = run_unbounded(&h, async move {
        let lp = evloop::event_loop::get_running_loop().unwrap();
        let p = lp.create_future::<u32>();
        let setter = p.clone();
        lp.call_later(Duration::from_millis(5), move || {
            let _ = setter.set_result(5);
        })
        .unwrap();
        let task = evloop::spawn(ready_after(50, 50u32));
        evloop::select! {
            Ok(v) = p => v,
            Ok(v) = task => v,
        }
    });
    assert_eq!(out, 5);
}

#[test]
fn select_with_many_branches_compiles_and_picks_the_ready_one() {
    let lp = virtual_loop();
    let out = run_unbounded(&lp.handle(), async {
        evloop::select! {
            v = ready_after(20, 0) => v,
            v = ready_after(19, 1) => v,
            v = ready_after(18, 2) => v,
            v = ready_after(17, 3) => v,
            v = ready_after(16, 4) => v,
            v = ready_after(15, 5) => v,
            v = ready_after(14, 6) => v,
            v = ready_after(13, 7) => v,
            v = ready_after(12, 8) => v,
            v = ready_after(11, 9) => v,
            v = ready_after(10, 10) => v,
            v = ready_after(9, 11) => v,
            v = ready_after(8, 12) => v,
            v = ready_after(7, 13) => v,
            v = ready_after(6, 14) => v,
            v = ready_after(5, 15) => v,
            v = ready_after(4, 16) => v,
            v = ready_after(3, 17) => v,
            v = ready_after(2, 18) => v,
            v = ready_after(1, 19) => v,
        }
    });
    assert_eq!(out, 19);
}

#[test]
fn join_runs_concurrently_and_returns_outputs_in_order() {
    let lp = virtual_loop();
    let h = lp.handle();
    let start = h.time();
    let out = run_unbounded(&h, async {
        evloop::join!(ready_after(30, 'a'), ready_after(10, 'b'), async { 'c' })
    });
    assert_eq!(out, ('a', 'b', 'c'));
    assert_eq!(h.time() - start, Duration::from_millis(30), "the longest, not the sum");
    let unit: () = run_unbounded(&h, async { evloop::join!() });
    assert_eq!(unit, ());
}

#[test]
fn join_drops_each_future_as_soon_as_it_completes() {
    let lp = virtual_loop();
    let early = flag();
    let e = early.clone();
    let seen = run_unbounded(&lp.handle(), async move {
        let guard = DropFlag(e.clone());
        let quick = async move {
            let _g = guard;
            sleep(Duration::from_millis(1)).await;
        };
        let watcher = async {
            sleep(Duration::from_millis(10)).await;
            e.get()
        };
        evloop::join!(quick, watcher).1
    });
    assert!(seen, "the finished future was dropped while the other still ran");
}

#[test]
fn try_join_returns_the_first_error_at_once_and_cancels_the_rest() {
    let lp = virtual_loop();
    let h = lp.handle();
    let cancelled = flag();
    let c = cancelled.clone();
    let start = h.time();
    let out = run_unbounded(&h, async move {
        let guard = DropFlag(c);
        let slow = async move {
            let _g = guard;
            sleep(Duration::from_secs(3600)).await;
            Ok::<u32, String>(1)
        };
        let fails = async {
            sleep(Duration::from_millis(5)).await;
            Err::<u32, String>("boom".into())
        };
        evloop::try_join!(slow, fails, async { Ok(3) })
    });
    assert_eq!(out, Err("boom".to_string()));
    assert!(cancelled.get(), "the unfinished future was dropped");
    assert_eq!(
        h.time() - start,
        Duration::from_millis(5),
        "no waiting for the hour-long one"
    );
    let ok = run_unbounded(&h, async {
        evloop::try_join!(ready_after(2, Ok::<_, ()>(1)), async { Ok(2) })
    });
    assert_eq!(ok, Ok((1, 2)));
}
