//! What `/proc/self/task/<tid>/syscall` says about a thread of this process: whether it is
//! blocked in the loop's poll, and with which timeout. Reading it needs ptrace access to our
//! own threads, which some sandboxes deny; callers decide what to do then. Also the threads of
//! this process by name ([`threads_named`]), for tests that check evloop joined its threads.

use std::time::{Duration, Instant};

/// A thread seen blocked in the loop's poll (`epoll_pwait2`, `epoll_wait`, or `epoll_pwait`,
/// which is how glibc issues `epoll_wait` where there is no such system call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InPoll {
    /// The timeout argument means "forever" (a NULL timespec for `epoll_pwait2`, -1 for the
    /// others).
    pub no_timeout: bool,
}

/// The path of the `syscall` file of thread `tid` of this process.
pub fn syscall_path(tid: libc::pid_t) -> String {
    format!("/proc/self/task/{tid}/syscall")
}

/// Whether `nr` is one of the system calls the loop polls with.
fn is_poll(nr: libc::c_long) -> bool {
    // aarch64 has no epoll_wait system call: glibc issues epoll_pwait.
    #[cfg(target_arch = "x86_64")]
    if nr == libc::SYS_epoll_wait {
        return true;
    }
    nr == libc::SYS_epoll_pwait2 || nr == libc::SYS_epoll_pwait
}

/// Parses the contents of a `syscall` file: `Some` when the thread is blocked in the loop's
/// poll, `None` when it runs (`running`) or is in another system call.
pub fn parse_poll(text: &str) -> Option<InPoll> {
    let fields: Vec<&str> = text.split_whitespace().collect();
    let nr = fields.first()?.parse::<libc::c_long>().ok()?;
    if !is_poll(nr) {
        return None;
    }
    // Fields 1..=6 are the arguments in hex; the timeout is the fourth.
    let arg = fields
        .get(4)
        .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
        .unwrap_or(1);
    let no_timeout = if nr == libc::SYS_epoll_pwait2 {
        arg == 0
    } else {
        arg as u32 as i32 == -1
    };
    Some(InPoll { no_timeout })
}

/// The calling thread's kernel id (from the `/proc/thread-self` link), or `None` where `/proc`
/// does not say.
pub fn current_tid() -> Option<libc::pid_t> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// Waits (up to `limit`) until thread `tid` of this process is blocked in the loop's poll with no
/// timeout (an idle loop: it sleeps until something wakes it); `false` if that was not seen in
/// time, or cannot be seen here (no tid, or its `syscall` file is not readable).
pub fn wait_until_blocked_in_poll_forever(tid: Option<libc::pid_t>, limit: Duration) -> bool {
    let Some(tid) = tid else { return false };
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        match std::fs::read_to_string(syscall_path(tid)) {
            Ok(s) if parse_poll(&s) == Some(InPoll { no_timeout: true }) => return true,
            Ok(_) => std::thread::sleep(Duration::from_micros(200)),
            Err(_) => return false,
        }
    }
    false
}

/// How many threads of this process have a name (`/proc/self/task/*/comm`, which the kernel cuts
/// to 15 bytes) starting with `prefix`. A test that checks evloop left no thread behind counts
/// evloop's threads this way (`evloop-loop-N`, `evloop-N-executor`, `evloop-child-...`), not every
/// thread of the process: libtest's threads for the binary's other tests come and go meanwhile.
///
/// ```
/// assert_eq!(evloop_tests::procfs::threads_named("no-such-thread-"), 0);
/// ```
pub fn threads_named(prefix: &str) -> usize {
    let prefix = &prefix[..prefix.len().min(15)];
    std::fs::read_dir("/proc/self/task")
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(prefix)))
                .count()
        })
        .unwrap_or(0)
}
