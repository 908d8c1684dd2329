//! A Redis-protocol (RESP) server: `PING`, `ECHO`, `SET`, `GET`, `DEL`, `INCR` (and `QUIT`, plus
//! empty answers to the `CONFIG GET` / `COMMAND` probes that `redis-cli` and `redis-benchmark`
//! send), over an in-memory map shared by every connection. Pipelined commands are answered
//! together; `redis-cli` and `redis-benchmark` work against it.
//!
//! ```text
//! cargo run --release -p evloop --example redis_server -- 127.0.0.1:6380
//! redis-cli -p 6380 set greeting hello
//! redis-benchmark -p 6380 -t set,get -n 100000 -c 50 -q
//! ```
//!
//! The protocol: a client sends each command as an array of bulk strings
//! (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) or, typed by hand, as one line (`GET k\r\n`). The reader
//! takes lines with a bounded line reader over `fill_buf` (no line may exceed 64 KiB, no value
//! 16 MiB) and values with `read_exact`. Answers are simple strings (`+OK`), errors (`-ERR ...`),
//! integers (`:3`), bulk strings (`$5\r\nhello`) or the null bulk string (`$-1`), written into a
//! `BufWriter` that is flushed when no further command is buffered.
//!
//! Like `http_server`, it is written with what tokio and evloop share:
//! `tests/examples/peer_tokio_redis.rs` is the same file with tokio's `use` lines, and
//! `make bench` runs both under `redis-benchmark`. That is why the map sits in an
//! `Arc<Mutex<..>>`: tokio's `spawn` wants `Send` futures even on one thread (evloop's does not).

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evloop::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use evloop::net::{TcpListener, TcpStream};
use evloop::{main, spawn, time::sleep};

const MAX_LINE: usize = 64 * 1024;
const MAX_VALUE: usize = 16 * 1024 * 1024;
const MAX_ARGS: usize = 1024 * 1024;

type Db = Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>;

#[main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:6380".to_string());
    let listener = TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    serve(listener).await?;
    Ok(())
}

/// Accepts connections forever, one task each, all sharing one map.
pub async fn serve(listener: TcpListener) -> io::Result<()> {
    let db: Db = Arc::new(Mutex::new(HashMap::new()));
    loop {
        let (socket, _) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                eprintln!("accept: {e}");
                sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let db = db.clone();
        spawn(async move {
            let _ = handle(socket, db).await;
        });
    }
}

/// Serves one connection until it closes or sends `QUIT`.
pub async fn handle(mut socket: TcpStream, db: Db) -> io::Result<()> {
    socket.set_nodelay(true)?;
    let (rd, wr) = socket.split();
    let mut rd = BufReader::new(rd);
    let mut wr = BufWriter::new(wr);
    let mut line = Vec::with_capacity(128);
    loop {
        let args = match read_command(&mut rd, &mut line).await {
            Ok(Some(args)) => args,
            Ok(None) => break,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                wr.write_all(format!("-ERR Protocol error: {e}\r\n").as_bytes()).await?;
                break;
            }
            Err(e) => return Err(e),
        };
        if args.is_empty() {
            continue; // an empty inline line
        }
        let quit = execute(&args, &db, &mut wr).await?;
        if quit {
            break;
        }
        if rd.buffer().is_empty() {
            wr.flush().await?;
        }
    }
    wr.flush().await
}

