//! Simulated time: the clock and the timeline of future network events.
//!
//! The clock is a count of nanoseconds since the simulated machine booted. It never moves
//! while a simulated thread runs: a program's work takes no simulated time. It moves only when
//! every simulated thread is blocked (in a poll, a `sleep`, a `join`), and then it jumps
//! straight to the earliest thing that can happen: the next event on the timeline (a segment
//! arriving, a SYN, a retransmission) or the next poll timeout. That is how an hour of timers
//! runs in milliseconds. Events are ordered by (time, sequence number): two events at the same
//! nanosecond happen in the order they were scheduled, so the timeline itself adds no
//! nondeterminism.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::net::SocketAddr;

use crate::sim::state::FileId;

/// Something the simulated network will do at a given time.
pub(crate) enum Ev {
    /// Stream bytes (and possibly the FIN after them) reach `to`, sent by `from`.
    Segment {
        from: FileId,
        to: FileId,
        data: Vec<u8>,
        fin: bool,
    },
    /// A RST reaches `to`; a connect still in progress fails with `ECONNREFUSED`.
    Rst { to: FileId },
    /// `from`'s connection attempt reaches the address it connects to (`tries` SYNs so far).
    Syn { from: FileId, to: SocketAddr, tries: u32 },
    /// The listener's answer reaches `to`: its connection to `child` is established.
    SynAck {
        to: FileId,
        child: FileId,
        listener: FileId,
    },
    /// The client's final ACK reaches the listener: `child` joins its accept queue.
    Ack { child: FileId, listener: FileId },
    /// `to`'s connection attempt fails with `errno` (unreachable, timed out, refused).
    ConnectFail { to: FileId, errno: i32 },
    /// The receiver of `from`'s stream read data: its window opened, blocked bytes move.
    Window { from: FileId },
    /// `sock`'s send buffer, full since a short write, has room again.
    Space { sock: FileId },
    /// A datagram reaches whatever is bound to `to`, sent by `from` (`from_addr`).
    Dgram {
        from: FileId,
        from_addr: SocketAddr,
        to: SocketAddr,
        data: Vec<u8>,
    },
    /// An ICMP "port unreachable" reaches the connected datagram socket `to`.
    Unreachable { to: FileId },
}

struct Entry {
    at: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest entry first.
    fn cmp(&self, other: &Entry) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// The clock and the events scheduled on it.
pub(crate) struct Timeline {
    /// Nanoseconds since the simulated boot.
    pub(crate) now: u64,
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl Timeline {
    pub(crate) fn new(start: u64) -> Timeline {
        Timeline {
            now: start,
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Schedules `ev` at `at` (the past means "as soon as possible": now).
    pub(crate) fn at(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry {
            at: at.max(self.now),
            seq: self.seq,
            ev,
        });
    }

    /// Time of the earliest scheduled event.
    pub(crate) fn next(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.at)
    }

    /// Takes the earliest event if it is due now.
    #[inline]
    pub(crate) fn pop_due(&mut self) -> Option<Ev> {
        if self.heap.peek()?.at <= self.now {
            self.heap.pop().map(|e| e.ev)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_by_time_then_by_scheduling_order() {
        let mut t = Timeline::new(100);
        t.at(300, Ev::Rst { to: 1 });
        t.at(200, Ev::Rst { to: 2 });
        t.at(200, Ev::Rst { to: 3 });
        t.at(50, Ev::Rst { to: 4 }); // in the past: now
        let mut order = Vec::new();
        while let Some(at) = t.next() {
            t.now = at;
            while let Some(Ev::Rst { to }) = t.pop_due() {
                order.push((t.now, to));
            }
        }
        assert_eq!(order, vec![(100, 4), (200, 2), (200, 3), (300, 1)]);
    }
}
