//! Failures the fault matrix (`tests/tests/fault_matrix.rs`) found, each pinned by its own test:
//! the loop recovers from a system call that fails once, and when the failure reaches the
//! caller, the error names the operation and the fd.
#![cfg(feature = "fault-injection")]

use std::time::Duration;

use evloop::net::{TcpListener, TcpStream};
use evloop::sys::{fault, Syscall};
use evloop::EventLoop;
use evloop_syscalls as sys;
use evloop_tests::run_bounded;

#[test]
fn a_connect_whose_first_call_left_no_attempt_behind_still_connects() {
    // `connect` answered `EINTR` (reported as `EINPROGRESS`) without starting anything: the only
    // wake-up is the unconnected socket's own stale one, after which connect asks the kernel
    // again instead of waiting for an edge that never comes.
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accept = evloop::spawn(async move { listener.accept().await.map(|_| ()) });
        fault::fail_nth(Syscall::Connect, 1, sys::errno::EINTR);
        let connected = evloop::timeout(Duration::from_secs(5), TcpStream::connect(addr)).await;
        fault::clear();
        let s = connected.expect("connect waited forever").unwrap();
        assert_eq!(s.peer_addr().unwrap(), addr);
        accept.await.unwrap().unwrap();
    });
}
