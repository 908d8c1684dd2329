// Standalone binary: it looks for its zombie children and counts the process's threads, which other tests disturb.
//! Subprocesses without pidfds (issue 19 item 10): `pidfd_open` failing with `ENOSYS` (a kernel
//! before 5.3, valgrind) or `EPERM` (a seccomp filter) selects the waiter-thread watcher, and
//! everything a `Process` does works the same: exit codes and signals, `communicate`,
//! `returncode`, `send_signal` after reaping, a dropped `Process` reaped by its thread, a
//! thousand children with no zombie. The failure is injected (`evloop::sys::fault`), so these
//! tests take the fallback on any kernel; under valgrind the real `ENOSYS` takes it too.
//!
//! Every test holds [`serial`]: zombies are looked for in `/proc/thread-self/children`, which
//! lists the test thread's children until they are reaped.

use std::time::{Duration, Instant};

use evloop::event_loop::EventLoop;
use evloop::process::Stdio;
use evloop::signal::Signal;
use evloop::sys::{Syscall, counters, fault};
use evloop_tests::children::{my_children, wait_reaped};
use evloop_tests::{run_bounded, serial};

/// Every `pidfd_open` of this thread fails with `errno` from now on (until `fault::clear`).
fn no_pidfds(errno: i32) {
    fault::clear();
    fault::fail_times(Syscall::PidfdOpen, 1, u64::MAX, errno);
}

#[test]
fn enosys_selects_the_waiter_thread_and_wait_gives_exit_codes_and_signals() {
    let _g = serial();
    no_pidfds(libc::ENOSYS);
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let mut p = h.subprocess_exec("sh", ["-c", "exit 7"]).spawn().unwrap();
    let pid = p.pid();
    let waitids = counters::snapshot().get(Syscall::Waitid);
    let s = run_bounded(&h, async move { p.wait().await }).unwrap();
    assert_eq!(s.code(), Some(7));
    assert!(!my_children().contains(&pid), "zombie left after wait");
    assert!(
        counters::snapshot().get(Syscall::Waitid) > waitids,
        "reaped with waitid(P_PID)"
    );

    let mut p = h.subprocess_exec("sleep", ["60"]).spawn().unwrap();
    assert!(p.returncode().is_none());
    p.send_signal(Signal::TERM).unwrap();
    let s = run_bounded(&h, async move {
        let s = p.wait().await?;
        // Reaped: a signal now is ESRCH, never another process that got the pid.
        assert!(p.kill().is_err());
        assert_eq!(p.returncode(), Some(s));
        Ok::<_, std::io::Error>(s)
    })
    .unwrap();
    assert_eq!(s.signal(), Some(Signal::TERM.raw()));
    fault::clear();
}

#[test]
fn eperm_from_a_seccomp_filter_selects_it_too_and_communicate_works() {
    let _g = serial();
    no_pidfds(libc::EPERM);
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let mut p = h.subprocess_exec("cat", [""; 0]).piped().spawn().unwrap();
    let out = run_bounded(&h, async move { p.communicate(Some(vec![b'z'; 200 * 1024])).await }).unwrap();
    assert_eq!(out.stdout.len(), 200 * 1024);
    assert!(out.status.success());
    let mut p = h
        .subprocess_shell("echo one two | wc -w")
        .stdout(Stdio::Pipe)
        .spawn()
        .unwrap();
    let out = run_bounded(&h, async move { p.communicate(None).await }).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
    fault::clear();
}

#[test]
fn other_pidfd_open_errors_still_fail_the_spawn() {
    let _g = serial();
    fault::clear();
    fault::fail_nth(Syscall::PidfdOpen, 1, libc::EMFILE);
    let lp = EventLoop::new().unwrap();
    let err = lp.handle().subprocess_exec("true", [""; 0]).spawn().unwrap_err();
    assert!(err.to_string().contains("pidfd_open"), "{err}");
    fault::clear();
}

#[test]
fn a_dropped_process_is_reaped_by_its_waiter_thread() {
    let _g = serial();
    no_pidfds(libc::ENOSYS);
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    // Still running when dropped: the thread reaps it when it exits, with no loop running
    // (long enough, under valgrind's slowdown, to be still running at the check).
    let secs = if evloop_tests::under_valgrind() { "2" } else { "0.1" };
    let p = h.subprocess_exec("sleep", [secs]).spawn().unwrap();
    let pid = p.pid();
    drop(p);
    assert!(my_children().contains(&pid), "still running, not reaped yet");
    wait_reaped(pid);
    // Exited (the thread saw it) when dropped: reaped at once.
    let p = h.subprocess_exec("true", [""; 0]).spawn().unwrap();
    let pid = p.pid();
    run_bounded(&h, async move {
        evloop::time::sleep(Duration::from_millis(100)).await;
        assert!(my_children().contains(&pid), "exited but not reaped: a zombie for now");
        drop(p);
        assert!(!my_children().contains(&pid), "not reaped at once when dropped");
    });
    assert_eq!(lp.stats().io_registrations, 0, "the eventfd registration is gone");
    fault::clear();
}

#[test]
fn two_hundred_children_leave_no_zombie_and_their_threads_end() {
    let _g = serial();
    no_pidfds(libc::ENOSYS);
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let pids = run_bounded(&h, async {
        let lp = evloop::event_loop::get_running_loop().unwrap();
        let mut pids = Vec::new();
        for _ in 0..200 {
            let mut p = lp.subprocess_exec("true", [""; 0]).spawn().unwrap();
            pids.push(p.pid());
            assert!(p.wait().await.unwrap().success());
        }
        pids
    });
    let children = my_children();
    assert!(pids.iter().all(|p| !children.contains(p)), "a zombie was left");
    // Each waiter thread ends once its child exits.
    let deadline = Instant::now() + Duration::from_secs(10);
    while evloop_tests::procfs::threads_named("evloop-child-") > 0 {
        assert!(Instant::now() < deadline, "waiter threads outlived their children");
        std::thread::sleep(Duration::from_millis(10));
    }
    fault::clear();
}
