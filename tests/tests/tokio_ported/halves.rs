//! The readiness and address API of split halves, as tokio's halves have it (tokio has no test
//! file of its own for them; these assert tokio's documented behaviour): each half in its own
//! task waits on its own side of the shared socket.

use std::io;

use evloop::io::Interest;
use evloop::net::{TcpListener, TcpStream};

#[evloop::test]
async fn owned_halves_in_two_tasks_use_try_read_and_try_write() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    let (server, peer) = listener.accept().await.unwrap();
    let (rd, wr) = server.into_split();
    assert_eq!(rd.peer_addr().unwrap(), peer);
    assert_eq!(wr.local_addr().unwrap(), listener.local_addr().unwrap());

    // An echo of one message: the read half's task passes what it reads to the write half's.
    let (tx, mut rx) = evloop::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let reader = evloop::spawn(async move {
        let mut got = Vec::new();
        while got.len() < 5 {
            rd.readable().await.unwrap();
            match rd.try_read_buf(&mut got) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => panic!("{e}"),
            }
        }
        tx.send(got).unwrap();
    });
    let writer = evloop::spawn(async move {
        let msg = rx.recv().await.unwrap();
        let mut sent = 0;
        while sent < msg.len() {
            assert!(wr.ready(Interest::WRITABLE).await.unwrap().is_writable());
            match wr.try_write(&msg[sent..]) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => panic!("{e}"),
            }
        }
    });

    client.writable().await.unwrap();
    assert_eq!(client.try_write(b"hello").unwrap(), 5);
    reader.await.unwrap();
    writer.await.unwrap();
    let mut back = [0; 5];
    let mut n = 0;
    while n < 5 {
        client.readable().await.unwrap();
        match client.try_read(&mut back[n..]) {
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(&back, b"hello");
}

#[evloop::test]
async fn borrowed_unix_halves_report_addresses_and_readiness() {
    let (mut a, b) = evloop::net::UnixStream::pair().unwrap();
    let (rd, wr) = a.split();
    assert_eq!(rd.local_addr().unwrap(), wr.local_addr().unwrap());
    assert!(wr.ready(Interest::WRITABLE).await.unwrap().is_writable());
    assert_eq!(rd.try_read(&mut [0; 4]).unwrap_err().kind(), io::ErrorKind::WouldBlock);
    drop(b);
    assert!(rd.ready(Interest::READABLE).await.unwrap().is_readable()); // end of stream
    assert_eq!(rd.try_read(&mut [0; 4]).unwrap(), 0);
}
