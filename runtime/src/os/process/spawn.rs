//! Spawning: `subprocess_exec` and `subprocess_shell` on the loop handle. Each builds a
//! `std::process::Command` and returns it in a [`Subprocess`] builder; awaiting the builder (or its
//! `spawn`) comes back here: `spawn` applies the options, starts the child, opens the child's
//! pidfd (or, without pidfds, starts its waiter thread: `watcher`) and registers it with the
//! loop, and wraps the pipe ends it kept as the loop's [`PipeWriter`] / [`PipeReader`]; the
//! result is a [`Process`].

use std::cell::{Cell, RefCell};
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Command;

use evloop_syscalls::{self as sys, Signal};

use crate::event_loop::LoopHandle;
use crate::event_loop::error::{LoopError, LoopErrorKind};
use crate::io::AsyncFd;
use crate::io::error::with_context;
use crate::io::pipe::{PipeReader, PipeWriter};
use crate::os::process::child::Process;
use crate::os::process::options::{Options, Subprocess};
use crate::os::process::reaper::reap_later;
use crate::os::process::watcher::Watch;

impl LoopHandle {
    /// Starts `program` with `args` (asyncio's `create_subprocess_exec`): returns the
    /// [`Subprocess`] builder, whose methods set the stdio, environment and working directory
    /// (by default all inherited); awaiting it starts the child. `program` is looked up in `PATH`
    /// unless it contains a `/`.
    ///
    /// ```
    /// use evloop::process::Stdio;
    ///
    /// evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let status = lp.subprocess_exec("sh", ["-c", "exit 0"]).await?.wait().await?; // stdio inherited
    ///     assert!(status.success());
    ///     let mut out = lp.subprocess_exec("printf", ["%s-%s", "a", "b"]).stdout(Stdio::Pipe).await?;
    ///     assert_eq!(out.communicate(None).await?.stdout, b"a-b");
    ///     let err = lp.subprocess_exec("no-such-program-here", [""; 0]).await.unwrap_err();
    ///     assert!(err.to_string().contains("no-such-program-here"), "{err}"); // names the program
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subprocess_exec<I, S>(&self, program: impl AsRef<OsStr>, args: I) -> Subprocess
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let program = program.as_ref();
        let mut cmd = Command::new(program);
        cmd.args(args);
        Subprocess::new(self, "subprocess_exec", program.to_string_lossy().into_owned(), cmd)
    }

    /// Runs `cmd` with `/bin/sh -c` (asyncio's `create_subprocess_shell`): returns the
    /// [`Subprocess`] builder, as [`subprocess_exec`](LoopHandle::subprocess_exec) does. Quoting
    /// is the caller's business.
    ///
    /// ```
    /// use evloop::process::Stdio;
    ///
    /// evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let status = lp.subprocess_shell("test 2 -gt 1 && exit 5").await?.wait().await?; // /bin/sh -c
    ///     assert_eq!(status.code(), Some(5));
    ///     let mut wc = lp.subprocess_shell("echo one two | wc -w").stdout(Stdio::Pipe).await?;
    ///     assert_eq!(String::from_utf8_lossy(&wc.communicate(None).await?.stdout).trim(), "2");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subprocess_shell(&self, cmd: impl AsRef<OsStr>) -> Subprocess {
        let cmd = cmd.as_ref();
        let mut command = Command::new("/bin/sh");
        command.arg("-c").arg(cmd);
        Subprocess::new(self, "subprocess_shell", cmd.to_string_lossy().into_owned(), command)
    }
}

/// Starts the child a [`Subprocess`] describes (its `spawn` and `into_future`).
pub(super) fn spawn(
    lp: &LoopHandle,
    op: &'static str,
    label: String,
    mut cmd: Command,
    opts: &Options,
) -> io::Result<Process> {
    if lp.is_closed() {
        return Err(LoopError::new(LoopErrorKind::Closed, op).into());
    }
    opts.apply(&mut cmd);
    // The loop may block SIGPIPE on this thread (pipe writers): the child must not inherit that.
    evloop_syscalls::reset_signals_on_exec(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| with_context(format!("{op}({label})"), e))?;
    let pid = child.id();
    // The pidfd first, while `child` can still kill and reap the process if that fails (nothing
    // has reaped it yet, so its pid cannot have been reused).
    // Without pidfds (an old kernel: ENOSYS; valgrind; a seccomp filter: ENOSYS or EPERM) a
    // waiter thread watches the child instead, and the loop registers its eventfd (`watcher`).
    let (pidfd, watch) = match i32::try_from(pid)
        .map_err(|_| io::Error::from_raw_os_error(sys::errno::ESRCH))
        .and_then(|p| match sys::pidfd_open(p) {
            Ok(fd) => Ok((fd, None)),
            Err(e) if no_pidfds(&e) => Watch::start(p).map(|(fd, w)| (fd, Some(w))),
            Err(e) => Err(e),
        }) {
        Ok(v) => v,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(with_context(format!("{op}({label}): pidfd_open(pid {pid})"), e));
        }
    };
    let stdin = child.stdin.take().map(OwnedFd::from);
    let stdout = child.stdout.take().map(OwnedFd::from);
    let stderr = child.stderr.take().map(OwnedFd::from);
    // std's `Child` neither kills nor reaps on drop: from here the pidfd is the only handle.
    drop(child);
    let raw = pidfd.as_raw_fd();
    let pidfd = match AsyncFd::with_loop(lp, pidfd) {
        Ok(fd) => fd,
        Err(e) => {
            // The pidfd is gone with the error, but the child is not reaped, so its pid is still
            // its own: kill it and let the reaper collect it.
            if let Ok(p) = i32::try_from(pid) {
                let _ = sys::kill(p, Signal::KILL.raw());
                match &watch {
                    Some(w) => w.orphan(),
                    None => {
                        if let Ok(fd) = sys::pidfd_open(p) {
                            reap_later(fd);
                        }
                    }
                }
            }
            return Err(with_context(format!("{op}({label}): register(pidfd {raw})"), e));
        }
    };
    let mut process = Process {
        pid,
        pidfd: RefCell::new(Some(pidfd)),
        watch,
        status: Cell::new(None),
        stdin: None,
        stdout: None,
        stderr: None,
        lp: lp.clone(),
    };
    // A failure from here drops `process`: the child is killed first, and reaped as an orphan.
    let adopt = |process: &mut Process| -> io::Result<()> {
        process.stdin = stdin.map(|fd| PipeWriter::with_loop(lp, fd)).transpose()?;
        process.stdout = stdout.map(|fd| PipeReader::with_loop(lp, fd)).transpose()?;
        process.stderr = stderr.map(|fd| PipeReader::with_loop(lp, fd)).transpose()?;
        Ok(())
    };
    if let Err(e) = adopt(&mut process) {
        let _ = process.kill();
        return Err(with_context(format!("{op}({label}): stdio pipes"), e));
    }
    Ok(process)
}

/// Whether `pidfd_open` failed because pidfds are not available here (`ENOSYS`: a kernel before
/// 5.3, or valgrind; `EPERM`: a seccomp filter), rather than for this child.
fn no_pidfds(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Unsupported || matches!(e.raw_os_error(), Some(sys::errno::ENOSYS | sys::errno::EPERM))
}
