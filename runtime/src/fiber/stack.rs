//! Fiber stacks: mapped in chunks, guarded, labelled for overflow reports, recycled per thread.
//!
//! # Layout
//! A stack is a piece of a chunk: one `mmap` of up to [`MAX_STACKS_PER_CHUNK`] stacks (about
//! 16 MiB of address space), each laid out as a guard page followed by the usable stack, which
//! grows down towards the guard:
//!
//! ```text
//! chunk: | guard | stack 0 ........ | guard | stack 1 ........ | ... |
//!          ^ a fault here is "stack 0 has overflowed"
//! ```
//!
//! The chunk is split into pieces ([`Mapping::split_at`]), so each [`Stack`] owns its memory
//! exclusively by type: that is what lets the register switch (`switch.rs`) write frames into
//! it. Memory is reserved with `MAP_NORESERVE` and only the pages a fiber touches become
//! resident: a fresh fiber that suspends at once touches one or two 4 KiB pages of its stack.
//!
//! # Guard pages and `vm.max_map_count`
//! On Linux 6.13+ the guards are installed with `madvise(MADV_GUARD_INSTALL)`, which leaves
//! the chunk a single memory mapping (VMA). On older kernels that call fails with `EINVAL` (the
//! first chunk of the process probes it once) and each guard becomes an `mprotect(PROT_NONE)`
//! page, which splits the chunk: two VMAs per stack. The kernel allows `vm.max_map_count` VMAs
//! per process (65,530 by default), so the fallback would run out after about 32,000 stacks, and
//! the process with it (thread creation and `malloc` need VMAs too). The fallback therefore
//! keeps a budget: fiber stacks may use the limit minus an eighth of it (at least 1,024) kept
//! for the rest of the process; the chunk that would go past it is refused with an error that
//! says why and what to change, instead of an obscure `ENOMEM` somewhere else later.
//!
//! # Overflow
//! Every chunk is registered with `evloop_syscalls::register_stack_guards`, and each stack is
//! labelled with its fiber's name when the fiber starts: running off a stack hits its guard
//! page and the process aborts with `fiber 'Fiber-3' has overflowed its stack`, the way std
//! reports a thread stack overflow, rather than with a bare segmentation fault.
//!
//! # Recycling
//! A finished fiber's stack goes back to its thread's pool (stacks are per thread, like the
//! fibers on them) and is handed to the next fiber of the same size. The first
//! [`HOT_STACKS`] free stacks of a size keep their pages (they are reused warm, with no system
//! call); a stack freed beyond those gives its memory back with `madvise(MADV_DONTNEED)` and
//! keeps only its address range. Chunks are unmapped when the thread exits (adjacent free
//! pieces are joined first, so a chunk goes in one `munmap`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::rc::Rc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use evloop_syscalls as sys;
use sys::{Advice, Mapping, Prot};

use crate::io::error::with_context;

/// The default usable size of a fiber stack: 256 KiB (std threads get 2 MiB; a fiber that needs
/// more asks for it with `fiber::Builder::stack_size`).
pub(crate) const DEFAULT_STACK_SIZE: usize = 256 * 1024;
/// The smallest stack a fiber gets: 16 KiB (less would overflow in the first `println!`).
pub(crate) const MIN_STACK_SIZE: usize = 16 * 1024;
/// The largest stack a fiber can ask for: 1 GiB.
pub(crate) const MAX_STACK_SIZE: usize = 1 << 30;
/// At most this many stacks share a chunk.
pub(crate) const MAX_STACKS_PER_CHUNK: usize = 64;
/// The address space a chunk aims at; bigger stacks get fewer per chunk (at least one).
const CHUNK_BYTES: usize = 16 << 20;
/// Free stacks per size that keep their memory for warm reuse.
pub(crate) const HOT_STACKS: usize = 64;

/// How guard pages are installed in this process (probed by the first chunk).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GuardKind {
    /// No chunk has been mapped yet.
    NotProbed,
    /// `madvise(MADV_GUARD_INSTALL)` (Linux 6.13+): a chunk of stacks is one memory mapping.
    Madvise,
    /// `mprotect(PROT_NONE)`: every guard page costs two memory mappings of `vm.max_map_count`.
    Mprotect,
}

