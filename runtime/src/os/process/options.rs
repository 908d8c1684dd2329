//! How to start a child: [`SubprocessOptions`] (stdio, environment, working directory, which
//! fds it inherits) and [`Stdio`]; `spawn` applies them to the `std::process::Command` it builds.

use std::ffi::{OsStr, OsString};
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::process::Command;

/// Where a child's stdin, stdout or stderr goes.
///
/// ```
/// use evloop::process::{Stdio, SubprocessOptions};
///
/// let out = evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let opts = SubprocessOptions::new().stdout(Stdio::Pipe).stderr(Stdio::Null); // PIPE, DEVNULL
///     let mut child = lp.subprocess_shell_with("echo out; echo err >&2", &opts)?;
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
#[must_use = "builders do nothing until they are built, run or awaited"]
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
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
    /// use evloop::io::AsyncWriteExt;
    ///
    /// let out = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
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
    /// use evloop::io::AsyncReadExt;
    ///
    /// let text = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
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
    /// let (_r, w) = evloop_syscalls::pipe2()?; // the syscall layer, for a descriptor without close-on-exec
    /// evloop_syscalls::set_cloexec(w.as_raw_fd(), false)?; // as an inherited descriptor would be
    /// let probe = format!("[ -e /proc/self/fd/{} ] && echo kept || echo closed", w.as_raw_fd());
    /// let seen = |opts: SubprocessOptions| {
    ///     let probe = probe.clone();
    ///     evloop::run(async move {
    ///         let lp = evloop::event_loop::get_running_loop()?;
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
    /// let (mut r, w) = std::io::pipe()?; // close-on-exec, like every evloop descriptor
    /// let script = format!("echo through >&{}", w.as_raw_fd());
    /// let opts = SubprocessOptions::new().pass_fds([w.as_raw_fd()]);
    /// let status = evloop::run(async move {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_shell_with(&script, &opts)?;
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
        self.pass_fds.extend(fds);
        self
    }

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
