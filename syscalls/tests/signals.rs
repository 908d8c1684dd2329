//! Signal delivery to eventfds (`register_signal`), signal numbers and
//! names, dispositions, `kill`/`getpid`, and `SIGPIPE`-free pipe writes.
//!
//! Signal dispositions are process-wide and the tests of one binary run in
//! parallel threads, so every test that installs a handler, raises a signal
//! or writes to a broken pipe holds [`LOCK`]. Each such test restores the
//! dispositions it changed (by dropping its registrations) and waits until
//! the signals it raised are no longer pending before it does: a `SIGUSR1`
//! still pending when its default action is back would kill the process.

use std::io::{ErrorKind, IoSlice};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use evloop_syscalls::counters;
use evloop_syscalls::*;

static LOCK: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Bit of `signal` in the hexadecimal masks of `/proc/.../status`.
fn bit(signal: i32) -> u64 {
    1u64 << (signal - 1)
}

/// A hexadecimal mask field (`SigPnd:`, `ShdPnd:`, `SigBlk:`) of a status file.
fn status_mask(path: &str, key: &str) -> u64 {
    let status = std::fs::read_to_string(path).unwrap();
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| u64::from_str_radix(l.split_whitespace().nth(1).unwrap_or("0"), 16).ok())
        .unwrap_or_else(|| panic!("no {key} in {path}"))
}

fn thread_mask(key: &str) -> u64 {
    status_mask("/proc/thread-self/status", key)
}

/// `true` while `signal` is pending for the whole process (not yet taken by a thread).
fn process_pending(signal: Signal) -> bool {
    status_mask("/proc/self/status", "ShdPnd:") & bit(signal.raw()) != 0
}

/// Waits up to 10 s for `fd` to become readable. Signals interrupt epoll
/// waits (`Ok(0)`), so it waits again until the deadline.
fn wait_readable(fd: BorrowedFd<'_>) -> bool {
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), fd.as_raw_fd(), EpollFlags::IN, 1).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut events = [EpollEvent::zeroed(); 1];
    while Instant::now() < deadline {
        if epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::from_millis(100))).unwrap() == 1 {
            return true;
        }
    }
    false
}

/// Reads the eventfd's counter, 0 when it is zero.
fn drain(fd: BorrowedFd<'_>) -> u64 {
    match eventfd_read(fd) {
        Ok(n) => n,
        Err(e) if e.kind() == ErrorKind::WouldBlock => 0,
        Err(e) => panic!("eventfd_read: {e}"),
    }
}

/// Waits until `signal` is no longer pending for the process and every
/// delivery counted by `deliveries` has been written to `efd` (the handler
/// counts first, then writes), steadily for a few rounds; returns the
/// eventfd total.
fn settle_with(signal: Signal, deliveries: impl Fn() -> u64, efd: BorrowedFd<'_>) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut total = 0;
    let mut stable = 0;
    while stable < 3 {
        assert!(Instant::now() < deadline, "{signal} never settled");
        std::thread::sleep(Duration::from_millis(10));
        total += drain(efd);
        if !process_pending(signal) && total == deliveries() {
            stable += 1;
        } else {
            stable = 0;
        }
    }
    total
}

/// [`settle_with`] for one registration that alone writes to `efd`.
fn settle(signal: Signal, reg: &SignalRegistration, efd: BorrowedFd<'_>) -> u64 {
    settle_with(signal, || reg.deliveries(), efd)
}

// ---------------------------------------------------------------------------
// Signal numbers
// ---------------------------------------------------------------------------

#[test]
fn signal_new_rejects_invalid_numbers_with_errors_naming_them() {
    for (n, needle) in [
        (0, "0"),
        (65, "65"),
        (-1, "-1"),
        (i32::MIN, "-2147483648"),
        (i32::MAX, "2147483647"),
        (9, "SIGKILL"),
        (19, "SIGSTOP"),
        (32, "32"),
        (33, "33"),
    ] {
        let e = Signal::new(n).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{n}: {e}");
        assert!(e.to_string().contains(needle), "{n}: {e}");
    }
}

