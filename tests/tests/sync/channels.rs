//! `evloop::sync`: `oneshot`, `mpsc` (bounded with back-pressure, and unbounded) and the
//! `threadsafe` channel whose senders live on other OS threads.
//!
//! Every test that waits for another thread is bounded by `evloop_tests::watchdog`, so a lost
//! wake-up fails the test instead of hanging it.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Barrier};
use std::task::Poll;
use std::thread;
use std::time::{Duration, Instant};

use evloop::sync::{mpsc, oneshot, threadsafe};
use evloop::sys::{Syscall, counters};
use evloop::{
    event_loop::{EventLoop, LoopErrorKind},
    spawn,
    task::{RunError, yield_now},
    time::{sleep, timeout},
};
use evloop_tests::watchdog::Watchdog;
use evloop_tests::{entries, log, procfs, run_on_new_loop, settle};

// ---------------------------------------------------------------------------------------------
// Helpers (this file only).

const WATCHDOG: Duration = Duration::from_secs(20);

/// From another thread: wait until the loop thread `tid` sleeps in its poll (or, where that
/// cannot be seen, give it 100 ms to get there).
fn until_the_loop_sleeps(tid: Option<libc::pid_t>) -> bool {
    let seen = procfs::wait_until_blocked_in_poll_forever(tid, Duration::from_secs(5));
    if !seen {
        thread::sleep(Duration::from_millis(100));
    }
    seen
}

fn assert_send_sync_clone<T: Send + Sync + Clone>() {}

// ---------------------------------------------------------------------------------------------
// oneshot.

#[test]
fn oneshot_send_then_receive_gives_the_value() {
    let got = run_on_new_loop(async {
        let (tx, rx) = oneshot::<String>();
        assert!(!tx.is_closed());
        tx.send("hello".into()).unwrap();
        rx.await
    });
    assert_eq!(got.unwrap(), "hello");
}

#[test]
fn oneshot_receiver_waits_until_the_value_is_sent() {
    run_on_new_loop(async {
        let (tx, rx) = oneshot::<u32>();
        let sent = Rc::new(Cell::new(false));
        let s = sent.clone();
        spawn(async move {
            sleep(Duration::from_millis(5)).await;
            s.set(true);
            tx.send(9).unwrap();
        });
        assert_eq!(rx.await, Ok(9));
        assert!(sent.get());
    });
}

#[test]
fn oneshot_sender_dropped_without_sending_gives_closed() {
    run_on_new_loop(async {
        // Dropped while the receiver waits: the receiver is woken.
        let (tx, rx) = oneshot::<u32>();
        spawn(async move {
            yield_now().await;
            drop(tx);
        });
        assert_eq!(rx.await, Err(oneshot::RecvError::Closed));
        // Dropped before the receiver looks.
        let (tx, rx) = oneshot::<u32>();
        drop(tx);
        let err = rx.await.unwrap_err();
        assert!(err.to_string().contains("dropped"), "{err}");
    });
}

#[test]
fn oneshot_receiver_dropped_send_gives_the_value_back() {
    let (tx, rx) = oneshot::<Vec<u8>>();
    drop(rx);
    assert!(tx.is_closed());
    assert_eq!(tx.send(vec![1, 2]), Err(vec![1, 2]));
}

#[test]
fn oneshot_receiver_cancelled_while_waiting_makes_send_give_the_value_back() {
    run_on_new_loop(async {
        let (tx, rx) = oneshot::<u32>();
        assert!(timeout(Duration::from_millis(2), rx).await.is_err());
        assert!(tx.is_closed());
        assert_eq!(tx.send(5), Err(5));
    });
}

#[test]
fn oneshot_close_refuses_later_sends_but_keeps_a_value_already_sent() {
    let (tx, mut rx) = oneshot::<u32>();
    rx.close();
    assert_eq!(tx.send(1), Err(1));

    let (tx, mut rx) = oneshot::<u32>();
    tx.send(2).unwrap();
    rx.close();
    assert_eq!(rx.try_recv(), Ok(2));
}

#[test]
fn oneshot_try_recv_is_empty_then_the_value_then_closed() {
    let (tx, mut rx) = oneshot::<u32>();
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Empty));
    tx.send(3).unwrap();
    assert_eq!(rx.try_recv(), Ok(3));
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));
}

// ---------------------------------------------------------------------------------------------
// mpsc.

