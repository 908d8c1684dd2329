//! What only a simulated kernel does: its clock, its seed and tape, its threads, and the
//! faults it injects (the semantics it shares with Linux are in `sim_vs_linux.rs`).
#![cfg(feature = "simulation")]

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use evloop_syscalls::sim::{self, Config, FaultClass, Faults, Kernel, Tape};
use evloop_syscalls::*;

fn addr(s: &str) -> SockAddr {
    SockAddr::Inet(s.parse::<SocketAddr>().unwrap())
}

fn wait(ep: &OwnedFd, timeout: Option<Duration>) -> io::Result<Vec<(u64, EpollFlags)>> {
    let mut events = [EpollEvent::zeroed(); 32];
    let n = epoll_wait_timeout(ep.as_fd(), &mut events, timeout)?;
    Ok(events[..n].iter().map(|e| (e.data(), e.flags())).collect())
}

/// A little network program: a server and three clients exchanging messages over
/// edge-triggered epoll, until every client got its echo. Returns what it saw.
fn echo_program() -> Vec<String> {
    let mut log = Vec::new();
    let ep = epoll_create1().unwrap();
    let l = socket(Domain::Inet, SockType::Stream).unwrap();
    bind(l.as_fd(), &addr("127.0.0.1:7000")).unwrap();
    listen(l.as_fd(), 16).unwrap();
    let flags = EpollFlags::IN | EpollFlags::OUT | EpollFlags::RDHUP | EpollFlags::ET;
    if let Err(e) = epoll_ctl_add(ep.as_fd(), l.as_raw_fd(), EpollFlags::IN, 0) {
        return vec![format!("listener: {e}")];
    }
    let mut clients = Vec::new();
    let mut done = 0;
    for _ in 0..3 {
        // Under faults a socket or a registration may fail (EMFILE, ENOMEM): that client is
        // done before it starts.
        let c = match socket(Domain::Inet, SockType::Stream) {
            Ok(c) => c,
            Err(e) => {
                log.push(format!("socket: {e}"));
                done += 1;
                continue;
            }
        };
        let _ = connect(c.as_fd(), &addr("127.0.0.1:7000"));
        let registered = epoll_ctl_add(ep.as_fd(), c.as_raw_fd(), flags, 100 + clients.len() as u64).is_ok();
        clients.push((c, false, !registered));
        if !registered {
            done += 1;
        }
    }
    let mut servers: Vec<OwnedFd> = Vec::new();
    // Faults may break a connection: a client whose connection failed counts as done, and
    // the program gives up after a simulated minute of silence.
    while done < 3 {
        let events = match wait(&ep, Some(Duration::from_secs(60))) {
            Ok(e) if !e.is_empty() => e,
            Ok(_) => {
                log.push("silence".to_string());
                break;
            }
            Err(e) => {
                log.push(format!("poll: {e}"));
                break;
            }
        };
        for (data, f) in events {
            match data {
                0 => loop {
                    match accept4(l.as_fd()) {
                        Ok((s, _)) => {
                            // A failed registration (a transient ENOMEM) leaves that connection
                            // unserved: its client ends in silence.
                            let _ = epoll_ctl_add(ep.as_fd(), s.as_raw_fd(), flags, 200 + servers.len() as u64);
                            servers.push(s);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) => log.push(format!("accept: {e}")),
                    }
                },
                100..=199 => {
                    let (c, sent, got) = &mut clients[(data - 100) as usize];
                    if *got {
                        continue;
                    }
                    if f.contains(EpollFlags::OUT) && !*sent {
                        *sent = send(c.as_fd(), format!("hello from {data}").as_bytes()).is_ok();
                    }
                    let mut buf = [0u8; 64];
                    match recv(c.as_fd(), &mut buf) {
                        Ok(n) if n > 0 => log.push(String::from_utf8_lossy(&buf[..n]).into_owned()),
                        Ok(_) => log.push(format!("{data}: eof")),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                        Err(e) => log.push(format!("{data}: {e}")),
                    }
                    *got = true;
                    done += 1;
                }
                _ => {
                    let s = &servers[(data - 200) as usize];
                    let mut buf = [0u8; 64];
                    if let Ok(n) = recv(s.as_fd(), &mut buf) {
                        if n > 0 {
                            let _ = send(s.as_fd(), &buf[..n]);
                        }
                    }
                }
            }
        }
    }
    log
}

