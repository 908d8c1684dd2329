//! Child processes through pidfds: `pidfd_open`, readiness in epoll when
//! the child exits, `waitid_pidfd` reaping it (exit codes, signals,
//! `nohang`), `pidfd_send_signal`, and no zombie left behind.

use std::path::Path;
use std::process::{Child, Command};
use std::time::Instant;

use evloop_syscalls::counters;
use evloop_syscalls::*;

fn spawn(program: &str, args: &[&str]) -> (Child, OwnedFd) {
    let child = Command::new(program).args(args).spawn().unwrap();
    let pidfd = pidfd_open(child.id() as i32).unwrap();
    (child, pidfd)
}

/// Waits up to 10 s for the pidfd to report the child's exit.
fn wait_exit(pidfd: BorrowedFd<'_>) {
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), pidfd.as_raw_fd(), EpollFlags::IN, 7).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut events = [EpollEvent::zeroed(); 1];
    while Instant::now() < deadline {
        if epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::from_millis(100))).unwrap() == 1 {
            assert!(events[0].flags().contains(EpollFlags::IN), "{:?}", events[0]);
            assert_eq!(events[0].data(), 7);
            return;
        }
    }
    panic!("the pidfd never became readable");
}

/// Not readable yet: the child is still running.
fn is_readable_now(pidfd: BorrowedFd<'_>) -> bool {
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), pidfd.as_raw_fd(), EpollFlags::IN, 0).unwrap();
    let mut events = [EpollEvent::zeroed(); 1];
    epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::ZERO)).unwrap() == 1
}

fn assert_reaped(child: &Child) {
    let proc_dir = format!("/proc/{}", child.id());
    assert!(
        !Path::new(&proc_dir).exists(),
        "{proc_dir} still exists: a zombie remains"
    );
}

fn run_to_exit(program: &str, args: &[&str]) -> ExitStatus {
    let (child, pidfd) = spawn(program, args);
    wait_exit(pidfd.as_fd());
    let status = waitid_pidfd(pidfd.as_fd(), true)
        .unwrap()
        .expect("the child has exited");
    assert_reaped(&child);
    status
}

#[test]
fn true_exits_with_code_0() {
    assert_eq!(run_to_exit("true", &[]), ExitStatus::Exited(0));
}

#[test]
fn sh_exit_7_exits_with_code_7() {
    assert_eq!(run_to_exit("sh", &["-c", "exit 7"]), ExitStatus::Exited(7));
}

#[test]
fn sleep_killed_with_pidfd_send_signal_reports_the_signal() {
    let (child, pidfd) = spawn("sleep", &["10"]);
    assert!(!is_readable_now(pidfd.as_fd()), "sleep 10 cannot have exited yet");
    // Still running: nohang reports nothing and reaps nothing.
    assert_eq!(waitid_pidfd(pidfd.as_fd(), true).unwrap(), None);
    assert!(Path::new(&format!("/proc/{}", child.id())).exists());

    let before = counters::snapshot();
    pidfd_send_signal(pidfd.as_fd(), Signal::TERM.raw()).unwrap();
    assert_eq!(counters::snapshot().since(&before).get(Syscall::PidfdSendSignal), 1);
    wait_exit(pidfd.as_fd());
    // A zombie accepts (and ignores) signals until it is reaped.
    pidfd_send_signal(pidfd.as_fd(), 0).unwrap();

    let before = counters::snapshot();
    let status = waitid_pidfd(pidfd.as_fd(), false).unwrap();
    assert_eq!(counters::snapshot().since(&before).get(Syscall::Waitid), 1);
    assert_eq!(
        status,
        Some(ExitStatus::Signaled {
            signal: libc::SIGTERM,
            core_dumped: false
        })
    );
    assert_reaped(&child);

    // Reaped: the pidfd still names the (gone) process, never a new one.
    let e = pidfd_send_signal(pidfd.as_fd(), Signal::TERM.raw()).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::ESRCH), "{e}");
    let e = waitid_pidfd(pidfd.as_fd(), true).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::ECHILD), "{e}");
}

#[test]
fn blocking_waitid_waits_for_the_exit() {
    let (child, pidfd) = spawn("sh", &["-c", "sleep 0.05; exit 3"]);
    assert_eq!(waitid_pidfd(pidfd.as_fd(), false).unwrap(), Some(ExitStatus::Exited(3)));
    assert_reaped(&child);
}

#[test]
fn pidfd_open_is_cloexec_counted_and_rejects_bad_pids() {
    let before = counters::snapshot();
    let own = pidfd_open(getpid()).unwrap();
    assert_eq!(counters::snapshot().since(&before).get(Syscall::PidfdOpen), 1);
    // The pidfd of a process that is not our child cannot be waited for.
    let e = waitid_pidfd(own.as_fd(), true).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::ECHILD), "{e}");
    let flags = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", own.as_raw_fd())).unwrap();
    let flags = flags
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|v| i32::from_str_radix(v.trim(), 8).ok())
        .unwrap();
    assert_ne!(flags & libc::O_CLOEXEC, 0, "pidfd not close-on-exec: {flags:o}");

    let e = pidfd_open(0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::EINVAL), "{e}");
    let e = pidfd_open(-5).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::EINVAL), "{e}");
    let e = pidfd_open(i32::MAX).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::ESRCH), "{e}");
    // Not a pidfd.
    let efd = eventfd(0).unwrap();
    let e = pidfd_send_signal(efd.as_fd(), 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::EBADF), "{e}");
    let e = waitid_pidfd(efd.as_fd(), true).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(errno::EBADF), "{e}");
}

#[cfg(feature = "fault-injection")]
#[test]
fn enosys_errors_say_that_the_kernel_lacks_pidfds() {
    fault::clear();
    for (s, what) in [
        (Syscall::PidfdOpen, "pidfd_open"),
        (Syscall::PidfdSendSignal, "pidfd_send_signal"),
        (Syscall::Waitid, "waitid"),
    ] {
        fault::fail_nth(s, 1, errno::ENOSYS);
        let own = pidfd_open(getpid());
        let e = match s {
            Syscall::PidfdOpen => own.unwrap_err(),
            Syscall::PidfdSendSignal => pidfd_send_signal(own.unwrap().as_fd(), 0).unwrap_err(),
            _ => waitid_pidfd(own.unwrap().as_fd(), true).unwrap_err(),
        };
        assert_eq!(e.kind(), std::io::ErrorKind::Unsupported, "{e}");
        let msg = e.to_string();
        assert!(msg.contains(what) && msg.contains("not supported"), "{msg}");
    }
    assert_eq!(fault::pending(), 0);
}

#[cfg(feature = "fault-injection")]
#[test]
fn an_interrupted_waitid_is_retried() {
    fault::clear();
    let (child, pidfd) = spawn("true", &[]);
    fault::fail_nth(Syscall::Waitid, 1, errno::EINTR);
    let before = counters::snapshot();
    assert_eq!(waitid_pidfd(pidfd.as_fd(), false).unwrap(), Some(ExitStatus::Exited(0)));
    assert_eq!(counters::snapshot().since(&before).get(Syscall::Waitid), 2);
    assert_reaped(&child);
}
