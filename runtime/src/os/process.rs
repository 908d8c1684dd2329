//! Subprocesses (asyncio's `create_subprocess_exec` / `create_subprocess_shell`), watched
//! through pidfds.
//!
//! # Spawning
//! [`LoopHandle::subprocess_exec`] builds a [`std::process::Command`] and spawns it: the child
//! gets only the fds asked for (every fd evloop opens is close-on-exec), and its signal mask and
//! `SIGPIPE` disposition are reset to the defaults before `exec` (`reset_signals_on_exec`: std's
//! `Command` alone would keep the mask, and the loop blocks `SIGPIPE` while it has pipe writers). The pipe ends evloop keeps
//! become [`PipeWriter`] / [`PipeReader`] on the loop. Right after the spawn, `pidfd_open` gives a
//! descriptor that names the child itself, not its number, and the loop registers it like any
//! other fd. A program that cannot be started is an error naming it
//! (`subprocess_exec(no-such-prog): No such file or directory (os error 2)`).
//!
//! # Waiting
//! A pidfd becomes readable when the child exits. [`Process::wait`] waits for that readiness
//! (the task sleeps in the loop's `epoll_pwait2` with everything else), then reaps the child with
//! one `waitid(P_PIDFD, .., WNOHANG)`. There is no `SIGCHLD` handler (which would be
//! process-wide and race with other code's children), no thread per child and no polling loop:
//! a child that runs for an hour costs one `pidfd_open`, one registration and one `waitid`.
//! [`Process::send_signal`] uses `pidfd_send_signal`, so it can never hit another process that
//! got a reaped child's pid; after the child was reaped it is an `ESRCH` error.
//!
//! # No zombies
//! A child stays a zombie until its parent reaps it. So:
//! * dropping a [`Process`] whose child was not reaped hands its pidfd to the loop as an
//!   *orphan*: the registration stays, with a callback that reaps the child when the pidfd
//!   becomes readable (no task involved). An orphan whose exit the loop has already seen is
//!   reaped at once;
//! * when the loop closes with orphans still running (or a `Process` is dropped after its loop
//!   closed), children that already exited are reaped on the spot (`WNOHANG`), and the rest go
//!   to one process-wide *reaper thread*, started the first time it is needed. It waits for all
//!   of them at once in its own epoll instance (so a long-running orphan never delays the
//!   reaping of one that exits sooner, as blocking in `waitid` on each in turn would) and reaps
//!   each with `waitid(.., WNOHANG)` when its pidfd becomes readable. The thread lives until the
//!   process exits and holds two fds (its epoll instance and an eventfd) plus one per child
//!   still running.
//!
//! An orphan is reaped by its loop only while that loop runs: a loop that is neither run nor
//! closed leaves an exited orphan a zombie until then.
//!
//! Limits: a pidfd needs Linux 5.3 (and `waitid(P_PIDFD)` 5.4); on older kernels spawning fails
//! with an [`io::ErrorKind::Unsupported`] error (after killing and reaping the child). If the
//! process sets `SIGCHLD` to `SIG_IGN`, or other code reaps with `waitpid(-1, ..)`, the kernel or
//! that code may reap our children first: `wait` then reports `ECHILD`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::panic::Location;
use std::path::PathBuf;
use std::process::Command;
use std::rc::{Rc, Weak};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use evloop_syscalls::{self as sys, EpollEvent, EpollFlags, Signal};

use crate::event_loop::error::{LoopError, LoopErrorKind, with_context};
use crate::event_loop::handle::{Callback, HandleKind, HandleMeta};
use crate::event_loop::reactor::{IoState, ready};
use crate::event_loop::{LoopHandle, LoopInner};
use crate::io::pipe::{PipeReader, PipeWriter};
use crate::io::{AsyncFd, AsyncReadExt, AsyncWriteExt, Interest};
use crate::sync::combinator::gather;

// ---------------------------------------------------------------------------------------------
// Options.

/// Where a child's stdin, stdout or stderr goes.
///
/// ```
/// use evloop::process::{Stdio, SubprocessOptions};
///
/// let out = evloop::run(async {
///     let lp = evloop::get_running_loop()?;
///     let opts = SubprocessOptions::new().stdout(Stdio::Pipe).stderr(Stdio::Null); // PIPE, DEVNULL
///     let mut child = lp.subprocess_shell_with("echo out; echo err >&2", &opts)?;
///     child.communicate(None).await
/// })??;
/// assert_eq!((out.stdout.as_slice(), out.stderr.as_slice()), (&b"out\n"[..], &b""[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Stdio {
    /// A new pipe; evloop keeps the other end as [`Process::stdin`] / `stdout` / `stderr`
    /// (asyncio's `PIPE`).
    Pipe,
    /// The child shares this process's descriptor (asyncio's `None`). The default.
    #[default]
    Inherit,
    /// `/dev/null` (asyncio's `DEVNULL`).
    Null,
}

impl Stdio {
    fn to_std(self) -> std::process::Stdio {
        match self {
            Stdio::Pipe => std::process::Stdio::piped(),
            Stdio::Inherit => std::process::Stdio::inherit(),
            Stdio::Null => std::process::Stdio::null(),
        }
    }
}

