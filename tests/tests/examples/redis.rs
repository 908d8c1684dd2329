//! End to end: the Redis-protocol example server (runtime/examples/redis_server.rs) with a
//! std-only RESP client over loopback: PING, ECHO, SET, GET, DEL, INCR, errors for unknown
//! commands, bad arity and non-integers, inline commands, pipelining, a value split across many
//! reads, a map shared by connections, protocol errors. Every check also runs against the tokio
//! twin (tests/examples/peer_tokio_redis.rs).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

#[allow(dead_code)]
#[path = "../../../runtime/examples/redis_server.rs"]
mod redis_server;

#[allow(dead_code)]
#[path = "../../examples/peer_tokio_redis.rs"]
mod tokio_redis;

use crate::tokio_server;

/// A RESP answer.
#[derive(Debug, PartialEq)]
enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

struct Client {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
        }
    }

    fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    fn send(&mut self, args: &[&[u8]]) {
        self.w.write_all(&Client::encode(args)).unwrap();
    }

    fn call(&mut self, args: &[&str]) -> Reply {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send(&args);
        self.reply()
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.r.read_line(&mut l).expect("a reply line");
        assert!(l.ends_with("\r\n"), "{l:?}");
        l.truncate(l.len() - 2);
        l
    }

    fn reply(&mut self) -> Reply {
        let l = self.line();
        let (kind, rest) = l.split_at(1);
        match kind {
            "+" => Reply::Simple(rest.to_string()),
            "-" => Reply::Error(rest.to_string()),
            ":" => Reply::Int(rest.parse().unwrap()),
            "$" if rest == "-1" => Reply::Bulk(None),
            "$" => {
                let mut v = vec![0u8; rest.parse::<usize>().unwrap() + 2];
                self.r.read_exact(&mut v).unwrap();
                v.truncate(v.len() - 2);
                Reply::Bulk(Some(v))
            }
            "*" => Reply::Array((0..rest.parse::<usize>().unwrap()).map(|_| self.reply()).collect()),
            other => panic!("not a RESP reply: {other}{rest}"),
        }
    }
}

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

fn bulk(s: &str) -> Reply {
    Reply::Bulk(Some(s.as_bytes().to_vec()))
}

fn the_basic_commands(addr: SocketAddr) {
    let mut c = Client::connect(addr);
    assert_eq!(c.call(&["PING"]), Reply::Simple("PONG".into()));
    assert_eq!(c.call(&["ping", "hi"]), bulk("hi"), "names are case-insensitive");
    assert_eq!(c.call(&["ECHO", "echo me"]), bulk("echo me"));
    assert_eq!(c.call(&["GET", "k"]), Reply::Bulk(None));
    assert_eq!(c.call(&["SET", "k", "v1"]), ok());
    assert_eq!(c.call(&["GET", "k"]), bulk("v1"));
    assert_eq!(c.call(&["SET", "k", "v2"]), ok());
    assert_eq!(c.call(&["GET", "k"]), bulk("v2"), "SET overwrites");
    assert_eq!(c.call(&["SET", "other", ""]), ok());
    assert_eq!(
        c.call(&["GET", "other"]),
        bulk(""),
        "an empty value is not a missing one"
    );
    assert_eq!(c.call(&["DEL", "k", "other", "missing"]), Reply::Int(2));
    assert_eq!(c.call(&["GET", "k"]), Reply::Bulk(None));
    assert_eq!(c.call(&["INCR", "n"]), Reply::Int(1));
    assert_eq!(c.call(&["INCR", "n"]), Reply::Int(2));
    assert_eq!(c.call(&["GET", "n"]), bulk("2"));
    assert_eq!(c.call(&["SET", "n", "-5"]), ok());
    assert_eq!(c.call(&["INCR", "n"]), Reply::Int(-4));
    assert_eq!(c.call(&["CONFIG", "GET", "save"]), Reply::Array(vec![]));
}