#[test]
fn mpsc_values_from_one_sender_arrive_in_send_order() {
    let got = run_on_new_loop(async {
        let (tx, mut rx) = mpsc::channel::<u32>(4);
        spawn(async move {
            for i in 0..100 {
                tx.send(i).await.unwrap();
            }
        });
        let mut got = Vec::new();
        while let Some(v) = rx.recv().await {
            got.push(v);
        }
        got
    });
    assert_eq!(got, (0..100).collect::<Vec<_>>());
}

#[test]
fn mpsc_send_waits_while_full_and_waiting_senders_proceed_in_fifo_order() {
    run_on_new_loop(async {
        let (tx, mut rx) = mpsc::channel::<&'static str>(1);
        tx.try_send("first").unwrap();
        let done = log();
        for name in ["a", "b", "c"] {
            let (tx, done) = (tx.clone(), done.clone());
            spawn(async move {
                tx.send(name).await.unwrap();
                done.borrow_mut().push(name);
            });
        }
        drop(tx);
        settle(3).await;
        assert!(
            entries(&done).is_empty(),
            "every sender waits while the channel is full"
        );
        let mut got = Vec::new();
        while let Some(v) = rx.recv().await {
            got.push(v);
        }
        assert_eq!(got, ["first", "a", "b", "c"]);
        assert_eq!(
            entries(&done),
            ["a", "b", "c"],
            "senders proceed in the order they waited"
        );
    });
}

#[test]
fn mpsc_try_send_on_a_full_channel_gives_the_value_back() {
    let (tx, mut rx) = mpsc::channel::<String>(1);
    tx.try_send("a".into()).unwrap();
    match tx.try_send("b".into()) {
        Err(mpsc::TrySendError::Full(v)) => assert_eq!(v, "b"),
        other => panic!("expected Full, got {other:?}"),
    }
    assert_eq!(rx.len(), 1);
    assert_eq!(rx.try_recv().unwrap(), "a");
    assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Empty));
}

#[test]
fn mpsc_capacity_zero_is_taken_as_one() {
    let (tx, _rx) = mpsc::channel::<u8>(0);
    tx.try_send(1).unwrap();
    assert!(matches!(tx.try_send(2), Err(mpsc::TrySendError::Full(2))));
}

#[test]
fn mpsc_unbounded_send_never_waits() {
    run_on_new_loop(async {
        let (tx, mut rx) = mpsc::unbounded::<u32>();
        for i in 0..10_000 {
            tx.try_send(i).unwrap();
        }
        tx.send(10_000).await.unwrap();
        assert_eq!(rx.len(), 10_001);
        drop(tx);
        let mut n = 0;
        while let Some(v) = rx.recv().await {
            assert_eq!(v, n);
            n += 1;
        }
        assert_eq!(n, 10_001);
    });
}

#[test]
fn mpsc_channel_closes_when_the_last_sender_drops_after_the_values_are_drained() {
    run_on_new_loop(async {
        let (tx, mut rx) = mpsc::channel::<u32>(8);
        let tx2 = tx.clone();
        assert!(tx.same_channel(&tx2));
        tx.try_send(1).unwrap();
        tx2.try_send(2).unwrap();
        drop(tx);
        assert!(!rx.is_closed(), "one sender is left");
        drop(tx2);
        assert!(rx.is_closed());
        assert_eq!(rx.recv().await, Some(1));
        assert_eq!(rx.recv().await, Some(2));
        assert_eq!(rx.recv().await, None);
        assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Disconnected));
    });
}

#[test]
fn mpsc_dropping_the_last_sender_wakes_a_waiting_receiver_with_none() {
    run_on_new_loop(async {
        let (tx, mut rx) = mpsc::channel::<u32>(1);
        spawn(async move {
            yield_now().await;
            drop(tx);
        });
        assert_eq!(rx.recv().await, None);
    });
}

#[test]
fn mpsc_receiver_close_fails_waiting_and_later_sends_with_their_values_and_keeps_the_rest() {
    run_on_new_loop(async {
        let (tx, mut rx) = mpsc::channel::<u32>(1);
        tx.try_send(1).unwrap();
        let waiting = {
            let tx = tx.clone();
            spawn(async move { tx.send(2).await })
        };
        settle(1).await;
        rx.close();
        assert_eq!(waiting.await.unwrap().unwrap_err().into_inner(), 2);
        assert!(tx.is_closed());
        assert!(matches!(tx.try_send(3), Err(mpsc::TrySendError::Closed(3))));
        let err = tx.send(4).await.unwrap_err();
        assert_eq!(err.0, 4);
        assert!(err.to_string().contains("closed"), "{err}");
        assert_eq!(rx.recv().await, Some(1), "values sent before the close are kept");
        assert_eq!(rx.recv().await, None);
    });
}