/// Runs one command and writes its answer; `true` for `QUIT`.
async fn execute<W: AsyncWrite + Unpin>(args: &[Vec<u8>], db: &Db, wr: &mut BufWriter<W>) -> io::Result<bool> {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    let arity_error = |name: &str| {
        format!(
            "-ERR wrong number of arguments for '{}' command\r\n",
            name.to_lowercase()
        )
    };
    match (name.as_str(), args.len()) {
        ("PING", 1) => wr.write_all(b"+PONG\r\n").await?,
        ("PING", 2) | ("ECHO", 2) => bulk(wr, Some(&args[1])).await?,
        ("SET", 3) => {
            // The lock is never held across an await (a block, not `drop`, ends the guard for
            // the compiler's `Send` analysis).
            {
                let mut map = db.lock().unwrap_or_else(|p| p.into_inner());
                map.insert(args[1].clone(), args[2].clone());
            }
            wr.write_all(b"+OK\r\n").await?;
        }
        ("GET", 2) => {
            let value = db.lock().unwrap_or_else(|p| p.into_inner()).get(&args[1]).cloned();
            bulk(wr, value.as_deref()).await?;
        }
        ("DEL", n) if n >= 2 => {
            let removed = {
                let mut map = db.lock().unwrap_or_else(|p| p.into_inner());
                args[1..].iter().filter(|k| map.remove(*k).is_some()).count()
            };
            wr.write_all(format!(":{removed}\r\n").as_bytes()).await?;
        }
        ("INCR", 2) => {
            let answer = {
                let mut map = db.lock().unwrap_or_else(|p| p.into_inner());
                let current = match map.get(&args[1]) {
                    None => Some(0i64),
                    Some(v) => std::str::from_utf8(v).ok().and_then(|s| s.parse::<i64>().ok()),
                };
                match current.and_then(|n| n.checked_add(1)) {
                    Some(n) => {
                        map.insert(args[1].clone(), n.to_string().into_bytes());
                        format!(":{n}\r\n")
                    }
                    None => "-ERR value is not an integer or out of range\r\n".to_string(),
                }
            };
            wr.write_all(answer.as_bytes()).await?;
        }
        ("QUIT", _) => {
            wr.write_all(b"+OK\r\n").await?;
            return Ok(true);
        }
        // What redis-cli and redis-benchmark ask first: an empty list is a valid answer.
        ("CONFIG", _) | ("COMMAND", _) => wr.write_all(b"*0\r\n").await?,
        ("PING" | "ECHO" | "SET" | "GET" | "DEL" | "INCR", _) => wr.write_all(arity_error(&name).as_bytes()).await?,
        _ => {
            let shown: String = name.chars().take(64).collect();
            wr.write_all(format!("-ERR unknown command '{shown}'\r\n").as_bytes())
                .await?;
        }
    }
    Ok(false)
}

async fn bulk<W: AsyncWrite + Unpin>(wr: &mut BufWriter<W>, value: Option<&[u8]>) -> io::Result<()> {
    match value {
        Some(v) => {
            wr.write_all(format!("${}\r\n", v.len()).as_bytes()).await?;
            wr.write_all(v).await?;
            wr.write_all(b"\r\n").await
        }
        None => wr.write_all(b"$-1\r\n").await,
    }
}

fn protocol_error(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// One command: the arguments of a RESP array, or the words of an inline line. `Ok(None)`
/// when the client closed the connection between commands.
async fn read_command<R: AsyncBufRead + Unpin>(rd: &mut R, line: &mut Vec<u8>) -> io::Result<Option<Vec<Vec<u8>>>> {
    if !read_line(rd, line).await? {
        return Ok(None);
    }
    if line.first() != Some(&b'*') {
        let words = line.split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty());
        return Ok(Some(words.map(|w| w.to_vec()).collect()));
    }
    let count = number(&line[1..])
        .filter(|&n| n <= MAX_ARGS)
        .ok_or_else(|| protocol_error("invalid multibulk length"))?;
    let mut args = Vec::with_capacity(count);
    for _ in 0..count {
        if !read_line(rd, line).await? {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if line.first() != Some(&b'$') {
            return Err(protocol_error("expected '$'"));
        }
        let len = number(&line[1..])
            .filter(|&n| n <= MAX_VALUE)
            .ok_or_else(|| protocol_error("invalid bulk length"))?;
        let mut value = vec![0u8; len + 2];
        rd.read_exact(&mut value).await?;
        if !value.ends_with(b"\r\n") {
            return Err(protocol_error("a bulk string must end with CRLF"));
        }
        value.truncate(len);
        args.push(value);
    }
    Ok(Some(args))
}

fn number(digits: &[u8]) -> Option<usize> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// Reads one line into `line` without its `\r\n` (or `\n`); `Ok(false)` at end of stream
/// before any byte; `InvalidData` past [`MAX_LINE`] bytes.
async fn read_line<R: AsyncBufRead + Unpin>(rd: &mut R, line: &mut Vec<u8>) -> io::Result<bool> {
    line.clear();
    loop {
        let (taken, done) = {
            let buf = rd.fill_buf().await?;
            if buf.is_empty() {
                return if line.is_empty() {
                    Ok(false)
                } else {
                    Err(io::ErrorKind::UnexpectedEof.into())
                };
            }
            match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    line.extend_from_slice(&buf[..i]);
                    (i + 1, true)
                }
                None => {
                    line.extend_from_slice(buf);
                    (buf.len(), false)
                }
            }
        };
        rd.consume(taken);
        if line.len() > MAX_LINE {
            return Err(protocol_error("line too long"));
        }
        if done {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(true);
        }
    }
}
