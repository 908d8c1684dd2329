//! `add_reader` / `add_writer` (`docs/design.md`, "File descriptors", first line) and bad fd input:
//! asyncio's level-triggered callbacks, replacement, removal, and errors that name the fd.
//!
//! Only pipes and Unix socket pairs; every fd is an `OwnedFd` closed at the end of its test.
//! `run_once` is only called when something is ready (it blocks otherwise).

use std::cell::{Cell, RefCell};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;

use evloop::event_loop::{EventLoop, ExceptionKind, LoopHandle};
use evloop_tests::{record_exceptions_with, spin_once};

// The built-in `#[test]` in this binary; the `sim` binary's runs the body on the simulated
// kernel (sim/contracts.rs).
use crate::contract_test as test;

// ---------------------------------------------------------------------------------------------
// Helpers (this file only).

fn counter() -> Rc<Cell<u32>> {
    Rc::new(Cell::new(0))
}

/// A callback that counts its calls.
fn counting(c: &Rc<Cell<u32>>) -> impl FnMut() + 'static + use<> {
    let c = c.clone();
    move || c.set(c.get() + 1)
}

/// A pipe with one byte in it: its read end stays readable until someone reads.
fn readable_pipe() -> (OwnedFd, OwnedFd) {
    let (r, w) = evloop_syscalls::pipe2().unwrap();
    assert_eq!(evloop_syscalls::write(w.as_fd(), b"x").unwrap(), 1);
    (r, w)
}

fn raw(fd: &OwnedFd) -> RawFd {
    fd.as_raw_fd()
}

/// An fd number that is certainly not open in this process (fds are allocated lowest first).
const NOT_OPEN: RawFd = 999_983;

// ---------------------------------------------------------------------------------------------
// Level-triggered callbacks.

#[test]
fn add_reader_is_level_triggered() {
    let lp = EventLoop::new().unwrap();
    let (r, _w) = readable_pipe();
    let calls = counter();
    lp.add_reader(raw(&r), counting(&calls)).unwrap();
    for i in 1..=3 {
        lp.run_once().unwrap();
        assert_eq!(
            calls.get(),
            i,
            "an undrained readable fd calls its reader once per iteration"
        );
    }
    assert!(lp.remove_reader(raw(&r)));
}

#[test]
fn a_drained_fd_stops_calling_its_reader() {
    let lp = EventLoop::new().unwrap();
    let (r, w) = readable_pipe();
    let calls = counter();
    let c = calls.clone();
    let rfd = r.try_clone().unwrap();
    lp.add_reader(raw(&r), move || {
        c.set(c.get() + 1);
        let mut buf = [0u8; 16];
        assert_eq!(evloop_syscalls::read(rfd.as_fd(), &mut buf).unwrap(), 1);
    })
    .unwrap();
    lp.run_once().unwrap();
    assert_eq!(calls.get(), 1);
    for _ in 0..3 {
        spin_once(&lp);
    }
    assert_eq!(calls.get(), 1, "the reader ran although the fd had been drained");
    // Readable again: called again.
    evloop_syscalls::write(w.as_fd(), b"y").unwrap();
    lp.run_once().unwrap();
    assert_eq!(calls.get(), 2);
    assert!(lp.remove_reader(raw(&r)));
}

#[test]
fn add_writer_is_level_triggered() {
    let lp = EventLoop::new().unwrap();
    let (a, _b) = evloop_syscalls::socketpair_stream().unwrap();
    let calls = counter();
    lp.add_writer(raw(&a), counting(&calls)).unwrap();
    for i in 1..=3 {
        lp.run_once().unwrap();
        assert_eq!(calls.get(), i, "a writable fd calls its writer once per iteration");
    }
    assert!(lp.remove_writer(raw(&a)));
}

