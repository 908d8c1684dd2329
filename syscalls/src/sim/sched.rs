//! Simulated threads and the baton: one simulated thread runs at a time, and the seed says
//! which.
//!
//! Every thread that entered a kernel is a *simulated thread*. Exactly one of them holds the
//! baton (runs); the others wait on the kernel's condition variable. A thread gives the baton
//! up only inside a simulated call that may block (a poll, [`sleep`](crate::sim::sleep), a
//! [`JoinHandle::join`](crate::sim::JoinHandle::join)) or when it leaves the kernel, never in
//! the middle of its own code, so it never holds one of its own locks while another simulated
//! thread runs (the loop's remote queue is written under a `Mutex`: a switch there could
//! deadlock). Each poll is also a *yield point*: the seed may let another runnable thread run
//! first, which is how a cross-thread wake-up lands between two iterations of a busy loop.
//!
//! When no simulated thread can run, the clock jumps to the earliest event or timeout (see
//! `clock`), and the threads that event wakes become runnable. When nothing at all is
//! scheduled, only the outside world can help (a thread that did not enter the kernel writing
//! an eventfd, a signal): the kernel waits on its watch for real, and after
//! [`Config::stall_timeout`](crate::sim::Config::stall_timeout) of real time it declares the
//! simulation stalled and fails every blocked poll, so a deadlocked test fails instead of
//! hanging.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::sim::backing::Watch;
use crate::sim::choice::ChoiceKind;
use crate::sim::epoll::Epoll;
use crate::sim::state::{FileId, Kind, State};
use crate::sim::trace::Op;

/// What a simulated thread is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Run {
    /// Holds the baton.
    Running,
    /// Waits for the baton.
    Runnable,
    /// Blocked in a poll (or a sleep) until woken or until `deadline`.
    Blocked { deadline: Option<u64> },
    /// Waits for another simulated thread to finish.
    Joining(usize),
    /// Left the kernel.
    Done,
}

pub(crate) struct SimThread {
    pub(crate) run: Run,
}

/// The simulated threads and who holds the baton.
#[derive(Default)]
pub(crate) struct Sched {
    pub(crate) threads: Vec<SimThread>,
    pub(crate) current: Option<usize>,
    /// Simulated threads that had not finished when the first one left the kernel.
    pub(crate) left_behind: usize,
}

impl Sched {
    /// Adds a thread; it runs at once if nobody holds the baton, else it waits its turn.
    pub(crate) fn register(&mut self) -> usize {
        let t = self.threads.len();
        let run = if self.current.is_none() {
            self.current = Some(t);
            Run::Running
        } else {
            Run::Runnable
        };
        self.threads.push(SimThread { run });
        t
    }

    /// A blocked thread's poll has something to report: it may run again.
    pub(crate) fn wake(&mut self, t: usize) {
        if let Some(th) = self.threads.get_mut(t) {
            if matches!(th.run, Run::Blocked { .. }) {
                th.run = Run::Runnable;
            }
        }
    }

    fn runnable(&self) -> impl Iterator<Item = usize> + '_ {
        self.threads
            .iter()
            .enumerate()
            .filter(|(_, t)| t.run == Run::Runnable)
            .map(|(i, _)| i)
    }

    fn next_deadline(&self) -> Option<u64> {
        self.threads
            .iter()
            .filter_map(|t| match t.run {
                Run::Blocked { deadline } => deadline,
                _ => None,
            })
            .min()
    }

    fn waiting(&self) -> bool {
        self.threads
            .iter()
            .any(|t| matches!(t.run, Run::Blocked { .. } | Run::Joining(_)))
    }

    fn wake_due(&mut self, now: u64) {
        for t in &mut self.threads {
            if let Run::Blocked { deadline: Some(d) } = t.run {
                if d <= now {
                    t.run = Run::Runnable;
                }
            }
        }
    }
}

/// The kernel's lock and the condition variable the baton passes through.
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) cv: Condvar,
    pub(crate) seed: u64,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Waits until thread `me` holds the baton.
pub(crate) fn wait_turn<'a>(sh: &'a Shared, mut st: MutexGuard<'a, State>, me: usize) -> MutexGuard<'a, State> {
    while st.sched.current != Some(me) {
        st = sh.cv.wait(st).unwrap_or_else(PoisonError::into_inner);
    }
    st.thread = me as u32;
    st
}

