//! Issue 19 item 7: the per-task budget of ready operations (`event_loop/budget.rs`). A task
//! whose I/O is always ready (a peer that sends faster than it reads, a `copy` from a source
//! that never returns `Pending`) spends at most 128 ready operations per step, then yields to
//! the next iteration: a 10 ms timer fires and another task runs while the flood goes on.
//! Everything is asserted in loop iterations and in the order things happened, never in speed.

use std::cell::Cell;
use std::io::{self, Write as _};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use evloop::event_loop::{LoopHandle, get_running_loop};
use evloop::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use evloop_tests::net::tcp_with_std_peer;
use evloop_tests::run_on_new_loop;

/// tokio's budget, evloop's too.
const BUDGET: u64 = 128;

/// Counts operations per loop iteration and remembers the most any iteration saw.
struct PerIteration {
    lp: LoopHandle,
    iteration: Cell<u64>,
    in_iteration: Cell<u64>,
    most: Cell<u64>,
    total: Cell<u64>,
}

impl PerIteration {
    fn new() -> Rc<PerIteration> {
        Rc::new(PerIteration {
            lp: get_running_loop().unwrap(),
            iteration: Cell::new(u64::MAX),
            in_iteration: Cell::new(0),
            most: Cell::new(0),
            total: Cell::new(0),
        })
    }

    fn count(&self) {
        let now = self.lp.stats().iterations;
        if now != self.iteration.replace(now) {
            self.in_iteration.set(0);
        }
        self.in_iteration.set(self.in_iteration.get() + 1);
        self.most.set(self.most.get().max(self.in_iteration.get()));
        self.total.set(self.total.get() + 1);
    }
}

/// A 10 ms timer and a task that yields in a loop, both noting how much `ops` had done when
/// they ran.
struct Witnesses {
    timer_fired_at: Rc<Cell<Option<u64>>>,
    ticks: Rc<Cell<u64>>,
}

fn witnesses(ops: &Rc<PerIteration>) -> Witnesses {
    let timer_fired_at = Rc::new(Cell::new(None));
    let ticks = Rc::new(Cell::new(0));
    let (fired, seen) = (timer_fired_at.clone(), ops.clone());
    evloop::spawn(async move {
        evloop::time::sleep(Duration::from_millis(10)).await;
        fired.set(Some(seen.total.get()));
    });
    let t = ticks.clone();
    evloop::spawn(async move {
        loop {
            t.set(t.get() + 1);
            evloop::task::yield_now().await;
        }
    });
    Witnesses { timer_fired_at, ticks }
}

#[test]
fn a_flooding_reader_lets_a_timer_fire_and_another_task_run() {
    run_on_new_loop(async {
        let (mut ours, mut peer) = tcp_with_std_peer().await;
        // A peer that sends far faster than one-byte reads drain: the reads never see EAGAIN.
        let stop = Arc::new(AtomicBool::new(false));
        let flooding = stop.clone();
        let writer = std::thread::spawn(move || {
            let chunk = vec![b'x'; 64 * 1024];
            while !flooding.load(Ordering::Relaxed) && peer.write_all(&chunk).is_ok() {}
        });
        // Let the flood fill the socket before the first read.
        std::thread::sleep(Duration::from_millis(20));
        let reads = PerIteration::new();
        let w = witnesses(&reads);
        // Without the budget this loop never leaves its first step: cap it so the failure is
        // an assertion, not a hang.
        let mut byte = [0u8; 1];
        while w.timer_fired_at.get().is_none() && reads.total.get() < 2_000_000 {
            assert_eq!(ours.read(&mut byte).await.unwrap(), 1);
            reads.count();
        }
        stop.store(true, Ordering::Relaxed);
        drop(ours); // the writer's next write fails
        let at = w
            .timer_fired_at
            .get()
            .expect("the 10 ms timer fired while the reader was flooded");
        assert!(at < 2_000_000);
        assert!(w.ticks.get() > 0, "another task ran while the reader was flooded");
        assert!(
            reads.most.get() <= BUDGET,
            "at most one budget of reads per iteration, saw {}",
            reads.most.get()
        );
        let lp = get_running_loop().unwrap();
        lp.run_in_executor(move || writer.join().unwrap())
            .unwrap()
            .await
            .unwrap();
    });
}

/// A reader that always has `buf.len()` bytes ready (tokio's `repeat`), counting its reads; it
/// ends after `ENDLESS_CAP` reads so that, without the budget, the test fails instead of hanging.
struct Endless(Rc<PerIteration>);

const ENDLESS_CAP: u64 = 5_000_000;

impl AsyncRead for Endless {
    fn poll_read(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        if self.0.total.get() >= ENDLESS_CAP {
            return Poll::Ready(Ok(0));
        }
        self.0.count();
        Poll::Ready(Ok(buf.len()))
    }
}

/// A writer that takes everything at once.
struct Sink;

impl AsyncWrite for Sink {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[test]
fn a_copy_from_a_source_that_never_waits_lets_a_timer_fire_and_another_task_run() {
    run_on_new_loop(async {
        let reads = PerIteration::new();
        let w = witnesses(&reads);
        let source = reads.clone();
        let copying = evloop::spawn(async move { evloop::io::copy(&mut Endless(source), &mut Sink).await });
        while w.timer_fired_at.get().is_none() {
            evloop::task::yield_now().await;
        }
        assert!(!copying.done(), "the copy never ends: the timer fired while it ran");
        copying.abort();
        assert!(w.ticks.get() > 0, "another task ran while the copy ran");
        assert!(reads.total.get() > BUDGET, "the copy went on across iterations");
        assert!(
            reads.most.get() <= BUDGET,
            "at most one budget of reads per iteration, saw {}",
            reads.most.get()
        );
    });
}
