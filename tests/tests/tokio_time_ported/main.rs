//! tokio's own tests of its time driver (tokio 1.54's tests/time_pause.rs, time_sleep.rs,
//! time_timeout.rs, time_interval.rs and time_panic.rs), ported to `evloop::time` by changing imports. They run
//! on evloop's virtual clock: `#[tokio::test(start_paused = true)]` is accepted as is, and
//! `time::pause`/`resume`/`advance` are evloop's. 65 of their 70 tests run; each module names the
//! tokio file it comes from, how many of its tests run, and for each that does not, why. They
//! found: no `pause`/`resume`/`advance` and no `start_paused` (added), no `Sleep::reset` or
//! `Sleep::is_elapsed` (added), and `Interval::reset`/`reset_after` panicking on a period of
//! `Duration::MAX` (fixed, with every other place a delay is added to an instant), and `interval`/
//! `interval_at` panicking inside evloop instead of at the caller's line (`#[track_caller]`).
//!
//! tokio's tests poll futures by hand with tokio_test's mock task (`task::spawn`) and its
//! `assert_ready!`/`assert_pending!`/`assert_elapsed!` macros: `evloop_tests::mock_task` is that
//! harness. futures' `poll!` is the small macro below.

// tokio's text is kept as tokio wrote it.
#![allow(clippy::bool_assert_comparison)]

#[macro_use]
extern crate evloop_tests;

use evloop_tests::mock_task as task;

/// futures' `poll!`: polls an `Unpin` future once with the current task's waker.
macro_rules! poll {
    ($e:expr) => {{
        let mut fut = $e;
        std::future::poll_fn(|cx| std::task::Poll::Ready(std::future::Future::poll(std::pin::Pin::new(&mut fut), cx)))
            .await
    }};
}

mod interval;
mod panic;
mod pause;
mod sleep;
mod timeout;
