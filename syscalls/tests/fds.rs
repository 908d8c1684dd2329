//! Descriptor creation flags, pipe and socket pair I/O round trips,
//! `EPIPE`, `close`, `fd_is_open` and `set_nonblocking`.

use std::io::{ErrorKind, IoSlice, IoSliceMut};

use evloop_syscalls::*;

/// (`FD_CLOEXEC` set, `O_NONBLOCK` set) for `fd`, read with raw `fcntl`.
fn cloexec_nonblock(fd: BorrowedFd<'_>) -> (bool, bool) {
    // SAFETY: F_GETFD takes no third argument and reads no user memory;
    // `fd` is a live borrowed descriptor.
    let fd_flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) };
    // SAFETY: as above, for F_GETFL.
    let fl_flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    assert!(fd_flags >= 0 && fl_flags >= 0, "fcntl failed on a live fd");
    (fd_flags & libc::FD_CLOEXEC != 0, fl_flags & libc::O_NONBLOCK != 0)
}

#[test]
fn every_created_fd_is_cloexec_and_nonblocking() {
    let (pr, pw) = pipe2().unwrap();
    let (sa, sb) = socketpair_stream().unwrap();
    let efd = eventfd(0).unwrap();
    let tfd = timerfd_create().unwrap();
    for (name, fd) in [
        ("pipe read end", &pr),
        ("pipe write end", &pw),
        ("socketpair a", &sa),
        ("socketpair b", &sb),
        ("eventfd", &efd),
        ("timerfd", &tfd),
    ] {
        assert_eq!(cloexec_nonblock(fd.as_fd()), (true, true), "{name}");
    }
    // epoll has no non-blocking flag (it is never read); only CLOEXEC.
    let ep = epoll_create1().unwrap();
    assert!(cloexec_nonblock(ep.as_fd()).0, "epoll fd must be close-on-exec");
}

#[test]
fn pipe_read_write_round_trip() {
    let (r, w) = pipe2().unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(read(r.as_fd(), &mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
    assert_eq!(write(w.as_fd(), b"hello").unwrap(), 5);
    assert_eq!(read(r.as_fd(), &mut buf).unwrap(), 5);
    assert_eq!(&buf[..5], b"hello");
    drop(w);
    assert_eq!(read(r.as_fd(), &mut buf).unwrap(), 0, "EOF after the writer closed");
}

#[test]
fn pipe_readv_writev_round_trip() {
    let (r, w) = pipe2().unwrap();
    let n = writev(
        w.as_fd(),
        &[IoSlice::new(b"abc"), IoSlice::new(b""), IoSlice::new(b"defg")],
    )
    .unwrap();
    assert_eq!(n, 7);
    let (mut a, mut b) = ([0u8; 2], [0u8; 10]);
    let n = readv(r.as_fd(), &mut [IoSliceMut::new(&mut a), IoSliceMut::new(&mut b)]).unwrap();
    assert_eq!(n, 7);
    assert_eq!(&a, b"ab");
    assert_eq!(&b[..5], b"cdefg");
}

#[test]
fn writev_with_more_than_iov_max_buffers_is_clamped_not_einval() {
    let (a, b) = socketpair_stream().unwrap();
    let one = [1u8];
    let bufs: Vec<IoSlice<'_>> = (0..IOV_MAX + 10).map(|_| IoSlice::new(&one)).collect();
    let n = writev(a.as_fd(), &bufs).unwrap();
    assert_eq!(n, IOV_MAX);
    let mut sink = vec![0u8; IOV_MAX + 10];
    let mut slices: Vec<IoSliceMut<'_>> = sink.chunks_mut(1).map(IoSliceMut::new).collect();
    assert_eq!(readv(b.as_fd(), &mut slices).unwrap(), IOV_MAX);
}

#[test]
fn socketpair_is_bidirectional() {
    let (a, b) = socketpair_stream().unwrap();
    let mut buf = [0u8; 8];
    write(a.as_fd(), b"ping").unwrap();
    assert_eq!(read(b.as_fd(), &mut buf).unwrap(), 4);
    assert_eq!(&buf[..4], b"ping");
    writev(b.as_fd(), &[IoSlice::new(b"po"), IoSlice::new(b"ng")]).unwrap();
    let mut x = [0u8; 3];
    let mut y = [0u8; 3];
    assert_eq!(
        readv(a.as_fd(), &mut [IoSliceMut::new(&mut x), IoSliceMut::new(&mut y)]).unwrap(),
        4
    );
    assert_eq!((&x, &y[..1]), (b"pon", &b"g"[..]));
}

#[test]
fn write_to_pipe_with_closed_read_end_is_broken_pipe() {
    // libtest binaries ignore SIGPIPE (the Rust runtime sets SIG_IGN), so
    // the write fails with EPIPE instead of killing the process.
    let (r, w) = pipe2().unwrap();
    close(r).unwrap();
    let e = write(w.as_fd(), b"x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}");
    assert_eq!(e.raw_os_error(), Some(libc::EPIPE));
    let e = writev(w.as_fd(), &[IoSlice::new(b"x")]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}");
}

#[test]
fn full_pipe_write_would_block() {
    let (_r, w) = pipe2().unwrap();
    let chunk = [0u8; 65536];
    let mut total = 0usize;
    let err = loop {
        match write(w.as_fd(), &chunk) {
            Ok(n) => total += n,
            Err(e) => break e,
        }
        assert!(total < 64 << 20, "pipe never filled up");
    };
    assert_eq!(err.kind(), ErrorKind::WouldBlock);
    assert!(total > 0);
}

#[test]
fn close_reports_success_and_fd_is_open_tracks_it() {
    let fd = eventfd(0).unwrap();
    let raw = fd.as_raw_fd();
    assert!(fd_is_open(raw));
    close(fd).unwrap();
    // The number may be reused by a parallel test thread at any moment, so
    // only "open while owned" and "never-valid numbers are closed" are
    // asserted.
    assert!(!fd_is_open(-1));
    assert!(!fd_is_open(RawFd::MAX - 7));
}

#[test]
fn set_nonblocking_toggles_o_nonblock() {
    let (r, _w) = pipe2().unwrap();
    set_nonblocking(r.as_fd(), false).unwrap();
    assert_eq!(cloexec_nonblock(r.as_fd()), (true, false));
    set_nonblocking(r.as_fd(), false).unwrap();
    assert_eq!(cloexec_nonblock(r.as_fd()), (true, false));
    set_nonblocking(r.as_fd(), true).unwrap();
    assert_eq!(cloexec_nonblock(r.as_fd()), (true, true));
}

#[test]
fn eventfd_counter_semantics() {
    let efd = eventfd(2).unwrap();
    eventfd_write(efd.as_fd(), 5).unwrap();
    eventfd_write(efd.as_fd(), 0).unwrap();
    assert_eq!(eventfd_read(efd.as_fd()).unwrap(), 7);
    assert_eq!(eventfd_read(efd.as_fd()).unwrap_err().kind(), ErrorKind::WouldBlock);
    let e = eventfd_write(efd.as_fd(), u64::MAX).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    eventfd_write(efd.as_fd(), u64::MAX - 1).unwrap();
    let e = eventfd_write(efd.as_fd(), 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock, "overflow would block");
}

#[test]
fn eventfd_read_of_a_non_eventfd_is_an_error_not_a_panic() {
    let (r, w) = pipe2().unwrap();
    write(w.as_fd(), b"abc").unwrap();
    let e = eventfd_read(r.as_fd()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidData, "{e}");
}
