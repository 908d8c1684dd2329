//! Seed 002, "await coro": `main` awaits the coroutine `intermediate()`, which wraps `func()`
//! (returns 1) in a task named `Task-func` and awaits that task; `main` prints `Result: 1`.
//!
//! (The `seed*` examples are Rust versions of the short Python asyncio programs in the study
//! notes that evloop's design was worked out from, numbered after the note each comes from.)
//!
//! The point of the program: awaiting a plain `async fn` does not create a task. Its body runs
//! inside the caller's step, like an inlined function call, and whatever it waits on is waited
//! on by the caller's task. In trace mode (`EVLOOP_TRACE=1`) the output is the same as
//! `seed002_await_task`'s: there is no task for `intermediate`, and `Task-1` (main) itself is
//! the one that goes `-> pending on Task-2` and is woken when `Task-func` finishes.

use std::error::Error;

use evloop::task::TaskBuilder;

async fn func() -> u32 {
    1
}

/// A plain coroutine: `main`'s await polls this future inside `main`'s own task step.
async fn intermediate() -> Result<u32, Box<dyn Error>> {
    let task = TaskBuilder::new().name("Task-func").spawn(func())?;
    // When this await is Pending, the Pending travels up through `intermediate`'s future into
    // main's poll, and main's task parks with its waker stored in Task-func.
    let res = task.await?;
    Ok(res)
}

async fn main_task() -> Result<(), Box<dyn Error>> {
    // No new task: intermediate()'s body runs right here, in Task-1's step.
    let res = intermediate().await?;
    println!("Result: {res}");
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    evloop::run(main_task())? // asyncio.run(main())
}
