//! The executor's API (asyncio's `run_in_executor`, `set_default_executor`,
//! `shutdown_default_executor`): the pool's bound (asyncio's default `min(32, cores + 4)`, or
//! the size given to `set_default_executor`, seen through `stats().executor_threads`), a
//! replaced pool finishing the jobs it was given, `shutdown_default_executor` waiting for a
//! running job, a panic delivered as `ExecutorError::Panicked`, and clear errors on a closed
//! loop.
//!
//! Jobs that must stay busy wait on a [`Gate`], so thread counts do not depend on timing; every
//! wait is bounded.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use evloop::event_loop::{Builder, EventLoop, ExecutorError, LoopErrorKind};
use evloop_tests::run_bounded;

/// A latch the jobs wait on until the test opens it (at most 30 s, so nothing hangs).
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn wait(&self) {
        let (open, cv) = &*self.0;
        let guard = open.lock().unwrap();
        let (_guard, timeout) = cv
            .wait_timeout_while(guard, Duration::from_secs(30), |open| !*open)
            .unwrap();
        assert!(!timeout.timed_out(), "the gate was never opened");
    }

    fn open(&self) {
        let (open, cv) = &*self.0;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }
}

fn default_bound() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores + 4).min(32)
}

#[test]
fn the_default_bound_is_min_32_cores_plus_4() {
    let lp = EventLoop::new().unwrap();
    let gate = Gate::default();
    let jobs: Vec<_> = (0..40)
        .map(|i| {
            let g = gate.clone();
            lp.run_in_executor(move || {
                g.wait();
                i
            })
            .unwrap()
        })
        .collect();
    assert_eq!(lp.stats().executor_threads, default_bound());
    gate.open();
    let sum: usize = run_bounded(&lp, async move {
        let mut sum = 0;
        for j in jobs {
            sum += j.await.unwrap();
        }
        sum
    });
    assert_eq!(sum, (0..40).sum());
    lp.shutdown_default_executor();
}

#[test]
fn set_default_executor_changes_the_bound() {
    let lp = Builder::new().executor_threads(8).build().unwrap();
    for bound in [3, 1, 5] {
        lp.set_default_executor(bound).unwrap();
        assert_eq!(lp.stats().executor_threads, 0, "the new pool starts lazily");
        let gate = Gate::default();
        let jobs: Vec<_> = (0..12)
            .map(|i| {
                let g = gate.clone();
                lp.run_in_executor(move || {
                    g.wait();
                    i * 2
                })
                .unwrap()
            })
            .collect();
        assert_eq!(lp.stats().executor_threads, bound, "threads with a bound of {bound}");
        gate.open();
        let out = run_bounded(&lp, async move {
            let mut out = Vec::new();
            for j in jobs {
                out.push(j.await.unwrap());
            }
            out
        });
        assert_eq!(out, (0..12).map(|i| i * 2).collect::<Vec<_>>());
    }
    lp.shutdown_default_executor();
    assert_eq!(lp.stats().executor_threads, 0);
}

#[test]
fn a_replaced_pool_still_runs_the_jobs_it_was_given() {
    let lp = Builder::new().executor_threads(1).build().unwrap();
    let gate = Gate::default();
    let g = gate.clone();
    let running = lp
        .run_in_executor(move || {
            g.wait();
            "ran"
        })
        .unwrap();
    let queued = lp.run_in_executor(|| "queued ran").unwrap();
    lp.set_default_executor(2).unwrap();
    // The new pool works while the old one's only thread is still busy.
    let fresh = lp.run_in_executor(|| "fresh").unwrap();
    let h = lp.handle();
    let out = run_bounded(&lp, async move {
        let fresh = fresh.await.unwrap();
        assert!(!running.is_done(), "the gate is still closed");
        gate.open();
        (fresh, running.await.unwrap(), queued.await.unwrap())
    });
    assert_eq!(out, ("fresh", "ran", "queued ran"));
    assert_eq!(h.stats().executor_threads, 1, "only the new pool is counted");
}

#[test]
fn set_default_executor_refuses_zero_threads() {
    let lp = EventLoop::new().unwrap();
    let e = lp.set_default_executor(0).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("set_default_executor(0)"), "{e}");
}

#[test]
fn shutdown_default_executor_waits_for_a_running_job() {
    let lp = Builder::new().executor_threads(1).build().unwrap();
    let finished = Arc::new(AtomicBool::new(false));
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let f = finished.clone();
    let running = lp
        .run_in_executor(move || {
            started_tx.send(Instant::now()).unwrap();
            std::thread::sleep(Duration::from_millis(100));
            f.store(true, SeqCst);
            7
        })
        .unwrap();
    // Queued behind it, never started: resolved as shut down, not left hanging.
    let queued = lp.run_in_executor(|| 8).unwrap();
    let job_started = started_rx.recv_timeout(Duration::from_secs(30)).unwrap();
    lp.shutdown_default_executor();
    assert!(finished.load(SeqCst), "returned before the running job ended");
    // Measured from the job's own start, so that a slow test thread (valgrind) cannot fail it.
    assert!(job_started.elapsed() >= Duration::from_millis(100));
    assert_eq!(lp.stats().executor_threads, 0);
    let (a, b) = run_bounded(&lp, async move { (running.await, queued.await) });
    assert_eq!(a.unwrap(), 7);
    assert!(matches!(b, Err(ExecutorError::Shutdown)), "{b:?}");
    // The next job starts a new pool.
    let again = lp.run_in_executor(|| 9).unwrap();
    assert_eq!(run_bounded(&lp, again).unwrap(), 9);
}

#[test]
fn a_panic_in_a_job_arrives_as_executor_error_panicked() {
    let lp = EventLoop::new().unwrap();
    let job = lp.run_in_executor(|| -> u32 { panic!("job boom") }).unwrap();
    match run_bounded(&lp, job) {
        Err(ExecutorError::Panicked(p)) => assert_eq!(p.message(), "job boom"),
        other => panic!("expected Panicked, got {other:?}"),
    }
    // The worker survived the panic; the pool keeps serving.
    let job = lp.run_in_executor(|| 5u32).unwrap();
    assert_eq!(run_bounded(&lp, job).unwrap(), 5);
    let e: io::Error = ExecutorError::Shutdown.into();
    assert!(e.to_string().contains("run_in_executor"), "{e}");
}

#[test]
fn run_in_executor_on_a_closed_loop_is_an_error_naming_it() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    lp.close().unwrap();
    let e = h.run_in_executor(|| 1).unwrap_err();
    assert_eq!(e.kind(), LoopErrorKind::Closed);
    assert_eq!(e.operation(), "run_in_executor");
    assert_eq!(e.to_string(), "run_in_executor: the event loop is closed");
    let e = h.set_default_executor(2).unwrap_err();
    assert!(e.to_string().starts_with("set_default_executor: "), "{e}");
    h.shutdown_default_executor(); // a no-op, not a panic
}