/// Thread `me`, whose new state is already set, gives up the baton: picks who runs next,
/// moving the clock when nobody can run. With `may_stall`, waits for the outside world when
/// nothing is scheduled at all; without, leaves nobody running.
pub(crate) fn pass<'a>(
    sh: &'a Shared,
    mut st: MutexGuard<'a, State>,
    me: usize,
    may_stall: bool,
) -> MutexGuard<'a, State> {
    st.sched.current = None;
    loop {
        let runnable: Vec<usize> = st.sched.runnable().collect();
        if !runnable.is_empty() {
            let pick = runnable[st.choice.below(ChoiceKind::Thread, runnable.len() as u64) as usize];
            st.sched.current = Some(pick);
            st.sched.threads[pick].run = Run::Running;
            if pick != me {
                st.stats.switches += 1;
                st.rec(Op::Switch, 0, pick as u64, 0, 0);
                sh.cv.notify_all();
            }
            return st;
        }
        // Every simulated thread learnt of its own closes at its last call; only threads
        // outside the simulation can have done something since. Look (a real system call) at
        // most once per millisecond of real time: what they do lands at a moment real timing
        // decides in any case.
        if st.outside_due() {
            st.reap();
            if st.sched.runnable().next().is_some() {
                continue;
            }
        }
        if let Some(at) = next_time(&st) {
            st.advance(at);
            let now = st.now();
            st.sched.wake_due(now);
            continue;
        }
        if !may_stall || !st.sched.waiting() {
            return st;
        }
        st = stall(sh, st);
        if st.sched.current.is_some() {
            return st;
        }
    }
}

/// The earliest moment something can happen: the next timeline event or poll timeout.
pub(crate) fn next_time(st: &State) -> Option<u64> {
    match (st.time.next(), st.sched.next_deadline()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Makes the threads whose timeout has passed runnable.
pub(crate) fn wake_due(st: &mut State, now: u64) {
    st.sched.wake_due(now);
}

/// Every simulated thread is blocked and nothing is scheduled: wait for the outside world,
/// and declare the simulation stalled after the configured real time.
fn stall<'a>(sh: &'a Shared, mut st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
    let started = Instant::now();
    let limit = st.cfg.stall_timeout;
    let raw = st.watch.raw();
    while !st.stalled {
        drop(st);
        Watch::wait_outside(raw, 10);
        st = sh.lock();
        if st.sched.current.is_some() {
            return st;
        }
        st.reap();
        if st.sched.runnable().next().is_some() || st.time.next().is_some() {
            return st;
        }
        if limit.is_some_and(|l| started.elapsed() >= l) {
            st.stalled = true;
        }
    }
    for t in &mut st.sched.threads {
        if matches!(t.run, Run::Blocked { .. }) {
            t.run = Run::Runnable;
        }
    }
    st
}

fn epoll_mut(st: &mut State, ep: FileId) -> Option<&mut Epoll> {
    match st.file_mut(ep).map(|f| &mut f.kind) {
        Some(Kind::Epoll(e)) => Some(e),
        _ => None,
    }
}

/// Blocks thread `me` in a poll of `ep` (or a sleep, without one) until woken or `deadline`.
pub(crate) fn block<'a>(
    sh: &'a Shared,
    mut st: MutexGuard<'a, State>,
    me: usize,
    ep: Option<FileId>,
    deadline: Option<u64>,
) -> MutexGuard<'a, State> {
    st.sched.threads[me].run = Run::Blocked { deadline };
    if let Some(e) = ep.and_then(|ep| epoll_mut(&mut st, ep)) {
        e.waiter = Some(me);
    }
    st = pass(sh, st, me, true);
    st = wait_turn(sh, st, me);
    if let Some(e) = ep.and_then(|ep| epoll_mut(&mut st, ep)) {
        e.waiter = None;
    }
    st
}

/// A yield point: if another thread can run, the seed may let it go first.
pub(crate) fn maybe_yield<'a>(sh: &'a Shared, mut st: MutexGuard<'a, State>, me: usize) -> MutexGuard<'a, State> {
    if !st.sched.runnable().any(|t| t != me) {
        return st;
    }
    let rate = st.cfg.yield_rate;
    if !st.choice.chance(ChoiceKind::Yield, rate) {
        return st;
    }
    st.sched.threads[me].run = Run::Runnable;
    st = pass(sh, st, me, false);
    wait_turn(sh, st, me)
}

/// Thread `me` leaves the kernel.
pub(crate) fn exit<'a>(sh: &'a Shared, mut st: MutexGuard<'a, State>, me: usize) -> MutexGuard<'a, State> {
    st.sched.threads[me].run = Run::Done;
    if me == 0 {
        st.sched.left_behind = st.sched.threads.iter().filter(|t| t.run != Run::Done).count();
    }
    for t in &mut st.sched.threads {
        if t.run == Run::Joining(me) {
            t.run = Run::Runnable;
        }
    }
    if st.sched.current == Some(me) {
        st = pass(sh, st, me, false);
    }
    st
}

/// Thread `me` waits for thread `target` to leave the kernel.
pub(crate) fn join<'a>(
    sh: &'a Shared,
    mut st: MutexGuard<'a, State>,
    me: usize,
    target: usize,
) -> MutexGuard<'a, State> {
    while st.sched.threads.get(target).is_some_and(|t| t.run != Run::Done) {
        st.sched.threads[me].run = Run::Joining(target);
        st = pass(sh, st, me, true);
        st = wait_turn(sh, st, me);
        if st.stalled {
            break;
        }
    }
    st
}
