//! What chapter 6 of the book (docs/06-the-100-line-loop.md) says the 100-line loop of
//! `runtime/examples/tiny_loop.rs` costs, against evloop serving the same client: the tiny loop
//! registers with epoll on every wait (two `epoll_ctl` per wait) and wakes every second while
//! idle; evloop registers each socket once and sleeps until something happens.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

use evloop::sys::Syscall;
use evloop_syscalls::counters::{self, Counts};

const TRIPS: usize = 200;
/// Longer than two of the tiny loop's one-second poll timeouts.
const IDLE: Duration = Duration::from_millis(2300);

/// `TRIPS` round trips of one line, then `IDLE` with nothing to do, then the client leaves.
fn client(addr: SocketAddr) {
    let mut conn = TcpStream::connect(addr).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let mut reply = [0u8; 6];
    for _ in 0..TRIPS {
        conn.write_all(b"hello\n").expect("send");
        conn.read_exact(&mut reply).expect("reply");
        assert_eq!(&reply, b"HELLO\n");
    }
    std::thread::sleep(IDLE);
}

/// Parses `name=count` pairs.
fn count_of(line: &str, name: &str) -> u64 {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .map_or(0, |n| n.parse().expect("a count"))
}

#[test]
fn the_tiny_loop_registers_on_every_wait_and_wakes_every_second_while_idle() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tiny_loop"))
        .arg("--once")
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn tiny_loop");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("listening line");
    let addr: SocketAddr = line
        .trim()
        .strip_prefix("listening on ")
        .expect("listening on ADDR")
        .parse()
        .expect("an address");
    client(addr);
    let mut counts = String::new();
    out.read_line(&mut counts).expect("counts line");
    assert!(child.wait().expect("wait").success());
    let c = |name| count_of(&counts, name);
    assert_eq!(c("send"), TRIPS as u64, "{counts}");
    // Every recv after the first of each request says EAGAIN and waits (the last one reads the
    // end of the stream); an accept that found nobody yet waited too.
    // (A request can also arrive before that recv, which then reads it without waiting: this
    // client answers fast.)
    let waits = (c("recv") - c("send") - 1) + (c("accept4") - 1);
    assert!(waits > 0, "{counts}");
    assert_eq!(c("epoll_ctl"), 2 * waits, "two epoll_ctl per wait: {counts}");
    // Each wait ended with one epoll_wait that returned its event; the idle period adds at least
    // two that returned nothing, one per second.
    assert!(c("epoll_wait") >= waits + 2, "{counts}");
}

#[test]
fn evloop_registers_each_socket_once_and_sleeps_while_idle() {
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        evloop::run(async move {
            let lp = evloop::event_loop::get_running_loop()?;
            let listener = evloop::net::TcpListener::bind("127.0.0.1:0").await?;
            tx.send(listener.local_addr()?).expect("send the address");
            let before = counters::snapshot();
            let (conn, _) = listener.accept().await?;
            let mut buf = [0u8; 4096];
            loop {
                let n = lp.sock_recv_into(conn.socket(), &mut buf).await?;
                if n == 0 {
                    break;
                }
                buf[..n].make_ascii_uppercase();
                lp.sock_sendall(conn.socket(), &buf[..n]).await?;
            }
            drop(conn);
            Ok::<Counts, std::io::Error>(counters::snapshot().since(&before))
        })
    });
    client(rx.recv().expect("the server's address"));
    let c = server.join().expect("server thread").expect("run").expect("serve");
    assert_eq!(c.get(Syscall::Send), TRIPS as u64, "{c}");
    // The connection's ADD when it is accepted and its DEL before it is closed: nothing per wait.
    assert_eq!(c.get(Syscall::EpollCtl), 2, "{c}");
    // One poll per round trip and a few more; none for the idle seconds (no timeout to wake for).
    let polls = c.get(Syscall::EpollPwait2) + c.get(Syscall::EpollWait);
    assert!(polls <= TRIPS as u64 + 5, "{c}");
}
