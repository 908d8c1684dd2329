//! The process-wide reaper thread: it reaps the children whose loop can no longer do it (the
//! loop closed with the child still running). Loops hand pidfds over through a queue and an
//! eventfd; the thread waits for all of them at once in its own epoll instance.

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use evloop_syscalls::{self as sys, EpollEvent, EpollFlags};

/// Reaps the child now if it has exited, else hands it to the reaper thread.
pub(super) fn reap_later(pidfd: OwnedFd) {
    if let Ok(None) = sys::waitid_pidfd(pidfd.as_fd(), true) {
        Reaper::hand_over(pidfd);
    }
}

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
