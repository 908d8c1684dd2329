// Standalone binary: it checks the process's whole fd table (`/proc/self/fd`).
//! File descriptors the loop opens and closes, checked against `/proc/self/fd`.
//!
//! The fd table is process-wide and the tests of one binary run in parallel threads, so every
//! test here takes the `serial()` lock for its whole duration, and no other binary's tests
//! share this process.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fs;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::thread;
use std::time::Duration;

use evloop::event_loop::{EventLoop, LoopErrorKind};
use evloop_syscalls::{Syscall, fault};
use evloop_tests::fds::fd_table;
use evloop_tests::serial;
use evloop_tests::watchdog::Watchdog;

fn diff(before: &BTreeMap<RawFd, String>, after: &BTreeMap<RawFd, String>) -> String {
    let mut s = String::new();
    for (fd, t) in after {
        if before.get(fd) != Some(t) {
            s += &format!("  new/changed: {fd} -> {t}\n");
        }
    }
    for (fd, t) in before {
        if !after.contains_key(fd) {
            s += &format!("  gone: {fd} -> {t}\n");
        }
    }
    s
}

fn assert_same_table(before: &BTreeMap<RawFd, String>, what: &str) {
    let after = fd_table();
    assert!(
        before == &after,
        "{what}: /proc/self/fd differs from before:\n{}",
        diff(before, &after)
    );
}

/// The `flags:` line of `/proc/self/fdinfo/<fd>` (octal open flags).
fn fd_flags(fd: RawFd) -> i32 {
    let text = fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).expect("reading fdinfo");
    let line = text
        .lines()
        .find(|l| l.starts_with("flags:"))
        .expect("fdinfo has flags");
    i32::from_str_radix(line.trim_start_matches("flags:").trim(), 8).expect("octal flags")
}

/// Uses a loop the way a program would: timers, a task, a reader on a pipe (added, fired,
/// removed), an executor job and a `call_soon_threadsafe` from another thread.
fn exercise(lp: &EventLoop) {
    let dog = Watchdog::start(lp.remote(), Duration::from_secs(10));
    let (r, w) = evloop_syscalls::pipe2().unwrap();
    let rfd = r.as_raw_fd();
    let fired = Rc::new(Cell::new(0u32));
    let f = fired.clone();
    lp.call_later(Duration::from_millis(1), move || f.set(f.get() + 1))
        .unwrap();
    let f = fired.clone();
    let h = lp.handle();
    lp.add_reader(rfd, move || {
        let mut buf = [0u8; 4];
        let _ = evloop_syscalls::read(r.as_fd(), &mut buf);
        f.set(f.get() + 1);
        assert!(h.remove_reader(rfd));
    })
    .unwrap();
    evloop_syscalls::write(w.as_fd(), b"!").unwrap();
    let remote = lp.remote();
    let h = lp.handle();
    let out = lp
        .run_until_complete(async move {
            let task = h
                .create_task(async {
                    evloop::time::sleep(Duration::from_millis(2)).await;
                    2
                })
                .unwrap();
            let job = h.run_in_executor(|| 3).unwrap();
            // A threadsafe callback from another thread; the task polls for its effect.
            let got = Arc::new(AtomicU32::new(0));
            let g = got.clone();
            let th = thread::spawn(move || {
                thread::sleep(Duration::from_millis(5));
                remote.call_soon_threadsafe(move || g.store(4, SeqCst)).unwrap();
            });
            while got.load(SeqCst) == 0 {
                evloop::time::sleep(Duration::from_millis(1)).await;
            }
            th.join().unwrap();
            task.await.unwrap() + job.await.unwrap() + got.load(SeqCst)
        })
        .unwrap();
    assert!(!dog.finish(), "the watchdog had to stop the loop");
    assert_eq!(out, 9);
    assert_eq!(fired.get(), 2, "the timer and the reader ran");
    assert_eq!(lp.stats().fds, 0, "the reader was removed");
    drop(w);
}

