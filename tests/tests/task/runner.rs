//! `Runner` (asyncio.Runner, runtime/src/task/runner.rs): several `run` calls on one loop, the
//! loop's state carried between them, `close` cancelling what is left and closing the loop;
//! plus the getters asyncio users look for: `Promise::event_loop` and
//! `LoopHandle::exception_handler`.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use evloop::{
    event_loop::{Builder, LoopErrorKind},
    task::Runner,
    time::sleep,
};
use evloop_tests::{DropFlag, flag};

#[test]
fn several_runs_share_one_loop_and_its_tasks() {
    let runner = Builder::new().virtual_clock(true).runner().unwrap();
    let lp = runner.event_loop().unwrap();
    let start = lp.time();
    let ticks = Rc::new(Cell::new(0u32));
    let t = ticks.clone();
    let first = runner
        .run(async move {
            evloop::spawn(async move {
                loop {
                    sleep(Duration::from_millis(10)).await;
                    t.set(t.get() + 1);
                }
            });
            evloop::event_loop::get_running_loop().unwrap()
        })
        .unwrap();
    assert!(first.same_loop(&lp));
    assert_eq!(ticks.get(), 0);
    let second = runner
        .run(async {
            sleep(Duration::from_millis(55)).await;
            evloop::event_loop::get_running_loop().unwrap()
        })
        .unwrap();
    assert!(second.same_loop(&lp), "the same loop ran both");
    assert_eq!(ticks.get(), 5, "the first run's task ran during the second");
    assert_eq!(lp.time() - start, Duration::from_millis(55), "loop time carried over");
}

#[test]
fn close_cancels_leftover_tasks_closes_the_loop_and_is_idempotent() {
    let mut runner = Runner::new().unwrap();
    let dropped = flag();
    let d = dropped.clone();
    runner
        .run(async move {
            let guard = DropFlag(d);
            evloop::spawn(async move {
                let _g = guard;
                sleep(Duration::from_secs(3600)).await;
            });
        })
        .unwrap();
    let lp = runner.event_loop().unwrap();
    assert!(!dropped.get());
    runner.close().unwrap();
    assert!(dropped.get(), "the leftover task was cancelled");
    assert!(lp.is_closed() && runner.is_closed());
    runner.close().unwrap();
    let e = runner.run(async {}).unwrap_err();
    assert_eq!(e.as_loop_error().map(|e| e.kind()), Some(LoopErrorKind::Closed));
    assert!(e.to_string().contains("Runner::run"), "{e}");
    assert!(runner.event_loop().is_err());
}

#[test]
fn dropping_a_runner_closes_it() {
    let dropped = flag();
    let d = dropped.clone();
    let lp = {
        let runner = Runner::new().unwrap();
        runner
            .run(async move {
                let guard = DropFlag(d);
                evloop::spawn(async move {
                    let _g = guard;
                    std::future::pending::<()>().await;
                });
            })
            .unwrap();
        runner.event_loop().unwrap()
    };
    assert!(dropped.get() && lp.is_closed());
}

#[test]
fn a_failed_run_leaves_the_runner_usable_and_a_nested_run_is_an_error() {
    let runner = Rc::new(Runner::new().unwrap());
    let e = runner.run(async { panic!("first run fails") }).unwrap_err();
    assert!(e.as_task_error().is_some_and(|t| t.is_panic()), "{e}");
    assert_eq!(runner.run(async { 2 }).unwrap(), 2);
    let inner = runner.clone();
    let nested = runner.run(async move { inner.run(async {}).is_err() }).unwrap();
    assert!(nested, "run from inside run is refused, not a hang");
}

#[test]
fn a_promise_knows_its_loop_while_the_loop_lives() {
    let runner = Runner::new().unwrap();
    let lp = runner.event_loop().unwrap();
    let p = lp.create_future::<u8>();
    assert!(p.event_loop().is_some_and(|l| l.same_loop(&lp)));
    drop(lp);
    drop(runner);
    assert!(p.event_loop().is_none(), "a promise does not keep its loop alive");
}

#[test]
fn get_exception_handler_returns_the_installed_handler_for_chaining() {
    let runner = Runner::new().unwrap();
    let lp = runner.event_loop().unwrap();
    assert!(lp.exception_handler().is_none(), "the default handler is in use");
    let first_calls = Rc::new(Cell::new(0));
    let f = first_calls.clone();
    lp.set_exception_handler(Some(Box::new(move |_, _| f.set(f.get() + 1))));
    let first = lp.exception_handler().expect("the installed handler");
    let second_calls = Rc::new(Cell::new(0));
    let s = second_calls.clone();
    lp.set_exception_handler(Some(Box::new(move |lp, ctx| {
        s.set(s.get() + 1);
        first(lp, ctx);
    })));
    lp.call_soon(|| panic!("a failing callback")).unwrap();
    runner.run(evloop::task::yield_now()).unwrap();
    assert_eq!(
        (first_calls.get(), second_calls.get()),
        (1, 1),
        "the new handler chained to the old"
    );
    lp.set_exception_handler(None);
    assert!(lp.exception_handler().is_none());
}
