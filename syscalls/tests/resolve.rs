//! Name resolution through the C library: `getaddrinfo` and `getnameinfo`
//! on names that need no network (`localhost`, numeric addresses) and on a
//! name that can never resolve (`.invalid`, RFC 6761), with every lookup
//! that could reach a DNS server bounded in time.

use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr};
use std::sync::mpsc;

use evloop_syscalls::counters;
use evloop_syscalls::*;

/// Runs `f` on its own thread and waits at most `limit` for its result;
/// `None` when it took longer (the thread is left to finish on its own).
fn bounded<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).ok()
}

#[test]
fn localhost_resolves_to_a_loopback_address() {
    let addrs = getaddrinfo("localhost", 80, AddrHints::default()).unwrap();
    assert!(!addrs.is_empty());
    let v4: SocketAddr = "127.0.0.1:80".parse().unwrap();
    let v6: SocketAddr = "[::1]:80".parse().unwrap();
    assert!(addrs.contains(&v4) || addrs.contains(&v6), "{addrs:?}");
    assert!(addrs.iter().all(|a| a.port() == 80), "{addrs:?}");
    let mut dedup = addrs.clone();
    dedup.dedup();
    assert_eq!(dedup.len(), addrs.len(), "one entry per address: {addrs:?}");

    let only_v4 = getaddrinfo(
        "localhost",
        443,
        AddrHints {
            family: Some(Domain::Inet),
            sock_type: Some(SockType::Stream),
            ..AddrHints::default()
        },
    )
    .unwrap();
    assert!(only_v4.iter().all(|a| a.is_ipv4()), "{only_v4:?}");
    assert!(only_v4.contains(&"127.0.0.1:443".parse().unwrap()), "{only_v4:?}");
}

#[test]
fn empty_host_is_wildcard_when_passive_and_loopback_otherwise() {
    let passive = AddrHints {
        passive: true,
        sock_type: Some(SockType::Stream),
        ..AddrHints::default()
    };
    let any = getaddrinfo("", 8000, passive).unwrap();
    assert!(any.iter().all(|a| a.ip().is_unspecified()), "{any:?}");
    let active = AddrHints {
        sock_type: Some(SockType::Stream),
        ..AddrHints::default()
    };
    let lo = getaddrinfo("", 8000, active).unwrap();
    assert!(lo.iter().all(|a| a.ip().is_loopback()), "{lo:?}");
}

#[test]
fn numeric_hosts_need_no_lookup() {
    let hints = AddrHints {
        numeric_host: true,
        ..AddrHints::default()
    };
    assert_eq!(
        getaddrinfo("::1", 53, hints).unwrap(),
        ["[::1]:53".parse::<SocketAddr>().unwrap()]
    );
    let e = getaddrinfo("localhost", 53, hints).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    let gai = e
        .get_ref()
        .and_then(|e| e.downcast_ref::<AddrInfoError>())
        .expect("an AddrInfoError");
    assert_eq!(gai.code(), eai::EAI_NONAME);
    assert_eq!(gai.name(), "localhost");
    assert!(!gai.message().is_empty());

    // A family that cannot be resolved is rejected by the C library.
    let e = getaddrinfo(
        "127.0.0.1",
        1,
        AddrHints {
            family: Some(Domain::Unix),
            ..hints
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
}

#[test]
fn an_invalid_name_is_an_error_naming_the_host() {
    const HOST: &str = "no-such-host.invalid";
    // `.invalid` never resolves, but the resolver may still ask a DNS server
    // that is not reachable from here; accept any error, bounded in time.
    let Some(r) = bounded(Duration::from_secs(30), || getaddrinfo(HOST, 80, AddrHints::default())) else {
        eprintln!("skipping: the resolver did not answer within 30 s (no DNS reachable?)");
        return;
    };
    let e = r.expect_err(".invalid must not resolve");
    match e.get_ref().and_then(|e| e.downcast_ref::<AddrInfoError>()) {
        Some(gai) => {
            assert_eq!(gai.name(), HOST);
            assert!(e.to_string().contains(HOST), "{e}");
            if e.kind() != ErrorKind::NotFound {
                eprintln!("note: resolver answered {e} (kind {:?}), not NotFound", e.kind());
            }
        }
        None => eprintln!("note: resolver failed with a system error: {e}"),
    }
}

#[test]
fn host_with_a_nul_byte_is_invalid_input_and_makes_no_call() {
    let before = counters::snapshot();
    let e = getaddrinfo("local\0host", 80, AddrHints::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(counters::snapshot().since(&before).is_empty());
}

#[test]
fn getnameinfo_numeric_formats_without_lookup() {
    let v4: SocketAddr = "127.0.0.1:80".parse().unwrap();
    assert_eq!(
        getnameinfo(&v4, true).unwrap(),
        ("127.0.0.1".to_string(), "80".to_string())
    );
    let v6: SocketAddr = "[::1]:443".parse().unwrap();
    assert_eq!(getnameinfo(&v6, true).unwrap(), ("::1".to_string(), "443".to_string()));
}

#[test]
fn getnameinfo_by_name_falls_back_or_finds_one() {
    // 127.0.0.1 is in /etc/hosts nearly everywhere; bounded all the same.
    let v4: SocketAddr = "127.0.0.1:80".parse().unwrap();
    let Some(r) = bounded(Duration::from_secs(30), move || getnameinfo(&v4, false)) else {
        eprintln!("skipping: reverse lookup did not answer within 30 s");
        return;
    };
    let (host, serv) = r.unwrap();
    assert!(!host.is_empty() && !serv.is_empty(), "{host:?} {serv:?}");
    if let Ok(ip) = host.parse::<IpAddr>() {
        assert!(ip.is_loopback(), "{host}");
    }
}

#[test]
fn resolver_calls_count_once_and_are_not_syscalls() {
    let hints = AddrHints {
        numeric_host: true,
        ..AddrHints::default()
    };
    let before = counters::snapshot();
    getaddrinfo("127.0.0.1", 1, hints).unwrap();
    getnameinfo(&"127.0.0.1:1".parse().unwrap(), true).unwrap();
    let c = counters::snapshot().since(&before);
    assert_eq!(c.get(Syscall::Getaddrinfo), 1, "{c}");
    assert_eq!(c.get(Syscall::Getnameinfo), 1, "{c}");
    assert_eq!(c.total_syscalls(), 0, "library calls are left out: {c}");
    assert_eq!(c.total_calls(), 2);
    assert!(Syscall::Getaddrinfo.is_library_call() && !Syscall::Getaddrinfo.is_syscall());
    assert!(Syscall::Socket.is_syscall());
}
