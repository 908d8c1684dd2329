//! Fibers, narrated by trace mode: the trace of book chapter 10 (docs/10-fibers.md).
//!
//! ```text
//! EVLOOP_TRACE=1 cargo run -q -p evloop --example fiber_trace 2>&1
//! ```
//!
//! Part 1 is greenlet's own example from source note 004: `gr1` switches to `gr2`, `gr2` switches
//! back to `gr1`, `gr1` returns to its parent (the main fiber), and `gr2` is left suspended in the
//! middle of its function until its last handle goes, which unwinds it.
//!
//! Part 2 is gevent's idea on evloop's loop: a fiber reads a socket in blocking style
//! (`fiber::read`) while an ordinary task writes to the other end after a sleep. The fiber's
//! read parks it, the loop runs the task, the socket's readiness wakes the fiber's task, and the
//! task's poll switches back into the fiber, which finds the bytes.

use std::cell::RefCell;
use std::error::Error;
use std::rc::Rc;
use std::time::Duration;

use evloop::fiber::{self, Builder, Fiber};
use evloop::io::AsyncWriteExt;
use evloop::net::UnixStream;

fn greenlet_example() -> Result<(), Box<dyn Error>> {
    // gr1 needs gr2 and gr2 needs gr1: each finds the other through a slot.
    let gr2_slot: Rc<RefCell<Option<Fiber>>> = Rc::default();
    let slot = gr2_slot.clone();
    let gr1 = Builder::new().name("gr1").build(move |_| {
        println!("[gr1] main -> test1");
        let gr2 = slot.borrow().clone().expect("gr2 exists");
        gr2.switch(()).expect("gr2 switches back");
        println!("[gr1] test1 <- test2");
        "test1 done"
    });
    let gr1_handle = gr1.clone();
    let gr2 = Builder::new().name("gr2").build(move |_| {
        println!("[gr2] test1 -> test2");
        gr1_handle.switch(()).expect("nobody switches back to gr2");
        println!("This is never printed.");
    });
    *gr2_slot.borrow_mut() = Some(gr2.clone());
    let result = gr1.switch(())?;
    println!("{:?}", result.downcast::<&str>().unwrap_or("?"));
    println!("gr1 dead: {}, gr2 dead: {}", gr1.is_dead(), gr2.is_dead());
    // Dropping gr2's last handles unwinds it (greenlet raises GreenletExit in it).
    drop(gr2_slot.borrow_mut().take());
    drop(gr2);
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    evloop::run(async {
        greenlet_example()?;

        let (mut theirs, mut ours) = UnixStream::pair()?;
        let reader = Builder::new().name("reader").spawn(move || {
            let mut buf = [0u8; 16];
            let n = fiber::read(&mut theirs, &mut buf)?;
            println!(
                "[reader] read {:?} in blocking style",
                String::from_utf8_lossy(&buf[..n])
            );
            Ok::<usize, std::io::Error>(n)
        })?;
        let writer = evloop::spawn(async move {
            evloop::time::sleep(Duration::from_millis(5)).await;
            ours.write_all(b"hello").await
        });
        writer.await??;
        let n = reader.await??;
        println!("the reader's task returned {n}");
        Ok::<(), Box<dyn Error>>(())
    })?
}