fn run(seed: u64, cfg: Config) -> (Kernel, Vec<String>) {
    let k = Kernel::with_config(seed, cfg);
    let log = {
        let _on = k.enter();
        echo_program()
    };
    (k, log)
}

#[test]
fn a_seed_replays_byte_for_byte_and_seeds_differ() {
    let cfg = || Config::default().latency(Duration::from_millis(1));
    let (a, log_a) = run(7, cfg());
    let (b, log_b) = run(7, cfg());
    assert_eq!(log_a, log_b);
    assert_eq!(a.trace(), b.trace());
    assert_eq!((a.digest(), a.records()), (b.digest(), b.records()));

    let digests: std::collections::BTreeSet<u64> = (0..10).map(|s| run(s, cfg()).0.digest()).collect();
    assert!(digests.len() >= 5, "only {} distinct runs in 10 seeds", digests.len());
    let orders: std::collections::BTreeSet<Vec<String>> = (0..20).map(|s| run(s, cfg()).1).collect();
    assert!(orders.len() > 1, "the echoes always came back in the same order");
}

#[test]
fn the_tape_replays_a_run_with_faults() {
    let cfg = Config::default().faults(Faults::swarm());
    for seed in 0..10 {
        let (k, _) = run(seed, cfg.clone());
        let tape = k.tape();
        let (again, _) = run(seed + 1000, cfg.clone().replay(tape.clone()));
        assert_eq!(k.digest(), again.digest(), "seed {seed}");
        assert_eq!(again.tape(), tape);
        let text = tape.to_string();
        assert_eq!(text.parse::<Tape>().unwrap(), tape);
    }
}

#[test]
fn an_hour_of_waiting_takes_no_time() {
    let k = Kernel::new(1);
    let _on = k.enter();
    let ep = epoll_create1().unwrap();
    let before = clock_monotonic();
    assert!(wait(&ep, Some(Duration::from_secs(3600))).unwrap().is_empty());
    let slept = clock_monotonic() - before;
    assert!(slept >= Duration::from_secs(3600), "{slept:?}");
    assert!(
        slept <= Duration::from_secs(3600) + Duration::from_millis(1),
        "{slept:?}"
    );
    assert_eq!(k.elapsed(), slept);
    let real = clock_gettime(Clock::Realtime).unwrap();
    assert!(real > Duration::from_secs(1_767_225_600));
}

#[test]
fn a_dropped_socket_sends_a_fin_and_its_registrations_go() {
    let k = Kernel::new(3);
    let _on = k.enter();
    let l = socket(Domain::Inet, SockType::Stream).unwrap();
    bind(l.as_fd(), &addr("127.0.0.1:0")).unwrap();
    listen(l.as_fd(), 4).unwrap();
    let c = socket(Domain::Inet, SockType::Stream).unwrap();
    let _ = connect(c.as_fd(), &local_addr(l.as_fd()).unwrap());
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), l.as_raw_fd(), EpollFlags::IN, 1).unwrap();
    wait(&ep, None).unwrap();
    let (s, _) = accept4(l.as_fd()).unwrap();
    epoll_ctl_add(ep.as_fd(), s.as_raw_fd(), EpollFlags::IN | EpollFlags::RDHUP, 2).unwrap();
    epoll_ctl_add(ep.as_fd(), c.as_raw_fd(), EpollFlags::IN, 3).unwrap();
    drop(c); // OwnedFd::drop: libc's close, no wrapper
    let events = wait(&ep, None).unwrap();
    assert_eq!(
        events.len(),
        1,
        "{events:?}: the dropped socket's registration must be gone"
    );
    assert_eq!(events[0].0, 2);
    assert!(events[0].1.contains(EpollFlags::RDHUP));
    assert_eq!(recv(s.as_fd(), &mut [0u8; 8]).unwrap(), 0);
    assert!(k.trace().contains("closed #2 1"), "{}", k.trace());
}

