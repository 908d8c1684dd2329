//! asyncio 3.11's timeout object (runtime/src/task/timeouts.rs): `Timeout::after/at/never` bound
//! a future with `run`; the handle's `when()`, `reschedule()` and `expired()`; nested timeouts on
//! the same deadline report it at the outer one. Virtual clock: every time is exact.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use evloop::time::{Timeout, sleep};
use evloop_tests::{DropFlag, flag, virtual_loop};

const HOUR: Duration = Duration::from_secs(3600);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn an_expired_timeout_drops_the_future_and_reports_elapsed_at_the_deadline() {
    let lp = virtual_loop();
    let h = lp.handle();
    let start = h.time();
    let dropped = flag();
    let d = dropped.clone();
    let (result, expired, when) = lp
        .run_until_complete(async move {
            let t = Timeout::after(ms(10));
            let cm = t.handle();
            let guard = DropFlag(d);
            let r = t
                .run(async move {
                    let _g = guard;
                    sleep(HOUR).await;
                })
                .await;
            (r, cm.expired(), cm.when())
        })
        .unwrap();
    let e = result.unwrap_err();
    assert_eq!(e.after(), ms(10));
    assert!(expired && dropped.get());
    assert_eq!(when, Some(start + ms(10)));
    assert_eq!(h.time() - start, ms(10), "reported exactly at the deadline");
}

#[test]
fn a_future_that_finishes_in_time_wins_and_the_timeout_is_finished() {
    let lp = virtual_loop();
    let out = lp
        .run_until_complete(async {
            let t = Timeout::after(ms(10));
            let cm = t.handle();
            let r = t.run(async { 5 }).await;
            // A deadline in the past still lets a ready future through.
            let past = Timeout::at(Some(evloop::event_loop::get_running_loop().unwrap().time() - ms(1)));
            let r2 = past.run(async { 6 }).await;
            let e = cm.reschedule(None).unwrap_err();
            (r, r2, cm.expired(), e.to_string())
        })
        .unwrap();
    assert_eq!((out.0, out.1, out.2), (Ok(5), Ok(6), false));
    assert!(out.3.contains("reschedule") && out.3.contains("finished"), "{}", out.3);
}

#[test]
fn reschedule_from_inside_moves_the_deadline_later() {
    let lp = virtual_loop();
    let h = lp.handle();
    let start = h.time();
    let r = lp
        .run_until_complete(async move {
            let lp = evloop::event_loop::get_running_loop().unwrap();
            let t = Timeout::after(ms(10));
            let cm = t.handle();
            t.run(async move {
                sleep(ms(5)).await;
                cm.reschedule(Some(lp.time() + ms(100))).unwrap();
                sleep(ms(50)).await; // past the first deadline, within the new one
                "finished"
            })
            .await
        })
        .unwrap();
    assert_eq!(r, Ok("finished"));
    assert_eq!(h.time() - start, ms(55));
}

#[test]
fn reschedule_from_another_task_wakes_the_run_and_can_make_it_expire_sooner() {
    let lp = virtual_loop();
    let h = lp.handle();
    let start = h.time();
    let (r, cm_expired) = lp
        .run_until_complete(async move {
            let lp = evloop::event_loop::get_running_loop().unwrap();
            let t = Timeout::never();
            let cm = t.handle();
            let other = cm.clone();
            evloop::spawn(async move {
                sleep(ms(20)).await;
                other.reschedule(Some(lp.time() + ms(5))).unwrap();
            });
            (t.run(sleep(HOUR)).await, cm.expired())
        })
        .unwrap();
    assert_eq!(r.unwrap_err().after(), ms(25));
    assert!(cm_expired);
    assert_eq!(h.time() - start, ms(25), "expired 5 ms after the reschedule at 20 ms");
}

#[test]
fn reschedule_to_none_removes_the_deadline() {
    let lp = virtual_loop();
    let r = lp
        .run_until_complete(async {
            let t = Timeout::after(ms(10));
            let cm = t.handle();
            t.run(async move {
                cm.reschedule(None).unwrap();
                assert_eq!(cm.when(), None);
                sleep(ms(500)).await;
                7
            })
            .await
        })
        .unwrap();
    assert_eq!(r, Ok(7));
}

