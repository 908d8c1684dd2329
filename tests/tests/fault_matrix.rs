// Standalone binary: it counts the process's fds after every cell, and `make fault-matrix` runs it by name.
//! The fault matrix: every system call the runtime makes on a hot path, failed with every errno
//! its man page lists, under a representative workload; the result is `docs/fault-matrix.md`.
//!
//! For each cell (a system call, an errno, and which call fails: the first or the third after
//! the workload starts), a fresh loop runs the workload below with that call failing through the
//! syscall layer's fault injection (`evloop_syscalls::fault`, per thread: the workload's own
//! calls, nobody else's). Whatever the outcome, the same invariants must hold:
//! - **no panic**: nothing reaches the exception handler as a panic, no task dies of one;
//! - **it keeps serving, or fails with a clear error**: every phase either completes, or fails
//!   with an error whose message names the operation (`connect(127.0.0.1:..): ...`, `accept on
//!   ...`); the phases after a failed one still run and complete; a loop that stops says why
//!   (`poll (epoll_pwait2): ...`);
//! - **no fd leak**: once the loop is closed, the process has exactly the fds it had before;
//! - **no lost wake-up**: afterwards, a callback another thread schedules while the loop is
//!   blocked in its poll runs (within 5 s), and so does a timer;
//! - **no spin**: afterwards, the loop idles through 20 ms with at most 10 iterations and 10 ms
//!   of CPU.
//!
//! The workload, in one loop, one phase after the other, each bounded by 2 s:
//! 1. **connections**: a protocol echo server (`create_server`) and four clients on loopback:
//!    three stream clients (`open_connection`, `write` + `drain` + `readline`, three lines each)
//!    and one `TcpStream` writing with `write_vectored` (sendmsg);
//! 2. **datagrams**: two UDP sockets, `sock_sendto` and `sock_recvfrom` both ways;
//! 3. **pipe**: `evloop::pipe::pipe()` (pipe2), a `write_all` and a `write_vectored` (writev)
//!    read back;
//! 4. **subprocess**: `cat` fed and drained by `communicate` (pidfd_open, pipes, waitid), and a
//!    `sleep 5` stopped with `kill` (pidfd_send_signal) and waited for;
//! 5. **timers**: `call_later` and `sleep`, which must not fire early;
//! 6. **remote wake**: a thread schedules a callback while the loop sleeps in its poll (its
//!    eventfd write on that thread, the eventfd read on the loop's).
//!
//! `make fault-matrix` regenerates the table (`EVLOOP_FAULT_MATRIX=update`); `make test` runs the
//! same matrix and fails if the table in `docs/` differs from what it finds, so the document
//! cannot go stale.
#![cfg(feature = "fault-injection")]

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use evloop::net::{Domain, SockAddr, SockType, Socket, TcpStream};
use evloop::process::Stdio;
use evloop::{
    event_loop::{EventLoop, ExceptionKind, LoopHandle},
    io::{AsyncReadExt, AsyncWriteExt, os_error},
    time::{sleep, timeout},
};
use evloop_syscalls::{Syscall, errno, fault};
use evloop_tests::fds::open_fds;
use evloop_tests::net::Echo;
use evloop_tests::workspace_root;

/// Each phase's bound: a phase that takes longer counts as stalled.
const PHASE: Duration = Duration::from_secs(2);
/// The idle time of the no-spin check (which allows half of it as CPU time, and 10 iterations).
const IDLE: Duration = Duration::from_millis(20);

// ---------------------------------------------------------------------------------------------
// The matrix: which calls, which errnos.

/// Where a row's injection is registered: on the loop's thread when the workload starts, or
/// just before one phase (so that its failure lands on that phase's calls), or on the thread
/// of the remote-wake phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Workload,
    RemoteWakeLoopThread,
    RemoteWakeOtherThread,
}

struct Row {
    /// The name in the table.
    name: &'static str,
    syscall: Syscall,
    target: Target,
    /// The errnos its man page lists (EWOULDBLOCK is EAGAIN).
    errnos: &'static [i32],
    /// Errnos that cannot come from this call in the situations the runtime makes it, with why.
    not_applicable: &'static [(i32, &'static str)],
    /// Run the workload with the `epoll_wait` fallback forced.
    fallback: bool,
    /// Run each cell in a child process: its fault changes process-wide state.
    isolated: bool,
}

const EAGAIN_WITH_DATA: &str = "n/a: the runtime makes this call after epoll reported the fd ready; an `EAGAIN` then only means the readiness was stale (data taken by someone else), and the runtime waits for the next edge. Injected with data still queued, it would wait for an edge that never comes, which no kernel does";

const EAGAIN_WITH_ROOM: &str = "n/a: `EAGAIN` from a write means the kernel's buffer is full, and its draining raises the edge the writer waits for. Injected with the buffer empty, no edge would ever come, which no kernel does";

