//! The programs behind chapter 8 of the book (docs/08-handles-promises-tasks.md):
//!
//! - `handles`: `call_soon`, `call_later`, `call_at` and their handles: FIFO order, a callback
//!   scheduled by a callback waits for the next iteration, a zero delay runs after the handles
//!   already ready, a cancelled handle never runs.
//! - `promise`: a promise with two done callbacks and an awaiting task; completing it wakes the
//!   task and schedules the callbacks, never runs them inline; setting it twice is an error.
//! - `task`: a task's life: created, first step, parked on a promise, woken, done, and its own
//!   done callback.

use std::error::Error;
use std::time::Duration;

async fn handles() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let l = lp.clone();
    lp.call_soon(move || {
        println!("A: first call_soon");
        // Scheduled while phase 5 runs: it waits for the next iteration.
        let _ = l.call_soon(|| println!("D: call_soon from inside A"));
    })?;
    lp.call_soon(|| println!("B: second call_soon"))?;
    let cancelled = lp.call_soon(|| println!("never runs"))?;
    let soon_timer = lp.call_later(Duration::ZERO, || println!("C: call_later(0)"))?;
    let t0 = lp.time();
    let at = lp.call_at(t0 + Duration::from_millis(5), || println!("E: call_at(+5 ms)"))?;
    cancelled.cancel();
    println!("handles made; call_at's when() is {:?} after t0", at.when() - t0);
    println!("call_later(0) cancelled? {}", soon_timer.cancelled());
    evloop::time::sleep(Duration::from_millis(10)).await;
    Ok(())
}

async fn promise() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let p = lp.create_future::<u32>();
    p.add_done_callback(|p| println!("done callback 1: {:?}", p.result()));
    let removed = p.add_done_callback(|_| println!("never runs"));
    p.add_done_callback(|p| println!("done callback 2: {:?}", p.result()));
    println!("remove_done_callback -> {}", p.remove_done_callback(removed));
    let waiter = p.clone();
    let task = evloop::task::TaskBuilder::new()
        .name("waiter")
        .spawn(async move { println!("waiter got {:?}", waiter.wait().await) })?;
    evloop::task::yield_now().await; // let the waiter park on the promise
    println!("set_result(7) -> {:?}", p.set_result(7));
    println!("callbacks have not run yet: they are scheduled");
    println!("set_result(8) -> {:?}", p.set_result(8));
    p.add_done_callback(|_| println!("done callback 3, added after completion"));
    task.await?;
    Ok(())
}

async fn task_life() -> Result<(), Box<dyn Error>> {
    let lp = evloop::event_loop::get_running_loop()?;
    let p = lp.create_future::<&'static str>();
    let q = p.clone();
    lp.call_later(Duration::from_millis(5), move || drop(q.set_result("ready")))?;
    let child = evloop::task::TaskBuilder::new().name("child").spawn(async move {
        println!("child: first step, awaiting the promise");
        let v = p.wait().await;
        println!("child: woken with {v:?}");
        42
    })?;
    child.add_done_callback(|t| println!("child's done callback: state {:?}", t.state()));
    println!("main: child created, not run yet");
    println!("main: child gave {:?}", child.await);
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    match std::env::args().nth(1).unwrap_or_default().as_str() {
        "handles" => evloop::run(handles())?,
        "promise" => evloop::run(promise())?,
        "task" => evloop::run(task_life())?,
        _ => Err("usage: book_handles handles | promise | task".into()),
    }
}
