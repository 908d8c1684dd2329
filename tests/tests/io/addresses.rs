//! Addresses the way people write them (`evloop::net::ToSocketAddrs`): `TcpListener::bind`,
//! `TcpStream::connect` and `UdpSocket::bind`/`connect`/`send_to` take `"127.0.0.1:8080"`,
//! `("localhost", 8080)`, a `SocketAddr` or a list; numeric forms never touch the resolver (no
//! executor thread starts), names are resolved on the executor; bad forms are `InvalidInput`
//! errors naming what was written. `Server::local_addr` is an address, kept after `close`.

use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};

use evloop::net::{TcpListener, TcpStream, UdpSocket};
use evloop::{
    event_loop::EventLoop,
    io::{AsyncReadExt, AsyncWriteExt},
};
use evloop_tests::run_bounded;

#[test]
fn numeric_addresses_in_every_form_bind_and_connect_without_the_resolver() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    run_bounded(&lp.handle(), async move {
        let a = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = a.local_addr().unwrap().port();
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        // Every numeric form reaches the same listener.
        let forms: Vec<TcpStream> = vec![
            TcpStream::connect(format!("127.0.0.1:{port}")).await.unwrap(),
            TcpStream::connect(("127.0.0.1", port)).await.unwrap(),
            TcpStream::connect((ip, port)).await.unwrap(),
            TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await.unwrap(),
            TcpStream::connect(SocketAddr::new(ip, port)).await.unwrap(),
            TcpStream::connect(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
                .await
                .unwrap(),
            TcpStream::connect(&[SocketAddr::new(ip, port)][..]).await.unwrap(),
            TcpStream::connect([SocketAddr::new(ip, port)]).await.unwrap(),
            TcpStream::connect(&SocketAddr::new(ip, port)).await.unwrap(),
        ];
        for mut c in forms {
            let (mut s, peer) = a.accept().await.unwrap();
            assert_eq!(peer, c.local_addr().unwrap());
            c.write_all(b"x").await.unwrap();
            let mut b = [0u8; 1];
            s.read_exact(&mut b).await.unwrap();
        }
        let u = UdpSocket::bind(("127.0.0.1", 0)).await.unwrap();
        let v = UdpSocket::bind(SocketAddr::new(ip, 0)).await.unwrap();
        v.send_to(b"hi", format!("127.0.0.1:{}", u.local_addr().unwrap().port()))
            .await
            .unwrap();
        let mut buf = [0u8; 8];
        let (n, from) = u.recv_from(&mut buf).await.unwrap();
        assert_eq!((&buf[..n], from), (&b"hi"[..], v.local_addr().unwrap()));
        u.connect(v.local_addr().unwrap().to_string()).await.unwrap();
        assert_eq!(u.peer_addr().unwrap(), v.local_addr().unwrap());
    });
    assert_eq!(
        h.stats().executor_threads,
        0,
        "numeric addresses must not start the resolver's threads"
    );
}

#[test]
fn ipv6_literals_need_brackets_with_a_port() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let e = TcpListener::bind("::1:0").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(
            e.to_string().contains("::1:0") && e.to_string().contains("brackets"),
            "{e}"
        );
        // Bracketed, it is numeric (it may still fail where the machine has no IPv6 loopback).
        if let Ok(l) = TcpListener::bind("[::1]:0").await {
            let port = l.local_addr().unwrap().port();
            let c = TcpStream::connect(("::1", port)).await.unwrap();
            assert!(c.peer_addr().unwrap().is_ipv6());
        }
    });
}

#[test]
fn host_names_are_resolved_on_the_executor_and_every_address_is_tried() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    run_bounded(&lp.handle(), async move {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        // "localhost" may resolve to ::1 first, where nothing listens: the next address works.
        let c = TcpStream::connect(("localhost", port)).await.unwrap();
        assert_eq!(c.peer_addr().unwrap(), listener.local_addr().unwrap());
        let c2 = TcpStream::connect(format!("localhost:{port}")).await.unwrap();
        assert_eq!(c2.peer_addr().unwrap().port(), port);
        let u = UdpSocket::bind("localhost:0").await.unwrap();
        assert!(u.local_addr().unwrap().ip().is_loopback());
    });
    assert!(h.stats().executor_threads > 0, "a name is resolved off the loop");
}

#[test]
fn malformed_addresses_are_invalid_input_errors_naming_what_was_written() {
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    run_bounded(&lp.handle(), async move {
        for (bad, needle) in [
            ("nonsense", "expected host:port"),
            ("127.0.0.1:99999", "bad port"),
            ("127.0.0.1:http", "bad port"),
            (":80", "empty host"),
        ] {
            let e = TcpStream::connect(bad).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad}: {e}");
            let msg = e.to_string();
            assert!(
                msg.contains("TcpStream::connect") && msg.contains(bad) && msg.contains(needle),
                "{bad}: {msg}"
            );
            let e = TcpListener::bind(bad).await.unwrap_err();
            assert!(e.to_string().contains("TcpListener::bind"), "{e}");
            let e = UdpSocket::bind(bad).await.unwrap_err();
            assert!(e.to_string().contains("UdpSocket::bind"), "{e}");
        }
        let e = TcpStream::connect(&[][..]).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains("no address"), "{e}");
    });
    assert_eq!(h.stats().executor_threads, 0, "nothing was looked up");
}

#[test]
fn connect_errors_keep_their_kind_and_name_the_address() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        // A port nobody listens on: bind one, note it, drop it.
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            l.local_addr().unwrap().port()
        };
        let e = TcpStream::connect(("127.0.0.1", port)).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}");
        assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
        let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let e = TcpListener::bind(taken.local_addr().unwrap()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AddrInUse, "{e}");
    });
}

#[test]
fn server_local_addr_is_an_address_and_survives_close() {
    let lp = EventLoop::new().unwrap();
    run_bounded(&lp.handle(), async {
        let server = evloop::streams::start_server(|_r, _w| async {}, "127.0.0.1", 0)
            .await
            .unwrap();
        let addr: SocketAddr = server.local_addr();
        assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
        let c = TcpStream::connect(addr).await.unwrap();
        assert_eq!(c.peer_addr().unwrap(), addr);
        server.close();
        assert!(server.addresses().is_empty(), "no listening socket once closed");
        assert_eq!(server.local_addr(), addr, "the address is still known after close");
    });
}
