//! The protocol transport at the edges the simulated kernel reaches and loopback rarely does,
//! each a property asserted over seeds: the calls a steady echo makes (counted from the
//! kernel's trace, which records every simulated call: the per-thread syscall counters do not
//! see simulated calls), a reader that pauses and resumes under a writer that fills its
//! buffers, water marks moved while the protocol is paused, a write of exactly the high-water
//! mark, and a write pipe whose reader is gone.
//!
//! Data flow: each test runs a server and a client on one loop (the body of a
//! `#[evloop::test(simulate)]` test); the protocols record what they saw in shared cells, and
//! the assertions read those and the trace window between two marks.
#![cfg(feature = "simulation")]

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use evloop::event_loop::get_running_loop;
use evloop::protocol::{Protocol, Transport};
use evloop::sys::sim::Kernel;

// ---------------------------------------------------------------------------------------------
// The trace window: the simulated calls made between two marks, per file.

/// Call counts: (call name, file) to how many.
type Calls = BTreeMap<(String, String), u64>;

/// A mark in the kernel's trace (records so far).
fn mark() -> u64 {
    Kernel::current().expect("on the simulated kernel").records()
}

/// Per call name, per file (`#id` in the trace): how many calls the records after `from` made.
fn calls_since(from: u64) -> Calls {
    let k = Kernel::current().expect("on the simulated kernel");
    let n = (k.records() - from) as usize;
    let trace = k.trace_tail(n);
    let mut out = BTreeMap::new();
    for line in trace.lines().filter(|l| !l.starts_with("...")) {
        // "     0.000123 T0 recv(#7, 65536) = 64"
        let Some(call) = line.split_whitespace().nth(2) else {
            continue;
        };
        let Some((name, rest)) = call.split_once('(') else {
            continue;
        };
        let file = rest.trim_end_matches([',', ')']).to_string();
        *out.entry((name.to_string(), file)).or_insert(0) += 1;
    }
    out
}

/// How many `name` calls the window made, over all files.
fn total(calls: &Calls, name: &str) -> u64 {
    calls.iter().filter(|((n, _), _)| n == name).map(|(_, c)| c).sum()
}

