// Standalone binary: it counts the process's fds and looks for its zombie children, which other tests disturb.
//! Subprocesses (`evloop::process`): exit codes and signals, piped stdio, `communicate` without
//! deadlock, no zombie and no fd left behind (after 1,000 children, a missing program, a dropped
//! `Process`, a loop closed under running orphans), `send_signal` after reaping, and the
//! syscall-level shape of waiting: one `pidfd_open`, then nothing until the child exits, then
//! one `waitid`.
//!
//! Every test holds [`serial`]: several count the process's open fds, which a test running in
//! parallel would disturb. Zombies are looked for in `/proc/thread-self/children`: a child is
//! listed there (zombie or not) until it is reaped, and only the test's own thread's children
//! are. Every loop run is bounded ([`run_bounded`]).

use std::collections::HashSet;
use std::io;
use std::time::{Duration, Instant};

use evloop::process::{Stdio, Subprocess};
use evloop::sys::Syscall;
use evloop::sys::counters;
use evloop::{
    event_loop::{EventLoop, LoopHandle},
    io::{AsyncReadExt, AsyncWriteExt},
    time::sleep,
};
use evloop_tests::children::{my_children, wait_reaped};
use evloop_tests::fds::open_fd_count;
use evloop_tests::{run_bounded, serial};

const NO_ARGS: [&str; 0] = [];

fn exit_status_of(lp: &LoopHandle, program: &str, args: &[&str]) -> evloop::process::ExitStatus {
    let mut p = lp.subprocess_exec(program, args).spawn().unwrap();
    let pid = p.pid();
    let status = run_bounded(lp, async move { p.wait().await }).unwrap();
    assert!(!my_children().contains(&pid), "{program}: zombie left after wait");
    status
}

#[test]
fn exit_codes_true_is_0_and_sh_exit_7_is_7() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let s = exit_status_of(&lp, "true", &[]);
    assert_eq!((s.code(), s.signal(), s.success()), (Some(0), None, true));
    let s = exit_status_of(&lp, "sh", &["-c", "exit 7"]);
    assert_eq!((s.code(), s.signal(), s.success()), (Some(7), None, false));
    assert_eq!(s.returncode(), 7);
    assert_eq!(s.to_string(), "exit code 7");
}

#[test]
fn a_signal_is_the_exit_reason_terminate_kill_and_kill_9_self() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    for (how, sig) in [("terminate", 15), ("kill", 9)] {
        let mut p = lp.subprocess_exec("sleep", ["10"]).spawn().unwrap();
        let started = Instant::now();
        let s = run_bounded(&lp, async move {
            sleep(Duration::from_millis(20)).await;
            assert_eq!(p.returncode(), None, "sleep 10 is still running");
            match how {
                "terminate" => p.terminate().unwrap(),
                _ => p.kill().unwrap(),
            }
            p.wait().await
        })
        .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{how}: the child was not stopped"
        );
        assert_eq!(
            (s.code(), s.signal(), s.success()),
            (None, Some(sig), false),
            "{how}: {s}"
        );
        assert_eq!(s.returncode(), -sig);
    }
    let s = exit_status_of(&lp, "sh", &["-c", "kill -9 $$"]);
    assert_eq!(s.signal(), Some(9), "{s}");
    assert_eq!(s.to_string(), "killed by SIGKILL (9)");
}

#[test]
fn stdout_and_stderr_are_piped_and_read() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let mut p = lp
        .subprocess_exec("sh", ["-c", "echo out; echo err >&2; exit 3"])
        .stdout(Stdio::Pipe)
        .stderr(Stdio::Pipe)
        .spawn()
        .unwrap();
    assert!(p.stdin.is_none(), "stdin was inherited, not piped");
    let (out, err, status) = run_bounded(&lp, async move {
        let mut out = String::new();
        let mut err = String::new();
        let mut o = p.stdout.take().unwrap();
        let mut e = p.stderr.take().unwrap();
        let mut buf = Vec::new();
        o.read_to_end(&mut buf).await.unwrap();
        out.push_str(&String::from_utf8(buf).unwrap());
        let mut buf = Vec::new();
        e.read_to_end(&mut buf).await.unwrap();
        err.push_str(&String::from_utf8(buf).unwrap());
        (out, err, p.wait().await.unwrap())
    });
    assert_eq!((out.as_str(), err.as_str(), status.code()), ("out\n", "err\n", Some(3)));
}

