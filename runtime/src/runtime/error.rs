//! What a runtime reports when it stops: each loop whose work panicked or failed, or could not
//! start. A loop thread records its failure in the pool as it happens (which also stops the
//! other loops); [`Runtime::shutdown`](crate::runtime::Runtime::shutdown) and
//! [`Runtime::wait`](crate::runtime::Runtime::wait) return all of them, so none is lost.
//! Also the one refusal of binding on N loops that is a matter of the policy, not of the
//! address: [`UnsupportedPolicy`].

use std::error::Error;
use std::fmt;
use std::io;

use crate::event_loop::Panic;
use crate::runtime::policy::Policy;

/// How one loop failed.
///
/// ```
/// use evloop::runtime::{Builder, Failure};
///
/// let rt = Builder::new().loops(2).build()?;
/// rt.spawn_on_each(|ctx| async move {
///     if ctx.index() == 1 {
///         panic!("loop 1 gives up");
///     }
///     Ok(())
/// });
/// let err = rt.wait().unwrap_err(); // the panic stopped both loops
/// let failure = &err.failures()[0];
/// assert_eq!(failure.index(), 1);
/// assert!(matches!(failure.kind(), Failure::Panic(p) if p.message() == "loop 1 gives up"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Failure {
    /// The loop's work (or the loop's thread itself) panicked; the payload is kept, so
    /// `std::panic::resume_unwind` can re-raise it.
    Panic(Panic),
    /// The loop's work returned an error.
    Error(io::Error),
    /// The loop could not start (its event loop, its thread, or pinning it to its CPU).
    Start(io::Error),
    /// The future given to [`Runtime::block_on`](crate::runtime::Runtime::block_on) was
    /// cancelled by a shutdown (a signal, [`Handle::shutdown`](crate::runtime::Handle::shutdown),
    /// another loop's failure) before it finished.
    Cancelled,
}

/// One loop's failure: which loop, and how.
///
/// ```
/// use evloop::runtime::Builder;
///
/// let rt = Builder::new().loops(1).build()?;
/// rt.spawn_on_each(|_ctx| async { Err(std::io::Error::other("no config")) });
/// let err = rt.wait().unwrap_err();
/// assert_eq!(err.failures()[0].index(), 0);
/// assert!(err.to_string().contains("loop 0: no config"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LoopFailure {
    index: usize,
    kind: Failure,
}

impl LoopFailure {
    pub(crate) fn new(index: usize, kind: Failure) -> LoopFailure {
        LoopFailure { index, kind }
    }

    /// The loop's index in the runtime (0 to `loops - 1`).
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// rt.spawn_on_each(|_| async { Err(std::io::Error::other("x")) });
    /// assert_eq!(rt.wait().unwrap_err().failures()[0].index(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// How it failed.
    ///
    /// ```
    /// use evloop::runtime::Failure;
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// rt.spawn_on_each(|_| async { Err(std::io::Error::other("x")) });
    /// assert!(matches!(rt.wait().unwrap_err().failures()[0].kind(), Failure::Error(_)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kind(&self) -> &Failure {
        &self.kind
    }

    /// Takes the failure apart (to re-raise a panic's payload).
    ///
    /// ```
    /// use evloop::runtime::Failure;
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// rt.spawn_on_each(|_| async { std::panic::panic_any(7u8) });
    /// let failure = rt.wait().unwrap_err().into_failures().remove(0);
    /// let Failure::Panic(mut panic) = failure.into_kind() else { unreachable!() };
    /// assert_eq!(panic.take_payload().unwrap().downcast_ref::<u8>(), Some(&7));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_kind(self) -> Failure {
        self.kind
    }
}

impl fmt::Display for LoopFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Failure::Panic(p) => write!(f, "loop {}: panicked: {}", self.index, p.message()),
            Failure::Error(e) => write!(f, "loop {}: {e}", self.index),
            Failure::Start(e) => write!(f, "loop {}: could not start: {e}", self.index),
            Failure::Cancelled => write!(f, "loop {}: cancelled by the shutdown", self.index),
        }
    }
}