const MODE_UNKNOWN: u8 = 0;
const MODE_MADVISE: u8 = 1;
const MODE_MPROTECT: u8 = 2;
static MODE: AtomicU8 = AtomicU8::new(MODE_UNKNOWN);

/// VMAs used by the chunks of the `mprotect` fallback, process-wide.
static FALLBACK_VMAS: AtomicUsize = AtomicUsize::new(0);

/// How this process installs guard pages.
pub(crate) fn guard_kind() -> GuardKind {
    match MODE.load(Ordering::Relaxed) {
        MODE_MADVISE => GuardKind::Madvise,
        MODE_MPROTECT => GuardKind::Mprotect,
        _ => GuardKind::NotProbed,
    }
}

/// What a chunk's stacks share: the overflow registration, and the VMAs it accounts for.
struct Chunk {
    guards: sys::StackGuards,
    vmas: usize,
}

impl Drop for Chunk {
    fn drop(&mut self) {
        FALLBACK_VMAS.fetch_sub(self.vmas, Ordering::Relaxed);
    }
}

/// A stack that is not in use: its memory (guard included) and where it came from.
struct Slot {
    map: Mapping,
    chunk: Rc<Chunk>,
    index: usize,
}

/// An owned fiber stack: `guard` inaccessible bytes, then the usable stack. Dropping it gives
/// it back to the thread's pool.
pub(crate) struct Stack {
    slot: Option<Slot>,
    guard: usize,
}

impl Stack {
    /// The usable range `[low, high)`: the stack grows down from `high`. The memory is mapped
    /// readable and writable, and no other `Stack` or `Mapping` owns any of it.
    pub(crate) fn bounds(&self) -> (usize, usize) {
        match &self.slot {
            Some(s) => (s.map.addr() + self.guard, s.map.addr() + s.map.len()),
            None => (0, 0),
        }
    }

    /// Its usable size in bytes.
    #[cfg(test)]
    pub(crate) fn size(&self) -> usize {
        let (lo, hi) = self.bounds();
        hi - lo
    }

    /// Names the fiber that runs on it, for the overflow message.
    pub(crate) fn set_label(&self, label: &str) {
        if let Some(s) = &self.slot {
            s.chunk.guards.set_label(s.index, label);
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let guard = self.guard;
            // After the thread's pool is gone (thread exit), the slot is simply unmapped.
            let _ = POOL.try_with(|p| {
                if let Ok(mut p) = p.try_borrow_mut() {
                    p.give_back(slot, guard);
                }
            });
        }
    }
}

/// The free stacks of one size.
struct FreeList {
    size: usize,
    /// Warm stacks at the back (taken first), emptied ones at the front.
    free: VecDeque<Slot>,
    warm: usize,
}

/// This thread's stacks.
#[derive(Default)]
struct Pool {
    lists: Vec<FreeList>,
    in_use: usize,
    chunks_mapped: usize,
    bytes_mapped: usize,
    alt_stack_checked: bool,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

/// Counts of one thread's fiber stacks, and how the process guards them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackStats {
    /// Stacks owned by fibers of this thread (started and not finished).
    pub in_use: usize,
    /// Free stacks in this thread's pool.
    pub free: usize,
    /// Free stacks that kept their memory for warm reuse.
    pub warm: usize,
    /// Chunks this thread has mapped.
    pub chunks: usize,
    /// Address space those chunks take, guard pages included.
    pub mapped_bytes: usize,
    /// How guard pages are installed (process-wide).
    pub guard_kind: GuardKind,
}

