//! Benchmark peer: no runtime at all, a hand-written epoll loop, the practical lower bound of a
//! server's overhead, for `make bench`'s side-by-side runs (tests/examples/bench/main.rs drives it;
//! the interface is in tests/bench/README.md, the same for every peer).
//!
//! ```text
//! cargo build --release -p evloop-tests --no-default-features --examples
//! target/release/examples/peer_raw echo --port 0
//! ```
//!
//! Only `echo` is measured; every other subcommand prints `{"na":...}` (there are no tasks,
//! timers or callbacks to measure). The loop uses evloop's safe syscall wrappers
//! (`evloop_syscalls`: no `unsafe` here) and nothing else:
//! - the listening socket is registered level-triggered (`EPOLLIN`) and drained with `accept4`
//!   (up to 128 per event);
//! - each connection is registered once, edge-triggered (`EPOLLIN | EPOLLOUT | EPOLLRDHUP |
//!   EPOLLET`, like evloop's socket registrations), so steady-state echo makes no `epoll_ctl`;
//! - the connection table is a `Vec<Option<Conn>>` indexed by fd number (the epoll token);
//! - one 64 KiB receive buffer for the whole loop; `recv`, then `send` the same bytes at once;
//!   a short read (fewer bytes than the buffer) means the socket's queue was empty, so no extra
//!   `recv` that would return EAGAIN (the next bytes raise a new edge) unless the peer hung up;
//! - a `send` that cannot take everything leaves the rest in the connection's `pending` buffer
//!   and the connection stops reading (back-pressure) until an `EPOLLOUT` edge flushes it.
//!
//! So a round trip costs one `recv` + one `send` + a share of one `epoll_wait`. Known
//! shortcuts a real server could not take: an fd closed and reused within one batch of events
//! may get a stale event meant for the old connection (harmless here: at worst a `recv` that
//! returns EAGAIN); EMFILE on accept is printed and retried at the next event (level-triggered,
//! so it would spin).

/// The command line, the echo server's banner and stdin watcher: the same for every Rust peer.
#[path = "peer_common/mod.rs"]
#[allow(dead_code)] // the measuring part: this peer measures nothing but echo
mod common;

use std::error::Error;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::process::ExitCode;

use evloop_syscalls::{self as sys, AsFd, AsRawFd, Domain, EpollEvent, EpollFlags, OwnedFd, SockAddr, SockType};

use common::{Cmd, announce, exit_at_stdin_eof, peer_main, print_na};

const READ_SIZE: usize = 64 * 1024;
const LISTENER: u64 = u64::MAX;
const ACCEPTS_PER_EVENT: usize = 128;

fn main() -> ExitCode {
    peer_main("peer_raw", &["default"], |cmd| {
        let na = match cmd {
            Cmd::Echo { port, .. } => return echo(port),
            Cmd::Timers { .. } => "no timers in the raw epoll loop",
            Cmd::Spawn { .. } => "no tasks in the raw epoll loop",
            Cmd::CallSoon { .. } => "no call_soon in the raw epoll loop",
            Cmd::PromiseChain { .. } => "no promises in the raw epoll loop",
            Cmd::Threadsafe { .. } => "no cross-thread wake-up in the raw epoll loop",
            Cmd::IdleTasks { .. } => "no tasks in the raw epoll loop",
            Cmd::TimerWake { .. } => "no timers in the raw epoll loop",
            Cmd::ThreadWake { .. } => "no tasks in the raw epoll loop",
        };
        print_na(na);
        Ok(())
    })
}

/// One connection: its socket and the bytes it could not send yet.
struct Conn {
    fd: OwnedFd,
    pending: Vec<u8>,
    sent: usize,
}

