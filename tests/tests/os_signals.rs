// Standalone binary: it changes process-wide signal dispositions.
//! Signals on the loop: `add_signal_handler` / `remove_signal_handler`, `signal::recv`,
//! `ctrl_c`. Signal dispositions are process-wide, so every test takes one lock
//! (`serial()`).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use evloop::event_loop::{EventLoop, LoopHandle};
use evloop::signal::{self, Signal};
use evloop_syscalls::{self as sys, Disposition};
use evloop_tests::{run_bounded, serial, watchdog::Watchdog};

fn disposition(sig: Signal) -> Disposition {
    sys::signal_disposition(sig).unwrap()
}

#[test]
fn a_signal_handler_runs_on_the_loop_thread() {
    let _s = serial();
    let lp = EventLoop::new().unwrap();
    let ran_on = Rc::new(Cell::new(None));
    let r = ran_on.clone();
    let h = lp.handle();
    lp.add_signal_handler(Signal::USR1, move || {
        r.set(Some(thread::current().id()));
        h.stop();
    })
    .unwrap();
    sys::raise_in_process(Signal::USR1).unwrap();
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));
    lp.run_forever().unwrap();
    assert!(!dog.finish(), "the signal never reached the loop");
    assert_eq!(ran_on.get(), Some(thread::current().id()));
    assert!(lp.remove_signal_handler(Signal::USR1));
}

#[test]
fn kill_from_another_thread_wakes_a_loop_blocked_in_poll() {
    let _s = serial();
    let lp = EventLoop::new().unwrap();
    let hits = Rc::new(Cell::new(0));
    let (c, h) = (hits.clone(), lp.handle());
    lp.add_signal_handler(Signal::USR2, move || {
        c.set(c.get() + 1);
        h.stop();
    })
    .unwrap();
    let pid = sys::getpid();
    let killer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        sys::kill(pid, Signal::USR2.raw()).unwrap();
    });
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));
    lp.run_forever().unwrap(); // nothing else to do: blocks in epoll_pwait2 with no timeout
    killer.join().unwrap();
    assert!(!dog.finish(), "the loop was not woken by the signal");
    assert_eq!(hits.get(), 1);
    lp.remove_signal_handler(Signal::USR2);
}

#[test]
fn removing_the_handler_restores_the_previous_disposition() {
    let _s = serial();
    let lp = EventLoop::new().unwrap();
    let sig = Signal::HUP;
    let before = disposition(sig);
    lp.add_signal_handler(sig, || {}).unwrap();
    assert_eq!(disposition(sig), Disposition::Handler);
    assert!(lp.remove_signal_handler(sig));
    assert_eq!(disposition(sig), before);
    assert!(!lp.remove_signal_handler(sig), "nothing left to remove");
}

#[test]
fn closing_the_loop_restores_every_disposition() {
    let _s = serial();
    let sig = Signal::WINCH;
    let before = disposition(sig);
    let lp = EventLoop::new().unwrap();
    lp.add_signal_handler(sig, || {}).unwrap();
    assert_eq!(disposition(sig), Disposition::Handler);
    lp.close().unwrap();
    assert_eq!(disposition(sig), before);
    assert!(lp.add_signal_handler(sig, || {}).is_err(), "a closed loop refuses");
}

#[test]
fn invalid_signal_numbers_and_sigkill_sigstop_are_errors_naming_the_signal() {
    let _s = serial();
    let lp = EventLoop::new().unwrap();
    // Bad numbers never become a `Signal`: the typed API cannot be handed one.
    for bad in [0, -1, 9, 19, 100] {
        let err = Signal::new(bad).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{bad}: {err}");
        let text = err.to_string();
        assert!(text.contains(&bad.to_string()) || text.contains("SIG"), "{bad}: {text}");
    }
    // SIGKILL and SIGSTOP exist (to be sent), but handling them is an error naming them.
    for sig in [Signal::KILL, Signal::STOP] {
        let err = lp.add_signal_handler(sig, || {}).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{sig}: {err}");
        assert!(err.to_string().contains(sig.name()), "{err}");
        assert!(!lp.remove_signal_handler(sig));
    }
    // The loop still works.
    let out = lp.run_until_complete(async { 5 }).unwrap();
    assert_eq!(out, 5);
}

