//! Seed 001's upper-casing echo server on asyncio's callback API: `loop.create_server(factory,
//! host, port)` with a `Protocol`. No task per connection: each epoll event for a socket
//! schedules its transport's handler, which `recv`s and calls `data_received`.
//!
//! (The `seed*` examples are Rust versions of the short Python asyncio programs in the study
//! notes that evloop's design was worked out from, numbered after the note each comes from.)
//!
//! TCP delivers bytes, not lines, so the protocol frames them: complete lines go back
//! upper-cased in one `Transport::write` (one `send(2)` when the socket takes it all), and an
//! unfinished line waits in `partial` for the rest.
//!
//! `[--port N] [--once] [--seconds N]`, and it stops at end of stdin (see `seed001_common`).

use std::error::Error;
use std::io;

use evloop::{
    protocol::{Protocol, Transport},
    task::Promise,
};

mod seed001_common;
use seed001_common::{Options, announce, stop_signal};

/// Longest unfinished line we keep; a client that sends more without a newline is cut off.
const MAX_LINE: usize = 64 * 1024;

struct UpperEcho {
    transport: Option<Transport>,
    partial: Vec<u8>,
    out: Vec<u8>,
    once: Option<Promise<()>>,
}

impl Protocol for UpperEcho {
    fn connection_made(&mut self, transport: Transport) {
        self.transport = Some(transport); // asyncio: self.transport = transport
    }

    fn data_received(&mut self, data: &[u8]) {
        let Some(t) = &self.transport else { return };
        let Some(last) = data.iter().rposition(|&b| b == b'\n') else {
            self.partial.extend_from_slice(data);
            if self.partial.len() > MAX_LINE {
                t.abort();
            }
            return;
        };
        // Every line completed by this chunk, upper-cased, in one write; the tail waits.
        self.out.clear();
        let lines = self.partial.drain(..).chain(data[..=last].iter().copied());
        self.out.extend(lines.map(|b| b.to_ascii_uppercase()));
        t.write(&self.out);
        self.partial.extend_from_slice(&data[last + 1..]);
    }

    fn eof_received(&mut self) -> bool {
        // The client shut its side: echo an unterminated last line; `false` closes the transport
        // once its write buffer is flushed.
        if let Some(t) = &self.transport {
            self.partial.make_ascii_uppercase();
            t.write(&self.partial);
        }
        false
    }

    fn connection_lost(&mut self, _error: Option<io::Error>) {
        self.transport = None;
        if let Some(done) = &self.once {
            let _ = done.set_result(());
        }
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let opts = Options::parse()?;
    evloop::run(async move {
        let lp = evloop::event_loop::get_running_loop()?;
        let done = stop_signal(&lp, opts.seconds);
        let on_close = opts.once.then(|| done.clone());
        let factory = move || UpperEcho {
            transport: None,
            partial: Vec::new(),
            out: Vec::new(),
            once: on_close.clone(),
        };
        let server = lp.create_server(factory, "127.0.0.1", opts.port).await?;
        announce(server.local_addr())?;
        let _ = done.await; // the server works from the reactor's callbacks meanwhile
        server.close();
        Ok(())
    })?
}
