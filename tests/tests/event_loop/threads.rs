//! The loop and other threads (`docs/design.md`, "Loop"): `call_soon_threadsafe` and
//! `RemoteHandle::stop` wake a blocked loop at once; an idle loop sleeps in one poll with no
//! timeout; `run_in_executor`'s pool starts lazily, stays bounded and shuts down with the loop.
//!
//! Every test that waits for another thread is bounded by a watchdog that does not depend on
//! the mechanism under test: a pipe the watchdog thread writes after 10 s, whose reader stops
//! the loop. A broken wake-up then fails the test instead of hanging it. (A pipe reader gives
//! the loop no timeout, so the loop still blocks indefinitely in its poll.)

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use evloop::event_loop::{Builder, EventLoop, ExecutorError, LoopErrorKind, LoopHandle, get_running_loop};
use evloop::sys::{Syscall, counters};
// `evloop::test` (the attribute) came in with the glob: the built-in `#[test]` is meant here.
use evloop_tests::{procfs, spin_once};
use std::prelude::v1::test;

// ---------------------------------------------------------------------------------------------
// Helpers (this file only).

const WATCHDOG: Duration = Duration::from_secs(10);

/// Stops the loop from outside after [`WATCHDOG`] unless disarmed first, through a pipe (not
/// the loop's eventfd, which is what these tests check).
struct PipeWatchdog {
    read_end: OwnedFd,
    cancel: mpsc::Sender<()>,
    thread: JoinHandle<()>,
    fired: Rc<std::cell::Cell<bool>>,
}

impl PipeWatchdog {
    fn arm(lp: &LoopHandle) -> PipeWatchdog {
        let (r, w) = evloop_syscalls::pipe2().unwrap();
        let fired = Rc::new(std::cell::Cell::new(false));
        let (h, f) = (lp.clone(), fired.clone());
        lp.add_reader(r.as_raw_fd(), move || {
            f.set(true);
            h.stop();
        })
        .unwrap();
        let (cancel, rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if rx.recv_timeout(WATCHDOG).is_err() {
                let _ = evloop_syscalls::write(w.as_fd(), b"!");
            }
            drop(w);
        });
        PipeWatchdog {
            read_end: r,
            cancel,
            thread,
            fired,
        }
    }

    /// Stops the watchdog; returns whether it fired (the test's wake-up did not work).
    fn disarm(self, lp: &LoopHandle) -> bool {
        let _ = self.cancel.send(());
        self.thread.join().unwrap();
        lp.remove_reader(self.read_end.as_raw_fd());
        self.fired.get()
    }
}

/// Whether `/proc/<tid>/syscall` can be read here (it needs ptrace access to our own threads,
/// which some sandboxes deny).
fn proc_syscall_readable() -> bool {
    procfs::current_tid()
        .and_then(|tid| std::fs::read_to_string(procfs::syscall_path(tid)).ok())
        .is_some()
}

/// Whether the thread `tid` is blocked in an epoll wait with no timeout right now.
fn blocked_in_poll_forever(tid: libc::pid_t) -> bool {
    let Ok(s) = std::fs::read_to_string(procfs::syscall_path(tid)) else {
        return false;
    };
    procfs::parse_poll(&s) == Some(procfs::InPoll { no_timeout: true })
}

struct NoopWaker;
impl Wake for NoopWaker {
    fn wake(self: Arc<Self>) {}
}

fn poll_once<F: std::future::Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    let waker = Waker::from(Arc::new(NoopWaker));
    std::pin::Pin::new(f).poll(&mut Context::from_waker(&waker))
}

// ---------------------------------------------------------------------------------------------
// call_soon_threadsafe and RemoteHandle::stop.

#[test]
fn call_soon_threadsafe_wakes_a_loop_blocked_with_no_timeout() {
    let lp = EventLoop::new().unwrap();
    let dog = PipeWatchdog::arm(&lp);
    let remote = lp.remote();
    let tid = procfs::current_tid();
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let th = std::thread::spawn(move || {
        let blocked = procfs::wait_until_blocked_in_poll_forever(tid, Duration::from_secs(3));
        if !blocked {
            std::thread::sleep(Duration::from_millis(100));
        }
        let pushed_at = Instant::now();
        remote
            .call_soon_threadsafe(move || {
                r.store(true, SeqCst);
                get_running_loop().unwrap().stop();
            })
            .unwrap();
        (blocked, pushed_at)
    });
    lp.run_forever().unwrap();
    let returned_at = Instant::now();
    let (blocked, pushed_at) = th.join().unwrap();
    let fired = dog.disarm(&lp);
    assert!(!fired, "the loop slept through call_soon_threadsafe until the watchdog");
    assert!(ran.load(SeqCst));
    assert!(returned_at.duration_since(pushed_at) < Duration::from_secs(5));
    if proc_syscall_readable() {
        assert!(blocked, "the loop never blocked in a poll with no timeout");
    }
}

