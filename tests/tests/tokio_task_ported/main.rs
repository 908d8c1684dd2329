//! tokio's own tests of its task utilities (tokio 1.54's tests/task_*.rs), ported to
//! `evloop::task` by changing imports: task_join_set.rs (`JoinSet`) and task_local.rs
//! (`task_local!`). Each module names the tokio
//! file it comes from, how many of its tests run, and for each that does not, why.
//!
//! tokio's tests poll futures by hand with tokio_test's mock task: `evloop_tests::mock_task` is
//! that harness.

use evloop_tests::mock_task as task;

mod join_set;
mod task_local;