#[test]
fn threads_take_turns_and_a_sleeping_thread_wakes_a_poll() {
    fn once(seed: u64) -> (String, Duration) {
        let k = Kernel::new(seed);
        let _on = k.enter();
        let ep = epoll_create1().unwrap();
        let efd = eventfd(0).unwrap();
        epoll_ctl_add(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 9).unwrap();
        let raw = efd.as_raw_fd();
        let workers: Vec<_> = (1..=3u64)
            .map(|i| {
                k.spawn(move || {
                    sim::sleep(Duration::from_secs(i));
                    // SAFETY: the eventfd stays open until the workers are joined, below.
                    let fd = unsafe { BorrowedFd::borrow_raw(raw) };
                    eventfd_write(fd, i).unwrap();
                })
            })
            .collect();
        let start = clock_monotonic();
        let mut total = 0;
        while total < 6 {
            if !wait(&ep, None).unwrap().is_empty() {
                total += eventfd_read(efd.as_fd()).unwrap();
            }
        }
        for w in workers {
            w.join().unwrap();
        }
        (k.trace(), clock_monotonic() - start)
    }
    let (a, took) = once(11);
    let (b, _) = once(11);
    assert_eq!(a, b);
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert!(a.contains("switch -> T1") && a.contains("switch -> T3"), "{a}");
}

#[test]
fn a_thread_outside_the_simulation_wakes_it_through_the_backing_pipe() {
    let k = Kernel::new(5);
    let _on = k.enter();
    let ep = epoll_create1().unwrap();
    let efd = eventfd(0).unwrap();
    epoll_ctl_add(ep.as_fd(), efd.as_raw_fd(), EpollFlags::IN, 1).unwrap();
    let raw = efd.as_raw_fd();
    let outside = std::thread::spawn(move || {
        // This thread never entered the kernel: a real write, into the backing pipe.
        // SAFETY: the eventfd stays open until this thread is joined, below.
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        eventfd_write(fd, 5).unwrap();
    });
    let events = wait(&ep, None).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(eventfd_read(efd.as_fd()).unwrap(), 5);
    outside.join().unwrap();
    assert!(k.trace().contains("outside-write #2 8"), "{}", k.trace());
}

#[test]
fn a_deadlock_is_reported_as_a_stall() {
    let k = Kernel::with_config(1, Config::default().stall_timeout(Some(Duration::from_millis(50))));
    let _on = k.enter();
    let ep = epoll_create1().unwrap();
    let e = eventfd(0).unwrap();
    epoll_ctl_add(ep.as_fd(), e.as_raw_fd(), EpollFlags::IN, 1).unwrap();
    let err = wait(&ep, None).unwrap_err();
    assert!(err.to_string().contains("simulation stalled"), "{err}");
    assert!(k.stalled());
}

#[test]
fn a_full_backlog_drops_syns_until_the_connect_times_out() {
    let k = Kernel::with_config(1, Config::default().replay(Tape::new()));
    let _on = k.enter();
    let l = socket(Domain::Inet, SockType::Stream).unwrap();
    bind(l.as_fd(), &addr("127.0.0.1:0")).unwrap();
    listen(l.as_fd(), 0).unwrap(); // room for one
    let to = local_addr(l.as_fd()).unwrap();
    let ep = epoll_create1().unwrap();
    let mut clients = Vec::new();
    for i in 0..2 {
        let c = socket(Domain::Inet, SockType::Stream).unwrap();
        assert_eq!(
            connect(c.as_fd(), &to).unwrap_err().raw_os_error(),
            Some(errno::EINPROGRESS)
        );
        epoll_ctl_add(ep.as_fd(), c.as_raw_fd(), EpollFlags::OUT, i).unwrap();
        clients.push(c);
    }
    let start = clock_monotonic();
    assert_eq!(wait(&ep, None).unwrap(), vec![(0, EpollFlags::OUT)]);
    epoll_ctl_del(ep.as_fd(), clients[0].as_raw_fd()).unwrap();
    let events = wait(&ep, None).unwrap();
    assert_eq!(events[0].0, 1);
    assert!(events[0].1.contains(EpollFlags::ERR));
    assert_eq!(
        take_socket_error(clients[1].as_fd()).unwrap().unwrap().raw_os_error(),
        Some(errno::ETIMEDOUT)
    );
    assert_eq!(clock_monotonic() - start, Duration::from_secs(127));
}

