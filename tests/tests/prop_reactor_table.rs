// Standalone binary: it relies on the kernel giving a closed fd number to its next file (the lowest free).
//! A property test of the reactor's registration table (`add_reader` / `add_writer` /
//! `remove_reader` / `remove_writer`): random sequences of registrations, replacements,
//! removals, files made readable and drained, files closed *without* removing their callbacks
//! (a caller's mistake the loop must survive), new files that reuse a closed file's fd number,
//! and loop iterations. A model tracks which callback is registered on which open file; after
//! every iteration the callbacks that ran are checked against it:
//!
//! - a callback runs only while it is registered on the file it was registered for: never after
//!   it was replaced or removed, and never for another file that got its fd number after its
//!   own file was closed (the registration of a closed file must not leak onto a new one);
//! - level-triggered: a registered reader runs exactly once per iteration while its file is
//!   readable, and not at all while it is not; a registered writer (an eventfd is always
//!   writable) runs exactly once per iteration;
//! - `remove_*` says whether a callback was registered (and may say so for the closed file's
//!   callback still filed under a reused number, as asyncio's selector would);
//! - a replaced or removed callback's closure is dropped at once, and once the loop is closed
//!   every closure is gone.
//!
//! The files are eventfds (readable while their counter is non-zero, always writable). The
//! test owns the only file descriptors it passes to the loop: a closed file's number is touched
//! again only once one of the test's own new files has it. So the tests of this file run one at
//! a time (`serial()`): another test opening files in parallel would take the closed number.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;

use evloop::event_loop::{EventLoop, LoopHandle};
use evloop_syscalls as sys;
use evloop_tests::{serial, spin_once};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const SLOTS: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Side {
    Read,
    Write,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    /// Opens a new eventfd in the slot (closing, without any removal, the file already there).
    Open(usize),
    /// Closes the slot's file without removing its callbacks.
    Close(usize),
    Add(usize, Side),
    Remove(usize, Side),
    /// Makes the slot's file readable.
    Signal(usize),
    /// Drains the slot's file (no longer readable).
    Drain(usize),
    /// One loop iteration.
    Iterate,
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    let side = prop_oneof![Just(Side::Read), Just(Side::Write)];
    prop_oneof![
        3 => slot.clone().prop_map(Op::Open),
        2 => slot.clone().prop_map(Op::Close),
        6 => (slot.clone(), side.clone()).prop_map(|(s, d)| Op::Add(s, d)),
        3 => (slot.clone(), side).prop_map(|(s, d)| Op::Remove(s, d)),
        3 => slot.clone().prop_map(Op::Signal),
        2 => slot.prop_map(Op::Drain),
        5 => Just(Op::Iterate),
    ]
}

/// An open file of the test.
struct File {
    fd: OwnedFd,
    readable: bool,
    reader: Option<u64>,
    writer: Option<u64>,
}

/// Counts a closure's runs and whether it still exists.
struct Probe {
    runs: Rc<RefCell<Vec<u64>>>,
    alive: Rc<RefCell<HashSet<u64>>>,
    id: u64,
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.alive.borrow_mut().remove(&self.id);
    }
}

struct Harness {
    lp: LoopHandle,
    slots: Vec<Option<File>>,
    /// Callback id -> (fd number, side) for every callback currently registered on an open file.
    live: HashMap<u64, (RawFd, Side)>,
    /// fd numbers under which a closed file's callbacks may still be filed.
    stale_numbers: HashSet<RawFd>,
    next_id: u64,
    runs: Rc<RefCell<Vec<u64>>>,
    alive: Rc<RefCell<HashSet<u64>>>,
}

impl Harness {
    fn new(lp: LoopHandle) -> Harness {
        Harness {
            lp,
            slots: (0..SLOTS).map(|_| None).collect(),
            live: HashMap::new(),
            stale_numbers: HashSet::new(),
            next_id: 0,
            runs: Rc::default(),
            alive: Rc::default(),
        }
    }

