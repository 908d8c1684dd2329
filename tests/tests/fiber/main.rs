//! The fiber layer's tests (`runtime/src/fiber/`): greenlet's suite without the loop, fibers on the
//! loop, and their stacks.
//!
//! One module per feature, one test binary for the folder: no module here changes process-wide
//! state, counts the process's file descriptors or threads, or needs a harness of its own, so
//! their tests share one process (the files that cannot are the standalone binaries beside this
//! folder, each saying why on its first line). A test that re-runs itself in a child process
//! names itself with `evloop_tests::test_name!`, which adds the module path.

mod greenlet;
mod on_loop;
mod stacks;
mod weak;