#[test]
fn signal_names_and_numbers() {
    assert_eq!(Signal::INT.name(), "SIGINT");
    assert_eq!(Signal::INT.raw(), 2);
    assert_eq!(Signal::TERM.to_string(), "SIGTERM");
    for (sig, name) in [
        (Signal::HUP, "SIGHUP"),
        (Signal::QUIT, "SIGQUIT"),
        (Signal::USR1, "SIGUSR1"),
        (Signal::USR2, "SIGUSR2"),
        (Signal::CHLD, "SIGCHLD"),
        (Signal::PIPE, "SIGPIPE"),
        (Signal::WINCH, "SIGWINCH"),
        (Signal::ALRM, "SIGALRM"),
    ] {
        assert_eq!(sig.name(), name);
        assert_eq!(Signal::new(sig.raw()).unwrap(), sig, "{name}");
    }
    assert_eq!(Signal::new(34).unwrap().name(), "SIGRTMIN");
    assert_eq!(Signal::new(37).unwrap().name(), "SIGRTMIN+3");
    assert_eq!(Signal::new(64).unwrap().to_string(), "SIGRTMIN+30");
    // Every valid number has a real name.
    for n in 1..=64 {
        if let Ok(sig) = Signal::new(n) {
            assert!(sig.name().starts_with("SIG") && !sig.name().contains('?'), "{n}: {sig}");
        }
    }
}

#[test]
fn kill_and_stop_exist_to_be_sent_but_registering_them_is_an_error_naming_them() {
    assert_eq!((Signal::KILL.raw(), Signal::KILL.name()), (9, "SIGKILL"));
    assert_eq!(Signal::STOP.name(), "SIGSTOP");
    assert!(!Signal::KILL.is_catchable() && !Signal::STOP.is_catchable());
    assert!(Signal::CONT.is_catchable() && Signal::INT.is_catchable());
    let efd = eventfd(0).unwrap();
    for sig in [Signal::KILL, Signal::STOP] {
        let Err(e) = register_signal(sig, efd.as_fd()) else {
            panic!("registering {sig} must fail");
        };
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(
            e.to_string().contains(sig.name()) && e.to_string().contains("cannot be caught"),
            "{e}"
        );
    }
}

// ---------------------------------------------------------------------------
// Registration and delivery
// ---------------------------------------------------------------------------

#[test]
fn raised_signal_makes_the_eventfd_readable_and_is_pending_once() {
    let _serial = serial();
    let efd = eventfd(0).unwrap();
    let reg = register_signal(Signal::USR1, efd.as_fd()).unwrap();
    assert_eq!(reg.signal(), Signal::USR1);
    assert!(!reg.take_pending());
    assert_eq!(reg.deliveries(), 0);
    assert_eq!(signal_disposition(Signal::USR1).unwrap(), Disposition::Handler);

    raise_in_process(Signal::USR1).unwrap();
    assert!(wait_readable(efd.as_fd()), "SIGUSR1 never woke the eventfd");
    assert_eq!(eventfd_read(efd.as_fd()).unwrap(), 1);
    assert!(reg.take_pending());
    assert!(!reg.take_pending(), "pending is taken once");
    assert_eq!(reg.deliveries(), 1);
    assert_eq!(eventfd_read(efd.as_fd()).unwrap_err().kind(), ErrorKind::WouldBlock);
    drop(reg);
    assert_eq!(signal_disposition(Signal::USR1).unwrap(), Disposition::Default);
}

#[test]
fn a_burst_of_raises_coalesces_into_one_pending_flag() {
    let _serial = serial();
    let efd = eventfd(0).unwrap();
    let reg = register_signal(Signal::USR1, efd.as_fd()).unwrap();
    for _ in 0..1_000 {
        raise_in_process(Signal::USR1).unwrap();
    }
    let written = settle(Signal::USR1, &reg, efd.as_fd());
    let n = reg.deliveries();
    assert!((1..=1_000).contains(&n), "{n} deliveries for 1000 raises");
    assert_eq!(written, n, "one eventfd write per delivery");
    assert!(reg.take_pending());
    assert!(!reg.take_pending(), "a burst is one pending flag");
}