#[test]
fn mpsc_receiver_dropped_makes_every_send_give_the_value_back() {
    run_on_new_loop(async {
        let (tx, rx) = mpsc::channel::<String>(1);
        tx.try_send("queued".into()).unwrap();
        let waiting = {
            let tx = tx.clone();
            spawn(async move { tx.send("waiting".into()).await })
        };
        settle(1).await;
        drop(rx);
        assert_eq!(waiting.await.unwrap().unwrap_err().into_inner(), "waiting");
        assert_eq!(tx.send("late".into()).await.unwrap_err().into_inner(), "late");
    });
}

#[test]
fn mpsc_cancelled_waiting_send_never_loses_or_duplicates_a_slot() {
    run_on_new_loop(async {
        let (tx, mut rx) = mpsc::channel::<u32>(1);
        tx.try_send(0).unwrap();
        // Cancelled while waiting in line.
        assert!(timeout(Duration::from_millis(2), tx.send(1)).await.is_err());
        // Cancelled after the receiver freed a slot for it, before it ran.
        let (a, b) = {
            let (t1, t2) = (tx.clone(), tx.clone());
            (
                spawn(async move { t1.send(2).await }),
                spawn(async move { t2.send(3).await }),
            )
        };
        settle(1).await;
        assert_eq!(rx.try_recv(), Ok(0)); // grants the slot to `a`
        a.cancel();
        assert!(a.await.is_err());
        b.await.unwrap().unwrap(); // the slot went on to `b`
        assert_eq!(rx.try_recv(), Ok(3));
        assert_eq!(
            rx.try_recv(),
            Err(mpsc::TryRecvError::Empty),
            "neither 1 nor 2 was sent"
        );
        // No slot is stuck: exactly one send fits again.
        tx.try_send(4).unwrap();
        assert!(matches!(tx.try_send(5), Err(mpsc::TrySendError::Full(5))));
    });
}

#[test]
fn mpsc_cancelled_recv_puts_a_value_handed_to_it_back_in_front() {
    /// Lends the receiver to a task and puts it back when the task's future is dropped, so the
    /// test can look at the channel after cancelling the task.
    struct Lend {
        rx: Option<mpsc::Receiver<u32>>,
        home: Rc<RefCell<Option<mpsc::Receiver<u32>>>>,
    }
    impl Drop for Lend {
        fn drop(&mut self) {
            *self.home.borrow_mut() = self.rx.take();
        }
    }
    run_on_new_loop(async {
        let (tx, rx) = mpsc::unbounded::<u32>();
        let home = Rc::new(RefCell::new(Some(rx)));
        let h = home.clone();
        let reader = spawn(async move {
            let rx = h.borrow_mut().take();
            let mut lend = Lend { rx, home: h };
            match lend.rx.as_mut() {
                Some(rx) => rx.recv().await,
                None => None,
            }
        });
        settle(1).await;
        tx.try_send(1).unwrap(); // handed to the waiting recv
        tx.try_send(2).unwrap();
        reader.cancel();
        assert!(reader.await.is_err());
        let mut rx = home.borrow_mut().take().expect("the receiver came back");
        assert_eq!(
            rx.try_recv(),
            Ok(1),
            "the value handed to the cancelled recv was not lost"
        );
        assert_eq!(rx.try_recv(), Ok(2));
    });
}

// ---------------------------------------------------------------------------------------------
// threadsafe.

#[test]
fn threadsafe_sender_is_send_sync_and_clone() {
    assert_send_sync_clone::<threadsafe::Sender<String>>();
    assert_send_sync_clone::<threadsafe::Sender<Vec<u8>>>();
}

