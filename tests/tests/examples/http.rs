//! End to end: the HTTP/1.1 example server (runtime/examples/http_server.rs), driven by a
//! std-only client over loopback: keep-alive, pipelining, `Connection: close`, HTTP/1.0,
//! 400 on garbage, 431 on an oversized head, 404/405, a request trickling in byte by byte, and
//! many connections at once. Every check also runs against its tokio twin
//! (tests/examples/peer_tokio_http.rs): same program, same answers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

#[allow(dead_code)]
#[path = "../../../runtime/examples/http_server.rs"]
mod http_server;

#[allow(dead_code)]
#[path = "../../examples/peer_tokio_http.rs"]
mod tokio_http;

use crate::tokio_server;

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one response (status line, headers, `Content-Length` body).
fn read_response(r: &mut impl BufRead) -> Response {
    let mut line = String::new();
    r.read_line(&mut line).expect("status line");
    let mut parts = line.split_whitespace();
    assert_eq!(parts.next(), Some("HTTP/1.1"), "status line {line:?}");
    let status = parts.next().and_then(|s| s.parse().ok()).expect("status code");
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).expect("header line");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').expect("name: value");
        headers.push((n.to_string(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .expect("Content-Length");
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).expect("body");
    Response { status, headers, body }
}

/// Whether the server closed the connection (EOF), within the read timeout.
fn closed_by_server(r: &mut impl Read) -> bool {
    let mut b = [0u8; 1];
    matches!(r.read(&mut b), Ok(0))
}

fn keep_alive_serves_requests_one_after_another(addr: SocketAddr) {
    let mut s = connect(addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    for _ in 0..3 {
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let resp = read_response(&mut r);
        assert_eq!((resp.status, &resp.body[..]), (200, &b"Hello, world!\n"[..]));
        assert_eq!(resp.header("connection"), Some("keep-alive"));
    }
}

fn pipelined_requests_are_answered_in_order(addr: SocketAddr) {
    let mut s = connect(addr);
    let mut batch = Vec::new();
    for i in 0..20 {
        if i % 2 == 0 {
            batch.extend_from_slice(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        } else {
            let body = format!("request {i}");
            batch.extend_from_slice(
                format!("POST /echo HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes(),
            );
        }
    }
    s.write_all(&batch).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    for i in 0..20 {
        let resp = read_response(&mut r);
        assert_eq!(resp.status, 200);
        if i % 2 == 0 {
            assert_eq!(resp.body, b"Hello, world!\n");
        } else {
            assert_eq!(resp.body, format!("request {i}").as_bytes(), "answer {i} in order");
        }
    }
}

fn connection_close_gets_an_answer_then_the_end(addr: SocketAddr) {
    let mut s = connect(addr);
    s.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let resp = read_response(&mut r);
    assert_eq!((resp.status, resp.header("connection")), (200, Some("close")));
    assert!(closed_by_server(&mut r));
    // HTTP/1.0 closes by default, and stays open with keep-alive.
    let mut s = connect(addr);
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    assert_eq!(read_response(&mut r).header("connection"), Some("close"));
    assert!(closed_by_server(&mut r));
    let mut s = connect(addr);
    s.write_all(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n")
        .unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    assert_eq!(read_response(&mut r).header("connection"), Some("keep-alive"));
    assert_eq!(read_response(&mut r).header("connection"), Some("close"));
    assert!(closed_by_server(&mut r));
}

fn garbage_gets_400_and_the_connection_closes(addr: SocketAddr) {
    let cases: [&[u8]; 5] = [
        b"HELLO\r\n\r\n",
        b"GET /\r\n\r\n",
        b"GET / HTTP/2.0\r\n\r\n",
        b"GET / HTTP/1.1\r\nno colon here\r\n\r\n",
        b"\x00\x01\x02\xff\r\n\r\n",
    ];
    for garbage in cases {
        let mut s = connect(addr);
        s.write_all(garbage).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let resp = read_response(&mut r);
        assert_eq!(resp.status, 400, "{:?}", String::from_utf8_lossy(garbage));
        assert_eq!(resp.header("connection"), Some("close"));
        assert!(closed_by_server(&mut r));
    }
    // A valid request before the garbage is still answered first.
    let mut s = connect(addr);
    s.write_all(b"GET / HTTP/1.1\r\n\r\nBOGUS\r\n\r\n").unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    assert_eq!(read_response(&mut r).status, 200);
    assert_eq!(read_response(&mut r).status, 400);
    assert!(closed_by_server(&mut r));
}

fn an_oversized_head_gets_431(addr: SocketAddr) {
    let mut s = connect(addr);
    let mut req = b"GET / HTTP/1.1\r\n".to_vec();
    for i in 0..400 {
        req.extend_from_slice(format!("X-Filler-{i}: {}\r\n", "y".repeat(40)).as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    let _ = s.write_all(&req); // the server may close before it has read all of it
    // The server answers 431 and closes without reading the rest; the rest still in its
    // receive queue makes the kernel reset the connection, which may reach us before the
    // answer does. Either way it stopped at 8 KiB and did not serve the request.
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    match r.read_line(&mut line) {
        Ok(_) => assert!(line.starts_with("HTTP/1.1 431"), "{line:?}"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
    // And it goes on serving everyone else.
    let mut s = connect(addr);
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut BufReader::new(s)).status, 200);
}

fn unknown_paths_and_methods(addr: SocketAddr) {
    let mut s = connect(addr);
    s.write_all(b"GET /nowhere HTTP/1.1\r\n\r\nDELETE / HTTP/1.1\r\n\r\n")
        .unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    assert_eq!(read_response(&mut r).status, 404);
    assert_eq!(read_response(&mut r).status, 405);
}

fn a_request_trickling_in_byte_by_byte(addr: SocketAddr) {
    let mut s = connect(addr);
    s.set_nodelay(true).unwrap();
    for b in b"POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello" {
        s.write_all(&[*b]).unwrap();
        std::thread::sleep(Duration::from_micros(200));
    }
    let mut r = BufReader::new(s.try_clone().unwrap());
    let resp = read_response(&mut r);
    assert_eq!((resp.status, &resp.body[..]), (200, &b"hello"[..]));
}

fn many_connections_at_once(addr: SocketAddr) {
    let mut conns: Vec<TcpStream> = (0..64).map(|_| connect(addr)).collect();
    for s in &mut conns {
        s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    }
    for s in &conns {
        let mut r = BufReader::new(s.try_clone().unwrap());
        assert_eq!(read_response(&mut r).status, 200);
    }
}

tokio_server::on_both_runtimes!(
    evloop: http_server::serve, tokio: tokio_http::serve;
    keep_alive_serves_requests_one_after_another,
    pipelined_requests_are_answered_in_order,
    connection_close_gets_an_answer_then_the_end,
    garbage_gets_400_and_the_connection_closes,
    an_oversized_head_gets_431,
    unknown_paths_and_methods,
    a_request_trickling_in_byte_by_byte,
    many_connections_at_once,
);