#[test]
fn two_registrations_of_one_signal_both_receive_it() {
    let _serial = serial();
    let (e1, e2, other) = (eventfd(0).unwrap(), eventfd(0).unwrap(), eventfd(0).unwrap());
    let r1 = register_signal(Signal::USR2, e1.as_fd()).unwrap();
    let r2 = register_signal(Signal::USR2, e2.as_fd()).unwrap();
    let unrelated = register_signal(Signal::WINCH, other.as_fd()).unwrap();
    raise_in_process(Signal::USR2).unwrap();
    assert!(wait_readable(e1.as_fd()));
    assert!(wait_readable(e2.as_fd()));
    assert!(r1.take_pending() && r2.take_pending());
    assert_eq!((r1.deliveries(), r2.deliveries()), (1, 1));
    assert!(!unrelated.take_pending());
    assert_eq!(drain(other.as_fd()), 0);
    // A registration made from the same eventfd twice gets two writes.
    drop(r2);
    let r3 = register_signal(Signal::USR2, e1.as_fd()).unwrap();
    drain(e1.as_fd());
    raise_in_process(Signal::USR2).unwrap();
    let total = settle_with(
        Signal::USR2,
        || r1.deliveries().saturating_sub(1) + r3.deliveries(),
        e1.as_fd(),
    );
    assert!(r1.take_pending() && r3.take_pending());
    assert_eq!((r1.deliveries(), r3.deliveries()), (2, 1));
    assert_eq!(total, 2, "both registrations wrote to the shared eventfd");
}

#[test]
fn a_signal_raised_on_another_thread_reaches_a_registration_made_here() {
    let _serial = serial();
    let efd = eventfd(0).unwrap();
    let reg = register_signal(Signal::USR1, efd.as_fd()).unwrap();
    std::thread::spawn(|| raise_in_process(Signal::USR1).unwrap())
        .join()
        .unwrap();
    assert!(wait_readable(efd.as_fd()));
    assert!(reg.take_pending());
    assert_eq!(reg.deliveries(), 1);
}

#[test]
fn dropping_the_last_registration_restores_the_previous_disposition() {
    let _serial = serial();
    let efd = eventfd(0).unwrap();
    assert_eq!(signal_disposition(Signal::USR2).unwrap(), Disposition::Default);

    let before = counters::snapshot();
    let a = register_signal(Signal::USR2, efd.as_fd()).unwrap();
    let c = counters::snapshot().since(&before);
    assert_eq!(c.get(Syscall::Sigaction), 1, "{c}");
    assert_eq!(c.get(Syscall::Fcntl), 2, "O_NONBLOCK check and dup: {c}");

    let before = counters::snapshot();
    let b = register_signal(Signal::USR2, efd.as_fd()).unwrap();
    assert_eq!(counters::snapshot().since(&before).get(Syscall::Sigaction), 0);
    assert_eq!(signal_disposition(Signal::USR2).unwrap(), Disposition::Handler);

    let before = counters::snapshot();
    drop(a);
    let c = counters::snapshot().since(&before);
    assert_eq!(c.get(Syscall::Sigaction), 0, "{c}");
    assert_eq!(c.get(Syscall::Close), 1, "the duplicate is closed: {c}");
    assert_eq!(signal_disposition(Signal::USR2).unwrap(), Disposition::Handler);

    let before = counters::snapshot();
    drop(b);
    assert_eq!(counters::snapshot().since(&before).get(Syscall::Sigaction), 1);
    assert_eq!(signal_disposition(Signal::USR2).unwrap(), Disposition::Default);

    // Rust ignores SIGPIPE: an ignored signal comes back ignored.
    assert_eq!(signal_disposition(Signal::PIPE).unwrap(), Disposition::Ignore);
    let p = register_signal(Signal::PIPE, efd.as_fd()).unwrap();
    assert_eq!(signal_disposition(Signal::PIPE).unwrap(), Disposition::Handler);
    drop(p);
    assert_eq!(signal_disposition(Signal::PIPE).unwrap(), Disposition::Ignore);
}