/// Waits in simulated time (1 ms steps) until `cond` holds; fails after `limit`. A stalled run
/// fails quickly: the clock jumps from one step to the next.
async fn eventually(what: &str, limit: Duration, cond: impl Fn() -> bool) {
    let done = evloop::time::timeout(limit, async {
        while !cond() {
            evloop::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    assert!(done.is_ok(), "{what}: not within {limit:?}");
}

// ---------------------------------------------------------------------------------------------
// A steady echo: one recv and one send per message on each side, no epoll_ctl.

const MSG: usize = 64;
const WARMUP: usize = 5;
const ROUND_TRIPS: usize = 40;

struct EchoServer(Option<Transport>);

impl Protocol for EchoServer {
    fn connection_made(&mut self, t: Transport) {
        self.0 = Some(t);
    }
    fn data_received(&mut self, data: &[u8]) {
        assert_eq!(data.len(), MSG, "one message per read");
        if let Some(t) = &self.0 {
            t.write(data);
        }
    }
}

/// Sends a message, waits for its echo, `WARMUP + ROUND_TRIPS` times; opens the window after
/// the warm-up and closes it at the last echo.
struct PingClient {
    t: Option<Transport>,
    seen: usize,
    window: Rc<Cell<Option<u64>>>,
    result: Rc<RefCell<Option<Calls>>>,
}

impl Protocol for PingClient {
    fn connection_made(&mut self, t: Transport) {
        t.write(&[0u8; MSG]);
        self.t = Some(t);
    }
    fn data_received(&mut self, data: &[u8]) {
        assert_eq!(data.len(), MSG, "one echo per read");
        self.seen += 1;
        if self.seen == WARMUP {
            self.window.set(Some(mark()));
        }
        if self.seen == WARMUP + ROUND_TRIPS {
            *self.result.borrow_mut() = Some(calls_since(self.window.get().unwrap()));
            return;
        }
        if let Some(t) = &self.t {
            t.write(&[self.seen as u8; MSG]);
        }
    }
}

/// The steady state of syscalls.rs's count tests, both sides evloop transports on one loop:
/// per round trip each side makes one recv (a read shorter than the buffer drained the queue,
/// so no second recv to see EAGAIN) and one send, and nothing calls epoll_ctl.
#[evloop::test(simulate(seeds = 8))]
async fn a_steady_echo_makes_one_recv_and_one_send_per_message_and_no_epoll_ctl() {
    let lp = get_running_loop().unwrap();
    let server = lp.create_server(|| EchoServer(None), "127.0.0.1", 0).await.unwrap();
    let port = server.local_addr().port();
    let result = Rc::new(RefCell::new(None));
    let client = PingClient {
        t: None,
        seen: 0,
        window: Rc::default(),
        result: result.clone(),
    };
    let t = lp.create_connection(client, "127.0.0.1", port).await.unwrap();
    eventually("the last echo", Duration::from_secs(2), || result.borrow().is_some()).await;
    t.close();
    server.close();
    let calls = result.borrow_mut().take().unwrap();
    // The window runs from the client's WARMUP-th echo to its last: ROUND_TRIPS messages each
    // way (the client's last send is the one whose echo closes the window).
    let n = ROUND_TRIPS as u64;
    assert_eq!(total(&calls, "epoll_ctl"), 0, "no epoll_ctl in steady state: {calls:?}");
    let per_file = |name: &str| -> Vec<u64> { calls.iter().filter(|((c, _), _)| c == name).map(|(_, &k)| k).collect() };
    assert_eq!(per_file("recv"), [n, n], "one recv per message on each side: {calls:?}");
    assert_eq!(per_file("send"), [n, n], "one send per message on each side: {calls:?}");
}

// ---------------------------------------------------------------------------------------------
// A writer that fills the buffers of a reader that pauses after every read.

/// Bytes the writer sends in one `write`.
const BULK: usize = 1 << 20;

/// What the pausing reader saw.
#[derive(Default)]
struct ReaderLog {
    got: Cell<usize>,
    paused: Cell<bool>,
    reads: Cell<usize>,
    /// Broken promises: data while paused, `is_reading` disagreeing with pause/resume.
    wrong: RefCell<Vec<String>>,
    /// The trace window from the first read to the last (the calls made while the writer was
    /// blocked on the reader).
    calls: RefCell<Option<Calls>>,
    first_read: Cell<u64>,
}

/// Pauses reading after every `data_received` and resumes a simulated millisecond later;
/// answers "done" once `BULK` bytes arrived.
struct PausingReader {
    t: Option<Transport>,
    log: Rc<ReaderLog>,
}

impl Protocol for PausingReader {
    fn connection_made(&mut self, t: Transport) {
        if !t.is_reading() {
            self.log.wrong.borrow_mut().push("not reading when made".into());
        }
        self.t = Some(t);
    }
    fn data_received(&mut self, data: &[u8]) {
        let log = &self.log;
        if log.paused.get() {
            log.wrong
                .borrow_mut()
                .push(format!("{} bytes while paused", data.len()));
        }
        if log.reads.get() == 0 {
            log.first_read.set(mark());
        }
        log.reads.set(log.reads.get() + 1);
        log.got.set(log.got.get() + data.len());
        let t = self.t.clone().unwrap();
        if log.got.get() == BULK {
            *log.calls.borrow_mut() = Some(calls_since(log.first_read.get()));
            t.write(b"done");
            return;
        }
        t.pause_reading();
        if t.is_reading() {
            log.wrong.borrow_mut().push("is_reading after pause_reading".into());
        }
        log.paused.set(true);
        let log = log.clone();
        get_running_loop()
            .unwrap()
            .call_later(Duration::from_millis(1), move || {
                log.paused.set(false);
                t.resume_reading();
                if !t.is_reading() {
                    log.wrong.borrow_mut().push("not reading after resume_reading".into());
                }
            })
            .unwrap();
    }
}

/// What the writer saw.
#[derive(Default)]
struct WriterLog {
    pauses: Cell<u32>,
    resumes: Cell<u32>,
    answer: RefCell<Vec<u8>>,
}

/// Writes `BULK` bytes at once and waits for the answer.
struct BulkWriter(Rc<WriterLog>);

impl Protocol for BulkWriter {
    fn connection_made(&mut self, t: Transport) {
        t.write(&vec![7u8; BULK]);
    }
    fn data_received(&mut self, data: &[u8]) {
        self.0.answer.borrow_mut().extend_from_slice(data);
    }
    fn pause_writing(&mut self) {
        self.0.pauses.set(self.0.pauses.get() + 1);
    }
    fn resume_writing(&mut self) {
        self.0.resumes.set(self.0.resumes.get() + 1);
    }
}

/// Starts a pausing reader's server and a bulk writer's connection to it.
async fn bulk_pair() -> (Rc<ReaderLog>, Rc<WriterLog>, Transport, evloop::protocol::Server) {
    let lp = get_running_loop().unwrap();
    let rlog = Rc::new(ReaderLog::default());
    let r = rlog.clone();
    let server = lp
        .create_server(
            move || PausingReader {
                t: None,
                log: r.clone(),
            },
            "127.0.0.1",
            0,
        )
        .await
        .unwrap();
    let port = server.local_addr().port();
    let wlog = Rc::new(WriterLog::default());
    let t = lp
        .create_connection(BulkWriter(wlog.clone()), "127.0.0.1", port)
        .await
        .unwrap();
    (rlog, wlog, t, server)
}

/// A reader that pauses after every read gets no data while paused, gets the data that came
/// meanwhile once it resumes (no new edge announces it), and `is_reading` follows; the writer,
/// blocked on full buffers, is woken by writability alone and never reads for it (its peer
/// sends nothing until the end).
#[evloop::test(simulate(seeds = 6))]
async fn a_pausing_reader_under_a_bulk_writer_gets_everything_in_order_and_nothing_while_paused() {
    let (rlog, wlog, t, server) = bulk_pair().await;
    let what = || {
        format!(
            "the reader's answer (it got {} of {BULK} bytes in {} reads)",
            rlog.got.get(),
            rlog.reads.get()
        )
    };
    let answered = evloop::time::timeout(Duration::from_secs(5), async {
        while wlog.answer.borrow().len() < 4 {
            evloop::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    assert!(answered.is_ok(), "stalled: {}", what());
    assert_eq!(&wlog.answer.borrow()[..], b"done");
    assert_eq!(rlog.wrong.borrow().as_slice(), &[] as &[String]);
    assert!(wlog.pauses.get() >= 1, "a 1 MiB write went above the high-water mark");
    // The writer's socket is the one that sent in the window; it received nothing then, so it
    // made no recv (a writable event is no reason to read).
    let calls = rlog.calls.borrow_mut().take().unwrap();
    for ((name, file), n) in &calls {
        if name == "send" {
            let recvs = calls.get(&("recv".to_string(), file.clone())).copied().unwrap_or(0);
            assert_eq!(
                recvs, 0,
                "the writer {file} ({n} sends) read with nothing to read: {calls:?}"
            );
        }
    }
    t.close();
    server.close();
}

/// Raising the water marks while the protocol is paused resumes it at once when what is
/// queued is now at or below the new low mark (not at the next flush).
#[evloop::test(simulate(seeds = 6))]
async fn raising_the_water_marks_while_paused_resumes_writing_at_once() {
    let (rlog, wlog, t, server) = bulk_pair().await;
    let paused = evloop::time::timeout(Duration::from_secs(1), async {
        while wlog.pauses.get() == 0 {
            evloop::time::sleep(Duration::from_micros(50)).await;
        }
    })
    .await;
    assert!(paused.is_ok(), "a 1 MiB write pauses the protocol");
    if wlog.resumes.get() == 0 {
        assert!(t.write_buffer_size() <= BULK);
        t.set_write_buffer_limits(Some(4 * BULK), None);
        assert_eq!(
            wlog.resumes.get(),
            1,
            "resumed by the new marks ({} queued)",
            t.write_buffer_size()
        );
        assert_eq!(t.write_buffer_limits(), (4 * BULK, BULK));
    }
    eventually("the reader's answer", Duration::from_secs(5), || {
        wlog.answer.borrow().len() >= 4
    })
    .await;
    assert_eq!(rlog.got.get(), BULK);
    t.close();
    server.close();
}

// ---------------------------------------------------------------------------------------------
// A write of exactly the high-water mark.

/// Counts what it receives.
struct Sink(Rc<RefCell<Vec<u8>>>);

impl Protocol for Sink {
    fn data_received(&mut self, data: &[u8]) {
        self.0.borrow_mut().extend_from_slice(data);
    }
}

/// Protocol that keeps nothing (the test holds the transport).
struct Quiet;

impl Protocol for Quiet {
    fn data_received(&mut self, _: &[u8]) {}
}

/// A write of exactly the high-water mark into an empty buffer is buffered like any smaller
/// write (only a larger one goes to the kernel at once): with the write after it in the same
/// iteration, it leaves in one send.
#[evloop::test(simulate(seeds = 6))]
async fn a_write_of_exactly_the_high_water_mark_is_buffered_and_leaves_with_the_next() {
    let lp = get_running_loop().unwrap();
    let got = Rc::new(RefCell::new(Vec::new()));
    let g = got.clone();
    let server = lp.create_server(move || Sink(g.clone()), "127.0.0.1", 0).await.unwrap();
    let port = server.local_addr().port();
    let t = lp.create_connection(Quiet, "127.0.0.1", port).await.unwrap();
    t.set_write_buffer_limits(Some(1000), Some(250));
    let from = mark();
    t.write(&[1u8; 1000]);
    t.write(&[2u8; 10]);
    assert_eq!(
        t.write_buffer_size(),
        1010,
        "both writes wait for the end of the iteration"
    );
    eventually("1010 bytes at the server", Duration::from_secs(2), || {
        got.borrow().len() >= 1010
    })
    .await;
    let calls = calls_since(from);
    assert_eq!(total(&calls, "send"), 1, "one send for both writes: {calls:?}");
    let mut want = vec![1u8; 1000];
    want.extend_from_slice(&[2u8; 10]);
    assert!(*got.borrow() == want, "the bytes in order");
    t.close();
    server.close();
}

// ---------------------------------------------------------------------------------------------
// A write pipe whose reader is gone.

/// Records `connection_lost`.
struct Lost(Rc<Cell<bool>>);

impl Protocol for Lost {
    fn data_received(&mut self, _: &[u8]) {}
    fn connection_lost(&mut self, _: Option<std::io::Error>) {
        self.0.set(true);
    }
}

/// The write end of a pipe learns that its reader is gone without writing (EPOLLERR alone, as
/// Linux reports it for a pipe's write end) and is lost.
#[evloop::test(simulate(seeds = 6))]
async fn a_write_pipe_is_lost_when_its_reader_closes_with_nothing_written() {
    let lp = get_running_loop().unwrap();
    let (rd, wr) = evloop::pipe::pipe().unwrap();
    let lost = Rc::new(Cell::new(false));
    let t = lp.connect_write_pipe(Lost(lost.clone()), wr).unwrap();
    evloop::time::sleep(Duration::from_millis(1)).await;
    assert!(!lost.get(), "lost while its reader is open");
    drop(rd);
    eventually(
        "the write pipe's loss after its reader closed",
        Duration::from_secs(2),
        || lost.get(),
    )
    .await;
    assert!(t.is_closing());
}

// ---------------------------------------------------------------------------------------------
// The bytes an incomplete read leaves, and the cause an I/O error carries.

/// A `readexactly` cut short by EOF hands back exactly the bytes it got (none at a bare EOF);
/// an error from the socket carries its `io::Error` as its source.
#[evloop::test(simulate(seeds = 6))]
async fn an_incomplete_read_hands_back_its_bytes_and_an_io_error_its_source() {
    use evloop::io::{AsyncReadExt, AsyncWriteExt};
    use std::error::Error as _;
    let listener = evloop::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = evloop::spawn(async move {
        // The first connection: "half", then EOF.
        let (mut s, _) = listener.accept().await.unwrap();
        s.write_all(b"half").await.unwrap();
        drop(s);
        // The second: reads a little and closes with the rest unread (a reset).
        let (mut s, _) = listener.accept().await.unwrap();
        let mut b = [0u8; 4];
        s.read_exact(&mut b).await.unwrap();
        drop(s);
    });
    let (r, _w) = evloop::streams::open_connection("127.0.0.1", port).await.unwrap();
    let err = r.readexactly(8).await.unwrap_err();
    assert_eq!(err.partial(), b"half");
    assert!(err.source().is_none(), "EOF is no I/O error");
    let err = r.readexactly(8).await.unwrap_err();
    assert_eq!(err.partial(), b"", "nothing after EOF");

    let (r, w) = evloop::streams::open_connection("127.0.0.1", port).await.unwrap();
    w.write(&[5u8; 64]);
    let _ = w.drain().await;
    match r.read(100).await {
        Err(e @ evloop::streams::StreamError::Io { .. }) => {
            let source = e.source().expect("an I/O error has its io::Error as source");
            assert!(source.to_string().contains("reset"), "{source}");
        }
        other => panic!("a read after the peer reset: {other:?}"),
    }
    server.await.unwrap();
}
