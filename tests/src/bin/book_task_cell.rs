//! The program behind chapter 11 of the book (docs/11-the-task-cell.md): what a task costs and
//! how wakes reach it, counted and traced.
//!
//! - `allocations`: a global allocator that counts this thread's allocations shows one
//!   allocation per spawn (the task cell) and none for thousands of timer wakes.
//! - `wakes`: with trace mode on, a hundred wakes of a parked task give one step; a wake from
//!   another thread arrives through the remote queue; a wake of a finished task does nothing.
//!
//! ```text
//! cargo run -q -p evloop-tests --bin book_task_cell -- allocations
//! EVLOOP_TRACE=1 cargo run -q -p evloop-tests --bin book_task_cell -- wakes
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::error::Error;
use std::task::Waker;
use std::time::Duration;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn allocations() -> u64 {
    ALLOCS.with(Cell::get)
}

// SAFETY: every call goes to the system allocator unchanged; counting touches only a
// const-initialised thread-local `Cell`, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's arguments.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Spawns `n` tasks, each sleeping `rounds` times on a virtual clock, and returns the
/// allocations made from the first spawn to the last completion.
async fn sleepers(n: usize, rounds: usize) -> u64 {
    let mut handles = Vec::with_capacity(n);
    let before = allocations();
    for i in 0..n {
        handles.push(evloop::spawn(async move {
            for r in 0..rounds {
                evloop::time::sleep(Duration::from_micros((i + r) as u64 % 7 + 1)).await;
            }
        }));
    }
    for h in handles {
        let _ = h.await;
    }
    allocations() - before
}

async fn allocations_case() -> Result<(), Box<dyn Error>> {
    let _ = sleepers(100, 100).await; // warm-up: the timer heap and ready queue reach their working size
    for rounds in [1, 10, 100] {
        let made = sleepers(100, rounds).await;
        println!("100 tasks x {rounds:>3} sleeps each: {made:>3} allocations");
    }
    Ok(())
}

async fn wakes_case() -> Result<(), Box<dyn Error>> {
    let (tx, rx) = std::sync::mpsc::channel::<Waker>();
    let parked = evloop::spawn(async move {
        let mut polls = 0;
        std::future::poll_fn(|cx| {
            polls += 1;
            if polls == 1 {
                let _ = tx.send(cx.waker().clone());
                return std::task::Poll::Pending;
            }
            std::task::Poll::Ready(())
        })
        .await;
        polls
    });
    evloop::task::yield_now().await; // the parked task's first step runs
    let waker = rx.recv()?;
    eprintln!("main: waking it 100 times");
    for _ in 0..100 {
        waker.wake_by_ref();
    }
    let polls = parked.await?;
    eprintln!("main: it was polled {polls} times");

    let second = evloop::spawn(async move {
        let mut woken_elsewhere = false;
        std::future::poll_fn(move |cx| {
            if woken_elsewhere {
                return std::task::Poll::Ready(());
            }
            woken_elsewhere = true;
            let waker = cx.waker().clone();
            std::thread::spawn(move || {
                // Long enough for the loop to be blocked in epoll_pwait2 with nothing to do.
                std::thread::sleep(Duration::from_millis(50));
                waker.wake();
            });
            std::task::Poll::Pending
        })
        .await;
    });
    second.await?;
    eprintln!("main: a wake from another thread resumed it");
    waker.wake();
    evloop::task::yield_now().await;
    eprintln!("main: a wake of a finished task did nothing");
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let case = std::env::args().nth(1).unwrap_or_else(|| "allocations".into());
    let builder = evloop::event_loop::EventLoop::builder().virtual_clock(case == "allocations");
    match case.as_str() {
        "allocations" => builder.run(allocations_case())??,
        "wakes" => builder.run(wakes_case())??,
        other => return Err(format!("unknown case {other:?} (allocations, wakes)").into()),
    }
    Ok(())
}
