//! Seed 002's opening program: two tasks, `n1` and `n2`, each run `func(num)`, which prints its
//! number, sleeps and returns the number; `main` creates both, waits for the pair with
//! `asyncio.wait` and prints `[result] 1` and `[result] 2`.
//!
//! (The `seed*` examples are Rust versions of the short Python asyncio programs in the study
//! notes that evloop's design was worked out from, numbered after the note each comes from.)
//!
//! evloop has no `wait` combinator yet, so [`wait_all`] below rebuilds the mechanism asyncio's
//! `wait` uses internally: a counter, a promise, and a done callback on every task that counts
//! down and resolves the promise when the last task finishes. In trace mode (`EVLOOP_TRACE=1`)
//! watch for the `run done callback` lines: a finished task never calls its callbacks itself, it
//! schedules them with `call_soon`, so each one runs in the iteration after the task completes.

use std::cell::Cell;
use std::error::Error;
use std::rc::Rc;
use std::time::Duration;

use evloop::task::{Promise, Task, TaskBuilder};

async fn func(num: u64) -> u64 {
    println!("{num}");
    // The Python program sleeps `num` seconds; 100 ms per unit keeps the demo quick.
    evloop::time::sleep(Duration::from_millis(100 * num)).await;
    num
}

/// Waits until every task in `tasks` has finished (asyncio's `wait(tasks)`, ALL_COMPLETED).
async fn wait_all<T: 'static>(tasks: &[Task<T>]) -> Result<(), Box<dyn Error>> {
    if tasks.is_empty() {
        return Ok(()); // asyncio refuses an empty set; nothing to wait for here.
    }
    // The waiter: a promise nobody else knows about. Awaiting it parks this task.
    let waiter: Promise<()> = evloop::event_loop::get_running_loop()?.create_future();
    let counter = Rc::new(Cell::new(tasks.len()));
    for task in tasks {
        let (counter, waiter) = (counter.clone(), waiter.clone());
        // Runs (via call_soon) after `task` finishes: the last one to finish resolves the waiter.
        task.add_done_callback(move |_finished| {
            counter.set(counter.get() - 1);
            if counter.get() == 0 && !waiter.done() {
                // Cannot fail: we just checked that the waiter is still pending.
                let _ = waiter.set_result(());
            }
        });
    }
    // Parks this task on the promise: `set_result` wakes it.
    waiter.wait().await?;
    Ok(())
}

async fn main_task() -> Result<(), Box<dyn Error>> {
    // Both tasks get their first step queued with call_soon; neither runs until we yield.
    let mut tasks = vec![
        TaskBuilder::new().name("n1").spawn(func(1))?,
        TaskBuilder::new().name("n2").spawn(func(2))?,
    ];
    wait_all(&tasks).await?;
    for task in &mut tasks {
        // `try_result` is asyncio's `task.result()`: the task is done, so it is there.
        let result = task.try_result().ok_or("wait_all returned before a task finished")??;
        println!("[result] {result}");
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    evloop::run(main_task())? // asyncio.run(main())
}