#[test]
fn stdin_piped_written_then_closed_cat_echoes_it_and_exits() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let mut p = lp
        .subprocess_exec("cat", NO_ARGS)
        .stdin(Stdio::Pipe)
        .stdout(Stdio::Pipe)
        .spawn()
        .unwrap();
    let (echoed, status) = run_bounded(&lp, async move {
        let mut input = p.stdin.take().unwrap();
        let mut output = p.stdout.take().unwrap();
        input.write_all(b"hello, cat\n").await.unwrap();
        let mut line = [0u8; 11];
        output.read_exact(&mut line).await.unwrap();
        // Closing stdin is what makes cat exit.
        input.shutdown().await.unwrap();
        let mut rest = Vec::new();
        output.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
        (line, p.wait().await.unwrap())
    });
    assert_eq!(&echoed, b"hello, cat\n");
    assert!(status.success());
}

#[test]
fn communicate_10_mib_on_stdout_and_stderr_at_once_completes_without_deadlock() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    const N: usize = 10 * 1024 * 1024;
    // Both streams are written in one go each: if we drained stdout to its end before reading
    // stderr, the child would block on a full stderr pipe forever.
    let mut p = lp
        .subprocess_shell("head -c 10485760 /dev/zero; head -c 10485760 /dev/zero >&2")
        .stdout(Stdio::Pipe)
        .stderr(Stdio::Pipe)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let out = run_bounded(&lp, async move { p.communicate(None).await }).unwrap();
    assert_eq!((out.stdout.len(), out.stderr.len()), (N, N));
    assert!(out.stdout.iter().chain(&out.stderr).all(|&b| b == 0));
    assert!(out.status.success(), "{}", out.status);
    println!("communicate: 2 x 10 MiB in {:?}", started.elapsed());
}

#[test]
fn communicate_feeds_input_while_reading_output() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    // cat echoes while we feed: 4 MiB does not fit in the pipes, so input and output must move
    // at the same time.
    let input: Vec<u8> = (0..4 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let mut p = lp.subprocess_exec("cat", NO_ARGS).piped().spawn().unwrap();
    let expected = input.clone();
    let out = run_bounded(&lp, async move { p.communicate(Some(input)).await }).unwrap();
    assert!(
        out.stdout == expected,
        "cat echoed {} bytes, wrong content",
        out.stdout.len()
    );
    assert!(out.stderr.is_empty() && out.status.success());

    // A child that exits without reading its input: the EPIPE on stdin is not an error.
    let mut p = lp.subprocess_exec("true", NO_ARGS).piped().spawn().unwrap();
    let out = run_bounded(&lp, async move { p.communicate(Some(vec![7u8; 1 << 20])).await }).unwrap();
    assert!(out.status.success() && out.stdout.is_empty());

    // Input without a stdin pipe is a usage error.
    let mut p = lp
        .subprocess_exec("true", NO_ARGS)
        .stdout(Stdio::Pipe)
        .stderr(Stdio::Pipe)
        .spawn()
        .unwrap();
    let e = run_bounded(&lp, async move {
        let e = p.communicate(Some(b"x".to_vec())).await.unwrap_err();
        p.wait().await.unwrap();
        e
    });
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
}

#[test]
fn a_thousand_short_lived_children_leave_no_zombie_and_no_fd() {
    let _g = serial();
    let fds_before = open_fd_count();
    let lp = EventLoop::new().unwrap();
    let pids = run_bounded(&lp.handle(), async move {
        let lp = evloop::event_loop::get_running_loop().unwrap();
        let mut pids = Vec::with_capacity(1000);
        for i in 0..1000 {
            let mut p = lp.subprocess_exec("true", NO_ARGS).spawn().unwrap();
            pids.push(p.pid());
            let s = p.wait().await.unwrap();
            assert!(s.success(), "child {i}: {s}");
        }
        pids
    });
    assert_eq!(pids.len(), 1000);
    let left: Vec<u32> = my_children().into_iter().filter(|p| pids.contains(p)).collect();
    assert!(left.is_empty(), "unreaped children: {left:?}");
    assert_eq!(lp.stats().io_registrations, 0, "pidfd registrations left");
    drop(lp);
    assert_eq!(open_fd_count(), fds_before, "fds leaked");
}