#[test]
fn remote_stop_from_another_thread_wakes_and_stops_the_loop() {
    let lp = EventLoop::new().unwrap();
    let dog = PipeWatchdog::arm(&lp);
    let remote = lp.remote();
    let tid = procfs::current_tid();
    let th = std::thread::spawn(move || {
        if !procfs::wait_until_blocked_in_poll_forever(tid, Duration::from_secs(3)) {
            std::thread::sleep(Duration::from_millis(100));
        }
        remote.stop().unwrap();
    });
    let start = lp.stats().iterations;
    lp.run_forever().unwrap();
    th.join().unwrap();
    let iterations = lp.stats().iterations - start;
    assert!(!dog.disarm(&lp), "RemoteHandle::stop did not wake the loop");
    assert!(iterations >= 1);
    assert!(!lp.is_running());
    // A remote stop is consumed like a local one: the loop runs again normally.
    let h = lp.handle();
    lp.call_soon(move || h.stop()).unwrap();
    lp.run_forever().unwrap();
}

#[test]
fn remote_stop_before_run_forever_runs_one_iteration() {
    let lp = EventLoop::new().unwrap();
    let remote = lp.remote();
    std::thread::spawn(move || remote.stop().unwrap()).join().unwrap();
    let start = lp.stats().iterations;
    lp.run_forever().unwrap();
    assert_eq!(lp.stats().iterations, start + 1);
}