#[test]
fn a_full_signal_row_is_an_error_naming_the_signal() {
    let _serial = serial();
    let efd = eventfd(0).unwrap();
    let mut regs: Vec<_> = (0..SLOTS_PER_SIGNAL)
        .map(|_| register_signal(Signal::WINCH, efd.as_fd()).unwrap())
        .collect();
    let e = register_signal(Signal::WINCH, efd.as_fd()).unwrap_err();
    assert!(e.to_string().contains("SIGWINCH"), "{e}");
    // Other signals have their own slots.
    drop(register_signal(Signal::HUP, efd.as_fd()).unwrap());
    regs.pop();
    regs.push(register_signal(Signal::WINCH, efd.as_fd()).unwrap());
    drop(regs);
    assert_eq!(signal_disposition(Signal::WINCH).unwrap(), Disposition::Default);
}

#[test]
fn a_blocking_wake_fd_is_rejected() {
    let _serial = serial();
    // A regular file is opened without O_NONBLOCK.
    let file = open_readonly(std::path::Path::new("/proc/self/status")).unwrap();
    let e = register_signal(Signal::USR1, file.as_fd()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("SIGUSR1"), "{e}");
    assert_eq!(signal_disposition(Signal::USR1).unwrap(), Disposition::Default);
}

/// Raises `signal` in a tight loop on another thread until dropped.
struct Raiser {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Raiser {
    fn start(signal: Signal) -> Raiser {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut sent = 0u64;
            while !flag.load(Ordering::Relaxed) {
                raise_in_process(signal).unwrap();
                sent += 1;
            }
            sent
        });
        Raiser {
            stop,
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().map_or(0, |t| t.join().unwrap())
    }
}

impl Drop for Raiser {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Registers, unregisters and closes the eventfd `cycles` times while
/// `signal` keeps arriving; after each cycle two fresh eventfds take the
/// numbers just freed (the caller's and the registration's duplicate). A
/// handler still writing to a closed number would make one of them
/// readable: they are checked at once and again later.
fn churn(signal: Signal, cycles: usize) {
    let mut fresh: std::collections::VecDeque<OwnedFd> = std::collections::VecDeque::new();
    for i in 0..cycles {
        let efd = eventfd(0).unwrap();
        let reg = register_signal(signal, efd.as_fd()).unwrap();
        if i % 100 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(reg);
        drop(efd);
        for _ in 0..2 {
            let f = eventfd(0).unwrap();
            assert_eq!(drain(f.as_fd()), 0, "cycle {i}: a handler wrote to a closed descriptor");
            fresh.push_back(f);
        }
        while fresh.len() > 64 {
            let f = fresh.pop_front().unwrap();
            assert_eq!(drain(f.as_fd()), 0, "cycle {i}: a late write hit a reused descriptor");
        }
    }
    std::thread::sleep(Duration::from_millis(20));
    for f in &fresh {
        assert_eq!(drain(f.as_fd()), 0, "a late write hit a reused descriptor");
    }
}

#[test]
fn unregistering_under_a_signal_storm_never_writes_to_closed_descriptors() {
    let _serial = serial();
    // SIGWINCH's default action is to ignore it, so the storm is harmless
    // in the instants when no handler is installed: every cycle installs and
    // restores the disposition.
    let raiser = Raiser::start(Signal::WINCH);
    churn(Signal::WINCH, 1_000);
    assert!(raiser.stop() > 0);
    assert_eq!(signal_disposition(Signal::WINCH).unwrap(), Disposition::Default);
}

#[test]
fn unregistering_next_to_a_live_registration_under_a_signal_storm() {
    let _serial = serial();
    // A keeper registration holds the handler installed, so the slots are
    // reused while the handler runs continuously.
    let keeper_fd = eventfd(0).unwrap();
    let keeper = register_signal(Signal::USR1, keeper_fd.as_fd()).unwrap();
    let raiser = Raiser::start(Signal::USR1);
    churn(Signal::USR1, 1_000);
    assert!(raiser.stop() > 0);
    settle(Signal::USR1, &keeper, keeper_fd.as_fd());
    assert!(keeper.deliveries() > 0);
    assert!(keeper.take_pending());
    drop(keeper);
    assert_eq!(signal_disposition(Signal::USR1).unwrap(), Disposition::Default);
}

// ---------------------------------------------------------------------------
// kill and getpid
// ---------------------------------------------------------------------------

#[test]
fn kill_with_signal_zero_checks_that_the_process_exists() {
    assert_eq!(getpid() as u32, std::process::id());
    let before = counters::snapshot();
    kill(getpid(), 0).unwrap();
    let c = counters::snapshot().since(&before);
    assert_eq!((c.get(Syscall::Getpid), c.get(Syscall::Kill)), (1, 1), "{c}");
    // pid_max is at most 2^22: this pid never exists.
    let e = kill(i32::MAX, 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::ESRCH), "{e}");
    let e = kill(getpid(), 12_345).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::EINVAL), "{e}");
}