fn rows() -> Vec<Row> {
    use errno::*;
    let recv_errnos: &[i32] = &[
        EAGAIN,
        EBADF,
        ECONNREFUSED,
        ECONNRESET,
        EFAULT,
        EINTR,
        EINVAL,
        ENOMEM,
        ENOTCONN,
        ENOTSOCK,
    ];
    let send_errnos: &[i32] = &[
        EAGAIN,
        EBADF,
        ECONNRESET,
        libc::EDESTADDRREQ,
        EFAULT,
        EINTR,
        EINVAL,
        EISCONN,
        EMSGSIZE,
        ENOBUFS,
        ENOMEM,
        ENOTCONN,
        ENOTSOCK,
        EOPNOTSUPP,
        EPIPE,
    ];
    let write_errnos: &[i32] = &[
        EAGAIN,
        EBADF,
        libc::EDESTADDRREQ,
        libc::EDQUOT,
        EFAULT,
        libc::EFBIG,
        EINTR,
        EINVAL,
        EIO,
        libc::ENOSPC,
        EPERM,
        EPIPE,
    ];
    let data_na: &[(i32, &str)] = &[(EAGAIN, EAGAIN_WITH_DATA)];
    let room_na: &[(i32, &str)] = &[(EAGAIN, EAGAIN_WITH_ROOM)];
    vec![
        Row {
            name: "epoll_pwait2",
            syscall: Syscall::EpollPwait2,
            target: Target::Workload,
            errnos: &[EBADF, EFAULT, EINTR, EINVAL],
            not_applicable: &[],
            fallback: false,
            isolated: false,
        },
        Row {
            name: "epoll_wait (fallback)",
            syscall: Syscall::EpollWait,
            target: Target::Workload,
            errnos: &[EBADF, EFAULT, EINTR, EINVAL],
            not_applicable: &[],
            fallback: true,
            isolated: false,
        },
        Row {
            name: "epoll_ctl",
            syscall: Syscall::EpollCtl,
            target: Target::Workload,
            errnos: &[EBADF, EEXIST, EINVAL, libc::ELOOP, ENOENT, ENOMEM, libc::ENOSPC, EPERM],
            not_applicable: &[],
            fallback: false,
            isolated: false,
        },
        Row {
            name: "accept4",
            syscall: Syscall::Accept4,
            target: Target::Workload,
            errnos: &[
                EAGAIN,
                EBADF,
                ECONNABORTED,
                EFAULT,
                EINTR,
                EINVAL,
                EMFILE,
                ENFILE,
                ENOBUFS,
                ENOMEM,
                ENOTSOCK,
                EOPNOTSUPP,
                EPERM,
                EPROTO,
            ],
            not_applicable: &[(
                EAGAIN,
                "n/a: accept4 after a readable edge; `EAGAIN` is the normal end of every accept batch, exercised by every test",
            )],
            fallback: false,
            isolated: false,
        },
        Row {
            name: "connect",
            syscall: Syscall::Connect,
            target: Target::Workload,
            errnos: &[
                EACCES,
                EPERM,
                EADDRINUSE,
                EADDRNOTAVAIL,
                EAFNOSUPPORT,
                EAGAIN,
                EALREADY,
                EBADF,
                ECONNREFUSED,
                EFAULT,
                EINPROGRESS,
                EINTR,
                EISCONN,
                ENETUNREACH,
                ENOTSOCK,
                libc::EPROTOTYPE,
                ETIMEDOUT,
            ],
            not_applicable: &[(
                EINPROGRESS,
                "n/a: `EINPROGRESS` is how every non-blocking TCP connect starts; injected, no connection attempt exists to wait for",
            )],
            fallback: false,
            isolated: false,
        },
        Row {
            name: "recv",
            syscall: Syscall::Recv,
            target: Target::Workload,
            errnos: recv_errnos,
            not_applicable: data_na,
            fallback: false,
            isolated: false,
        },
        Row {
            name: "recvfrom",
            syscall: Syscall::Recvfrom,
            target: Target::Workload,
            errnos: recv_errnos,
            not_applicable: data_na,
            fallback: false,
            isolated: false,
        },
        Row {
            name: "read (pipes)",
            syscall: Syscall::Read,
            target: Target::Workload,
            errnos: &[EAGAIN, EBADF, EFAULT, EINTR, EINVAL, EIO, libc::EISDIR],
            not_applicable: data_na,
            fallback: false,
            isolated: false,
        },
        Row {
            name: "send",
            syscall: Syscall::Send,
            target: Target::Workload,
            errnos: send_errnos,
            not_applicable: room_na,
            fallback: false,
            isolated: false,
        },
        Row {
            name: "sendmsg",
            syscall: Syscall::Sendmsg,
            target: Target::Workload,
            errnos: send_errnos,
            not_applicable: room_na,
            fallback: false,
            isolated: false,
        },
        Row {
            name: "sendto",
            syscall: Syscall::Sendto,
            target: Target::Workload,
            errnos: send_errnos,
            not_applicable: room_na,
            fallback: false,
            isolated: false,
        },
        Row {
            name: "write (pipes)",
            syscall: Syscall::Write,
            target: Target::Workload,
            errnos: write_errnos,
            not_applicable: room_na,
            fallback: false,
            isolated: false,
        },
        Row {
            name: "writev (pipes)",
            syscall: Syscall::Writev,
            target: Target::Workload,
            errnos: write_errnos,
            not_applicable: room_na,
            fallback: false,
            isolated: false,
        },
        Row {
            name: "eventfd read (wake-up)",
            syscall: Syscall::Read,
            target: Target::RemoteWakeLoopThread,
            errnos: &[EAGAIN, EBADF, EFAULT, EINTR, EINVAL],
            not_applicable: &[],
            fallback: false,
            isolated: false,
        },
        Row {
            name: "eventfd write (wake-up)",
            syscall: Syscall::Write,
            target: Target::RemoteWakeOtherThread,
            errnos: &[EAGAIN, EBADF, EFAULT, EINTR, EINVAL],
            not_applicable: &[(
                EAGAIN,
                "n/a: an eventfd write fails with `EAGAIN` only when its counter is at its maximum, which leaves it readable: the loop wakes all the same (and the runtime takes `EAGAIN` so)",
            )],
            fallback: false,
            isolated: false,
        },
        Row {
            name: "pidfd_open",
            syscall: Syscall::PidfdOpen,
            target: Target::Workload,
            // ENOSYS (no pidfds: an old kernel, valgrind) and EPERM (a seccomp filter) select
            // the waiter-thread watcher: the child is served all the same.
            errnos: &[
                EINVAL,
                EMFILE,
                ENFILE,
                libc::ENODEV,
                ENOMEM,
                libc::ENOSYS,
                libc::EPERM,
                ESRCH,
            ],
            not_applicable: &[],
            fallback: false,
            isolated: false,
        },
        Row {
            name: "waitid",
            syscall: Syscall::Waitid,
            target: Target::Workload,
            errnos: &[ECHILD, EINTR, EINVAL],
            not_applicable: &[],
            fallback: false,
            isolated: false,
        },
        Row {
            name: "pidfd_send_signal",
            syscall: Syscall::PidfdSendSignal,
            target: Target::Workload,
            errnos: &[EBADF, EINVAL, EPERM, ESRCH],
            not_applicable: &[],
            fallback: false,
            isolated: false,
        },
        Row {
            name: "pipe2",
            syscall: Syscall::Pipe2,
            target: Target::Workload,
            errnos: &[EFAULT, EINVAL, EMFILE, ENFILE, libc::ENOPKG],
            not_applicable: &[],
            fallback: false,
            isolated: false,
        },
        Row {
            name: "close",
            syscall: Syscall::Close,
            target: Target::Workload,
            errnos: &[EBADF, EINTR, EIO, libc::ENOSPC, libc::EDQUOT],
            not_applicable: &[],
            fallback: false,
            isolated: false,
        },
        // An ENOSYS or EPERM from epoll_pwait2 makes the process fall back to epoll_wait for
        // good (a seccomp filter may be installed at any time): each such cell runs in a child
        // process of its own.
        Row {
            name: "epoll_pwait2 (unavailable)",
            syscall: Syscall::EpollPwait2,
            target: Target::Workload,
            errnos: &[ENOSYS, EPERM],
            not_applicable: &[],
            fallback: false,
            isolated: true,
        },
    ]
}

