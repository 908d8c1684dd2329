//! tokio/tests/tcp_peek.rs, tcp_into_split.rs, tcp_split.rs, and tcp_stream.rs's linger test.

use std::io::{Read, Write};
use std::net;
use std::thread;

use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::net::{TcpListener, TcpStream};

use super::run;

#[test]
fn peek() {
    run(async {
        let listener = net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let t = thread::spawn(move || listener.accept().unwrap().0);
        let left = net::TcpStream::connect(addr).unwrap();
        let mut right = t.join().unwrap();
        let _ = right.write(&[1, 2, 3, 4]).unwrap();

        let mut left: TcpStream = left.try_into().unwrap();
        let mut buf = [0u8; 16];
        let n = left.peek(&mut buf).await.unwrap();
        assert_eq!([1, 2, 3, 4], buf[..n]);
        let n = left.read(&mut buf).await.unwrap();
        assert_eq!([1, 2, 3, 4], buf[..n]);
    });
}

#[test]
fn peek_waits_for_data_and_keeps_readiness() {
    run(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let peeker = evloop::spawn(async move {
            let mut buf = [0; 8];
            let n = server.peek(&mut buf).await.unwrap(); // waits
            let m = server.peek(&mut buf).await.unwrap(); // a short peek did not clear readiness
            (n, m, server)
        });
        evloop::task::yield_now().await;
        client.write_all(b"abc").await.unwrap();
        let (n, m, mut server) = peeker.await.unwrap();
        assert_eq!((n, m), (3, 3));
        let mut got = [0; 3];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"abc");
    });
}

#[test]
fn split_peek_then_read() {
    const MSG: &[u8] = b"split";
    run(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stream1 = TcpStream::connect(&addr).await.unwrap();
        let (mut stream2, _) = listener.accept().await.unwrap();
        let (mut read_half, mut write_half) = stream1.into_split();

        let ((), (), ()) = evloop::try_join!(
            async {
                let len = stream2.write(MSG).await?;
                assert_eq!(len, MSG.len());
                let mut read_buf = [0u8; 32];
                let read_len = stream2.read(&mut read_buf).await?;
                assert_eq!(&read_buf[..read_len], MSG);
                std::io::Result::Ok(())
            },
            async {
                let len = write_half.write(MSG).await?;
                assert_eq!(len, MSG.len());
                Ok(())
            },
            async {
                let mut read_buf = [0u8; 32];
                let peek_len1 = read_half.peek(&mut read_buf[..]).await?;
                let peek_len2 = read_half.peek(&mut read_buf[..]).await?;
                assert_eq!(peek_len1, peek_len2);
                let read_len = read_half.read(&mut read_buf[..]).await?;
                assert_eq!(peek_len1, read_len);
                assert_eq!(&read_buf[..read_len], MSG);
                Ok(())
            },
        )
        .unwrap();
    });
}

#[test]
fn borrowed_read_half_peeks() {
    run(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        client.write_all(b"hi").await.unwrap();
        let (mut rd, _wr) = server.split();
        let mut buf = [0; 2];
        let n = rd.peek(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], &b"hi"[..n]);
        rd.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"hi");
    });
}

#[test]
fn reunite() {
    let listener = net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = thread::spawn(move || {
        drop(listener.accept().unwrap());
        drop(listener.accept().unwrap());
    });
    run(async move {
        let stream1 = TcpStream::connect(&addr).await.unwrap();
        let (read1, write1) = stream1.into_split();
        let stream2 = TcpStream::connect(&addr).await.unwrap();
        let (_, write2) = stream2.into_split();
        let read1 = match read1.reunite(write2) {
            Ok(_) => panic!("Reunite should not succeed"),
            Err(err) => err.0,
        };
        read1.reunite(write1).expect("Reunite should succeed");
    });
    handle.join().unwrap();
}

#[test]
fn reunited_stream_was_not_shut_down() {
    run(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let (rd, wr) = client.into_split();
        let mut client = wr.reunite(rd).unwrap();
        client.write_all(b"still open").await.unwrap();
        let mut got = [0; 10];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"still open");
    });
}

#[test]
fn unix_halves_reunite() {
    run(async {
        let (a, mut b) = evloop::net::UnixStream::pair().unwrap();
        let (rd, wr) = a.into_split();
        let mut a = rd.reunite(wr).unwrap();
        a.write_all(b"u").await.unwrap();
        assert_eq!(b.read_u8().await.unwrap(), b'u');
    });
}

#[test]
fn set_zero_linger_resets_the_connection() {
    let listener = net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0; 8];
        s.read(&mut buf).map(|_| ())
    });
    run(async move {
        let stream = TcpStream::connect(addr).await.unwrap();
        stream.set_zero_linger().unwrap();
        drop(stream);
    });
    let err = peer.join().unwrap().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset);
}

/// tokio's tcp_stream.rs `try_read_write`: try_write until the send buffer is full
/// (`WouldBlock`), the peer drains it with readable + try_read, and the writer is writable
/// again; every byte arrives once, in order.
#[evloop::test]
async fn try_read_write() {
    let listener = evloop::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = evloop::net::TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    // Nothing sent yet: no data, and no system call needed to say so.
    assert_eq!(
        server.try_read(&mut [0; 8]).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock
    );

    let chunk: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    let mut written = 0usize;
    client.writable().await.unwrap();
    loop {
        // Each write continues the pattern where the last one stopped (a short write included).
        match client.try_write(&chunk[written % chunk.len()..]) {
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
        assert!(written < 256 << 20, "the send buffer never filled");
    }
    assert!(written > 0);

    let mut received = Vec::with_capacity(written);
    let mut buf = vec![0u8; 65536];
    while received.len() < written {
        server.readable().await.unwrap();
        match server.try_read(&mut buf) {
            Ok(0) => panic!("end of file before every byte"),
            Ok(n) => received.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(received.len(), written);
    assert!(received.iter().enumerate().all(|(i, &b)| b == ((i % 4096) % 251) as u8));
    // Drained: the writer can write again.
    client.writable().await.unwrap();
    assert!(client.try_write(b"more").unwrap() > 0);
}
