//! Files, `dup`, and the descriptor limit. `RLIMIT_NOFILE` is per process,
//! so the test that lowers it re-runs this test binary as a child process
//! (selected by an environment variable) and changes the limit only there.

use std::io::ErrorKind;
use std::path::Path;
use std::process::Command;

use evloop_syscalls::*;

/// Set in the child process that may change its own limits.
const CHILD_ENV: &str = "EVLOOP_SYSCALLS_RLIMIT_CHILD";
/// Printed by the child when its checks all passed.
const CHILD_DONE: &str = "rlimit child: all checks passed";

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
fn open_readonly_is_cloexec_but_blocking() {
    let exe = std::env::current_exe().unwrap();
    let f = open_readonly(&exe).unwrap();
    assert_eq!(cloexec_nonblock(f.as_fd()), (true, false));
    let mut magic = [0u8; 4];
    assert_eq!(read(f.as_fd(), &mut magic).unwrap(), 4);
    assert_eq!(&magic, b"\x7fELF");

    let missing = open_readonly(Path::new("/nonexistent/evloop/file")).unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    let nul = open_readonly(Path::new("bad\0path")).unwrap_err();
    assert_eq!(nul.kind(), ErrorKind::InvalidInput);
}

#[test]
fn dev_null_is_a_cloexec_nonblocking_sink() {
    let n = open_dev_null().unwrap();
    assert_eq!(cloexec_nonblock(n.as_fd()), (true, true));
    assert_eq!(write(n.as_fd(), b"discarded").unwrap(), 9);
    assert_eq!(read(n.as_fd(), &mut [0u8; 4]).unwrap(), 0);
}

#[test]
fn dup_is_cloexec_and_shares_the_file_description() {
    let (a, b) = socketpair_stream().unwrap();
    let d = dup(a.as_fd()).unwrap();
    assert_ne!(d.as_raw_fd(), a.as_raw_fd());
    assert_eq!(cloexec_nonblock(d.as_fd()), (true, true));
    // Status flags belong to the description: clearing O_NONBLOCK through
    // the copy clears it for the original.
    set_nonblocking(d.as_fd(), false).unwrap();
    assert_eq!(cloexec_nonblock(a.as_fd()), (true, false));
    set_nonblocking(d.as_fd(), true).unwrap();
    send(d.as_fd(), b"via dup").unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(recv(b.as_fd(), &mut buf).unwrap(), 7);
    assert!(dup(open_dev_null().unwrap().as_fd()).is_ok());
}

#[test]
fn nofile_limit_reads_sensibly() {
    // Reading is harmless in the shared test process; changing is not.
    let (soft, hard) = nofile_limit().unwrap();
    assert!(soft > 3 && soft <= hard, "({soft}, {hard})");
}

#[test]
fn rlimit_round_trip_in_a_child_process() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "rlimit_child_body", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains(CHILD_DONE) || stderr.contains(CHILD_DONE),
        "the child body did not run:\n{stdout}\n{stderr}"
    );
}

/// The body of [`rlimit_round_trip_in_a_child_process`]; does nothing unless
/// run as that child.
#[test]
fn rlimit_child_body() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let (soft, hard) = nofile_limit().unwrap();
    let low: u64 = 32;
    assert!(low <= hard, "hard limit {hard} below {low}");

    set_nofile_limit(low, hard).unwrap();
    assert_eq!(nofile_limit().unwrap(), (low, hard));

    // libuv's EMFILE trick: a reserve descriptor, fill the table, give the
    // reserve up to make room for exactly one more.
    let reserve = open_dev_null().unwrap();
    let mut held = Vec::new();
    let exhausted = loop {
        match socket(Domain::Unix, SockType::Stream) {
            Ok(fd) => held.push(fd),
            Err(e) => break e,
        }
        assert!(held.len() < 64, "the lowered limit had no effect");
    };
    assert_eq!(exhausted.raw_os_error(), Some(errno::EMFILE), "{exhausted}");
    assert_eq!(open_dev_null().unwrap_err().raw_os_error(), Some(errno::EMFILE));
    drop(reserve);
    held.push(socket(Domain::Unix, SockType::Stream).unwrap());
    assert_eq!(
        socket(Domain::Unix, SockType::Stream).unwrap_err().raw_os_error(),
        Some(errno::EMFILE)
    );
    drop(held);

    // soft > hard is EINVAL; restoring the original soft limit works.
    assert_eq!(set_nofile_limit(10, 5).unwrap_err().raw_os_error(), Some(errno::EINVAL));
    set_nofile_limit(soft, hard).unwrap();
    assert_eq!(nofile_limit().unwrap(), (soft, hard));
    println!("{CHILD_DONE}");
}