#[test]
fn forced_faults_fire_as_the_real_kernel_would_show_them() {
    let k = Kernel::with_config(2, Config::default().replay(Tape::new()));
    let _on = k.enter();
    let l = socket(Domain::Inet, SockType::Stream).unwrap();
    bind(l.as_fd(), &addr("127.0.0.1:0")).unwrap();
    listen(l.as_fd(), 8).unwrap();
    let to = local_addr(l.as_fd()).unwrap();
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), l.as_raw_fd(), EpollFlags::IN, 0).unwrap();

    // An aborted connection: accept reports it and its client sees a reset.
    let c1 = socket(Domain::Inet, SockType::Stream).unwrap();
    let _ = connect(c1.as_fd(), &to);
    let c2 = socket(Domain::Inet, SockType::Stream).unwrap();
    let _ = connect(c2.as_fd(), &to);
    wait(&ep, None).unwrap();
    k.inject(FaultClass::Accept);
    let e = accept4(l.as_fd()).unwrap_err();
    assert!(e.raw_os_error().is_some(), "{e}");
    let (s2, _) = accept4(l.as_fd()).unwrap();

    // A reset while data flows: both ends hear of it after the data.
    let c = if e.raw_os_error() == Some(errno::ECONNABORTED) {
        &c2
    } else {
        &c1
    };
    let _ = c;
    k.inject(FaultClass::Reset);
    send(s2.as_fd(), b"last words").unwrap();
    epoll_ctl_add(ep.as_fd(), s2.as_raw_fd(), EpollFlags::IN | EpollFlags::RDHUP, 2).unwrap();
    let events = wait(&ep, None).unwrap();
    assert!(
        events
            .iter()
            .any(|(d, f)| *d == 2 && f.contains(EpollFlags::ERR | EpollFlags::HUP)),
        "{events:?}"
    );
    assert_eq!(
        recv(s2.as_fd(), &mut [0u8; 8]).unwrap_err().raw_os_error(),
        Some(errno::ECONNRESET)
    );

    // A signal interrupts a blocking poll: no events, long before the timeout.
    let before = clock_monotonic();
    k.inject(FaultClass::Eintr);
    let e = eventfd(0).unwrap();
    let ep2 = epoll_create1().unwrap();
    epoll_ctl_add(ep2.as_fd(), e.as_raw_fd(), EpollFlags::IN, 1).unwrap();
    assert!(wait(&ep2, Some(Duration::from_secs(10))).unwrap().is_empty());
    assert!(clock_monotonic() - before < Duration::from_secs(10));
    assert_eq!(k.stats().faults, 3);
}

