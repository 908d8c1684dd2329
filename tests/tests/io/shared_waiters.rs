//! Several tasks waiting on the same direction of one socket are all woken. The reactor used to
//! park one waker per direction, the last task's to poll: the others were never woken and waited
//! forever (tokio wakes every waiter; its `accept_many` is ported in tests/tests/tokio_ported).

use std::rc::Rc;
use std::time::Duration;

use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::net::{TcpListener, TcpStream, UdpSocket};
use evloop::time::timeout;

/// Two tasks receive on one UDP socket; two datagrams reach both of them.
#[evloop::test]
async fn two_receivers_on_one_udp_socket_each_get_a_datagram() {
    let rx = Rc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let tx = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = rx.local_addr().unwrap();
    let receivers: Vec<_> = (0..2)
        .map(|_| {
            let rx = rx.clone();
            evloop::spawn(async move {
                let mut buf = [0u8; 8];
                let (n, _) = rx.recv_from(&mut buf).await.unwrap();
                buf[..n].to_vec()
            })
        })
        .collect();
    // Both park before anything arrives.
    evloop::task::yield_now().await;
    tx.send_to(b"one", addr).await.unwrap();
    tx.send_to(b"two", addr).await.unwrap();
    let mut got = Vec::new();
    for r in receivers {
        got.push(
            timeout(Duration::from_secs(5), r)
                .await
                .expect("a receiver was never woken")
                .unwrap(),
        );
    }
    got.sort();
    assert_eq!(got, [b"one".to_vec(), b"two".to_vec()]);
}

/// Two tasks peek at one TCP stream (`peek` takes `&self`, so an `Rc`ed stream can be peeked
/// from several tasks); one write wakes both.
#[evloop::test]
async fn two_tasks_peeking_one_stream_are_both_woken() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut b = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    let (a, _) = listener.accept().await.unwrap();
    let a = Rc::new(a);
    let peekers: Vec<_> = (0..2)
        .map(|_| {
            let a = a.clone();
            evloop::spawn(async move {
                let mut buf = [0u8; 4];
                a.peek(&mut buf).await.unwrap()
            })
        })
        .collect();
    evloop::task::yield_now().await;
    b.write_all(b"ping").await.unwrap();
    for p in peekers {
        let n = timeout(Duration::from_secs(5), p)
            .await
            .expect("a peeker was never woken")
            .unwrap();
        assert_eq!(n, 4);
    }
    // The bytes are still there for the owner's read.
    let mut a = Rc::try_unwrap(a).unwrap();
    let mut buf = [0u8; 4];
    a.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping");
}