/// How to start a child: its stdio, environment, working directory and the descriptors it
/// keeps. The default inherits all three stdio descriptors, the environment and the working
/// directory, and closes every other descriptor in the child, as asyncio's `close_fds=True`
/// does (see [`close_fds`](SubprocessOptions::close_fds) and
/// [`pass_fds`](SubprocessOptions::pass_fds)).
///
/// ```
/// use evloop::process::{Stdio, SubprocessOptions};
/// let opts = SubprocessOptions::new().stdout(Stdio::Pipe).env("LANG", "C").current_dir("/tmp");
/// # let _ = opts;
/// ```
#[derive(Clone, Debug, Default)]
pub struct SubprocessOptions {
    stdin: Stdio,
    stdout: Stdio,
    stderr: Stdio,
    env_clear: bool,
    /// Set (`Some`) or removed (`None`), in order, after the optional clear.
    env: Vec<(OsString, Option<OsString>)>,
    cwd: Option<PathBuf>,
    /// `close_fds(false)`: the child keeps every descriptor the parent holds without
    /// close-on-exec (asyncio's default, `close_fds=True`, is `false` here).
    inherit_fds: bool,
    /// Descriptors the child keeps whatever their close-on-exec flag (`pass_fds`).
    pass_fds: Vec<RawFd>,
}

