//! Faults on the simulated kernel, survived by the real loop and transports as on Linux: a
//! connection reset, short writes and split segments, interrupted polls, failed accepts, and
//! whole runs under seed-drawn fault profiles (swarm testing).
//!
//! Every fault the simulated kernel injects is one Linux can produce in that situation, with the
//! kernel's state kept consistent with it (see `evloop::sys::sim`), so "survived" means exactly
//! what it means on a real machine: an error where the contract says so, no hang, no spin, no
//! lost data on the connections that were not broken.
#![cfg(feature = "simulation")]

use crate::support as sim_support;

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use evloop::net::TcpStream;
use evloop::{
    io::{AsyncReadExt, AsyncWriteExt},
    time::timeout,
};
use evloop_syscalls::sim::{Config, FaultClass, Faults, Kernel};
use evloop_tests::net::Echo;
use sim_support::{on_kernel, one_echo_server, run_mixed};

/// A simulated minute: anything legitimately waiting has its answer long before.
const MINUTE: Duration = Duration::from_secs(60);

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// One line through an asyncio-stream client of the protocol echo server at `port`.
async fn one_line(port: u16, text: &str) -> io::Result<String> {
    let (r, w) = evloop::streams::open_connection("127.0.0.1", port).await?;
    w.write(format!("{text}\n").as_bytes());
    w.drain().await?;
    let line = r.readline().await.map_err(io_err)?;
    w.close();
    Ok(String::from_utf8_lossy(&line).trim_end().to_string())
}

#[test]
fn a_reset_is_survived_by_every_transport() {
    let (outcome, kernel) = on_kernel(3, Config::default(), |k| {
        let k = k.clone();
        evloop::run(timeout(MINUTE, async move {
            let lp = evloop::event_loop::get_running_loop().map_err(io_err)?;
            let server = lp.create_server(Echo::new, "127.0.0.1", 0).await?;
            let port = server.local_addr().port();

            // Asyncio streams over the protocol transport: the reset reaches the reader.
            let (r, w) = evloop::streams::open_connection("127.0.0.1", port).await?;
            w.write(b"first\n");
            w.drain().await?;
            assert_eq!(r.readline().await.map_err(io_err)?, b"first\n");
            k.inject(FaultClass::Reset);
            w.write(b"second\n");
            let _ = w.drain().await;
            let after = r.readline().await;
            assert!(
                after.is_err() || after.as_ref().is_ok_and(|l| l.is_empty()),
                "{after:?}"
            );

            // The server still serves others.
            assert_eq!(one_line(port, "still there").await?, "still there");

            // TcpStream: every later call fails cleanly.
            let (addr, echo) = one_echo_server().await?;
            let mut c = TcpStream::connect(addr).await?;
            c.write_all(b"ping").await?;
            let mut buf = [0u8; 4];
            c.read_exact(&mut buf).await?;
            k.inject(FaultClass::Reset);
            c.write_all(b"lost").await?;
            let mut rest = Vec::new();
            let read = c.read_to_end(&mut rest).await;
            assert_eq!(read.map_err(|e| e.kind()), Err(io::ErrorKind::ConnectionReset));
            let served = echo.await.map_err(io_err)?;
            assert!(served.is_err() || served.as_ref().is_ok_and(|n| *n >= 4), "{served:?}");
            server.close();
            Ok::<_, io::Error>(())
        }))
    });
    outcome.unwrap().unwrap().unwrap();
    let stats = kernel.stats();
    assert_eq!(stats.spins, 0, "a poll spun after the reset");
    assert_eq!(stats.faults, 2);
}

#[test]
fn short_writes_and_split_segments_lose_nothing() {
    let cfg = Config::default().faults(Faults::none().with(FaultClass::ShortIo, 1_000_000));
    let (outcome, kernel) = on_kernel(4, cfg, |_| {
        evloop::run(timeout(MINUTE, async {
            let data: Vec<u8> = (0..300_000u32).map(|n| (n % 251) as u8).collect();
            // TcpStream both ways at once.
            let (addr, echo) = one_echo_server().await?;
            let mut c = TcpStream::connect(addr).await?;
            let (mut rd, mut wr) = c.split();
            let send = async {
                wr.write_all(&data).await?;
                wr.shutdown().await
            };
            let mut back = Vec::new();
            let (s, r) = evloop::join!(send, rd.read_to_end(&mut back));
            s?;
            r?;
            assert!(
                back == data,
                "TcpStream: {} of {} bytes came back intact",
                back.len(),
                data.len()
            );
            assert_eq!(echo.await.map_err(io_err)??, data.len() as u64);

            // The protocol transport's write buffer and the stream writer's drain.
            let lp = evloop::event_loop::get_running_loop().map_err(io_err)?;
            let server = lp.create_server(Echo::new, "127.0.0.1", 0).await?;
            let (r, w) = evloop::streams::open_connection("127.0.0.1", server.local_addr().port()).await?;
            w.write(&data);
            w.drain().await?;
            let got = r.readexactly(data.len()).await.map_err(io_err)?;
            assert!(got == data, "streams: the echo differs");
            server.close();
            Ok::<_, io::Error>(())
        }))
    });
    outcome.unwrap().unwrap().unwrap();
    assert!(kernel.stats().faults > 20, "{:?}", kernel.stats());
}

