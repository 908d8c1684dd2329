//! Child processes by pid, without pidfds (what the runtime's waiter-thread watcher uses where
//! `pidfd_open` is missing: kernels before 5.3, valgrind, seccomp filters): `waitid_pid` with
//! `nowait` sees the exit and leaves a zombie whose pid stays the child's, `nohang` reports a
//! running child as `None`, the reaping call frees it, and `kill` reaches it until then. Runs
//! under valgrind too (`make valgrind`), unlike `processes`, which needs pidfds.

use std::path::Path;
use std::process::{Child, Command};

use evloop_syscalls::*;

fn spawn(program: &str, args: &[&str]) -> (Child, i32) {
    let child = Command::new(program).args(args).spawn().unwrap();
    let pid = child.id() as i32;
    (child, pid)
}

fn exists(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn nowait_sees_the_exit_and_leaves_a_zombie_then_the_reaping_call_frees_it() {
    let (_child, pid) = spawn("sh", &["-c", "sleep 0.05; exit 3"]);
    assert_eq!(waitid_pid(pid, true, true).unwrap(), None, "still running");
    assert_eq!(waitid_pid(pid, false, true).unwrap(), Some(ExitStatus::Exited(3)));
    assert!(exists(pid), "WNOWAIT reaps nothing: a zombie");
    // A zombie still accepts (and ignores) a signal: its pid is still its own.
    kill(pid, 0).unwrap();
    assert_eq!(
        waitid_pid(pid, true, true).unwrap(),
        Some(ExitStatus::Exited(3)),
        "seen again"
    );
    assert_eq!(
        waitid_pid(pid, true, false).unwrap(),
        Some(ExitStatus::Exited(3)),
        "reaped"
    );
    assert!(!exists(pid), "no zombie left");
    let e = waitid_pid(pid, true, false).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::ECHILD), "{e}");
}

#[test]
fn a_signal_by_pid_is_the_exit_reason() {
    let (_child, pid) = spawn("sleep", &["60"]);
    kill(pid, libc::SIGTERM).unwrap();
    assert_eq!(
        waitid_pid(pid, false, false).unwrap(),
        Some(ExitStatus::Signaled {
            signal: libc::SIGTERM,
            core_dumped: false
        })
    );
    assert!(!exists(pid));
}

#[test]
fn not_a_child_is_echild() {
    let e = waitid_pid(getpid(), true, false).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::ECHILD), "{e}");
    let e = waitid_pid(-1, true, false).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::ECHILD), "{e}");
}
