//! EMFILE on accept (CPython #151615, python/asyncio #78, tokio #3529): a protocol server that
//! runs out of fds keeps serving, backs off for its accept retry delay (asyncio's
//! `ACCEPT_RETRY_DELAY`), sheds the connections it cannot take if the condition outlasts that
//! delay (libuv's reserve-fd trick), tells its exception handler (`ServerError`), does not
//! spin, and accepts again once fds are free.
//!
//! The real thing lowers `RLIMIT_NOFILE`, which is per process, so it runs in a child process
//! (this binary re-run with `--exact` and an environment variable); the parent checks the
//! child's exit status and prints its output on failure. The in-process tests inject EMFILE
//! into `accept4` with `evloop_syscalls::fault` instead, which is per thread.

use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::net::{Domain, SockAddr, SockType, Socket, TcpStream};
use evloop::sys::{Syscall, fault};
use evloop::{
    event_loop::ExceptionKind,
    io::{AsyncReadExt, AsyncWriteExt},
    time::sleep,
};
use evloop_syscalls as sys;
use evloop_tests::fds::{open_fd_count, open_fds};
use evloop_tests::net::Echo;
use evloop_tests::{child, new_loop, record_exception_messages, run_bounded, spin_once};

/// Free fd numbers left below the lowered limit.
const HEADROOM: usize = 6;
/// Clients connected while the server can take only `HEADROOM` of them.
const FIRST_WAVE: usize = 14;
/// Clients connected one by one while the server is out of fds (the no-spin check).
const SECOND_WAVE: usize = 8;
/// Clients connected after some fds were freed.
const THIRD_WAVE: usize = 4;

const CHILD_ENV: &str = "EVLOOP_NET_EMFILE_CHILD";

// ---------------------------------------------------------------------------------------------
// Helpers (this file only).

/// The server's pause between accept attempts while out of fds.
const RETRY: Duration = Duration::from_millis(100);

/// Connects an already created socket (no new fd needed) to `addr`.
async fn connect_prepared(fd: OwnedFd, addr: SocketAddr) -> io::Result<TcpStream> {
    let s = Socket::from_fd(fd)?;
    s.connect(&SockAddr::Inet(addr)).await?;
    TcpStream::from_std(std::net::TcpStream::from(s.into_fd()))
}

/// Whether the server echoes on `c` (`Some(true)`), or closed it unserved (`Some(false)`: EOF
/// or reset); `None` if neither happened within a second.
async fn served(c: &mut TcpStream) -> Option<bool> {
    if c.write_all(b"ping").await.is_err() {
        return Some(false);
    }
    let mut buf = [0u8; 4];
    match evloop::time::timeout(Duration::from_secs(1), c.read_exact(&mut buf)).await {
        Ok(Ok(_)) => Some(&buf == b"ping"),
        Ok(Err(_)) => Some(false),
        Err(_) => None,
    }
}

// ---------------------------------------------------------------------------------------------
// The real EMFILE, in a child process.

