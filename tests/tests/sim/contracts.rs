//! The behaviour-contract suites a second time, on the simulated kernel: the loop's
//! (`event_loop/contract.rs`, and its file-descriptor part `event_loop/fds.rs`), the task's (`task/contract.rs`), the promise's
//! (`task/promise_contract.rs`) and the time contract (`task/time_contract.rs`), and the stream
//! suites (`net_streams.rs`, `io/prop_stream_reader.rs`, `io/stream_closing.rs`, `io/tcp.rs`),
//! included into this binary unchanged (`main.rs` declares them with `#[path]`).
//!
//! How: each of those files takes its `#[test]` (and the property test its proptest config,
//! [`prop_config`]) from its binary's root (`use
//! crate::contract_test as test;`). In its own binary that is the built-in attribute; here it
//! is `evloop_macros::simulated_test`, which turns `fn name() { BODY }` into a built-in test
//! whose body is [`run_on_simulated_kernel`]`("module::name", || BODY)`: the body (which builds
//! its own loops, as a contract test does) runs under the simulation driver on [`SEEDS`] seeds
//! (`EVLOOP_SEEDS` changes it), with the driver's determinism check, shrinking and replay
//! (`EVLOOP_SEED=n cargo test --test sim contract_loop::name`).
//!
//! Tests that need the real kernel by their nature are in [`REAL_KERNEL_ONLY`] with the
//! reason; they print it and pass here (they run on the real kernel in their own binary).
//! Running the suites here found one divergence in the simulated kernel, fixed (a descriptor
//! `dup`ed behind the kernel's back, `OwnedFd::try_clone`, was not recognised as its file:
//! `State::resolve` in `syscalls/src/sim/state.rs`), and one hang, fixed too: a loop closing a
//! hundred simulated pipes at once made the kernel's reap of its level-triggered watch return the
//! same full batch of hang-ups forever (`Watch::reap` in `syscalls/src/sim/backing.rs` now takes
//! each close once and stops on a batch with nothing new).

use evloop::sys::sim::{__run_test, TestOptions};

/// Seeds per contract test (each also runs its first seed twice: the determinism check).
pub const SEEDS: u64 = 2;

/// Why a test that reads the real clock cannot run here.
const CLOCK: &str = "compares the loop's timing with `Instant::now()`, the real clock, which the simulation does not move (std reads it through the vDSO, not the syscall layer): the simulated clock jumps while no real time passes, so its deadlines land elsewhere and its seeds do not replay";
/// Why a test that counts the process's descriptors cannot.
const FDS: &str = "counts the process's real descriptors in /proc/self/fd: every simulated file is backed by a real pipe the kernel watches, so the count is the simulation's, and it changes when the simulated kernel reaps a close";
/// Why a test on a descriptor the simulation did not create cannot.
const REAL_FD: &str = "registers a std UnixStream pair (real descriptors) with the loop: a real descriptor cannot join a simulated epoll instance (EPERM), as documented for subprocesses and adopted sockets";
/// Why a test of real threads cannot.
const THREADS: &str = "wakes tasks from real std threads, which do not enter the simulated kernel: their wake-ups reach the loop at moments real timing decides, outside the seed's control (simulated threads, Kernel::spawn, are tested in sim/threads.rs)";

/// Why a test that takes a free port from the real kernel cannot.
const REAL_PORT: &str = "asks the real kernel for a free port (a std TcpListener bound and dropped): the port differs from run to run, so the trace of a seed does not replay";
/// Why a test that resolves a name on the executor cannot.
const EXECUTOR: &str = "resolves `localhost` on the loop's default executor, a real thread pool calling getaddrinfo: its result reaches the loop at moments real timing decides, and the simulated kernel serves no resolver";
/// Why a test that relies on Linux's loopback buffer autotuning cannot.
const AUTOTUNING: &str = "writes 1 MiB before the peer reads a byte: it relies on Linux growing loopback buffers past 1 MiB (tcp_wmem/tcp_rmem autotuning, up to 4 MiB and 6 MiB), while the simulated kernel keeps fixed 64 KiB send and 128 KiB receive buffers, so the writer waits for a reader that comes after it";

/// Why a test that relies on loopback UDP keeping datagrams in order cannot.
const UDP_ORDER: &str = "expects two UDP datagrams sent one after the other to arrive in that order, which Linux's loopback does but UDP does not promise: the simulated network draws each datagram's latency alone, so they overtake each other as on a real network (syscalls/src/sim/dgram.rs)";

