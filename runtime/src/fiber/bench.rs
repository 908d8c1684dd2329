//! Internals that `make bench` measures and nothing else calls: the register switch alone,
//! without the fiber layer above it. Compiled for the lib tests (which run it small, as a check)
//! and with the `bench-internals` feature, which `make bench-build` turns on for
//! `tests/examples/peer_fiber.rs raw_switch`; hidden, and not part of the API.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::fiber::stack;
use crate::fiber::switch::{self, Context, Finish, State};

thread_local! {
    /// The thread's own context and the fiber's, for the fiber's entry (a plain `fn`).
    static PEERS: RefCell<Option<(Rc<Context>, Rc<Context>)>> = const { RefCell::new(None) };
}

/// Switches back to the thread's context with the number of its turn until it is passed 0,
/// then ends.
fn bounce(first: usize) -> Finish {
    let Some((main, me)) = PEERS.with(|p| p.borrow_mut().take()) else {
        panic!("fiber::bench::raw_switch sets the peers first");
    };
    let mut turns = 0;
    let mut arg = first;
    while arg != 0 {
        turns += 1;
        arg = switch::switch(&me, &main, turns);
    }
    drop(me);
    Finish { to: main, arg: turns }
}

/// `n` round trips between a new thread's own context and one fiber context (`2n` register
/// switches, each with `Context`'s checks), then the fiber's end on its own; returns how long
/// the round trips took. Panics if a switch brings back the wrong word.
#[doc(hidden)]
pub fn raw_switch(n: usize) -> Duration {
    std::thread::spawn(move || {
        let Some(main) = Context::for_thread() else {
            panic!("a new thread has no context yet");
        };
        let fiber = Context::new(bounce);
        fiber.give_stack(stack::allocate(64 * 1024, "raw-switch").expect("a fiber stack"));
        PEERS.with(|p| *p.borrow_mut() = Some((main.clone(), fiber.clone())));
        let mut sum = 0usize;
        let started = Instant::now();
        for _ in 0..n {
            sum = sum.wrapping_add(switch::switch(&main, &fiber, 1));
        }
        let took = started.elapsed();
        assert_eq!(
            sum,
            n.wrapping_mul(n.wrapping_add(1)) / 2,
            "the fiber's turns, in order"
        );
        assert_eq!(switch::switch(&main, &fiber, 0), n, "the fiber ends with its count");
        assert_eq!(fiber.state(), State::Dead);
        took
    })
    .join()
    .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_raw_ping_pong_switches_back_and_forth_and_the_fiber_ends() {
        super::raw_switch(1000);
        super::raw_switch(0);
    }
}
