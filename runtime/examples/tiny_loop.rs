//! A coroutine event loop in about a hundred lines, on `evloop-syscalls` alone: a runnable queue,
//! an epoll instance, a future that waits for one fd, and seed 001's upper-casing echo server on
//! top. Chapter 6 of the book (docs/06-the-100-line-loop.md) reads it, then counts what it costs
//! against evloop. It keeps the seed's two habits on purpose: it registers an fd with epoll for
//! every wait (and removes it after), and it polls with a fixed one-second timeout.
//!
//! `tiny_loop [--once]` prints `listening on ADDR`; with `--once` it exits when its first client
//! leaves, printing the system calls it made (`evloop_syscalls::counters`).

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::future::{Future, poll_fn};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use evloop_syscalls::{self as sys, Domain, EpollEvent, EpollFlags, SockAddr, SockType};

type Task = Pin<Box<dyn Future<Output = io::Result<()>>>>;

/// The runnable queue holds task ids; a task's waker pushes its id.
type Runnable = Arc<Mutex<VecDeque<usize>>>;

fn push(runnable: &Runnable, id: usize) {
    let mut queue = runnable.lock().unwrap_or_else(|e| e.into_inner());
    queue.push_back(id);
}

struct TaskWaker {
    id: usize,
    runnable: Runnable,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        push(&self.runnable, self.id);
    }
}

/// The loop: an epoll instance, the waker parked on each fd, and the tasks.
struct Loop {
    epoll: OwnedFd,
    waiting: RefCell<HashMap<RawFd, Waker>>,
    spawned: RefCell<Vec<Task>>,
}

impl Loop {
    fn spawn(&self, task: impl Future<Output = io::Result<()>> + 'static) {
        self.spawned.borrow_mut().push(Box::pin(task));
    }

    /// Waits until `fd` is ready for `interest`: registers it, parks the task, and is ready
    /// once the loop has seen the event (and unregistered the fd).
    async fn wait(&self, fd: BorrowedFd<'_>, interest: EpollFlags) -> io::Result<()> {
        let raw = fd.as_raw_fd();
        sys::epoll_ctl_add(self.epoll.as_fd(), raw, interest, raw as u64)?;
        let mut parked = false;
        poll_fn(|cx| {
            if parked && !self.waiting.borrow().contains_key(&raw) {
                return Poll::Ready(Ok(()));
            }
            parked = true;
            self.waiting.borrow_mut().insert(raw, cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Runs until every task has finished.
    fn run(&self) -> io::Result<()> {
        let runnable = Runnable::default();
        let mut tasks: Vec<Option<Task>> = Vec::new();
        let mut events = [EpollEvent::zeroed(); 64];
        loop {
            loop {
                for task in self.spawned.borrow_mut().drain(..) {
                    push(&runnable, tasks.len());
                    tasks.push(Some(task));
                }
                let next = runnable.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                let Some(id) = next else { break };
                let Some(task) = tasks[id].as_mut() else { continue };
                let waker = Waker::from(Arc::new(TaskWaker {
                    id,
                    runnable: runnable.clone(),
                }));
                if let Poll::Ready(result) = task.as_mut().poll(&mut Context::from_waker(&waker)) {
                    tasks[id] = None;
                    if let Err(e) = result {
                        eprintln!("task {id}: {e}");
                    }
                }
            }
            if tasks.iter().all(Option::is_none) {
                return Ok(());
            }
            let n = sys::epoll_wait(self.epoll.as_fd(), &mut events, 1000)?; // the seed's 1 s
            for ev in &events[..n] {
                let fd = ev.data() as RawFd;
                sys::epoll_ctl_del(self.epoll.as_fd(), fd)?;
                if let Some(waker) = self.waiting.borrow_mut().remove(&fd) {
                    waker.wake();
                }
            }
        }
    }
}

/// Tries the system call first; waits for readiness only when it would block.
async fn io<T>(
    lp: &Loop,
    fd: BorrowedFd<'_>,
    interest: EpollFlags,
    mut f: impl FnMut() -> io::Result<T>,
) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => lp.wait(fd, interest).await?,
            other => return other,
        }
    }
}

async fn serve(lp: Rc<Loop>, conn: OwnedFd) -> io::Result<()> {
    let mut buf = [0u8; 4096];
    loop {
        let n = io(&lp, conn.as_fd(), EpollFlags::IN, || sys::recv(conn.as_fd(), &mut buf)).await?;
        if n == 0 {
            return Ok(()); // the client closed its side
        }
        buf[..n].make_ascii_uppercase();
        let mut sent = 0;
        while sent < n {
            sent += io(&lp, conn.as_fd(), EpollFlags::OUT, || {
                sys::send(conn.as_fd(), &buf[sent..n])
            })
            .await?;
        }
    }
}

async fn server(lp: Rc<Loop>, listener: OwnedFd, once: bool) -> io::Result<()> {
    loop {
        let (conn, _peer) = io(&lp, listener.as_fd(), EpollFlags::IN, || sys::accept4(listener.as_fd())).await?;
        if once {
            return serve(lp, conn).await;
        }
        lp.spawn(serve(lp.clone(), conn));
    }
}

fn main() -> io::Result<()> {
    let once = std::env::args().any(|a| a == "--once");
    let listener = sys::socket(Domain::Inet, SockType::Stream)?; // non-blocking, close-on-exec
    sys::set_reuseaddr(listener.as_fd(), true)?;
    sys::bind(listener.as_fd(), &SockAddr::Inet(([127, 0, 0, 1], 0).into()))?;
    sys::listen(listener.as_fd(), 128)?;
    println!("listening on {}", sys::local_addr(listener.as_fd())?);
    let lp = Rc::new(Loop {
        epoll: sys::epoll_create1()?,
        waiting: RefCell::new(HashMap::new()),
        spawned: RefCell::new(Vec::new()),
    });
    let before = sys::counters::snapshot();
    lp.spawn(server(lp.clone(), listener, once));
    lp.run()?;
    println!("system calls: {}", sys::counters::snapshot().since(&before));
    Ok(())
}
