//! The fault model: which faults a run may inject, and how often.
//!
//! Faults come in classes ([`FaultClass`]); each class has a rate (per million opportunities).
//! An *opportunity* is a point where the real kernel could do the same thing: a `recv` that
//! could be interrupted, a send that could find the buffer nearly full, a connection that a
//! middlebox could reset. Every fault the simulated kernel injects is one the real kernel
//! produces in that situation, and it keeps the kernel's state consistent with it: a reset
//! connection stays reset, a short write leaves the send buffer full until space frees up and
//! an `EPOLLOUT` edge says so, a failed accept either loses the connection (`ECONNABORTED`, the
//! client sees a reset) or leaves it queued (`EMFILE`). Errnos that only a wrong program or a
//! broken kernel could see (`EBADF`, `EFAULT`, an `EAGAIN` right after an edge with data still
//! queued) are never injected: the syscall layer's fault injection (`crate::fault`) is the tool
//! for those, and it keeps working under simulation.
//!
//! [`Faults::swarm`] draws the rates from the seed itself ("swarm testing", as TigerBeetle's
//! VOPR does): each run switches a random subset of classes on at a random intensity, so that
//! some seeds hammer one kind of fault while others see none, which finds more bugs than every
//! class at a moderate rate. The profile is the first decisions of the tape, so shrinking can
//! switch a class off.

use crate::Syscall;
use crate::sim::choice::{ChoiceKind, Chooser};

/// A class of faults the simulated kernel can inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FaultClass {
    /// A signal interrupts a call: `EINTR` from the calls that can be interrupted (the
    /// wrappers retry them, or report `EINPROGRESS` for `connect`), and a poll that returns
    /// no events before its timeout.
    Eintr,
    /// Short transfers: a send is cut into segments that arrive apart (the reader sees part
    /// of it), or takes fewer bytes than it could (the send buffer filled meanwhile; an
    /// `EPOLLOUT` edge follows when it drains).
    ShortIo,
    /// A connection is reset (a RST reaches both ends) while data flows.
    Reset,
    /// `accept4` fails: `ECONNABORTED` (the connection is gone, its client sees a reset), or
    /// `EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`, `EPERM`, `EPROTO` with the connection left in
    /// the queue.
    Accept,
    /// A connection attempt fails although a listener exists: refused, unreachable or timed
    /// out, reported as a real kernel reports it (at once, or through `SO_ERROR`).
    Connect,
    /// Another call fails with an errno its man page lists for a transient condition
    /// (`ENOBUFS`/`ENOMEM` from sends, `EMFILE`/`ENFILE` from `socket` and `pipe2`, `ENOMEM`
    /// from `epoll_ctl`, ...).
    Errno,
    /// A datagram is lost.
    Loss,
}

impl FaultClass {
    /// Every class, in the order of the swarm profile on the tape.
    pub const ALL: [FaultClass; 7] = [
        FaultClass::Eintr,
        FaultClass::ShortIo,
        FaultClass::Reset,
        FaultClass::Accept,
        FaultClass::Connect,
        FaultClass::Errno,
        FaultClass::Loss,
    ];

    fn index(self) -> usize {
        match self {
            FaultClass::Eintr => 0,
            FaultClass::ShortIo => 1,
            FaultClass::Reset => 2,
            FaultClass::Accept => 3,
            FaultClass::Connect => 4,
            FaultClass::Errno => 5,
            FaultClass::Loss => 6,
        }
    }

    /// The class's name as the trace prints it.
    pub fn name(self) -> &'static str {
        match self {
            FaultClass::Eintr => "eintr",
            FaultClass::ShortIo => "short-io",
            FaultClass::Reset => "reset",
            FaultClass::Accept => "accept",
            FaultClass::Connect => "connect",
            FaultClass::Errno => "errno",
            FaultClass::Loss => "loss",
        }
    }

    pub(crate) fn code(self) -> u64 {
        self.index() as u64
    }

    pub(crate) fn name_of(code: u64) -> &'static str {
        Self::ALL.get(code as usize).map_or("?", |c| c.name())
    }
}

/// Fault rates per class, in faults per million opportunities; or "drawn from the seed".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Faults {
    rates: [u32; 7],
    swarm: bool,
}

/// The intensities a swarm profile picks from (per million): rare, occasional, frequent.
const SWARM_LEVELS: [u32; 3] = [2_000, 20_000, 100_000];

impl Faults {
    /// No faults: the run still varies event order, latencies and thread interleavings.
    pub fn none() -> Faults {
        Faults {
            rates: [0; 7],
            swarm: false,
        }
    }

    /// Every class at `per_million`.
    pub fn all(per_million: u32) -> Faults {
        Faults {
            rates: [per_million.min(1_000_000); 7],
            swarm: false,
        }
    }

    /// Rates drawn from the seed (see the module docs): each class is on in about half of
    /// the seeds, at one of three intensities.
    pub fn swarm() -> Faults {
        Faults {
            rates: [0; 7],
            swarm: true,
        }
    }

    /// The same, with `class` at `per_million` (1,000,000: every opportunity).
    pub fn with(mut self, class: FaultClass, per_million: u32) -> Faults {
        self.rates[class.index()] = per_million.min(1_000_000);
        self
    }

    /// The rate of `class` (for a swarm, once the kernel has drawn its profile).
    pub fn rate(&self, class: FaultClass) -> u32 {
        self.rates[class.index()]
    }