// ---------------------------------------------------------------------------
// SIGPIPE-free pipe writes
// ---------------------------------------------------------------------------

/// A pipe whose reader is gone.
fn broken_pipe() -> OwnedFd {
    let (r, w) = pipe2().unwrap();
    drop(r);
    w
}

fn assert_no_sigpipe_pending(what: &str) {
    assert_eq!(
        thread_mask("SigPnd:") & bit(libc::SIGPIPE),
        0,
        "{what}: SIGPIPE pending on the thread"
    );
    assert_eq!(
        status_mask("/proc/self/status", "ShdPnd:") & bit(libc::SIGPIPE),
        0,
        "{what}: SIGPIPE pending on the process"
    );
}

#[test]
fn write_nosigpipe_to_a_closed_pipe_is_epipe_and_leaves_mask_and_pending_as_they_were() {
    let _serial = serial();
    // A handler on SIGPIPE counts any signal that escapes.
    let efd = eventfd(0).unwrap();
    let watch = register_signal(Signal::PIPE, efd.as_fd()).unwrap();
    let mask = thread_mask("SigBlk:");
    assert_eq!(mask & bit(libc::SIGPIPE), 0, "the test thread must not block SIGPIPE");
    let w = broken_pipe();

    let before = counters::snapshot();
    let e = write_nosigpipe(w.as_fd(), b"x").unwrap_err();
    let c = counters::snapshot().since(&before);
    assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}");
    assert_eq!(c.get(Syscall::Write), 1, "{c}");
    assert_eq!(c.get(Syscall::Sigprocmask), 2, "block and restore: {c}");
    assert_eq!(c.get(Syscall::Sigpending), 1, "{c}");
    assert_eq!(c.get(Syscall::Sigtimedwait), 1, "the SIGPIPE is taken back: {c}");
    assert_no_sigpipe_pending("write_nosigpipe");
    assert_eq!(thread_mask("SigBlk:"), mask);

    let e = writev_nosigpipe(w.as_fd(), &[IoSlice::new(b"a"), IoSlice::new(b"b")]).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::EPIPE), "{e}");
    assert_no_sigpipe_pending("writev_nosigpipe");
    assert_eq!(thread_mask("SigBlk:"), mask);

    // A complete write needs no sigtimedwait.
    let (r, w2) = pipe2().unwrap();
    let before = counters::snapshot();
    assert_eq!(write_nosigpipe(w2.as_fd(), b"hello").unwrap(), 5);
    let c = counters::snapshot().since(&before);
    assert_eq!(c.get(Syscall::Sigtimedwait), 0, "{c}");
    let mut buf = [0u8; 8];
    assert_eq!(read(r.as_fd(), &mut buf).unwrap(), 5);

    assert_eq!(watch.deliveries(), 0, "a SIGPIPE reached the process");
    assert_eq!(drain(efd.as_fd()), 0);
}