/// Which of the calls fails, counted from the injection.
const NTH: [u64; 2] = [1, 3];

fn errno_name(e: i32) -> &'static str {
    use errno::*;
    match e {
        x if x == EACCES => "EACCES",
        x if x == EADDRINUSE => "EADDRINUSE",
        x if x == EADDRNOTAVAIL => "EADDRNOTAVAIL",
        x if x == EAFNOSUPPORT => "EAFNOSUPPORT",
        x if x == EAGAIN => "EAGAIN",
        x if x == EALREADY => "EALREADY",
        x if x == EBADF => "EBADF",
        x if x == ECHILD => "ECHILD",
        x if x == ECONNABORTED => "ECONNABORTED",
        x if x == ECONNREFUSED => "ECONNREFUSED",
        x if x == ECONNRESET => "ECONNRESET",
        x if x == libc::EDESTADDRREQ => "EDESTADDRREQ",
        x if x == libc::EDQUOT => "EDQUOT",
        x if x == EEXIST => "EEXIST",
        x if x == EFAULT => "EFAULT",
        x if x == libc::EFBIG => "EFBIG",
        x if x == EINPROGRESS => "EINPROGRESS",
        x if x == EINTR => "EINTR",
        x if x == EINVAL => "EINVAL",
        x if x == EIO => "EIO",
        x if x == EISCONN => "EISCONN",
        x if x == libc::EISDIR => "EISDIR",
        x if x == libc::ELOOP => "ELOOP",
        x if x == EMFILE => "EMFILE",
        x if x == EMSGSIZE => "EMSGSIZE",
        x if x == ENETUNREACH => "ENETUNREACH",
        x if x == ENFILE => "ENFILE",
        x if x == ENOBUFS => "ENOBUFS",
        x if x == libc::ENODEV => "ENODEV",
        x if x == ENOENT => "ENOENT",
        x if x == ENOMEM => "ENOMEM",
        x if x == libc::ENOPKG => "ENOPKG",
        x if x == libc::ENOSPC => "ENOSPC",
        x if x == ENOSYS => "ENOSYS",
        x if x == ENOTCONN => "ENOTCONN",
        x if x == ENOTSOCK => "ENOTSOCK",
        x if x == EOPNOTSUPP => "EOPNOTSUPP",
        x if x == EPERM => "EPERM",
        x if x == EPIPE => "EPIPE",
        x if x == EPROTO => "EPROTO",
        x if x == libc::EPROTOTYPE => "EPROTOTYPE",
        x if x == ESRCH => "ESRCH",
        x if x == ETIMEDOUT => "ETIMEDOUT",
        _ => "E?",
    }
}