impl SubprocessOptions {
    /// Everything inherited.
    ///
    /// ```
    /// let status = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let opts = evloop::process::SubprocessOptions::new(); // inherit stdio, env and directory
    ///     lp.subprocess_exec_with("true", [""; 0], &opts)?.wait().await
    /// })??;
    /// assert!(status.success());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> SubprocessOptions {
        SubprocessOptions::default()
    }

    /// stdin, stdout and stderr all piped.
    ///
    /// ```
    /// let out = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let opts = evloop::process::SubprocessOptions::piped(); // all three are pipes
    ///     let mut child = lp.subprocess_exec_with("tr", ["a-z", "A-Z"], &opts)?;
    ///     child.communicate(Some(b"shout".to_vec())).await
    /// })??;
    /// assert_eq!(out.stdout, b"SHOUT");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn piped() -> SubprocessOptions {
        SubprocessOptions::new()
            .stdin(Stdio::Pipe)
            .stdout(Stdio::Pipe)
            .stderr(Stdio::Pipe)
    }

    /// The child's stdin.
    ///
    /// ```
    /// use evloop::process::{Stdio, SubprocessOptions};
    /// use evloop::AsyncWriteExt;
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let opts = SubprocessOptions::new().stdin(Stdio::Pipe).stdout(Stdio::Pipe);
    ///     let mut child = lp.subprocess_exec_with("wc", ["-c"], &opts)?;
    ///     let mut stdin = child.stdin.take().expect("a pipe");
    ///     stdin.write_all(b"12345").await?;
    ///     drop(stdin); // end of file for the child
    ///     child.communicate(None).await
    /// })??;
    /// assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "5");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stdin(mut self, s: Stdio) -> Self {
        self.stdin = s;
        self
    }

    /// The child's stdout.
    ///
    /// ```
    /// use evloop::process::{Stdio, SubprocessOptions};
    /// use evloop::AsyncReadExt;
    ///
    /// let text = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let opts = SubprocessOptions::new().stdout(Stdio::Pipe);
    ///     let mut child = lp.subprocess_exec_with("echo", ["hello"], &opts)?;
    ///     let mut stdout = child.stdout.take().expect("a pipe");
    ///     let mut text = Vec::new();
    ///     stdout.read_to_end(&mut text).await?; // a PipeReader on the loop
    ///     child.wait().await?;
    ///     Ok::<_, std::io::Error>(text)
    /// })??;
    /// assert_eq!(text, b"hello\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stdout(mut self, s: Stdio) -> Self {
        self.stdout = s;
        self
    }

    /// The child's stderr.
    ///
    /// ```
    /// use evloop::process::{Stdio, SubprocessOptions};
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let opts = SubprocessOptions::new().stderr(Stdio::Pipe);
    ///     lp.subprocess_shell_with("echo oops >&2; exit 3", &opts)?.communicate(None).await
    /// })??;
    /// assert_eq!((out.status.code(), out.stderr.as_slice()), (Some(3), &b"oops\n"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stderr(mut self, s: Stdio) -> Self {
        self.stderr = s;
        self
    }

    /// Sets an environment variable for the child.
    ///
    /// ```
    /// use evloop::process::{Stdio, SubprocessOptions};
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let opts = SubprocessOptions::new().stdout(Stdio::Pipe).env("GREETING", "hi");
    ///     lp.subprocess_shell_with("printf %s \"$GREETING\"", &opts)?.communicate(None).await
    /// })??;
    /// assert_eq!(out.stdout, b"hi");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Removes an environment variable for the child.
    ///
    /// ```
    /// use evloop::process::{Stdio, SubprocessOptions};
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let opts = SubprocessOptions::new().stdout(Stdio::Pipe).env("A", "1").env_remove("A");
    ///     lp.subprocess_shell_with("printf %s \"${A-unset}\"", &opts)?.communicate(None).await
    /// })??;
    /// assert_eq!(out.stdout, b"unset");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// Starts the child with an empty environment (then the `env` settings).
    ///
    /// ```
    /// use evloop::process::{Stdio, SubprocessOptions};
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let opts = SubprocessOptions::new().stdout(Stdio::Pipe).env_clear().env("ONLY", "this");
    ///     lp.subprocess_exec_with("/usr/bin/env", [""; 0], &opts)?.communicate(None).await
    /// })??;
    /// assert_eq!(out.stdout, b"ONLY=this\n"); // nothing inherited
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn env_clear(mut self) -> Self {
        self.env_clear = true;
        self.env.clear();
        self
    }

    /// The child's working directory.
    ///
    /// ```
    /// use evloop::process::{Stdio, SubprocessOptions};
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let opts = SubprocessOptions::new().stdout(Stdio::Pipe).current_dir("/");
    ///     lp.subprocess_exec_with("pwd", [""; 0], &opts)?.communicate(None).await
    /// })??;
    /// assert_eq!(out.stdout, b"/\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Whether the child starts with only stdin, stdout, stderr and the
    /// [`pass_fds`](SubprocessOptions::pass_fds) (`true`, the default: asyncio's and Python's
    /// `close_fds=True`), or keeps every descriptor this process holds without close-on-exec
    /// (`false`: std's `Command`). evloop's own descriptors are close-on-exec either way; what
    /// the default keeps out of the child are those this process inherited or a library opened
    /// without `O_CLOEXEC` (a held pipe end keeps a reader from ever seeing end of file).
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// use evloop::process::{Stdio, SubprocessOptions};
    ///
    /// let (_r, w) = evloop::sys::pipe2()?;
    /// evloop::sys::set_cloexec(w.as_raw_fd(), false)?; // as an inherited descriptor would be
    /// let probe = format!("[ -e /proc/self/fd/{} ] && echo kept || echo closed", w.as_raw_fd());
    /// let seen = |opts: SubprocessOptions| {
    ///     let probe = probe.clone();
    ///     evloop::run(async move {
    ///         let lp = evloop::get_running_loop()?;
    ///         let out = lp.subprocess_shell_with(&probe, &opts.stdout(Stdio::Pipe))?.communicate(None).await?;
    ///         Ok::<_, std::io::Error>(String::from_utf8_lossy(&out.stdout).into_owned())
    ///     })
    /// };
    /// assert_eq!(seen(SubprocessOptions::new())??, "closed\n");
    /// assert_eq!(seen(SubprocessOptions::new().close_fds(false))??, "kept\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close_fds(mut self, close: bool) -> Self {
        self.inherit_fds = !close;
        self
    }

    /// Descriptors the child keeps, under the same numbers, even when they are close-on-exec
    /// here (asyncio's and Python's `pass_fds`); the others are closed as
    /// [`close_fds`](SubprocessOptions::close_fds) says. The caller keeps them open until the
    /// child has started.
    ///
    /// ```
    /// use std::io::Read;
    /// use std::os::fd::AsRawFd;
    /// use evloop::process::SubprocessOptions;
    ///
    /// let (r, w) = evloop::sys::pipe2()?; // close-on-exec, like every evloop descriptor
    /// let script = format!("echo through >&{}", w.as_raw_fd());
    /// let opts = SubprocessOptions::new().pass_fds([w.as_raw_fd()]);
    /// let status = evloop::run(async move {
    ///     let lp = evloop::get_running_loop()?;
    ///     let mut child = lp.subprocess_shell_with(&script, &opts)?;
    ///     drop(w); // the child has its own copy now
    ///     child.wait().await
    /// })??;
    /// assert!(status.success());
    /// let mut got = String::new();
    /// std::fs::File::from(r).read_to_string(&mut got)?;
    /// assert_eq!(got, "through\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pass_fds(mut self, fds: impl IntoIterator<Item = RawFd>) -> Self {
        self.pass_fds.extend(fds);
        self
    }

    fn apply(&self, cmd: &mut Command) {
        cmd.stdin(self.stdin.to_std())
            .stdout(self.stdout.to_std())
            .stderr(self.stderr.to_std());
        if self.env_clear {
            cmd.env_clear();
        }
        for (k, v) in &self.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        if !self.inherit_fds {
            evloop_syscalls::close_fds_on_exec(cmd, self.pass_fds.clone());
        } else if !self.pass_fds.is_empty() {
            evloop_syscalls::keep_fds_on_exec(cmd, self.pass_fds.clone());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Exit status.

/// How a child ended.
///
/// ```
/// let status = evloop::run(async {
///     let lp = evloop::get_running_loop()?;
///     lp.subprocess_exec("sh", ["-c", "exit 7"])?.wait().await
/// })??;
/// assert_eq!((status.code(), status.success(), status.returncode()), (Some(7), false, 7));
/// assert_eq!(status.to_string(), "exit code 7");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ExitStatus(sys::ExitStatus);

impl ExitStatus {
    /// The exit code (0..=255) if it exited, `None` if a signal killed it.
    ///
    /// ```
    /// let status = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     lp.subprocess_exec("false", [""; 0])?.wait().await
    /// })??;
    /// assert_eq!(status.code(), Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn code(&self) -> Option<i32> {
        match self.0 {
            sys::ExitStatus::Exited(code) => Some(code),
            sys::ExitStatus::Signaled { .. } => None,
        }
    }

    /// The signal that killed it, `None` if it exited.
    ///
    /// ```
    /// use evloop::signal::Signal;
    ///
    /// let status = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sleep", ["60"])?;
    ///     child.kill()?;
    ///     child.wait().await
    /// })??;
    /// assert_eq!((status.signal(), status.code()), (Some(Signal::KILL.raw()), None));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn signal(&self) -> Option<i32> {
        match self.0 {
            sys::ExitStatus::Exited(_) => None,
            sys::ExitStatus::Signaled { signal, .. } => Some(signal),
        }
    }

    /// Whether it dumped core when the signal killed it.
    ///
    /// ```
    /// let status = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sleep", ["60"])?;
    ///     child.terminate()?; // SIGTERM does not dump core
    ///     child.wait().await
    /// })??;
    /// assert!(!status.core_dumped());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn core_dumped(&self) -> bool {
        matches!(self.0, sys::ExitStatus::Signaled { core_dumped: true, .. })
    }

    /// Whether it exited with code 0.
    ///
    /// ```
    /// let (ok, failed) = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let ok = lp.subprocess_exec("true", [""; 0])?.wait().await?;
    ///     let failed = lp.subprocess_exec("false", [""; 0])?.wait().await?;
    ///     Ok::<_, std::io::Error>((ok, failed))
    /// })??;
    /// assert!(ok.success() && !failed.success());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn success(&self) -> bool {
        self.code() == Some(0)
    }

    /// asyncio's `returncode`: the exit code, or minus the signal number.
    ///
    /// ```
    /// use evloop::signal::Signal;
    ///
    /// let status = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sleep", ["60"])?;
    ///     child.send_signal(Signal::TERM)?;
    ///     child.wait().await
    /// })??;
    /// assert_eq!(status.returncode(), -Signal::TERM.raw()); // asyncio's -15
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn returncode(&self) -> i32 {
        match self.0 {
            sys::ExitStatus::Exited(code) => code,
            sys::ExitStatus::Signaled { signal, .. } => -signal,
        }
    }
}

