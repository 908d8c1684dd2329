//! Loop options (`docs/design.md`, "Time" and "Transparency"): the virtual clock, trace mode and
//! debug mode, seen from the loop's side.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::{
    event_loop::{Builder, EventLoop, LoopHandle},
    task::Promise,
    time::sleep,
};
// `evloop::test` (the attribute) came in with the glob: the built-in `#[test]` is meant here.
use evloop_tests::virtual_loop;
use std::prelude::v1::test;

// ---------------------------------------------------------------------------------------------
// Helpers (this file only).

type Lines = Rc<RefCell<Vec<String>>>;

/// A loop in trace mode whose trace lines are collected.
fn traced_loop() -> (EventLoop, Lines) {
    let lines: Lines = Rc::new(RefCell::new(Vec::new()));
    let sink = lines.clone();
    let lp = Builder::new()
        .trace(true)
        .trace_sink(move |l: &str| sink.borrow_mut().push(l.to_string()))
        .build()
        .unwrap();
    (lp, lines)
}

fn dump(lines: &Lines) -> String {
    lines.borrow().join("\n")
}

// ---------------------------------------------------------------------------------------------
// Virtual clock.

#[test]
fn virtual_clock_runs_an_hour_of_timers_in_order_without_waiting_an_hour() {
    let real_start = Instant::now();
    let lp = virtual_loop();
    let t0 = lp.time();
    // (what ran, loop time when it ran, its deadline)
    let log: Rc<RefCell<Vec<(String, Instant, Instant)>>> = Rc::new(RefCell::new(Vec::new()));

    // Scheduled in reverse so the order comes from the deadlines, not from insertion.
    for i in (1..=3600u64).rev() {
        let when = t0 + Duration::from_secs(i);
        let (h, l) = (lp.handle(), log.clone());
        let th = lp
            .call_later(Duration::from_secs(i), move || {
                l.borrow_mut().push((format!("t{i}"), h.time(), when));
            })
            .unwrap();
        assert_eq!(th.when(), when);
    }
    // A few sleeping tasks, at times between the timers.
    for (name, ms) in [
        ("sleeper-a", 1_500u64),
        ("sleeper-b", 1_800_250),
        ("sleeper-c", 3_599_999),
    ] {
        let (h, l) = (lp.handle(), log.clone());
        lp.create_task(async move {
            let start = h.time();
            sleep(Duration::from_millis(ms)).await;
            l.borrow_mut()
                .push((name.to_string(), h.time(), start + Duration::from_millis(ms)));
        })
        .unwrap()
        .detach();
    }

    lp.run_until_complete(sleep(Duration::from_secs(3601))).unwrap();
    let log = log.borrow();
    assert_eq!(log.len(), 3603);
    for (what, ran_at, due) in log.iter() {
        assert_eq!(
            ran_at, due,
            "{what} ran at {ran_at:?}, due {due:?}: virtual time must land exactly"
        );
    }
    let times: Vec<Instant> = log.iter().map(|(_, at, _)| *at).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "ran out of order");
    let timers: Vec<&str> = log
        .iter()
        .map(|(w, _, _)| w.as_str())
        .filter(|w| w.starts_with('t'))
        .collect();
    let expected: Vec<String> = (1..=3600).map(|i| format!("t{i}")).collect();
    assert_eq!(timers, expected.iter().map(String::as_str).collect::<Vec<_>>());
    let pos = |n: &str| log.iter().position(|(w, _, _)| w == n).unwrap();
    assert!(pos("t1") < pos("sleeper-a") && pos("sleeper-a") < pos("t2"));
    assert!(pos("t1800") < pos("sleeper-b") && pos("sleeper-b") < pos("t1801"));
    assert!(pos("t3599") < pos("sleeper-c") && pos("sleeper-c") < pos("t3600"));
    assert_eq!(lp.time(), t0 + Duration::from_secs(3601));
    assert!(
        real_start.elapsed() < Duration::from_secs(10),
        "an hour of virtual time took {:?} of real time",
        real_start.elapsed()
    );
}

