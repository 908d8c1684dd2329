//! An HTTP/1.1 server with keep-alive and pipelining: `GET /` says hello, `POST /echo` sends the
//! body back, anything else is a 404; `Connection: close` (and HTTP/1.0 without keep-alive)
//! closes after the answer, and a request that is not HTTP gets `400 Bad Request`.
//!
//! ```text
//! cargo run --release -p evloop --example http_server -- 127.0.0.1:8080
//! curl -i http://127.0.0.1:8080/
//! wrk -t1 -c50 -d5s http://127.0.0.1:8080/
//! ```
//!
//! How it reads: each connection gets a task, a `BufReader` on the socket's read half and a
//! `BufWriter` on its write half. The request head is collected from `fill_buf` until the blank
//! line (at most 8 KiB, so a client cannot make the server buffer without bound); the body,
//! given by `Content-Length`, comes with `read_exact`. Answers go into the `BufWriter`, which is
//! flushed only when the `BufReader` holds no further request: pipelined requests that arrived
//! together are answered with one `send`.
//!
//! It is also a tokio program. `tests/examples/peer_tokio_http.rs` is this file with its `use`
//! lines pointing at tokio instead (a test checks that nothing else differs), and `make bench`
//! runs the two side by side under `wrk`.

use std::io;
use std::time::Duration;

use evloop::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use evloop::net::{TcpListener, TcpStream};
use evloop::{main, spawn, time::sleep};

/// The largest request head (request line and headers) the server reads.
const MAX_HEAD: usize = 8 * 1024;
/// The largest request body it accepts.
const MAX_BODY: usize = 1024 * 1024;

#[main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_string());
    let listener = TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    serve(listener).await?;
    Ok(())
}

/// Accepts connections forever, one task each.
pub async fn serve(listener: TcpListener) -> io::Result<()> {
    loop {
        let (socket, _) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                // Out of file descriptors, most likely: keep serving, a little later.
                eprintln!("accept: {e}");
                sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        spawn(async move {
            // A client that goes away mid-request is its own business, not the server's.
            let _ = handle(socket).await;
        });
    }
}

/// What the server needs to know about a request.
struct Request<'a> {
    method: &'a str,
    path: &'a str,
    keep_alive: bool,
    content_length: usize,
    chunked: bool,
}

/// Serves one connection until the client closes it or asks to.
pub async fn handle(mut socket: TcpStream) -> io::Result<()> {
    socket.set_nodelay(true)?;
    let (rd, wr) = socket.split();
    let mut rd = BufReader::new(rd);
    let mut wr = BufWriter::new(wr);
    let mut head = Vec::with_capacity(1024);
    loop {
        head.clear();
        match read_head(&mut rd, &mut head).await {
            Ok(true) => {}
            Ok(false) => break, // the client closed the connection between requests
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                respond(
                    &mut wr,
                    "431 Request Header Fields Too Large",
                    b"request head too large\n",
                    false,
                )
                .await?;
                break;
            }
            Err(e) => return Err(e),
        }
        let Some(req) = parse(&head) else {
            respond(&mut wr, "400 Bad Request", b"bad request\n", false).await?;
            break;
        };
        if req.chunked {
            respond(
                &mut wr,
                "501 Not Implemented",
                b"chunked bodies are not supported\n",
                false,
            )
            .await?;
            break;
        }
        if req.content_length > MAX_BODY {
            respond(&mut wr, "413 Content Too Large", b"body too large\n", false).await?;
            break;
        }
        let mut body = vec![0u8; req.content_length];
        rd.read_exact(&mut body).await?;
        let keep_alive = req.keep_alive;
        match (req.method, req.path) {
            ("GET", "/") => respond(&mut wr, "200 OK", b"Hello, world!\n", keep_alive).await?,
            ("POST", "/echo") => respond(&mut wr, "200 OK", &body, keep_alive).await?,
            (_, "/") | (_, "/echo") => {
                respond(&mut wr, "405 Method Not Allowed", b"method not allowed\n", keep_alive).await?
            }
            _ => respond(&mut wr, "404 Not Found", b"not found\n", keep_alive).await?,
        }
        if !keep_alive {
            break;
        }
        // More pipelined requests already here? Answer them before sending anything.
        if rd.buffer().is_empty() {
            wr.flush().await?;
        }
    }
    wr.flush().await
}

/// Reads the request head up to and including its blank line into `head`. `Ok(false)` if
/// the stream ends before a request starts; `InvalidData` past [`MAX_HEAD`] bytes.
async fn read_head<R: AsyncBufRead + Unpin>(rd: &mut R, head: &mut Vec<u8>) -> io::Result<bool> {
    loop {
        let (taken, done) = {
            let buf = rd.fill_buf().await?;
            if buf.is_empty() {
                return if head.is_empty() {
                    Ok(false)
                } else {
                    Err(io::ErrorKind::UnexpectedEof.into())
                };
            }
            // The blank line may straddle what was read before and what is buffered now.
            let from = head.len().saturating_sub(3);
            head.extend_from_slice(buf);
            match find(&head[from..], b"\r\n\r\n") {
                Some(at) => {
                    let end = from + at + 4;
                    let taken = buf.len() - (head.len() - end);
                    head.truncate(end);
                    (taken, true)
                }
                None => (buf.len(), false),
            }
        };
        rd.consume(taken);
        if done {
            return Ok(true);
        }
        if head.len() > MAX_HEAD {
            return Err(io::ErrorKind::InvalidData.into());
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The request line and the headers that matter, or `None` if it is not HTTP/1.x.
fn parse(head: &[u8]) -> Option<Request<'_>> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let mut parts = lines.next()?.split(' ');
    let (method, path, version) = (parts.next()?, parts.next()?, parts.next()?);
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    if parts.next().is_some() || !token(method) || !path.starts_with('/') {
        return None;
    }
    let mut keep_alive = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => return None,
    };
    let mut content_length = 0;
    let mut chunked = false;
    for line in lines.take_while(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':')?;
        if !token(name) {
            return None;
        }
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            content_length = value.parse().ok()?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            if value.eq_ignore_ascii_case("close") {
                keep_alive = false;
            } else if value.eq_ignore_ascii_case("keep-alive") {
                keep_alive = true;
            }
        }
    }
    Some(Request {
        method,
        path,
        keep_alive,
        content_length,
        chunked,
    })
}

/// Writes one response into the buffer (the caller decides when to flush); one that closes
/// the connection is flushed at once.
async fn respond<W: AsyncWrite + Unpin>(
    wr: &mut BufWriter<W>,
    status: &str,
    body: &[u8],
    keep_alive: bool,
) -> io::Result<()> {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let head = format!(
        "HTTP/1.1 {status}\r\nServer: example\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n",
        body.len()
    );
    wr.write_all(head.as_bytes()).await?;
    wr.write_all(body).await?;
    if !keep_alive {
        wr.flush().await?;
    }
    Ok(())
}
