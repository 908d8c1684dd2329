//! How to start a child: the [`Subprocess`] builder that `subprocess_exec` and
//! `subprocess_shell` return (stdio, environment, working directory, which fds it inherits) and
//! [`Stdio`]. Its setters fill an `Options`; awaiting it (or [`Subprocess::spawn`]) hands the
//! `std::process::Command` and the options to `spawn`, which applies them and starts the child.

use std::ffi::{OsStr, OsString};
use std::future::{IntoFuture, Ready, ready};
use std::io;
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::process::Command;

use crate::event_loop::LoopHandle;
use crate::os::process::child::Process;
use crate::os::process::spawn::spawn;

/// Where a child's stdin, stdout or stderr goes.
///
/// ```
/// use evloop::process::Stdio;
///
/// let out = evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let shell = lp.subprocess_shell("echo out; echo err >&2");
///     let mut child = shell.stdout(Stdio::Pipe).stderr(Stdio::Null).await?; // PIPE, DEVNULL
///     child.communicate(None).await
/// })??;
/// assert_eq!((out.stdout.as_slice(), out.stderr.as_slice()), (&b"out\n"[..], &b""[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Stdio {
    /// A new pipe; evloop keeps the other end as
    /// [`Process::stdin`](crate::process::Process::stdin) / `stdout` / `stderr` (asyncio's `PIPE`).
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

/// The builder [`LoopHandle::subprocess_exec`] and [`LoopHandle::subprocess_shell`] return:
/// how to start the child (its stdio, environment, working directory and the descriptors it
/// keeps). Await it for the [`Process`] (asyncio's `await create_subprocess_exec(...)`), or call
/// [`spawn`](Subprocess::spawn) where there is no task to await in. The defaults inherit all
/// three stdio descriptors, the environment and the working directory, and close every other
/// descriptor in the child, as asyncio's `close_fds=True` does (see
/// [`close_fds`](Subprocess::close_fds) and [`pass_fds`](Subprocess::pass_fds)).
///
/// ```
/// use evloop::process::Stdio;
///
/// let out = evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let ls = lp.subprocess_exec("ls", ["/"]).stdout(Stdio::Pipe).env("LANG", "C").current_dir("/tmp");
///     ls.await?.communicate(None).await
/// })??;
/// assert!(out.status.success());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "builders do nothing until they are built, run or awaited"]
pub struct Subprocess {
    lp: LoopHandle,
    /// `subprocess_exec` or `subprocess_shell`, and the program or command line: for errors.
    op: &'static str,
    label: String,
    cmd: Command,
    opts: Options,
}

/// What the [`Subprocess`] setters set, applied to the `Command` by `spawn`.
#[derive(Clone, Debug, Default)]
pub(super) struct Options {
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

impl Subprocess {
    pub(super) fn new(lp: &LoopHandle, op: &'static str, label: String, cmd: Command) -> Subprocess {
        Subprocess {
            lp: lp.clone(),
            op,
            label,
            cmd,
            opts: Options::default(),
        }
    }

    /// Starts the child now, without a task to await in (the loop need not be running); the
    /// same as awaiting the builder.
    ///
    /// ```
    /// let lp = evloop::event_loop::EventLoop::new()?;
    /// let mut child = lp.handle().subprocess_exec("true", [""; 0]).spawn()?; // outside any task
    /// let status = lp.run_until_complete(async move { child.wait().await })??;
    /// assert!(status.success());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn(self) -> io::Result<Process> {
        spawn(&self.lp, self.op, self.label, self.cmd, &self.opts)
    }

