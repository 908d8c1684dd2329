//! The clean-up paths of signal handling never wait on, or take, what is not theirs:
//! * unregistering waits only for the handlers still writing to its own slot, and holds no lock
//!   while it waits (it used to spin, holding the registration mutex, until no handler of any
//!   signal ran anywhere in the process);
//! * taking back the `SIGPIPE` a write raised never takes one that another process sent (it
//!   used to consume whatever `SIGPIPE` was pending).
#![cfg(feature = "fault-injection")]

use std::io::ErrorKind;
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use evloop_syscalls::*;

static LOCK: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn bit(signal: i32) -> u64 {
    1u64 << (signal - 1)
}

fn status_mask(path: &str, key: &str) -> u64 {
    let status = std::fs::read_to_string(path).unwrap();
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| u64::from_str_radix(l.split_whitespace().nth(1).unwrap_or("0"), 16).ok())
        .unwrap_or_else(|| panic!("no {key} in {path}"))
}

fn sigpipe_pending_here() -> bool {
    status_mask("/proc/thread-self/status", "SigPnd:") & bit(libc::SIGPIPE) != 0
}

/// Waits up to 5 s for `cond`.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not within 5 s");
        std::thread::sleep(Duration::from_millis(1));
    }
}

// ---------------------------------------------------------------------------------------------
// Unregistering.

#[test]
fn unregistering_waits_only_for_handlers_of_its_own_slot_and_holds_no_lock_meanwhile() {
    let _serial = serial();
    let efd_a = eventfd(0).unwrap();
    let efd_b = eventfd(0).unwrap();
    let a = register_signal(Signal::USR1, efd_a.as_fd()).unwrap();
    let b = register_signal(Signal::USR2, efd_b.as_fd()).unwrap();
    // A handler caught in the middle of its write to `a`'s descriptor.
    let in_flight = fault::handler_in_flight(&a);
    let (done_tx, done_rx) = mpsc::channel();
    let dropper = std::thread::spawn(move || {
        drop(a);
        done_tx.send(()).unwrap();
    });
    // The unregistration of `a` waits for that handler...
    assert!(
        done_rx.recv_timeout(Duration::from_millis(100)).is_err(),
        "dropping a registration did not wait for a handler writing to its descriptor"
    );
    // ... and nothing else waits for it: another signal's registration goes away, a new one
    // comes (the mutex is free), and signals are still delivered meanwhile.
    let (tx, rx) = mpsc::channel();
    let other = std::thread::spawn(move || {
        drop(b);
        let efd_c = eventfd(0).unwrap();
        let c = register_signal(Signal::USR2, efd_c.as_fd()).unwrap();
        let a2 = register_signal(Signal::USR1, efd_c.as_fd()).unwrap();
        raise_in_process(Signal::USR2).unwrap();
        eventually("a USR2 delivery", || c.deliveries() == 1);
        drop(c);
        drop(a2);
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("registrations of other slots waited for a handler of `a`'s slot");
    other.join().unwrap();
    assert!(done_rx.try_recv().is_err(), "still waiting for the handler in flight");
    drop(in_flight);
    done_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("the unregistration finished once the handler was done");
    dropper.join().unwrap();
    drop(efd_a);
    drop(efd_b);
}

// ---------------------------------------------------------------------------------------------
// SIGPIPE from another process.

/// Makes a `SIGPIPE` pending on this thread as another process's `sigqueue` would: `SI_QUEUE`
/// from pid 1 (a process may queue any siginfo to itself).
fn queue_foreign_sigpipe_to_this_thread() {
    // The layout shared by x86_64 and aarch64: si_signo, si_errno, si_code, then (8-aligned)
    // the `_rt` member: si_pid, si_uid, si_value.
    let mut info = [0i32; 32];
    info[0] = libc::SIGPIPE;
    info[2] = libc::SI_QUEUE;
    info[4] = 1; // si_pid
    info[5] = 0; // si_uid
    // SAFETY: the kernel reads 128 bytes (one `siginfo_t`) from `info`, a live local array of
    // that size; the other arguments are integers (this process, this thread, the signal).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            libc::c_long::from(libc::getpid()),
            libc::c_long::from(libc::gettid()),
            libc::c_long::from(libc::SIGPIPE),
            info.as_ptr(),
        )
    };
    assert_eq!(rc, 0, "rt_tgsigqueueinfo: {}", std::io::Error::last_os_error());
}

fn broken_pipe() -> OwnedFd {
    let (r, w) = pipe2().unwrap();
    drop(r);
    w
}

#[test]
fn a_sigpipe_another_process_sent_is_not_swallowed_by_the_clean_up_of_a_failed_write() {
    let _serial = serial();
    let efd = eventfd(0).unwrap();
    let watch = register_signal(Signal::PIPE, efd.as_fd()).unwrap();
    let w = broken_pipe();
    {
        let _block = block_sigpipe_on_this_thread().unwrap();
        queue_foreign_sigpipe_to_this_thread();
        assert!(
            sigpipe_pending_here(),
            "precondition: the foreign SIGPIPE waits on this thread"
        );
        // The write's own SIGPIPE merges with the pending one (standard signals do not queue):
        // the one signal left is the other process's, and must not be taken.
        let e = write_nosigpipe(w.as_fd(), b"x").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BrokenPipe);
        // Put back for the process: a thread that does not block SIGPIPE takes it.
        eventually("the other process's SIGPIPE reaching its handler", || {
            watch.deliveries() == 1
        });
    }
    assert!(!sigpipe_pending_here());
    // The write's own SIGPIPE is still taken back.
    let e = write_nosigpipe(w.as_fd(), b"x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BrokenPipe);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(watch.deliveries(), 1, "only the other process's SIGPIPE was delivered");
}

#[test]
fn a_sigpipe_another_process_sent_survives_the_end_of_a_sigpipe_block() {
    let _serial = serial();
    let efd = eventfd(0).unwrap();
    let watch = register_signal(Signal::PIPE, efd.as_fd()).unwrap();
    let block = block_sigpipe_on_this_thread().unwrap();
    queue_foreign_sigpipe_to_this_thread();
    // The last guard takes back a SIGPIPE a partial write may have left: not this one.
    drop(block);
    eventually("the other process's SIGPIPE reaching its handler", || {
        watch.deliveries() == 1
    });
    assert!(!sigpipe_pending_here());
}
