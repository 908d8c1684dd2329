//! The simulated kernel leaks no real descriptor: every backing pipe and the watch are closed
//! once the program's descriptors and the kernel are gone. One test alone in its binary, so
//! that nothing else opens or closes descriptors while it counts them.
#![cfg(feature = "simulation")]

use std::net::SocketAddr;
use std::time::Duration;

use evloop_syscalls::sim::{Config, FaultClass, Faults, Kernel};
use evloop_syscalls::*;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn workload(k: &Kernel) {
    let _on = k.enter();
    let ep = epoll_create1().unwrap();
    let l = socket(Domain::Inet, SockType::Stream).unwrap();
    bind(l.as_fd(), &SockAddr::Inet("127.0.0.1:0".parse::<SocketAddr>().unwrap())).unwrap();
    listen(l.as_fd(), 64).unwrap();
    let to = local_addr(l.as_fd()).unwrap();
    epoll_ctl_add(ep.as_fd(), l.as_raw_fd(), EpollFlags::IN, 0).unwrap();
    let mut kept = Vec::new();
    for i in 0..50 {
        let c = socket(Domain::Inet, SockType::Stream).unwrap();
        let _ = connect(c.as_fd(), &to);
        let mut events = [EpollEvent::zeroed(); 4];
        let _ = epoll_wait_timeout(ep.as_fd(), &mut events, Some(Duration::from_secs(1)));
        while let Ok((s, _)) = accept4(l.as_fd()) {
            let _ = send(s.as_fd(), b"bye");
            if i % 3 == 0 {
                close(s).unwrap(); // through the wrapper
            } else if i % 3 == 1 {
                kept.push(dup(s.as_fd()).unwrap()); // a second number, closed later
            } // else: dropped here, behind the kernel's back
        }
        if i % 2 == 0 {
            kept.push(c);
        }
    }
    let (r, w) = pipe2().unwrap();
    let (a, b) = socketpair(Domain::Unix, SockType::Datagram).unwrap();
    let e = eventfd(0).unwrap();
    drop((r, w, a, b, e, kept));
}

#[test]
fn no_real_descriptor_outlives_the_simulation() {
    let before = open_fds();
    for seed in 0..5 {
        let k = Kernel::with_config(
            seed,
            Config::default().faults(Faults::none().with(FaultClass::Reset, 50_000)),
        );
        workload(&k);
        let stats = k.stats();
        assert!(stats.files > 100, "{stats:?}");
        drop(k);
    }
    assert_eq!(open_fds(), before);
}