/// The calling thread's fiber stacks: in use, free in its pool, mapped; and how this process
/// installs guard pages.
///
/// ```
/// use evloop::fiber::{stack_stats, Fiber};
///
/// let before = stack_stats().in_use;
/// let f = Fiber::new(|_| {
///     let _ = Fiber::main().switch(());
/// });
/// f.switch(()).unwrap(); // started: it owns a stack now
/// assert_eq!(stack_stats().in_use, before + 1);
/// drop(f); // unwound, its stack back in the pool
/// assert_eq!(stack_stats().in_use, before);
/// ```
pub fn stack_stats() -> StackStats {
    POOL.try_with(|p| {
        let p = p.borrow();
        StackStats {
            in_use: p.in_use,
            free: p.lists.iter().map(|l| l.free.len()).sum(),
            warm: p.lists.iter().map(|l| l.warm).sum(),
            chunks: p.chunks_mapped,
            mapped_bytes: p.bytes_mapped,
            guard_kind: guard_kind(),
        }
    })
    .unwrap_or(StackStats {
        in_use: 0,
        free: 0,
        warm: 0,
        chunks: 0,
        mapped_bytes: 0,
        guard_kind: guard_kind(),
    })
}

/// The usable size a request for `size` bytes gets: whole pages, within the limits.
pub(crate) fn round_size(size: usize) -> usize {
    let page = sys::page_size();
    let size = size.clamp(MIN_STACK_SIZE, MAX_STACK_SIZE);
    size.div_ceil(page) * page
}

/// A stack of (at least) `size` usable bytes for a fiber named `label`.
pub(crate) fn allocate(size: usize, label: &str) -> io::Result<Stack> {
    let size = round_size(size);
    let stack = POOL
        .try_with(|p| p.borrow_mut().take(size))
        .map_err(|_| io::Error::other("fiber stack: the thread is exiting"))??;
    stack.set_label(label);
    Ok(stack)
}

impl Pool {
    fn list(&mut self, size: usize) -> &mut FreeList {
        let i = match self.lists.iter().position(|l| l.size == size) {
            Some(i) => i,
            None => {
                self.lists.push(FreeList {
                    size,
                    free: VecDeque::new(),
                    warm: 0,
                });
                self.lists.len() - 1
            }
        };
        &mut self.lists[i]
    }

    fn take(&mut self, size: usize) -> io::Result<Stack> {
        if !self.alt_stack_checked {
            // Without an alternate signal stack an overflow cannot be reported (the handler
            // would need the stack that just ran out); it would still crash, just less clearly,
            // so a failure here is not worth refusing the stack for.
            let _ = sys::ensure_alt_signal_stack();
            self.alt_stack_checked = true;
        }
        let guard = sys::page_size();
        let list = self.list(size);
        let slot = match list.free.pop_back() {
            Some(slot) => {
                // Warm stacks sit at the back: the one just taken was warm if any were.
                list.warm = list.warm.saturating_sub(1);
                slot
            }
            None => {
                let (chunk_bytes, mut slots) = new_chunk(size, guard)?;
                self.chunks_mapped += 1;
                self.bytes_mapped += chunk_bytes;
                let first = slots.remove(0);
                let list = self.list(size);
                // The rest of the chunk is fresh memory: nothing resident, nothing to give back.
                for s in slots.into_iter().rev() {
                    list.free.push_front(s);
                }
                first
            }
        };
        self.in_use += 1;
        Ok(Stack {
            slot: Some(slot),
            guard,
        })
    }

    fn give_back(&mut self, slot: Slot, guard: usize) {
        self.in_use = self.in_use.saturating_sub(1);
        let size = slot.map.len() - guard;
        let list = self.list(size);
        if list.warm < HOT_STACKS {
            list.warm += 1;
            list.free.push_back(slot);
        } else {
            // Give the memory back; keep the address range (and its guard) for the next fiber.
            let _ = slot.map.advise(guard, size, Advice::DontNeed);
            list.free.push_front(slot);
        }
    }
}

