//! asyncio's servers on every loop of a runtime: [`Handle::start_server`],
//! [`Handle::create_server`] and their Unix twins bind once under a [`Policy`] (the `Group` of
//! `policy.rs`, shared with the listeners) and start a part on every loop; the pool-wide
//! [`Servers`] they return closes them all and waits for them.
//!
//! Data flow: the caller's handler (or protocol factory) is `Send + Sync`; each loop's part,
//! started through the loop's `RemoteHandle`, builds from it that loop's protocol factory (for
//! the streams servers, `start_server`'s own protocols on this loop) and serves the group's
//! connections for this loop: each fd becomes a `Transport` of this loop running a fresh
//! protocol, exactly as a one-loop `Server` starts one. A connection counts in its loop's load
//! (accepted, live) and in the `Servers`' active count until its transport closes. The state
//! every thread reads (parts running, connections active, the waiters of `wait_closed`) is one
//! mutex: it changes once per connection and per part, never per byte.

use std::future::{Future, poll_fn};
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

use evloop_syscalls::UnixAddr;

use crate::event_loop::{LoopHandle, get_running_loop};
use crate::io::protocol::{Protocol, start_accepted};
use crate::io::stream::{StreamReader, StreamWriter, boxed_server_protocols};
use crate::runtime::policy::{Group, Live, Policy, lock};
use crate::runtime::pool::{Handle, Pool};
use crate::runtime::worker;

/// One loop's protocol factory.
type ProtocolFactory = Box<dyn Fn() -> Box<dyn Protocol>>;
/// Builds a loop's protocol factory, on that loop.
type PerLoop = Arc<dyn Fn(&LoopHandle) -> ProtocolFactory + Send + Sync>;

#[derive(Default)]
struct State {
    /// Parts running on their loops.
    parts: usize,
    /// Connections open, on every loop.
    active: usize,
    waiters: Vec<Waker>,
    unlinked: bool,
}

struct Shared {
    group: Arc<Group>,
    pool: Arc<Pool>,
    state: Mutex<State>,
    /// A Unix pathname: its socket file is removed at `close` or when the runtime stops.
    path: Option<PathBuf>,
}

impl Shared {
    fn stopped_accepting(&self) -> bool {
        self.group.is_closed() || self.pool.is_stopping()
    }

    /// Changes the state, then wakes the waiters of `wait_closed` if it is now done.
    fn update(&self, change: impl FnOnce(&mut State)) {
        let wake = {
            let mut st = lock(&self.state);
            change(&mut st);
            if st.parts == 0 && st.active == 0 && self.stopped_accepting() {
                std::mem::take(&mut st.waiters)
            } else {
                Vec::new()
            }
        };
        for w in wake {
            w.wake();
        }
    }

