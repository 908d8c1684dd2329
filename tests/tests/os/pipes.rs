//! Pipes (`evloop::pipe`): async pipe ends (round trip, 8 MiB with back-pressure, EOF), `EPIPE`
//! instead of `SIGPIPE` (also in a child process where `SIGPIPE` has its default action, since
//! Rust test binaries ignore it), the loop's `SIGPIPE` block, asyncio's pipe transports
//! (`connect_read_pipe` / `connect_write_pipe` with protocols, over a child's stdout too), and
//! `sock_sendfile` falling back to read/write when `sendfile` cannot serve the pair.
//!
//! Every loop run is bounded ([`run_bounded`]).

use std::cell::{Cell, RefCell};
use std::io::{self, IoSlice};
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::net::Socket;
use evloop::pipe::{PipeReader, PipeWriter, pipe, pipe_with_loop};
use evloop::process::Stdio;
use evloop::sys::Syscall;
use evloop::sys::counters;
use evloop::{
    event_loop::{EventLoop, LoopHandle},
    io::{AsyncReadExt, AsyncWriteExt},
    protocol::{Protocol, Transport},
    spawn,
    time::sleep,
};
use evloop_syscalls as sys;
use evloop_syscalls::errno::EPIPE;
use evloop_tests::{Log, child, entries, log, pattern, push, run_bounded};

const SIGPIPE_BIT: u64 = 1 << (13 - 1);

/// A signal mask line of `/proc/thread-self/status` (`SigPnd`, `ShdPnd`, `SigBlk`, ...).
fn mask(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/thread-self/status").expect("/proc/thread-self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} line"));
    u64::from_str_radix(line[field.len() + 1..].trim(), 16).expect("a hex mask")
}

fn sigpipe_pending() -> bool {
    (mask("SigPnd") | mask("ShdPnd")) & SIGPIPE_BIT != 0
}

fn sigpipe_blocked() -> bool {
    mask("SigBlk") & SIGPIPE_BIT != 0
}

#[test]
fn pipe_round_trip_with_async_read_and_write() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp, async {
        let (mut r, mut w) = pipe().unwrap();
        w.write_all(b"hello ").await.unwrap();
        let n = w
            .write_vectored(&[IoSlice::new(b"pipe"), IoSlice::new(b""), IoSlice::new(b"!")])
            .await
            .unwrap();
        assert_eq!(n, 5);
        let mut buf = [0u8; 11];
        r.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"hello pipe!");
    });
    assert_eq!(lp.stats().io_registrations, 0, "both ends deregistered when dropped");
}

#[test]
fn large_transfer_of_8_mib_with_back_pressure() {
    const N: usize = 8 * 1024 * 1024;
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp, async {
        let (mut r, mut w) = pipe().unwrap();
        let data = Rc::new(pattern(N));
        let written = Rc::new(Cell::new(0usize));
        let (d, wr) = (data.clone(), written.clone());
        let writer = spawn(async move {
            for chunk in d.chunks(256 * 1024) {
                w.write_all(chunk).await.unwrap();
                wr.set(wr.get() + chunk.len());
            }
            // Dropping `w` closes the write end: the reader sees EOF.
        });
        sleep(Duration::from_millis(50)).await;
        // Nobody reads yet: the writer is parked on a full pipe (64 KiB), not done.
        assert!(
            written.get() < 1024 * 1024,
            "the writer got {} bytes into the pipe",
            written.get()
        );
        assert!(!writer.done());
        let mut got = Vec::with_capacity(N);
        r.read_to_end(&mut got).await.unwrap();
        writer.await.unwrap();
        assert_eq!(got.len(), N);
        assert!(got == *data, "the bytes differ");
    });
}

#[test]
fn the_reader_sees_eof_when_the_writer_drops_or_shuts_down() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp, async {
        let (mut r, mut w) = pipe().unwrap();
        w.write_all(b"last words").await.unwrap();
        drop(w);
        let mut got = Vec::new();
        r.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"last words");
        assert_eq!(r.read(&mut [0u8; 8]).await.unwrap(), 0, "EOF again");

        let (mut r, mut w) = pipe().unwrap();
        w.write_all(b"x").await.unwrap();
        w.shutdown().await.unwrap();
        w.shutdown().await.unwrap(); // idempotent
        let e = w.write(b"y").await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe, "{e}");
        let mut got = Vec::new();
        r.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"x");
    });
}

