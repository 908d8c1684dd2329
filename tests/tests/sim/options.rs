//! Socket options on the simulated kernel answer as Linux's do (the real kernel's answers are
//! checked in syscalls/tests/sockets.rs): `SO_LINGER` with a timeout and `IP_TTL`, read back,
//! range-checked, refused on a Unix socket.
#![cfg(feature = "simulation")]

use crate::support as sim_support;

use std::time::Duration;

use evloop::net::{TcpListener, TcpStream, UdpSocket, UnixStream};
use evloop_syscalls::sim::Config;
use sim_support::on_kernel;

#[test]
fn linger_and_ttl_answer_as_linux_does() {
    let (errors, kernel) = on_kernel(1, Config::default(), |_| {
        evloop::run(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let stream = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            assert_eq!(stream.linger().unwrap(), None);
            stream.set_linger(Some(Duration::from_millis(2500))).unwrap();
            assert_eq!(stream.linger().unwrap(), Some(Duration::from_secs(2)));
            stream.set_zero_linger().unwrap();
            assert_eq!(stream.linger().unwrap(), Some(Duration::ZERO));
            stream.set_linger(None).unwrap();
            assert_eq!(stream.linger().unwrap(), None);

            assert_eq!(stream.ttl().unwrap(), 64);
            stream.set_ttl(9).unwrap();
            assert_eq!(stream.ttl().unwrap(), 9);
            listener.set_ttl(200).unwrap();
            assert_eq!(listener.ttl().unwrap(), 200);
            let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            udp.set_ttl(1).unwrap();
            assert_eq!(udp.ttl().unwrap(), 1);

            let (unix, _other) = UnixStream::pair().unwrap();
            let unix_err = evloop_syscalls::ttl(std::os::fd::AsFd::as_fd(unix.socket()))
                .unwrap_err()
                .raw_os_error();
            (
                [0, 256].map(|bad| stream.set_ttl(bad).unwrap_err().raw_os_error()),
                unix_err,
            )
        })
        .unwrap()
    });
    assert_eq!(errors.0, [Some(libc::EINVAL); 2]);
    assert_eq!(errors.1, Some(libc::EOPNOTSUPP));
    assert!(
        kernel.trace().contains("setsockopt"),
        "the calls reached the simulated kernel"
    );
}