    fn unlink(&self) {
        let Some(path) = &self.path else { return };
        if !std::mem::replace(&mut lock(&self.state).unlinked, true) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A server on every loop of a runtime (asyncio's `Server`, pool-wide): what
/// [`Handle::start_server`], [`Handle::create_server`] and their Unix twins return.
/// `Send + Sync + Clone`: close it or wait for it from any thread or loop. Dropping it leaves
/// the servers running (until [`close`](Servers::close) or the runtime's stop), as a one-loop
/// [`Server`](crate::protocol::Server) keeps serving.
///
/// ```
/// use evloop::runtime::{Builder, Policy};
///
/// let rt = Builder::new().loops(2).build()?;
/// let servers = rt.handle().start_server(Policy::ReusePort, "127.0.0.1:0".parse()?, |reader, writer| async move {
///     if let Ok(line) = reader.readline().await {
///         writer.write(&line); // echo one line
///     }
/// })?;
/// let mut client = std::net::TcpStream::connect(servers.local_addr())?;
/// std::io::Write::write_all(&mut client, b"ping\n")?;
/// let mut reply = String::new();
/// std::io::Read::read_to_string(&mut client, &mut reply)?;
/// assert_eq!(reply, "ping\n");
/// servers.close(); // stops accepting on both loops
/// rt.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Servers<A = SocketAddr> {
    shared: Arc<Shared>,
    addr: A,
}

impl<A: Clone> Clone for Servers<A> {
    fn clone(&self) -> Self {
        Servers {
            shared: self.shared.clone(),
            addr: self.addr.clone(),
        }
    }
}

impl<A> Servers<A> {
    /// The address they listen on, as bound (so port 0 shows the port the kernel picked).
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// let s = rt.handle().start_server(Default::default(), "127.0.0.1:0".parse()?, |_r, _w| async {})?;
    /// assert_ne!(s.local_addr().port(), 0);
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_addr(&self) -> A
    where
        A: Clone,
    {
        self.addr.clone()
    }

    /// The policy that places their connections.
    ///
    /// ```
    /// use evloop::runtime::Policy;
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// let s = rt.handle().start_server(Policy::ReusePort, "127.0.0.1:0".parse()?, |_r, _w| async {})?;
    /// assert_eq!(s.policy(), Policy::ReusePort);
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn policy(&self) -> Policy {
        self.shared.group.policy()
    }

    /// Whether they accept connections: not once closed or once the runtime stops.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// let s = rt.handle().start_server(Default::default(), "127.0.0.1:0".parse()?, |_r, _w| async {})?;
    /// assert!(s.is_serving());
    /// s.close();
    /// assert!(!s.is_serving());
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_serving(&self) -> bool {
        !self.shared.stopped_accepting()
    }

    /// Connections open right now, on every loop.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// let s = rt.handle().start_server(Default::default(), "127.0.0.1:0".parse()?, |_r, _w| async {})?;
    /// assert_eq!(s.active_connections(), 0);
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn active_connections(&self) -> usize {
        lock(&self.shared.state).active
    }

    /// Stops accepting on every loop (from any thread; asyncio's `Server.close`) and returns
    /// at once: each loop, when it next runs, serves what its accept queue already holds, then
    /// closes its listening socket (a connection that arrives meanwhile is served, not reset);
    /// open connections are left to finish. A pathname's socket file is removed now.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(2).build()?;
    /// let s = rt.handle().start_server(Default::default(), "127.0.0.1:0".parse()?, |_r, _w| async {})?;
    /// let addr = s.local_addr();
    /// s.close();
    /// rt.block_on(move || async move { s.wait_closed().await })?;
    /// assert!(std::net::TcpStream::connect(addr).is_err()); // nobody listens any more
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.shared.group.close();
        self.shared.unlink();
        self.shared.update(|_| ());
    }

    /// Completes once they stopped accepting ([`close`](Servers::close) or the runtime's
    /// stop) on every loop and every connection they accepted has closed. Await it on any
    /// loop (of this runtime or another).
    ///
    /// ```
    /// use evloop::runtime::{Builder, Policy};
    ///
    /// let rt = Builder::new().loops(2).build()?;
    /// let s = rt.handle().start_server(Policy::LeastConnections, "127.0.0.1:0".parse()?, |_r, w| async move {
    ///     w.write(b"bye");
    /// })?;
    /// let mut got = String::new();
    /// std::io::Read::read_to_string(&mut std::net::TcpStream::connect(s.local_addr())?, &mut got)?;
    /// assert_eq!(got, "bye");
    /// let closer = s.clone();
    /// std::thread::spawn(move || closer.close());
    /// rt.block_on(move || async move { s.wait_closed().await })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn wait_closed(&self) {
        poll_fn(|cx| {
            let mut st = lock(&self.shared.state);
            if st.parts == 0 && st.active == 0 && self.shared.stopped_accepting() {
                return Poll::Ready(());
            }
            if !st.waiters.iter().any(|w| w.will_wake(cx.waker())) {
                st.waiters.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }
}

impl<A: std::fmt::Debug> std::fmt::Debug for Servers<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Servers({:?}, {:?}, serving={})",
            self.addr,
            self.policy(),
            self.is_serving()
        )
    }
}

/// A connection of the servers, until its transport closes.
struct Active {
    shared: Arc<Shared>,
    _live: Live,
}

impl Drop for Active {
    fn drop(&mut self) {
        self.shared.update(|st| st.active = st.active.saturating_sub(1));
    }
}

/// A part running on its loop, until it returns.
struct Part(Arc<Shared>);

impl Drop for Part {
    fn drop(&mut self) {
        self.0.update(|st| st.parts = st.parts.saturating_sub(1));
        if self.0.stopped_accepting() {
            self.0.unlink();
        }
    }
}

/// Starts a part on every loop; each part's error (its listening socket failed) is that
/// loop's failure, as the error of `spawn_on_each`'s work is.
fn start<A>(
    handle: &Handle,
    group: Group,
    addr: A,
    path: Option<PathBuf>,
    per_loop: PerLoop,
    what: &'static str,
) -> Servers<A> {
    let shared = Arc::new(Shared {
        group: Arc::new(group),
        pool: handle.pool.clone(),
        state: Mutex::new(State::default()),
        path,
    });
    for (index, entry) in handle.pool.loops.iter().enumerate() {
        let (shared, per_loop) = (shared.clone(), per_loop.clone());
        let _ = entry
            .remote
            .call_soon_threadsafe(move || worker::spawn_work(index, move |_ctx| part(shared, per_loop, what)));
    }
    Servers { shared, addr }
}

