//! A protocol server whose `accept4` fails keeps serving the connections already queued.
//!
//! The listener is registered edge-triggered: its readiness bit is the only memory of the
//! connections waiting in the accept queue, and no new edge comes for them. An error must
//! therefore never clear it. Errors that concern one connection (`ECONNABORTED`, `EPROTO`,
//! `EPERM`, the network errors `accept(2)` lists) are skipped at once, as asyncio skips
//! `ECONNABORTED`; errors of the process or system (`ENOMEM`, `ENOBUFS`, out of fds, anything
//! unexpected) are reported and retried after the server's accept retry delay (asyncio's
//! `ACCEPT_RETRY_DELAY`, 1 s by default). Out of fds, the server sheds queued connections only
//! if the condition outlasts one delay.
//!
//! Every test queues its clients before the loop runs (a blocking `connect` on loopback
//! completes in the kernel without an `accept`), injects failures into the loop thread's
//! `accept4` with `evloop_syscalls::fault`, then checks every client is answered.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use evloop::sys::{Syscall, fault};
use evloop::{
    event_loop::{EventLoop, ExceptionKind},
    io::{AsyncReadExt, AsyncWriteExt},
    protocol::Server,
};
use evloop_syscalls as sys;
use evloop_tests::net::Echo;
use evloop_tests::{new_loop, record_exception_messages, run_bounded};

const CLIENTS: usize = 8;
const RETRY: Duration = Duration::from_millis(50);

/// An echo server on loopback (created by running the loop briefly) whose accept retry delay
/// is `retry`.
fn echo_server(lp: &EventLoop, retry: Duration) -> (Server, SocketAddr) {
    let h = lp.handle();
    let server = run_bounded(
        lp,
        async move { h.create_server(Echo::new, "127.0.0.1", 0).await.unwrap() },
    );
    server.set_accept_retry_delay(retry).unwrap();
    let addr = server.local_addr();
    (server, addr)
}

/// `n` clients whose connections wait in the server's accept queue.
fn queued_clients(addr: SocketAddr, n: usize) -> Vec<std::net::TcpStream> {
    (0..n).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect()
}

/// How each client fares: `Some(true)` echoed, `Some(false)` closed or reset unserved, `None`
/// no answer within `limit`.
async fn outcomes(clients: Vec<std::net::TcpStream>, limit: Duration) -> Vec<Option<bool>> {
    let mut out = Vec::new();
    let mut streams = Vec::new();
    for c in clients {
        let mut s = evloop::net::TcpStream::from_std(c).unwrap();
        let sent = s.write_all(b"ping").await.is_ok();
        streams.push((s, sent));
    }
    for (mut s, sent) in streams {
        if !sent {
            out.push(Some(false));
            continue;
        }
        let mut buf = [0u8; 4];
        out.push(match evloop::time::timeout(limit, s.read_exact(&mut buf)).await {
            Ok(Ok(_)) => Some(&buf == b"ping"),
            Ok(Err(_)) => Some(false),
            Err(_) => None,
        });
    }
    out
}

fn count_served(outcomes: &[Option<bool>]) -> usize {
    outcomes.iter().filter(|o| **o == Some(true)).count()
}

#[test]
fn an_enomem_from_accept_is_reported_retried_and_every_queued_connection_is_served() {
    let lp = new_loop();
    let seen = record_exception_messages(&lp);
    let (server, addr) = echo_server(&lp, RETRY);
    let clients = queued_clients(addr, CLIENTS);
    fault::fail_nth(Syscall::Accept4, 1, sys::errno::ENOMEM);
    let got = run_bounded(&lp, outcomes(clients, Duration::from_secs(5)));
    fault::clear();
    println!("after one ENOMEM: {got:?}; reports: {:?}", seen.borrow());
    assert_eq!(
        count_served(&got),
        CLIENTS,
        "every queued connection is answered: {got:?}"
    );
    assert_eq!(server.shed_connections(), 0);
    let seen = seen.borrow();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].0, ExceptionKind::ServerError);
    assert!(seen[0].1.contains("Cannot allocate memory"), "{}", seen[0].1);
    server.close();
}