/// The child's scenario (see the module docs). Prints what it sees; panics on a failure.
fn emfile_scenario() {
    let start_fds = open_fd_count();
    let (soft, hard) = sys::nofile_limit().unwrap();
    let lp = new_loop();
    spin_once(&lp);
    let seen = record_exception_messages(&lp);
    let h = lp.handle();
    let lp2 = h.clone();
    run_bounded(&lp, async move {
        let server = h.create_server(Echo::new, "127.0.0.1", 0).await.unwrap();
        server.set_accept_retry_delay(RETRY).unwrap();
        let addr = server.local_addr();

        // Every client socket is created now, while fds are plentiful.
        let mut prepared: Vec<OwnedFd> = (0..FIRST_WAVE + SECOND_WAVE + THIRD_WAVE)
            .map(|_| sys::socket(Domain::Inet, SockType::Stream).unwrap())
            .collect();
        // Fill every hole below the highest open fd, so that exactly HEADROOM numbers stay free
        // under the new limit (the kernel hands out the lowest free number).
        let highest = *open_fds().last().unwrap();
        let mut fillers = Vec::new();
        loop {
            let f = sys::open_dev_null().unwrap();
            if f.as_raw_fd() > highest {
                break;
            }
            fillers.push(f);
        }
        let limit = (highest + 1) as u64 + HEADROOM as u64;
        sys::set_nofile_limit(limit, hard).unwrap();
        println!(
            "fds: start {start_fds}, highest {highest}, fillers {}, limit {limit}",
            fillers.len()
        );

        // Wave 1: more clients than free fds.
        let mut wave1 = Vec::new();
        for _ in 0..FIRST_WAVE {
            wave1.push(connect_prepared(prepared.pop().unwrap(), addr).await.unwrap());
        }
        sleep(Duration::from_millis(50)).await;
        let mut accepted = Vec::new();
        let mut dropped = Vec::new();
        for mut c in wave1 {
            match served(&mut c).await {
                Some(true) => accepted.push(c),
                Some(false) => dropped.push(c),
                None => panic!("a client was neither served nor shed"),
            }
        }
        let shed1 = server.shed_connections();
        println!(
            "wave 1: {} served, {} shed (server says {shed1}), {} exception(s)",
            accepted.len(),
            dropped.len(),
            seen.borrow().len()
        );
        assert!(server.is_serving(), "the server stopped serving");
        assert_eq!(accepted.len(), HEADROOM, "the server takes what fits under the limit");
        assert_eq!(dropped.len(), FIRST_WAVE - HEADROOM);
        assert_eq!(shed1, (FIRST_WAVE - HEADROOM) as u64, "every other connection was shed");
        {
            let seen = seen.borrow();
            assert!(!seen.is_empty(), "the exception handler was not told");
            for (kind, msg) in seen.iter() {
                assert_eq!(*kind, ExceptionKind::ServerError, "{msg}");
                assert!(msg.contains("Too many open files"), "{msg}");
            }
            // First a back-off, then, the condition lasting, the shedding.
            assert!(seen[0].1.contains("retrying in"), "{}", seen[0].1);
            assert!(seen.iter().any(|(_, m)| m.contains("shed 8")), "{seen:?}");
            println!("first report: {}", seen[0].1);
        }

        // Out of fds, the loop must idle, not spin: first with nothing happening...
        let it0 = lp2.stats().iterations;
        sleep(Duration::from_millis(300)).await;
        let idle = lp2.stats().iterations - it0;
        // ... then with a new connection every 20 ms, each of which is shed.
        let it1 = lp2.stats().iterations;
        let started = Instant::now();
        let mut wave2 = Vec::new();
        for _ in 0..SECOND_WAVE {
            wave2.push(connect_prepared(prepared.pop().unwrap(), addr).await.unwrap());
            sleep(Duration::from_millis(20)).await;
        }
        // The server accepts (sheds) only every RETRY while out of fds: give it two rounds.
        sleep(RETRY * 2).await;
        let busy = lp2.stats().iterations - it1;
        println!(
            "out of fds: {idle} iterations in 300 ms idle, {busy} iterations for {SECOND_WAVE} shed connections in {:?}",
            started.elapsed()
        );
        assert!(
            idle <= 10,
            "the loop spins while out of fds: {idle} iterations in 300 ms"
        );
        assert!(
            busy <= 20 * SECOND_WAVE as u64,
            "the loop spins while shedding: {busy} iterations for {SECOND_WAVE} connections"
        );
        assert_eq!(server.shed_connections(), shed1 + SECOND_WAVE as u64);
        for mut c in wave2 {
            assert_eq!(served(&mut c).await, Some(false), "shed while out of fds");
        }

        // Free fds: close the shed clients and two served ones.
        drop(dropped);
        accepted.truncate(HEADROOM - 2);
        sleep(Duration::from_millis(50)).await;
        let shed_before = server.shed_connections();
        let mut wave3 = Vec::new();
        for _ in 0..THIRD_WAVE {
            wave3.push(connect_prepared(prepared.pop().unwrap(), addr).await.unwrap());
        }
        for c in wave3.iter_mut() {
            assert_eq!(served(c).await, Some(true), "new connections are accepted again");
        }
        for c in accepted.iter_mut() {
            assert_eq!(served(c).await, Some(true), "old connections still work");
        }
        assert_eq!(server.shed_connections(), shed_before, "nothing shed once fds are free");
        println!("wave 3: {THIRD_WAVE} new connections served after fds were freed");

        drop(wave3);
        drop(accepted);
        for _ in 0..200 {
            if server.active_connections() == 0 {
                break;
            }
            sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(server.active_connections(), 0);
        server.close();
        server.wait_closed().await;
        drop(fillers);
        drop(prepared);
    });
    lp.close().unwrap();
    drop(lp);
    sys::set_nofile_limit(soft, hard).unwrap();
    let end_fds = open_fd_count();
    println!("fds at the end: {end_fds} (start {start_fds})");
    assert_eq!(end_fds, start_fds, "/proc/self/fd is back to its starting count");
}

#[test]
fn a_server_out_of_fds_sheds_connections_keeps_serving_without_spinning_and_recovers() {
    if child::is_child(CHILD_ENV) {
        emfile_scenario();
        return;
    }
    let out = child::run(
        &evloop_tests::test_name!("a_server_out_of_fds_sheds_connections_keeps_serving_without_spinning_and_recovers"),
        CHILD_ENV,
    );
    child::assert_success("EMFILE child", &out);
}

// ---------------------------------------------------------------------------------------------
// Injected EMFILE, in process.

#[test]
fn an_injected_emfile_on_accept_backs_off_and_the_connection_is_served_after_the_retry() {
    let lp = new_loop();
    spin_once(&lp);
    let seen = record_exception_messages(&lp);
    let h = lp.handle();
    run_bounded(&lp, async move {
        let server = h.create_server(Echo::new, "127.0.0.1", 0).await.unwrap();
        server.set_accept_retry_delay(RETRY).unwrap();
        let addr = server.local_addr();
        fault::fail_nth(Syscall::Accept4, 1, sys::errno::EMFILE);
        let started = Instant::now();
        let mut a = TcpStream::connect(addr).await.unwrap();
        assert_eq!(served(&mut a).await, Some(true), "served once the retry delay is over");
        assert!(started.elapsed() >= RETRY, "not before the retry delay");
        assert_eq!(server.shed_connections(), 0, "a moment out of fds sheds nothing");
        let mut b = TcpStream::connect(addr).await.unwrap();
        assert_eq!(served(&mut b).await, Some(true), "the next connection is served");
        assert!(server.is_serving());
        server.close();
    });
    let seen = seen.borrow();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].0, ExceptionKind::ServerError);
    println!("reported: {}", seen[0].1);
    assert!(seen[0].1.contains("retrying in 100ms"), "{}", seen[0].1);
}