#[test]
fn a_missing_program_is_an_error_naming_it_and_leaks_no_fd() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let fds_before = open_fd_count();
    let children_before = my_children();
    let e = lp
        .subprocess_exec("no-such-prog", ["--flag"])
        .piped()
        .spawn()
        .unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with("subprocess_exec(no-such-prog): No such file or directory"),
        "{msg}"
    );
    assert_eq!(evloop::io::os_error(&e), Some(evloop_syscalls::errno::ENOENT));
    assert_eq!(open_fd_count(), fds_before, "fds leaked");
    assert_eq!(my_children(), children_before, "a child was left behind");
    assert_eq!(lp.stats().io_registrations, 0);

    // Same through the shell: the shell starts, the command does not (exit 127).
    let mut p = lp
        .subprocess_shell("no-such-prog")
        .stdout(Stdio::Pipe)
        .stderr(Stdio::Pipe)
        .spawn()
        .unwrap();
    let out = run_bounded(&lp.handle(), async move { p.communicate(None).await }).unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-prog"));
    assert_eq!(open_fd_count(), fds_before, "fds leaked");
}

#[test]
fn send_signal_after_the_child_was_reaped_is_an_error() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let mut p = lp.subprocess_exec("true", NO_ARGS).spawn().unwrap();
    let pid = p.pid();
    let p = run_bounded(&lp.handle(), async move {
        p.wait().await.unwrap();
        p
    });
    assert!(p.returncode().is_some());
    for e in [
        p.send_signal(evloop::signal::Signal::TERM).unwrap_err(),
        p.terminate().unwrap_err(),
        p.kill().unwrap_err(),
    ] {
        assert_eq!(evloop::io::os_error(&e), Some(evloop_syscalls::errno::ESRCH), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("send_signal(pid {pid}")) && msg.contains("reaped"),
            "{msg}"
        );
    }
}

#[test]
fn a_dropped_process_is_reaped_by_the_loop_when_it_exits() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    // Long enough, under valgrind's slowdown, to be still running at the check below (there the
    // waiter thread, not the loop, reaps it as soon as it exits).
    let secs = if evloop_tests::under_valgrind() { "2" } else { "0.1" };
    let p = lp.subprocess_exec("sleep", [secs]).spawn().unwrap();
    let pid = p.pid();
    drop(p);
    assert!(my_children().contains(&pid), "still running, not reaped yet");
    // Under valgrind (no pidfd_open) the child's waiter thread reaps it: no registration.
    let orphan_registrations = if evloop_tests::under_valgrind() { 0 } else { 1 };
    assert_eq!(
        lp.stats().io_registrations,
        orphan_registrations,
        "the orphan registration"
    );
    let h = lp.handle();
    run_bounded(&h, async move {
        let deadline = Instant::now() + Duration::from_secs(10);
        while my_children().contains(&pid) {
            assert!(Instant::now() < deadline, "the loop never reaped the orphan");
            sleep(Duration::from_millis(10)).await;
        }
    });
    assert_eq!(lp.stats().io_registrations, 0, "the orphan registration is gone");

    // A child that already exited when its Process is dropped (the loop saw the exit) is
    // reaped at once.
    let p = lp.subprocess_exec("true", NO_ARGS).spawn().unwrap();
    let pid = p.pid();
    run_bounded(&h, async move {
        // `true` exits; the loop sees its pidfd become readable, and nobody reaps it yet.
        sleep(Duration::from_millis(100)).await;
        assert!(my_children().contains(&pid), "exited but not reaped: a zombie for now");
        drop(p);
        assert!(!my_children().contains(&pid), "not reaped at once when dropped");
    });
}

