//! A publish/subscribe server, written for tokio and ported to evloop by changing its imports:
//! `tests/examples/port_tokio_pubsub.rs` is the tokio original, and `tests/tests/examples/port.rs`
//! checks that the two files differ in nothing but their `use` lines (and this paragraph).
//!
//! The protocol is line-based, one command per line:
//! - `SUB topic` subscribes the connection to `topic` (answer `+OK`);
//! - `UNSUB topic` ends it (`+OK`);
//! - `PUB topic text...` sends `topic text...` to every subscriber of `topic`, the publisher
//!   included if it subscribed, and answers `:N`, the number of subscribers reached;
//! - anything else gets `-ERR unknown command`.
//!
//! ```text
//! cargo run -p evloop --example pubsub_server -- 127.0.0.1:7001
//! nc 127.0.0.1 7001      # SUB news, then in another: PUB news hello
//! ```
//!
//! The shape is a typical tokio program's: the subscriptions in an `Arc<Mutex<HashMap>>`
//! (a std mutex, never held across an `.await`), one task per connection, and each connection's
//! outbox a bounded `mpsc` channel that the task drains while it also reads commands, the two
//! raced with `select!`. A subscriber whose outbox is full misses the message (the publisher
//! never waits for a slow reader), as Redis drops slow pub/sub clients instead of blocking.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use evloop::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use evloop::net::{TcpListener, TcpStream};
use evloop::sync::mpsc;
use evloop::{main, select, spawn};

/// Messages a subscriber may have waiting before new ones are dropped for it.
const OUTBOX: usize = 1024;

/// Each topic's subscribers: connection number -> its outbox.
type Topics = Arc<Mutex<HashMap<String, HashMap<u64, mpsc::Sender<Arc<str>>>>>>;

#[main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:7001".to_string());
    let listener = TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    serve(listener).await?;
    Ok(())
}

/// Accepts connections forever, one task each.
pub async fn serve(listener: TcpListener) -> io::Result<()> {
    let topics = Topics::default();
    let next_id = Arc::new(AtomicU64::new(1));
    loop {
        let (socket, _) = listener.accept().await?;
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let topics = topics.clone();
        spawn(async move {
            let _ = client(socket, id, &topics).await;
            // Gone: leave every topic (and forget the topics nobody is left on).
            let mut map = topics.lock().unwrap();
            map.retain(|_, subs| {
                subs.remove(&id);
                !subs.is_empty()
            });
        });
    }
}

/// Serves one connection until it closes: its commands, and the messages of its topics.
async fn client(socket: TcpStream, id: u64, topics: &Topics) -> io::Result<()> {
    let (rd, mut wr) = socket.into_split();
    let mut lines = BufReader::new(rd).lines();
    let (tx, mut rx) = mpsc::channel::<Arc<str>>(OUTBOX);
    loop {
        select! {
            line = lines.next_line() => {
                let Some(line) = line? else { return Ok(()) };
                let reply = command(&line, id, &tx, topics);
                wr.write_all(reply.as_bytes()).await?;
            }
            Some(msg) = rx.recv() => {
                wr.write_all(msg.as_bytes()).await?;
            }
        }
    }
}

/// Carries out one command and returns its answer line.
fn command(line: &str, id: u64, tx: &mpsc::Sender<Arc<str>>, topics: &Topics) -> String {
    let mut words = line.trim_end().splitn(3, ' ');
    let mut map = topics.lock().unwrap();
    match (words.next(), words.next(), words.next()) {
        (Some("SUB"), Some(topic), None) => {
            map.entry(topic.to_string()).or_default().insert(id, tx.clone());
            "+OK\n".to_string()
        }
        (Some("UNSUB"), Some(topic), None) => {
            if let Some(subs) = map.get_mut(topic) {
                subs.remove(&id);
                if subs.is_empty() {
                    map.remove(topic);
                }
            }
            "+OK\n".to_string()
        }
        (Some("PUB"), Some(topic), Some(text)) => {
            let msg: Arc<str> = format!("{topic} {text}\n").into();
            let reached = map.get(topic).map_or(0, |subs| {
                subs.values().filter(|s| s.try_send(msg.clone()).is_ok()).count()
            });
            format!(":{reached}\n")
        }
        _ => "-ERR unknown command\n".to_string(),
    }
}