impl From<sys::ExitStatus> for ExitStatus {
    fn from(s: sys::ExitStatus) -> ExitStatus {
        ExitStatus(s)
    }
}

/// The conventional name of the common signals, for messages.
fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        17 => "SIGCHLD",
        18 => "SIGCONT",
        19 => "SIGSTOP",
        20 => "SIGTSTP",
        _ => return None,
    })
}

fn describe_signal(sig: i32) -> String {
    match signal_name(sig) {
        Some(name) => format!("{name} ({sig})"),
        None => format!("signal {sig}"),
    }
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            sys::ExitStatus::Exited(code) => write!(f, "exit code {code}"),
            sys::ExitStatus::Signaled { signal, core_dumped } => {
                write!(f, "killed by {}", describe_signal(signal))?;
                if core_dumped {
                    f.write_str(", core dumped")?;
                }
                Ok(())
            }
        }
    }
}

/// What [`Process::communicate`] collected.
///
/// ```
/// use evloop::process::SubprocessOptions;
///
/// let out = evloop::run(async {
///     let lp = evloop::get_running_loop()?;
///     let mut child = lp.subprocess_exec_with("sh", ["-c", "cat; echo done >&2"], &SubprocessOptions::piped())?;
///     child.communicate(Some(b"input".to_vec())).await
/// })??;
/// assert!(out.status.success());
/// assert_eq!((out.stdout.as_slice(), out.stderr.as_slice()), (&b"input"[..], &b"done\n"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// How the child ended.
    pub status: ExitStatus,
    /// Everything it wrote to stdout (empty unless stdout was a pipe).
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr (empty unless stderr was a pipe).
    pub stderr: Vec<u8>,
}

// ---------------------------------------------------------------------------------------------
// The process.

