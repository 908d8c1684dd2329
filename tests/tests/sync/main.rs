//! The sync layer's tests (`runtime/src/sync/`): the primitives (with a property test of the
//! permit primitives), `Queue`, the channels, the combinators and the waiter queue's cancellation matrix.
//!
//! One module per feature, one test binary for the folder: no module here changes process-wide
//! state, counts the process's file descriptors or threads, or needs a harness of its own, so
//! their tests share one process (the files that cannot are the standalone binaries beside this
//! folder, each saying why on its first line). A test that re-runs itself in a child process
//! names itself with `evloop_tests::test_name!`, which adds the module path.

mod channels;
mod combinators;
mod coop;
mod primitives;
mod prop_permits;
mod queue;
mod wait_matrix;
mod wrong_loop;