#[test]
fn reader_and_writer_of_one_fd_both_run() {
    let lp = EventLoop::new().unwrap();
    let (a, b) = evloop_syscalls::socketpair_stream().unwrap();
    evloop_syscalls::write(b.as_fd(), b"x").unwrap();
    let (reads, writes) = (counter(), counter());
    lp.add_reader(raw(&a), counting(&reads)).unwrap();
    lp.add_writer(raw(&a), counting(&writes)).unwrap();
    assert_eq!(lp.stats().fds, 1, "one fd, one registration");
    lp.run_once().unwrap();
    assert_eq!((reads.get(), writes.get()), (1, 1));
    assert!(lp.remove_reader(raw(&a)));
    assert!(lp.remove_writer(raw(&a)));
    assert_eq!(lp.stats().fds, 0);
}

// ---------------------------------------------------------------------------------------------
// Replacing and removing.

#[test]
fn adding_a_reader_again_replaces_the_callback() {
    let lp = EventLoop::new().unwrap();
    let (r, _w) = readable_pipe();
    let (old, new) = (counter(), counter());
    lp.add_reader(raw(&r), counting(&old)).unwrap();
    lp.add_reader(raw(&r), counting(&new)).unwrap();
    assert_eq!(lp.stats().fds, 1);
    lp.run_once().unwrap();
    lp.run_once().unwrap();
    assert_eq!((old.get(), new.get()), (0, 2));
    assert!(lp.remove_reader(raw(&r)));
    assert!(!lp.remove_reader(raw(&r)), "only one reader was registered");
}

#[test]
fn adding_a_writer_again_replaces_the_callback() {
    let lp = EventLoop::new().unwrap();
    let (a, _b) = evloop_syscalls::socketpair_stream().unwrap();
    let (old, new) = (counter(), counter());
    lp.add_writer(raw(&a), counting(&old)).unwrap();
    lp.add_writer(raw(&a), counting(&new)).unwrap();
    lp.run_once().unwrap();
    assert_eq!((old.get(), new.get()), (0, 1));
    assert!(lp.remove_writer(raw(&a)));
}

#[test]
fn a_replaced_reader_already_queued_for_this_iteration_does_not_run() {
    let lp = EventLoop::new().unwrap();
    let (r, _w) = readable_pipe();
    let (old, new) = (counter(), counter());
    lp.add_reader(raw(&r), counting(&old)).unwrap();
    // This callback runs first in the next iteration (it was ready before the poll queued the
    // reader) and replaces the reader that the poll has just queued.
    let (h, n, fd) = (lp.handle(), new.clone(), raw(&r));
    lp.call_soon(move || h.add_reader(fd, counting(&n)).unwrap()).unwrap();
    lp.run_once().unwrap();
    assert_eq!((old.get(), new.get()), (0, 0));
    lp.run_once().unwrap();
    assert_eq!((old.get(), new.get()), (0, 1));
    assert!(lp.remove_reader(raw(&r)));
}

#[test]
fn replacing_a_reader_drops_the_old_callback() {
    struct Guard(Rc<Cell<u32>>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }
    let lp = EventLoop::new().unwrap();
    let (r, _w) = readable_pipe();
    let drops = counter();
    let g = Guard(drops.clone());
    lp.add_reader(raw(&r), move || {
        let _ = &g;
    })
    .unwrap();
    lp.add_reader(raw(&r), || {}).unwrap();
    assert_eq!(drops.get(), 1, "the replaced reader's closure was kept");
    let g = Guard(drops.clone());
    lp.add_reader(raw(&r), move || {
        let _ = &g;
    })
    .unwrap();
    assert!(lp.remove_reader(raw(&r)));
    assert_eq!(drops.get(), 2, "the removed reader's closure was kept");
}

#[test]
fn remove_reader_returns_whether_one_was_registered() {
    let lp = EventLoop::new().unwrap();
    let (r, _w) = readable_pipe();
    assert!(!lp.remove_reader(raw(&r)), "nothing registered yet");
    assert!(!lp.remove_reader(NOT_OPEN));
    assert!(!lp.remove_reader(-1));
    let calls = counter();
    lp.add_reader(raw(&r), counting(&calls)).unwrap();
    assert_eq!(lp.stats().fds, 1);
    assert!(lp.remove_reader(raw(&r)));
    assert!(!lp.remove_reader(raw(&r)));
    assert_eq!(lp.stats().fds, 0);
    spin_once(&lp);
    assert_eq!(calls.get(), 0, "a removed reader ran");
    // A writer on the fd does not count as a reader.
    let (a, _b) = evloop_syscalls::socketpair_stream().unwrap();
    lp.add_writer(raw(&a), || {}).unwrap();
    assert!(!lp.remove_reader(raw(&a)));
    assert!(lp.remove_writer(raw(&a)));
}