#[test]
fn threadsafe_four_threads_times_10000_sends_arrive_in_per_sender_order() {
    const THREADS: usize = 4;
    const SENDS: usize = 10_000;
    let lp = EventLoop::new().unwrap();
    let dog = Watchdog::start(lp.remote(), WATCHDOG);
    let (tx, mut rx) = threadsafe::channel::<(usize, usize)>();
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let tx = tx.clone();
            thread::spawn(move || {
                for i in 0..SENDS {
                    tx.send((t, i)).unwrap();
                    if i % 256 == 0 {
                        thread::yield_now();
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let got = lp.run_until_complete(async move {
        let mut next = [0usize; THREADS];
        let mut total = 0;
        while let Some((t, i)) = rx.recv().await {
            assert_eq!(i, next[t], "thread {t}'s values arrived out of order");
            next[t] += 1;
            total += 1;
        }
        (total, next)
    });
    for th in threads {
        th.join().unwrap();
    }
    assert!(!dog.finish(), "a wake-up was lost: the watchdog had to stop the loop");
    let (total, next) = got.unwrap();
    assert_eq!(total, THREADS * SENDS);
    assert_eq!(next, [SENDS; THREADS]);
}

#[test]
fn threadsafe_send_from_another_thread_wakes_a_loop_blocked_in_poll() {
    let lp = EventLoop::new().unwrap();
    let dog = Watchdog::start(lp.remote(), WATCHDOG);
    let (tx, mut rx) = threadsafe::channel::<u32>();
    let tid = procfs::current_tid();
    let th = thread::spawn(move || {
        let seen = until_the_loop_sleeps(tid);
        let sent_at = Instant::now();
        tx.send(42).unwrap();
        (seen, sent_at, tx)
    });
    // Nothing else to do: the loop blocks in its poll with no timeout until the send.
    let got = lp.run_until_complete(async move { rx.recv().await });
    let woke_at = Instant::now();
    let (seen, sent_at, _tx) = th.join().unwrap();
    assert!(!dog.finish(), "the send did not wake the loop: the watchdog had to");
    assert_eq!(got.unwrap(), Some(42));
    assert!(woke_at.duration_since(sent_at) < Duration::from_secs(5));
    if std::fs::read_to_string(procfs::syscall_path(tid.unwrap_or(0))).is_ok() {
        assert!(seen, "the loop never blocked in a poll with no timeout");
    }
}

#[test]
fn threadsafe_1000_sends_while_the_loop_sleeps_cost_at_most_a_handful_of_eventfd_writes() {
    const SENDS: u32 = 1000;

    // 1. `busy`: the first send wakes the sleeping loop; its receiving task then holds the loop
    //    thread (a slow callback) until the sender thread says the burst is over. Only the first
    //    send finds a waker to wake; the other 999 make no syscall: exactly one eventfd write.
    // 2. Free-running: every time the loop catches up, empties the channel and sleeps again, the
    //    next send pays one write. How often that happens depends on the scheduler (a loaded
    //    machine deschedules the sender mid-burst), but never more than once per loop iteration,
    //    and on an idle machine it is a handful.
    for busy in [true, false] {
        let lp = EventLoop::new().unwrap();
        let dog = Watchdog::start(lp.remote(), WATCHDOG);
        let (tx, mut rx) = threadsafe::channel::<u32>();
        let (burst_done, wait_for_burst) = std::sync::mpsc::channel::<()>();
        let tid = procfs::current_tid();
        let th = thread::spawn(move || {
            until_the_loop_sleeps(tid);
            let before = counters::snapshot();
            for i in 0..SENDS {
                tx.send(i).unwrap();
            }
            let used = counters::snapshot().since(&before);
            let _ = burst_done.send(());
            used.get(Syscall::Write)
        });
        let iterations_before = lp.stats().iterations;
        let got = lp.run_until_complete(async move {
            let mut got = Vec::new();
            while let Some(v) = rx.recv().await {
                if got.is_empty() && busy {
                    let _ = wait_for_burst.recv_timeout(WATCHDOG);
                }
                got.push(v);
            }
            got
        });
        let iterations = lp.stats().iterations - iterations_before;
        let writes = th.join().unwrap();
        assert!(!dog.finish(), "a wake-up was lost");
        let got = got.unwrap();
        assert_eq!(
            got,
            (0..SENDS).collect::<Vec<_>>(),
            "the receiver sees every value, in order"
        );
        println!("busy={busy}: {SENDS} sends made {writes} eventfd write(s) over {iterations} loop iterations");
        assert!(writes >= 1, "the first send must wake the sleeping loop");
        if busy {
            assert_eq!(writes, 1, "{SENDS} sends to a busy loop made {writes} eventfd writes");
        } else {
            assert!(
                writes <= iterations,
                "{writes} eventfd writes for {iterations} loop iterations: more than one per sleep"
            );
        }
    }
}

#[test]
fn threadsafe_sender_threads_outliving_the_loop_get_their_value_back() {
    // The receiver lives in a task that is still waiting when `run` returns: `run` cancels it,
    // which drops the receiver; the sender threads keep going and must get their values back.
    let start = Arc::new(Barrier::new(3));
    let (tx, rx) = threadsafe::channel::<u64>();
    let threads: Vec<_> = (0..2u64)
        .map(|t| {
            let (tx, start) = (tx.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                let mut i = 0u64;
                let deadline = Instant::now() + WATCHDOG;
                loop {
                    let v = t * 1_000_000 + i;
                    match tx.send(v) {
                        Ok(()) => i += 1,
                        Err(back) => return Some((v, back, i)),
                    }
                    if Instant::now() > deadline {
                        return None;
                    }
                    thread::sleep(Duration::from_micros(100));
                }
            })
        })
        .collect();
    drop(tx);
    let received = evloop::run(async move {
        let mut rx = rx;
        start.wait();
        let mut n = 0;
        while n < 20 {
            rx.recv().await.unwrap();
            n += 1;
        }
        // Hand the receiver to a task that will never finish by itself.
        spawn(async move {
            let _rx = rx;
            std::future::pending::<()>().await;
        });
        yield_now().await;
        n
    })
    .unwrap();
    assert_eq!(received, 20);
    for th in threads {
        let ended = th.join().expect("a sender thread panicked");
        let (tried, back, sent) = ended.expect("the sender never saw the channel close");
        assert_eq!(back, tried, "send gives back the value it was given");
        assert!(sent >= 1);
    }
}

#[test]
fn threadsafe_receiver_still_alive_after_its_loop_closed_accepts_sends_without_panicking() {
    // The receiver outlives the loop (it was never moved into a task): its stored waker points
    // at a closed loop; a send still succeeds (the value waits for a receive) and the wake is
    // refused quietly.
    let (tx, mut rx) = threadsafe::channel::<u32>();
    {
        let lp = EventLoop::new().unwrap();
        let r = lp.run_until_complete(async move {
            // Poll a receive once so it stores this loop's waker, and leave it stored.
            let mut recv = rx.recv();
            std::future::poll_fn(|cx| {
                assert!(Pin::new(&mut recv).poll(cx).is_pending());
                Poll::Ready(())
            })
            .await;
            std::mem::forget(recv);
            rx
        });
        rx = r.unwrap();
        lp.close().unwrap();
    }
    thread::spawn(move || tx.send(1).unwrap()).join().unwrap();
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Err(threadsafe::TryRecvError::Disconnected));
}

#[test]
fn threadsafe_dropping_every_sender_closes_the_channel_after_the_values() {
    let lp = EventLoop::new().unwrap();
    let dog = Watchdog::start(lp.remote(), WATCHDOG);
    let (tx, mut rx) = threadsafe::channel::<String>();
    let th = thread::spawn(move || {
        let tx2 = tx.clone();
        assert!(tx.same_channel(&tx2));
        tx.send("a".into()).unwrap();
        tx2.send("b".into()).unwrap();
    });
    let got = lp.run_until_complete(async move {
        let mut got = Vec::new();
        while let Some(v) = rx.recv().await {
            got.push(v);
        }
        assert!(rx.is_closed());
        got
    });
    th.join().unwrap();
    assert!(!dog.finish());
    assert_eq!(got.unwrap(), ["a", "b"]);
}

#[test]
fn threadsafe_receiver_close_makes_send_give_the_value_back() {
    let (tx, mut rx) = threadsafe::channel::<u32>();
    tx.send(1).unwrap();
    rx.close();
    assert!(tx.is_closed());
    let back = thread::spawn(move || tx.send(2)).join().unwrap();
    assert_eq!(back, Err(2));
    assert_eq!(rx.try_recv(), Ok(1), "values sent before the close are kept");
    assert_eq!(rx.try_recv(), Err(threadsafe::TryRecvError::Disconnected));
}

#[test]
fn threadsafe_cancelled_recv_loses_nothing() {
    run_on_new_loop(async {
        let (tx, mut rx) = threadsafe::channel::<u32>();
        assert!(timeout(Duration::from_millis(2), rx.recv()).await.is_err());
        tx.send(7).unwrap();
        assert_eq!(rx.recv().await, Some(7));
        assert_eq!(rx.try_recv(), Err(threadsafe::TryRecvError::Empty));
    });
}

#[test]
fn threadsafe_a_loop_stopped_by_the_watchdog_reports_stopped_not_a_hang() {
    // The guard itself: with no sender ever sending, the loop would sleep forever; the watchdog
    // stops it and run_until_complete says so.
    let lp = EventLoop::new().unwrap();
    let dog = Watchdog::start(lp.remote(), Duration::from_millis(50));
    let (_tx, mut rx) = threadsafe::channel::<u32>();
    let r = lp.run_until_complete(async move { rx.recv().await });
    match r {
        Err(RunError::Loop(e)) => assert_eq!(e.kind(), LoopErrorKind::Stopped),
        other => panic!("expected Stopped, got {other:?}"),
    }
    assert!(dog.finish());
}
