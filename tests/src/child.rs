//! Re-running one test of the current test binary in a child process: for tests that change
//! process-wide state (the fd limit) or must watch the whole process (signals).
//!
//! The test function checks [`is_child`] first: in the child it runs the scenario, in the
//! parent it starts the child with [`command`] (or [`run`]), naming itself with
//! [`test_name!`](crate::test_name), and judges its exit status.

use std::process::{Command, Output};

/// Whether this process is the child started for the environment variable `key`.
pub fn is_child(key: &str) -> bool {
    std::env::var(key).is_ok_and(|v| v == "1")
}

/// The full name the test harness gives test function `name` of module `module` (a
/// `module_path!()`): the module path without its first segment, the binary's own name, then
/// `name`. [`test_name!`](crate::test_name) calls it with the caller's module.
pub fn test_path(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, inner)) => format!("{inner}::{name}"),
        None => name.to_string(),
    }
}

/// The command that re-runs exactly the test `test` (its full name, e.g. `my_test` or
/// `module::my_test`: see [`test_name!`](crate::test_name)) of the current binary with `key=1`
/// in its environment, output not captured, one test thread (ignored tests included, so an
/// ignored test can re-run itself).
pub fn command(test: &str, key: &str) -> Command {
    let exe = std::env::current_exe().expect("the path of the running test binary");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1", "--include-ignored"])
        .env(key, "1");
    cmd
}

/// Runs [`command`] to completion and returns its output.
pub fn run(test: &str, key: &str) -> Output {
    command(test, key)
        .output()
        .expect("could not start the child test process")
}

/// Panics (printing the child's output) unless it exited with status 0 after running
/// exactly one test; prints the child's output otherwise too, for the record.
pub fn assert_success(what: &str, out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ran_one = stdout.contains("1 passed") || stdout.contains("test result: ok. 1 passed");
    if !out.status.success() || !ran_one {
        panic!(
            "{what}: the child test process failed ({}), or did not run exactly one test\n--- child stdout ---\n{stdout}\n--- child stderr ---\n{stderr}",
            out.status
        );
    }
    println!("--- {what}: child stdout ---\n{stdout}");
}
