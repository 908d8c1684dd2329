//! A line-based chat server: every line a client sends goes to every other client as
//! `guest-N: line`; joins and departures are announced (`* guest-N joined`, `* guest-N left`),
//! and one client leaving, or failing, disturbs nobody else.
//!
//! ```text
//! cargo run -p evloop --example chat_server -- 127.0.0.1:7000
//! nc 127.0.0.1 7000     # in two or more terminals
//! ```
//!
//! The shape is asyncio's: one task per client and a shared table of their outboxes (a
//! single-threaded program can share it with `Rc<RefCell<..>>`, no lock). Each client task
//! waits on two things at once with `select!`: the next line from its socket
//! (`Lines::next_line`, cancel-safe, so a half-received line survives the other branch winning)
//! and the next message in its outbox (a bounded `mpsc` channel). A broadcast is a `try_send`
//! into every other outbox and never waits: a client that does not read, whose outbox is full,
//! is disconnected instead of slowing everyone down or growing the server's memory. That is a
//! cancellation: its task may be stuck in a `write_all` the client will never drain, so the
//! broadcaster cancels the task, and dropping its future runs the cleanup (a guard's `Drop`
//! leaves the table, announces the departure, and the socket closes).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use evloop::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use evloop::net::{TcpListener, TcpStream};
use evloop::sync::mpsc;
use evloop::task::TaskRef;

/// Messages a client may have waiting before it counts as not reading.
const OUTBOX: usize = 256;
/// The longest line a client may send (a longer one disconnects it once it has arrived).
const MAX_LINE: usize = 4096;

/// Every connected client's outbox and task, by client number.
type Peers = Rc<RefCell<HashMap<u64, (mpsc::Sender<Rc<str>>, Option<TaskRef>)>>>;

#[evloop::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:7000".to_string());
    let listener = TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    serve(listener).await?;
    Ok(())
}

/// Accepts clients forever.
pub async fn serve(listener: TcpListener) -> io::Result<()> {
    let peers: Peers = Rc::default();
    let mut next_id = 0;
    loop {
        let (socket, _) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                eprintln!("accept: {e}");
                evloop::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        next_id += 1;
        let peers = peers.clone();
        evloop::spawn(client(socket, next_id, peers));
    }
}

/// Sends `msg` to every client but `from`; disconnects the ones whose outbox is full.
fn broadcast(peers: &Peers, from: u64, msg: &str) {
    let msg: Rc<str> = Rc::from(msg);
    let mut stalled = Vec::new();
    for (id, (outbox, _)) in peers.borrow().iter() {
        if *id != from && outbox.try_send(msg.clone()).is_err() {
            stalled.push(*id);
        }
    }
    for id in stalled {
        let removed = peers.borrow_mut().remove(&id);
        // Cancelling only flags the task and wakes it: its future is dropped at its next step,
        // not inside this loop.
        if let Some((_, Some(task))) = removed {
            task.cancel();
        }
    }
}

/// Leaves the table and says goodbye when the client's task ends, however it ends.
struct Membership {
    peers: Peers,
    id: u64,
    name: String,
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.peers.borrow_mut().remove(&self.id);
        broadcast(&self.peers, self.id, &format!("* {} left\n", self.name));
    }
}

async fn client(mut socket: TcpStream, id: u64, peers: Peers) {
    let name = format!("guest-{id}");
    let (outbox, mut inbox) = mpsc::channel::<Rc<str>>(OUTBOX);
    peers.borrow_mut().insert(id, (outbox, evloop::task::current_task()));
    broadcast(&peers, id, &format!("* {name} joined\n"));
    let _membership = Membership {
        peers: peers.clone(),
        id,
        name: name.clone(),
    };
    let (rd, mut wr) = socket.split();
    let mut lines = BufReader::new(rd).lines();
    if wr
        .write_all(format!("welcome, you are {name}\n").as_bytes())
        .await
        .is_err()
    {
        return;
    }
    loop {
        evloop::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) if line.len() <= MAX_LINE => {
                    broadcast(&peers, id, &format!("{name}: {line}\n"));
                }
                // The end of the stream, a reset, an overlong or non-UTF-8 line: goodbye.
                _ => break,
            },
            msg = inbox.recv() => match msg {
                Some(msg) => {
                    if wr.write_all(msg.as_bytes()).await.is_err() {
                        break;
                    }
                }
                // Its sender was dropped (the table let go of it): leave.
                None => break,
            },
        }
    }
}