#[test]
fn remove_writer_returns_whether_one_was_registered() {
    let lp = EventLoop::new().unwrap();
    let (a, _b) = evloop_syscalls::socketpair_stream().unwrap();
    assert!(!lp.remove_writer(raw(&a)));
    let calls = counter();
    lp.add_writer(raw(&a), counting(&calls)).unwrap();
    assert!(lp.remove_writer(raw(&a)));
    assert!(!lp.remove_writer(raw(&a)));
    spin_once(&lp);
    assert_eq!(calls.get(), 0, "a removed writer ran");
    // A reader on the fd does not count as a writer.
    lp.add_reader(raw(&a), || {}).unwrap();
    assert!(!lp.remove_writer(raw(&a)));
    assert!(lp.remove_reader(raw(&a)));
}

#[test]
fn removing_the_reader_keeps_the_writer_of_the_same_fd() {
    let lp = EventLoop::new().unwrap();
    let (a, b) = evloop_syscalls::socketpair_stream().unwrap();
    evloop_syscalls::write(b.as_fd(), b"x").unwrap();
    let (reads, writes) = (counter(), counter());
    lp.add_reader(raw(&a), counting(&reads)).unwrap();
    lp.add_writer(raw(&a), counting(&writes)).unwrap();
    assert!(lp.remove_reader(raw(&a)));
    lp.run_once().unwrap();
    lp.run_once().unwrap();
    assert_eq!((reads.get(), writes.get()), (0, 2));
    assert_eq!(lp.stats().fds, 1);
    // And the other way round.
    lp.add_reader(raw(&a), counting(&reads)).unwrap();
    assert!(lp.remove_writer(raw(&a)));
    lp.run_once().unwrap();
    assert_eq!((reads.get(), writes.get()), (1, 2));
    assert!(lp.remove_reader(raw(&a)));
    assert_eq!(lp.stats().fds, 0);
}

#[test]
fn a_reader_removed_by_another_callback_in_the_same_iteration_does_not_run() {
    let lp = EventLoop::new().unwrap();
    // Two readable pipes whose readers each remove the other's: whichever runs first in the
    // iteration, the other must not run (it is already in the ready queue).
    let (r1, _w1) = readable_pipe();
    let (r2, _w2) = readable_pipe();
    let (c1, c2) = (counter(), counter());
    let (fd1, fd2) = (raw(&r1), raw(&r2));
    let (h, c) = (lp.handle(), c1.clone());
    lp.add_reader(fd1, move || {
        c.set(c.get() + 1);
        h.remove_reader(fd2);
    })
    .unwrap();
    let (h, c) = (lp.handle(), c2.clone());
    lp.add_reader(fd2, move || {
        c.set(c.get() + 1);
        h.remove_reader(fd1);
    })
    .unwrap();
    lp.run_once().unwrap();
    assert_eq!(c1.get() + c2.get(), 1, "both readers ran: ({}, {})", c1.get(), c2.get());

    // Same with a call_soon callback that runs before the reader the poll queued.
    let (r3, _w3) = readable_pipe();
    let c3 = counter();
    lp.add_reader(raw(&r3), counting(&c3)).unwrap();
    let (h, fd3) = (lp.handle(), raw(&r3));
    lp.call_soon(move || assert!(h.remove_reader(fd3))).unwrap();
    lp.run_once().unwrap();
    assert_eq!(c3.get(), 0, "a reader removed earlier in its iteration ran");
    lp.remove_reader(fd1);
    lp.remove_reader(fd2);
}