impl Drop for Pool {
    /// Thread exit: unmap the free stacks, a run of adjacent ones with one `munmap`.
    fn drop(&mut self) {
        let mut maps: Vec<Mapping> = Vec::new();
        for list in self.lists.drain(..) {
            maps.extend(list.free.into_iter().map(|s| s.map));
        }
        maps.sort_by_key(Mapping::addr);
        let mut run: Option<Mapping> = None;
        for m in maps {
            run = Some(match run.take() {
                None => m,
                Some(r) => match r.join(m) {
                    Ok(joined) => joined,
                    Err((r, m)) => {
                        let _ = r.unmap();
                        m
                    }
                },
            });
        }
        if let Some(r) = run {
            let _ = r.unmap();
        }
    }
}

/// The VMA budget of the `mprotect` fallback: the kernel's limit minus a reserve.
fn fallback_budget(max_map_count: usize) -> (usize, usize) {
    let reserve = (max_map_count / 8).max(1024);
    (max_map_count.saturating_sub(reserve), reserve)
}

/// The error for a chunk that would take the fallback past its budget.
fn budget_error(stacks: usize, used: usize, limit: usize, reserve: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::OutOfMemory,
        format!(
            "fiber stacks: cannot guard {stacks} more stacks: this kernel has no MADV_GUARD_INSTALL (Linux 6.13+), so \
             each guard page is an mprotect'ed page that costs 2 of the process's memory mappings; fiber stacks \
             already use {used} of vm.max_map_count = {limit} ({reserve} are kept for the rest of the process). \
             Raise vm.max_map_count (sysctl vm.max_map_count=N) or keep fewer fibers alive at once"
        ),
    )
}

/// Maps a chunk of stacks of `size` usable bytes, installs their guards, registers them for
/// overflow reports and splits the chunk into one `Slot` per stack.
fn new_chunk(size: usize, guard: usize) -> io::Result<(usize, Vec<Slot>)> {
    let stride = size + guard;
    let count = (CHUNK_BYTES / stride).clamp(1, MAX_STACKS_PER_CHUNK);
    let bytes = stride * count;
    let mut vmas = 0;
    if MODE.load(Ordering::Relaxed) == MODE_MPROTECT {
        vmas = 2 * count;
        reserve_vmas(vmas, count)?;
    }
    let release = |vmas: usize| {
        FALLBACK_VMAS.fetch_sub(vmas, Ordering::Relaxed);
    };
    let map = match sys::mmap_anonymous(bytes, Prot::READ_WRITE) {
        Ok(m) => m,
        Err(e) => {
            release(vmas);
            return Err(with_context(format!("mmap({bytes} bytes for {count} fiber stacks)"), e));
        }
    };
    if let Err(e) = install_guards(&map, stride, guard, count, &mut vmas) {
        release(vmas);
        return Err(e);
    }
    // Huge pages would make one touched 4 KiB page of a stack cost 2 MiB. Kernels without
    // transparent huge pages refuse the advice; nothing to do then.
    let _ = map.advise(0, bytes, Advice::NoHugePage);
    let guards = match sys::register_stack_guards(map.addr(), stride, guard, count) {
        Ok(g) => g,
        Err(e) => {
            release(vmas);
            return Err(with_context("fiber stacks: overflow reports".to_string(), e));
        }
    };
    let chunk = Rc::new(Chunk { guards, vmas });
    let mut slots = Vec::with_capacity(count);
    let mut rest = map;
    for index in 0..count {
        if index + 1 == count {
            slots.push(Slot {
                map: rest,
                chunk: chunk.clone(),
                index,
            });
            break;
        }
        match rest.split_at(stride) {
            Ok((piece, tail)) => {
                slots.push(Slot {
                    map: piece,
                    chunk: chunk.clone(),
                    index,
                });
                rest = tail;
            }
            // Unreachable: `stride` is a whole number of pages inside the rest of the chunk.
            Err(m) => {
                slots.push(Slot {
                    map: m,
                    chunk: chunk.clone(),
                    index,
                });
                break;
            }
        }
    }
    Ok((bytes, slots))
}

