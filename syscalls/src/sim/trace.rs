//! The trace: every simulated call with its result, and every event of the simulated network,
//! as compact records.
//!
//! A record is a few integers (time, thread, what, file, two arguments, result), pushed as the
//! call returns or the event happens and formatted only when someone reads the trace. Each
//! record also feeds a running 64-bit digest (FNV-1a over whole words), so two runs of a seed are compared by
//! their digests even when the records themselves are not kept ([`TraceMode::Digest`]), and
//! byte for byte by their text when they are. Records name files by their simulated ids
//! (`#7`), never by descriptor numbers: the numbers are real ones and differ between runs.

use std::collections::VecDeque;
use std::fmt::Write as _;

use crate::Syscall;

/// How much of the trace a kernel keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceMode {
    /// Keep the last `limit` records (older ones are dropped; the digest covers all of them).
    Full {
        /// How many records to keep.
        limit: usize,
    },
    /// Keep only the digest (the fastest mode that can still compare two runs).
    Digest,
    /// Neither records nor digest.
    Off,
}

impl Default for TraceMode {
    fn default() -> TraceMode {
        TraceMode::Full { limit: 200_000 }
    }
}

/// What a record is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// A simulated call (`a`, `b`: its main arguments).
    Call(Syscall),
    /// One event of a poll's result: `file` with flags `a`.
    Ready,
    /// `a` bytes reached `file`'s receive queue (from `b`).
    Deliver,
    /// A FIN reached `file`.
    Fin,
    /// A RST reached `file` (it now reports errno `a`).
    Rst,
    /// A connection attempt from `b` reached the listener `file`.
    Syn,
    /// A connection from `b` joined the listener `file`'s accept queue.
    Queued,
    /// `file`'s connect completed.
    Established,
    /// A datagram of `a` bytes was queued at `file`.
    Dgram,
    /// A datagram of `a` bytes for `file` (0: nobody) was dropped.
    Dropped,
    /// `file` was closed (`a`: 0 by `close`, 1 seen through its backing pipe, 2 its number was
    /// reused).
    Closed,
    /// `a` bytes were written to `file` by a thread outside the simulation.
    Outside,
    /// A seeded fault fired on `file`: class `a`, errno `b`.
    Fault,
    /// The baton passed to thread `a`.
    Switch,
    /// The clock jumped to `a` (every thread was blocked).
    Time,
    /// `a` polls in a row returned nothing without the clock moving; the kernel moved it.
    Spin,
}

/// One trace record.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rec {
    pub(crate) t: u64,
    pub(crate) thread: u32,
    pub(crate) op: Op,
    pub(crate) file: u64,
    pub(crate) a: u64,
    pub(crate) b: u64,
    /// The result: a value, or `-errno`.
    pub(crate) ret: i64,
}