#[test]
fn a_reader_can_remove_itself() {
    let lp = EventLoop::new().unwrap();
    let (r, _w) = readable_pipe();
    let calls = counter();
    let (h, c, fd) = (lp.handle(), calls.clone(), raw(&r));
    lp.add_reader(fd, move || {
        c.set(c.get() + 1);
        assert!(h.remove_reader(fd));
    })
    .unwrap();
    lp.run_once().unwrap();
    spin_once(&lp);
    spin_once(&lp);
    assert_eq!(calls.get(), 1);
    assert_eq!(lp.stats().fds, 0);
}

// ---------------------------------------------------------------------------------------------
// Hang-up and errors.

#[test]
fn epollhup_reaches_the_reader() {
    let lp = EventLoop::new().unwrap();
    let (r, w) = evloop_syscalls::pipe2().unwrap();
    let eof = Rc::new(RefCell::new(Vec::new()));
    let (e, rfd) = (eof.clone(), r.try_clone().unwrap());
    lp.add_reader(raw(&r), move || {
        let mut buf = [0u8; 8];
        e.borrow_mut()
            .push(evloop_syscalls::read(rfd.as_fd(), &mut buf).map_err(|e| e.kind()));
    })
    .unwrap();
    spin_once(&lp);
    assert!(eof.borrow().is_empty(), "nothing to read yet");
    drop(w); // the only write end: the read end hangs up (EPOLLHUP, no EPOLLIN)
    lp.run_once().unwrap();
    assert_eq!(*eof.borrow(), vec![Ok(0)], "the reader must see the hang-up as EOF");
    assert!(lp.remove_reader(raw(&r)));
}

#[test]
fn a_closed_peer_reaches_the_writer() {
    // The write end of a pipe whose read end closed reports EPOLLERR: the writer must run (and
    // its write fails with EPIPE, without killing the process).
    let lp = EventLoop::new().unwrap();
    let (r, w) = evloop_syscalls::pipe2().unwrap();
    // Fill the pipe so the write end is not writable any more.
    let chunk = [0u8; 4096];
    while evloop_syscalls::write(w.as_fd(), &chunk).is_ok() {}
    let calls = counter();
    lp.add_writer(raw(&w), counting(&calls)).unwrap();
    spin_once(&lp);
    assert_eq!(calls.get(), 0, "a full pipe is not writable");
    drop(r);
    lp.run_once().unwrap();
    assert_eq!(calls.get(), 1);
    assert!(lp.remove_writer(raw(&w)));
}

#[test]
fn add_reader_on_an_fd_that_is_not_open_is_an_error_naming_the_fd() {
    let lp = EventLoop::new().unwrap();
    let e = lp.add_reader(NOT_OPEN, || {}).unwrap_err();
    assert!(e.to_string().contains(&NOT_OPEN.to_string()), "{e}");
    assert!(e.to_string().contains("add_reader"), "{e}");
    let e = lp.add_writer(NOT_OPEN, || {}).unwrap_err();
    assert!(e.to_string().contains(&NOT_OPEN.to_string()), "{e}");
    assert!(e.to_string().contains("add_writer"), "{e}");
    // Nothing half-registered, and the loop keeps working.
    assert_eq!(lp.stats().fds, 0);
    assert!(!lp.remove_reader(NOT_OPEN));
    let (r, _w) = readable_pipe();
    let calls = counter();
    lp.add_reader(raw(&r), counting(&calls)).unwrap();
    lp.run_once().unwrap();
    assert_eq!(calls.get(), 1);
    assert_eq!(lp.run_until_complete(async { 3 }).unwrap(), 3);
    assert!(lp.remove_reader(raw(&r)));
}

#[test]
fn add_reader_on_a_negative_fd_is_an_error_naming_the_fd() {
    let lp = EventLoop::new().unwrap();
    for fd in [-1, -42, RawFd::MIN] {
        let e = lp.add_reader(fd, || {}).unwrap_err();
        assert!(e.to_string().contains(&fd.to_string()), "{e}");
        let e = lp.add_writer(fd, || {}).unwrap_err();
        assert!(e.to_string().contains(&fd.to_string()), "{e}");
    }
    assert_eq!(lp.stats().fds, 0);
    spin_once(&lp);
}