    fn close_slot(&mut self, slot: usize) {
        if let Some(file) = self.slots[slot].take() {
            let fd = file.fd.as_raw_fd();
            for id in [file.reader, file.writer].into_iter().flatten() {
                self.live.remove(&id);
                self.stale_numbers.insert(fd);
            }
            drop(file.fd);
        }
    }

    fn apply(&mut self, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::Open(slot) => {
                self.close_slot(slot);
                let fd = sys::eventfd(0).map_err(|e| TestCaseError::fail(format!("eventfd: {e}")))?;
                self.slots[slot] = Some(File {
                    fd,
                    readable: false,
                    reader: None,
                    writer: None,
                });
            }
            Op::Close(slot) => self.close_slot(slot),
            Op::Add(slot, side) => {
                let id = self.next_id;
                self.next_id += 1;
                let Some(file) = self.slots[slot].as_mut() else {
                    return Ok(());
                };
                let fd = file.fd.as_raw_fd();
                let probe = Probe {
                    runs: self.runs.clone(),
                    alive: self.alive.clone(),
                    id,
                };
                self.alive.borrow_mut().insert(id);
                let f = move || probe.runs.borrow_mut().push(probe.id);
                let r = match side {
                    Side::Read => self.lp.add_reader(fd, f),
                    Side::Write => self.lp.add_writer(fd, f),
                };
                prop_assert!(r.is_ok(), "{side:?} on an open eventfd (fd {fd}): {r:?}");
                let old = match side {
                    Side::Read => file.reader.replace(id),
                    Side::Write => file.writer.replace(id),
                };
                if let Some(old) = old {
                    self.live.remove(&old);
                    prop_assert!(
                        !self.alive.borrow().contains(&old),
                        "a replaced callback's closure is dropped at once"
                    );
                }
                self.live.insert(id, (fd, side));
            }
            Op::Remove(slot, side) => {
                let Some(file) = self.slots[slot].as_mut() else {
                    return Ok(());
                };
                let fd = file.fd.as_raw_fd();
                let removed = match side {
                    Side::Read => self.lp.remove_reader(fd),
                    Side::Write => self.lp.remove_writer(fd),
                };
                let had = match side {
                    Side::Read => file.reader.take(),
                    Side::Write => file.writer.take(),
                };
                match had {
                    Some(old) => {
                        prop_assert!(removed, "remove_{side:?}(fd {fd}) found the callback registered on it");
                        self.live.remove(&old);
                        prop_assert!(
                            !self.alive.borrow().contains(&old),
                            "a removed callback's closure is dropped at once"
                        );
                    }
                    None => prop_assert!(
                        !removed || self.stale_numbers.contains(&fd),
                        "remove_{side:?}(fd {fd}) with nothing registered on that number said it removed something"
                    ),
                }
            }
            Op::Signal(slot) => {
                if let Some(file) = self.slots[slot].as_mut() {
                    sys::eventfd_write(file.fd.as_fd(), 1).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    file.readable = true;
                }
            }
            Op::Drain(slot) => {
                if let Some(file) = self.slots[slot].as_mut() {
                    if file.readable {
                        sys::eventfd_read(file.fd.as_fd()).map_err(|e| TestCaseError::fail(e.to_string()))?;
                        file.readable = false;
                    }
                }
            }
            Op::Iterate => {
                self.runs.borrow_mut().clear();
                spin_once(&self.lp);
                let runs = std::mem::take(&mut *self.runs.borrow_mut());
                let mut count: HashMap<u64, usize> = HashMap::new();
                for id in &runs {
                    prop_assert!(
                        self.live.contains_key(id),
                        "callback #{id} ran but is not registered on an open file (ran: {runs:?}, live: {:?})",
                        self.live
                    );
                    *count.entry(*id).or_default() += 1;
                }
                for file in self.slots.iter().flatten() {
                    if let Some(id) = file.reader {
                        let expected = usize::from(file.readable);
                        prop_assert_eq!(
                            count.get(&id).copied().unwrap_or(0),
                            expected,
                            "reader #{} on fd {} (readable: {})",
                            id,
                            file.fd.as_raw_fd(),
                            file.readable
                        );
                    }
                    if let Some(id) = file.writer {
                        prop_assert_eq!(
                            count.get(&id).copied().unwrap_or(0),
                            1,
                            "writer #{} on fd {}",
                            id,
                            file.fd.as_raw_fd()
                        );
                    }
                }
            }
        }
        Ok(())
    }
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let lp = EventLoop::new().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let alive = {
        let mut h = Harness::new(lp.handle());
        for &op in ops {
            h.apply(op)?;
        }
        h.apply(Op::Iterate)?;
        // Remove what is registered on open files, then close everything.
        for slot in 0..SLOTS {
            for side in [Side::Read, Side::Write] {
                h.apply(Op::Remove(slot, side))?;
            }
            h.close_slot(slot);
        }
        h.alive.clone()
    };
    lp.close().map_err(|e| TestCaseError::fail(e.to_string()))?;
    drop(lp);
    prop_assert!(
        alive.borrow().is_empty(),
        "closures still alive after the loop closed: {:?}",
        alive.borrow()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn registrations_follow_their_files_through_replacement_removal_close_and_fd_reuse(
        ops in prop::collection::vec(op(), 0..=80)
    ) {
        let _serial = serial();
        run(&ops)?;
    }
}