/// The records and the digest of one run.
pub(crate) struct Trace {
    mode: TraceMode,
    recs: VecDeque<Rec>,
    digest: u64,
    count: u64,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl Trace {
    pub(crate) fn new(mode: TraceMode) -> Trace {
        Trace {
            mode,
            recs: VecDeque::new(),
            digest: FNV_OFFSET,
            count: 0,
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, rec: Rec) {
        if self.mode == TraceMode::Off {
            return;
        }
        self.count += 1;
        let code = op_code(rec.op);
        // FNV-1a over whole words: one multiply per field instead of eight.
        for word in [
            rec.t,
            u64::from(rec.thread),
            code,
            rec.file,
            rec.a,
            rec.b,
            rec.ret as u64,
        ] {
            self.digest = (self.digest ^ word).wrapping_mul(FNV_PRIME).rotate_left(29);
        }
        if let TraceMode::Full { limit } = self.mode {
            if self.recs.len() >= limit {
                self.recs.pop_front();
            }
            if limit > 0 {
                self.recs.push_back(rec);
            }
        }
    }

    pub(crate) fn digest(&self) -> u64 {
        self.digest
    }

    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The kept records as text, one line each, oldest first (the last `tail` of them when
    /// given).
    pub(crate) fn text(&self, tail: Option<usize>) -> String {
        let skip = tail.map_or(0, |n| self.recs.len().saturating_sub(n));
        let mut out = String::new();
        if self.count > self.recs.len() as u64 || skip > 0 {
            let _ = writeln!(
                out,
                "... {} earlier records not shown",
                self.count - self.recs.len() as u64 + skip as u64
            );
        }
        for r in self.recs.iter().skip(skip) {
            format_rec(&mut out, r);
            out.push('\n');
        }
        out
    }
}

fn op_code(op: Op) -> u64 {
    match op {
        Op::Call(s) => 100 + s.index() as u64,
        Op::Ready => 1,
        Op::Deliver => 2,
        Op::Fin => 3,
        Op::Rst => 4,
        Op::Syn => 5,
        Op::Established => 6,
        Op::Dgram => 7,
        Op::Dropped => 8,
        Op::Closed => 9,
        Op::Outside => 10,
        Op::Fault => 11,
        Op::Switch => 12,
        Op::Time => 13,
        Op::Spin => 14,
        Op::Queued => 15,
    }
}

fn format_rec(out: &mut String, r: &Rec) {
    let _ = write!(
        out,
        "{:>6}.{:06} T{} ",
        r.t / 1_000_000_000,
        (r.t / 1000) % 1_000_000,
        r.thread
    );
    let file = |out: &mut String| {
        if r.file != 0 {
            let _ = write!(out, "#{}", r.file);
        }
    };
    match r.op {
        Op::Call(Syscall::EpollCtl) => {
            let op = match r.b >> 32 {
                1 => "ADD",
                2 => "DEL",
                3 => "MOD",
                _ => "?",
            };
            let _ = write!(out, "epoll_ctl(#{}, {op}, ", r.file);
            if r.a != 0 {
                let _ = write!(out, "#{}", r.a);
            } else {
                out.push_str("(real)");
            }
            if r.b >> 32 != 2 {
                let _ = write!(out, ", {:?}", crate::EpollFlags::from_bits_retain(r.b as u32));
            }
            out.push_str(") = ");
            push_ret(out, r.ret);
        }
        Op::Call(s @ (Syscall::EpollPwait2 | Syscall::EpollWait)) => {
            let _ = write!(out, "{}(#{}, {}, ", s.name(), r.file, r.a);
            if r.b == u64::MAX {
                out.push_str("-1");
            } else {
                let _ = write!(out, "{}.{:03}ms", r.b / 1000, r.b % 1000);
            }
            out.push_str(") = ");
            push_ret(out, r.ret);
        }
        Op::Call(s) => {
            out.push_str(s.name());
            out.push('(');
            file(out);
            for v in [r.a, r.b] {
                if v != 0 {
                    let _ = write!(out, "{}{v}", if out.ends_with('(') { "" } else { ", " });
                }
            }
            out.push_str(") = ");
            push_ret(out, r.ret);
        }
        Op::Ready => {
            out.push_str("  ready ");
            file(out);
            let _ = write!(out, " {:?}", crate::EpollFlags::from_bits_retain(r.a as u32));
        }
        Op::Fault => {
            out.push_str("fault ");
            file(out);
            let _ = write!(
                out,
                " {} {}",
                super::faults::FaultClass::name_of(r.a),
                if r.b == 0 { "" } else { errno_name(r.b as i32) }
            );
        }
        Op::Switch => {
            let _ = write!(out, "switch -> T{}", r.a);
        }
        Op::Time => {
            let _ = write!(out, "time -> {}.{:06}", r.a / 1_000_000_000, (r.a / 1000) % 1_000_000);
        }
        Op::Spin => {
            let what = if r.b == 1 { "polls with events" } else { "empty polls" };
            let _ = write!(out, "spin: {} {what} at one instant", r.a);
        }
        other => {
            let name = match other {
                Op::Deliver => "deliver",
                Op::Fin => "fin",
                Op::Rst => "rst",
                Op::Syn => "syn",
                Op::Queued => "queued",
                Op::Established => "established",
                Op::Dgram => "dgram",
                Op::Dropped => "dropped",
                Op::Closed => "closed",
                _ => "outside-write",
            };
            out.push_str(name);
            out.push(' ');
            file(out);
            if r.a != 0 || r.b != 0 {
                let _ = write!(out, " {}", r.a);
            }
            if r.b != 0 {
                let _ = write!(out, " from #{}", r.b);
            }
        }
    }
}

fn push_ret(out: &mut String, ret: i64) {
    if ret < 0 {
        out.push_str(errno_name(-ret as i32));
    } else {
        let _ = write!(out, "{ret}");
    }
}

/// The symbolic name of an errno the simulated kernel returns (others as `E<n>`).
pub(crate) fn errno_name(e: i32) -> &'static str {
    match e {
        libc::EAGAIN => "EAGAIN",
        libc::EINTR => "EINTR",
        libc::EBADF => "EBADF",
        libc::EINVAL => "EINVAL",
        libc::EPIPE => "EPIPE",
        libc::ECONNRESET => "ECONNRESET",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ECONNABORTED => "ECONNABORTED",
        libc::EINPROGRESS => "EINPROGRESS",
        libc::EALREADY => "EALREADY",
        libc::EISCONN => "EISCONN",
        libc::ENOTCONN => "ENOTCONN",
        libc::EADDRINUSE => "EADDRINUSE",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::EMFILE => "EMFILE",
        libc::ENFILE => "ENFILE",
        libc::ENOBUFS => "ENOBUFS",
        libc::ENOMEM => "ENOMEM",
        libc::ENOENT => "ENOENT",
        libc::EEXIST => "EEXIST",
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::EPROTO => "EPROTO",
        libc::ENOTSOCK => "ENOTSOCK",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOPROTOOPT => "ENOPROTOOPT",
        libc::EMSGSIZE => "EMSGSIZE",
        libc::EDESTADDRREQ => "EDESTADDRREQ",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        libc::ENOSPC => "ENOSPC",
        libc::ENOSYS => "ENOSYS",
        libc::ESPIPE => "ESPIPE",
        libc::EDEADLK => "EDEADLK",
        _ => "E?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(op: Op, ret: i64) -> Rec {
        Rec {
            t: 1_500_000_000,
            thread: 0,
            op,
            file: 3,
            a: 64,
            b: 0,
            ret,
        }
    }

    #[test]
    fn digest_depends_on_every_field_and_text_names_files() {
        let mut a = Trace::new(TraceMode::Full { limit: 10 });
        let mut b = Trace::new(TraceMode::Digest);
        a.push(rec(Op::Call(Syscall::Recv), -i64::from(libc::EAGAIN)));
        b.push(rec(Op::Call(Syscall::Recv), -i64::from(libc::EAGAIN)));
        assert_eq!(a.digest(), b.digest());
        b.push(rec(Op::Call(Syscall::Recv), 5));
        assert_ne!(a.digest(), b.digest());
        assert_eq!(a.text(None), "     1.500000 T0 recv(#3, 64) = EAGAIN\n");
    }

    #[test]
    fn full_mode_keeps_the_tail() {
        let mut t = Trace::new(TraceMode::Full { limit: 2 });
        for i in 0..5 {
            t.push(rec(Op::Call(Syscall::Send), i));
        }
        assert_eq!(t.count(), 5);
        let text = t.text(None);
        assert!(text.starts_with("... 3 earlier records not shown\n"), "{text}");
        assert!(text.ends_with("send(#3, 64) = 4\n"), "{text}");
    }
}