#[test]
fn every_process_or_system_error_from_accept_is_retried_without_stalling_the_backlog() {
    for errno in [
        sys::errno::ENOMEM,
        sys::errno::ENOBUFS,
        sys::errno::EINVAL,
        sys::errno::EBADF,
        sys::errno::ENOTSOCK,
        sys::errno::EFAULT,
    ] {
        let lp = new_loop();
        let seen = record_exception_messages(&lp);
        let (server, addr) = echo_server(&lp, RETRY);
        let clients = queued_clients(addr, 3);
        fault::fail_nth(Syscall::Accept4, 1, errno);
        let got = run_bounded(&lp, outcomes(clients, Duration::from_secs(5)));
        fault::clear();
        let err = io::Error::from_raw_os_error(errno);
        assert_eq!(count_served(&got), 3, "after {err}: {got:?}");
        assert_eq!(seen.borrow().len(), 1, "{err} is reported once: {:?}", seen.borrow());
        server.close();
    }
}

#[test]
fn a_per_connection_accept_error_is_skipped_at_once_and_not_reported() {
    // accept(2): "Linux accept() passes already-pending network errors on the new socket as an
    // error code from accept() ... treat them like EAGAIN by retrying".
    for errno in [
        sys::errno::ECONNABORTED,
        sys::errno::EPROTO,
        sys::errno::EPERM,
        sys::errno::ENETDOWN,
        sys::errno::ENOPROTOOPT,
        sys::errno::EHOSTDOWN,
        sys::errno::ENONET,
        sys::errno::EHOSTUNREACH,
        sys::errno::ENETUNREACH,
        sys::errno::EOPNOTSUPP,
    ] {
        // An hour's retry delay: a server that backed off would leave the clients unanswered.
        let lp = new_loop();
        let seen = record_exception_messages(&lp);
        let (server, addr) = echo_server(&lp, Duration::from_secs(3600));
        let clients = queued_clients(addr, 3);
        fault::fail_nth(Syscall::Accept4, 1, errno);
        let got = run_bounded(&lp, outcomes(clients, Duration::from_secs(5)));
        fault::clear();
        let err = io::Error::from_raw_os_error(errno);
        assert_eq!(count_served(&got), 3, "after {err}, at once: {got:?}");
        assert!(seen.borrow().is_empty(), "{err} is not reported: {:?}", seen.borrow());
        server.close();
    }
}

// ---------------------------------------------------------------------------------------------
// Out of fds: back off first, shed only if it lasts.

#[test]
fn a_brief_out_of_fds_condition_backs_off_and_sheds_nothing() {
    for (errno, times) in [
        (sys::errno::ENFILE, 1),
        (sys::errno::EMFILE, 1),
        (sys::errno::ENFILE, 5),
    ] {
        let lp = new_loop();
        let seen = record_exception_messages(&lp);
        let (server, addr) = echo_server(&lp, RETRY);
        let clients = queued_clients(addr, CLIENTS);
        fault::fail_times(Syscall::Accept4, 1, times, errno);
        let got = run_bounded(&lp, outcomes(clients, Duration::from_secs(5)));
        fault::clear();
        let err = io::Error::from_raw_os_error(errno);
        println!("{times} x {err}: {got:?}; reports: {:?}", seen.borrow());
        assert_eq!(
            count_served(&got),
            CLIENTS,
            "{times} x {err}: every queued client is served: {got:?}"
        );
        assert_eq!(server.shed_connections(), 0, "{times} x {err}: nothing shed");
        assert!(!seen.borrow().is_empty(), "the condition is reported");
        server.close();
    }
}