/// One loop's part: this loop's protocol factory, and a transport for each connection the
/// policy gives this loop.
async fn part(shared: Arc<Shared>, per_loop: PerLoop, what: &'static str) -> io::Result<()> {
    let lp = get_running_loop().map_err(|e| io::Error::other(format!("{what}: {e}")))?;
    let factory = per_loop(&lp);
    shared.update(|st| st.parts += 1);
    let _part = Part(shared.clone());
    let s = shared.clone();
    shared
        .group
        .serve(what, move |fd, peer, live| {
            s.update(|st| st.active += 1);
            let active = Active {
                shared: s.clone(),
                _live: live,
            };
            // A transport that cannot start drops `on_close`, and with it the counts.
            let _ = start_accepted(&lp, fd, peer, factory(), Box::new(move || drop(active)));
        })
        .await
}

impl Handle {
    /// asyncio's `start_server` on every loop: each connection the `policy` gives a loop gets
    /// a [`StreamReader`] and a [`StreamWriter`] of that loop, and a task there running
    /// `handler(reader, writer)` (the handler is `Send + Sync`; the future it makes runs where
    /// it was made, so it may be `!Send`). Binds `addr` now (port 0: one free port for all the
    /// loops), from any thread; the servers run until [`Servers::close`] or the runtime's
    /// stop, whose grace period their connections get. The streams have the default options
    /// ([`DEFAULT_LIMIT`](crate::streams::DEFAULT_LIMIT)).
    ///
    /// Errors: the bind itself; [`Policy::ReusePortCpu`] without pinned loops
    /// (`InvalidInput`), as [`TcpListeners::bind`](crate::runtime::TcpListeners::bind).
    ///
    /// ```
    /// use evloop::runtime::{Builder, Context, Policy};
    ///
    /// let rt = Builder::new().loops(2).build()?;
    /// let s = rt.handle().start_server(Policy::LeastConnections, "127.0.0.1:0".parse()?, |_reader, writer| async move {
    ///     let me = Context::current().map(|c| c.index()); // the loop serving this connection
    ///     writer.write(format!("{me:?}").as_bytes());
    /// })?;
    /// let mut got = String::new();
    /// std::io::Read::read_to_string(&mut std::net::TcpStream::connect(s.local_addr())?, &mut got)?;
    /// assert!(got.starts_with("Some("));
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_server<H, Fut>(&self, policy: Policy, addr: SocketAddr, handler: H) -> io::Result<Servers>
    where
        H: Fn(StreamReader, StreamWriter) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        start_inet(self, policy, addr, streams(handler), "Handle::start_server")
    }

    /// asyncio's `create_server` on every loop: each connection the `policy` gives a loop
    /// runs a protocol `factory()` makes on that loop (the factory is `Send + Sync`, the
    /// protocol need not be), over a [`Transport`](crate::protocol::Transport) of that loop.
    /// Binding, errors and the servers' life as [`start_server`](Handle::start_server).
    ///
    /// ```
    /// use evloop::protocol::{Protocol, Transport};
    /// use evloop::runtime::{Builder, Policy};
    ///
    /// struct Echo(Option<Transport>);
    /// impl Protocol for Echo {
    ///     fn connection_made(&mut self, t: Transport) {
    ///         self.0 = Some(t);
    ///     }
    ///     fn data_received(&mut self, data: &[u8]) {
    ///         if let Some(t) = &self.0 {
    ///             t.write(data);
    ///             t.close();
    ///         }
    ///     }
    /// }
    ///
    /// let rt = Builder::new().loops(2).build()?;
    /// let s = rt.handle().create_server(Policy::ReusePort, "127.0.0.1:0".parse()?, || Echo(None))?;
    /// let mut client = std::net::TcpStream::connect(s.local_addr())?;
    /// std::io::Write::write_all(&mut client, b"hi")?;
    /// let mut got = Vec::new();
    /// std::io::Read::read_to_end(&mut client, &mut got)?;
    /// assert_eq!(got, b"hi");
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_server<P, F>(&self, policy: Policy, addr: SocketAddr, factory: F) -> io::Result<Servers>
    where
        P: Protocol + 'static,
        F: Fn() -> P + Send + Sync + 'static,
    {
        start_inet(self, policy, addr, protocols(factory), "Handle::create_server")
    }

    /// asyncio's `start_unix_server` on every loop, as [`start_server`](Handle::start_server)
    /// for a Unix address (a pathname or an abstract name). One acceptor on loop 0 hands the
    /// connections out: [`Policy::LeastConnections`] is the one policy for Unix sockets; the
    /// two reuse-port policies give an `Unsupported` error whose inner error is an
    /// [`UnsupportedPolicy`](crate::runtime::UnsupportedPolicy) (Linux has no `SO_REUSEPORT`
    /// group for `AF_UNIX`). A pathname's socket file is removed at
    /// [`close`](Servers::close) or when the runtime stops.
    ///
    /// ```
    /// use evloop::net::UnixAddr;
    /// use evloop::runtime::{Builder, Policy};
    ///
    /// let rt = Builder::new().loops(2).build()?;
    /// let path = std::env::temp_dir().join(format!("evloop-doc-sus-{}.sock", std::process::id()));
    /// let s = rt.handle().start_unix_server(Policy::LeastConnections, &UnixAddr::pathname(&path)?, |_r, w| async move {
    ///     w.write(b"unix");
    /// })?;
    /// let mut got = String::new();
    /// std::io::Read::read_to_string(&mut std::os::unix::net::UnixStream::connect(&path)?, &mut got)?;
    /// assert_eq!(got, "unix");
    /// s.close();
    /// assert!(!path.exists()); // the socket file is gone
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn start_unix_server<H, Fut>(
        &self,
        policy: Policy,
        addr: &UnixAddr,
        handler: H,
    ) -> io::Result<Servers<UnixAddr>>
    where
        H: Fn(StreamReader, StreamWriter) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        start_unix(self, policy, addr, streams(handler), "Handle::start_unix_server")
    }

    /// asyncio's `create_unix_server` on every loop, as [`create_server`](Handle::create_server)
    /// for a Unix address; the policies as [`start_unix_server`](Handle::start_unix_server).
    ///
    /// ```
    /// use evloop::net::UnixAddr;
    /// use evloop::protocol::{Protocol, Transport};
    /// use evloop::runtime::{Builder, Policy};
    ///
    /// struct Hello;
    /// impl Protocol for Hello {
    ///     fn connection_made(&mut self, t: Transport) {
    ///         t.write(b"hello");
    ///         t.close();
    ///     }
    ///     fn data_received(&mut self, _: &[u8]) {}
    /// }
    ///
    /// let rt = Builder::new().loops(2).build()?;
    /// let addr = UnixAddr::abstract_name(format!("evloop-doc-cus-{}", std::process::id()).as_bytes())?;
    /// let s = rt.handle().create_unix_server(Policy::LeastConnections, &addr, || Hello)?;
    /// assert_eq!(s.local_addr(), addr);
    /// rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_unix_server<P, F>(&self, policy: Policy, addr: &UnixAddr, factory: F) -> io::Result<Servers<UnixAddr>>
    where
        P: Protocol + 'static,
        F: Fn() -> P + Send + Sync + 'static,
    {
        start_unix(self, policy, addr, protocols(factory), "Handle::create_unix_server")
    }
}

