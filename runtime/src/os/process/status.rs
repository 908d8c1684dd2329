//! How a child ended ([`ExitStatus`], with asyncio's `returncode` and a readable `Display`)
//! and what `communicate` collected ([`Output`]).

use std::fmt;

use evloop_syscalls as sys;

/// How a child ended.
///
/// ```
/// let status = evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     lp.subprocess_exec("sh", ["-c", "exit 7"]).await?.wait().await
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     lp.subprocess_exec("false", [""; 0]).await?.wait().await
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sleep", ["60"]).await?;
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sleep", ["60"]).await?;
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let ok = lp.subprocess_exec("true", [""; 0]).await?.wait().await?;
    ///     let failed = lp.subprocess_exec("false", [""; 0]).await?.wait().await?;
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sleep", ["60"]).await?;
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

pub(super) fn describe_signal(sig: i32) -> String {
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

/// What [`Process::communicate`](crate::process::Process::communicate) collected.
///
/// ```
/// let out = evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     let mut child = lp.subprocess_exec("sh", ["-c", "cat; echo done >&2"]).piped().await?;
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