#[test]
fn closing_the_loop_hands_running_orphans_to_the_reaper_thread() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let long = lp.subprocess_exec("sleep", ["0.3"]).spawn().unwrap();
    let short = lp.subprocess_exec("sleep", ["0.1"]).spawn().unwrap();
    let done = lp.subprocess_exec("true", NO_ARGS).spawn().unwrap();
    let pids = [long.pid(), short.pid(), done.pid()];
    drop((long, short, done));
    // Let `true` exit, then close the loop without running it: it is reaped at close, the two
    // sleeps go to the reaper thread.
    std::thread::sleep(Duration::from_millis(50));
    lp.close().unwrap();
    assert!(!my_children().contains(&pids[2]), "an exited orphan is reaped at close");
    for pid in pids {
        wait_reaped(pid);
    }
    // A Process dropped after its loop closed goes the same way.
    let lp = EventLoop::new().unwrap();
    let p = lp.subprocess_exec("sleep", ["0.05"]).spawn().unwrap();
    let pid = p.pid();
    lp.close().unwrap();
    drop(p);
    wait_reaped(pid);
}

#[test]
fn waiting_makes_one_pidfd_open_and_exactly_one_waitid_after_the_exit() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    evloop_tests::spin_once(&h);
    counters::reset();
    // Taken before the spawn: the child's 0.2 s start at its exec, which may come before
    // `subprocess_exec` returns, so a clock read after it could see the exit "early".
    let started = Instant::now();
    let mut p = lp.subprocess_exec("sleep", ["0.2"]).spawn().unwrap();
    let at_spawn = counters::snapshot();
    assert_eq!(at_spawn.get(Syscall::PidfdOpen), 1, "{at_spawn}");
    assert_eq!(at_spawn.get(Syscall::Waitid), 0, "{at_spawn}");
    let (status, midway) = run_bounded(&h, async move {
        let lp = evloop::event_loop::get_running_loop().unwrap();
        let probe = lp
            .create_task(async {
                sleep(Duration::from_millis(100)).await;
                counters::snapshot()
            })
            .unwrap();
        let status = p.wait().await.unwrap();
        (status, probe.await.unwrap())
    });
    assert!(status.success());
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(midway.get(Syscall::Waitid), 0, "waitid while the child ran: {midway}");
    let total = counters::snapshot();
    assert_eq!(total.get(Syscall::Waitid), 1, "{total}");
    assert_eq!(total.get(Syscall::PidfdOpen), 1, "{total}");
    assert_eq!(total.get(Syscall::Kill), 0, "{total}");
}

#[test]
fn returncode_is_none_while_running_then_the_status() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let mut p = lp.subprocess_exec("sh", ["-c", "sleep 0.05; exit 4"]).spawn().unwrap();
    let h = lp.handle();
    run_bounded(&h, async move {
        assert_eq!(p.returncode(), None);
        counters::reset();
        while p.returncode().is_none() {
            sleep(Duration::from_millis(5)).await;
        }
        // Polled many times, reaped once.
        assert_eq!(counters::snapshot().get(Syscall::Waitid), 1);
        assert_eq!(p.returncode().and_then(|s| s.code()), Some(4));
        assert_eq!(p.wait().await.unwrap().code(), Some(4));
    });
}

#[test]
fn subprocess_shell_runs_a_pipeline() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let mut p = lp
        .subprocess_shell("echo hi | tr a-z A-Z")
        .stdout(Stdio::Pipe)
        .stderr(Stdio::Pipe)
        .spawn()
        .unwrap();
    let out = run_bounded(&lp.handle(), async move { p.communicate(None).await }).unwrap();
    assert_eq!(out.stdout, b"HI\n");
    assert!(out.status.success());
}

#[test]
fn environment_working_directory_and_devnull() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let mut p = lp
        .subprocess_exec("/bin/sh", ["-c", "echo \"$EVLOOP_FOO $HOME\"; pwd; cat; echo end"])
        .stdout(Stdio::Pipe)
        .stderr(Stdio::Pipe)
        .stdin(Stdio::Null)
        .env_clear()
        .env("EVLOOP_FOO", "bar")
        .current_dir("/")
        .spawn()
        .unwrap();
    let out = run_bounded(&lp.handle(), async move { p.communicate(None).await }).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "bar \n/\nend\n");
}

#[test]
fn spawning_on_a_closed_loop_is_an_error_naming_the_operation() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    lp.close().unwrap();
    let e = h.subprocess_exec("true", NO_ARGS).spawn().unwrap_err();
    assert!(e.to_string().contains("subprocess_exec"), "{e}");
    let e = h.subprocess_shell("true").spawn().unwrap_err();
    assert!(e.to_string().contains("subprocess_shell"), "{e}");
}