fn errors_name_the_problem_and_the_connection_goes_on(addr: SocketAddr) {
    let mut c = Client::connect(addr);
    assert_eq!(
        c.call(&["NOPE", "x"]),
        Reply::Error("ERR unknown command 'NOPE'".into())
    );
    assert_eq!(
        c.call(&["GET"]),
        Reply::Error("ERR wrong number of arguments for 'get' command".into())
    );
    assert_eq!(c.call(&["SET", "s", "text"]), ok());
    assert_eq!(
        c.call(&["INCR", "s"]),
        Reply::Error("ERR value is not an integer or out of range".into())
    );
    assert_eq!(c.call(&["SET", "big", &i64::MAX.to_string()]), ok());
    assert!(
        matches!(c.call(&["INCR", "big"]), Reply::Error(_)),
        "overflow is an error"
    );
    assert_eq!(c.call(&["PING"]), Reply::Simple("PONG".into()), "still serving");
}

fn inline_commands_and_quit(addr: SocketAddr) {
    let mut c = Client::connect(addr);
    c.w.write_all(b"PING\r\nSET a 1\r\nGET a\r\n\r\nQUIT\r\n").unwrap();
    assert_eq!(c.reply(), Reply::Simple("PONG".into()));
    assert_eq!(c.reply(), ok());
    assert_eq!(c.reply(), bulk("1"));
    assert_eq!(c.reply(), ok(), "an empty line is skipped; QUIT answers +OK");
    let mut rest = Vec::new();
    c.r.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "closed after QUIT");
}

fn pipelined_commands_are_answered_in_order(addr: SocketAddr) {
    let mut c = Client::connect(addr);
    let mut batch = Vec::new();
    for i in 0..500 {
        let (k, v) = (format!("key{i}"), format!("value{i}"));
        batch.extend(Client::encode(&[b"SET", k.as_bytes(), v.as_bytes()]));
        batch.extend(Client::encode(&[b"GET", k.as_bytes()]));
        batch.extend(Client::encode(&[b"INCR", b"counter"]));
    }
    c.w.write_all(&batch).unwrap();
    for i in 0..500 {
        assert_eq!(c.reply(), ok());
        assert_eq!(c.reply(), bulk(&format!("value{i}")));
        assert_eq!(c.reply(), Reply::Int(i + 1));
    }
}

fn a_large_value_split_across_reads(addr: SocketAddr) {
    let mut c = Client::connect(addr);
    let value: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let msg = Client::encode(&[b"SET", b"large", &value]);
    for chunk in msg.chunks(7001) {
        c.w.write_all(chunk).unwrap();
    }
    assert_eq!(c.reply(), ok());
    assert_eq!(c.call(&["GET", "large"]), Reply::Bulk(Some(value)));
}

fn connections_share_one_map(addr: SocketAddr) {
    let mut a = Client::connect(addr);
    let mut b = Client::connect(addr);
    assert_eq!(a.call(&["SET", "shared", "from a"]), ok());
    assert_eq!(b.call(&["GET", "shared"]), bulk("from a"));
    assert_eq!(b.call(&["INCR", "hits"]), Reply::Int(1));
    assert_eq!(a.call(&["INCR", "hits"]), Reply::Int(2));
}

fn a_protocol_error_is_answered_then_the_connection_closes(addr: SocketAddr) {
    let mut c = Client::connect(addr);
    c.w.write_all(b"*1\r\n%3\r\nGET\r\n").unwrap();
    match c.reply() {
        Reply::Error(e) => assert!(e.starts_with("ERR Protocol error"), "{e}"),
        other => panic!("expected an error, got {other:?}"),
    }
    let mut rest = Vec::new();
    c.r.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "closed after the protocol error");
}

tokio_server::on_both_runtimes!(
    evloop: redis_server::serve, tokio: tokio_redis::serve;
    the_basic_commands,
    errors_name_the_problem_and_the_connection_goes_on,
    inline_commands_and_quit,
    pipelined_commands_are_answered_in_order,
    a_large_value_split_across_reads,
    connections_share_one_map,
    a_protocol_error_is_answered_then_the_connection_closes,
);
