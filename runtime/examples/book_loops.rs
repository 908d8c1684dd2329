//! Chapter 12's traced run (docs/12-thread-per-core.md): two loops behind one least-connections
//! acceptor, two clients, one shutdown. Run with `EVLOOP_TRACE=1`: every loop's trace lines are
//! collected (each names its loop) and printed loop by loop at the end, so that the two
//! threads' lines do not interleave at random.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evloop::io::{AsyncBufReadExt, AsyncWriteExt, BufReader as AsyncBufReader};
use evloop::runtime::{Builder, Policy, TcpListeners};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let rt = Builder::new()
        .loops(2)
        .grace_period(Duration::from_secs(1))
        .trace_sink(move |line| sink.lock().unwrap().push(line.to_string()))
        .build()?;
    let listeners = TcpListeners::bind(rt.handle(), "127.0.0.1:0".parse()?, Policy::LeastConnections)?;
    let addr = listeners.local_addr();
    rt.spawn_on_each(move |_ctx| {
        let listeners = listeners.clone();
        async move {
            listeners
                .serve(|conn, _peer| async move {
                    let (rd, mut wr) = conn.into_split();
                    let mut line = String::new();
                    if AsyncBufReader::new(rd).read_line(&mut line).await.is_ok() {
                        let _ = wr.write_all(line.to_uppercase().as_bytes()).await;
                    }
                })
                .await
        }
    });
    for name in ["first", "second"] {
        let mut client = TcpStream::connect(addr)?;
        writeln!(client, "hello from the {name} client")?;
        let mut reply = String::new();
        BufReader::new(client).read_line(&mut reply)?;
        print!("{reply}");
    }
    let stats = rt.handle().stats();
    rt.shutdown()?;
    let mut lines = lines.lock().unwrap().clone();
    // Loop by loop, each loop's lines in their own order.
    lines.sort_by_key(|l| {
        l.strip_prefix("[loop ")
            .and_then(|r| r.split([' ', ']']).next())
            .map(String::from)
    });
    for l in lines {
        println!("{l}");
    }
    let accepted: Vec<u64> = stats.loops().iter().map(|l| l.accepted).collect();
    println!("accepted per loop: {accepted:?}");
    Ok(())
}