/// Takes `vmas` from the fallback's budget, or explains why not.
fn reserve_vmas(vmas: usize, stacks: usize) -> io::Result<()> {
    let limit = sys::max_map_count().unwrap_or(65_530);
    let (budget, reserve) = fallback_budget(limit);
    let used = FALLBACK_VMAS.fetch_add(vmas, Ordering::Relaxed);
    if used + vmas > budget {
        FALLBACK_VMAS.fetch_sub(vmas, Ordering::Relaxed);
        return Err(budget_error(stacks, used, limit, reserve));
    }
    Ok(())
}

/// Installs the guard page of each of the `count` stacks of `map`.
fn install_guards(map: &Mapping, stride: usize, guard: usize, count: usize, vmas: &mut usize) -> io::Result<()> {
    for i in 0..count {
        let at = i * stride;
        if MODE.load(Ordering::Relaxed) != MODE_MPROTECT {
            match map.advise(at, guard, Advice::GuardInstall) {
                Ok(()) => {
                    MODE.store(MODE_MADVISE, Ordering::Relaxed);
                    continue;
                }
                // Only the first guard of the process can tell the kernel lacks the advice;
                // switch to the fallback for good (this chunk's count starts now).
                Err(e)
                    if e.raw_os_error() == Some(sys::errno::EINVAL) && MODE.load(Ordering::Relaxed) == MODE_UNKNOWN =>
                {
                    MODE.store(MODE_MPROTECT, Ordering::Relaxed);
                    *vmas = 2 * count;
                    reserve_vmas(*vmas, count).inspect_err(|_| *vmas = 0)?;
                }
                Err(e) => {
                    return Err(with_context(
                        "madvise(MADV_GUARD_INSTALL) for a fiber stack's guard page".into(),
                        e,
                    ));
                }
            }
        }
        if let Err(e) = map.protect(at, guard, Prot::NONE) {
            if e.raw_os_error() == Some(sys::errno::ENOMEM) {
                let limit = sys::max_map_count().unwrap_or(65_530);
                let (_, reserve) = fallback_budget(limit);
                return Err(budget_error(
                    count,
                    FALLBACK_VMAS.load(Ordering::Relaxed),
                    limit,
                    reserve,
                ));
            }
            return Err(with_context(
                "mprotect(PROT_NONE) for a fiber stack's guard page".into(),
                e,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_rounded_to_pages_within_limits() {
        let page = sys::page_size();
        assert_eq!(round_size(0), MIN_STACK_SIZE);
        assert_eq!(round_size(MIN_STACK_SIZE + 1), MIN_STACK_SIZE + page);
        assert_eq!(round_size(usize::MAX), MAX_STACK_SIZE);
        assert_eq!(round_size(DEFAULT_STACK_SIZE), DEFAULT_STACK_SIZE);
    }

    #[test]
    fn the_fallback_keeps_a_reserve_and_says_what_to_change() {
        assert_eq!(fallback_budget(65_530), (65_530 - 8191, 8191));
        assert_eq!(fallback_budget(4096), (3072, 1024));
        assert_eq!(fallback_budget(100), (0, 1024));
        let e = budget_error(64, 57_300, 65_530, 8191).to_string();
        for needle in [
            "MADV_GUARD_INSTALL",
            "vm.max_map_count = 65530",
            "57300",
            "Raise vm.max_map_count",
        ] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn stacks_come_from_chunks_and_are_recycled_warm() {
        // A size no other test of this thread uses.
        let size = round_size(48 * 1024);
        let before = stack_stats();
        let a = allocate(size, "a").unwrap();
        let b = allocate(size, "b").unwrap();
        let (lo, hi) = a.bounds();
        assert_eq!(hi - lo, size);
        assert_eq!(a.size(), size);
        let after = stack_stats();
        assert_eq!(after.in_use, before.in_use + 2);
        assert_eq!(after.chunks, before.chunks + 1, "both from one chunk");
        assert_ne!(after.guard_kind, GuardKind::NotProbed);
        drop(a);
        let c = allocate(size, "c").unwrap();
        assert_eq!(c.bounds(), (lo, hi), "the warm stack is reused first");
        drop((b, c));
        assert_eq!(stack_stats().in_use, before.in_use);
    }
}
