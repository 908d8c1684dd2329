//! What the three seed 001 echo servers share: their command line, the `listening on` line a
//! script reads the port from, and how they stop. (A directory without a `main.rs` is not an
//! example of its own; each server includes this file with `mod seed001_common;`.)
//!
//! (The `seed*` examples are Rust versions of the short Python asyncio programs in the study
//! notes that evloop's design was worked out from, numbered after the note each comes from.)

use std::fmt::Display;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::time::Duration;

use evloop::{event_loop::LoopHandle, task::Promise};

const USAGE: &str = "[--port N] [--once] [--seconds N]";

/// `[--port N]` (0, the default: any free port), `[--once]` (exit when the first client leaves),
/// `[--seconds N]` (exit after N seconds).
pub struct Options {
    pub port: u16,
    pub once: bool,
    pub seconds: Option<Duration>,
}

impl Options {
    pub fn parse() -> Result<Options, String> {
        let mut o = Options {
            port: 0,
            once: false,
            seconds: None,
        };
        let mut it = std::env::args().skip(1);
        while let Some(a) = it.next() {
            let mut value = || it.next().ok_or(format!("{a} needs a value"));
            match a.as_str() {
                "--port" => o.port = value()?.parse().map_err(|e| format!("--port: {e}"))?,
                "--seconds" => {
                    let s: f64 = value()?.parse().map_err(|e| format!("--seconds: {e}"))?;
                    o.seconds = Some(Duration::try_from_secs_f64(s).map_err(|e| format!("--seconds: {e}"))?);
                }
                "--once" => o.once = true,
                _ => return Err(format!("unknown argument {a}; usage: {USAGE}")),
            }
        }
        Ok(o)
    }
}

/// Prints `listening on ADDR` and flushes stdout, so a script waiting for the line gets it now.
pub fn announce(addr: impl Display) -> io::Result<()> {
    println!("listening on {addr}");
    io::stdout().flush()
}

/// A promise that resolves after `seconds`, or when stdin reaches end of file, whichever comes
/// first: a script that closes our stdin (or dies) never leaves the server behind. Stdin is
/// watched with a level-triggered `add_reader` on fd 0, asyncio's API: the callback runs in
/// every iteration while input is waiting, and reads at most 512 bytes each time.
pub fn stop_signal(lp: &LoopHandle, seconds: Option<Duration>) -> Promise<()> {
    let done: Promise<()> = lp.create_future();
    if let Some(after) = seconds {
        let d = done.clone();
        let _ = lp.call_later(after, move || drop(d.set_result(())));
    }
    let (l, d) = (lp.clone(), done.clone());
    let watched = lp.add_reader(0, move || {
        match evloop_syscalls::read(io::stdin().as_fd(), &mut [0; 512]) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Ok(n) if n > 0 => {} // typed input is ignored
            _ => {
                l.remove_reader(0); // end of file (or an error): stop watching, and stop
                let _ = d.set_result(());
            }
        }
    });
    if let Err(e) = watched {
        // /dev/null and regular files cannot be watched by epoll (EPERM).
        eprintln!("not watching stdin ({e}); stop with Ctrl-C or --seconds");
    }
    done
}
