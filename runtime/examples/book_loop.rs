//! The small programs behind the traces of chapter 1 of the book (docs/01-the-event-loop.md),
//! one per subcommand. Run one with the loop narrating itself:
//!
//! ```sh
//! EVLOOP_TRACE=1 cargo run -q -p evloop --example book_loop -- many-wakes 2>&1
//! ```
//!
//! - `cancelled-timer`: a 10 s `call_later` cancelled at once; phase 1 of the next iteration
//!   drops it from the heap.
//! - `many-wakes`: a callback wakes a parked task three times; the task is polled once.
//! - `remote-wake`: a job on the executor's thread wakes the task from another thread, through
//!   the remote queue and the loop's eventfd.
//! - `sleep-zero`: `sleep(Duration::ZERO)` does not yield, `yield_now()` does.

use std::cell::RefCell;
use std::error::Error;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

async fn cancelled_timer() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let h = lp.call_later(Duration::from_secs(10), || println!("never runs"))?;
    h.cancel();
    evloop::task::yield_now().await;
    Ok(())
}

/// A future that hands its waker out on its first poll and is ready on the next one; it counts
/// how often it was polled.
struct Parked {
    polls: u32,
    waker: Rc<RefCell<Option<Waker>>>,
}

impl Future for Parked {
    type Output = u32;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        self.polls += 1;
        if self.polls == 1 {
            *self.waker.borrow_mut() = Some(cx.waker().clone());
            return Poll::Pending;
        }
        Poll::Ready(self.polls)
    }
}

async fn many_wakes() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let slot = Rc::new(RefCell::new(None::<Waker>));
    let s = slot.clone();
    // Runs in the next iteration, while the task is parked: three wakes, one poll.
    lp.call_soon(move || {
        if let Some(w) = s.borrow_mut().take() {
            w.wake_by_ref();
            w.wake_by_ref();
            w.wake();
        }
    })?;
    let polls = Parked { polls: 0, waker: slot }.await;
    println!("polled {polls} times");
    Ok(())
}

async fn remote_wake() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let job = lp.run_in_executor(|| {
        std::thread::sleep(Duration::from_millis(20));
        7
    })?;
    println!("job gave {}", job.await?);
    Ok(())
}

async fn sleep_zero() -> Result<(), Box<dyn Error>> {
    evloop::time::sleep(Duration::ZERO).await;
    println!("after sleep(ZERO)");
    evloop::task::yield_now().await;
    println!("after yield_now");
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let which = std::env::args().nth(1).unwrap_or_default();
    match which.as_str() {
        "cancelled-timer" => evloop::run(cancelled_timer())?,
        "many-wakes" => evloop::run(many_wakes())?,
        "remote-wake" => evloop::run(remote_wake())?,
        "sleep-zero" => evloop::run(sleep_zero())?,
        _ => Err("usage: book_loop cancelled-timer | many-wakes | remote-wake | sleep-zero".into()),
    }
}
