// Standalone binary: it switches the process-wide `epoll_wait` fallback on for good.
//! The `epoll_wait` fallback (for kernels without `epoll_pwait2`, or seccomp filters that refuse
//! it), forced with `force_epoll_wait_fallback(true)`.
//!
//! The switch is process-wide, so these tests have this binary to themselves; every test turns
//! it on and none turns it off.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::event_loop::EventLoop;
use evloop_syscalls::Syscall;
use evloop_syscalls::counters;
use evloop_tests::watchdog::Watchdog;
use evloop_tests::{Rng, spin_once};

#[test]
fn epoll_wait_fallback_rounds_up_and_never_fires_early() {
    evloop_syscalls::force_epoll_wait_fallback(true);
    let lp = EventLoop::new().unwrap();
    spin_once(&lp);
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));

    // One 300 us timer at a time. Phase 2 computes a timeout below 300 us; the fallback rounds
    // it UP to 1 ms, so the single epoll_wait sleeps past the deadline and the timer runs in
    // that same iteration, whose callback stops the loop: exactly one poll per round. A
    // fallback that truncated to 0 ms would spin through many zero-timeout polls instead (and
    // one that rounded to the nearest ms would still be 0 here).
    for round in 0..20 {
        let log: Rc<RefCell<Option<(Instant, Instant)>>> = Rc::new(RefCell::new(None));
        let (l, h) = (log.clone(), lp.handle());
        let t = lp
            .call_later(Duration::from_micros(300), move || {
                *l.borrow_mut() = Some((h.time(), Instant::now()));
                h.stop();
            })
            .unwrap();
        counters::reset();
        lp.run_forever().unwrap();
        let c = counters::snapshot();
        let (loop_t, wall_t) = log.borrow().expect("the timer ran");
        assert!(loop_t >= t.when(), "round {round}: early on the loop clock");
        assert!(wall_t >= t.when(), "round {round}: early on the wall clock");
        if round == 0 {
            println!("observed (fallback, one 300 us timer): {c}");
        }
        assert_eq!(c[Syscall::EpollPwait2], 0, "round {round}: forced fallback: {c}");
        assert_eq!(
            c[Syscall::EpollWait],
            1,
            "round {round}: one rounded-up epoll_wait: {c}"
        );
        assert_eq!(c.total_syscalls(), 1, "round {round}: {c}");
    }

    // 200 random sub-millisecond timers at once: none early, deadline order.
    let mut rng = Rng::xorshift64(7);
    let log: Rc<RefCell<Vec<(usize, Instant, Instant)>>> = Rc::new(RefCell::new(Vec::new()));
    let mut whens = Vec::new();
    for i in 0..200 {
        let (l, h) = (log.clone(), lp.handle());
        let d = Duration::from_nanos(rng.below(1_000_000));
        let t = lp
            .call_later(d, move || l.borrow_mut().push((i, h.time(), Instant::now())))
            .unwrap();
        whens.push(t.when());
    }
    counters::reset();
    lp.run_until_complete(evloop::time::sleep(Duration::from_millis(2)))
        .unwrap();
    let c = counters::snapshot();
    assert!(!dog.finish(), "the watchdog had to stop the loop");
    println!("observed (fallback, 200 sub-ms timers + 2 ms sleep): {c}");
    let log = log.borrow();
    assert_eq!(log.len(), 200);
    for &(i, loop_t, wall_t) in log.iter() {
        assert!(loop_t >= whens[i] && wall_t >= whens[i], "timer {i} fired early");
    }
    let mut expected: Vec<usize> = (0..200).collect();
    expected.sort_by_key(|&i| (whens[i], i));
    assert_eq!(log.iter().map(|e| e.0).collect::<Vec<_>>(), expected);
    assert!(c[Syscall::EpollWait] > 0, "{c}");
    assert_eq!(c[Syscall::EpollPwait2], 0, "{c}");
    lp.close().unwrap();
}