// ---------------------------------------------------------------------------------------------
// The workload.

/// What one phase did.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Ok,
    /// Failed with errors (one message per failed part).
    Failed(Vec<String>),
    /// Did not finish within its bound.
    Stalled,
}

/// How the workload went, phase by phase.
#[derive(Debug, Default)]
struct Observed {
    phases: Vec<(&'static str, Phase)>,
    /// The loop's own run failed (a poll error).
    loop_error: Option<String>,
    /// What the exception handler received.
    reports: Vec<(ExceptionKind, String)>,
    /// The injected failure never fired: the workload made fewer calls of that kind.
    not_reached: bool,
}

async fn bounded<T>(fut: impl std::future::Future<Output = T>) -> Option<T> {
    timeout(PHASE, fut).await.ok()
}

/// One phase's result from its parts' (`part` names each, as the table shows it).
fn phase_of(results: Vec<(&str, io::Result<()>)>) -> Phase {
    let errors: Vec<String> = results
        .into_iter()
        .filter_map(|(part, r)| r.err().map(|e| format!("{part}|{}", describe(&e))))
        .collect();
    if errors.is_empty() {
        Phase::Ok
    } else {
        Phase::Failed(errors)
    }
}

/// An error as the table shows it: clear (its message names the operation: there is text before
/// the OS error's own) or not.
fn describe(e: &io::Error) -> String {
    let msg = e.to_string();
    let clear = match os_error(e) {
        Some(code) => {
            let os = io::Error::from_raw_os_error(code).to_string();
            let os = os.split(" (os error").next().unwrap_or(&os).to_string();
            msg.find(&os).is_some_and(|i| i > 0)
        }
        None => !msg.is_empty(),
    };
    if clear {
        format!("ok: {msg}")
    } else {
        format!("UNCLEAR: {msg}")
    }
}

async fn connections(lp: LoopHandle) -> Phase {
    let server = match lp.create_server(Echo::new, "127.0.0.1", 0).await {
        Ok(s) => s,
        Err(e) => return Phase::Failed(vec![format!("the server|{}", describe(&e))]),
    };
    server
        .set_accept_retry_delay(Duration::from_millis(20))
        .expect("in range");
    let port = server.local_addr().port();
    let mut clients = Vec::new();
    for i in 0..3 {
        clients.push(evloop::spawn(async move {
            let (r, w) = evloop::streams::open_connection("127.0.0.1", port).await?;
            for j in 0..3 {
                w.write(format!("client {i} line {j}\n").as_bytes());
                w.drain().await?;
                let line = r.readline().await.map_err(io::Error::from)?;
                if line != format!("client {i} line {j}\n").as_bytes() {
                    return Err(io::Error::other(format!("client {i}: a wrong echo")));
                }
            }
            w.close();
            w.wait_closed().await
        }));
    }
    let addr: SocketAddr = SocketAddr::from(([127, 0, 0, 1], port));
    clients.push(evloop::spawn(async move {
        let mut s = TcpStream::connect(addr).await?;
        s.write_vectored(&[IoSlice::new(b"vec"), IoSlice::new(b"tored\n")])
            .await?;
        let mut back = [0u8; 9];
        s.read_exact(&mut back).await?;
        if &back != b"vectored\n" {
            return Err(io::Error::other("vectored client: a wrong echo"));
        }
        Ok(())
    }));
    let mut results = Vec::new();
    for c in clients {
        results.push((
            "client",
            match c.await {
                Ok(r) => r,
                Err(e) => Err(io::Error::other(format!("a client task: {e}"))),
            },
        ));
    }
    server.close();
    phase_of(results)
}

async fn datagrams() -> Phase {
    let lp = match evloop::event_loop::get_running_loop() {
        Ok(lp) => lp,
        Err(e) => return Phase::Failed(vec![e.to_string()]),
    };
    let r: io::Result<()> = async {
        let a = Socket::new(Domain::Inet, SockType::Datagram)?;
        a.bind(&SockAddr::Inet("127.0.0.1:0".parse().unwrap()))?;
        let b = Socket::new(Domain::Inet, SockType::Datagram)?;
        b.bind(&SockAddr::Inet("127.0.0.1:0".parse().unwrap()))?;
        let (aa, ba) = (a.local_addr()?, b.local_addr()?);
        for _ in 0..2 {
            lp.sock_sendto(&a, b"ping", &ba).await?;
            let (got, from) = lp.sock_recvfrom(&b, 64).await?;
            if got != b"ping" || from != aa {
                return Err(io::Error::other("datagrams: a wrong datagram"));
            }
            lp.sock_sendto(&b, b"pong", &aa).await?;
            let (got, _) = lp.sock_recvfrom(&a, 64).await?;
            if got != b"pong" {
                return Err(io::Error::other("datagrams: a wrong datagram"));
            }
        }
        Ok(())
    }
    .await;
    phase_of(vec![("datagrams", r)])
}

async fn pipe() -> Phase {
    let r: io::Result<()> = async {
        let (mut rd, mut wr) = evloop::pipe::pipe()?;
        wr.write_all(b"through ").await?;
        wr.write_vectored(&[IoSlice::new(b"the "), IoSlice::new(b"pipe")])
            .await?;
        drop(wr);
        let mut got = Vec::new();
        rd.read_to_end(&mut got).await?;
        if got != b"through the pipe" {
            return Err(io::Error::other(format!(
                "pipe: read back {:?}",
                String::from_utf8_lossy(&got)
            )));
        }
        Ok(())
    }
    .await;
    phase_of(vec![("pipe", r)])
}

async fn subprocess(lp: LoopHandle) -> Phase {
    let cat: io::Result<()> = async {
        let mut child = lp
            .subprocess_exec("cat", Vec::<&str>::new())
            .piped()
            .stderr(Stdio::Null)
            .await?;
        let out = child.communicate(Some(b"hello cat".to_vec())).await?;
        if out.stdout != b"hello cat" || !out.status.success() {
            return Err(io::Error::other(format!("cat: {:?}, {}", out.stdout, out.status)));
        }
        Ok(())
    }
    .await;
    let sleeper: io::Result<()> = async {
        let mut child = lp
            .subprocess_exec("sleep", ["5"])
            .stdin(Stdio::Null)
            .stdout(Stdio::Null)
            .await?;
        let killed = child.kill();
        if killed.is_err() {
            // Stop it anyway (the fault was injected once), so the phase ends.
            let _ = child.kill();
        }
        let status = child.wait().await;
        killed?;
        let status = status?;
        if status.signal() != Some(9) {
            return Err(io::Error::other(format!("sleep: {status}")));
        }
        Ok(())
    }
    .await;
    phase_of(vec![("cat", cat), ("sleep", sleeper)])
}

async fn timers(lp: LoopHandle) -> Phase {
    let start = lp.time();
    let fired = Rc::new(RefCell::new(None));
    let f = fired.clone();
    let h = lp.clone();
    let _t = lp.call_later(Duration::from_millis(3), move || *f.borrow_mut() = Some(h.time()));
    sleep(Duration::from_millis(5)).await;
    let slept = lp.time() - start;
    let at = *fired.borrow();
    let mut errors = Vec::new();
    if slept < Duration::from_millis(5) {
        errors.push(format!("timers|UNCLEAR: sleep(5 ms) returned early, after {slept:?}"));
    }
    match at {
        Some(t) if t - start < Duration::from_millis(3) => {
            errors.push("timers|UNCLEAR: call_later(3 ms) ran early".into())
        }
        Some(_) => {}
        None => errors.push("timers|UNCLEAR: call_later(3 ms) did not run within 5 ms".into()),
    }
    if errors.is_empty() {
        Phase::Ok
    } else {
        Phase::Failed(errors)
    }
}

/// Another thread schedules a callback while the loop is blocked in its poll.
async fn remote_wake(lp: LoopHandle, inject: Option<(Syscall, u64, i32)>) -> Phase {
    let (tx, rx) = mpsc::channel::<()>();
    let remote = lp.remote();
    let (done_tx, mut done) = evloop::sync::threadsafe::channel::<()>();
    let (back_tx, back_rx) = mpsc::channel::<(Result<(), String>, bool)>();
    let thread = std::thread::spawn(move || {
        if let Some((s, n, e)) = inject {
            fault::fail_nth(s, n, e);
        }
        // Wait until the loop is (about to be) blocked, then wake it.
        let _ = rx.recv();
        std::thread::sleep(Duration::from_millis(10));
        let r = remote
            .call_soon_threadsafe(move || {
                let _ = done_tx.send(());
            })
            .map_err(|e| e.to_string());
        let fired = fault::pending() == 0;
        fault::clear();
        let _ = back_tx.send((r, fired));
    });
    let _ = tx.send(());
    let woke = bounded(done.recv()).await.flatten().is_some();
    let _ = thread.join();
    let (result, fired) = back_rx.try_recv().unwrap_or((Ok(()), true));
    if inject.is_some() && !fired {
        REMOTE_NOT_REACHED.with(|r| r.set(true));
    }
    match result {
        Err(e) => Phase::Failed(vec![format!("remote wake|ok: {e}")]),
        Ok(()) if woke => Phase::Ok,
        Ok(()) => Phase::Stalled,
    }
}

thread_local! {
    /// The remote-wake thread's injection never fired (set by `remote_wake`).
    static REMOTE_NOT_REACHED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs the whole workload on a fresh loop with the cell's fault; returns what happened and
/// checks the invariants.
fn run_cell(row: &Row, errno: i32, nth: u64) -> Result<String, String> {
    let fds_before = open_fds();
    let lp = EventLoop::new().map_err(|e| format!("EventLoop::new: {e}"))?;
    let reports = Rc::new(RefCell::new(Vec::new()));
    let r = reports.clone();
    lp.set_exception_handler(Some(Box::new(move |_, ctx| {
        r.borrow_mut().push((ctx.kind, ctx.message.clone()));
    })));
    let h = lp.handle();
    evloop_syscalls::force_epoll_wait_fallback(row.fallback);
    let (syscall, target) = (row.syscall, row.target);
    let workload = async move {
        if target == Target::Workload {
            fault::fail_nth(syscall, nth, errno);
        }
        let mut phases = Vec::new();
        phases.push((
            "connections",
            bounded(connections(h.clone())).await.unwrap_or(Phase::Stalled),
        ));
        phases.push(("datagrams", bounded(datagrams()).await.unwrap_or(Phase::Stalled)));
        phases.push(("pipe", bounded(pipe()).await.unwrap_or(Phase::Stalled)));
        phases.push((
            "subprocess",
            bounded(subprocess(h.clone())).await.unwrap_or(Phase::Stalled),
        ));
        phases.push(("timers", bounded(timers(h.clone())).await.unwrap_or(Phase::Stalled)));
        let (on_loop, on_other) = match target {
            Target::RemoteWakeLoopThread => (Some((syscall, nth, errno)), None),
            Target::RemoteWakeOtherThread => (None, Some((syscall, nth, errno))),
            Target::Workload => (None, None),
        };
        if let Some((s, n, e)) = on_loop {
            fault::fail_nth(s, n, e);
        }
        phases.push(("remote wake", remote_wake(h.clone(), on_other).await));
        let not_reached = fault::pending() > 0;
        fault::clear();
        (phases, not_reached)
    };
    let mut observed = Observed::default();
    REMOTE_NOT_REACHED.with(|r| r.set(false));
    let task = lp.create_task(workload).map_err(|e| format!("create_task: {e}"))?;
    let workload_task = task.task_ref();
    match lp.run_until_complete(task) {
        Ok(Ok((phases, not_reached))) => {
            observed.phases = phases;
            observed.not_reached = not_reached || REMOTE_NOT_REACHED.with(|r| r.get());
        }
        Ok(Err(e)) => observed.loop_error = Some(format!("the workload failed: {e}")),
        Err(e) => observed.loop_error = Some(e.to_string()),
    }
    if observed.loop_error.is_some() {
        // A loop that stopped left the workload, and the tasks it started, where they were:
        // drop them and let the loop run what that schedules (closes), so that the checks
        // below see an idle loop. (A workload that completed has nothing left to drop.)
        workload_task.abort();
        for t in lp.handle().all_tasks() {
            t.abort();
        }
        for _ in 0..100 {
            if lp.stats().ready == 0 || lp.run_once().is_err() {
                break;
            }
        }
    }
    fault::clear();
    evloop_syscalls::force_epoll_wait_fallback(false);
    observed.reports = std::mem::take(&mut *reports.borrow_mut());

    // Invariants, after the fault.
    let mut broken = Vec::new();
    for (kind, msg) in &observed.reports {
        if *kind != ExceptionKind::ServerError {
            broken.push(format!("a panic reached the exception handler: {msg}"));
        }
    }
    if let Err(e) = after_checks(&lp) {
        broken.push(e);
    }
    lp.close().map_err(|e| format!("close: {e}"))?;
    drop(lp);
    // The reaper thread may still be reaping a child killed by a failed phase.
    let mut fds_after = open_fds();
    for _ in 0..200 {
        if fds_after.len() <= fds_before.len() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
        fds_after = open_fds();
    }
    if fds_after.len() != fds_before.len() {
        let before: BTreeSet<_> = fds_before.iter().collect();
        let leaked: Vec<_> = fds_after.iter().filter(|f| !before.contains(f)).collect();
        broken.push(format!(
            "fds leaked: {leaked:?} (now {} open, {} before)",
            fds_after.len(),
            fds_before.len()
        ));
    }
    let outcome = summarize(&observed);
    if outcome.contains("UNCLEAR") || outcome.contains("stalled") {
        broken.push(format!("the outcome: {outcome}"));
    }
    if broken.is_empty() {
        Ok(outcome)
    } else {
        Err(broken.join("; "))
    }
}

/// After the workload: a remote wake reaches a blocked loop, a timer fires, and an idle loop
/// neither spins nor burns CPU.
fn after_checks(lp: &EventLoop) -> Result<(), String> {
    if lp.is_closed() {
        return Ok(());
    }
    // No lost wake-up: another thread schedules a callback while the loop blocks.
    let remote = lp.remote();
    let ran = Rc::new(RefCell::new(false));
    let (tx, rx) = mpsc::channel::<()>();
    let waker = std::thread::spawn(move || {
        let _ = rx.recv();
        std::thread::sleep(Duration::from_millis(5));
        let _ = remote.call_soon_threadsafe(|| {});
        let _ = remote.stop();
    });
    let dog = evloop_tests::watchdog::Watchdog::start(lp.remote(), Duration::from_secs(5));
    let r = ran.clone();
    let _ = lp.call_soon(move || {
        *r.borrow_mut() = true;
        let _ = tx.send(());
    });
    let run = lp.run_forever();
    let _ = waker.join();
    if dog.finish() {
        return Err("lost wake-up: a remote call_soon_threadsafe did not wake the blocked loop within 5 s".into());
    }
    run.map_err(|e| format!("run_forever after the fault: {e}"))?;
    // No spin, and timers still fire: 20 ms of idling.
    let it0 = lp.stats().iterations;
    let cpu0 = evloop_tests::thread_cpu_time();
    let started = Instant::now();
    lp.run_until_complete(sleep(IDLE))
        .map_err(|e| format!("a {IDLE:?} sleep after the fault: {e}"))?;
    let cpu = evloop_tests::thread_cpu_time() - cpu0;
    let iterations = lp.stats().iterations - it0;
    if started.elapsed() < IDLE {
        return Err(format!("a {IDLE:?} sleep ended early"));
    }
    // Under valgrind every instruction costs tens of times more CPU: only the iterations tell.
    let cpu_bound = if evloop_tests::under_valgrind() {
        IDLE * 50
    } else {
        IDLE / 2
    };
    if iterations > 10 || cpu > cpu_bound {
        return Err(format!(
            "spin: {iterations} iterations and {cpu:?} of CPU in {IDLE:?} idle"
        ));
    }
    Ok(())
}

/// The table cell for one run (deterministic: no ports, pids or timings).
fn summarize(o: &Observed) -> String {
    if let Some(e) = &o.loop_error {
        let op = e.split(':').next().unwrap_or(e);
        return format!("loop stops with an error naming the call (`{op}`)");
    }
    if o.not_reached {
        return "not reached: the workload makes fewer such calls".to_string();
    }
    let mut failed = Vec::new();
    for (name, phase) in &o.phases {
        match phase {
            Phase::Ok => {}
            Phase::Stalled => failed.push(format!("{name} stalled")),
            Phase::Failed(errors) => {
                let unclear: Vec<&String> = errors.iter().filter(|e| e.contains("|UNCLEAR")).collect();
                let parts: Vec<&str> = errors.iter().map(|e| e.split('|').next().unwrap_or("?")).collect();
                let clients = parts.iter().filter(|p| **p == "client").count();
                let mut what: Vec<String> = parts
                    .iter()
                    .filter(|p| **p != "client")
                    .map(|p| match *p {
                        "the server" => "the server fails to start".to_string(),
                        "cat" => "the `cat` child fails".to_string(),
                        "sleep" => "stopping the `sleep` child fails".to_string(),
                        other => format!("{other} fails"),
                    })
                    .collect();
                if clients > 0 {
                    what.push(format!(
                        "{clients} of 4 clients fail{}",
                        if clients == 1 { "s" } else { "" }
                    ));
                }
                let what = what.join(", ");
                failed.push(if unclear.is_empty() {
                    what
                } else {
                    let list: Vec<&str> = unclear.iter().map(|s| s.as_str()).collect();
                    format!("{what} (UNCLEAR error: {})", list.join(" / "))
                });
            }
        }
    }
    let reported = !o.reports.is_empty();
    match (failed.is_empty(), reported) {
        (true, false) => "served".to_string(),
        (true, true) => "served; reported".to_string(),
        (false, r) => format!(
            "{} with a clear error{}; the rest served",
            failed.join(", "),
            if r { "; reported" } else { "" }
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// The table.

fn generate() -> (String, Vec<String>) {
    let mut out = String::new();
    let mut problems = Vec::new();
    out.push_str(HEADER);
    let mut last = "";
    for row in rows() {
        if row.name != last {
            let _ = writeln!(out, "\n### `{}`\n", row.name);
            out.push_str("| errno | 1st call fails | 3rd call fails |\n|---|---|---|\n");
            last = row.name;
        }
        for &e in row.errnos {
            if let Some((_, why)) = row.not_applicable.iter().find(|(n, _)| *n == e) {
                let _ = writeln!(out, "| `{}` | {why} | |", errno_name(e));
                continue;
            }
            let mut cells = Vec::new();
            for nth in NTH {
                let started = Instant::now();
                let result = if row.isolated {
                    run_cell_in_child(row.name, e, nth)
                } else {
                    run_cell(&row, e, nth)
                };
                if std::env::var_os("EVLOOP_FAULT_MATRIX_VERBOSE").is_some() {
                    eprintln!(
                        "{} {} call {nth}: {:?} in {:?}",
                        row.name,
                        errno_name(e),
                        result,
                        started.elapsed()
                    );
                }
                match result {
                    Ok(outcome) => cells.push(outcome),
                    Err(problem) => {
                        problems.push(format!("{} {} (call {nth}): {problem}", row.name, errno_name(e)));
                        cells.push(format!("BROKEN: {problem}"));
                    }
                }
            }
            let _ = writeln!(out, "| `{}` | {} | {} |", errno_name(e), cells[0], cells[1]);
        }
    }
    (out, problems)
}

const HEADER: &str = "# The fault matrix

Every system call evloop makes on a hot path, failed with every errno its man page lists,
while a representative workload runs: which errors the loop absorbs, which it reports, which
reach the caller, and proof that none of them panics, leaks an fd, loses a wake-up or makes the
loop spin.

**Generated** by `make fault-matrix` (`tests/tests/fault_matrix.rs`, with
`EVLOOP_FAULT_MATRIX=update`); `make test` runs the same matrix and fails when this file
differs from what it finds. Do not edit it by hand.

**How.** For each cell a fresh loop runs the workload with one call failing: the first, or the
third, call of that system call made by the workload's thread after it starts (the syscall
layer's fault injection, `evloop_syscalls::fault`, fails it with the errno without entering the
kernel, through the same path a real failure takes). The workload: a protocol echo server with
four clients (three stream clients writing, draining and reading lines, one `TcpStream` writing
with `sendmsg`), UDP datagrams both ways, a pipe written with `write` and `writev`, two children
(`cat` through `communicate`, `sleep` stopped with `kill`), timers, and a callback scheduled by
another thread while the loop sleeps. The eventfd rows fail the wake-up eventfd's read on the
loop's thread, or its write on the other thread.

**Checked in every cell**, whatever the outcome: no panic reaches the exception handler; every
phase completes or fails with an error that names its operation, and the phases after a failure
still complete; afterwards a callback another thread schedules wakes the blocked loop, a timer
fires, and 20 ms of idling take at most 10 iterations and 10 ms of CPU; once the loop is closed
the process has exactly the fds it had before.

**Reading a cell.** *served*: every phase completed (the error was retried, or absorbed where
it cannot matter, as for `close`, which has released the fd whatever it says). *reported*: the
loop's exception handler was told (a server that could not accept). *1 of 4 clients fails*,
*pipe fails*, ...: those operations returned the error to their caller, naming the operation,
and everything else was served. *not reached*: the workload makes fewer calls of that kind.
*loop stops*: the poll itself failed; `run_until_complete` returns the error (naming
`poll (epoll_pwait2)` or `poll (epoll_wait)`) and the loop can be run again. Accepting servers
here retry after 20 ms instead of asyncio's second.
";

/// The environment variable that makes this binary run one cell (`ROW,ERRNO,NTH`) as a child.
const CELL_ENV: &str = "EVLOOP_FAULT_MATRIX_CELL";
const TEST_NAME: &str = "the_fault_matrix_in_docs_matches_what_the_runtime_does";

/// Runs one cell in a child process (this test binary, run with `CELL_ENV`).
fn run_cell_in_child(row: &str, errno: i32, nth: u64) -> Result<String, String> {
    let out = evloop_tests::child::command(TEST_NAME, "EVLOOP_FAULT_MATRIX_CHILD")
        .env(CELL_ENV, format!("{row},{errno},{nth}"))
        .output()
        .map_err(|e| format!("could not start the child: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("CELL: ").map(|(_, rest)| rest))
        .ok_or_else(|| format!("the child printed no outcome ({}): {stdout}", out.status))?;
    match line.split_once(' ') {
        Some(("ok", outcome)) => Ok(outcome.to_string()),
        Some((_, problem)) => Err(problem.to_string()),
        None => Err(format!("the child's outcome is garbled: {line}")),
    }
}

/// In the child: runs the cell `CELL_ENV` names and prints its outcome.
fn child_cell(spec: &str) {
    let mut fields = spec.split(',');
    let (Some(name), Some(errno), Some(nth)) = (fields.next(), fields.next(), fields.next()) else {
        println!("CELL: broken the cell spec {spec:?} is garbled");
        return;
    };
    let (Ok(errno), Ok(nth)) = (errno.parse::<i32>(), nth.parse::<u64>()) else {
        println!("CELL: broken the cell spec {spec:?} is garbled");
        return;
    };
    let Some(row) = rows().into_iter().find(|r| r.name == name) else {
        println!("CELL: broken no row {name}");
        return;
    };
    match run_cell(&row, errno, nth) {
        Ok(outcome) => println!("CELL: ok {outcome}"),
        Err(problem) => println!("CELL: broken {problem}"),
    }
}

#[test]
fn the_fault_matrix_in_docs_matches_what_the_runtime_does() {
    if let Ok(spec) = std::env::var(CELL_ENV) {
        child_cell(&spec);
        return;
    }
    let started = Instant::now();
    let (table, problems) = generate();
    println!("fault matrix: {} s", started.elapsed().as_secs_f64());
    let path = workspace_root().join("docs/fault-matrix.md");
    let valgrind = evloop_tests::under_valgrind();
    if std::env::var("EVLOOP_FAULT_MATRIX").is_ok_and(|v| v == "update") && !valgrind {
        std::fs::write(&path, &table).expect("write docs/fault-matrix.md");
        println!("wrote {}", path.display());
    }
    assert!(
        problems.is_empty(),
        "the fault matrix found problems:\n{}",
        problems.join("\n")
    );
    if valgrind {
        // Under memcheck (`make valgrind`) every cell's invariants hold, but the outcomes are
        // not the table's: valgrind 3.19 fails pidfd_open with ENOSYS, so children are watched
        // by waiter threads (no pidfd_open, pidfd_send_signal or waitid(P_PIDFD) to fail) and
        // the loop waits with epoll_wait instead of epoll_pwait2.
        println!("fault matrix under valgrind: the invariants hold; the table is not compared");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != table {
        let diff: Vec<String> = table
            .lines()
            .zip(committed.lines().chain(std::iter::repeat("")))
            .filter(|(a, b)| a != b)
            .take(10)
            .map(|(a, b)| format!("  now:       {a}\n  committed: {b}"))
            .collect();
        panic!(
            "docs/fault-matrix.md is stale (run `make fault-matrix`); first differences:\n{}",
            diff.join("\n")
        );
    }
}