#[test]
fn call_soon_threadsafe_on_a_closed_loop_is_an_error() {
    struct Guard(Arc<AtomicUsize>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    let lp = EventLoop::new().unwrap();
    let remote = lp.remote();
    let drops = Arc::new(AtomicUsize::new(0));
    // Queued before close: dropped by close, never run.
    let g = Guard(drops.clone());
    remote.call_soon_threadsafe(move || drop(g)).unwrap();
    lp.close().unwrap();
    assert_eq!(drops.load(SeqCst), 1, "close() must drop queued remote callbacks");
    assert!(remote.is_closed());

    let (d, r) = (drops.clone(), remote.clone());
    let errs = std::thread::spawn(move || {
        let g = Guard(d);
        let e1 = r.call_soon_threadsafe(move || drop(g)).unwrap_err();
        let e2 = r.stop().unwrap_err();
        (e1.kind(), e1.to_string(), e2.kind(), e2.to_string())
    })
    .join()
    .unwrap();
    assert_eq!(errs.0, LoopErrorKind::Closed);
    assert!(errs.1.contains("call_soon_threadsafe"), "{}", errs.1);
    assert_eq!(errs.2, LoopErrorKind::Closed);
    assert!(errs.3.contains("stop"), "{}", errs.3);
    assert_eq!(drops.load(SeqCst), 2, "the refused closure must be dropped, not leaked");
}

#[test]
fn call_soon_threadsafe_from_many_threads_runs_every_call_in_per_thread_order() {
    const THREADS: usize = 8;
    const CALLS: usize = 500;
    let lp = EventLoop::new().unwrap();
    let dog = PipeWatchdog::arm(&lp);
    let log = Arc::new(Mutex::new(Vec::with_capacity(THREADS * CALLS)));
    let count = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (remote, log, count) = (lp.remote(), log.clone(), count.clone());
            std::thread::spawn(move || {
                for i in 0..CALLS {
                    let (log, count) = (log.clone(), count.clone());
                    remote
                        .call_soon_threadsafe(move || {
                            log.lock().unwrap().push((t, i));
                            if count.fetch_add(1, SeqCst) + 1 == THREADS * CALLS {
                                get_running_loop().unwrap().stop();
                            }
                        })
                        .unwrap();
                    if i % 64 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    lp.run_forever().unwrap();
    for th in threads {
        th.join().unwrap();
    }
    assert!(
        !dog.disarm(&lp),
        "a wake-up was lost: only {} calls ran",
        count.load(SeqCst)
    );
    assert_eq!(count.load(SeqCst), THREADS * CALLS);
    let log = log.lock().unwrap();
    for t in 0..THREADS {
        let mine: Vec<usize> = log.iter().filter(|(tt, _)| *tt == t).map(|&(_, i)| i).collect();
        assert_eq!(
            mine,
            (0..CALLS).collect::<Vec<_>>(),
            "thread {t}'s calls ran out of order"
        );
    }
}

#[test]
fn call_soon_threadsafe_from_the_loop_thread_runs_in_the_next_iteration() {
    let lp = EventLoop::new().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    lp.call_soon_threadsafe(move || {
        r.fetch_add(1, SeqCst);
    })
    .unwrap();
    let t0 = Instant::now();
    lp.run_once().unwrap(); // must not block: work is pending
    assert_eq!(ran.load(SeqCst), 1);
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn idle_loop_blocks_in_one_poll_with_no_timeout_and_makes_no_other_syscalls() {
    let lp = EventLoop::new().unwrap();
    let dog = PipeWatchdog::arm(&lp);
    // Settle: run once so nothing from construction is pending.
    spin_once(&lp);

    let remote = lp.remote();
    let tid = procfs::current_tid();
    let can_see = proc_syscall_readable();
    let (tx, rx) = mpsc::channel();
    let th = std::thread::spawn(move || {
        let blocked = procfs::wait_until_blocked_in_poll_forever(tid, Duration::from_secs(5));
        // Stay asleep a while: an idle loop must make no syscalls meanwhile.
        std::thread::sleep(Duration::from_millis(50));
        let still_blocked = tid.is_some_and(blocked_in_poll_forever);
        tx.send((blocked, still_blocked)).unwrap();
        remote.stop().unwrap();
    });
    let start = lp.stats().iterations;
    let before = counters::snapshot();
    lp.run_forever().unwrap();
    let used = counters::snapshot().since(&before);
    th.join().unwrap();
    let (blocked, still_blocked) = rx.recv().unwrap();
    assert!(!dog.disarm(&lp), "RemoteHandle::stop did not wake the idle loop");

    if can_see {
        assert!(blocked, "the idle loop never blocked in a poll with no timeout");
        assert!(still_blocked, "the idle loop woke up with nothing to do");
    }
    assert_eq!(
        lp.stats().iterations,
        start + 1,
        "the idle loop went round more than once"
    );
    let polls = used.get(Syscall::EpollPwait2) + used.get(Syscall::EpollWait);
    let probe = used.get(Syscall::EpollPwait2) == 1 && used.get(Syscall::EpollWait) == 1;
    assert!(polls == 1 || probe, "one poll expected: {used}");
    // Besides the poll, only the wake-up itself: reading the eventfd.
    let others = used.total_syscalls() - polls;
    assert!(others <= 1, "an idle loop made other syscalls: {used}");
    assert_eq!(used.get(Syscall::EpollCtl), 0, "{used}");
}

// ---------------------------------------------------------------------------------------------
// run_in_executor.

#[test]
fn run_in_executor_returns_the_result() {
    let lp = EventLoop::new().unwrap();
    let main_thread = std::thread::current().id();
    let job = lp
        .run_in_executor(move || {
            assert_ne!(
                std::thread::current().id(),
                main_thread,
                "the job ran on the loop thread"
            );
            std::thread::sleep(Duration::from_millis(5));
            String::from("from the pool")
        })
        .unwrap();
    let out = lp.run_until_complete(job).unwrap().unwrap();
    assert_eq!(out, "from the pool");
    // Awaited from inside a task, too.
    let h = lp.handle();
    let sum = lp
        .run_until_complete(async move {
            let a = h.run_in_executor(|| 20).unwrap();
            let b = h.run_in_executor(|| 22).unwrap();
            a.await.unwrap() + b.await.unwrap()
        })
        .unwrap();
    assert_eq!(sum, 42);
}

#[test]
fn a_panic_in_an_executor_job_is_an_executor_error_with_the_message() {
    let lp = EventLoop::new().unwrap();
    let job = lp.run_in_executor(|| -> u32 { panic!("job boom") }).unwrap();
    match lp.run_until_complete(job).unwrap() {
        Err(ExecutorError::Panicked(p)) => assert_eq!(p.message(), "job boom"),
        other => panic!("expected Panicked, got {other:?}"),
    }
    // The pool survives a panicking job.
    let job = lp.run_in_executor(|| 5).unwrap();
    assert_eq!(lp.run_until_complete(job).unwrap().unwrap(), 5);
    // Its Display names the operation and carries the message.
    let job = lp.run_in_executor(|| -> u32 { panic!("again") }).unwrap();
    let e = lp.run_until_complete(job).unwrap().unwrap_err();
    assert!(
        e.to_string().contains("run_in_executor") && e.to_string().contains("again"),
        "{e}"
    );
}

#[test]
fn executor_pool_starts_lazily_and_stays_bounded() {
    let lp = Builder::new().executor_threads(2).build().unwrap();
    assert_eq!(lp.stats().executor_threads, 0, "the pool started before first use");
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let jobs: Vec<_> = (0..20)
        .map(|i| {
            let (running, peak) = (running.clone(), peak.clone());
            lp.run_in_executor(move || {
                let now = running.fetch_add(1, SeqCst) + 1;
                peak.fetch_max(now, SeqCst);
                std::thread::sleep(Duration::from_millis(2));
                running.fetch_sub(1, SeqCst);
                i
            })
            .unwrap()
        })
        .collect();
    let threads = lp.stats().executor_threads;
    assert!((1..=2).contains(&threads), "{threads} threads");
    let results = lp
        .run_until_complete(async move {
            let mut out = Vec::new();
            for j in jobs {
                out.push(j.await.unwrap());
            }
            out
        })
        .unwrap();
    assert_eq!(results, (0..20).collect::<Vec<_>>());
    assert!(peak.load(SeqCst) <= 2, "{} jobs ran at once", peak.load(SeqCst));
    assert!(lp.stats().executor_threads <= 2);
}

#[test]
fn shutdown_default_executor_stops_the_pool_and_the_next_job_starts_a_new_one() {
    let lp = EventLoop::new().unwrap();
    lp.shutdown_default_executor(); // no pool yet: a no-op
    let job = lp.run_in_executor(|| 1).unwrap();
    assert!(lp.stats().executor_threads >= 1);
    assert_eq!(lp.run_until_complete(job).unwrap().unwrap(), 1);
    lp.shutdown_default_executor();
    assert_eq!(lp.stats().executor_threads, 0);
    let job = lp.run_in_executor(|| 2).unwrap();
    assert_eq!(lp.run_until_complete(job).unwrap().unwrap(), 2);
    assert!(lp.stats().executor_threads >= 1);
    lp.shutdown_default_executor();
}

#[test]
fn shutdown_default_executor_waits_for_running_jobs() {
    let lp = EventLoop::new().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let (started_tx, started_rx) = mpsc::channel();
    let d = done.clone();
    let _job = lp
        .run_in_executor(move || {
            started_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(30));
            d.store(true, SeqCst);
        })
        .unwrap();
    started_rx.recv_timeout(WATCHDOG).unwrap();
    lp.shutdown_default_executor();
    assert!(
        done.load(SeqCst),
        "shutdown_default_executor returned before the running job ended"
    );
}

#[test]
fn closing_the_loop_shuts_the_executor_down() {
    // The worker thread signals (from a thread-local destructor) when it exits.
    struct OnExit(mpsc::Sender<()>);
    impl Drop for OnExit {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    thread_local! {
        static EXIT: std::cell::RefCell<Option<OnExit>> = const { std::cell::RefCell::new(None) };
    }
    let lp = Builder::new().executor_threads(1).build().unwrap();
    let (exit_tx, exit_rx) = mpsc::channel();
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let mut blocker = lp
        .run_in_executor(move || {
            EXIT.with(|e| *e.borrow_mut() = Some(OnExit(exit_tx)));
            started_tx.send(()).unwrap();
            release_rx.recv_timeout(WATCHDOG).is_ok()
        })
        .unwrap();
    started_rx.recv_timeout(WATCHDOG).unwrap();
    // The only thread is busy: this one waits in the queue.
    let mut queued = lp.run_in_executor(|| 7).unwrap();
    assert!(!queued.is_done());

    lp.close().unwrap();
    assert_eq!(lp.stats().executor_threads, 0);
    assert!(queued.is_done(), "a queued job must resolve when the loop closes");
    match poll_once(&mut queued) {
        Poll::Ready(Err(ExecutorError::Shutdown)) => {}
        other => panic!("expected Shutdown, got {other:?}"),
    }
    // The running job finishes, then its thread exits (it would wait for work forever if the
    // pool were still alive).
    release_tx.send(()).unwrap();
    exit_rx
        .recv_timeout(WATCHDOG)
        .expect("the executor thread did not exit after close()");
    assert!(blocker.is_done());
    assert!(matches!(poll_once(&mut blocker), Poll::Ready(Ok(true))));
}

#[test]
fn executor_jobs_wake_a_loop_blocked_with_no_timeout() {
    let lp = EventLoop::new().unwrap();
    let dog = PipeWatchdog::arm(&lp);
    let job = lp
        .run_in_executor(|| {
            std::thread::sleep(Duration::from_millis(50));
            99
        })
        .unwrap();
    let out = lp.run_until_complete(job).unwrap().unwrap();
    assert!(!dog.disarm(&lp), "the job's completion did not wake the loop");
    assert_eq!(out, 99);
}
