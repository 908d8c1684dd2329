//! The settings of one simulated kernel.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use crate::sim::choice::Tape;
use crate::sim::faults::Faults;
use crate::sim::trace::TraceMode;

/// How a [`Kernel`](crate::sim::Kernel) behaves: its faults, network, trace and limits.
///
/// ```
/// use std::time::Duration;
/// use evloop_syscalls::sim::{Config, FaultClass, Faults};
///
/// let cfg = Config::default()
///     .faults(Faults::none().with(FaultClass::Reset, 10_000)) // 1% of sends reset
///     .latency(Duration::from_millis(2))
///     .host("db.example", "10.0.0.7".parse()?);
/// # let _ = cfg;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) faults: Faults,
    pub(crate) latency_us: u64,
    pub(crate) trace: TraceMode,
    pub(crate) record_tape: bool,
    pub(crate) replay: Option<Tape>,
    pub(crate) stall_timeout: Option<Duration>,
    pub(crate) hosts: Vec<(String, IpAddr)>,
    pub(crate) local_addrs: Vec<IpAddr>,
    pub(crate) spin_limit: u64,
    pub(crate) timer_slack_us: u64,
    pub(crate) yield_rate: u32,
    pub(crate) connect_inline_rate: u32,
    pub(crate) boot_time: u64,
}

impl Default for Config {
    /// No faults; one-way latency up to 200 µs; timeouts up to 50 µs late; a full trace of the
    /// last 200,000 records; the tape recorded; stalls declared after 10 s of real time;
    /// `localhost` resolving to 127.0.0.1 and ::1.
    fn default() -> Config {
        Config {
            faults: Faults::none(),
            latency_us: 200,
            trace: TraceMode::default(),
            record_tape: true,
            replay: None,
            stall_timeout: Some(Duration::from_secs(10)),
            hosts: vec![
                ("localhost".to_string(), IpAddr::V4(Ipv4Addr::LOCALHOST)),
                ("localhost".to_string(), IpAddr::V6(Ipv6Addr::LOCALHOST)),
            ],
            local_addrs: Vec::new(),
            spin_limit: 10_000,
            timer_slack_us: 50,
            yield_rate: 300_000,
            connect_inline_rate: 100_000,
            boot_time: 3_600_000_000_000,
        }
    }
}

impl Config {
    /// The faults to inject ([`Faults::none`] by default; [`Faults::swarm`] lets the seed pick).
    pub fn faults(mut self, faults: Faults) -> Config {
        self.faults = faults;
        self
    }

    /// The largest one-way latency of a connection or a datagram (each connection draws its
    /// own from the seed, skewed towards short ones). Zero makes the network instantaneous.
    pub fn latency(mut self, max: Duration) -> Config {
        self.latency_us = u64::try_from(max.as_micros()).unwrap_or(u64::MAX);
        self
    }

    /// How much trace to keep.
    pub fn trace(mut self, mode: TraceMode) -> Config {
        self.trace = mode;
        self
    }

    /// Replays `tape` instead of drawing from the seed (decisions past its end are 0).
    pub fn replay(mut self, tape: Tape) -> Config {
        self.replay = Some(tape);
        self
    }

    /// Whether to record the tape (on by default; off saves memory in long runs).
    pub fn record_tape(mut self, on: bool) -> Config {
        self.record_tape = on;
        self
    }

    /// How long (real time) the kernel waits for the outside world when every simulated thread
    /// is blocked and nothing is scheduled, before it fails the blocked polls; `None` waits
    /// forever, as a real kernel would.
    pub fn stall_timeout(mut self, limit: Option<Duration>) -> Config {
        self.stall_timeout = limit;
        self
    }

    /// Adds a name to the simulated host table (`getaddrinfo`).
    pub fn host(mut self, name: &str, addr: IpAddr) -> Config {
        self.hosts.push((name.to_string(), addr));
        self
    }

    /// Makes `addr` a local address of the simulated machine (sockets may bind it; loopback
    /// and the wildcard addresses always are).
    pub fn local_addr(mut self, addr: IpAddr) -> Config {
        self.local_addrs.push(addr);
        self
    }

    /// After this many non-blocking polls in a row that return nothing while the clock stands
    /// still, the kernel moves the clock to the next event anyway (a busy loop waiting for a
    /// timer would otherwise never see it fire); after this many polls that return events at
    /// one instant (a file that stays ready), it moves the clock 1 ms. 0 turns both guards off.
    pub fn spin_limit(mut self, polls: u64) -> Config {
        self.spin_limit = polls;
        self
    }

    /// The most a poll's timeout may wake late (the seed picks how late; never early).
    pub fn timer_slack(mut self, max: Duration) -> Config {
        self.timer_slack_us = u64::try_from(max.as_micros()).unwrap_or(u64::MAX);
        self
    }

    /// How often (per million polls) a thread entering a poll lets another runnable simulated
    /// thread run first.
    pub fn yield_rate(mut self, per_million: u32) -> Config {
        self.yield_rate = per_million.min(1_000_000);
        self
    }

    /// How often (per million) a TCP connect to a listening address completes inside the call,
    /// as it may on loopback, instead of reporting `EINPROGRESS`.
    pub fn connect_inline_rate(mut self, per_million: u32) -> Config {
        self.connect_inline_rate = per_million.min(1_000_000);
        self
    }
}