/// A child process started by [`LoopHandle::subprocess_exec`] or
/// [`LoopHandle::subprocess_shell`] (asyncio's `asyncio.subprocess.Process`).
///
/// Take the pipe ends out of the public fields to use them (`p.stdout.take()`); dropping an
/// end closes it. Dropping the `Process` does not kill the child; the loop reaps it when it
/// exits (see the module docs).
///
/// ```
/// use evloop::process::SubprocessOptions;
///
/// let (stdout, code) = evloop::run(async {
///     let lp = evloop::get_running_loop()?;
///     // proc = await asyncio.create_subprocess_exec('sh', '-c', ..., stdout=PIPE)
///     let mut proc = lp.subprocess_exec_with("sh", ["-c", "echo hi; exit 2"], &SubprocessOptions::piped())?;
///     let out = proc.communicate(None).await?;
///     Ok::<_, std::io::Error>((out.stdout, proc.returncode().and_then(|s| s.code())))
/// })??;
/// assert_eq!((stdout.as_slice(), code), (&b"hi\n"[..], Some(2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Process {
    pid: u32,
    /// The child's pidfd, registered with the loop; `None` once reaped (or lost to `ECHILD`).
    pidfd: RefCell<Option<AsyncFd<OwnedFd>>>,
    status: Cell<Option<ExitStatus>>,
    /// The write end of the child's stdin, if it was [`Stdio::Pipe`].
    pub stdin: Option<PipeWriter>,
    /// The read end of the child's stdout, if it was [`Stdio::Pipe`].
    pub stdout: Option<PipeReader>,
    /// The read end of the child's stderr, if it was [`Stdio::Pipe`].
    pub stderr: Option<PipeReader>,
    lp: LoopHandle,
}

impl Process {
    /// The child's process id.
    ///
    /// ```
    /// use evloop::process::{Stdio, SubprocessOptions};
    ///
    /// let (pid, said) = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let opts = SubprocessOptions::new().stdout(Stdio::Pipe);
    ///     let mut child = lp.subprocess_shell_with("echo $$", &opts)?;
    ///     let pid = child.pid();
    ///     let out = child.communicate(None).await?;
    ///     Ok::<_, std::io::Error>((pid, String::from_utf8_lossy(&out.stdout).trim().to_string()))
    /// })??;
    /// assert_eq!(said, pid.to_string());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// How the child ended, if it has been reaped; else, if the loop has seen it exit, reaps it
    /// now (one `waitid`). Never blocks, and makes no system call while the child runs.
    ///
    /// ```
    /// evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sleep", ["60"])?;
    ///     assert!(child.returncode().is_none()); // still running: no system call made
    ///     child.kill()?;
    ///     child.wait().await?;
    ///     assert!(child.returncode().is_some_and(|s| !s.success()));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn returncode(&self) -> Option<ExitStatus> {
        if let Some(s) = self.status.get() {
            return Some(s);
        }
        let exited = self
            .pidfd
            .borrow()
            .as_ref()
            .is_some_and(|fd| fd.is_ready(Interest::Read));
        if exited { self.try_reap().ok().flatten() } else { None }
    }

    /// Waits for the child to exit and reaps it; later calls return the same status at once.
    ///
    /// As in asyncio, a child writing more than a pipe holds (64 KiB) to a stdout or stderr
    /// pipe that nobody reads blocks forever, and so does this wait: read the pipes at the same
    /// time, or use [`communicate`](Process::communicate).
    ///
    /// ```
    /// evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sh", ["-c", "exit 4"])?;
    ///     let status = child.wait().await?; // sleeps in epoll until the pidfd is readable
    ///     assert_eq!(status.code(), Some(4));
    ///     assert_eq!(child.wait().await?.code(), Some(4)); // the same status again, at once
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(s) = self.status.get() {
                return Ok(s);
            }
            {
                let pid = self.pid;
                let slot = self.pidfd.get_mut();
                let Some(fd) = slot.as_ref() else {
                    return Err(lost(pid));
                };
                poll_fn(|cx| fd.poll_ready(cx, Interest::Read))
                    .await
                    .map_err(|e| with_context(format!("wait(pid {pid})"), e))?;
            }
            if let Some(s) = self.try_reap()? {
                return Ok(s);
            }
        }
    }

    /// One `waitid(.., WNOHANG)`: the status if the child has exited (it is reaped and the pidfd
    /// closed), `None` if it still runs (readiness cleared until the next edge).
    fn try_reap(&self) -> io::Result<Option<ExitStatus>> {
        let mut slot = self.pidfd.borrow_mut();
        let Some(fd) = slot.as_ref() else {
            return match self.status.get() {
                Some(s) => Ok(Some(s)),
                None => Err(lost(self.pid)),
            };
        };
        match sys::waitid_pidfd(fd.as_fd(), true) {
            Ok(Some(s)) => {
                let s = ExitStatus::from(s);
                self.status.set(Some(s));
                let fd = slot.take();
                drop(slot);
                drop(fd);
                Ok(Some(s))
            }
            Ok(None) => {
                fd.clear_ready(Interest::Read);
                Ok(None)
            }
            Err(e) => {
                // ECHILD: reaped by someone else; nothing more to wait for.
                let fd = slot.take();
                drop(slot);
                drop(fd);
                Err(with_context(format!("wait(pid {})", self.pid), e))
            }
        }
    }

    /// Sends `signal` to the child (`pidfd_send_signal`, so never to a process that reused
    /// its pid). After the child was reaped it is an `ESRCH` error naming the pid; a child that
    /// exited but is not reaped yet accepts and ignores it.
    ///
    /// ```
    /// use evloop::signal::Signal;
    ///
    /// evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sleep", ["10"])?;
    ///     child.send_signal(Signal::TERM)?;
    ///     let status = child.wait().await?;
    ///     assert_eq!(status.signal(), Some(Signal::TERM.raw()));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn send_signal(&self, signal: Signal) -> io::Result<()> {
        let sig = signal.raw();
        let slot = self.pidfd.borrow();
        let what = format!("send_signal(pid {}, {})", self.pid, describe_signal(sig));
        match slot.as_ref() {
            Some(fd) => sys::pidfd_send_signal(fd.as_fd(), sig).map_err(|e| with_context(what, e)),
            None => {
                let after = match self.status.get() {
                    Some(s) => format!("{what}: the child was already reaped ({s})"),
                    None => format!("{what}: the child was reaped elsewhere"),
                };
                Err(with_context(after, io::Error::from_raw_os_error(sys::errno::ESRCH)))
            }
        }
    }

    /// Sends `SIGTERM` (asyncio's `terminate`).
    ///
    /// ```
    /// use evloop::signal::Signal;
    ///
    /// evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sleep", ["60"])?;
    ///     child.terminate()?; // SIGTERM
    ///     assert_eq!(child.wait().await?.signal(), Some(Signal::TERM.raw()));
    ///     assert!(child.terminate().is_err()); // reaped: ESRCH, never another process
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn terminate(&self) -> io::Result<()> {
        self.send_signal(Signal::TERM)
    }

    /// Sends `SIGKILL` (asyncio's `kill`).
    ///
    /// ```
    /// use evloop::signal::Signal;
    ///
    /// evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let mut child = lp.subprocess_shell("trap '' TERM; sleep 60")?; // ignores SIGTERM ...
    ///     child.kill()?; // ... but not SIGKILL
    ///     assert_eq!(child.wait().await?.signal(), Some(Signal::KILL.raw()));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kill(&self) -> io::Result<()> {
        self.send_signal(Signal::KILL)
    }

    /// Writes `input` to the child's stdin and closes it, reads its stdout and stderr to the
    /// end, all three at once (so a child that fills one pipe while we feed or drain another
    /// cannot deadlock us), then waits for it (asyncio's `communicate`).
    ///
    /// The pipe ends are taken from the `Process`; ends that were not pipes give empty output.
    /// A child that exits without reading all its input is not an error (`EPIPE` on stdin is
    /// ignored, as asyncio does). `input` without a stdin pipe is an `InvalidInput` error.
    ///
    /// ```
    /// use evloop::process::SubprocessOptions;
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec_with("cat", [""; 0], &SubprocessOptions::piped())?;
    ///     // More than a pipe holds, both ways at once: no deadlock.
    ///     child.communicate(Some(vec![b'z'; 256 * 1024])).await
    /// })??;
    /// assert_eq!(out.stdout.len(), 256 * 1024);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn communicate(&mut self, input: Option<Vec<u8>>) -> io::Result<Output> {
        if input.is_some() && self.stdin.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("communicate(pid {}): input given but stdin is not a pipe", self.pid),
            ));
        }
        let stdin = self.stdin.take();
        let stdout = self.stdout.take();
        let stderr = self.stderr.take();
        let feed = async move {
            let Some(mut w) = stdin else { return Ok(()) };
            if let Some(data) = input {
                match w.write_all(&data).await {
                    Ok(()) => {}
                    Err(e) if matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset) => {}
                    Err(e) => return Err(e),
                }
            }
            w.shutdown().await
        };
        let pid = self.pid;
        let (fed, out, err) = gather((feed, read_all(stdout), read_all(stderr))).await;
        fed.map_err(|e| with_context(format!("communicate(pid {pid}): stdin"), e))?;
        let stdout = out.map_err(|e| with_context(format!("communicate(pid {pid}): stdout"), e))?;
        let stderr = err.map_err(|e| with_context(format!("communicate(pid {pid}): stderr"), e))?;
        let status = self.wait().await?;
        Ok(Output { status, stdout, stderr })
    }
}

