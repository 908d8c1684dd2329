//! `#[evloop::test(simulate)]`: a test body run on the simulated kernel under many seeds, with
//! a determinism check, a failing seed reported with its shrunk schedule and trace, and
//! `EVLOOP_SEED` replaying it.
#![cfg(feature = "simulation")]

use crate::support as sim_support;

use std::io;
use std::time::Duration;

use evloop::io::{AsyncReadExt, AsyncWriteExt};
use evloop::net::{TcpListener, TcpStream};

#[evloop::test(simulate)]
async fn an_echo_works_on_every_seed() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = evloop::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 5];
        s.read_exact(&mut buf).await.unwrap();
        s.write_all(&buf).await.unwrap();
    });
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(b"hello").await.unwrap();
    let mut buf = [0u8; 5];
    c.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"hello");
    server.await.unwrap();
}

#[evloop::test(simulate(seeds = 20))]
async fn a_result_test_passes_on_every_seed() -> io::Result<()> {
    let before = evloop::event_loop::get_running_loop().map_err(io::Error::other)?.time();
    evloop::time::sleep(Duration::from_secs(3600)).await;
    let lp = evloop::event_loop::get_running_loop().map_err(io::Error::other)?;
    assert!(lp.time() - before >= Duration::from_secs(3600));
    Ok(())
}

#[evloop::test(simulate(seeds = 30, faults))]
async fn a_careful_client_survives_every_fault_profile() {
    // Under faults any step may fail; a careful program reports it and never hangs.
    let outcome = evloop::time::timeout(Duration::from_secs(300), async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = evloop::spawn(async move {
            let (mut s, _) = listener.accept().await?;
            let mut buf = vec![0u8; 1000];
            s.read_exact(&mut buf).await?;
            s.write_all(&buf).await?;
            Ok::<_, io::Error>(())
        });
        let mut c = TcpStream::connect(addr).await?;
        c.write_all(&[1u8; 1000]).await?;
        let mut back = vec![0u8; 1000];
        c.read_exact(&mut back).await?;
        assert_eq!(back, vec![1u8; 1000]);
        let _ = server.await;
        Ok::<_, io::Error>(())
    })
    .await;
    assert!(outcome.is_ok(), "the exchange hung under faults");
}

#[evloop::test(simulate(seeds = 200))]
#[should_panic(expected = "the messages arrived in the order")]
async fn an_ordering_bug_is_found() {
    sim_support::first_come_first_heard().await;
}

#[evloop::test(simulate(seeds = 3))]
#[should_panic(expected = "left 1 simulated thread(s) running")]
async fn a_thread_left_running_fails_the_test() {
    let kernel = evloop::sys::sim::Kernel::current().expect("the body runs on a simulated kernel");
    let _forgotten = kernel.spawn(|| evloop::sys::sim::sleep(Duration::from_secs(10)));
}
