//! The child handle: [`Process`] waits for its child (readiness of the pidfd, then one
//! `waitid`), signals it through the pidfd, and feeds and drains its pipes (`communicate`).
//! Dropping it hands an unreaped child to `orphan`. Without pidfds (`watcher`), the registered
//! fd is the waiter thread's eventfd, and reaping and signals go by pid through the `Watch`.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use evloop_syscalls::{self as sys, Signal};

use crate::event_loop::LoopHandle;
use crate::io::error::with_context;
use crate::io::pipe::{PipeReader, PipeWriter};
use crate::io::{AsyncFd, AsyncReadExt, AsyncWriteExt, Interest};
use crate::os::process::orphan::orphan;
use crate::os::process::status::{ExitStatus, Output, describe_signal};
use crate::os::process::watcher::Watch;
use crate::task::combinator::gather;

/// A child process started by [`LoopHandle::subprocess_exec`] or
/// [`LoopHandle::subprocess_shell`] (asyncio's `asyncio.subprocess.Process`).
///
/// Take the pipe ends out of the public fields to use them (`p.stdout.take()`); dropping an
/// end closes it. Dropping the `Process` does not kill the child; the loop reaps it when it
/// exits (see the [`process`](crate::process) module docs).
///
/// ```
/// let (stdout, code) = evloop::run(async {
///     let lp = evloop::event_loop::get_running_loop()?;
///     // proc = await asyncio.create_subprocess_exec('sh', '-c', ..., stdout=PIPE)
///     let mut proc = lp.subprocess_exec("sh", ["-c", "echo hi; exit 2"]).piped().await?;
///     let out = proc.communicate(None).await?;
///     Ok::<_, std::io::Error>((out.stdout, proc.returncode().and_then(|s| s.code())))
/// })??;
/// assert_eq!((stdout.as_slice(), code), (&b"hi\n"[..], Some(2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Process {
    pub(super) pid: u32,
    /// The child's pidfd, registered with the loop; `None` once reaped (or lost to `ECHILD`).
    /// Without pidfds, the waiter thread's eventfd (readable once the child has exited).
    pub(super) pidfd: RefCell<Option<AsyncFd<OwnedFd>>>,
    /// The waiter thread's state when the child is watched without a pidfd (`watcher`).
    pub(super) watch: Option<Arc<Watch>>,
    pub(super) status: Cell<Option<ExitStatus>>,
    /// The write end of the child's stdin, if it was [`Stdio::Pipe`](crate::process::Stdio::Pipe).
    pub stdin: Option<PipeWriter>,
    /// The read end of the child's stdout, if it was [`Stdio::Pipe`](crate::process::Stdio::Pipe).
    pub stdout: Option<PipeReader>,
    /// The read end of the child's stderr, if it was [`Stdio::Pipe`](crate::process::Stdio::Pipe).
    pub stderr: Option<PipeReader>,
    pub(super) lp: LoopHandle,
}

impl Process {
    /// The child's process id.
    ///
    /// ```
    /// use evloop::process::Stdio;
    ///
    /// let (pid, said) = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_shell("echo $$").stdout(Stdio::Pipe).await?;
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sleep", ["60"]).await?;
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sh", ["-c", "exit 4"]).await?;
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
        let reaped = match &self.watch {
            Some(w) => w.try_reap(),
            None => sys::waitid_pidfd(fd.as_fd(), true),
        };
        match reaped {
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sleep", ["10"]).await?;
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
        let sent = match (slot.as_ref(), &self.watch) {
            (Some(_), Some(w)) => w.signal(sig),
            (Some(fd), None) => Some(sys::pidfd_send_signal(fd.as_fd(), sig)),
            (None, _) => None,
        };
        match sent {
            Some(r) => r.map_err(|e| with_context(what, e)),
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("sleep", ["60"]).await?;
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
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_shell("trap '' TERM; exec sleep 60").await?; // ignores SIGTERM ...
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
    /// let out = evloop::run(async {
    ///     let lp = evloop::event_loop::get_running_loop()?;
    ///     let mut child = lp.subprocess_exec("cat", [""; 0]).piped().await?;
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
    /// A child not reaped yet becomes the loop's orphan (see the `process` module docs);
    /// nothing blocks.
    fn drop(&mut self) {
        if let Some(fd) = self.pidfd.get_mut().take() {
            match &self.watch {
                // The waiter thread reaps it (or it is reaped now, if it has exited).
                Some(w) => {
                    w.orphan();
                    drop(fd);
                }
                None => orphan(&self.lp, fd),
            }
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
