//! The operating-system layer: what a program needs from the OS beyond sockets, each built on
//! the layers below it.
//!
//! - [`signal`]: Unix signals delivered to the loop (asyncio's `add_signal_handler`, awaitable
//!   `recv` and `ctrl_c`), through a `sigaction` handler that writes to a per-loop eventfd.
//! - [`process`]: subprocesses waited for through pidfds on the reactor, with async pipes for
//!   their stdio (`io::pipe`) and `communicate` built on `sync`'s `gather`.
//!
//! This is the top layer of the runtime: it may use everything below (`sync`, `io`, `task`,
//! `event_loop`) and nothing imports it. Its per-loop state (the signal dispatcher) sits in one
//! of the loop's typed slots (`event_loop::slots`), so the loop can close it without knowing its
//! type. (The executor behind `run_in_executor` is a loop-layer mechanism, `event_loop::executor`:
//! the I/O layer's name resolution runs on it too.)

pub mod process;
pub mod signal;