    /// Whether the rates are drawn from the seed.
    pub fn is_swarm(&self) -> bool {
        self.swarm
    }

    /// Draws a swarm profile (the first decisions of a run); fixed rates are kept as given.
    pub(crate) fn resolve(&self, choice: &mut Chooser) -> Faults {
        if !self.swarm {
            return self.clone();
        }
        let mut rates = [0; 7];
        for rate in &mut rates {
            if choice.chance(ChoiceKind::Profile, 500_000) {
                // 0 is the gentlest level, so that shrinking lowers intensity too.
                *rate = SWARM_LEVELS[choice.below(ChoiceKind::Profile, 3) as usize];
            }
        }
        Faults { rates, swarm: false }
    }
}

impl Default for Faults {
    /// [`Faults::none`].
    fn default() -> Faults {
        Faults::none()
    }
}

/// The errnos of [`FaultClass::Errno`] for a call: transient conditions its man page lists
/// that leave nothing to clean up. Calls not listed never fail this way. (The loop's own
/// `eventfd` and `epoll_create1`, and an eventfd's `epoll_ctl` registration, are left out:
/// failing them only fails `EventLoop::new`.)
pub(crate) fn transient_errnos(s: Syscall) -> &'static [i32] {
    use libc::*;
    match s {
        Syscall::EpollCtl => &[ENOMEM, ENOSPC],
        Syscall::Socket | Syscall::Pipe2 | Syscall::Socketpair => &[EMFILE, ENFILE, ENOBUFS, ENOMEM],
        Syscall::Send | Syscall::Sendmsg | Syscall::Sendto | Syscall::Write | Syscall::Writev => &[ENOBUFS, ENOMEM],
        Syscall::Recv | Syscall::Recvfrom => &[ENOMEM],
        Syscall::Getsockname | Syscall::Getpeername => &[ENOBUFS],
        _ => &[],
    }
}

/// The errnos of a failed `accept4` ([`FaultClass::Accept`]); the first one loses the
/// connection, the others leave it queued.
pub(crate) const ACCEPT_ERRNOS: [i32; 7] = [
    libc::ECONNABORTED,
    libc::EMFILE,
    libc::ENFILE,
    libc::ENOBUFS,
    libc::ENOMEM,
    libc::EPERM,
    libc::EPROTO,
];

/// The errnos of a failed connection attempt ([`FaultClass::Connect`]).
pub(crate) const CONNECT_ERRNOS: [i32; 4] = [
    libc::ECONNREFUSED,
    libc::ETIMEDOUT,
    libc::ENETUNREACH,
    libc::EHOSTUNREACH,
];

/// One fault forced by [`Kernel::inject`](crate::sim::Kernel::inject): it fires at the next
/// opportunity of its class, whatever the rates say.
#[derive(Default)]
pub(crate) struct Forced {
    pending: [u32; 7],
}

impl Forced {
    pub(crate) fn add(&mut self, class: FaultClass) {
        self.pending[class.index()] += 1;
    }

    pub(crate) fn any(&self, class: FaultClass) -> bool {
        self.pending[class.index()] > 0
    }

    pub(crate) fn take(&mut self, class: FaultClass) -> bool {
        let p = &mut self.pending[class.index()];
        if *p > 0 {
            *p -= 1;
            true
        } else {
            false
        }
    }
}

/// The fault state of a run: the resolved rates and the forced faults.
pub(crate) struct FaultPlan {
    pub(crate) rates: Faults,
    pub(crate) forced: Forced,
    pub(crate) fired: u64,
}

impl FaultPlan {
    pub(crate) fn new(rates: Faults) -> FaultPlan {
        FaultPlan {
            rates,
            forced: Forced::default(),
            fired: 0,
        }
    }

    /// Whether a fault of `class` fires at this opportunity (a forced one always does and
    /// asks the seed nothing).
    pub(crate) fn fires(&mut self, class: FaultClass, choice: &mut Chooser) -> bool {
        let hit = self.forced.take(class) || choice.chance(ChoiceKind::Fault, self.rates.rate(class));
        if hit {
            self.fired += 1;
        }
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swarm_profiles_differ_between_seeds_and_replay_from_the_tape() {
        let profiles: Vec<Faults> = (0..16)
            .map(|seed| Faults::swarm().resolve(&mut Chooser::new(seed, None, false)))
            .collect();
        assert!(profiles.iter().any(|p| p.rate(FaultClass::Reset) > 0));
        assert!(profiles.iter().any(|p| p.rate(FaultClass::Reset) == 0));
        assert!(profiles.windows(2).any(|w| w[0] != w[1]));

        let mut rec = Chooser::new(5, None, true);
        let drawn = Faults::swarm().resolve(&mut rec);
        let mut again = Chooser::new(0, Some(rec.tape()), false);
        assert_eq!(Faults::swarm().resolve(&mut again), drawn);
    }

    #[test]
    fn forced_faults_fire_once_each_without_a_choice() {
        let mut plan = FaultPlan::new(Faults::none());
        let mut c = Chooser::new(1, None, true);
        plan.forced.add(FaultClass::Reset);
        assert!(plan.fires(FaultClass::Reset, &mut c));
        assert!(!plan.fires(FaultClass::Reset, &mut c));
        assert!(c.tape().is_empty());
        assert_eq!(plan.fired, 1);
    }
}
