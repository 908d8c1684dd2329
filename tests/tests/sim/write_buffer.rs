//! The write buffer's water marks on the simulated kernel, at their exact edges: a buffer
//! filled to exactly the high-water mark does not pause the protocol (one byte more does), and
//! lowering the marks under what is queued pauses it at once; a file with live `add_reader`
//! callbacks is not registered a second time, edge-triggered, behind them.
//!
//! Data flow: a client transport on the test's loop writes to a server that only counts bytes;
//! its protocol counts `pause_writing` and `resume_writing`, which the assertions read.
#![cfg(feature = "simulation")]

use std::cell::{Cell, RefCell};
use std::os::fd::{AsFd, AsRawFd};
use std::rc::Rc;
use std::time::Duration;

use evloop::event_loop::get_running_loop;
use evloop::protocol::{Protocol, Transport};

/// Counts what it receives.
struct Sink(Rc<RefCell<usize>>);

impl Protocol for Sink {
    fn data_received(&mut self, data: &[u8]) {
        *self.0.borrow_mut() += data.len();
    }
}

/// Counts the pauses and resumes of writing.
#[derive(Default)]
struct Marks {
    pauses: Cell<u32>,
    resumes: Cell<u32>,
}

struct Counting(Rc<Marks>);

impl Protocol for Counting {
    fn data_received(&mut self, _: &[u8]) {}
    fn pause_writing(&mut self) {
        self.0.pauses.set(self.0.pauses.get() + 1);
    }
    fn resume_writing(&mut self) {
        self.0.resumes.set(self.0.resumes.get() + 1);
    }
}

/// A client transport connected to a counting server: (transport, its marks, bytes the server
/// got, the server).
async fn client() -> (Transport, Rc<Marks>, Rc<RefCell<usize>>, evloop::protocol::Server) {
    let lp = get_running_loop().unwrap();
    let got = Rc::new(RefCell::new(0));
    let g = got.clone();
    let server = lp.create_server(move || Sink(g.clone()), "127.0.0.1", 0).await.unwrap();
    let port = server.local_addr().port();
    let marks = Rc::new(Marks::default());
    let t = lp
        .create_connection(Counting(marks.clone()), "127.0.0.1", port)
        .await
        .unwrap();
    (t, marks, got, server)
}

/// Waits (in simulated time) until the server got `n` bytes.
async fn until_received(got: &RefCell<usize>, n: usize) {
    let done = evloop::time::timeout(Duration::from_secs(2), async {
        while *got.borrow() < n {
            evloop::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    assert!(done.is_ok(), "the server got {} of {n} bytes", got.borrow());
}

/// The high-water mark is the most the buffer holds without pausing the protocol (asyncio
/// pauses above it): two writes that fill it exactly leave the protocol writing, one byte more
/// pauses it.
#[evloop::test(simulate(seeds = 6))]
async fn a_buffer_filled_to_exactly_the_high_water_mark_does_not_pause_writing() {
    let (t, marks, got, server) = client().await;
    t.set_write_buffer_limits(Some(1000), Some(100));
    t.write(&[1u8; 500]);
    t.write(&[2u8; 500]);
    assert_eq!(t.write_buffer_size(), 1000);
    assert_eq!(
        marks.pauses.get(),
        0,
        "1000 bytes queued under a high-water mark of 1000"
    );
    until_received(&got, 1000).await;
    t.write(&[3u8; 600]);
    t.write(&[4u8; 401]);
    assert_eq!(marks.pauses.get(), 1, "1001 bytes queued: above the mark");
    until_received(&got, 2001).await;
    assert_eq!(marks.resumes.get(), 1, "resumed once flushed");
    t.close();
    server.close();
}

/// Lowering the high-water mark under what is queued pauses the protocol at once.
#[evloop::test(simulate(seeds = 6))]
async fn lowering_the_high_water_mark_under_the_queued_bytes_pauses_writing_at_once() {
    let (t, marks, got, server) = client().await;
    t.write(&[1u8; 500]);
    assert_eq!(marks.pauses.get(), 0);
    t.set_write_buffer_limits(Some(499), Some(0));
    assert_eq!(marks.pauses.get(), 1, "500 queued over a new mark of 499");
    until_received(&got, 500).await;
    assert_eq!(marks.resumes.get(), 1);
    t.close();
    server.close();
}

/// A file with an `add_reader` callback cannot also be registered edge-triggered (an
/// `AsyncFd`, a socket): the loop says so, and the reader keeps running.
#[evloop::test(simulate(seeds = 2))]
async fn a_file_with_a_live_reader_is_not_registered_twice() {
    let lp = get_running_loop().unwrap();
    // Readable once (its counter is 1); the reader drains it (one that does not is the test
    // below: the loop then spins, and the kernel's busy guard is what moves the clock).
    let efd = Rc::new(evloop_syscalls::eventfd(1).unwrap());
    let ran = Rc::new(Cell::new(0u32));
    let (r, e) = (ran.clone(), efd.clone());
    lp.add_reader(efd.as_raw_fd(), move || {
        let _ = evloop_syscalls::eventfd_read(e.as_fd());
        r.set(r.get() + 1);
    })
    .unwrap();
    let err = evloop::io::AsyncFd::with_loop(&lp, efd.as_fd()).expect_err("registered behind a live reader");
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists, "{err}");
    // The loop's own refusal, naming the callbacks (not the kernel's EEXIST from a second
    // EPOLL_CTL_ADD, which a registration that went ahead would get).
    assert!(err.to_string().contains("add_reader"), "{err}");
    evloop::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(ran.get(), 1, "the reader still runs");
    assert!(lp.remove_reader(efd.as_raw_fd()), "the reader is still registered");
}

/// A level-triggered file that stays ready (an `add_reader` callback that never drains its
/// eventfd) does not stop time: on Linux each poll takes time and the loop's timers fire; the
/// simulated kernel's busy guard moves the clock 1 ms per `spin_limit` polls that return events at
/// one instant. Before it, this loop polled forever at one simulated instant (chapter 13.9).
#[evloop::test(simulate(seeds = 2))]
async fn a_file_that_stays_ready_does_not_stop_the_clock() {
    let lp = get_running_loop().unwrap();
    let efd = Rc::new(evloop_syscalls::eventfd(1).unwrap()); // readable, and never drained
    let ran = Rc::new(Cell::new(0u32));
    let r = ran.clone();
    lp.add_reader(efd.as_raw_fd(), move || r.set(r.get() + 1)).unwrap();
    let start = lp.time();
    evloop::time::sleep(Duration::from_millis(1)).await;
    assert!(lp.time() >= start + Duration::from_millis(1), "never early");
    // About 10,000 polls per simulated millisecond: the reader ran on every one of them.
    assert!(ran.get() >= 10_000, "{} runs", ran.get());
    assert!(lp.remove_reader(efd.as_raw_fd()));
}
