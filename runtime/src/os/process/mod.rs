//! Subprocesses (asyncio's `create_subprocess_exec` / `create_subprocess_shell`), watched
//! through pidfds (or, where there are none, a waiter thread per child).
//!
//! # Spawning
//! [`LoopHandle::subprocess_exec`](crate::event_loop::LoopHandle::subprocess_exec) builds a
//! [`std::process::Command`], and awaiting the [`Subprocess`] it returns spawns it: the child gets only the fds asked for (every fd
//! evloop opens is close-on-exec), and its signal mask and `SIGPIPE` disposition are reset to
//! the defaults before `exec` (`reset_signals_on_exec`: std's `Command` alone would keep the
//! mask, and the loop blocks `SIGPIPE` while it has pipe writers). The pipe ends evloop keeps
//! become [`PipeWriter`](crate::pipe::PipeWriter) / [`PipeReader`](crate::pipe::PipeReader) on
//! the loop. Right after the spawn, `pidfd_open` gives a descriptor that names the child itself,
//! not its number, and the loop registers it like any other fd. A program that cannot be started
//! is an error naming it (`subprocess_exec(no-such-prog): No such file or directory (os error 2)`).
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
//! # Without pidfds
//! A pidfd needs Linux 5.3 (and `waitid(P_PIDFD)` 5.4); valgrind does not know `pidfd_open`, and
//! a seccomp filter may refuse it. When `pidfd_open` fails with `ENOSYS` or `EPERM`, the child
//! is watched by a waiter thread instead (asyncio's `ThreadedChildWatcher`, `watcher`): it waits
//! with `waitid(P_PID, pid, WEXITED | WNOWAIT)`, which does not reap, and then makes an eventfd
//! readable; the loop registers that eventfd in place of the pidfd, so waiting is the same, and
//! the child is reaped with `waitid(P_PID, ..)`. Until it is reaped the pid is still the child's,
//! so signals go by pid (`kill`) without reaching another process. A dropped `Process` leaves the
//! reaping to its thread. The cost: a thread (64 KiB of stack) and an eventfd per running child.
//!
//! If the process sets `SIGCHLD` to `SIG_IGN`, or other code reaps with `waitpid(-1, ..)`, the
//! kernel or that code may reap our children first: `wait` then reports `ECHILD`.
//!
//! # Files
//! `options` (the [`Subprocess`] builder, [`Stdio`]), `status` ([`ExitStatus`], [`Output`]), `spawn`
//! (`subprocess_exec` and `subprocess_shell` on the loop handle: from a `Command` to a
//! registered pidfd and pipe ends), `child` ([`Process`]: waiting, signals, `communicate`),
//! `orphan` (a dropped `Process`'s child, reaped by its loop), `reaper` (the process-wide
//! reaper thread for children whose loop is gone) and `watcher` (a waiter thread per child,
//! without pidfds).

mod child;
mod options;
mod orphan;
mod reaper;
mod spawn;
mod status;
mod watcher;

pub use self::child::Process;
pub use self::options::{Stdio, Subprocess};
pub use self::status::{ExitStatus, Output};