#[test]
fn a_burst_of_signals_while_the_loop_is_busy_runs_the_handler_at_least_once_without_deadlock() {
    let _s = serial();
    let lp = EventLoop::new().unwrap();
    let hits = Rc::new(Cell::new(0u32));
    let c = hits.clone();
    lp.add_signal_handler(Signal::USR1, move || c.set(c.get() + 1)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let pid = sys::getpid();
    let storm = thread::spawn(move || {
        let mut sent = 0;
        while !s.load(Ordering::Relaxed) && sent < 2_000 {
            sys::kill(pid, Signal::USR1.raw()).unwrap();
            sent += 1;
        }
        sent
    });
    // Keep the loop busy with work of its own while the storm lasts.
    run_bounded(&lp, async {
        for _ in 0..200 {
            evloop::task::yield_now().await;
        }
        evloop::time::sleep(Duration::from_millis(20)).await;
    });
    stop.store(true, Ordering::Relaxed);
    let sent = storm.join().unwrap();
    run_bounded(&lp, evloop::time::sleep(Duration::from_millis(20)));
    assert!(sent > 0);
    assert!(hits.get() >= 1, "{sent} signals sent, handler never ran");
    assert!(
        hits.get() as usize <= sent,
        "more handler runs ({}) than signals ({sent})",
        hits.get()
    );
    lp.remove_signal_handler(Signal::USR1);
}

/// Reading the eventfd back to zero wakes its writers, and the edge-triggered registration reports
/// that as a fresh `EPOLLOUT` edge. The dispatch must see the signal through exactly one read, not
/// run again on the writable edge and read `EAGAIN`.
#[test]
fn one_delivery_costs_one_eventfd_read_on_the_loop_thread() {
    let _s = serial();
    let lp = EventLoop::new().unwrap();
    let hits = Rc::new(Cell::new(0u32));
    let c = hits.clone();
    lp.add_signal_handler(Signal::USR2, move || c.set(c.get() + 1)).unwrap();
    // Let the registration's first (writable) edge go by before counting.
    run_bounded(&lp, evloop::time::sleep(Duration::from_millis(5)));
    let before = sys::counters::snapshot();
    sys::raise_in_process(Signal::USR2).unwrap();
    let seen = hits.clone();
    run_bounded(&lp, async move {
        for _ in 0..100 {
            if seen.get() == 1 {
                break;
            }
            evloop::time::sleep(Duration::from_millis(5)).await;
        }
        // Several more iterations in which a second, spurious dispatch would show up.
        for _ in 0..5 {
            evloop::task::yield_now().await;
        }
        evloop::time::sleep(Duration::from_millis(5)).await;
    });
    let reads = sys::counters::snapshot().since(&before).get(sys::Syscall::Read);
    assert_eq!(hits.get(), 1, "the handler runs once per delivery");
    assert_eq!(reads, 1, "one eventfd read per delivery, no read on the writable edge");
    assert!(lp.remove_signal_handler(Signal::USR2));
}

#[test]
fn signal_recv_completes_at_the_next_delivery() {
    let _s = serial();
    let lp = EventLoop::new().unwrap();
    let pid = sys::getpid();
    run_bounded(&lp, async move {
        let waiting = signal::recv(Signal::USR2);
        let raiser = thread::spawn(move || {
            thread::sleep(Duration::from_millis(30));
            sys::kill(pid, Signal::USR2.raw()).unwrap();
        });
        waiting.await.unwrap();
        raiser.join().unwrap();
    });
    assert_eq!(
        disposition(Signal::USR2),
        Disposition::Default,
        "recv's registration is released"
    );
}

#[test]
fn ctrl_c_resolves_on_sigint_and_restores_the_default_action() {
    let _s = serial();
    let before = disposition(Signal::INT);
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp, async {
        let ctrl_c = signal::ctrl_c(); // watched from here on: the raise below is not missed
        sys::raise_in_process(Signal::INT).unwrap();
        ctrl_c.await.unwrap();
    });
    assert_eq!(disposition(Signal::INT), before);
}

#[test]
fn signal_recv_of_an_uncatchable_signal_or_with_no_loop_is_an_error() {
    let _s = serial();
    let lp = EventLoop::new().unwrap();
    let err = lp.run_until_complete(signal::recv(Signal::KILL)).unwrap().unwrap_err();
    assert!(err.to_string().contains("SIGKILL"), "{err}");
    // Created outside a running loop, it starts watching at its first poll (inside one) and
    // then waits for a delivery: bounded here, nothing is raised.
    let early = signal::recv(Signal::USR1);
    let waited = lp
        .run_until_complete(async move { evloop::time::timeout(Duration::from_millis(30), early).await })
        .unwrap();
    assert!(waited.is_err(), "no signal was raised: {waited:?}");
    assert_eq!(
        disposition(Signal::USR1),
        Disposition::Default,
        "the dropped recv let go of it"
    );
}

#[test]
fn two_loops_on_two_threads_both_receive_one_signal() {
    let _s = serial();
    let (tx, rx) = std::sync::mpsc::channel();
    let ready = Arc::new(std::sync::Barrier::new(3));
    let mut threads = Vec::new();
    for _ in 0..2 {
        let (tx, ready) = (tx.clone(), ready.clone());
        threads.push(thread::spawn(move || {
            let lp = EventLoop::new().unwrap();
            let h: LoopHandle = lp.handle();
            lp.add_signal_handler(Signal::USR2, move || h.stop()).unwrap();
            let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));
            ready.wait();
            lp.run_forever().unwrap();
            tx.send(!dog.finish()).unwrap();
        }));
    }
    ready.wait();
    thread::sleep(Duration::from_millis(50));
    sys::raise_in_process(Signal::USR2).unwrap();
    let got: Vec<bool> = (0..2)
        .map(|_| rx.recv_timeout(Duration::from_secs(20)).unwrap())
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(got, vec![true, true], "both loops saw the signal");
    assert_eq!(disposition(Signal::USR2), Disposition::Default);
}
