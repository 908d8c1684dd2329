//! End to end: the chat example server (runtime/examples/chat_server.rs) with std-only clients
//! over loopback: a line goes to every other client, joins and departures are announced, a
//! client leaving (cleanly or by reset) does not disturb the others, and a client that never
//! reads is disconnected instead of slowing the rest down.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use evloop_tests::server::BackgroundServer;

#[allow(dead_code)]
#[path = "../../../runtime/examples/chat_server.rs"]
mod chat_server;

struct Client {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Client {
    /// Connects and reads the welcome line.
    fn join(addr: SocketAddr, expect_name: &str) -> Client {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut c = Client {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
        };
        assert_eq!(c.line(), format!("welcome, you are {expect_name}"));
        c
    }

    fn say(&mut self, text: &str) {
        self.w.write_all(format!("{text}\n").as_bytes()).unwrap();
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.r.read_line(&mut l).expect("a line from the server");
        assert!(l.ends_with('\n'), "{l:?}");
        l.pop();
        l
    }
}

fn start() -> BackgroundServer {
    BackgroundServer::start(|l| async move {
        let _ = chat_server::serve(l).await;
    })
}

#[test]
fn a_line_goes_to_every_other_client_and_joins_are_announced() {
    let server = start();
    let mut a = Client::join(server.addr(), "guest-1");
    let mut b = Client::join(server.addr(), "guest-2");
    assert_eq!(a.line(), "* guest-2 joined");
    let mut c = Client::join(server.addr(), "guest-3");
    assert_eq!(a.line(), "* guest-3 joined");
    assert_eq!(b.line(), "* guest-3 joined");
    a.say("hello");
    assert_eq!(b.line(), "guest-1: hello");
    assert_eq!(c.line(), "guest-1: hello");
    b.say("hi a");
    // The next thing `a` hears is b's line: its own was not sent back to it.
    assert_eq!(a.line(), "guest-2: hi a");
    assert_eq!(c.line(), "guest-2: hi a");
}

#[test]
fn one_client_leaving_does_not_disturb_the_others() {
    let server = start();
    let mut a = Client::join(server.addr(), "guest-1");
    let mut b = Client::join(server.addr(), "guest-2");
    assert_eq!(a.line(), "* guest-2 joined");
    let c = Client::join(server.addr(), "guest-3");
    assert_eq!(a.line(), "* guest-3 joined");
    assert_eq!(b.line(), "* guest-3 joined");
    drop(c); // a clean close
    assert_eq!(a.line(), "* guest-3 left");
    assert_eq!(b.line(), "* guest-3 left");
    b.say("still here");
    assert_eq!(a.line(), "guest-2: still here");
    // b goes away abruptly (a reset, not a FIN).
    evloop_syscalls::set_linger_zero(std::os::fd::AsFd::as_fd(&b.w)).unwrap();
    drop(b);
    assert_eq!(a.line(), "* guest-2 left");
    let mut d = Client::join(server.addr(), "guest-4");
    assert_eq!(a.line(), "* guest-4 joined");
    d.say("newcomer");
    assert_eq!(a.line(), "guest-4: newcomer");
    a.say("welcome");
    assert_eq!(d.line(), "guest-1: welcome");
}

#[test]
fn a_client_that_never_reads_is_disconnected_and_the_others_carry_on() {
    let server = start();
    let mut talker = Client::join(server.addr(), "guest-1");
    let mut listener = Client::join(server.addr(), "guest-2");
    assert_eq!(talker.line(), "* guest-2 joined");
    let silent = Client::join(server.addr(), "guest-3");
    assert_eq!(talker.line(), "* guest-3 joined");
    assert_eq!(listener.line(), "* guest-3 joined");
    // Fill the silent client's socket buffers and then its outbox. The listener reads along;
    // bounded: 4,000 lines of 2,000 bytes (8 MB) at most.
    let text = "x".repeat(2000);
    let mut evicted = false;
    let mut listener_saw_it = false;
    for i in 0..4000 {
        talker.say(&text);
        let mut heard = listener.line();
        if heard == "* guest-3 left" {
            listener_saw_it = true;
            heard = listener.line();
        }
        assert!(heard == format!("guest-1: {text}"), "line {i}: {heard:.40}");
        talker.w.set_nonblocking(true).unwrap();
        let mut probe = String::new();
        match talker.r.read_line(&mut probe) {
            Ok(_) => {
                assert_eq!(probe, "* guest-3 left\n");
                evicted = true;
            }
            Err(e) => assert!(matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut), "{e}"),
        }
        talker.w.set_nonblocking(false).unwrap();
        if evicted {
            break;
        }
    }
    assert!(evicted, "the client that never read was never disconnected");
    if !listener_saw_it {
        assert_eq!(listener.line(), "* guest-3 left");
    }
    listener.say("after");
    assert_eq!(talker.line(), "guest-2: after");
    drop(silent);
}