#[test]
fn writing_to_a_pipe_whose_reader_is_gone_is_epipe_and_no_sigpipe() {
    assert!(!sigpipe_blocked(), "the test thread starts with SIGPIPE unblocked");
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp, async {
        let (r, mut w) = pipe().unwrap();
        // The loop blocks SIGPIPE on its thread from its first pipe writer on.
        assert!(sigpipe_blocked());
        drop(r);
        let e = w.write(b"into the void").await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe, "{e}");
        assert_eq!(evloop::io::os_error(&e), Some(EPIPE), "{e}");
        assert!(!sigpipe_pending(), "a SIGPIPE is pending");
        // With the loop's block held a write costs one write (and one sigtimedwait after EPIPE
        // to take the signal back), no signal-mask calls.
        counters::reset();
        let e = w.write_all(&[1u8; 100]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe, "{e}");
        let c = counters::snapshot();
        assert_eq!(
            (
                c.get(Syscall::Write),
                c.get(Syscall::Sigtimedwait),
                c.get(Syscall::Sigprocmask)
            ),
            (1, 1, 0),
            "{c}"
        );
        assert!(!sigpipe_pending());
        // A healthy pipe: one write syscall per write, nothing else.
        let (mut r2, mut w2) = pipe().unwrap();
        w2.write_all(b"o").await.unwrap(); // waits for the first writable edge
        counters::reset();
        w2.write_all(b"k").await.unwrap();
        let c = counters::snapshot();
        assert_eq!((c.get(Syscall::Write), c.total_syscalls()), (1, 1), "{c}");
        let mut buf = [0u8; 2];
        r2.read_exact(&mut buf).await.unwrap();
    });
    lp.close().unwrap();
    assert!(!sigpipe_blocked(), "closing the loop unblocks SIGPIPE again");
    assert!(!sigpipe_pending());
}

const CHILD_KEY: &str = "EVLOOP_PIPES_SIGPIPE_CHILD";
const CONTROL_KEY: &str = "EVLOOP_PIPES_SIGPIPE_CONTROL";
const CHILD_TEST: &str = "epipe_never_kills_a_process_where_sigpipe_has_its_default_action";

/// Recording protocol: `made`, `data:<text>`, `eof`, `pause`, `resume`, `lost:<error or none>`.
struct Rec {
    log: Log,
    transport: Rc<RefCell<Option<Transport>>>,
}

impl Rec {
    fn new(log: &Log) -> (Rec, Rc<RefCell<Option<Transport>>>) {
        let t = Rc::new(RefCell::new(None));
        (
            Rec {
                log: log.clone(),
                transport: t.clone(),
            },
            t,
        )
    }
}

impl Protocol for Rec {
    fn connection_made(&mut self, transport: Transport) {
        push(&self.log, "made");
        *self.transport.borrow_mut() = Some(transport);
    }
    fn data_received(&mut self, data: &[u8]) {
        push(&self.log, format!("data:{}", String::from_utf8_lossy(data)));
    }
    fn eof_received(&mut self) -> bool {
        push(&self.log, "eof");
        true // ignored by pipe transports: a pipe has no half-close
    }
    fn pause_writing(&mut self) {
        push(&self.log, "pause");
    }
    fn resume_writing(&mut self) {
        push(&self.log, "resume");
    }
    fn connection_lost(&mut self, error: Option<io::Error>) {
        let what = match error {
            None => "none".to_string(),
            Some(e) => format!("errno {:?}", e.raw_os_error()),
        };
        push(&self.log, format!("lost:{what}"));
        self.transport.borrow_mut().take();
    }
}

/// Waits (running the loop) until `log` has an entry starting with `lost:`.
async fn until_lost(log: &Log) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !entries(log).iter().any(|e| e.starts_with("lost:")) {
        assert!(
            Instant::now() < deadline,
            "connection_lost never came: {:?}",
            entries(log)
        );
        sleep(Duration::from_millis(2)).await;
    }
}

