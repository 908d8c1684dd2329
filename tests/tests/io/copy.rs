//! Copies between streams (runtime/src/io/copy.rs): `copy` counts and keeps order, flushes a
//! buffered writer while the reader waits (no deadlock with a request/response peer),
//! `copy_buf`, and `copy_bidirectional` passing each end of stream on as a shutdown and
//! failing with the first error.

use std::io::{ErrorKind, Read as _, Write as _};

use evloop::event_loop::EventLoop;
use evloop::io::{AsyncWriteExt, BufReader, BufWriter, copy, copy_bidirectional, copy_buf};
use evloop_tests::net::tcp_with_std_peer;
use evloop_tests::{pattern, run_bounded};

#[test]
fn copy_moves_every_byte_in_order_and_counts_them() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (mut src, peer_src) = tcp_with_std_peer().await;
        let (mut dst, peer_dst) = tcp_with_std_peer().await;
        let data = pattern(1 << 20);
        let expect = data.clone();
        let writer = std::thread::spawn(move || {
            let mut p = peer_src;
            p.write_all(&data).unwrap();
        });
        let reader = std::thread::spawn(move || {
            let mut p = peer_dst;
            let mut got = Vec::new();
            p.read_to_end(&mut got).unwrap();
            got
        });
        let n = copy(&mut src, &mut dst).await.unwrap();
        assert_eq!(n, 1 << 20);
        dst.shutdown().await.unwrap();
        let lp = evloop::event_loop::get_running_loop().unwrap();
        let got = lp
            .run_in_executor(move || reader.join().unwrap())
            .unwrap()
            .await
            .unwrap();
        writer.join().unwrap();
        assert!(got == expect, "the bytes arrived in order");
    });
}

#[test]
fn copy_flushes_a_buffered_writer_whenever_the_reader_waits() {
    // The peer sends a request and waits for its answer before sending the next: a copy that
    // left the answer in the BufWriter while waiting for more input would deadlock.
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (mut src, mut peer_src) = tcp_with_std_peer().await;
        let (dst, mut peer_dst) = tcp_with_std_peer().await;
        let client = std::thread::spawn(move || {
            for i in 0..3u8 {
                peer_src.write_all(&[i; 10]).unwrap();
                let mut answer = [0u8; 10];
                peer_dst.read_exact(&mut answer).unwrap();
                assert_eq!(answer, [i; 10]);
            }
        });
        let mut w = BufWriter::new(dst);
        let copying = evloop::spawn(async move { copy(&mut src, &mut w).await });
        let lp = evloop::event_loop::get_running_loop().unwrap();
        lp.run_in_executor(move || client.join().unwrap())
            .unwrap()
            .await
            .unwrap();
        copying.abort();
    });
}

#[test]
fn copy_buf_writes_from_the_readers_buffer() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let data = pattern(100_000);
        let mut r = BufReader::with_capacity(1000, &data[..]);
        let mut out: Vec<u8> = Vec::new();
        let n = copy_buf(&mut r, &mut out).await.unwrap();
        assert_eq!((n, out.len()), (100_000, 100_000));
        assert!(out == data);
    });
}

#[test]
fn copy_bidirectional_passes_each_end_on_and_returns_both_counts() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (mut a, mut peer_a) = tcp_with_std_peer().await;
        let (mut b, mut peer_b) = tcp_with_std_peer().await;
        let client = std::thread::spawn(move || {
            peer_a.write_all(&pattern(300_000)).unwrap();
            peer_a.shutdown(std::net::Shutdown::Write).unwrap();
            // b's side sees a's bytes then EOF (the shutdown was passed on).
            let mut at_b = Vec::new();
            peer_b.read_to_end(&mut at_b).unwrap();
            peer_b.write_all(b"answer").unwrap();
            peer_b.shutdown(std::net::Shutdown::Write).unwrap();
            let mut at_a = Vec::new();
            peer_a.read_to_end(&mut at_a).unwrap();
            (at_b.len(), at_a)
        });
        let counts = copy_bidirectional(&mut a, &mut b).await.unwrap();
        assert_eq!(counts, (300_000, 6));
        let lp = evloop::event_loop::get_running_loop().unwrap();
        let (at_b, at_a) = lp
            .run_in_executor(move || client.join().unwrap())
            .unwrap()
            .await
            .unwrap();
        assert_eq!((at_b, &at_a[..]), (300_000, &b"answer"[..]));
    });
}

#[test]
fn copy_bidirectional_fails_with_the_first_error() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (mut a, peer_a) = tcp_with_std_peer().await;
        let (mut b, _peer_b) = tcp_with_std_peer().await;
        // An abortive close (RST) of a's peer: reading a fails with ECONNRESET.
        evloop_syscalls::set_linger_zero(std::os::fd::AsFd::as_fd(&peer_a)).unwrap();
        let mut p = peer_a;
        p.write_all(b"x").unwrap();
        drop(p);
        let e = copy_bidirectional(&mut a, &mut b).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
        assert!(b.peer_addr().is_ok(), "the other stream is left open for the caller");
    });
}