#[test]
fn a_child_starts_with_sigpipe_unblocked_and_at_its_default_while_the_loop_blocks_it() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    // A piped stdin makes the loop block SIGPIPE on this thread (see evloop::pipe).
    let mut p = lp
        .subprocess_exec("cat", ["/proc/self/status"])
        .piped()
        .spawn()
        .unwrap();
    let parent = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let out = run_bounded(&lp, async move { p.communicate(None).await }).unwrap();
    let child = String::from_utf8(out.stdout).unwrap();
    let mask = |status: &str, field: &str| -> u64 {
        let line = status
            .lines()
            .find(|l| l.starts_with(field))
            .unwrap_or_else(|| panic!("no {field}"));
        u64::from_str_radix(line[field.len()..].trim(), 16).unwrap()
    };
    const SIGPIPE_BIT: u64 = 1 << 12;
    assert_ne!(
        mask(&parent, "SigBlk:") & SIGPIPE_BIT,
        0,
        "the loop's thread blocks SIGPIPE"
    );
    assert_eq!(
        mask(&child, "SigBlk:") & SIGPIPE_BIT,
        0,
        "inherited the blocked SIGPIPE"
    );
    assert_eq!(
        mask(&child, "SigIgn:") & SIGPIPE_BIT,
        0,
        "inherited Rust's ignored SIGPIPE"
    );
}

/// A child inherits only the fds it was given (stdin/stdout/stderr): every fd of the loop, its
/// sockets and pipes is close-on-exec. The child lists its own fds (`ls /proc/self/fd` shows
/// 0, 1, 2 and the directory fd `ls` opened to read it).
#[test]
fn a_child_inherits_only_its_stdio_fds() {
    let _l = serial();
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let listing = run_bounded(&lp, async move {
        // Open some of the loop's fds in the parent: a listener, a pipe, a timer-driven task.
        let _listener = evloop::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (_r, _w) = evloop::pipe::pipe().unwrap();
        let mut p = h
            .subprocess_exec("ls", ["/proc/self/fd"])
            .stdout(Stdio::Pipe)
            .stderr(Stdio::Pipe)
            .spawn()
            .unwrap();
        let out = p.communicate(None).await.unwrap();
        assert!(out.status.success(), "{:?}", out.status);
        String::from_utf8(out.stdout).unwrap()
    });
    let fds: Vec<u32> = listing.split_whitespace().filter_map(|f| f.parse().ok()).collect();
    for fd in [0, 1, 2] {
        assert!(fds.contains(&fd), "stdio fd {fd} missing in the child: {fds:?}");
    }
    // Besides its stdio and the directory `ls` opens, the child may only have fds this test
    // process itself inherited without close-on-exec (cargo's jobserver pipe, for one): none of
    // evloop's (the listener, the pipe, the loop's epoll and eventfd) may cross exec.
    let inherited = inheritable_fds_of_this_process();
    let extra: Vec<u32> = fds
        .iter()
        .copied()
        .filter(|fd| *fd > 2 && !inherited.contains(fd))
        .collect();
    assert!(
        extra.len() <= 1,
        "the child got fds beyond its stdio: {extra:?} (all: {fds:?})"
    );
}

/// This process's fds without `O_CLOEXEC` (read from /proc/self/fdinfo's octal `flags`).
fn inheritable_fds_of_this_process() -> HashSet<u32> {
    let mut out = HashSet::new();
    for entry in std::fs::read_dir("/proc/self/fdinfo").unwrap().flatten() {
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(info) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
            .unwrap_or(0);
        if flags & 0o2000000 == 0 {
            out.insert(fd);
        }
    }
    out
}

