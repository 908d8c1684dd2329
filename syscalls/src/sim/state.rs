//! The simulated kernel's state: the file table, the descriptor numbers that lead to it, and the
//! pieces every simulated call needs (clock, choices, faults, trace, scheduler).
//!
//! A simulated file (an *open file description* in the kernel's words) has a [`FileId`],
//! allocated in sequence and never reused, so ids are the same in every run of a seed and the
//! trace names files by them. The program reaches a file through descriptor numbers, which are
//! real (see `backing`), so they differ between runs and never appear in the trace. A file is
//! `Embryo` (a connection waiting in an accept queue: no descriptor yet), `Open`, or `Closed`
//! (every descriptor gone; a TCP socket lingers closed while its FIN or RST is on the way).
//! The file is closed only when the watch reports its backing pipe hung up, never because one
//! number was closed: a `dup` made behind the kernel's back (`OwnedFd::try_clone`) still holds
//! it open, exactly as in Linux.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::sim::backing::Watch;
use crate::sim::choice::Chooser;
use crate::sim::clock::Timeline;
use crate::sim::config::Config;
use crate::sim::epoll::Epoll;
use crate::sim::faults::FaultPlan;
use crate::sim::net::{self, Net};
use crate::sim::sched::Sched;
use crate::sim::socket::Sock;
use crate::sim::trace::{Op, Rec, Trace};

/// A simulated file's id (`#n` in the trace).
pub(crate) type FileId = u64;

/// A deterministic hasher for small integer keys (ids, descriptor numbers): std's default
/// hasher is seeded at random per process, and nothing in the simulation may depend on that.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_i32(&mut self, n: i32) {
        self.write_u64(u64::from(n as u32));
    }
}

/// A `HashMap` with [`IdHasher`]: deterministic iteration for the same history of inserts.
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// Where a file is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Life {
    /// Exists without a descriptor (a connection waiting in an accept queue).
    Embryo,
    /// Reachable through at least one descriptor.
    Open,
    /// Every descriptor is closed.
    Closed,
}

/// The bytes of a pipe, kept by its read end.
pub(crate) struct PipeBuf {
    pub(crate) data: VecDeque<u8>,
    /// The write end's file.
    pub(crate) writer: FileId,
    pub(crate) writer_open: bool,
}

/// Linux's default pipe capacity.
pub(crate) const PIPE_CAPACITY: usize = 65_536;
/// Writes up to this size are atomic on a pipe (all or nothing).
pub(crate) const PIPE_BUF: usize = 4096;

/// What a closing file was, for what its closing does to others.
enum Gone {
    Epoll,
    Plain,
    PipeReader(FileId),
    PipeWriter(FileId),
    Socket,
}

/// What a file is.
pub(crate) enum Kind {
    Epoll(Epoll),
    Eventfd { count: u64 },
    PipeRead(PipeBuf),
    PipeWrite { reader: FileId },
    Socket(Box<Sock>),
}

/// An epoll registration watching a file: the epoll instance and the descriptor number the
/// registration was made with (Linux keys registrations by both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Watcher {
    pub(crate) epoll: FileId,
    pub(crate) fd: RawFd,
}

/// One simulated file.
pub(crate) struct File {
    pub(crate) kind: Kind,
    pub(crate) life: Life,
    /// The descriptor numbers known to lead here.
    pub(crate) numbers: Vec<RawFd>,
    /// The simulator's end of the backing pipe (`None` for an embryo or a closed file).
    pub(crate) backing: Option<OwnedFd>,
    /// The epoll registrations watching this file, in the order they were made.
    pub(crate) watchers: Vec<Watcher>,
}