/// The shape the property test found: a file closed with a reader and a writer registered, its
/// number reused by a new file, and a reader added on the new file. The closed file's writer
/// must not come along (it ran on every iteration, on a file it was never registered for).
#[test]
fn a_callback_of_a_closed_file_never_runs_for_the_file_that_reuses_its_number() {
    let _serial = serial();
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let old_writer_runs = Rc::new(Cell::new(0));
    let new_reader_runs = Rc::new(Cell::new(0));

    let old = sys::eventfd(0).unwrap();
    let n = old.as_raw_fd();
    h.add_reader(n, || {}).unwrap();
    let w = old_writer_runs.clone();
    h.add_writer(n, move || w.set(w.get() + 1)).unwrap();
    spin_once(&h);
    assert_eq!(old_writer_runs.get(), 1);
    drop(old); // closed without remove_reader/remove_writer

    let new = sys::eventfd(1).unwrap();
    assert_eq!(new.as_raw_fd(), n, "the new file reuses the number");
    let r = new_reader_runs.clone();
    h.add_reader(n, move || r.set(r.get() + 1)).unwrap();
    spin_once(&h);
    spin_once(&h);
    assert_eq!(new_reader_runs.get(), 2, "the new file's reader runs");
    assert_eq!(old_writer_runs.get(), 1, "the closed file's writer never runs again");

    // Removing the new file's only callback leaves nothing registered on it.
    assert!(h.remove_reader(n));
    spin_once(&h);
    assert_eq!(old_writer_runs.get(), 1);
    assert!(!h.remove_writer(n), "nothing is left under the number");
    drop(new);
}

/// The other way round: a file closed with a reader registered does not keep its number from a
/// socket or `AsyncFd` that gets it next (registering it said "the fd has add_reader/add_writer
/// callbacks; remove them first", about callbacks of a file that no longer existed).
#[test]
fn a_closed_file_with_callbacks_does_not_block_the_next_file_with_its_number_from_registering() {
    let _serial = serial();
    let lp = EventLoop::new().unwrap();
    let h = lp.handle();
    let old = sys::eventfd(0).unwrap();
    let n = old.as_raw_fd();
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    h.add_reader(n, move || r.set(true)).unwrap();
    drop(old); // closed without remove_reader

    let new = sys::eventfd(1).unwrap();
    assert_eq!(new.as_raw_fd(), n, "the new file reuses the number");
    let afd = evloop::io::AsyncFd::with_loop(&h, new).expect("the new file registers");
    spin_once(&h);
    assert!(!ran.get(), "the closed file's reader never runs for the new file");
    drop(afd);
    assert!(!h.remove_reader(n), "the closed file's reader was forgotten");
}