#[test]
fn an_out_of_fds_condition_that_outlasts_the_retry_delay_sheds_the_queue() {
    let delay = Duration::from_millis(300);
    let lp = new_loop();
    let seen = record_exception_messages(&lp);
    let (server, addr) = echo_server(&lp, delay);
    let clients = queued_clients(addr, CLIENTS);
    // The first attempt and the retry fail; the shedding accepts (made with the spare fd's
    // number free) work.
    fault::fail_times(Syscall::Accept4, 1, 2, sys::errno::EMFILE);
    let h = lp.handle();
    let s = server.clone();
    let (early, got) = run_bounded(&lp, async move {
        // Half the delay in: backed off, nothing shed yet.
        evloop::time::sleep(delay / 2).await;
        let early = s.shed_connections();
        let _ = &h;
        (early, outcomes(clients, Duration::from_secs(5)).await)
    });
    fault::clear();
    println!("lasting EMFILE: {got:?}; reports: {:?}", seen.borrow());
    assert_eq!(early, 0, "nothing is shed before the condition has lasted one delay");
    assert_eq!(server.shed_connections(), CLIENTS as u64);
    assert_eq!(count_served(&got), 0, "every queued client was shed: {got:?}");
    assert!(
        got.iter().all(|o| *o == Some(false)),
        "shed clients see their connection closed: {got:?}"
    );
    let seen = seen.borrow();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[0].1.contains("retrying in"), "{}", seen[0].1);
    assert!(seen[1].1.contains(&format!("shed {CLIENTS}")), "{}", seen[1].1);
    // And once accept works again, new clients are served.
    let late = queued_clients(addr, 2);
    let got = run_bounded(&lp, outcomes(late, Duration::from_secs(5)));
    assert_eq!(count_served(&got), 2, "{got:?}");
    server.close();
}

#[test]
fn a_server_out_of_fds_for_good_idles_with_bounded_cpu_and_no_spin() {
    let lp = new_loop();
    let seen = record_exception_messages(&lp);
    let (server, addr) = echo_server(&lp, Duration::from_millis(20));
    let _clients = queued_clients(addr, 4);
    // Every accept fails, and so would reopening the spare fd: nothing can help, the server can
    // only wait.
    fault::fail_times(Syscall::Accept4, 1, u64::MAX, sys::errno::EMFILE);
    fault::fail_times(Syscall::Open, 1, u64::MAX, sys::errno::EMFILE);
    let iterations = lp.stats().iterations;
    let cpu = evloop_tests::thread_cpu_time();
    let wall = std::time::Instant::now();
    run_bounded(&lp, evloop::time::sleep(Duration::from_secs(1)));
    let cpu = evloop_tests::thread_cpu_time() - cpu;
    let wall = wall.elapsed();
    let iterations = lp.stats().iterations - iterations;
    fault::clear();
    println!(
        "1 s out of fds: {iterations} iterations, {cpu:?} CPU in {wall:?}, {} reports",
        seen.borrow().len()
    );
    // One attempt per 20 ms delay is about 50 iterations; a spinning loop makes millions.
    assert!(iterations <= 200, "{iterations} iterations in {wall:?}");
    assert!(cpu < wall / 4, "the loop used {cpu:?} of CPU in {wall:?}");
    assert!(server.is_serving());
    server.close();
}

#[test]
fn an_accept_retry_delay_out_of_range_is_refused_naming_the_call() {
    let lp = new_loop();
    let (server, _) = echo_server(&lp, RETRY);
    for delay in [
        Duration::ZERO,
        Duration::from_micros(999),
        Duration::from_secs(3601),
        Duration::MAX,
    ] {
        let e = server.set_accept_retry_delay(delay).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains("Server::set_accept_retry_delay"), "{e}");
        assert_eq!(server.accept_retry_delay(), RETRY, "a refused delay changes nothing");
    }
    for delay in [
        Duration::from_millis(1),
        Duration::from_secs(1),
        Duration::from_secs(3600),
    ] {
        server.set_accept_retry_delay(delay).unwrap();
        assert_eq!(server.accept_retry_delay(), delay);
    }
    server.close();
}

#[test]
fn a_new_server_starts_with_the_default_accept_retry_delay() {
    let lp = new_loop();
    let h = lp.handle();
    let server = run_bounded(
        &lp,
        async move { h.create_server(Echo::new, "127.0.0.1", 0).await.unwrap() },
    );
    assert_eq!(
        server.accept_retry_delay(),
        evloop::protocol::DEFAULT_ACCEPT_RETRY_DELAY
    );
    server.close();
}