#[test]
fn write_nosigpipe_under_block_sigpipe_on_this_thread_is_a_plain_write() {
    let _serial = serial();
    let efd = eventfd(0).unwrap();
    let watch = register_signal(Signal::PIPE, efd.as_fd()).unwrap();
    let mask = thread_mask("SigBlk:");
    let w = broken_pipe();
    {
        let _block = block_sigpipe_on_this_thread().unwrap();
        assert_eq!(thread_mask("SigBlk:"), mask | bit(libc::SIGPIPE));

        let before = counters::snapshot();
        let e = write_nosigpipe(w.as_fd(), b"x").unwrap_err();
        let c = counters::snapshot().since(&before);
        assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}");
        assert_eq!(c.get(Syscall::Write), 1, "{c}");
        assert_eq!(c.get(Syscall::Sigtimedwait), 1, "{c}");
        // The getpid checks that the SIGPIPE taken back is the write's own.
        assert_eq!(c.get(Syscall::Getpid), 1, "{c}");
        assert_eq!(c.total_syscalls(), 3, "no mask calls: {c}");
        assert_no_sigpipe_pending("write_nosigpipe (blocked)");

        let e = writev_nosigpipe(w.as_fd(), &[IoSlice::new(b"x")]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}");
        assert_no_sigpipe_pending("writev_nosigpipe (blocked)");

        let (_r, w2) = pipe2().unwrap();
        let before = counters::snapshot();
        assert_eq!(write_nosigpipe(w2.as_fd(), b"ok").unwrap(), 2);
        assert_eq!(counters::snapshot().since(&before).total_syscalls(), 1);
    }
    assert_eq!(thread_mask("SigBlk:"), mask, "the last guard restores the mask");
    assert_no_sigpipe_pending("after the guard");
    assert_eq!(watch.deliveries(), 0, "a SIGPIPE reached the process");
}

#[test]
fn nested_sigpipe_blocks_unblock_with_the_last_and_take_back_a_leftover_sigpipe() {
    let _serial = serial();
    let efd = eventfd(0).unwrap();
    let watch = register_signal(Signal::PIPE, efd.as_fd()).unwrap();
    let mask = thread_mask("SigBlk:");
    let w = broken_pipe();

    let outer = block_sigpipe_on_this_thread().unwrap();
    let before = counters::snapshot();
    let inner = block_sigpipe_on_this_thread().unwrap();
    assert!(
        counters::snapshot().since(&before).is_empty(),
        "nested guards make no call"
    );

    // A plain write leaves its SIGPIPE pending (blocked, so not delivered).
    assert_eq!(write(w.as_fd(), b"x").unwrap_err().kind(), ErrorKind::BrokenPipe);
    assert_ne!(
        thread_mask("SigPnd:") & bit(libc::SIGPIPE),
        0,
        "the SIGPIPE should be pending"
    );

    drop(inner);
    assert_ne!(
        thread_mask("SigBlk:") & bit(libc::SIGPIPE),
        0,
        "still blocked by the outer guard"
    );
    let before = counters::snapshot();
    drop(outer);
    let c = counters::snapshot().since(&before);
    assert_eq!(
        (c.get(Syscall::Sigtimedwait), c.get(Syscall::Sigprocmask)),
        (1, 1),
        "{c}"
    );
    assert_eq!(thread_mask("SigBlk:"), mask);
    assert_no_sigpipe_pending("after the last guard");
    assert_eq!(watch.deliveries(), 0, "the leftover SIGPIPE reached the process");
}