#[test]
fn virtual_time_moves_only_when_the_loop_is_idle() {
    let lp = virtual_loop();
    let t0 = lp.time();
    let seen: Rc<RefCell<Vec<Duration>>> = Rc::new(RefCell::new(Vec::new()));
    // A chain of 50 call_soon callbacks keeps the loop busy: the clock must not move while it
    // runs, even though a timer is due "soon".
    fn chain(h: LoopHandle, t0: Instant, seen: Rc<RefCell<Vec<Duration>>>, left: u32) {
        seen.borrow_mut().push(h.time() - t0);
        if left > 0 {
            let h2 = h.clone();
            h.call_soon(move || chain(h2, t0, seen, left - 1)).unwrap();
        }
    }
    let (h, s) = (lp.handle(), seen.clone());
    lp.call_soon(move || chain(h, t0, s, 49)).unwrap();
    let fired_at = Rc::new(Cell::new(None));
    let (h, f, s) = (lp.handle(), fired_at.clone(), seen.clone());
    lp.call_later(Duration::from_millis(10), move || {
        f.set(Some((h.time() - t0, s.borrow().len())));
        h.stop();
    })
    .unwrap();
    lp.run_forever().unwrap();
    assert!(
        seen.borrow().iter().all(|d| d.is_zero()),
        "virtual time moved while busy"
    );
    assert_eq!(
        fired_at.get(),
        Some((Duration::from_millis(10), 50)),
        "the timer fires at its deadline, after the busy chain"
    );
}

#[test]
fn virtual_clock_does_not_move_without_timers() {
    let lp = virtual_loop();
    let t0 = lp.time();
    for _ in 0..5 {
        lp.call_soon(|| {}).unwrap();
        lp.run_once().unwrap();
    }
    assert_eq!(lp.time(), t0);
    // And real time passing does not move it either.
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(lp.time(), t0);
}

// ---------------------------------------------------------------------------------------------
// Trace mode.