impl Conn {
    /// Sends what is pending: `Ok(true)` when all of it went, `Ok(false)` on EAGAIN.
    fn flush(&mut self) -> std::io::Result<bool> {
        while self.sent < self.pending.len() {
            match sys::send(self.fd.as_fd(), &self.pending[self.sent..]) {
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        self.pending.clear();
        self.sent = 0;
        Ok(true)
    }

    /// Handles one event; `Ok(false)` when the connection is finished (EOF).
    fn serve(&mut self, flags: EpollFlags, buf: &mut [u8]) -> std::io::Result<bool> {
        if !self.pending.is_empty() && !self.flush()? {
            return Ok(true); // still blocked: wait for the next EPOLLOUT edge
        }
        let hung_up = flags.intersects(EpollFlags::RDHUP | EpollFlags::HUP | EpollFlags::ERR);
        loop {
            let n = match sys::recv(self.fd.as_fd(), buf) {
                Ok(0) => return Ok(false),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(true),
                Err(e) => return Err(e),
            };
            let mut sent = 0;
            while sent < n {
                match sys::send(self.fd.as_fd(), &buf[sent..n]) {
                    Ok(k) => sent += k,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        self.pending.extend_from_slice(&buf[sent..n]);
                        return Ok(true); // stop reading until EPOLLOUT
                    }
                    Err(e) => return Err(e),
                }
            }
            if n < buf.len() && !hung_up {
                return Ok(true); // a short read emptied the queue
            }
        }
    }
}

fn accept_all(ep: &OwnedFd, listener: &OwnedFd, conns: &mut Vec<Option<Conn>>) {
    for _ in 0..ACCEPTS_PER_EVENT {
        let fd = match sys::accept4(listener.as_fd()) {
            Ok((fd, _peer)) => fd,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) if e.raw_os_error() == Some(sys::errno::ECONNABORTED) => continue,
            Err(e) => return eprintln!("accept4: {e}"),
        };
        let _ = sys::set_nodelay(fd.as_fd(), true);
        let raw = fd.as_raw_fd();
        let Ok(slot) = usize::try_from(raw) else { continue };
        let interest = EpollFlags::IN | EpollFlags::OUT | EpollFlags::RDHUP | EpollFlags::ET;
        if let Err(e) = sys::epoll_ctl_add(ep.as_fd(), raw, interest, slot as u64) {
            eprintln!("epoll_ctl(ADD, {raw}): {e}");
            continue; // dropping fd closes it
        }
        if conns.len() <= slot {
            conns.resize_with(slot + 1, || None);
        }
        conns[slot] = Some(Conn {
            fd,
            pending: Vec::new(),
            sent: 0,
        });
    }
}

fn echo(port: u16) -> Result<(), Box<dyn Error>> {
    exit_at_stdin_eof();
    let listener = sys::socket(Domain::Inet, SockType::Stream)?;
    sys::set_reuseaddr(listener.as_fd(), true)?;
    sys::bind(
        listener.as_fd(),
        &SockAddr::Inet(SocketAddr::from(([127, 0, 0, 1], port))),
    )?;
    sys::listen(listener.as_fd(), 1024)?;
    let addr = sys::local_addr(listener.as_fd())?;
    let ep = sys::epoll_create1()?;
    sys::epoll_ctl_add(ep.as_fd(), listener.as_raw_fd(), EpollFlags::IN, LISTENER)?;
    announce(addr.as_inet().ok_or("no TCP address")?)?;

    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut buf = vec![0u8; READ_SIZE];
    let mut events = vec![EpollEvent::zeroed(); 1024];
    loop {
        let n = sys::epoll_wait(ep.as_fd(), &mut events, -1)?; // EINTR comes back as 0 events
        for ev in &events[..n] {
            let token = ev.data();
            if token == LISTENER {
                accept_all(&ep, &listener, &mut conns);
                continue;
            }
            let Some(slot) = conns.get_mut(token as usize) else {
                continue;
            };
            let Some(conn) = slot.as_mut() else { continue };
            match conn.serve(ev.flags(), &mut buf) {
                Ok(true) => {}
                Ok(false) | Err(_) => *slot = None, // closing the fd removes it from the epoll set
            }
        }
    }
}
