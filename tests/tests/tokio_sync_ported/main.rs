//! tokio's own tests of its sync primitives (tokio 1.54's tests/sync_*.rs), ported to evloop's
//! `evloop::sync` by changing imports. Each module names the tokio file it comes from, how many of
//! its tests run, and for each test that does not, why (a deliberate difference the porting
//! guide lists, such as evloop's primitives being single-threaded, or a tokio-internal API).
//!
//! tokio's tests poll futures by hand with tokio_test's mock task (`task::spawn`) and its
//! `assert_ready!`/`assert_pending!` macros; `task.rs` is that harness in the few lines these
//! tests need, so the test bodies stay as tokio wrote them.

// tokio's text is kept as tokio wrote it, older idioms included.
#![allow(clippy::bool_assert_comparison, clippy::redundant_clone)]

#[macro_use]
mod task;

mod broadcast;
mod notify;
mod watch;