/// The error of a runtime that stopped because loops failed: every failure, in the order they
/// happened (the first is the one that stopped the others).
///
/// ```
/// let rt = evloop::runtime::Builder::new().loops(2).build()?;
/// rt.spawn_on_each(|ctx| async move { Err(std::io::Error::other(format!("bad {}", ctx.index()))) });
/// let err = rt.wait().unwrap_err();
/// assert_eq!(err.failures().len(), 2); // both loops' errors, none lost
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct RuntimeError {
    failures: Vec<LoopFailure>,
}

impl RuntimeError {
    pub(crate) fn new(failures: Vec<LoopFailure>) -> RuntimeError {
        RuntimeError { failures }
    }

    /// The failures, first first.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// rt.spawn_on_each(|_| async { Err(std::io::Error::other("x")) });
    /// assert_eq!(rt.wait().unwrap_err().failures().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn failures(&self) -> &[LoopFailure] {
        &self.failures
    }

    /// The failures, owned.
    ///
    /// ```
    /// let rt = evloop::runtime::Builder::new().loops(1).build()?;
    /// rt.spawn_on_each(|_| async { Err(std::io::Error::other("x")) });
    /// let failures = rt.wait().unwrap_err().into_failures();
    /// assert_eq!(failures[0].index(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_failures(self) -> Vec<LoopFailure> {
        self.failures
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.failures.len();
        write!(f, "{n} loop{} failed", if n == 1 { "" } else { "s" })?;
        for (i, failure) in self.failures.iter().enumerate() {
            write!(f, "{}{failure}", if i == 0 { ": " } else { "; " })?;
        }
        Ok(())
    }
}

impl Error for RuntimeError {}

/// A [`Policy`] that does not apply to the address: `SO_REUSEPORT` (policies
/// [`ReusePort`](Policy::ReusePort) and [`ReusePortCpu`](Policy::ReusePortCpu)) balances TCP
/// and UDP sockets only; Linux has no reuse-port group for Unix sockets (a second bind of the
/// same path or abstract name fails with `EADDRINUSE`), so a Unix address takes
/// [`Policy::LeastConnections`]. It comes as the inner error of an `io::Error` of kind
/// `Unsupported`, from [`UnixListeners::bind`](crate::runtime::UnixListeners::bind) and the
/// Unix servers of [`Handle`](crate::runtime::Handle).
///
/// ```
/// use evloop::net::UnixAddr;
/// use evloop::runtime::{Builder, Policy, UnsupportedPolicy};
///
/// let rt = Builder::new().loops(2).build()?;
/// let addr = UnixAddr::abstract_name(format!("evloop-doc-up-{}", std::process::id()).as_bytes())?;
/// let err = rt.handle().start_unix_server(Policy::ReusePortCpu, &addr, |_r, _w| async {}).unwrap_err();
/// let typed = err.get_ref().and_then(|e| e.downcast_ref::<UnsupportedPolicy>()).unwrap();
/// assert_eq!(typed.policy(), Policy::ReusePortCpu);
/// assert!(typed.to_string().contains("LeastConnections"));
/// # rt.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnsupportedPolicy {
    policy: Policy,
}

impl UnsupportedPolicy {
    pub(crate) fn new(policy: Policy) -> UnsupportedPolicy {
        UnsupportedPolicy { policy }
    }

    /// The policy that was refused.
    ///
    /// ```
    /// use evloop::runtime::{Builder, Policy, UnixListeners, UnsupportedPolicy};
    /// let rt = Builder::new().loops(1).build()?;
    /// let addr = evloop::net::UnixAddr::abstract_name(b"evloop-doc-upp")?;
    /// let err = UnixListeners::bind(rt.handle(), &addr, Policy::ReusePort).unwrap_err();
    /// let typed = err.into_inner().unwrap().downcast::<UnsupportedPolicy>().unwrap();
    /// assert_eq!(typed.policy(), Policy::ReusePort);
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn policy(&self) -> Policy {
        self.policy
    }
}

impl fmt::Display for UnsupportedPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Policy::{:?} does not apply to Unix sockets (Linux has no SO_REUSEPORT group for AF_UNIX): \
             use Policy::LeastConnections",
            self.policy
        )
    }
}

impl Error for UnsupportedPolicy {}