#[test]
fn threads_spawned_under_a_sigpipe_block_inherit_the_mask_and_still_write_safely() {
    let _serial = serial();
    let efd = eventfd(0).unwrap();
    let watch = register_signal(Signal::PIPE, efd.as_fd()).unwrap();
    let block = block_sigpipe_on_this_thread().unwrap();
    let child = std::thread::spawn(|| {
        let inherited = thread_mask("SigBlk:") & bit(libc::SIGPIPE) != 0;
        let w = broken_pipe();
        let e = write_nosigpipe(w.as_fd(), b"x").unwrap_err();
        let blk_after = thread_mask("SigBlk:") & bit(libc::SIGPIPE) != 0;
        let pending = thread_mask("SigPnd:") & bit(libc::SIGPIPE) != 0;
        (inherited, e.kind(), blk_after, pending)
    })
    .join()
    .unwrap();
    drop(block);
    assert_eq!(child, (true, ErrorKind::BrokenPipe, true, false));
    assert_eq!(watch.deliveries(), 0);
}

// ---------------------------------------------------------------------------
// Fault injection
// ---------------------------------------------------------------------------

#[cfg(feature = "fault-injection")]
#[test]
fn a_failed_sigaction_install_frees_the_slot_and_names_the_signal() {
    let _serial = serial();
    fault::clear();
    let efd = eventfd(0).unwrap();
    fault::fail_nth(Syscall::Sigaction, 1, errno::EINVAL);
    let e = register_signal(Signal::USR2, efd.as_fd()).unwrap_err();
    assert!(e.to_string().contains("SIGUSR2"), "{e}");
    assert_eq!(signal_disposition(Signal::USR2).unwrap(), Disposition::Default);
    // Every slot is still free.
    let regs: Vec<_> = (0..SLOTS_PER_SIGNAL)
        .map(|_| register_signal(Signal::USR2, efd.as_fd()).unwrap())
        .collect();
    drop(regs);
    assert_eq!(signal_disposition(Signal::USR2).unwrap(), Disposition::Default);
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_failed_restore_keeps_the_original_disposition_for_the_next_last_drop() {
    let _serial = serial();
    fault::clear();
    let efd = eventfd(0).unwrap();
    let reg = register_signal(Signal::USR2, efd.as_fd()).unwrap();
    fault::fail_nth(Syscall::Sigaction, 1, errno::EINVAL);
    drop(reg);
    // The restore failed: the handler stays (and drops the signal).
    assert_eq!(signal_disposition(Signal::USR2).unwrap(), Disposition::Handler);
    let reg = register_signal(Signal::USR2, efd.as_fd()).unwrap();
    drop(reg);
    assert_eq!(signal_disposition(Signal::USR2).unwrap(), Disposition::Default);
    assert_eq!(fault::pending(), 0);
}

#[cfg(feature = "fault-injection")]
#[test]
fn injected_failures_of_the_sigpipe_calls_leave_the_thread_clean() {
    let _serial = serial();
    fault::clear();
    let mask = thread_mask("SigBlk:");
    let w = broken_pipe();
    // The first mask call fails: nothing is written, nothing blocked.
    fault::fail_nth(Syscall::Sigprocmask, 1, errno::EINVAL);
    let before = counters::snapshot();
    assert_eq!(
        write_nosigpipe(w.as_fd(), b"x").unwrap_err().raw_os_error(),
        Some(errno::EINVAL)
    );
    assert_eq!(counters::snapshot().since(&before).get(Syscall::Write), 0);
    assert_eq!(thread_mask("SigBlk:"), mask);
    // sigpending fails after the block: the mask is restored.
    fault::fail_nth(Syscall::Sigpending, 1, errno::EINVAL);
    assert!(write_nosigpipe(w.as_fd(), b"x").is_err());
    assert_eq!(thread_mask("SigBlk:"), mask);
    fault::fail_nth(Syscall::Sigprocmask, 1, errno::EINVAL);
    assert!(block_sigpipe_on_this_thread().is_err());
    assert_eq!(thread_mask("SigBlk:"), mask);
    // A failed block leaves no guard behind: the next one blocks for real.
    let guard = block_sigpipe_on_this_thread().unwrap();
    assert_ne!(thread_mask("SigBlk:") & bit(libc::SIGPIPE), 0);
    drop(guard);
    assert_eq!(thread_mask("SigBlk:"), mask);
    assert_no_sigpipe_pending("after injected failures");
    assert_eq!(fault::pending(), 0);
}
