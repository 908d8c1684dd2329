//! Seed 002, "await task": `main` wraps `func()` (which just returns 1) in a task named
//! `Task-func`, awaits the task and prints `Result: 1`.
//!
//! (The `seed*` examples are Rust versions of the short Python asyncio programs in the study
//! notes that evloop's design was worked out from, numbered after the note each comes from.)
//!
//! The simplest picture of a task handing control back and forth. In trace mode
//! (`EVLOOP_TRACE=1`): `Task-1` (main) creates `Task-func`, whose first step is only queued, then
//! parks on it (`-> pending on Task-2`, the task's number); the next iteration steps `Task-func`,
//! which finishes at once and wakes `Task-1` directly through the waker it left in the task's
//! join slot (asyncio does the same through a `Task.__wakeup` done callback); one iteration later
//! `Task-1` resumes with the value.

use std::error::Error;

use evloop::task::TaskBuilder;

async fn func() -> u32 {
    1
}

async fn main_task() -> Result<(), Box<dyn Error>> {
    // Creating the task queues its first step; nothing of func() has run yet.
    let task = TaskBuilder::new().name("Task-func").spawn(func())?;
    // Awaiting a task that is not finished stores our waker in it and returns Pending.
    let res = task.await?;
    println!("Result: {res}");
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    evloop::run(main_task())? // asyncio.run(main())
}
