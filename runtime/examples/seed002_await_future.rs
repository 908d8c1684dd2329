//! Seed 002, "await future" (the Python docs' `set_after` example, slightly changed): `main`
//! gets the running loop, creates a bare future (here a [`Promise`]), starts a task named
//! `Task-set_after` that prints a line and sets the future's result to `"... world"`, prints
//! `hello ...`, then awaits the future and prints its value.
//!
//! (The `seed*` examples are Rust versions of the short Python asyncio programs in the study
//! notes that evloop's design was worked out from, numbered after the note each comes from.)
//!
//! In trace mode (`EVLOOP_TRACE=1`) follow the promise: `Task-1` (main) parks with
//! `-> pending on Promise#1`; `Task-set_after`'s step calls `set_result`, which logs
//! `Promise#1 set_result -> woke 1 awaiter` and queues `Task-1` (`wake Task-1`) in the same
//! breath; `Task-1` runs again in the next iteration and reads the value.

use std::error::Error;

use evloop::task::{InvalidStateError, Promise, TaskBuilder};

async fn set_after(fut: Promise<&'static str>, value: &'static str) -> Result<(), InvalidStateError> {
    println!("Task Running ...");
    // Stores the value, wakes every task awaiting `fut`, schedules its done callbacks.
    fut.set_result(value)
}

async fn main_task() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let fut: Promise<&'static str> = lp.create_future();

    // The Python program drops its task object; evloop's loop holds every task until it finishes,
    // so dropping the handle would be fine too. We keep it to check set_result's outcome below.
    let setter = TaskBuilder::new()
        .name("Task-set_after")
        .spawn(set_after(fut.clone(), "... world"))?;

    println!("hello ...");
    // Pending: our waker goes into the promise and this step ends here.
    println!("{}", fut.await?);

    // Already finished by now (it set the value), so this await completes without parking.
    setter.await??;
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    evloop::run(main_task())? // asyncio.run(main())
}
