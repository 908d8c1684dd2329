//! Other threads waking a loop that runs on the simulated kernel: `call_soon_threadsafe`, a
//! remote `stop`, and a `Waker` woken from another thread. With every thread on the kernel,
//! the order in which their wake-ups arrive is the seed's choice: the same for a seed, varied
//! across seeds.
#![cfg(feature = "simulation")]

use crate::support as sim_support;

use std::collections::BTreeSet;
use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use evloop_syscalls::sim::{self, Config};
use sim_support::on_kernel;

/// Three threads each schedule a callback after the same simulated millisecond.
fn arrival_order(seed: u64) -> (Vec<usize>, String) {
    let (order, kernel) = on_kernel(seed, Config::default(), |k| {
        let order = Arc::new(Mutex::new(Vec::new()));
        let o = order.clone();
        let k = k.clone();
        evloop::run(async move {
            let lp = evloop::event_loop::get_running_loop().unwrap();
            let threads: Vec<_> = (0..3)
                .map(|i| {
                    let remote = lp.remote();
                    let o = o.clone();
                    k.spawn(move || {
                        sim::sleep(Duration::from_millis(1));
                        remote.call_soon_threadsafe(move || o.lock().unwrap().push(i)).unwrap();
                    })
                })
                .collect();
            while o.lock().unwrap().len() < 3 {
                evloop::time::sleep(Duration::from_micros(100)).await;
            }
            for t in threads {
                t.join().unwrap();
            }
        })
        .unwrap();
        order.lock().unwrap().clone()
    });
    (order, kernel.trace())
}

#[test]
fn wake_ups_arrive_in_the_seeds_order() {
    let (a, trace_a) = arrival_order(1);
    let (b, trace_b) = arrival_order(1);
    assert_eq!(a, b);
    assert!(trace_a == trace_b, "the same seed took another path");
    let orders: BTreeSet<Vec<usize>> = (0..30).map(|s| arrival_order(s).0).collect();
    assert!(orders.len() >= 3, "only {orders:?} in 30 seeds");
}

#[test]
fn a_simulated_thread_stops_the_loop() {
    let (stopped_at, _) = on_kernel(2, Config::default(), |k| {
        let lp = evloop::event_loop::EventLoop::new().unwrap();
        let remote = lp.remote();
        let t = k.spawn(move || {
            sim::sleep(Duration::from_secs(30));
            remote.stop().unwrap();
        });
        let start = lp.time();
        lp.run_forever().unwrap();
        t.join().unwrap();
        lp.time() - start
    });
    assert!(stopped_at >= Duration::from_secs(30), "{stopped_at:?}");
}

#[test]
fn a_waker_woken_from_another_thread() {
    let (polls, _) = on_kernel(3, Config::default(), |k| {
        let k = k.clone();
        evloop::run(async move {
            let slot: Arc<Mutex<(bool, Option<std::task::Waker>)>> = Arc::new(Mutex::new((false, None)));
            let s = slot.clone();
            let t = k.spawn(move || {
                sim::sleep(Duration::from_millis(50));
                let waker = {
                    let mut g = s.lock().unwrap();
                    g.0 = true;
                    g.1.take()
                };
                if let Some(w) = waker {
                    w.wake();
                }
            });
            let mut polls = 0;
            poll_fn(|cx| {
                polls += 1;
                let mut g = slot.lock().unwrap();
                if g.0 {
                    Poll::Ready(())
                } else {
                    g.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            })
            .await;
            t.join().unwrap();
            polls
        })
        .unwrap()
    });
    assert_eq!(polls, 2, "polled once, then once after the wake-up");
}