#[test]
fn interrupted_polls_change_nothing_the_contract_orders() {
    fn timers(cfg: Config) -> (Vec<String>, Kernel) {
        on_kernel(5, cfg, |_| {
            let log = Rc::new(RefCell::new(Vec::new()));
            let l = log.clone();
            evloop::run(async move {
                let lp = evloop::event_loop::get_running_loop().unwrap();
                let start = lp.time();
                for (i, ms) in [7u64, 3, 3, 10, 1, 3].into_iter().enumerate() {
                    let l = l.clone();
                    let lp2 = lp.clone();
                    let deadline = start + Duration::from_millis(ms);
                    lp.call_at(deadline, move || {
                        assert!(lp2.time() >= deadline, "timer {i} fired early");
                        l.borrow_mut().push(format!("timer {i} ({ms} ms)"));
                    })
                    .unwrap();
                }
                evloop::time::sleep(Duration::from_millis(20)).await;
            })
            .unwrap();
            log.borrow().clone()
        })
    }
    let (plain, _) = timers(Config::default());
    let (interrupted, kernel) = timers(Config::default().faults(Faults::none().with(FaultClass::Eintr, 500_000)));
    assert_eq!(
        interrupted, plain,
        "equal deadlines run in order, and nothing fires early"
    );
    assert_eq!(
        plain,
        [
            "timer 4 (1 ms)",
            "timer 1 (3 ms)",
            "timer 2 (3 ms)",
            "timer 5 (3 ms)",
            "timer 0 (7 ms)",
            "timer 3 (10 ms)"
        ]
    );
    assert!(kernel.stats().faults > 0);
}

#[test]
fn failed_accepts_do_not_stall_the_backlog() {
    let cfg = Config::default().faults(Faults::none().with(FaultClass::Accept, 400_000));
    let (outcome, kernel) = on_kernel(6, cfg, |_| {
        evloop::run(timeout(MINUTE * 10, async {
            let lp = evloop::event_loop::get_running_loop().map_err(io_err)?;
            let server = lp.create_server(Echo::new, "127.0.0.1", 0).await?;
            let port = server.local_addr().port();
            let mut clients = Vec::new();
            for i in 0..20 {
                clients.push(evloop::spawn(async move {
                    timeout(MINUTE, one_line(port, &format!("client {i}"))).await
                }));
            }
            let (mut served, mut refused) = (0, 0);
            for c in clients {
                match c.await.map_err(io_err)? {
                    Ok(Ok(line)) => {
                        assert!(line.starts_with("client "));
                        served += 1;
                    }
                    Ok(Err(_)) => refused += 1, // its connection was aborted: a reset or EOF
                    Err(_) => panic!("a client waited a minute: the backlog stalled"),
                }
            }
            // After all that, the server still accepts (a new connection may be aborted too).
            let mut last = Err(io::Error::other("never tried"));
            for _ in 0..10 {
                last = one_line(port, "last").await;
                if last.is_ok() {
                    break;
                }
            }
            assert_eq!(last?, "last");
            server.close();
            Ok::<_, io::Error>((served, refused))
        }))
    });
    let (served, refused) = outcome.unwrap().unwrap().unwrap();
    assert!(
        served > 0 && served + refused == 20,
        "{served} served, {refused} refused"
    );
    assert!(kernel.stats().faults > 0);
    assert!(!kernel.stalled());
}

#[test]
fn runs_under_seed_drawn_fault_profiles_end_cleanly() {
    // EVLOOP_SIM_SEEDS=n widens the search (40 seeds by default, well under a second).
    let seeds: u64 = std::env::var("EVLOOP_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    for seed in 100..100 + seeds {
        let run = run_mixed(seed, Config::default().faults(Faults::swarm()));
        let log = run.log.join("\n");
        assert!(!run.kernel.stalled(), "seed {seed} stalled:\n{log}");
        assert!(
            !log.contains("timed out"),
            "seed {seed} hung:\n{log}\n{}",
            run.kernel.trace_tail(80)
        );
        assert!(!log.contains("panic"), "seed {seed}:\n{log}");
        assert!(
            run.kernel.stats().spins < 10,
            "seed {seed} spun: {:?}",
            run.kernel.stats()
        );
    }
}