    /// stdin, stdout and stderr all piped.
    ///
    /// ```
    /// let out = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("tr", ["a-z", "A-Z"]).piped().await?; // all three are pipes
    ///     child.communicate(Some(b"shout".to_vec())).await
    /// })??;
    /// assert_eq!(out.stdout, b"SHOUT");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn piped(self) -> Self {
        self.stdin(Stdio::Pipe).stdout(Stdio::Pipe).stderr(Stdio::Pipe)
    }

    /// The child's stdin.
    ///
    /// ```
    /// use evloop::process::Stdio;
    /// use evloop::io::AsyncWriteExt;
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("wc", ["-c"]).stdin(Stdio::Pipe).stdout(Stdio::Pipe).await?;
    ///     let mut stdin = child.stdin.take().expect("a pipe");
    ///     stdin.write_all(b"12345").await?;
    ///     drop(stdin); // end of file for the child
    ///     child.communicate(None).await
    /// })??;
    /// assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "5");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stdin(mut self, s: Stdio) -> Self {
        self.opts.stdin = s;
        self
    }

    /// The child's stdout.
    ///
    /// ```
    /// use evloop::process::Stdio;
    /// use evloop::io::AsyncReadExt;
    ///
    /// let text = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("echo", ["hello"]).stdout(Stdio::Pipe).await?;
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
        self.opts.stdout = s;
        self
    }

    /// The child's stderr.
    ///
    /// ```
    /// use evloop::process::Stdio;
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     lp.subprocess_shell("echo oops >&2; exit 3").stderr(Stdio::Pipe).await?.communicate(None).await
    /// })??;
    /// assert_eq!((out.status.code(), out.stderr.as_slice()), (Some(3), &b"oops\n"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stderr(mut self, s: Stdio) -> Self {
        self.opts.stderr = s;
        self
    }

    /// Sets an environment variable for the child.
    ///
    /// ```
    /// use evloop::process::Stdio;
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let shell = lp.subprocess_shell("printf %s \"$GREETING\"").stdout(Stdio::Pipe);
    ///     shell.env("GREETING", "hi").await?.communicate(None).await
    /// })??;
    /// assert_eq!(out.stdout, b"hi");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.opts
            .env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Removes an environment variable for the child.
    ///
    /// ```
    /// use evloop::process::Stdio;
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let shell = lp.subprocess_shell("printf %s \"${A-unset}\"").stdout(Stdio::Pipe);
    ///     shell.env("A", "1").env_remove("A").await?.communicate(None).await
    /// })??;
    /// assert_eq!(out.stdout, b"unset");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.opts.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// Starts the child with an empty environment (then the `env` settings).
    ///
    /// ```
    /// use evloop::process::Stdio;
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let env = lp.subprocess_exec("/usr/bin/env", [""; 0]).stdout(Stdio::Pipe);
    ///     env.env_clear().env("ONLY", "this").await?.communicate(None).await
    /// })??;
    /// assert_eq!(out.stdout, b"ONLY=this\n"); // nothing inherited
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn env_clear(mut self) -> Self {
        self.opts.env_clear = true;
        self.opts.env.clear();
        self
    }

    /// The child's working directory.
    ///
    /// ```
    /// use evloop::process::Stdio;
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     lp.subprocess_exec("pwd", [""; 0]).stdout(Stdio::Pipe).current_dir("/").await?.communicate(None).await
    /// })??;
    /// assert_eq!(out.stdout, b"/\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.opts.cwd = Some(dir.into());
        self
    }

    /// Whether the child starts with only stdin, stdout, stderr and the
    /// [`pass_fds`](Subprocess::pass_fds) (`true`, the default: asyncio's and Python's
    /// `close_fds=True`), or keeps every descriptor this process holds without close-on-exec
    /// (`false`: std's `Command`). evloop's own descriptors are close-on-exec either way; what
    /// the default keeps out of the child are those this process inherited or a library opened
    /// without `O_CLOEXEC` (a held pipe end keeps a reader from ever seeing end of file).
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// use evloop::process::Stdio;
    ///
    /// let (_r, w) = evloop_syscalls::pipe2()?; // the syscall layer, for a descriptor without close-on-exec
    /// evloop_syscalls::set_cloexec(w.as_raw_fd(), false)?; // as an inherited descriptor would be
    /// let probe = format!("[ -e /proc/self/fd/{} ] && echo kept || echo closed", w.as_raw_fd());
    /// let seen = |close: bool| {
    ///     let probe = probe.clone();
    ///     evloop::run(async move {
    ///         let lp = evloop::event_loop::get_running_loop()?;
    ///         let shell = lp.subprocess_shell(&probe).stdout(Stdio::Pipe);
    ///         let out = shell.close_fds(close).await?.communicate(None).await?;
    ///         Ok::<_, std::io::Error>(String::from_utf8_lossy(&out.stdout).into_owned())
    ///     })
    /// };
    /// assert_eq!(seen(true)??, "closed\n"); // the default
    /// assert_eq!(seen(false)??, "kept\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close_fds(mut self, close: bool) -> Self {
        self.opts.inherit_fds = !close;
        self
    }

    /// Descriptors the child keeps, under the same numbers, even when they are close-on-exec
    /// here (asyncio's and Python's `pass_fds`); the others are closed as
    /// [`close_fds`](Subprocess::close_fds) says. The caller keeps them open until the
    /// child has started.
    ///
    /// ```
    /// use std::io::Read;
    /// use std::os::fd::AsRawFd;
    ///
    /// let (mut r, w) = std::io::pipe()?; // close-on-exec, like every evloop descriptor
    /// let script = format!("echo through >&{}", w.as_raw_fd());
    /// let status = evloop::run(async move {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_shell(&script).pass_fds([w.as_raw_fd()]).await?;
    ///     drop(w); // the child has its own copy now
    ///     child.wait().await
    /// })??;
    /// assert!(status.success());
    /// let mut got = String::new();
    /// r.read_to_string(&mut got)?;
    /// assert_eq!(got, "through\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pass_fds(mut self, fds: impl IntoIterator<Item = RawFd>) -> Self {
        self.opts.pass_fds.extend(fds);
        self
    }
}

impl Options {
    pub(super) fn apply(&self, cmd: &mut Command) {
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

impl IntoFuture for Subprocess {
    type Output = io::Result<Process>;
    /// The child is started when the builder is awaited (`into_future`), as asyncio starts it
    /// when `create_subprocess_exec` is awaited; the spawn itself does not wait.
    type IntoFuture = Ready<io::Result<Process>>;

    fn into_future(self) -> Self::IntoFuture {
        ready(self.spawn())
    }
}
