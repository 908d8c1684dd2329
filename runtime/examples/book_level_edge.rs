//! The programs behind chapter 9 of the book (docs/09-level-and-edge.md):
//!
//! - `epoll`: one pipe watched by two epoll instances, one level-triggered and one
//!   edge-triggered, polled side by side (raw `evloop-syscalls`, no loop): level-triggered
//!   reports unread data at every poll, edge-triggered once per arrival, and a reader that stops
//!   before `EAGAIN` is never told about the rest.
//! - `evloop`: the same pipe read a little at a time through evloop's `AsyncFd`, which keeps
//!   readiness until a read says `EAGAIN`.
//! - `spin`: a task that wakes itself in a loop, and a reader whose data arrives meanwhile: the
//!   loop polls for I/O between every two steps of the spinner.

use std::error::Error;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use evloop::io::{AsyncFd, Interest};
use evloop_syscalls as sys;
use sys::{EpollEvent, EpollFlags};

/// What a zero-timeout poll of `epfd` reports: `EPOLLIN`, or `-` for nothing.
fn poll_now(epfd: BorrowedFd<'_>) -> Result<&'static str, Box<dyn Error>> {
    let mut events = [EpollEvent::zeroed(); 4];
    let n = sys::epoll_wait(epfd, &mut events, 0)?;
    Ok(if n > 0 && events[0].flags().contains(EpollFlags::IN) {
        "EPOLLIN"
    } else {
        "-"
    })
}

fn epoll() -> Result<(), Box<dyn Error>> {
    let (r, w) = sys::pipe2()?;
    let level = sys::epoll_create1()?;
    let edge = sys::epoll_create1()?;
    sys::epoll_ctl_add(level.as_fd(), std::os::fd::AsRawFd::as_raw_fd(&r), EpollFlags::IN, 1)?;
    let et = EpollFlags::IN.union(EpollFlags::ET);
    sys::epoll_ctl_add(edge.as_fd(), std::os::fd::AsRawFd::as_raw_fd(&r), et, 1)?;
    let mut polls = 0;
    let mut poll = |what: &str| -> Result<(), Box<dyn Error>> {
        polls += 1;
        let (l, e) = (poll_now(level.as_fd())?, poll_now(edge.as_fd())?);
        println!("poll {polls}: level-triggered {l:<7} edge-triggered {e:<7} {what}");
        Ok(())
    };
    poll("(empty pipe)")?;
    sys::write(w.as_fd(), b"abcdef")?;
    println!("write \"abcdef\": one write, one edge");
    poll("")?;
    poll("(nothing read, nothing new)")?;
    let mut buf = [0u8; 2];
    let n = sys::read(r.as_fd(), &mut buf)?;
    println!(
        "read {n} bytes {:?}: 4 left, and the reader waits for the next event",
        String::from_utf8_lossy(&buf[..n])
    );
    poll("(4 bytes waiting)")?;
    poll("(4 bytes waiting)")?;
    sys::write(w.as_fd(), b"g")?;
    println!("write \"g\": a new edge");
    poll("")?;
    let mut rest = Vec::new();
    let mut chunk = [0u8; 64];
    loop {
        match sys::read(r.as_fd(), &mut chunk) {
            Ok(n) => rest.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e.into()),
        }
    }
    println!("read until EAGAIN: {:?}", String::from_utf8_lossy(&rest));
    poll("(empty pipe)")?;
    Ok(())
}

async fn on_evloop() -> Result<(), Box<dyn Error>> {
    let (r, w) = sys::pipe2()?;
    let r = AsyncFd::new(r)?; // edge-triggered, like every evloop registration of a socket or pipe
    sys::write(w.as_fd(), b"abcdef")?; // one edge
    loop {
        let mut buf = [0u8; 2];
        match evloop::time::timeout(
            Duration::from_millis(50),
            r.io(Interest::Read, |fd| sys::read(fd.as_fd(), &mut buf)),
        )
        .await
        {
            Ok(Ok(n)) => println!("read {:?}", String::from_utf8_lossy(&buf[..n])),
            Ok(Err(e)) => return Err(e.into()),
            Err(_) => {
                println!("nothing for 50 ms: the pipe is empty");
                return Ok(());
            }
        }
        evloop::task::yield_now().await; // stop early: the next read comes an iteration later
    }
}

async fn spin() -> Result<(), Box<dyn Error>> {
    let (r, w) = sys::pipe2()?;
    let reader = evloop::task::TaskBuilder::new().name("reader").spawn(async move {
        let r = AsyncFd::new(r)?;
        let mut buf = [0u8; 16];
        let n = r.io(Interest::Read, |fd| sys::read(fd.as_fd(), &mut buf)).await?;
        println!("reader: got {:?}", String::from_utf8_lossy(&buf[..n]));
        Ok::<(), std::io::Error>(())
    })?;
    let spinner = evloop::task::TaskBuilder::new().name("spinner").spawn(async move {
        for i in 1..=4 {
            println!("spinner: turn {i}");
            if i == 2 {
                let _ = sys::write(w.as_fd(), b"ping"); // data for the reader, mid-spin
            }
            evloop::task::yield_now().await; // wakes itself: ready again at once
        }
    })?;
    spinner.await?;
    reader.await??;
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    match std::env::args().nth(1).unwrap_or_default().as_str() {
        "epoll" => epoll(),
        "evloop" => evloop::run(on_evloop())?,
        "spin" => evloop::run(spin())?,
        _ => Err("usage: book_level_edge epoll | evloop | spin".into()),
    }
}