/// Binds a TCP address and starts the servers' parts.
fn start_inet(
    handle: &Handle,
    policy: Policy,
    addr: SocketAddr,
    per_loop: PerLoop,
    what: &'static str,
) -> io::Result<Servers> {
    let group = Group::bind_inet(handle, addr, policy)?;
    let bound = group.addr().as_inet().unwrap_or(addr);
    Ok(start(handle, group, bound, None, per_loop, what))
}

/// Binds a Unix address (refusing the reuse-port policies) and starts the servers' parts.
fn start_unix(
    handle: &Handle,
    policy: Policy,
    addr: &UnixAddr,
    per_loop: PerLoop,
    what: &'static str,
) -> io::Result<Servers<UnixAddr>> {
    let group = Group::bind_unix(handle, addr, policy)?;
    let path = addr.as_pathname().map(PathBuf::from);
    Ok(start(handle, group, addr.clone(), path, per_loop, what))
}

/// Each loop's factory of `start_server`'s protocols, running `handler` on each connection.
fn streams<H, Fut>(handler: H) -> PerLoop
where
    H: Fn(StreamReader, StreamWriter) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let handler = Arc::new(handler);
    Arc::new(move |lp: &LoopHandle| {
        let h = handler.clone();
        Box::new(boxed_server_protocols(lp, move |r: StreamReader, w: StreamWriter| {
            h(r, w)
        })) as ProtocolFactory
    })
}

/// Each loop's factory of the user's protocols.
fn protocols<P, F>(factory: F) -> PerLoop
where
    P: Protocol + 'static,
    F: Fn() -> P + Send + Sync + 'static,
{
    let factory = Arc::new(factory);
    Arc::new(move |_lp: &LoopHandle| {
        let f = factory.clone();
        Box::new(move || Box::new(f()) as Box<dyn Protocol>) as ProtocolFactory
    })
}