/// The scenario the child process runs with `SIGPIPE` at its default action (death).
fn sigpipe_scenario() {
    // SAFETY: `signal` with SIG_DFL installs no handler; this single-threaded child test
    // process does nothing else at the same time.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    assert_eq!(
        sys::signal_disposition(sys::Signal::PIPE).unwrap(),
        sys::Disposition::Default
    );
    if child::is_child(CONTROL_KEY) {
        // The control run: an unprotected write kills the process (the parent checks).
        let (r, w) = sys::pipe2().unwrap();
        drop(r);
        let _ = sys::write(w.as_fd(), b"x");
        unreachable!("SIGPIPE did not kill the process");
    }
    let lp = EventLoop::new().unwrap();
    let h: LoopHandle = lp.handle();
    run_bounded(&h, async {
        // An async pipe end.
        let (r, mut w) = pipe().unwrap();
        drop(r);
        let e = w.write_all(b"x").await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
        // A write-pipe transport with data buffered when the reader goes.
        let lp = evloop::event_loop::get_running_loop().unwrap();
        let (r, w) = pipe().unwrap();
        let log = log();
        let (proto, t) = Rec::new(&log);
        lp.connect_write_pipe(proto, w).unwrap();
        sleep(Duration::from_millis(5)).await;
        t.borrow().as_ref().unwrap().write(&vec![0u8; 1 << 20]);
        drop(r);
        until_lost(&log).await;
        assert_eq!(entries(&log).last().unwrap(), &format!("lost:errno Some({EPIPE})"));
        // A child's stdin, the child gone before reading it.
        let mut p = lp.subprocess_exec("true", [""; 0]).stdin(Stdio::Pipe).spawn().unwrap();
        let out = p.communicate(Some(vec![0u8; 1 << 20])).await.unwrap();
        assert!(out.status.success());
    });
    // A thread without the loop's block: the per-call path.
    std::thread::spawn(|| {
        let (r, w) = sys::pipe2().unwrap();
        drop(r);
        let e = sys::write_nosigpipe(w.as_fd(), b"x").unwrap_err();
        assert_eq!(evloop::io::os_error(&e), Some(EPIPE), "{e}");
    })
    .join()
    .unwrap();
    // Closing the loop unblocks SIGPIPE: a signal left pending would kill us now.
    lp.close().unwrap();
    assert!(!sigpipe_blocked() && !sigpipe_pending());
    println!("survived every EPIPE with SIGPIPE at its default action");
}

#[test]
fn epipe_never_kills_a_process_where_sigpipe_has_its_default_action() {
    if child::is_child(CHILD_KEY) {
        sigpipe_scenario();
        return;
    }
    // The control: the child setup really makes an unprotected EPIPE fatal.
    let control = child::command(&evloop_tests::test_name!(CHILD_TEST), CHILD_KEY)
        .env(CONTROL_KEY, "1")
        .output()
        .expect("the control child");
    assert_eq!(
        control.status.signal(),
        Some(libc::SIGPIPE),
        "the control child was not killed by SIGPIPE: {:?}\n{}",
        control.status,
        String::from_utf8_lossy(&control.stderr)
    );
    let out = child::run(&evloop_tests::test_name!(CHILD_TEST), CHILD_KEY);
    child::assert_success("SIGPIPE at its default action", &out);
}

#[test]
fn connect_read_pipe_delivers_data_then_eof_then_connection_lost() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let (proto, t) = Rec::new(&log);
    let (r, mut w) = pipe_with_loop(&lp).unwrap();
    let transport = lp.connect_read_pipe(proto, r).unwrap();
    assert!(transport.peer_addr().is_none() && transport.local_addr().is_none());
    assert!(!transport.can_write_eof());
    run_bounded(&lp, {
        let log = log.clone();
        async move {
            w.write_all(b"abc").await.unwrap();
            sleep(Duration::from_millis(10)).await;
            // Writing on a read transport does nothing (and does not kill it).
            t.borrow().as_ref().unwrap().write(b"ignored");
            w.write_all(b"def").await.unwrap();
            sleep(Duration::from_millis(10)).await;
            drop(w);
            until_lost(&log).await;
        }
    });
    assert_eq!(entries(&log), ["made", "data:abc", "data:def", "eof", "lost:none"]);
    assert!(transport.is_closing());
    assert_eq!(lp.stats().io_registrations, 0);

    // A raw fd works too, and pause_reading holds data back until resume_reading.
    let log2 = evloop_tests::log();
    let (proto, _t) = Rec::new(&log2);
    let (r, w) = sys::pipe2().unwrap();
    let transport = lp.connect_read_pipe(proto, r).unwrap();
    transport.pause_reading();
    let mut w = PipeWriter::with_loop(&lp, w).unwrap();
    let l2 = log2.clone();
    run_bounded(&lp, async move {
        let log2 = l2;
        w.write_all(b"held").await.unwrap();
        sleep(Duration::from_millis(20)).await;
        assert_eq!(entries(&log2), ["made"], "data delivered while paused");
        transport.resume_reading();
        drop(w);
        until_lost(&log2).await;
    });
    assert_eq!(entries(&log2), ["made", "data:held", "eof", "lost:none"]);
}