fn lost(pid: u32) -> io::Error {
    with_context(
        format!("wait(pid {pid}): the child was reaped elsewhere"),
        io::Error::from_raw_os_error(sys::errno::ECHILD),
    )
}

/// Reads `r` to the end (nothing if there is no pipe), 64 KiB at a time.
async fn read_all(r: Option<PipeReader>) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let Some(mut r) = r else { return Ok(out) };
    const CHUNK: usize = 64 * 1024;
    loop {
        let len = out.len();
        out.resize(len + CHUNK, 0);
        match r.read(&mut out[len..]).await {
            Ok(0) => {
                out.truncate(len);
                return Ok(out);
            }
            Ok(n) => out.truncate(len + n),
            Err(e) => return Err(e),
        }
    }
}

impl Drop for Process {
    /// A child not reaped yet becomes the loop's orphan (see the module docs); nothing blocks.
    fn drop(&mut self) {
        if let Some(fd) = self.pidfd.get_mut().take() {
            orphan(&self.lp, fd);
        }
    }
}

impl fmt::Debug for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status.get() {
            Some(s) => write!(f, "<Process {} {s}>", self.pid),
            None => write!(f, "<Process {} running>", self.pid),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Spawning.

impl LoopHandle {
    /// Starts `program` with `args`, inheriting stdin, stdout and stderr (asyncio's
    /// `create_subprocess_exec` with the defaults). `program` is looked up in `PATH` unless it
    /// contains a `/`.
    ///
    /// ```
    /// evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let status = lp.subprocess_exec("sh", ["-c", "exit 0"])?.wait().await?; // stdio inherited
    ///     assert!(status.success());
    ///     let err = lp.subprocess_exec("no-such-program-here", [""; 0]).unwrap_err();
    ///     assert!(err.to_string().contains("no-such-program-here"), "{err}"); // names the program
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subprocess_exec<I, S>(&self, program: impl AsRef<OsStr>, args: I) -> io::Result<Process>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.subprocess_exec_with(program, args, &SubprocessOptions::new())
    }

