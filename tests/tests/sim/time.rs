//! Timers on the simulated kernel's clock: the loop runs on the real clock path
//! (`clock_gettime`, `epoll_pwait2` timeouts), which the simulation answers, so an hour of
//! timers takes no wall time, and no timer fires early however late the seed wakes a poll.
#![cfg(feature = "simulation")]

use crate::support as sim_support;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use evloop::sys::sim::Config;
use sim_support::on_kernel;

#[test]
fn an_hour_of_timers_takes_no_wall_time() {
    let (fired, kernel) = on_kernel(1, Config::default(), |_| {
        let fired = Rc::new(RefCell::new(Vec::new()));
        let f = fired.clone();
        evloop::run(async move {
            let lp = evloop::event_loop::get_running_loop().unwrap();
            let start = lp.time();
            // One timer per simulated second for an hour, scheduled out of order.
            for i in (0..3600u64).rev() {
                let f = f.clone();
                let lp2 = lp.clone();
                lp.call_later(Duration::from_secs(i + 1), move || {
                    f.borrow_mut().push((i, lp2.time() - start));
                })
                .unwrap();
            }
            evloop::time::sleep(Duration::from_secs(3601)).await;
        })
        .unwrap();
        fired.borrow().clone()
    });
    assert_eq!(fired.len(), 3600);
    for (n, (i, at)) in fired.iter().enumerate() {
        assert_eq!(*i, n as u64, "timers ran out of order");
        assert!(*at >= Duration::from_secs(i + 1), "timer {i} fired early, at {at:?}");
    }
    assert!(kernel.elapsed() >= Duration::from_secs(3601));
}

#[test]
fn no_sleep_ends_early_however_late_polls_wake() {
    let cfg = Config::default().timer_slack(Duration::from_millis(5));
    for seed in 0..10 {
        let (lateness, _) = on_kernel(seed, cfg.clone(), |_| {
            evloop::run(async {
                let lp = evloop::event_loop::get_running_loop().unwrap();
                let mut lateness = Vec::new();
                for ms in [1u64, 7, 30, 250, 1000] {
                    let before = lp.time();
                    evloop::time::sleep(Duration::from_millis(ms)).await;
                    lateness.push((lp.time() - before).checked_sub(Duration::from_millis(ms)));
                }
                let t = evloop::time::timeout(Duration::from_millis(20), std::future::pending::<()>()).await;
                assert!(t.is_err());
                lateness
            })
            .unwrap()
        });
        for late in lateness {
            let late = late.expect("a sleep ended early");
            assert!(late <= Duration::from_millis(6), "seed {seed}: {late:?} late");
        }
    }
}
