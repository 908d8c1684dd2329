//! tokio/tests/io_mem_stream.rs: `duplex`.

use evloop::io::{AsyncReadExt, AsyncWriteExt, duplex};

use super::run;

#[test]
fn ping_pong() {
    run(async {
        let (mut a, mut b) = duplex(32);
        let mut buf = [0u8; 4];
        a.write_all(b"ping").await.unwrap();
        b.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        b.write_all(b"pong").await.unwrap();
        a.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");
    });
}

#[test]
fn across_tasks() {
    run(async {
        let (mut a, mut b) = duplex(32);
        let t1 = evloop::spawn(async move {
            a.write_all(b"ping").await.unwrap();
            let mut buf = [0u8; 4];
            a.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"pong");
        });
        let t2 = evloop::spawn(async move {
            let mut buf = [0u8; 4];
            b.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"ping");
            b.write_all(b"pong").await.unwrap();
        });
        t1.await.unwrap();
        t2.await.unwrap();
    });
}

#[test]
fn disconnect() {
    run(async {
        let (mut a, mut b) = duplex(32);
        let t1 = evloop::spawn(async move {
            a.write_all(b"ping").await.unwrap();
            // and dropped
        });
        let t2 = evloop::spawn(async move {
            let mut buf = [0u8; 32];
            let n = b.read(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"ping");
            let n = b.read(&mut buf).await.unwrap();
            assert_eq!(n, 0);
        });
        t1.await.unwrap();
        t2.await.unwrap();
    });
}

#[test]
fn disconnect_reader() {
    run(async {
        let (a, mut b) = duplex(2);
        let t1 = evloop::spawn(async move {
            // Blocks, as not all of it fits; the reader's drop ends it with an error.
            b.write_all(b"ping").await.unwrap_err();
        });
        let t2 = evloop::spawn(async move {
            drop(a);
        });
        t2.await.unwrap();
        t1.await.unwrap();
    });
}

#[test]
fn max_write_size() {
    run(async {
        let (mut a, mut b) = duplex(32);
        let t1 = evloop::spawn(async move {
            let n = a.write(&[0u8; 64]).await.unwrap();
            assert_eq!(n, 32);
            let n = a.write(&[0u8; 64]).await.unwrap();
            assert_eq!(n, 4);
        });
        let mut buf = [0u8; 4];
        b.read_exact(&mut buf).await.unwrap();
        t1.await.unwrap();
        drop(b);
    });
}

#[test]
fn shutdown_is_end_of_stream_for_the_peer_only() {
    run(async {
        let (mut a, mut b) = duplex(16);
        a.write_all(b"x").await.unwrap();
        a.shutdown().await.unwrap();
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"x");
        // The other direction still works.
        b.write_all(b"reply").await.unwrap();
        let mut reply = [0; 5];
        a.read_exact(&mut reply).await.unwrap();
        assert_eq!(&reply, b"reply");
        assert_eq!(
            a.write(b"more").await.unwrap_err().kind(),
            std::io::ErrorKind::BrokenPipe
        );
    });
}

#[test]
fn duplex_ends_are_send_across_loops() {
    fn is_send<T: Send + Sync>(_: &T) {}
    let (a, mut b) = duplex(64);
    is_send(&a);
    let th = std::thread::spawn(move || {
        evloop::run(async move {
            let mut a = a;
            a.write_all(b"from another thread's loop").await.unwrap();
        })
        .unwrap();
    });
    let got = run(async move {
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        got
    });
    th.join().unwrap();
    assert_eq!(got, b"from another thread's loop");
}
