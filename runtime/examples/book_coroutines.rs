//! The programs behind chapter 5 of the book (docs/05-coroutines-and-futures.md):
//!
//! - `machine`: an `async fn` and the state machine the compiler makes of it, written by hand,
//!   run one after the other as tasks: their traces are the same.
//! - `by-hand`: a future polled by hand, without a loop: each `poll` is a `send(None)`, and
//!   dropping a suspended future is a generator's `close()`.

use std::error::Error;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use evloop::task::YieldNow;

/// The `async fn`: two suspension points.
async fn add_later(a: u32, b: u32) -> u32 {
    println!("add_later({a}, {b}): started");
    evloop::task::yield_now().await;
    let x = a * 10;
    println!("add_later: resumed once, x = {x}");
    evloop::task::yield_now().await;
    println!("add_later: resumed twice, returning {}", x + b);
    x + b
}

/// The same function as the compiler sees it: one variant per place where it can be suspended,
/// holding exactly what is alive there (the arguments not used yet, the locals computed so far,
/// and the future being awaited).
enum AddLater {
    Start { a: u32, b: u32 },
    FirstAwait { a: u32, b: u32, awaiting: YieldNow },
    SecondAwait { x: u32, b: u32, awaiting: YieldNow },
    Done,
}

impl Future for AddLater {
    type Output = u32;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        loop {
            match std::mem::replace(&mut *self, AddLater::Done) {
                AddLater::Start { a, b } => {
                    println!("AddLater({a}, {b}): started");
                    *self = AddLater::FirstAwait {
                        a,
                        b,
                        awaiting: evloop::task::yield_now(),
                    };
                }
                AddLater::FirstAwait { a, b, mut awaiting } => match Pin::new(&mut awaiting).poll(cx) {
                    Poll::Pending => {
                        *self = AddLater::FirstAwait { a, b, awaiting };
                        return Poll::Pending;
                    }
                    Poll::Ready(()) => {
                        let x = a * 10;
                        println!("AddLater: resumed once, x = {x}");
                        *self = AddLater::SecondAwait {
                            x,
                            b,
                            awaiting: evloop::task::yield_now(),
                        };
                    }
                },
                AddLater::SecondAwait { x, b, mut awaiting } => match Pin::new(&mut awaiting).poll(cx) {
                    Poll::Pending => {
                        *self = AddLater::SecondAwait { x, b, awaiting };
                        return Poll::Pending;
                    }
                    Poll::Ready(()) => {
                        println!("AddLater: resumed twice, returning {}", x + b);
                        return Poll::Ready(x + b);
                    }
                },
                AddLater::Done => panic!("AddLater polled after it returned"),
            }
        }
    }
}

async fn machine() -> Result<(), Box<dyn Error>> {
    let compiled = evloop::task::TaskBuilder::new()
        .name("async-fn")
        .spawn(add_later(4, 2))?;
    println!("the async fn gave {}", compiled.await?);
    let by_hand = evloop::task::TaskBuilder::new()
        .name("by-hand")
        .spawn(AddLater::Start { a: 4, b: 2 })?;
    println!("the hand-written machine gave {}", by_hand.await?);
    Ok(())
}

/// A waker that does nothing: polling by hand, nobody needs to be told.
struct Nobody;

impl Wake for Nobody {
    fn wake(self: Arc<Self>) {}
}

struct Guard(&'static str);

impl Drop for Guard {
    fn drop(&mut self) {
        println!("drop {}: the destructor is the `finally`", self.0);
    }
}

async fn holds_a_guard() -> u32 {
    let _g = Guard("guard");
    println!("holds_a_guard: running until its first await");
    evloop::task::yield_now().await;
    println!("holds_a_guard: resumed");
    evloop::task::yield_now().await;
    println!("never printed: the future is dropped first");
    1
}

fn by_hand() {
    let waker = Waker::from(Arc::new(Nobody));
    let mut cx = Context::from_waker(&waker);
    let mut fut = Box::pin(holds_a_guard());
    println!("created: nothing has run yet");
    println!("poll 1 -> {:?}", fut.as_mut().poll(&mut cx));
    println!("poll 2 -> {:?}", fut.as_mut().poll(&mut cx));
    println!("dropping the suspended future");
    drop(fut);
    println!("dropped");
}

fn main() -> Result<(), Box<dyn Error>> {
    match std::env::args().nth(1).unwrap_or_default().as_str() {
        "machine" => evloop::run(machine())?,
        "by-hand" => {
            by_hand();
            Ok(())
        }
        _ => Err("usage: book_coroutines machine | by-hand".into()),
    }
}