#[test]
fn connect_write_pipe_writes_with_back_pressure_and_write_eof_closes_it() {
    const N: usize = 1024 * 1024;
    let lp = EventLoop::new().unwrap();
    let log = log();
    let (proto, _t) = Rec::new(&log);
    let (mut r, w) = pipe_with_loop(&lp).unwrap();
    let transport = lp.connect_write_pipe(proto, w).unwrap();
    assert!(transport.can_write_eof() && transport.peer_addr().is_none());
    let data = pattern(N);
    let got = run_bounded(&lp, {
        let (transport, log) = (transport.clone(), log.clone());
        let data = data.clone();
        async move {
            sleep(Duration::from_millis(1)).await; // connection_made
            // 1 MiB into a 64 KiB pipe: the rest is buffered, over the high-water mark.
            transport.write(&data);
            assert!(transport.write_buffer_size() > 0);
            assert_eq!(entries(&log), ["made", "pause"]);
            transport.write_eof();
            transport.write(b"dropped after write_eof");
            let mut got = Vec::new();
            r.read_to_end(&mut got).await.unwrap();
            until_lost(&log).await;
            got
        }
    });
    assert_eq!(got.len(), N);
    assert!(got == data, "the bytes differ");
    assert_eq!(entries(&log), ["made", "pause", "resume", "lost:none"]);
    assert_eq!(lp.stats().io_registrations, 0);
}

#[test]
fn connect_write_pipe_reader_gone_is_connection_lost() {
    let lp = EventLoop::new().unwrap();
    // Nothing buffered: a clean close (asyncio's `_read_ready` on a write pipe).
    let log1 = log();
    let (proto, _t) = Rec::new(&log1);
    let (r, w) = sys::pipe2().unwrap();
    lp.connect_write_pipe(proto, w).unwrap();
    // Data buffered: an EPIPE error.
    let log2 = log();
    let (proto, t2) = Rec::new(&log2);
    let (r2, w2) = pipe_with_loop(&lp).unwrap();
    lp.connect_write_pipe(proto, w2).unwrap();
    let (l1, l2) = (log1.clone(), log2.clone());
    run_bounded(&lp, async move {
        let (log1, log2) = (l1, l2);
        sleep(Duration::from_millis(5)).await;
        t2.borrow().as_ref().unwrap().write(&vec![9u8; 256 * 1024]);
        drop(r);
        drop(r2);
        until_lost(&log1).await;
        until_lost(&log2).await;
    });
    assert_eq!(entries(&log1), ["made", "lost:none"]);
    assert_eq!(entries(&log2), ["made", "pause", &format!("lost:errno Some({EPIPE})")]);
    assert!(!sigpipe_pending());
}

#[test]
fn connect_read_pipe_drives_a_child_process_stdout() {
    let lp = EventLoop::new().unwrap();
    let log = log();
    let (proto, _t) = Rec::new(&log);
    let mut p = lp
        .subprocess_shell("printf abc; sleep 0.05; printf def")
        .stdout(Stdio::Pipe)
        .spawn()
        .unwrap();
    let stdout: PipeReader = p.stdout.take().unwrap();
    lp.connect_read_pipe(proto, stdout).unwrap();
    let status = run_bounded(&lp, {
        let log = log.clone();
        async move {
            until_lost(&log).await;
            p.wait().await.unwrap()
        }
    });
    assert!(status.success());
    if evloop_tests::under_valgrind() {
        // Slowed down, the loop may read both writes at once (the child's 50 ms pause can pass
        // before the pipe is first read): the same bytes, maybe in one piece.
        let got = entries(&log);
        let data: String = got.iter().filter_map(|e| e.strip_prefix("data:")).collect();
        assert_eq!(data, "abcdef", "{got:?}");
        assert_eq!(got.first().map(String::as_str), Some("made"), "{got:?}");
        assert!(got.ends_with(&["eof".to_string(), "lost:none".to_string()]), "{got:?}");
        return;
    }
    assert_eq!(entries(&log), ["made", "data:abc", "data:def", "eof", "lost:none"]);
}

/// A file of `len` pattern bytes in the temp directory, removed on drop.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(tag: &str, len: usize) -> TempFile {
        let path = std::env::temp_dir().join(format!("evloop-{tag}-{}.bin", std::process::id()));
        std::fs::write(&path, pattern(len)).unwrap();
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

async fn receive(sock: &Socket, n: usize) -> Vec<u8> {
    let mut got = vec![0u8; n];
    let mut done = 0;
    while done < n {
        let k = sock.recv(&mut got[done..]).await.unwrap();
        assert!(k > 0, "EOF after {done} of {n} bytes");
        done += k;
    }
    got
}