#[test]
fn closing_a_loop_leaves_proc_self_fd_as_it_was() {
    let _g = serial();
    let before = fd_table();
    let lp = EventLoop::new().unwrap();

    // The loop owns exactly two new fds, an epoll instance and an eventfd, both close-on-exec,
    // the eventfd also non-blocking.
    let during = fd_table();
    let new: Vec<(RawFd, String)> = during
        .iter()
        .filter(|(fd, t)| before.get(fd) != Some(t))
        .map(|(fd, t)| (*fd, t.clone()))
        .collect();
    let mut kinds: Vec<&str> = new.iter().map(|(_, t)| t.as_str()).collect();
    kinds.sort();
    assert_eq!(kinds, ["anon_inode:[eventfd]", "anon_inode:[eventpoll]"], "{new:?}");
    assert!(new.iter().any(|(fd, _)| Some(*fd) == lp.epoll_fd()));
    for (fd, t) in &new {
        let flags = fd_flags(*fd);
        assert!(
            flags & libc::O_CLOEXEC != 0,
            "{t} (fd {fd}) must be O_CLOEXEC: {flags:o}"
        );
        if t.contains("eventfd") {
            assert!(
                flags & libc::O_NONBLOCK != 0,
                "{t} (fd {fd}) must be O_NONBLOCK: {flags:o}"
            );
        }
    }

    exercise(&lp);
    lp.close().unwrap();
    assert_eq!(lp.epoll_fd(), None);
    assert_same_table(&before, "after close()");
    lp.close().unwrap();
    drop(lp);
    assert_same_table(&before, "after a second close() and the drop");
}

#[test]
fn dropping_a_loop_without_close_leaves_proc_self_fd_as_it_was() {
    let _g = serial();
    let before = fd_table();
    let (r, w) = evloop_syscalls::pipe2().unwrap();
    {
        let lp = EventLoop::new().unwrap();
        exercise(&lp);
        // Leave work behind: a pending timer, a task asleep for 10 s, a registered reader and an
        // executor job still running.
        lp.call_later(Duration::from_secs(10), || {}).unwrap();
        let _task = lp
            .create_task(async { evloop::time::sleep(Duration::from_secs(10)).await })
            .unwrap();
        lp.add_reader(r.as_raw_fd(), || {}).unwrap();
        let _job = lp.run_in_executor(|| thread::sleep(Duration::from_millis(20))).unwrap();
        lp.run_once().unwrap();
        assert_eq!(lp.stats().fds, 1);
        // Dropped here without close().
    }
    drop((r, w));
    assert_same_table(&before, "after drop(EventLoop)");
}

#[test]
fn creating_and_dropping_100_loops_leaks_no_fd() {
    let _g = serial();
    let before = fd_table();
    for i in 0..100u32 {
        let lp = EventLoop::new().unwrap();
        let h = lp.handle();
        let remote = lp.remote();
        remote.call_soon_threadsafe(|| {}).unwrap();
        lp.call_soon(move || h.stop()).unwrap();
        lp.run_forever().unwrap();
        if i % 2 == 0 {
            lp.close().unwrap();
        }
        drop(lp);
        assert!(remote.is_closed());
    }
    assert_same_table(&before, "after 100 loops");
}

#[test]
fn failed_eventfd_in_event_loop_new_closes_the_epoll_fd() {
    let _g = serial();
    fault::clear();
    let before = fd_table();
    fault::fail_nth(Syscall::Eventfd, 1, libc::EMFILE);
    let err = EventLoop::new().expect_err("eventfd failed");
    assert_eq!(err.kind(), LoopErrorKind::Io, "{err}");
    assert_eq!(
        err.io_error().and_then(|e| e.raw_os_error()),
        Some(libc::EMFILE),
        "{err}"
    );
    assert_eq!(fault::pending(), 0);
    assert_same_table(&before, "after EventLoop::new failed on eventfd");
}

#[test]
fn failed_wake_registration_in_event_loop_new_closes_both_fds() {
    let _g = serial();
    fault::clear();
    let before = fd_table();
    fault::fail_nth(Syscall::EpollCtl, 1, libc::ENOMEM);
    let err = EventLoop::new().expect_err("epoll_ctl failed");
    assert_eq!(err.kind(), LoopErrorKind::Io, "{err}");
    assert!(err.to_string().contains("epoll_ctl"), "{err}");
    assert_eq!(fault::pending(), 0);
    assert_same_table(&before, "after EventLoop::new failed on epoll_ctl");
}

#[test]
fn failed_epoll_create1_in_event_loop_new_opens_nothing() {
    let _g = serial();
    fault::clear();
    let before = fd_table();
    fault::fail_nth(Syscall::EpollCreate1, 1, libc::EMFILE);
    evloop_syscalls::counters::reset();
    let err = EventLoop::new().expect_err("epoll_create1 failed");
    let c = evloop_syscalls::counters::snapshot();
    assert_eq!(err.kind(), LoopErrorKind::Io, "{err}");
    assert!(err.to_string().contains("epoll_create1"), "{err}");
    assert_eq!(c[Syscall::Eventfd], 0, "no eventfd after epoll_create1 failed: {c}");
    assert_same_table(&before, "after EventLoop::new failed on epoll_create1");
}