#[test]
fn trace_mode_prints_a_line_per_iteration() {
    let (lp, lines) = traced_loop();
    lp.call_soon(|| {}).unwrap();
    lp.call_later(Duration::from_millis(1), || {}).unwrap();
    let h = lp.handle();
    lp.call_later(Duration::from_millis(2), move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    // One iteration or more: a slow first iteration (under valgrind) finds both timers due.
    let n = lp.stats().iterations;
    assert!(n >= 1);
    let all = lines.borrow();
    for i in 1..=n {
        let prefix = format!("[iter {i}] poll timeout=");
        let line = all
            .iter()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no line for iteration {i}:\n{}", all.join("\n")));
        assert!(line.contains(" expired "), "{line}");
        assert!(line.contains(" run "), "{line}");
    }
    let count = all
        .iter()
        .filter(|l| l.starts_with("[iter ") && l.contains("poll timeout="))
        .count() as u64;
    assert_eq!(count, n, "one iteration line per iteration:\n{}", all.join("\n"));
    // The iteration lines account for both timers (in one iteration or two: timing decides).
    let expired: u64 = all
        .iter()
        .filter(|l| l.starts_with("[iter "))
        .filter_map(|l| l.split(" expired ").nth(1)?.split(' ').next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(expired, 2, "{}", all.join("\n"));
}

#[test]
fn trace_mode_reports_dropped_cancelled_timers_and_the_poll_timeout() {
    let (lp, lines) = traced_loop();
    let th = lp.call_later(Duration::from_secs(60), || {}).unwrap();
    th.cancel();
    lp.call_soon(|| {}).unwrap();
    lp.run_once().unwrap();
    let first = lines
        .borrow()
        .iter()
        .find(|l| l.starts_with("[iter 1]"))
        .cloned()
        .unwrap_or_else(|| panic!("{}", dump(&lines)));
    assert!(first.contains("dropped 1 cancelled timer"), "{first}");
    assert!(first.contains("poll timeout=0ns"), "{first}");
}

#[test]
fn trace_mode_prints_task_steps_and_what_they_await() {
    let (lp, lines) = traced_loop();
    let p: Promise<u32> = lp.create_future();
    assert_eq!(p.id(), 1);
    let p2 = p.clone();
    lp.call_later(Duration::from_millis(1), move || p2.set_result(5).unwrap())
        .unwrap();
    let out = lp.run_until_complete(async move { p.await.unwrap() }).unwrap();
    assert_eq!(out, 5);
    let all = dump(&lines);
    let has = |needle: &str| lines.borrow().iter().any(|l| l.trim() == needle);
    assert!(has("Task-1 step"), "no `Task-1 step` line:\n{all}");
    assert!(
        has("Task-1 -> pending on Promise#1"),
        "no `Task-1 -> pending on Promise#1` line:\n{all}"
    );
    // It stepped twice: once to suspend, once after the promise resolved.
    let steps = lines.borrow().iter().filter(|l| l.trim() == "Task-1 step").count();
    assert_eq!(steps, 2, "{all}");
}

#[test]
fn trace_mode_prints_each_call_soon_run_with_its_source_location() {
    let (lp, lines) = traced_loop();
    let line = line!() + 1;
    lp.call_soon(|| {}).unwrap();
    lp.run_once().unwrap();
    let location = format!("{}:{line}:", file!());
    let all = dump(&lines);
    let run = lines
        .borrow()
        .iter()
        .find(|l| l.trim_start().starts_with("run call_soon"))
        .cloned()
        .unwrap_or_else(|| panic!("no `run call_soon` line:\n{all}"));
    assert!(run.contains(&location), "`{run}` does not name {location}");
}

#[test]
fn trace_mode_off_prints_nothing_to_the_sink() {
    let lines: Lines = Rc::new(RefCell::new(Vec::new()));
    let sink = lines.clone();
    let lp = Builder::new()
        .trace(false)
        .trace_sink(move |l: &str| sink.borrow_mut().push(l.to_string()))
        .build()
        .unwrap();
    lp.run_until_complete(async { sleep(Duration::from_millis(1)).await })
        .unwrap();
    assert!(lines.borrow().is_empty(), "{}", dump(&lines));
}

#[test]
fn a_trace_sink_that_uses_the_loop_does_not_break_it() {
    // The sink runs inside loop phases: it must be able to read the loop's state.
    let seen = Rc::new(Cell::new(0u32));
    let handle_slot: Rc<RefCell<Option<LoopHandle>>> = Rc::new(RefCell::new(None));
    let (s, slot) = (seen.clone(), handle_slot.clone());
    let lp = Builder::new()
        .trace(true)
        .trace_sink(move |_l: &str| {
            if let Some(h) = slot.borrow().as_ref() {
                let _ = h.is_running();
                let _ = h.time();
                s.set(s.get() + 1);
            }
        })
        .build()
        .unwrap();
    *handle_slot.borrow_mut() = Some(lp.handle());
    assert_eq!(lp.run_until_complete(async { 1 }).unwrap(), 1);
    assert!(seen.get() > 0);
    handle_slot.borrow_mut().take(); // break the cycle
}

// ---------------------------------------------------------------------------------------------
// Debug mode.

#[test]
fn debug_mode_with_a_slow_callback_keeps_the_loop_running() {
    let lp = Builder::new()
        .debug(true)
        .slow_callback_duration(Duration::from_millis(1))
        .build()
        .unwrap();
    assert!(lp.debug());
    let log = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    lp.call_soon(move || {
        std::thread::sleep(Duration::from_millis(5)); // over the threshold: a warning on stderr
        l.borrow_mut().push("slow");
    })
    .unwrap();
    let l = log.clone();
    lp.call_soon(move || l.borrow_mut().push("next")).unwrap();
    lp.run_once().unwrap();
    assert_eq!(*log.borrow(), vec!["slow", "next"]);
    // A slow task step, too.
    let out = lp
        .run_until_complete(async {
            std::thread::sleep(Duration::from_millis(5));
            sleep(Duration::from_millis(1)).await;
            "task done"
        })
        .unwrap();
    assert_eq!(out, "task done");
}

#[test]
fn set_debug_toggles_debug_mode() {
    let lp = Builder::new().debug(false).build().unwrap();
    assert!(!lp.debug());
    lp.set_debug(true);
    assert!(lp.debug());
    lp.call_soon(|| std::thread::sleep(Duration::from_millis(2))).unwrap();
    lp.run_once().unwrap();
    lp.set_debug(false);
    assert!(!lp.debug());
    assert!(format!("{:?}", lp.handle()).contains("debug=false"));
}

#[test]
fn debug_and_trace_together_do_not_change_behaviour() {
    let (lp, lines) = traced_loop();
    lp.set_debug(true);
    let log = Rc::new(RefCell::new(Vec::new()));
    // Deadlines from one reading of the clock, so that their order does not depend on how fast
    // the timers are scheduled.
    let t0 = lp.time();
    for i in 0..5 {
        let l = log.clone();
        lp.call_at(t0 + Duration::from_micros(200 * (5 - i)), move || {
            l.borrow_mut().push(i)
        })
        .unwrap();
    }
    let h = lp.handle();
    lp.call_later(Duration::from_millis(3), move || h.stop()).unwrap();
    lp.run_forever().unwrap();
    assert_eq!(*log.borrow(), vec![4, 3, 2, 1, 0]);
    assert!(!lines.borrow().is_empty());
}