    /// Starts `program` with `args` and `opts` (stdio pipes, environment, working directory).
    ///
    /// ```
    /// use evloop::process::{Stdio, SubprocessOptions};
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let opts = SubprocessOptions::new().stdout(Stdio::Pipe);
    ///     lp.subprocess_exec_with("printf", ["%s-%s", "a", "b"], &opts)?.communicate(None).await
    /// })??;
    /// assert_eq!(out.stdout, b"a-b");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subprocess_exec_with<I, S>(
        &self,
        program: impl AsRef<OsStr>,
        args: I,
        opts: &SubprocessOptions,
    ) -> io::Result<Process>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let program = program.as_ref();
        let mut cmd = Command::new(program);
        cmd.args(args);
        spawn(
            self,
            "subprocess_exec",
            program.to_string_lossy().into_owned(),
            cmd,
            opts,
        )
    }

    /// Runs `cmd` with `/bin/sh -c`, inheriting stdin, stdout and stderr (asyncio's
    /// `create_subprocess_shell`). Quoting is the caller's business.
    ///
    /// ```
    /// let status = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     lp.subprocess_shell("test 2 -gt 1 && exit 5")?.wait().await // /bin/sh -c
    /// })??;
    /// assert_eq!(status.code(), Some(5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subprocess_shell(&self, cmd: impl AsRef<OsStr>) -> io::Result<Process> {
        self.subprocess_shell_with(cmd, &SubprocessOptions::new())
    }

    /// Runs `cmd` with `/bin/sh -c` and `opts`.
    ///
    /// ```
    /// use evloop::process::{Stdio, SubprocessOptions};
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::get_running_loop()?;
    ///     let opts = SubprocessOptions::new().stdout(Stdio::Pipe);
    ///     lp.subprocess_shell_with("echo one two | wc -w", &opts)?.communicate(None).await
    /// })??;
    /// assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subprocess_shell_with(&self, cmd: impl AsRef<OsStr>, opts: &SubprocessOptions) -> io::Result<Process> {
        let cmd = cmd.as_ref();
        let mut command = Command::new("/bin/sh");
        command.arg("-c").arg(cmd);
        spawn(
            self,
            "subprocess_shell",
            cmd.to_string_lossy().into_owned(),
            command,
            opts,
        )
    }
}

fn spawn(
    lp: &LoopHandle,
    op: &'static str,
    label: String,
    mut cmd: Command,
    opts: &SubprocessOptions,
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
    let pidfd = match i32::try_from(pid)
        .map_err(|_| io::Error::from_raw_os_error(sys::errno::ESRCH))
        .and_then(sys::pidfd_open)
    {
        Ok(fd) => fd,
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
                if let Ok(fd) = sys::pidfd_open(p) {
                    reap_later(fd);
                }
            }
            return Err(with_context(format!("{op}({label}): register(pidfd {raw})"), e));
        }
    };
    let mut process = Process {
        pid,
        pidfd: RefCell::new(Some(pidfd)),
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

// ---------------------------------------------------------------------------------------------
// Orphans: children whose `Process` was dropped before they were reaped.

/// The callback of an orphan's pidfd registration: reaps the child when its pidfd becomes
/// readable, then deregisters and closes the pidfd.
struct Orphan {
    meta: HandleMeta,
    pidfd: RefCell<Option<OwnedFd>>,
    io: Rc<IoState>,
    lp: Weak<LoopInner>,
}

impl Callback for Orphan {
    fn run(&self) {
        let reaped = {
            let fd = self.pidfd.borrow();
            let Some(fd) = fd.as_ref() else { return };
            // Ok(None): not exited after all; wait for the next edge. Err: not ours to reap
            // (ECHILD), give up on it.
            !matches!(sys::waitid_pidfd(fd.as_fd(), true), Ok(None))
        };
        if !reaped {
            self.io.clear(ready::READABLE);
            return;
        }
        let fd = self.pidfd.borrow_mut().take();
        // Deregister before closing; this also drops the registration's reference to us (the
        // caller holds another while we run).
        if let Some(lp) = self.lp.upgrade() {
            lp.deregister_io(&self.io);
        }
        drop(fd);
    }
    fn meta(&self) -> &HandleMeta {
        &self.meta
    }
    fn type_name(&self) -> &'static str {
        "orphaned child reaper"
    }
}

