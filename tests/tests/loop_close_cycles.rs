// Standalone binary: it counts the process's fds (`open_fd_count`), which tests in parallel threads would disturb.
//! Closing a loop releases every transport, server and callback it holds, so that no reference
//! cycle outlives it.
//!
//! The classic cycle: a server's connection (its transport) holds a close callback, which holds
//! the server, which holds the user's protocol factory, which holds user state, which holds the
//! transport. Closing the loop with the connection still open left all of it alive (valgrind
//! saw it as a definite leak of about 67 KB per transport). The tests keep such state behind a
//! `Weak` and check that it is freed once the loop is closed and the user's own handles are
//! dropped; the fd test checks that the server's spare fd is closed with the loop even while
//! the user still holds the `Server`. Every test holds `serial()`: the fd test counts the
//! process's fds, and nothing else may open or close one meanwhile.

use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::time::Duration;

use evloop::net::TcpStream;
use evloop::{
    event_loop::EventLoop,
    io::AsyncWriteExt,
    protocol::{Protocol, Transport},
    streams::{StreamReader, StreamWriter},
    time::sleep,
};
use evloop_tests::fds::open_fd_count;
use evloop_tests::{run_bounded, serial, yield_until};

/// User state that the protocol factory captures and that keeps every transport.
#[derive(Default)]
struct State {
    transports: RefCell<Vec<Transport>>,
    writers: RefCell<Vec<StreamWriter>>,
    readers: RefCell<Vec<StreamReader>>,
}

struct Keeper(Rc<State>);

impl Protocol for Keeper {
    fn connection_made(&mut self, t: Transport) {
        self.0.transports.borrow_mut().push(t);
    }
    fn data_received(&mut self, _: &[u8]) {}
}

#[test]
fn closing_the_loop_with_a_protocol_servers_connection_open_frees_the_user_state() {
    let _serial = serial();
    let state = Rc::new(State::default());
    let weak: Weak<State> = Rc::downgrade(&state);
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let (server, client) = run_bounded(&lp, async move {
        let st = state.clone();
        let server = h
            .create_server(move || Keeper(st.clone()), "127.0.0.1", 0)
            .await
            .unwrap();
        let mut client = TcpStream::connect(server.local_addr()).await.unwrap();
        client.write_all(b"hello").await.unwrap();
        yield_until(|| state.transports.borrow().len() == 1).await;
        (server, client)
    });
    lp.close().unwrap();
    drop(client);
    drop(server);
    drop(lp);
    assert!(
        weak.upgrade().is_none(),
        "the state captured by the protocol factory outlived the closed loop (a reference cycle)"
    );
}

#[test]
fn closing_the_loop_with_a_streams_servers_connection_open_frees_the_user_state() {
    let _serial = serial();
    let state = Rc::new(State::default());
    let weak: Weak<State> = Rc::downgrade(&state);
    let lp = EventLoop::new().unwrap();
    let (server, client) = run_bounded(&lp, async move {
        let st = state.clone();
        let server = evloop::streams::start_server(
            move |r, w| {
                // The handler hands its streams to the user state and waits forever.
                st.readers.borrow_mut().push(r);
                st.writers.borrow_mut().push(w);
                async {
                    sleep(Duration::from_secs(3600)).await;
                }
            },
            "127.0.0.1",
            0,
        )
        .await
        .unwrap();
        let port = server.local_addr().port();
        let client = evloop::streams::open_connection("127.0.0.1", port).await.unwrap();
        yield_until(|| state.writers.borrow().len() == 1).await;
        (server, client)
    });
    lp.close().unwrap();
    drop(client);
    drop(server);
    drop(lp);
    assert!(weak.upgrade().is_none(), "the handler's state outlived the closed loop");
}

#[test]
fn closing_the_loop_while_a_connection_is_closing_frees_the_user_state() {
    // The transport was closed, its connection_lost still queued when the loop closes: the
    // queued callback is dropped unrun, and with it everything it holds.
    let _serial = serial();
    let state = Rc::new(State::default());
    let weak: Weak<State> = Rc::downgrade(&state);
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let (server, client) = run_bounded(&lp, async move {
        let st = state.clone();
        let server = h
            .create_server(move || Keeper(st.clone()), "127.0.0.1", 0)
            .await
            .unwrap();
        let client = TcpStream::connect(server.local_addr()).await.unwrap();
        yield_until(|| state.transports.borrow().len() == 1).await;
        (server, client)
    });
    let t = weak.upgrade().unwrap().transports.borrow()[0].clone();
    t.abort();
    drop(t);
    assert!(lp.stats().ready > 0, "connection_lost is queued, not run");
    lp.close().unwrap();
    drop(client);
    drop(server);
    drop(lp);
    assert!(weak.upgrade().is_none(), "the state outlived the closed loop");
}

#[test]
fn closing_the_loop_closes_a_servers_fds_even_while_the_server_handle_is_kept() {
    let _serial = serial();
    let before = open_fd_count();
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let server = run_bounded(&lp, async move {
        h.create_server(evloop_tests::net::Echo::new, "127.0.0.1", 0)
            .await
            .unwrap()
    });
    lp.close().unwrap();
    let after = open_fd_count();
    assert_eq!(
        after, before,
        "the loop closed every fd it opened, the server's included"
    );
    assert!(!server.is_serving(), "a server of a closed loop does not serve");
    assert_eq!(server.active_connections(), 0);
    drop(server);
    drop(lp);
}

/// A callback that never ran lets go of its closure when the loop closes, even while the user
/// still holds its handle: a closure that captured its own handle (here through a shared list,
/// as a scheduler keeping its timers would) otherwise kept itself alive in a cycle. Found by
/// the timer property test (`event_loop/prop_timers.rs`).
#[test]
fn closing_the_loop_frees_pending_callbacks_whose_handles_are_still_held() {
    let _serial = serial();
    struct Token;
    let token = Rc::new(Token);
    let watch: Weak<Token> = Rc::downgrade(&token);
    {
        let lp = EventLoop::new().unwrap();
        let h = lp.handle();
        let timers = Rc::new(RefCell::new(Vec::new()));
        let handles = Rc::new(RefCell::new(Vec::new()));
        for delay in [Duration::from_secs(3600), Duration::MAX] {
            let (t, keep) = (timers.clone(), token.clone());
            let th = h
                .call_later(delay, move || {
                    let _ = (&t, &keep);
                })
                .unwrap();
            timers.borrow_mut().push(th);
        }
        let (hs, keep) = (handles.clone(), token.clone());
        let soon = h
            .call_soon(move || {
                let _ = (&hs, &keep);
            })
            .unwrap();
        handles.borrow_mut().push(soon);
        drop(token);
        assert!(watch.upgrade().is_some());
        lp.close().unwrap();
        assert!(watch.upgrade().is_none(), "the closures are gone with the closed loop");
        // The handles themselves stay usable.
        assert!(!timers.borrow()[0].cancelled());
        timers.borrow()[0].cancel();
        handles.borrow()[0].cancel();
    }
    assert!(watch.upgrade().is_none());
}