#[test]
fn nested_timeouts_on_the_same_deadline_report_it_at_the_outer_one() {
    let lp = virtual_loop();
    let inner_returned = Rc::new(Cell::new(false));
    let ir = inner_returned.clone();
    let (outer_result, outer_expired, inner_expired) = lp
        .run_until_complete(async move {
            let lp = evloop::event_loop::get_running_loop().unwrap();
            let deadline = lp.time() + ms(10);
            let outer = Timeout::at(Some(deadline));
            let inner = Timeout::at(Some(deadline));
            let (oc, ic) = (outer.handle(), inner.handle());
            let r = outer
                .run(async move {
                    let r = inner.run(sleep(HOUR)).await;
                    ir.set(true); // never: the outer one ended it
                    r
                })
                .await;
            (r, oc.expired(), ic.expired())
        })
        .unwrap();
    assert!(outer_result.is_err(), "the outer timeout reports: {outer_result:?}");
    assert!(
        !inner_returned.get(),
        "the inner timeout did not return Elapsed to its caller"
    );
    assert!(outer_expired && inner_expired, "both expired");
}

#[test]
fn an_inner_timeout_with_an_earlier_deadline_reports_to_the_outer_body() {
    let lp = virtual_loop();
    let (outer_result, outer_expired, inner_expired) = lp
        .run_until_complete(async {
            let outer = Timeout::after(ms(100));
            let inner = Timeout::after(ms(10));
            let (oc, ic) = (outer.handle(), inner.handle());
            let r = outer
                .run(async move {
                    let inner_result = inner.run(sleep(HOUR)).await;
                    assert!(inner_result.is_err());
                    "handled the inner timeout"
                })
                .await;
            (r, oc.expired(), ic.expired())
        })
        .unwrap();
    assert_eq!(outer_result, Ok("handled the inner timeout"));
    assert!(!outer_expired && inner_expired);
}

#[test]
fn an_outer_timeout_with_an_earlier_deadline_reports_and_the_inner_did_not_expire() {
    let lp = virtual_loop();
    let (outer_result, inner_expired) = lp
        .run_until_complete(async {
            let outer = Timeout::after(ms(10));
            let inner = Timeout::after(ms(100));
            let ic = inner.handle();
            (outer.run(inner.run(sleep(HOUR))).await, ic.expired())
        })
        .unwrap();
    assert_eq!(outer_result.unwrap_err().after(), ms(10));
    assert!(!inner_expired);
}

#[test]
fn after_made_outside_a_loop_counts_from_the_first_poll() {
    let t = Timeout::after(ms(10));
    assert_eq!(t.when(), None, "no loop time to count from yet");
    let cm = t.handle();
    let lp = virtual_loop();
    let h = lp.handle();
    let start = h.time();
    let r = lp.run_until_complete(t.run(sleep(HOUR))).unwrap();
    assert!(r.is_err());
    assert_eq!(cm.when(), Some(start + ms(10)));
    let e = cm.reschedule(None).unwrap_err();
    assert!(e.to_string().contains("expired"), "{e}");
}

#[test]
fn the_plain_timeout_function_still_works_beside_it() {
    let lp = virtual_loop();
    let r = lp
        .run_until_complete(async {
            (
                evloop::time::timeout(ms(5), sleep(HOUR)).await.is_err(),
                evloop::time::timeout(ms(5), async { 1 }).await,
            )
        })
        .unwrap();
    assert_eq!(r, (true, Ok(1)));
}

/// Polls `fut` once with a no-op waker, on a thread where no loop runs; the panic message if it
/// panicked.
fn poll_once_without_a_loop<F: std::future::Future>(fut: F) -> Option<String> {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(&mut cx)));
    r.err().map(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

#[test]
fn run_polled_with_no_running_loop_fails_at_once_like_sleep() {
    // asyncio: RuntimeError (no running loop / not inside a task); evloop's sleep panics
    // with a message saying so. Timeout::run did neither: pending forever, even with a
    // deadline in the past.
    let sleep_msg = poll_once_without_a_loop(sleep(ms(1))).expect("sleep panics without a loop");
    assert!(sleep_msg.contains("outside a running evloop event loop"), "{sleep_msg}");
    let past = Timeout::at(Some(std::time::Instant::now() - ms(1)));
    for (what, t) in [
        ("at(past)", past),
        ("after", Timeout::after(ms(5))),
        ("never", Timeout::never()),
    ] {
        let msg = poll_once_without_a_loop(t.run(std::future::pending::<()>()))
            .unwrap_or_else(|| panic!("Timeout::{what}: run stayed pending with no loop"));
        assert!(
            msg.contains("Timeout::run") && msg.contains("outside a running evloop event loop"),
            "Timeout::{what}: {msg}"
        );
    }
}