/// Regression: a child spawned AFTER the loop took its SIGPIPE block (a pipe writer exists)
/// must still start with SIGPIPE unblocked (std's `Command` does not reset the mask; evloop's
/// spawn does).
#[test]
fn a_child_spawned_while_the_loop_blocks_sigpipe_starts_with_an_empty_mask() {
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let child = run_bounded(&lp, async move {
        let (_r, _w) = evloop::pipe::pipe().unwrap(); // the loop now blocks SIGPIPE here
        let mut p = h
            .subprocess_exec("cat", ["/proc/self/status"])
            .stdout(Stdio::Pipe)
            .stderr(Stdio::Pipe)
            .spawn()
            .unwrap();
        String::from_utf8(p.communicate(None).await.unwrap().stdout).unwrap()
    });
    let blocked = child
        .lines()
        .find_map(|l| l.strip_prefix("SigBlk:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .expect("SigBlk in the child's status");
    assert_eq!(blocked, 0, "the child inherited a signal mask: {blocked:#x}");
}

/// A pipe whose write end this process holds without close-on-exec, as a descriptor inherited
/// from a parent (or opened by a library without `O_CLOEXEC`) would be.
fn leaky_pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    let (r, w) = evloop_syscalls::pipe2().unwrap();
    evloop_syscalls::set_cloexec(std::os::fd::AsRawFd::as_raw_fd(&w), false).unwrap();
    (r, w)
}

/// Whether a child started as `configure` says has descriptor `fd` open.
fn child_has_fd(lp: &LoopHandle, fd: i32, configure: impl FnOnce(Subprocess) -> Subprocess + 'static) -> bool {
    let script = format!("[ -e /proc/self/fd/{fd} ] && echo kept || echo closed");
    let h = lp.clone();
    let out = run_bounded(lp, async move {
        let shell = h.subprocess_shell(&script).stdout(Stdio::Pipe);
        let mut child = configure(shell).await.unwrap();
        child.communicate(None).await.unwrap()
    });
    match out.stdout.as_slice() {
        b"kept\n" => true,
        b"closed\n" => false,
        other => panic!("unexpected probe output {:?}", String::from_utf8_lossy(other)),
    }
}

#[test]
fn a_child_gets_only_stdio_by_default_like_asyncios_close_fds() {
    use std::os::fd::AsRawFd;
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let (_r, w) = leaky_pipe();
    assert!(!child_has_fd(&lp.handle(), w.as_raw_fd(), |b| b));
    assert!(child_has_fd(&lp.handle(), w.as_raw_fd(), |b| b.close_fds(false)));
    // The parent's own descriptor is untouched: the hook runs in the child only.
    assert!(evloop_syscalls::fd_is_open(w.as_raw_fd()));
    lp.close().unwrap();
}

#[test]
fn a_reader_sees_end_of_file_while_a_child_runs_on() {
    // The symptom close_fds prevents: a long-running child holding a copy of a pipe's write end
    // keeps the reader from ever seeing end of file.
    use std::io::Read;
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let (r, w) = leaky_pipe();
    evloop_syscalls::set_nonblocking(std::os::fd::AsFd::as_fd(&r), false).unwrap();
    let mut child = run_bounded(&h, {
        let h = h.clone();
        async move { h.subprocess_exec("sleep", ["30"]).await.unwrap() }
    });
    drop(w);
    let mut rest = Vec::new();
    // Blocks until every write end is closed: at once, since the child has none (with a copy in
    // the child it would block until the child exits, and the kill below would find it gone).
    std::fs::File::from(r).read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
    child.kill().unwrap();
    let status = run_bounded(&h, async move { child.wait().await.unwrap() });
    assert!(!status.success());
    lp.close().unwrap();
}

#[test]
fn pass_fds_hands_the_child_a_close_on_exec_descriptor_under_its_number() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let _g = serial();
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    for close in [true, false] {
        let (r, w) = evloop_syscalls::pipe2().unwrap(); // close-on-exec
        let number = w.as_raw_fd();
        let (_r2, other) = leaky_pipe();
        let opts = move |b: Subprocess| b.close_fds(close).pass_fds([number]);
        assert!(child_has_fd(&h, w.as_raw_fd(), opts), "close_fds({close})");
        assert_eq!(child_has_fd(&h, other.as_raw_fd(), opts), !close, "close_fds({close})");
        let script = format!("printf 'fd %s' {0} >&{0}", w.as_raw_fd());
        let status = run_bounded(&h, {
            let h = h.clone();
            async move { opts(h.subprocess_shell(&script)).await.unwrap().wait().await.unwrap() }
        });
        assert!(status.success());
        drop(w);
        let mut got = String::new();
        evloop_syscalls::set_nonblocking(std::os::fd::AsFd::as_fd(&r), false).unwrap();
        std::fs::File::from(r).read_to_string(&mut got).unwrap();
        assert_eq!(got, format!("fd {number}"), "written through the passed descriptor");
    }
    lp.close().unwrap();
}