#[test]
fn sock_sendfile_falls_back_to_read_and_send_when_sendfile_cannot_serve_the_pair() {
    const LEN: usize = 300 * 1024;
    let file = TempFile::new("sendfile", LEN);
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    run_bounded(&lp, async move {
        let (a, b) = sys::socketpair_stream().unwrap();
        let (a, b) = (Socket::with_loop(&h, a).unwrap(), Socket::with_loop(&h, b).unwrap());
        let f = std::fs::File::open(&file.0).unwrap();
        let expected = &pattern(LEN)[1000..1000 + 200_000];

        // The kernel path, with offset and count.
        counters::reset();
        let (sent, got) =
            evloop::task::gather((h.sock_sendfile(&a, &f, 1000, Some(200_000)), receive(&b, 200_000))).await;
        assert_eq!(sent.unwrap(), 200_000);
        assert!(got == expected);
        assert!(counters::snapshot().get(Syscall::Sendfile) >= 1);

        // sendfile refuses the pair (EINVAL, as for a source it cannot map): the same bytes
        // arrive through the read/send fallback, offset and count kept.
        sys::fault::fail_nth(Syscall::Sendfile, 1, libc::EINVAL);
        counters::reset();
        let (sent, got) =
            evloop::task::gather((h.sock_sendfile(&a, &f, 1000, Some(200_000)), receive(&b, 200_000))).await;
        assert_eq!(sent.unwrap(), 200_000);
        assert!(got == expected, "the fallback sent other bytes");
        let c = counters::snapshot();
        assert_eq!(c.get(Syscall::Sendfile), 1, "one refused sendfile, then no more: {c}");
        assert!(c.get(Syscall::Send) >= 4, "{c}");

        // Count None: to the end of the file.
        sys::fault::fail_nth(Syscall::Sendfile, 1, libc::ENOSYS);
        let (sent, got) = evloop::task::gather((h.sock_sendfile(&a, &f, LEN as u64 - 10, None), receive(&b, 10))).await;
        assert_eq!(sent.unwrap(), 10);
        assert_eq!(got, &pattern(LEN)[LEN - 10..]);
    });
}

#[test]
fn pipe_outside_a_running_loop_is_an_error_naming_it() {
    let e = pipe().unwrap_err();
    assert!(e.to_string().starts_with("pipe: no event loop is running"), "{e}");
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    lp.close().unwrap();
    let e = pipe_with_loop(&h).unwrap_err();
    assert!(e.to_string().starts_with("pipe: the event loop is closed"), "{e}");
    let (r, w) = sys::pipe2().unwrap();
    let e = h.connect_read_pipe(Rec::new(&evloop_tests::log()).0, r).unwrap_err();
    assert!(e.to_string().starts_with("connect_read_pipe: "), "{e}");
    let e = h.connect_write_pipe(Rec::new(&evloop_tests::log()).0, w).unwrap_err();
    assert!(e.to_string().starts_with("connect_write_pipe: "), "{e}");
}

/// `sock_sendfile` from a pipe: `sendfile(2)` refuses a pipe source (EINVAL) and the fallback
/// must read it in sequence (a pipe has no offsets: `pread` would fail with ESPIPE).
#[test]
fn sock_sendfile_from_a_pipe_falls_back_to_sequential_reads() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let (r, w) = sys::pipe2().unwrap();
    let data = pattern(10_000);
    let mut writer = std::fs::File::from(w);
    std::io::Write::write_all(&mut writer, &data).unwrap();
    drop(writer);
    let source = std::fs::File::from(r);
    let got = run_bounded(&lp, async move {
        let (a, b) = evloop::net::UnixStream::pair().unwrap();
        let sent = h.sock_sendfile(a.socket(), &source, 0, Some(10_000)).await.unwrap();
        drop(a);
        let mut b = b;
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        (sent, got)
    });
    assert_eq!(got.0, 10_000);
    assert_eq!(got.1, data);
}

/// `sock_sendfile` of `/dev/zero` with a count: the kernel reports counts without moving the
/// offset there, so the loop must stop on the bytes sent, not on the offset.
#[test]
fn sock_sendfile_of_dev_zero_stops_after_count_bytes() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let got = run_bounded(&lp, async move {
        let (a, b) = evloop::net::UnixStream::pair().unwrap();
        let reader = spawn(async move {
            let mut b = b;
            let mut got = Vec::new();
            b.read_to_end(&mut got).await.unwrap();
            got.len()
        });
        let sent = h.sock_sendfile(a.socket(), &zero, 0, Some(300_000)).await.unwrap();
        drop(a);
        (sent, reader.await.unwrap())
    });
    assert_eq!(got, (300_000, 300_000));
}
