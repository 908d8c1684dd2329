//! An echo server that shuts down cleanly on Ctrl-C (`SIGINT`) or `SIGTERM`, whichever comes
//! first: what a service does when a terminal user presses Ctrl-C, or when systemd, Docker or
//! Kubernetes stops it (they send `SIGTERM`, then `SIGKILL` after a grace period).
//!
//! The shape is asyncio's:
//!
//! ```python
//! server = await evloop::streams::start_server(echo, "127.0.0.1", port)
//! stop = asyncio.Event()
//! loop.add_signal_handler(signal.SIGINT, stop.set)
//! loop.add_signal_handler(signal.SIGTERM, stop.set)
//! await stop.wait()
//! server.close()                                        # stop accepting
//! await asyncio.wait_for(server.wait_closed(), GRACE)   # let open connections finish
//! ```
//!
//! Here the two signals are awaited directly: `signal::ctrl_c()` and `signal::recv(Signal::TERM)`, raced
//! with `select`. Neither future blocks a thread: a signal handler in the syscalls crate writes
//! to an eventfd that the loop polls, and the loop wakes the task (see
//! `docs/04-signals-and-processes.md`). While the futures exist, the signals do not kill the
//! process; once the first one has arrived both are dropped and the dispositions from before
//! are back (normally the defaults), so a *second* Ctrl-C during the grace period kills the
//! server at once, the usual "press it again to force" behaviour.
//!
//! On the signal the server stops listening (`Server::close`: new connections are refused),
//! gives the connections still open up to 2 seconds to finish (`timeout` around
//! `Server::wait_closed`), prints what it did, and exits with status 0. Connections still open
//! after that are closed when `evloop::run` cancels their tasks.
//!
//! `[--port N]` (default 0: any free port; it prints `listening on 127.0.0.1:PORT`).
//! `[--self-test]`: no terminal needed. A client task connects and echoes one line, the process
//! sends itself `SIGINT` after 200 ms (`evloop_syscalls::raise_in_process`), then the client tries
//! a second connection (refused: the listener is closed) and closes its first one 100 ms after
//! the signal, which lets the server finish its shutdown.

use std::error::Error;
use std::io::{self, Write};
use std::time::{Duration, Instant};

use evloop::signal::{self, Signal};
use evloop::{
    streams::{StreamReader, StreamWriter},
    task::{Either, TaskBuilder, select},
    time::{sleep, timeout},
};

/// How long open connections may take to finish after the signal.
const GRACE: Duration = Duration::from_secs(2);

/// One connection: each line comes back as it is, until the client closes.
async fn echo(reader: StreamReader, writer: StreamWriter) {
    loop {
        match reader.readline().await {
            Ok(line) if line.is_empty() => return, // end of stream: returning closes the connection
            Ok(line) => writer.write(&line),
            Err(e) => return eprintln!("connection: {e}"),
        }
        if let Err(e) = writer.drain().await {
            return eprintln!("connection: {e}");
        }
    }
}

/// `--self-test`: plays a client and a process manager.
async fn self_test(port: u16) -> io::Result<()> {
    let start = Instant::now();
    let (reader, writer) = evloop::streams::open_connection("127.0.0.1", port).await?;
    writer.write(b"hello\n");
    let reply = reader.readline().await?;
    println!(
        "self-test: sent hello, got back {:?}",
        String::from_utf8_lossy(&reply).trim_end()
    );

    sleep(Duration::from_millis(200).saturating_sub(start.elapsed())).await;
    println!(
        "self-test: sending SIGINT to this process (pid {})",
        evloop_syscalls::getpid()
    );
    evloop_syscalls::raise_in_process(Signal::INT)?;

    sleep(Duration::from_millis(50)).await;
    match evloop::streams::open_connection("127.0.0.1", port).await {
        Ok(_) => println!("self-test: a new connection was accepted after the signal (unexpected)"),
        Err(e) => println!("self-test: a new connection after the signal fails: {e}"),
    }

    sleep(Duration::from_millis(50)).await;
    println!("self-test: closing the first connection");
    writer.close();
    writer.wait_closed().await
}

struct Options {
    port: u16,
    self_test: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        port: 0,
        self_test: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => {
                let v = args.next().ok_or("--port needs a value")?;
                o.port = v.parse().map_err(|e| format!("--port {v}: {e}"))?;
            }
            "--self-test" => o.self_test = true,
            _ => return Err(format!("unknown argument {a}; usage: [--port N] [--self-test]")),
        }
    }
    Ok(o)
}

async fn serve(opts: Options) -> Result<(), Box<dyn Error>> {
    // Watch both signals before anything can send them: from here on they wake this task
    // instead of killing the process.
    let interrupted = signal::ctrl_c();
    let terminated = signal::recv(Signal::TERM);

    let server = evloop::streams::start_server(echo, "127.0.0.1", opts.port).await?;
    let addr = server.local_addr();
    println!(
        "listening on {addr} (pid {}); stop with Ctrl-C or SIGTERM",
        evloop_syscalls::getpid()
    );
    io::stdout().flush()?; // a script waiting for the line gets it now

    if opts.self_test {
        TaskBuilder::new().name("self-test").spawn(async move {
            if let Err(e) = self_test(addr.port()).await {
                eprintln!("self-test: {e}");
            }
        })?;
    }

    // Serve until one of the signals arrives; the other future is dropped.
    let which = match select(interrupted, terminated).await {
        Either::Left(r) => r.map(|()| "SIGINT (Ctrl-C)")?,
        Either::Right(r) => r.map(|()| "SIGTERM")?,
    };
    let open = server.active_connections();
    println!("{which} received: closing the listener; {open} connection(s) open, waiting up to {GRACE:?}");

    let since = Instant::now();
    server.close();
    match timeout(GRACE, server.wait_closed()).await {
        Ok(()) => println!("all connections closed after {:.1?}; exiting", since.elapsed()),
        Err(_) => println!(
            "{} connection(s) still open after {GRACE:?}; closing them and exiting",
            server.active_connections()
        ),
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let opts = parse_args()?;
    evloop::run(serve(opts))?
}
