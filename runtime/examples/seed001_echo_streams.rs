//! Seed 001's upper-casing echo server on asyncio's high-level streams: `asyncio.start_server`
//! with a `client_connected_cb(reader, writer)` that loops on `readline` / `write` / `drain`.
//! Each connection gets its own task, as the seed's `serve_client` coroutine did.
//!
//! (The `seed*` examples are Rust versions of the short Python asyncio programs in the study
//! notes that evloop's design was worked out from, numbered after the note each comes from.)
//!
//! Underneath, each connection is a transport and a protocol (see `seed001_echo_protocol`): the
//! protocol feeds received bytes into the `StreamReader` and wakes the task parked in
//! `readline`; `write` hands bytes to the transport, and `drain` waits only when its buffer is
//! above the high-water mark (back-pressure).
//!
//! `[--port N] [--once] [--seconds N]`, and it stops at end of stdin (see `seed001_common`).

use std::error::Error;

use evloop::streams::{StreamReader, StreamWriter};

mod seed001_common;
use seed001_common::{Options, announce, stop_signal};

/// The `client_connected_cb`: one line in, the same line upper-cased out, until end of stream.
async fn handle_client(reader: StreamReader, writer: StreamWriter) {
    loop {
        let line = match reader.readline().await {
            Ok(line) if line.is_empty() => return,     // end of stream, nothing left over
            Ok(line) => line,                          // a line with its b'\n' (or a last, partial one)
            Err(e) => return eprintln!("client: {e}"), // a line over the 64 KiB limit, a reset, ...
        };
        writer.write(&line.to_ascii_uppercase()); // sent at once if the socket takes it
        if let Err(e) = writer.drain().await {
            return eprintln!("client: {e}");
        }
    }
    // Returning drops both streams, which closes the connection once its buffer is flushed.
}

fn main() -> Result<(), Box<dyn Error>> {
    let opts = Options::parse()?;
    evloop::run(async move {
        let lp = evloop::event_loop::get_running_loop()?;
        let done = stop_signal(&lp, opts.seconds);
        let on_close = opts.once.then(|| done.clone());
        let client_connected = move |reader, writer| {
            let on_close = on_close.clone();
            async move {
                handle_client(reader, writer).await;
                if let Some(done) = on_close {
                    let _ = done.set_result(());
                }
            }
        };
        let server = evloop::streams::start_server(client_connected, "127.0.0.1", opts.port).await?;
        announce(server.local_addr())?;
        let _ = done.await; // each connection's task runs meanwhile
        server.close();
        Ok(())
    })?
}
