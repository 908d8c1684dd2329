// Standalone binary: it installs a counting global allocator.
//! Allocations on the task fast paths, counted by a global allocator that counts this thread's
//! calls: a spawn costs exactly one allocation (the task cell), and a sleep that expires wakes its
//! task without allocating anything (the waker is a pointer to the cell; the timer heap and the
//! ready queue reuse their capacity).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use evloop::event_loop::EventLoop;
use evloop_tests::virtual_loop;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn allocations() -> u64 {
    ALLOCS.with(Cell::get)
}

fn count() {
    // `try_with`: the thread-local may already be gone while a thread exits.
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every call is passed to the system allocator unchanged; counting touches only a
// const-initialised thread-local `Cell`, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's arguments.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's arguments.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations made while `tasks` tasks each sleep `rounds` times, on a virtual clock (no real
/// waiting), from the first spawn to the last task's completion.
fn sleeping_run(tasks: usize, rounds: usize) -> u64 {
    let lp = virtual_loop();
    lp.run_until_complete(async move {
        let mut handles = Vec::with_capacity(tasks);
        let before = allocations();
        for i in 0..tasks {
            handles.push(evloop::spawn(async move {
                for r in 0..rounds {
                    evloop::time::sleep(Duration::from_micros(((i + r) % 13 + 1) as u64)).await;
                }
            }));
        }
        for h in handles.drain(..) {
            h.await.expect("task");
        }
        allocations() - before
    })
    .expect("run")
}

#[test]
fn a_timer_wake_allocates_nothing() {
    let tasks = 200;
    let short = sleeping_run(tasks, 5);
    let long = sleeping_run(tasks, 25);
    // The extra 20 rounds are 4,000 more sleeps, wakes and polls; they must cost nothing. (The
    // first rounds pay for growing the timer heap and the ready queue, in both runs alike.)
    assert_eq!(
        long.saturating_sub(short),
        0,
        "allocations: {short} with 5 rounds, {long} with 25 rounds of {tasks} sleeping tasks"
    );
}

#[test]
fn a_spawn_is_one_allocation() {
    let lp = EventLoop::new().expect("loop");
    let n = 1_000;
    let (warm, counted) = lp
        .run_until_complete(async move {
            // Every spawn comes from the same line (a task records its creation site, interned
            // the first time a site is seen).
            fn spawn_into(handles: &mut Vec<evloop::task::Task<usize>>, n: usize) {
                for i in 0..n {
                    handles.push(evloop::spawn(async move { i }));
                }
            }
            // Warm-up: the task table, the ready queue and the site table reach their working size.
            let mut warm_up = Vec::with_capacity(2 * n);
            spawn_into(&mut warm_up, 2 * n);
            let mut sum = 0;
            for t in warm_up {
                sum += t.await.expect("task");
            }
            let mut handles = Vec::with_capacity(n);
            let before = allocations();
            spawn_into(&mut handles, n);
            let spawned = allocations() - before;
            for t in handles {
                sum += t.await.expect("task");
            }
            (sum, spawned)
        })
        .expect("run");
    assert!(warm > 0);
    assert_eq!(counted, n as u64, "{counted} allocations for {n} spawns");
}