#[test]
fn short_transfers_arrive_in_pieces_and_say_when_there_is_room() {
    let k = Kernel::with_config(4, Config::default().replay(Tape::new()));
    let _on = k.enter();
    let (a, b) = {
        let l = socket(Domain::Inet, SockType::Stream).unwrap();
        bind(l.as_fd(), &addr("127.0.0.1:0")).unwrap();
        listen(l.as_fd(), 8).unwrap();
        let c = socket(Domain::Inet, SockType::Stream).unwrap();
        let _ = connect(c.as_fd(), &local_addr(l.as_fd()).unwrap());
        let ep = epoll_create1().unwrap();
        epoll_ctl_add(ep.as_fd(), l.as_raw_fd(), EpollFlags::IN, 0).unwrap();
        wait(&ep, None).unwrap();
        (c, accept4(l.as_fd()).unwrap().0)
    };
    let ep = epoll_create1().unwrap();
    let et = EpollFlags::IN | EpollFlags::OUT | EpollFlags::ET;
    epoll_ctl_add(ep.as_fd(), a.as_raw_fd(), et, 1).unwrap();
    epoll_ctl_add(ep.as_fd(), b.as_raw_fd(), et, 2).unwrap();
    wait(&ep, Some(Duration::ZERO)).unwrap();
    k.inject(FaultClass::ShortIo);
    let data = [5u8; 1000];
    let n = send(a.as_fd(), &data).unwrap();
    assert!(n < 1000, "a short write");
    assert_eq!(send(a.as_fd(), &data).unwrap_err().raw_os_error(), Some(errno::EAGAIN));
    // The writer waits for an edge, which comes once the buffer drained.
    loop {
        let events = wait(&ep, None).unwrap();
        if events.iter().any(|(d, f)| *d == 1 && f.contains(EpollFlags::OUT)) {
            break;
        }
    }
    assert_eq!(send(a.as_fd(), &data[n..]).unwrap(), 1000 - n);
    let mut got = Vec::new();
    while got.len() < 1000 {
        let mut buf = [0u8; 2000];
        match recv(b.as_fd(), &mut buf) {
            Ok(m) => got.extend_from_slice(&buf[..m]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wait(&ep, None).unwrap();
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(got, vec![5u8; 1000]);
}

#[test]
fn datagrams_overtake_each_other_and_get_lost() {
    let reordered = (0..20).any(|seed| {
        let k = Kernel::with_config(seed, Config::default().latency(Duration::from_millis(5)));
        let _on = k.enter();
        let a = socket(Domain::Inet, SockType::Datagram).unwrap();
        let b = socket(Domain::Inet, SockType::Datagram).unwrap();
        bind(b.as_fd(), &addr("127.0.0.1:9000")).unwrap();
        for i in 0..10u8 {
            send_to(a.as_fd(), &[i], &addr("127.0.0.1:9000")).unwrap();
        }
        let ep = epoll_create1().unwrap();
        epoll_ctl_add(ep.as_fd(), b.as_raw_fd(), EpollFlags::IN, 0).unwrap();
        let mut order = Vec::new();
        while order.len() < 10 {
            wait(&ep, None).unwrap();
            let mut buf = [0u8; 4];
            while let Ok(n) = recv(b.as_fd(), &mut buf) {
                order.extend_from_slice(&buf[..n]);
            }
        }
        order != (0..10).collect::<Vec<u8>>()
    });
    assert!(reordered);

    let k = Kernel::with_config(
        1,
        Config::default().faults(Faults::none().with(FaultClass::Loss, 1_000_000)),
    );
    let _on = k.enter();
    let a = socket(Domain::Inet, SockType::Datagram).unwrap();
    let b = socket(Domain::Inet, SockType::Datagram).unwrap();
    bind(b.as_fd(), &addr("127.0.0.1:9001")).unwrap();
    assert_eq!(send_to(a.as_fd(), b"lost", &addr("127.0.0.1:9001")).unwrap(), 4);
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), b.as_raw_fd(), EpollFlags::IN, 0).unwrap();
    assert!(wait(&ep, Some(Duration::from_secs(1))).unwrap().is_empty());
}

#[test]
fn a_busy_poller_still_sees_time_pass() {
    let k = Kernel::with_config(1, Config::default().latency(Duration::from_millis(1)));
    let _on = k.enter();
    let a = socket(Domain::Inet, SockType::Datagram).unwrap();
    let b = socket(Domain::Inet, SockType::Datagram).unwrap();
    bind(b.as_fd(), &addr("127.0.0.1:9002")).unwrap();
    let ep = epoll_create1().unwrap();
    epoll_ctl_add(ep.as_fd(), b.as_raw_fd(), EpollFlags::IN, 0).unwrap();
    send_to(a.as_fd(), b"x", &addr("127.0.0.1:9002")).unwrap();
    let mut polls = 0;
    while wait(&ep, Some(Duration::ZERO)).unwrap().is_empty() {
        polls += 1;
        assert!(polls < 100_000, "the clock never moved");
    }
    assert!(k.stats().spins <= 1);
}

#[test]
fn shrinking_finds_the_fault_that_breaks_a_run() {
    // The "bug": a run fails when any connection is reset.
    let failing = |tape: Option<Tape>, seed: u64| {
        let mut cfg = Config::default().faults(Faults::none().with(FaultClass::Reset, 200_000));
        if let Some(t) = tape {
            cfg = cfg.replay(t);
        }
        let k = Kernel::with_config(seed, cfg);
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _on = k.enter();
            echo_program()
        }))
        .is_ok();
        (!ok || k.trace().contains("rst")).then(|| k.tape())
    };
    let seed = (0..50)
        .find(|&s| failing(None, s).is_some())
        .expect("no seed resets a connection");
    let tape = failing(None, seed).unwrap();
    let small = sim::shrink(&tape, 200, |t| failing(Some(t.clone()), seed));
    assert!(small.faults() == 1, "{small}");
    assert!(small.nonzero() <= tape.nonzero());
}