impl File {
    pub(crate) fn sock(&self) -> Option<&Sock> {
        match &self.kind {
            Kind::Socket(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn sock_mut(&mut self) -> Option<&mut Sock> {
        match &mut self.kind {
            Kind::Socket(s) => Some(s),
            _ => None,
        }
    }
}

/// Counters for the speed report ([`Kernel::stats`](crate::sim::Kernel::stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Simulated calls answered.
    pub calls: u64,
    /// Timeline events fired (segments, SYNs, RSTs, datagrams, ...).
    pub events: u64,
    /// Times the clock jumped because every thread was blocked.
    pub time_jumps: u64,
    /// Times the baton passed to another thread.
    pub switches: u64,
    /// Seeded and forced faults that fired.
    pub faults: u64,
    /// Real system calls the simulation made (backing pipes, reaps).
    pub real_calls: u64,
    /// Times the spin guards moved the clock (polls that kept returning nothing, or kept returning
    /// events, at one instant).
    pub spins: u64,
    /// Simulated files created.
    pub files: u64,
}

/// Everything behind the kernel's lock.
pub(crate) struct State {
    pub(crate) cfg: Config,
    pub(crate) choice: Chooser,
    pub(crate) faults: FaultPlan,
    pub(crate) trace: Trace,
    pub(crate) time: Timeline,
    pub(crate) files: IdMap<FileId, File>,
    pub(crate) fds: IdMap<RawFd, FileId>,
    next_id: FileId,
    pub(crate) watch: Watch,
    pub(crate) net: Net,
    pub(crate) sched: Sched,
    pub(crate) stats: Stats,
    /// The simulated thread making the current call (for the trace).
    pub(crate) thread: u32,
    /// Empty non-blocking polls in a row at the current instant (the spin guard).
    pub(crate) idle_polls: u64,
    /// Polls that returned events at the current instant (the busy guard).
    pub(crate) busy_polls: u64,
    /// Set once the simulation stalled (every thread blocked, nothing scheduled, nothing from
    /// outside): every poll fails from then on.
    pub(crate) stalled: bool,
    /// A poll's events, kept between polls to save an allocation.
    pub(crate) scratch: Vec<crate::sim::epoll::Reported>,
    /// When the scheduler last looked for activity outside the simulation.
    last_outside: std::time::Instant,
}

/// `err` as an `io::Error`.
pub(crate) fn errno(err: i32) -> io::Error {
    io::Error::from_raw_os_error(err)
}

impl State {
    pub(crate) fn new(seed: u64, cfg: Config) -> io::Result<State> {
        let mut choice = Chooser::new(seed, cfg.replay.clone(), cfg.record_tape);
        let rates = cfg.faults.resolve(&mut choice);
        let trace = Trace::new(cfg.trace);
        let start = cfg.boot_time;
        Ok(State {
            net: Net::new(&cfg),
            cfg,
            choice,
            faults: FaultPlan::new(rates),
            trace,
            time: Timeline::new(start),
            files: IdMap::default(),
            fds: IdMap::default(),
            next_id: 1,
            watch: Watch::new()?,
            sched: Sched::default(),
            stats: Stats::default(),
            thread: 0,
            idle_polls: 0,
            busy_polls: 0,
            stalled: false,
            scratch: Vec::new(),
            last_outside: std::time::Instant::now(),
        })
    }

    /// Now, in simulated nanoseconds since boot.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.time.now
    }

    /// Appends a trace record stamped with the current time and thread.
    #[inline]
    pub(crate) fn rec(&mut self, op: Op, file: FileId, a: u64, b: u64, ret: i64) {
        self.trace.push(Rec {
            t: self.time.now,
            thread: self.thread,
            op,
            file,
            a,
            b,
            ret,
        });
    }

    /// Counts and traces a seeded (or forced) fault of `class` that fired on `file`.
    pub(crate) fn fault_fired(&mut self, class: crate::sim::faults::FaultClass, file: FileId, err: i32) {
        self.stats.faults += 1;
        self.rec(Op::Fault, file, class.code(), err as u64, 0);
    }

    /// The file a descriptor number leads to, if the simulation created it.
    #[inline]
    pub(crate) fn lookup(&self, raw: RawFd) -> Option<FileId> {
        self.fds.get(&raw).copied()
    }

    /// [`lookup`](State::lookup), learning the numbers the program made behind the kernel's
    /// back: a `dup` of a simulated descriptor (`OwnedFd::try_clone`, `fcntl(F_DUPFD)`) leads
    /// to the same backing pipe, which `fstat` recognises (a pipe's two ends share an inode),
    /// and Linux reads, writes and registers a dup exactly as the original. Unknown to the
    /// simulation, such a number went to the real kernel, where it is the write end of a pipe
    /// (`EBADF` on a read): the loop's fd contract (`tests/tests/event_loop/fds.rs`, run on the
    /// simulated kernel) found it. Only a miss on an open pipe pays the scan.
    pub(crate) fn resolve(&mut self, raw: RawFd) -> Option<FileId> {
        if let Some(id) = self.lookup(raw) {
            return Some(id);
        }
        let inode = crate::sim::backing::pipe_inode(raw)?;
        let id = self
            .files
            .iter()
            .filter(|(_, f)| f.life == Life::Open)
            .find(|(_, f)| {
                f.backing
                    .as_ref()
                    .is_some_and(|b| crate::sim::backing::pipe_inode(b.as_raw_fd()) == Some(inode))
            })
            .map(|(&id, _)| id)?;
        self.map_number(raw, id);
        Some(id)
    }

    pub(crate) fn file(&self, id: FileId) -> Option<&File> {
        self.files.get(&id)
    }

    pub(crate) fn file_mut(&mut self, id: FileId) -> Option<&mut File> {
        self.files.get_mut(&id)
    }

    pub(crate) fn sock(&self, id: FileId) -> Option<&Sock> {
        self.files.get(&id).and_then(File::sock)
    }

    pub(crate) fn sock_mut(&mut self, id: FileId) -> Option<&mut Sock> {
        self.files.get_mut(&id).and_then(File::sock_mut)
    }

    /// The simulator's end of `id`'s backing pipe.
    pub(crate) fn backing_fd(&self, id: FileId) -> Option<RawFd> {
        self.files
            .get(&id)
            .and_then(|f| f.backing.as_ref())
            .map(AsRawFd::as_raw_fd)
    }

    fn new_id(&mut self) -> FileId {
        let id = self.next_id;
        self.next_id += 1;
        self.stats.files += 1;
        id
    }

    /// A new open file with a descriptor: returns its id and the number for the program.
    pub(crate) fn install(&mut self, kind: Kind) -> io::Result<(FileId, RawFd)> {
        self.settle_closes();
        let id = self.new_id();
        let (raw, backing) = self.watch.back(id)?;
        self.files.insert(
            id,
            File {
                kind,
                life: Life::Open,
                numbers: Vec::new(),
                backing: Some(backing),
                watchers: Vec::new(),
            },
        );
        self.map_number(raw, id);
        Ok((id, raw))
    }

    /// A new file without a descriptor (a connection waiting to be accepted).
    pub(crate) fn embryo(&mut self, kind: Kind) -> FileId {
        let id = self.new_id();
        self.files.insert(
            id,
            File {
                kind,
                life: Life::Embryo,
                numbers: Vec::new(),
                backing: None,
                watchers: Vec::new(),
            },
        );
        id
    }

    /// Gives an embryo its descriptor (accept).
    pub(crate) fn adopt(&mut self, id: FileId) -> io::Result<RawFd> {
        self.settle_closes();
        let (raw, backing) = self.watch.back(id)?;
        if let Some(f) = self.files.get_mut(&id) {
            f.backing = Some(backing);
            f.life = Life::Open;
        }
        self.map_number(raw, id);
        Ok(raw)
    }

    /// A second descriptor for an open file (`dup`).
    pub(crate) fn dup(&mut self, id: FileId, raw: RawFd) -> io::Result<RawFd> {
        self.settle_closes();
        let new = self.watch.dup(raw)?;
        self.map_number(new, id);
        Ok(new)
    }

    /// Reaps before a new real descriptor is made. Every close the program made before this
    /// call (a drop of an `OwnedFd`, which bypasses the wrapper) is then seen here, at a point
    /// fixed by the program's order of calls. Without it, a dropped file was seen closed when
    /// its number happened to come back from `pipe2` (`map_number`), and whether it comes back
    /// depends on descriptors that other threads of the process open and close meanwhile: a
    /// seed's trace then depended on the tests running beside it.
    fn settle_closes(&mut self) {
        self.reap();
    }

    /// Records that `raw` leads to `id`. A number the kernel hands out again was closed: the
    /// file it led to loses it, and since that file may have been closed with it, a reap
    /// settles its fate before anything else happens (program order: the close came first).
    fn map_number(&mut self, raw: RawFd, id: FileId) {
        if let Some(old) = self.fds.insert(raw, id) {
            if old != id {
                if let Some(f) = self.files.get_mut(&old) {
                    f.numbers.retain(|n| *n != raw);
                }
                self.reap();
            }
        }
        if let Some(f) = self.files.get_mut(&id) {
            f.numbers.push(raw);
        }
    }

    /// The program closed `raw` through the wrapper: close the real number and see at once
    /// whether that was the file's last descriptor.
    pub(crate) fn close_number(&mut self, raw: RawFd) {
        if let Some(id) = self.fds.remove(&raw) {
            if let Some(f) = self.files.get_mut(&id) {
                f.numbers.retain(|n| *n != raw);
            }
        }
        self.watch.close_number(raw);
        self.reap();
    }

    /// Whether a millisecond of real time passed since the scheduler last looked outside.
    pub(crate) fn outside_due(&mut self) -> bool {
        let now = std::time::Instant::now();
        if now.duration_since(self.last_outside) >= std::time::Duration::from_millis(1) {
            self.last_outside = now;
            true
        } else {
            false
        }
    }

    /// Collects what the watch saw: closes files whose descriptors are all gone, and turns
    /// bytes written from outside the simulation into eventfd increments.
    pub(crate) fn reap(&mut self) {
        let files = &self.files;
        let found = self
            .watch
            .reap(|id| files.get(&id).and_then(|f| f.backing.as_ref()).map(AsRawFd::as_raw_fd));
        for r in found {
            if !r.written.is_empty() {
                self.outside_write(r.id, &r.written);
            }
            if r.closed {
                self.close_file(r.id, 1);
            }
        }
    }

    fn outside_write(&mut self, id: FileId, bytes: &[u8]) {
        self.rec(Op::Outside, id, bytes.len() as u64, 0, 0);
        let mut woke = false;
        if let Some(File {
            kind: Kind::Eventfd { count },
            ..
        }) = self.files.get_mut(&id)
        {
            for chunk in bytes.chunks_exact(8) {
                let mut v = [0u8; 8];
                v.copy_from_slice(chunk);
                *count = count.saturating_add(u64::from_ne_bytes(v)).min(u64::MAX - 1);
                woke = true;
            }
        }
        if woke {
            self.wake(id, EPOLLIN);
        }
    }

    /// The last descriptor of `id` is gone (`how`: see [`Op::Closed`]).
    pub(crate) fn close_file(&mut self, id: FileId, how: u64) {
        let Some(f) = self.files.get_mut(&id) else {
            return;
        };
        if f.life == Life::Closed {
            return;
        }
        f.life = Life::Closed;
        f.backing = None;
        let numbers = std::mem::take(&mut f.numbers);
        let watchers = std::mem::take(&mut f.watchers);
        for n in numbers {
            if self.fds.get(&n) == Some(&id) {
                self.fds.remove(&n);
            }
        }
        for w in watchers {
            crate::sim::epoll::drop_registration(self, w.epoll, w.fd, id);
        }
        self.rec(Op::Closed, id, how, 0, 0);
        let what = match self.files.get(&id).map(|f| &f.kind) {
            Some(Kind::Epoll(_)) => Gone::Epoll,
            Some(Kind::Eventfd { .. }) => Gone::Plain,
            Some(Kind::PipeRead(p)) => Gone::PipeReader(p.writer),
            Some(Kind::PipeWrite { reader }) => Gone::PipeWriter(*reader),
            Some(Kind::Socket(_)) => Gone::Socket,
            None => return,
        };
        match what {
            Gone::Epoll => {
                if let Some(File {
                    kind: Kind::Epoll(ep), ..
                }) = self.files.remove(&id)
                {
                    for (fd, target) in ep.targets() {
                        if let Some(t) = self.files.get_mut(&target) {
                            t.watchers.retain(|w| *w != Watcher { epoll: id, fd });
                        }
                    }
                }
            }
            Gone::Plain => {
                self.files.remove(&id);
            }
            Gone::PipeReader(writer) => {
                // The writer's writes fail with EPIPE from now on.
                self.files.remove(&id);
                self.wake(writer, EPOLLOUT | EPOLLERR);
            }
            Gone::PipeWriter(reader) => {
                self.files.remove(&id);
                if let Some(File {
                    kind: Kind::PipeRead(p),
                    ..
                }) = self.files.get_mut(&reader)
                {
                    p.writer_open = false;
                    self.wake(reader, EPOLLIN | EPOLLHUP);
                }
            }
            Gone::Socket => net::close_socket(self, id),
        }
    }

    /// A state change of `id` that epoll cares about: `key` is the readiness that may have
    /// appeared (`0`: anything).
    pub(crate) fn wake(&mut self, id: FileId, key: u32) {
        let n = match self.files.get(&id) {
            Some(f) => f.watchers.len(),
            None => return,
        };
        for i in 0..n {
            let Some(w) = self.files.get(&id).and_then(|f| f.watchers.get(i)).copied() else {
                break;
            };
            crate::sim::epoll::queue(self, w.epoll, w.fd, id, key);
        }
    }

    /// The readiness of `id` right now, as `poll` would report it (`EPOLL*` bits).
    pub(crate) fn poll(&self, id: FileId) -> u32 {
        let Some(f) = self.files.get(&id) else {
            return 0;
        };
        match &f.kind {
            Kind::Epoll(ep) => {
                if ep.has_ready() {
                    EPOLLIN
                } else {
                    0
                }
            }
            Kind::Eventfd { count } => {
                let mut m = 0;
                if *count > 0 {
                    m |= EPOLLIN;
                }
                if *count < u64::MAX - 1 {
                    m |= EPOLLOUT;
                }
                m
            }
            Kind::PipeRead(p) => {
                let mut m = 0;
                if !p.data.is_empty() {
                    m |= EPOLLIN;
                }
                if !p.writer_open {
                    m |= EPOLLHUP;
                }
                m
            }
            Kind::PipeWrite { reader } => match self.files.get(reader) {
                Some(File {
                    kind: Kind::PipeRead(p),
                    life: Life::Open,
                    ..
                }) => {
                    if PIPE_CAPACITY - p.data.len() >= PIPE_BUF {
                        EPOLLOUT
                    } else {
                        0
                    }
                }
                _ => EPOLLOUT | EPOLLERR,
            },
            Kind::Socket(s) => net::poll(self, s),
        }
    }

    /// Fires every timeline event that is due now.
    #[inline]
    pub(crate) fn settle(&mut self) {
        while let Some(ev) = self.time.pop_due() {
            self.stats.events += 1;
            net::fire(self, ev);
        }
    }

    /// Moves the clock to `to` (never backwards) and fires what is due.
    pub(crate) fn advance(&mut self, to: u64) {
        if to > self.time.now {
            self.time.now = to;
            self.idle_polls = 0;
            self.busy_polls = 0;
            self.stats.time_jumps += 1;
            self.rec(Op::Time, 0, to, 0, 0);
        }
        self.settle();
    }
}

pub(crate) const EPOLLIN: u32 = libc::EPOLLIN as u32;
pub(crate) const EPOLLOUT: u32 = libc::EPOLLOUT as u32;
pub(crate) const EPOLLERR: u32 = libc::EPOLLERR as u32;
pub(crate) const EPOLLHUP: u32 = libc::EPOLLHUP as u32;
pub(crate) const EPOLLRDHUP: u32 = libc::EPOLLRDHUP as u32;
pub(crate) const EPOLLET: u32 = libc::EPOLLET as u32;
pub(crate) const EPOLLONESHOT: u32 = libc::EPOLLONESHOT as u32;
pub(crate) const EPOLLEXCLUSIVE: u32 = libc::EPOLLEXCLUSIVE as u32;