/// Contract tests that cannot run on the simulated kernel, and why (matched as the end of the
/// test's path).
pub const REAL_KERNEL_ONLY: &[(&str, &str)] = &[
    (
        "contract_loop::run_once_runs_exactly_the_handles_ready_when_phase_5_began",
        CLOCK,
    ),
    ("contract_loop::call_later_never_runs_early", CLOCK),
    ("contract_loop::call_at_never_runs_early", CLOCK),
    (
        "contract_loop::timers_run_in_deadline_order_not_scheduling_order",
        CLOCK,
    ),
    ("contract_loop::equal_deadlines_run_in_scheduling_order", CLOCK),
    ("contract_loop::timer_handle_when_returns_the_deadline", CLOCK),
    (
        "contract_loop::a_timer_cancelled_after_it_expired_in_the_same_iteration_does_not_run",
        CLOCK,
    ),
    ("contract_loop::stop_from_a_timer_makes_run_forever_return", CLOCK),
    (
        "contract_loop::a_panicking_timer_callback_is_reported_naming_call_later",
        CLOCK,
    ),
    (
        "contract_time::time_sleep_created_before_the_loop_runs_is_not_early",
        CLOCK,
    ),
    ("contract_time::time_sleep_until_an_instant_is_not_early", CLOCK),
    ("contract_time::time_sleep_never_completes_early", CLOCK),
    (
        "contract_time::time_sub_millisecond_sleeps_are_not_rounded_to_a_millisecond",
        CLOCK,
    ),
    (
        "contract_time::time_sleep_until_created_before_the_loop_runs_is_not_early",
        CLOCK,
    ),
    (
        "contract_time::time_timeout_elapsed_when_the_future_does_not_win_and_drops_it_at_expiry",
        CLOCK,
    ),
    ("contract_time::time_nested_timeouts_inner_shorter", CLOCK),
    ("contract_time::time_nested_timeouts_outer_shorter", CLOCK),
    (
        "contract_time::time_thousand_tasks_sleeping_random_durations_all_complete_none_early",
        CLOCK,
    ),
    (
        "contract_loop::zero_and_negative_delays_run_in_the_next_iteration_after_already_ready_handles",
        CLOCK,
    ),
    (
        "contract_loop::zero_delay_timer_scheduled_by_a_callback_waits_for_the_next_iteration",
        CLOCK,
    ),
    (
        "contract_loop::timer_handle_when_of_a_past_deadline_is_the_instant_given",
        CLOCK,
    ),
    (
        "contract_loop::loop_time_is_monotonic_and_never_ahead_of_instant_now",
        CLOCK,
    ),
    (
        "contract_loop::stop_before_run_forever_runs_exactly_one_iteration",
        CLOCK,
    ),
    (
        "contract_time::time_sleep_until_a_past_instant_completes_at_once",
        CLOCK,
    ),
    (
        "contract_task::task_wake_from_another_thread_wakes_a_loop_blocked_in_poll",
        THREADS,
    ),
    ("contract_task::task_wake_after_the_loop_closed_is_harmless", THREADS),
    (
        "contract_task::a_waker_outlives_its_task_and_its_loop_and_wakes_harmlessly_from_any_thread",
        THREADS,
    ),
    ("contract_loop::closing_releases_every_fd_the_loop_opened", FDS),
    ("contract_task::task_busy_task_does_not_starve_io_or_timers", REAL_FD),
    ("contract_task::task_wakes_from_many_threads_all_arrive", THREADS),
    // The stream suite (net_streams.rs).
    (
        "contract_streams::two_hundred_concurrent_connections_through_one_server_and_fds_back_to_baseline",
        FDS,
    ),
    (
        "contract_streams::connecting_to_a_closed_port_is_econnrefused_naming_the_address",
        REAL_PORT,
    ),
    (
        "contract_streams::open_connection_to_localhost_resolves_through_the_executor",
        EXECUTOR,
    ),
    (
        "contract_streams::streams_work_with_async_read_ext_and_async_write_ext",
        AUTOTUNING,
    ),
    // The sockets and transports suite (io/tcp.rs).
    ("contract_tcp::udp_send_to_recv_from_and_connect", UDP_ORDER),
];

/// Proptest cases per seed of an included property test (prop_stream_reader.rs runs 512 in
/// its own binary, each on a fresh loop).
pub const PROP_CASES: u32 = 64;

/// The proptest config of an included property test, on the simulated kernel: [`PROP_CASES`]
/// cases drawn from a fixed proptest seed, so that a simulation seed's run replays (proptest
/// seeds itself from the OS otherwise); the simulation's seeds vary the schedule and faults.
pub fn prop_config(config: proptest::test_runner::Config) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases: PROP_CASES,
        rng_seed: proptest::test_runner::RngSeed::Fixed(22),
        ..config
    }
}

/// Runs a contract test's body on the simulated kernel, once per seed (see the module docs).
pub fn run_on_simulated_kernel(name: &'static str, body: impl Fn()) {
    if let Some((_, why)) = REAL_KERNEL_ONLY.iter().find(|(n, _)| name.ends_with(n)) {
        eprintln!("{name}: not run on the simulated kernel: {why}");
        return;
    }
    __run_test(
        TestOptions {
            name,
            seeds: SEEDS,
            faults: false,
        },
        body,
    )
}
