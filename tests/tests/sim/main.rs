//! Deterministic simulation (`evloop::sys::sim`): evloop's real loop, reactor, transports and
//! streams on the simulated kernel behind the syscall layer: the same seed gives the same trace,
//! faults are survived, time jumps, threads take turns, the test attribute, the boundary rule
//! (no simulation branch above the syscall layer), and one test per bug found outside evloop's
//! own tests (`outside_bugs`, which `scripts/sim-reintroduce.sh` checks against the bugs); and
//! the behaviour-contract and stream suites of the real-kernel binaries, run here a second time
//! (`contracts`); and the transport and stream edges a real kernel's loopback rarely reaches
//! (`transport_edges`, `write_buffer`, `stream_halves`), written to kill the mutants the
//! simulation suite let survive in `scripts/mutation.sh`'s sample.
//!
//! One binary for the folder: each simulated kernel is installed on its own test thread and
//! watches only the descriptors it created, so the tests share one process. `sim_replay.rs` stays
//! standalone: it starts child processes, and a fork while a simulation runs delays when a close
//! is seen.

mod attribute;
mod boundary;
mod contracts;
mod determinism;
mod faults;
mod options;
mod outside_bugs;
mod stream_halves;
mod support;
mod threads;
mod time;
mod transport_edges;
mod write_buffer;

// The behaviour-contract suites, a second time on the simulated kernel (contracts.rs says how).
use contracts::{prop_config, run_on_simulated_kernel};
use evloop_macros::simulated_test as contract_test;
#[path = "../event_loop/fds.rs"]
mod contract_fds;
#[path = "../event_loop/contract.rs"]
mod contract_loop;
#[path = "../task/promise_contract.rs"]
mod contract_promise;
#[path = "../task/contract.rs"]
mod contract_task;
#[path = "../task/time_contract.rs"]
mod contract_time;
// The stream suites, the same way (their `test` is swappable as the contract files' is).
#[path = "../io/prop_stream_reader.rs"]
mod contract_prop_stream_reader;
#[path = "../io/stream_closing.rs"]
mod contract_stream_closing;
#[path = "../net_streams.rs"]
mod contract_streams;
#[path = "../io/tcp.rs"]
mod contract_tcp;
