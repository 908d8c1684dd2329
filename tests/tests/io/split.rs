//! Borrowed halves (runtime/src/io/split.rs): `TcpStream::split` and `UnixStream::split` give a
//! read half and a write half usable together in one task (here with `join!` and `copy`),
//! beside `into_split`; the write half's shutdown sends FIN.

use std::io::{Read as _, Write as _};

use evloop::event_loop::EventLoop;
use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::net::{TcpListener, TcpStream, UnixStream};
use evloop_tests::run_bounded;

#[test]
fn tcp_halves_read_and_write_at_the_same_time_in_one_task() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut s, _) = listener.accept().await.unwrap();
        let (mut rd, mut wr) = s.split();
        // 1 MiB each way: neither direction fits in the socket buffers alone, so the write
        // half must make progress while the read half waits, and the other way round.
        let big = vec![7u8; 1 << 20];
        let peer_thread = std::thread::spawn(move || {
            let mut got = vec![0u8; 1 << 20];
            let mut writer = peer.try_clone().unwrap();
            let w = std::thread::spawn(move || writer.write_all(&vec![9u8; 1 << 20]).unwrap());
            peer.read_exact(&mut got).unwrap();
            w.join().unwrap();
            got.iter().all(|&b| b == 7)
        });
        let (sent, received) = evloop::join!(wr.write_all(&big), async {
            let mut got = vec![0u8; 1 << 20];
            rd.read_exact(&mut got).await.map(|_| got)
        });
        sent.unwrap();
        assert!(received.unwrap().iter().all(|&b| b == 9));
        wr.shutdown().await.unwrap();
        let lp = evloop::event_loop::get_running_loop().unwrap();
        let ok = lp
            .run_in_executor(move || peer_thread.join().unwrap())
            .unwrap()
            .await
            .unwrap();
        assert!(ok);
        // The halves were borrows: the stream is whole again.
        assert!(s.local_addr().is_ok());
    });
}

#[test]
fn unix_halves_echo_through_copy_and_shutdown_sends_eof() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let echo = evloop::spawn(async move {
            let (mut rd, mut wr) = a.split();
            let n = evloop::io::copy(&mut rd, &mut wr).await.unwrap();
            wr.shutdown().await.unwrap();
            n
        });
        b.write_all(b"round trip").await.unwrap();
        b.shutdown().await.unwrap();
        let mut back = Vec::new();
        b.read_to_end(&mut back).await.unwrap();
        assert_eq!(back, b"round trip");
        assert_eq!(echo.await.unwrap(), 10);
    });
}

#[test]
fn split_and_into_split_interoperate_with_the_same_peer() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (mut s, _) = listener.accept().await.unwrap();
        let (mut crd, mut cwr) = c.into_split();
        {
            let (_rd, mut wr) = s.split();
            wr.write_all(b"from split").await.unwrap();
        }
        let mut got = [0u8; 10];
        crd.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"from split");
        cwr.write_all(b"back").await.unwrap();
        let (mut rd, _wr) = s.split();
        let mut back = [0u8; 4];
        rd.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"back");
    });
}