#[test]
fn add_reader_on_a_regular_file_is_an_error_naming_the_fd() {
    // epoll refuses regular files (EPERM); the loop says which fd.
    let lp = EventLoop::new().unwrap();
    let f = std::fs::File::open("/proc/self/exe")
        .or_else(|_| std::fs::File::open("Cargo.toml"))
        .unwrap();
    let fd = f.as_raw_fd();
    let e = lp.add_reader(fd, || {}).unwrap_err();
    assert!(e.to_string().contains(&format!("fd {fd}")), "{e}");
    assert_eq!(lp.stats().fds, 0);
    spin_once(&lp);
}

#[test]
fn add_reader_on_the_loops_own_fds_is_refused() {
    let lp = EventLoop::new().unwrap();
    let epfd = lp.epoll_fd().unwrap();
    let e = lp.add_reader(epfd, || {}).unwrap_err();
    assert!(e.to_string().contains(&epfd.to_string()), "{e}");
    let e = lp.add_writer(epfd, || {}).unwrap_err();
    assert!(e.to_string().contains(&epfd.to_string()), "{e}");
    assert_eq!(lp.stats().fds, 0);
    assert!(!lp.remove_reader(epfd));
    spin_once(&lp);
}

#[test]
fn a_panicking_reader_is_reported_naming_add_reader_and_the_loop_keeps_running() {
    let lp = EventLoop::new().unwrap();
    let seen = record_exceptions_with(&lp, |_, ctx| (ctx.kind, ctx.message.clone()));
    let (r, _w) = readable_pipe();
    lp.add_reader(raw(&r), || panic!("reader boom")).unwrap();
    lp.run_once().unwrap();
    lp.run_once().unwrap();
    {
        let seen = seen.borrow();
        assert_eq!(
            seen.len(),
            2,
            "level-triggered: it is called (and panics) every iteration"
        );
        assert_eq!(seen[0].0, ExceptionKind::CallbackPanicked);
        assert!(seen[0].1.contains("add_reader"), "{}", seen[0].1);
    }
    // The panicking reader stays registered (as in asyncio) and can be removed.
    assert!(lp.remove_reader(raw(&r)));
    assert_eq!(lp.run_until_complete(async { 1 }).unwrap(), 1);
}

type Pipe = (OwnedFd, OwnedFd);

/// 100 readable pipes, each with a reader that counts its calls.
fn hundred_readers(lp: &LoopHandle) -> (Vec<Pipe>, Rc<RefCell<Vec<u32>>>) {
    let pipes: Vec<_> = (0..100).map(|_| readable_pipe()).collect();
    let hits = Rc::new(RefCell::new(vec![0u32; pipes.len()]));
    for (i, (r, _)) in pipes.iter().enumerate() {
        let h = hits.clone();
        lp.add_reader(raw(r), move || h.borrow_mut()[i] += 1).unwrap();
    }
    assert_eq!(lp.stats().fds, 100);
    (pipes, hits)
}

#[test]
fn many_fds_each_call_their_own_reader_and_none_starves() {
    let lp = EventLoop::new().unwrap();
    let (pipes, hits) = hundred_readers(&lp);
    for _ in 0..4 {
        lp.run_once().unwrap();
    }
    // Every reader ran, each at most once per iteration, none left behind for long.
    let hits = hits.borrow().clone();
    assert!(hits.iter().all(|&n| (3..=4).contains(&n)), "{hits:?}");
    for (r, _) in &pipes {
        assert!(lp.remove_reader(raw(r)));
    }
    assert_eq!(lp.stats().fds, 0);
}

#[test]

fn every_readable_fd_calls_its_reader_in_the_same_iteration() {
    // asyncio sizes `max_events` to the number of registered fds, so every readable fd's
    // callback runs in every iteration. evloop starts with a 64-event buffer: the first
    // iteration runs 64 of these 100 readers, the rest wait for the next one.
    let lp = EventLoop::new().unwrap();
    let (pipes, hits) = hundred_readers(&lp);
    lp.run_once().unwrap();
    let after_one = hits.borrow().clone();
    for (r, _) in &pipes {
        lp.remove_reader(raw(r));
    }
    assert!(after_one.iter().all(|&n| n == 1), "{after_one:?}");
}
