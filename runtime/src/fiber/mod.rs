//! Fibers: greenlet's stackful coroutines, and blocking-style code on evloop's loop.
//!
//! A [`Fiber`] is a function running on a stack of its own. [`Fiber::switch`] stops the
//! current fiber where it is (in the middle of any call chain, which is what "stackful" means)
//! and resumes another one, handing it a [`Value`]; the value the current fiber gets back is
//! whatever is handed to it when something switches back to it. The model and the names are
//! greenlet's (gevent's coroutines; source note 004):
//!
//! * every thread has a **main fiber**, the thread's own stack ([`Fiber::main`]); the fiber
//!   running now is [`Fiber::current`];
//! * a new fiber's **parent** is the fiber that created it ([`Fiber::parent`],
//!   [`Fiber::set_parent`], which refuses cycles); when a fiber's function returns, its value
//!   is switched to its parent (to the nearest one still alive), and a switch to a dead fiber
//!   goes to its parent too;
//! * a **panic** inside a fiber is caught at the bottom of its stack and delivered to its
//!   parent as [`FiberError::Panicked`], the return value of the parent's pending `switch`;
//!   no panic ever unwinds from one stack into another;
//! * [`Fiber::throw`] makes a suspended fiber's pending `switch` unwind with [`FiberExit`]
//!   (greenlet's `GreenletExit`): its destructors run, and its parent receives a
//!   `Value` holding `FiberExit`; dropping the last handle of a suspended fiber does the same,
//!   so a fiber is never leaked with its stack and its destructors pending;
//! * a fiber that refers back to its parent or to a sibling while it is suspended does so
//!   without a handle, so that no two suspended fibers keep each other alive:
//!   [`Fiber::switch_to_parent`], and [`WeakFiber`] ([`Fiber::downgrade`]), a handle that does not
//!   keep its fiber from being unwound;
//! * for code that wants no such cycle to be possible at all, [`scope`] makes fibers whose
//!   handles ([`Fiber<Scoped<'s>>`](Scoped)) cannot leave the closure that made them (no fiber
//!   body, switch value or thread-local can hold one), and unwinds them when it ends. `Fiber`
//!   alone is `Fiber<Unscoped>` ([`Brand`]), the handle of [`Fiber::new`].
//!
//! ```
//! use evloop::fiber::Fiber;
//!
//! let child = Fiber::new(|first| {
//!     let first = first.downcast::<u64>().unwrap();
//!     // Back to the parent (main) with a value; resumed by the next switch to us.
//!     let second = Fiber::main().switch(first + 1).unwrap().downcast::<u64>().unwrap();
//!     first + second // returning switches to the parent
//! });
//! assert_eq!(child.switch(1u64).unwrap().downcast::<u64>().ok(), Some(2));
//! assert_eq!(child.switch(10u64).unwrap().downcast::<u64>().ok(), Some(11));
//! assert!(child.is_dead());
//! ```
//!
//! # On the loop (gevent's hub)
//! [`spawn`] runs a function in a fiber driven by the running loop, as a task: the task's
//! future switches into the fiber each time it is polled. Inside, [`block_on`] polls any evloop
//! future with the task's waker; while it is pending it switches back out, so the task's poll
//! returns `Pending`, and the task's next wake switches in again. Blocking-style code
//! ([`sleep`], [`accept`], [`read`], [`write_all`], ...) and async tasks share one loop, with the
//! loop's wakers, cancellation and trace mode.
//!
//! # How data flows
//! `fibers.rs` keeps the fibers of a thread: which one runs (`FIBERS`), and for each its parent
//! link and its inbox; `transfer.rs` hands every switch a message (a value, a throw, or an error)
//! through the target's inbox, and starts and ends fibers. `switch.rs` does the switch itself in
//! assembly (the only `unsafe` code of this folder) and holds each fiber's one state
//! (`switch::State`: fresh, running, suspended, dead), `stack.rs` maps, guards, labels and
//! recycles the stacks. The public face: `handle.rs` ([`Fiber`]), `builder.rs` ([`Builder`]),
//! `error.rs` ([`FiberError`], [`FiberExit`]), `value.rs` ([`Value`]), `weak.rs` ([`WeakFiber`],
//! [`Fiber::switch_to_parent`]), `scope.rs` ([`scope`], [`Scope`], the brands), and `hub.rs`, the loop
//! integration ([`spawn`], [`block_on`]). In trace mode (`EVLOOP_TRACE=1`) every switch and
//! every fiber's end is a trace line: `Fiber-2 switch -> main (7u64)`,
//! `Fiber-1 -> dead, 42u64 to main`.
//!
//! # The `fiber/` folder (layer 4)
//! A sibling of `os/`: it builds on `task/` (tasks, `sleep`), `io/` (sockets for the blocking
//! helpers) and `event_loop/` (the trace hook), and nothing imports it.

#[cfg(any(test, feature = "bench-internals"))]
#[doc(hidden)]
pub mod bench;
mod builder;
mod error;
mod fibers;
mod handle;
mod hub;
pub(crate) mod stack;
// The register switch: the one module of this folder allowed to use `unsafe` (docs/design.md,
// ground rules; tests/tests/workspace_rules.rs checks this exact line).
mod scope;
#[allow(unsafe_code)]
mod switch;
mod transfer;
mod value;
mod weak;

pub use builder::Builder;
pub use error::{FiberError, FiberExit};
pub use handle::Fiber;
pub use hub::{accept, accept_unix, block_on, connect, read, read_exact, sleep, spawn, write, write_all, yield_now};
pub use scope::{Brand, Scope, Scoped, Unscoped, scope};
pub use stack::{GuardKind, StackStats, stack_stats};
pub use value::Value;
pub use weak::WeakFiber;
