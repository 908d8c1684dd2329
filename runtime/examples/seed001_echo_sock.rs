//! Seed 001's upper-casing echo server, closest to the seed's own code: a raw non-blocking
//! socket and asyncio's low-level `loop.sock_accept` / `loop.sock_recv` / `loop.sock_sendall`,
//! with a task per connection (the seed's `serve_client` coroutine).
//!
//! (The `seed*` examples are Rust versions of the short Python asyncio programs in the study
//! notes that evloop's design was worked out from, numbered after the note each comes from.)
//!
//! Upper-casing works byte by byte, so this version needs no line framing: whatever one `recv`
//! returns goes straight back, and the client sees the same stream of bytes as from the line
//! servers. Two of the seed's flaws are gone: `sock_sendall` loops until everything is sent (the
//! seed's `send` could send part of the reply), and the socket is registered with epoll once,
//! where the seed registered and unregistered it around every wait.
//!
//! `[--port N] [--once] [--seconds N]`, and it stops at end of stdin (see `seed001_common`).

use std::error::Error;
use std::io;
use std::time::Duration;

use evloop::event_loop::LoopHandle;
use evloop::net::{Domain, SockAddr, SockType, Socket};

mod seed001_common;
use seed001_common::{Options, announce, stop_signal};

/// The seed's `serve_client`: receive, upper-case, send, until the client closes.
async fn serve_client(lp: LoopHandle, conn: Socket) -> io::Result<()> {
    loop {
        let mut data = lp.sock_recv(&conn, 4096).await?; // one recv(2) when data is there
        if data.is_empty() {
            return Ok(()); // end of stream: dropping `conn` deregisters it, then closes it
        }
        data.make_ascii_uppercase();
        lp.sock_sendall(&conn, &data).await?; // send(2), MSG_NOSIGNAL
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let opts = Options::parse()?;
    evloop::run(async move {
        let lp = evloop::event_loop::get_running_loop()?;
        let done = stop_signal(&lp, opts.seconds);
        // The seed's create_listen_socket: socket, SO_REUSEADDR, bind, listen.
        let listener = Socket::new(Domain::Inet, SockType::Stream)?;
        listener.set_reuseaddr(true)?;
        listener.bind(&SockAddr::Inet(([127, 0, 0, 1], opts.port).into()))?;
        listener.listen(1024)?;
        announce(listener.local_addr()?)?;
        let (l, d) = (lp.clone(), done.clone());
        evloop::spawn(async move {
            loop {
                let conn = match l.sock_accept(&listener).await {
                    Ok((conn, _peer)) => conn,
                    Err(e) => {
                        // EMFILE and friends: pause instead of retrying in a tight loop.
                        eprintln!("accept: {e}; retrying in 100 ms");
                        evloop::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let _ = conn.set_nodelay(true); // small replies go out at once
                let client = serve_client(l.clone(), conn);
                if opts.once {
                    let _ = client.await;
                    let _ = d.set_result(());
                    return;
                }
                evloop::spawn(async move {
                    if let Err(e) = client.await {
                        eprintln!("client: {e}");
                    }
                });
            }
        });
        let _ = done.await;
        Ok(()) // evloop::run cancels the tasks left: the accept loop and open connections
    })?
}