#[test]
fn without_its_spare_fd_a_server_out_of_fds_pauses_instead_of_spinning_and_serves_later() {
    let lp = new_loop();
    spin_once(&lp);
    let seen = record_exception_messages(&lp);
    let h = lp.handle();
    let iterations = Rc::new(Cell::new(0u64));
    let it = iterations.clone();
    let waited = Rc::new(RefCell::new(Duration::ZERO));
    let w = waited.clone();
    // The spare fd can never be opened (not at the server's start, not after a shed attempt).
    fault::fail_times(Syscall::Open, 1, u64::MAX, sys::errno::EMFILE);
    run_bounded(&lp, async move {
        let server = h.create_server(Echo::new, "127.0.0.1", 0).await.unwrap();
        server.set_accept_retry_delay(RETRY).unwrap();
        let addr = server.local_addr();
        // Every accept fails 5 times in a row: the server must wait between attempts (not
        // spin), shed nothing (it has no spare), and take the connection once accept works.
        fault::fail_times(Syscall::Accept4, 1, 5, sys::errno::EMFILE);
        let it0 = h.stats().iterations;
        let started = Instant::now();
        let mut b = TcpStream::connect(addr).await.unwrap();
        let r = served_within(&mut b, Duration::from_secs(10)).await;
        *w.borrow_mut() = started.elapsed();
        it.set(h.stats().iterations - it0);
        assert_eq!(r, Some(true), "the connection is served once accept works again");
        assert_eq!(server.shed_connections(), 0, "nothing shed without a spare");
        server.close();
    });
    fault::clear();
    let seen = seen.borrow();
    println!(
        "5 EMFILEs without a spare: served after {:?} and {} iterations; {} reports",
        waited.borrow(),
        iterations.get(),
        seen.len()
    );
    assert!(seen.iter().all(|(k, _)| *k == ExceptionKind::ServerError));
    assert_eq!(seen.len(), 5, "each failed attempt is reported: {seen:?}");
    assert!(
        iterations.get() <= 100,
        "the loop spun while the server could not accept: {} iterations",
        iterations.get()
    );
    assert!(
        *waited.borrow() >= RETRY * 5,
        "the attempts are spaced out by the retry delay: {:?}",
        waited.borrow()
    );
}

/// `served` with a longer bound for the read.
async fn served_within(c: &mut TcpStream, limit: Duration) -> Option<bool> {
    if c.write_all(b"ping").await.is_err() {
        return Some(false);
    }
    let mut buf = [0u8; 4];
    match evloop::time::timeout(limit, c.read_exact(&mut buf)).await {
        Ok(Ok(_)) => Some(&buf == b"ping"),
        Ok(Err(_)) => Some(false),
        Err(_) => None,
    }
}
