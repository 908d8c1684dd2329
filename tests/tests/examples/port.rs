//! Porting from tokio by changing imports only: each evloop example below and its tokio
//! counterpart are the same text once the module docs and the `use` lines are set aside, the
//! tokio original quoted in `port_from_tokio.rs` is exactly the compiled tokio file, and the
//! echo pair behaves the same on both runtimes (std-only clients, loopback).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use evloop_tests::read_workspace_file;
use evloop_tests::server::BackgroundServer;

#[allow(dead_code)]
#[path = "../../../runtime/examples/port_from_tokio.rs"]
mod port_from_tokio;

#[allow(dead_code)]
#[path = "../../examples/port_tokio_echo.rs"]
mod port_tokio_echo;

use crate::tokio_server;

/// The file without its leading `//!` module documentation (and the blank lines after it).
fn code(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| l.starts_with("//!"))
        .skip_while(|l| l.is_empty())
        .collect()
}

/// (the `use` lines, everything else).
fn split_imports(text: &str) -> (Vec<&str>, Vec<&str>) {
    code(text).into_iter().partition(|l| l.starts_with("use "))
}

const PAIRS: &[(&str, &str)] = &[
    (
        "runtime/examples/port_from_tokio.rs",
        "tests/examples/port_tokio_echo.rs",
    ),
    ("runtime/examples/http_server.rs", "tests/examples/peer_tokio_http.rs"),
    ("runtime/examples/redis_server.rs", "tests/examples/peer_tokio_redis.rs"),
    // Issue 21: a pub/sub server written for tokio (tests/tests/examples/pubsub.rs runs both).
    (
        "runtime/examples/pubsub_server.rs",
        "tests/examples/port_tokio_pubsub.rs",
    ),
];

#[test]
fn each_pair_differs_only_in_its_use_lines() {
    for (ours, theirs) in PAIRS {
        let (a, b) = (read_workspace_file(ours), read_workspace_file(theirs));
        let (a_uses, a_rest) = split_imports(&a);
        let (b_uses, b_rest) = split_imports(&b);
        assert!(a_rest.len() > 20, "{ours}: nothing to compare");
        for (i, (x, y)) in a_rest.iter().zip(&b_rest).enumerate() {
            assert_eq!(x, y, "{ours} and {theirs} differ outside their imports (code line {i})");
        }
        assert_eq!(a_rest.len(), b_rest.len(), "{ours} and {theirs} differ in length");
        // The imports do differ, and only in the crate they name.
        assert!(a_uses.iter().any(|u| u.contains("evloop")), "{ours}: {a_uses:?}");
        assert!(b_uses.iter().any(|u| u.contains("tokio")), "{theirs}: {b_uses:?}");
        assert!(!a_uses.iter().any(|u| u.contains("tokio")), "{ours}: {a_uses:?}");
        assert!(!b_uses.iter().any(|u| u.contains("evloop")), "{theirs}: {b_uses:?}");
    }
}

#[test]
fn the_quoted_original_is_the_compiled_tokio_program() {
    let port = read_workspace_file("runtime/examples/port_from_tokio.rs");
    let quoted: Vec<String> = port
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .skip_while(|l| !l.starts_with("//! ```rust"))
        .skip(1)
        .take_while(|l| !l.starts_with("//! ```"))
        .map(|l| {
            l.strip_prefix("//!")
                .unwrap_or(l)
                .strip_prefix(' ')
                .unwrap_or("")
                .to_string()
        })
        .collect();
    let original = read_workspace_file("tests/examples/port_tokio_echo.rs");
    let original = code(&original);
    assert_eq!(
        quoted, original,
        "the quote in port_from_tokio.rs drifted from the tokio file"
    );
}

fn echo_round_trips(addr: SocketAddr) {
    let mut clients: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(addr).unwrap()).collect();
    for (i, c) in clients.iter_mut().enumerate() {
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let msg = format!("client {i} says hello");
        c.write_all(msg.as_bytes()).unwrap();
        let mut back = vec![0u8; msg.len()];
        c.read_exact(&mut back).unwrap();
        assert_eq!(back, msg.as_bytes());
    }
    // A megabyte through one connection, then its end: everything comes back, then EOF.
    let mut c = clients.pop().unwrap();
    let data: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 253) as u8).collect();
    let reader = {
        let mut r = c.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut got = Vec::new();
            r.read_to_end(&mut got).unwrap();
            got
        })
    };
    c.write_all(&data).unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(reader.join().unwrap() == data);
}

#[test]
fn the_ported_echo_server_echoes_on_evloop() {
    let server = BackgroundServer::start(|l| async move {
        let _ = port_from_tokio::serve(l).await;
    });
    echo_round_trips(server.addr());
}

#[test]
fn the_original_echo_server_echoes_on_tokio() {
    let server = tokio_server::TokioServer::start(|l| async move {
        let _ = port_tokio_echo::serve(l).await;
    });
    echo_round_trips(server.addr());
}

/// The ported server's shutdown: a `Notify` ends its accept loop (a `select!` over the listener's
/// `Stream`, its `interval` and the notification), and its `broadcast` tells the open connection
/// to finish, which the client sees as end of file after its echo.
#[test]
fn the_ported_server_stops_on_notify_and_closes_its_connections() {
    use evloop::io::{AsyncReadExt, AsyncWriteExt};
    evloop::run(async {
        let listener = evloop::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = evloop::sync::Notify::new();
        let client = async {
            let mut c = evloop::net::TcpStream::connect(addr).await.unwrap();
            c.write_all(b"ping").await.unwrap();
            let mut back = [0u8; 4];
            c.read_exact(&mut back).await.unwrap();
            assert_eq!(&back, b"ping");
            shutdown.notify_one();
            // The connection's task was told to stop: its socket closes, the client reads EOF.
            let mut rest = Vec::new();
            c.read_to_end(&mut rest).await.unwrap();
            assert!(rest.is_empty(), "{rest:?}");
        };
        let (served, ()) = evloop::join!(port_from_tokio::serve_until(listener, &shutdown), client);
        served.unwrap();
    })
    .unwrap();
}