impl Drop for Orphan {
    /// Still unreaped when the registration lets go of us: the loop is closing.
    fn drop(&mut self) {
        if let Some(fd) = self.pidfd.get_mut().take() {
            reap_later(fd);
        }
    }
}

/// Hands the unreaped child of a dropped `Process` to its loop (or to the reaper thread if the
/// loop is closed).
fn orphan(lp: &LoopHandle, fd: AsyncFd<OwnedFd>) {
    if lp.is_closed() {
        reap_later(fd.into_inner());
        return;
    }
    // Keep the registration (no epoll_ctl): only its owner changes.
    let (pidfd, io) = fd.into_parts();
    let orphan = Rc::new(Orphan {
        meta: HandleMeta::new(HandleKind::Io, Location::caller()),
        pidfd: RefCell::new(Some(pidfd)),
        io: io.clone(),
        lp: Rc::downgrade(&lp.inner),
    });
    io.set_handler(Some(orphan.clone()));
    if io.readiness() & ready::READ_ANY != 0 {
        // The loop already saw the exit: that edge will not come again.
        orphan.run();
    }
}

/// Reaps the child now if it has exited, else hands it to the reaper thread.
fn reap_later(pidfd: OwnedFd) {
    if let Ok(None) = sys::waitid_pidfd(pidfd.as_fd(), true) {
        Reaper::hand_over(pidfd);
    }
}

// ---------------------------------------------------------------------------------------------
// The process-wide reaper thread.

/// The epoll `data` of the reaper's eventfd.
const REAPER_WAKE: u64 = u64::MAX;

/// What loops share with the reaper thread: pidfds handed over, and the eventfd that says so.
struct Reaper {
    queue: Mutex<Vec<OwnedFd>>,
    wake: OwnedFd,
}

static REAPER: OnceLock<Option<Arc<Reaper>>> = OnceLock::new();

impl Reaper {
    /// Gives `pidfd` (a child that has not exited yet) to the reaper thread, starting it the
    /// first time. If the thread cannot be started the child stays a zombie until this process
    /// exits; that is reported on stderr.
    fn hand_over(pidfd: OwnedFd) {
        match REAPER.get_or_init(Reaper::start) {
            Some(r) => {
                r.queue.lock().unwrap_or_else(|p| p.into_inner()).push(pidfd);
                let _ = sys::eventfd_write(r.wake.as_fd(), 1);
            }
            None => eprintln!(
                "evloop: could not start the child reaper thread; an orphaned child (pidfd {}) will stay a zombie after it exits",
                pidfd.as_raw_fd()
            ),
        }
    }

    fn start() -> Option<Arc<Reaper>> {
        let wake = sys::eventfd(0).ok()?;
        let epoll = sys::epoll_create1().ok()?;
        sys::epoll_ctl_add(epoll.as_fd(), wake.as_raw_fd(), EpollFlags::IN, REAPER_WAKE).ok()?;
        let reaper = Arc::new(Reaper {
            queue: Mutex::new(Vec::new()),
            wake,
        });
        let shared = reaper.clone();
        std::thread::Builder::new()
            .name("evloop-reaper".into())
            .spawn(move || reaper_thread(&shared, epoll))
            .ok()?;
        Some(reaper)
    }
}

/// Waits (in its own epoll instance, level-triggered) for any of its children's pidfds to become
/// readable and reaps that child; new pidfds arrive through the queue and the eventfd.
fn reaper_thread(reaper: &Reaper, epoll: OwnedFd) {
    let mut children: HashMap<u64, OwnedFd> = HashMap::new();
    let mut next_token = 0u64;
    let mut events = vec![EpollEvent::zeroed(); 64];
    loop {
        let n = match sys::epoll_wait_timeout(epoll.as_fd(), &mut events, None) {
            Ok(n) => n,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        for ev in &events[..n] {
            let token = ev.data();
            if token == REAPER_WAKE {
                let _ = sys::eventfd_read(reaper.wake.as_fd());
                let new = std::mem::take(&mut *reaper.queue.lock().unwrap_or_else(|p| p.into_inner()));
                for fd in new {
                    let t = next_token;
                    next_token += 1;
                    if sys::epoll_ctl_add(epoll.as_fd(), fd.as_raw_fd(), EpollFlags::IN, t).is_ok() {
                        children.insert(t, fd);
                    } else {
                        // Cannot watch it (out of memory or epoll watches): wait for this one
                        // alone, blocking. The pidfd may be non-blocking (it was the loop's).
                        let _ = sys::set_nonblocking(fd.as_fd(), false);
                        let _ = sys::waitid_pidfd(fd.as_fd(), false);
                    }
                }
                continue;
            }
            let done = match children.get(&token) {
                Some(fd) => !matches!(sys::waitid_pidfd(fd.as_fd(), true), Ok(None)),
                None => false,
            };
            if done {
                if let Some(fd) = children.remove(&token) {
                    let _ = sys::epoll_ctl_del(epoll.as_fd(), fd.as_raw_fd());
                    drop(fd);
                }
            }
        }
    }
}
