//! The ported pub/sub server (runtime/examples/pubsub_server.rs) and its tokio original
//! (tests/examples/port_tokio_pubsub.rs) give the same answers to the same std-only clients:
//! subscribe, publish to one and to several subscribers, unsubscribe, an unknown command, and a
//! subscriber that disconnects.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use evloop_tests::server::BackgroundServer;

#[allow(dead_code)]
#[path = "../../../runtime/examples/pubsub_server.rs"]
mod pubsub_server;

#[allow(dead_code)]
#[path = "../../examples/port_tokio_pubsub.rs"]
mod port_tokio_pubsub;

use crate::tokio_server;

struct Client {
    out: TcpStream,
    lines: BufReader<TcpStream>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client {
            out: s.try_clone().unwrap(),
            lines: BufReader::new(s),
        }
    }

    /// Sends one command line and returns the next line the server sends.
    fn ask(&mut self, cmd: &str) -> String {
        writeln!(self.out, "{cmd}").unwrap();
        self.line()
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.lines.read_line(&mut line).expect("a line in time");
        line
    }
}

fn pubsub_conversation(addr: SocketAddr) {
    let (mut a, mut b, mut p) = (Client::connect(addr), Client::connect(addr), Client::connect(addr));
    assert_eq!(a.ask("SUB news"), "+OK\n");
    assert_eq!(b.ask("SUB news"), "+OK\n");
    assert_eq!(b.ask("SUB sport"), "+OK\n");
    assert_eq!(p.ask("PUB news rates are up"), ":2\n");
    assert_eq!(a.line(), "news rates are up\n");
    assert_eq!(b.line(), "news rates are up\n");
    assert_eq!(p.ask("PUB sport 2-1"), ":1\n");
    assert_eq!(b.line(), "sport 2-1\n");
    assert_eq!(a.ask("UNSUB news"), "+OK\n");
    assert_eq!(p.ask("PUB news second"), ":1\n");
    assert_eq!(b.line(), "news second\n");
    assert_eq!(p.ask("HELLO"), "-ERR unknown command\n");
    assert_eq!(p.ask("PUB weather nobody listens"), ":0\n");
    // A subscriber that leaves is forgotten: the next publish reaches no one.
    drop(b);
    let mut reached = String::new();
    for _ in 0..100 {
        reached = p.ask("PUB sport 3-1");
        if reached == ":0\n" {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(reached, ":0\n");
}

#[test]
fn the_ported_pubsub_server_on_evloop() {
    let server = BackgroundServer::start(|l| async move {
        let _ = pubsub_server::serve(l).await;
    });
    pubsub_conversation(server.addr());
}

#[test]
fn the_original_pubsub_server_on_tokio() {
    let server = tokio_server::TokioServer::start(|l| async move {
        let _ = port_tokio_pubsub::serve(l).await;
    });
    pubsub_conversation(server.addr());
}
