//! Seed 000's first program, `asyncio.run(f())` where `f` sleeps then returns 10.
//!
//! (The `seed*` examples are Rust versions of the short Python asyncio programs in the study
//! notes that evloop's design was worked out from, numbered after the note each comes from.)
//!
//! ```python
//! async def f():
//!     await asyncio.sleep(5)
//!     return 10
//! print(asyncio.run(f()))
//! ```
//! Run it with `EVLOOP_TRACE=1` to watch the loop: the task's first step, the timer in the
//! heap, one blocking poll, the timer expiring, the second step returning 10.

use std::time::Duration;

async fn f() -> u32 {
    evloop::time::sleep(Duration::from_millis(500)).await;
    10
}

fn main() -> Result<(), evloop::task::RunError> {
    println!("{}", evloop::run(f())?);
    Ok(())
}
