//! Stack-overflow reports for stacks this process allocates itself (fiber stacks).
//!
//! A thread started by `std` that runs off the end of its stack hits the guard page below it;
//! std's `SIGSEGV` handler recognises the address and prints
//! `thread 'main' has overflowed its stack` before aborting. A fiber's stack is memory the
//! runtime mapped (see [`crate::Mapping`]) with a guard page of its own, which std knows nothing
//! about: without help, an overflow there is a bare `Segmentation fault`. This module gives
//! those guard pages the same treatment:
//!
//! * [`register_stack_guards`] records a region of stacks laid out at a fixed stride, each with
//!   a guard at its low end, in a process-wide table, and installs (once per process) a
//!   handler for `SIGSEGV` and `SIGBUS` that runs on the thread's alternate signal stack. A
//!   fault inside a registered guard is an overflow: the handler writes
//!   `fiber '<label>' has overflowed its stack` to stderr and aborts. Any other fault is passed
//!   on to the handler that was installed before (std's, which reports thread-stack overflows),
//!   or, if there was none, to the default action, exactly as if this handler did not exist.
//! * [`StackGuards::set_label`] names the fiber that runs on one stack of the region, for the
//!   message.
//! * [`ensure_alt_signal_stack`] gives the calling thread an alternate signal stack if it has
//!   none (std sets one up for the threads it starts; other threads may not have one), since a
//!   handler cannot run on the stack that just overflowed.
//!
//! # How the handler stays safe
//!
//! It runs on whatever thread faulted, possibly while another thread registers or unregisters
//! a region, so it touches only atomics in a fixed-size static table, the label bytes of a
//! region (atomics too), `write(2)`, `sigaction(2)`, `raise(3)` and `abort(3)`, all
//! async-signal-safe. Unregistering clears the table entry and then waits until no handler is
//! running before it frees the region, the protocol of the signal module
//! ([`crate::register_signal`]).

use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU8, AtomicUsize, Ordering};

use crate::Syscall;
use crate::call::call;
use crate::mman::{Mapping, Prot, mmap_anonymous, page_size};

/// How many regions can be registered at the same time. A region is one chunk of fiber stacks
/// (the runtime puts 64 stacks in a chunk), so this allows half a million stacks.
pub const MAX_STACK_REGIONS: usize = 8192;

/// How many bytes of a label [`StackGuards::set_label`] keeps (longer labels are cut, at a
/// character boundary).
pub const STACK_LABEL_LEN: usize = 48;

/// The size of the alternate signal stack [`ensure_alt_signal_stack`] installs: room for this
/// handler, for a handler it chains to, and for the kernel's signal frame (several KiB with
/// AVX-512 state).
const ALT_STACK_SIZE: usize = 64 * 1024;

struct Label {
    len: AtomicU8,
    bytes: [AtomicU8; STACK_LABEL_LEN],
}

/// One registered region: `slots` stacks of `stride` bytes from `base`, each with `guard`
/// inaccessible bytes at its low end.
struct Region {
    base: usize,
    stride: usize,
    guard: usize,
    slots: usize,
    labels: Box<[Label]>,
}

impl Region {
    /// The slot whose guard holds `addr`, if any.
    fn guard_slot(&self, addr: usize) -> Option<usize> {
        let off = addr.checked_sub(self.base)?;
        let slot = off / self.stride;
        (slot < self.slots && off % self.stride < self.guard).then_some(slot)
    }
}

static TABLE: [AtomicPtr<Region>; MAX_STACK_REGIONS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_STACK_REGIONS];

/// Handler invocations running now, on all threads.
static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Serializes registration, unregistration and installation; the handler never takes it.
static LOCK: Mutex<Installed> = Mutex::new(Installed { done: false, next: 0 });

struct Installed {
    /// The handler is installed for SIGSEGV and SIGBUS.
    done: bool,
    /// Where the search for a free table entry starts.
    next: usize,
}

/// The dispositions the handler replaced, for chaining: handler address and `sa_flags`, for
/// SIGSEGV (index 0) and SIGBUS (index 1). Written before the handler is installed.
static PREV_HANDLER: [AtomicUsize; 2] = [AtomicUsize::new(libc::SIG_DFL), AtomicUsize::new(libc::SIG_DFL)];
static PREV_FLAGS: [AtomicI32; 2] = [AtomicI32::new(0), AtomicI32::new(0)];

fn signal_index(sig: libc::c_int) -> usize {
    usize::from(sig == libc::SIGBUS)
}

/// A region of stacks registered with [`register_stack_guards`]; dropping it unregisters the
/// region (after which a fault there is no longer reported as an overflow).
pub struct StackGuards {
    region: *mut Region,
    index: usize,
}

// SAFETY: the region is heap memory owned by this value; its labels are atomics, and the table
// entry is cleared under LOCK, so the value may move to and be dropped on another thread.
unsafe impl Send for StackGuards {}

impl std::fmt::Debug for StackGuards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self.region();
        f.debug_struct("StackGuards")
            .field("base", &format_args!("{:#x}", r.base))
            .field("stride", &r.stride)
            .field("guard", &r.guard)
            .field("slots", &r.slots)
            .finish()
    }
}

/// Registers `slots` stacks laid out from `base` every `stride` bytes, each with a guard of
/// `guard` bytes at its low end, so that a fault in one of those guards is reported as
/// `fiber '<label>' has overflowed its stack` (then the process aborts, as std does for thread
/// stacks).
///
/// The first registration of the process installs the fault handler:
/// `sigaction(SIGSEGV)` and `sigaction(SIGBUS)` with `SA_SIGINFO | SA_ONSTACK`, saving the
/// dispositions it replaces (a fault outside every registered guard goes to them). The handler
/// needs an alternate signal stack on the faulting thread: see [`ensure_alt_signal_stack`].
///
/// The caller keeps the memory mapped (and the guards inaccessible) for as long as the
/// registration lives. Errors: a layout that does not fit (`guard` not below `stride`, `stride`
/// not a multiple of the page size, no slots), a full table ([`MAX_STACK_REGIONS`] regions), or
/// a failed `sigaction`. Counted as [`Syscall::Sigaction`] twice on the first registration,
/// nothing afterwards.
#[doc(alias = "sigaction")]
pub fn register_stack_guards(base: usize, stride: usize, guard: usize, slots: usize) -> io::Result<StackGuards> {
    let page = page_size();
    if slots == 0 || guard == 0 || guard >= stride || stride % page != 0 || guard % page != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("register_stack_guards: {slots} stacks of {stride} bytes with {guard}-byte guards do not fit"),
        ));
    }
    if stride.checked_mul(slots).and_then(|l| l.checked_add(base)).is_none() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "register_stack_guards: the region wraps around the address space",
        ));
    }
    let mut st = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !st.done {
        install(libc::SIGSEGV)?;
        if let Err(e) = install(libc::SIGBUS) {
            restore(libc::SIGSEGV);
            return Err(e);
        }
        st.done = true;
    }
    let start = st.next;
    let Some(index) = (0..MAX_STACK_REGIONS)
        .map(|i| (start + i) % MAX_STACK_REGIONS)
        .find(|&i| TABLE[i].load(Ordering::SeqCst).is_null())
    else {
        return Err(io::Error::other(format!(
            "register_stack_guards: all {MAX_STACK_REGIONS} stack regions are in use"
        )));
    };
    st.next = (index + 1) % MAX_STACK_REGIONS;
    let labels = (0..slots)
        .map(|_| Label {
            len: AtomicU8::new(0),
            bytes: [const { AtomicU8::new(0) }; STACK_LABEL_LEN],
        })
        .collect();
    let region = Box::into_raw(Box::new(Region {
        base,
        stride,
        guard,
        slots,
        labels,
    }));
    TABLE[index].store(region, Ordering::SeqCst);
    Ok(StackGuards { region, index })
}

impl StackGuards {
    fn region(&self) -> &Region {
        // SAFETY: `region` came from Box::into_raw in `register_stack_guards` and is freed
        // only by Drop, which takes `&mut self`: it is live for as long as `self` is.
        unsafe { &*self.region }
    }

    /// Names the fiber that runs on stack `slot` of the region (an out-of-range slot is
    /// ignored). At most [`STACK_LABEL_LEN`] bytes are kept, cut at a character boundary.
    pub fn set_label(&self, slot: usize, label: &str) {
        let Some(l) = self.region().labels.get(slot) else {
            return;
        };
        let mut n = label.len().min(STACK_LABEL_LEN);
        while !label.is_char_boundary(n) {
            n -= 1;
        }
        for (dst, &b) in l.bytes.iter().zip(label.as_bytes()[..n].iter()) {
            dst.store(b, Ordering::Relaxed);
        }
        // Release: a handler that reads the length sees the bytes written before it.
        l.len.store(n as u8, Ordering::Release);
    }

    /// The label of stack `slot`, as the handler would print it.
    pub fn label(&self, slot: usize) -> String {
        let mut buf = [0u8; STACK_LABEL_LEN];
        let n = self.region().labels.get(slot).map_or(0, |l| read_label(l, &mut buf));
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    /// The guard slot `addr` falls into, as the handler decides it (for tests).
    pub fn guard_slot(&self, addr: usize) -> Option<usize> {
        self.region().guard_slot(addr)
    }
}

fn read_label(l: &Label, out: &mut [u8; STACK_LABEL_LEN]) -> usize {
    let n = usize::from(l.len.load(Ordering::Acquire)).min(STACK_LABEL_LEN);
    for (dst, src) in out.iter_mut().zip(l.bytes.iter()).take(n) {
        *dst = src.load(Ordering::Relaxed);
    }
    n
}

impl Drop for StackGuards {
    fn drop(&mut self) {
        let _st = LOCK.lock().unwrap_or_else(|p| p.into_inner());
        TABLE[self.index].store(std::ptr::null_mut(), Ordering::SeqCst);
        // A handler that loaded the pointer before the store above is counted in IN_HANDLER
        // (it increments before loading): wait for it to finish with the region.
        while IN_HANDLER.load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
        // SAFETY: the pointer came from Box::into_raw and is no longer reachable from the
        // table, and no handler is still reading it (see above): this is its only owner.
        drop(unsafe { Box::from_raw(self.region) });
    }
}

// ---------------------------------------------------------------------------
// The handler
// ---------------------------------------------------------------------------

fn empty_sigaction() -> libc::sigaction {
    // SAFETY: `struct sigaction` is plain data for which all-zero bytes are valid values
    // (SIG_DFL, an empty mask, no flags, no restorer).
    unsafe { std::mem::zeroed() }
}

/// `sigaction(sig, new, old)`, counted as [`Syscall::Sigaction`].
fn sigaction(sig: libc::c_int, new: &libc::sigaction, old: Option<&mut libc::sigaction>) -> io::Result<()> {
    let old_ptr = old.map_or(std::ptr::null_mut(), |o| o as *mut libc::sigaction);
    call(Syscall::Sigaction, || {
        // SAFETY: the kernel reads a `struct sigaction` from `new` (a live reference) and
        // writes one to `old_ptr`, which is NULL or comes from a live `&mut`.
        unsafe { libc::sigaction(sig, new, old_ptr) }
    })?;
    Ok(())
}

fn install(sig: libc::c_int) -> io::Result<()> {
    let mut new = empty_sigaction();
    new.sa_sigaction = on_fault as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
    new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    let mut old = empty_sigaction();
    sigaction(sig, &new, Some(&mut old)).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("sigaction(signal {sig}): cannot install the stack overflow handler: {e}"),
        )
    })?;
    let i = signal_index(sig);
    PREV_HANDLER[i].store(old.sa_sigaction, Ordering::SeqCst);
    PREV_FLAGS[i].store(old.sa_flags, Ordering::SeqCst);
    Ok(())
}

/// Puts back the disposition `install` replaced (only after a failed installation).
fn restore(sig: libc::c_int) {
    let i = signal_index(sig);
    let mut sa = empty_sigaction();
    sa.sa_sigaction = PREV_HANDLER[i].load(Ordering::SeqCst);
    sa.sa_flags = PREV_FLAGS[i].load(Ordering::SeqCst);
    let _ = sigaction(sig, &sa, None);
}

/// Appends `bytes` to `buf` at `*at`, as far as it fits.
fn push(buf: &mut [u8], at: &mut usize, bytes: &[u8]) {
    for &b in bytes {
        if let Some(slot) = buf.get_mut(*at) {
            *slot = b;
            *at += 1;
        }
    }
}

/// Appends `n` in decimal.
fn push_num(buf: &mut [u8], at: &mut usize, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    push(buf, at, &digits[i..]);
}

/// The message of an overflow of the stack labelled `label`, of `usable` bytes.
fn overflow_message(label: &[u8], usable: usize, out: &mut [u8; 256]) -> usize {
    let mut at = 0;
    push(out, &mut at, b"\nfiber '");
    push(out, &mut at, label);
    push(out, &mut at, b"' has overflowed its stack (");
    push_num(out, &mut at, usable / 1024);
    push(out, &mut at, b" KiB)\nfatal runtime error: stack overflow, aborting\n");
    at
}

/// The `SIGSEGV`/`SIGBUS` handler (async-signal-safe: see the module documentation).
extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    IN_HANDLER.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the kernel passes a valid siginfo_t for an SA_SIGINFO handler; si_code and
    // si_addr are plain fields (si_addr is meaningful for faults, si_code > 0).
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    let mut found = None;
    if code > 0 {
        for entry in &TABLE {
            let p = entry.load(Ordering::SeqCst);
            if p.is_null() {
                continue;
            }
            // SAFETY: a non-null entry points to a live Region: Drop clears the entry and then
            // waits for IN_HANDLER (incremented above) to reach zero before freeing it.
            let region = unsafe { &*p };
            if let Some(slot) = region.guard_slot(addr) {
                let mut label = [0u8; STACK_LABEL_LEN];
                let n = region.labels.get(slot).map_or(0, |l| read_label(l, &mut label));
                found = Some((label, n, region.stride - region.guard));
                break;
            }
        }
    }
    IN_HANDLER.fetch_sub(1, Ordering::SeqCst);
    if let Some((label, n, usable)) = found {
        let mut msg = [0u8; 256];
        let len = overflow_message(&label[..n], usable, &mut msg);
        // SAFETY: write(2) and abort(3) are async-signal-safe; the kernel reads `len` bytes of
        // the local buffer `msg`. abort never returns.
        unsafe {
            libc::write(2, msg.as_ptr().cast(), len);
            libc::abort();
        }
    }
    chain(sig, info, ctx);
}

/// Hands a fault that is not a fiber overflow to the disposition this module replaced.
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let i = signal_index(sig);
    let handler = PREV_HANDLER[i].load(Ordering::SeqCst);
    let flags = PREV_FLAGS[i].load(Ordering::SeqCst);
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // Back to the default action; a fault then re-executes the faulting instruction and
        // takes it (a core dump), as if this handler had never been there. A signal sent by
        // kill() or raise() does not repeat by itself: raise it again (it stays blocked until
        // this handler returns).
        let mut sa = empty_sigaction();
        sa.sa_sigaction = libc::SIG_DFL;
        // SAFETY: sigaction and raise are async-signal-safe; `sa` is a live local; the
        // siginfo pointer is the kernel's.
        unsafe {
            libc::sigaction(sig, &sa, std::ptr::null_mut());
            if (*info).si_code <= 0 {
                libc::raise(sig);
            }
        }
        return;
    }
    if flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous disposition was installed with SA_SIGINFO, so `handler` is a
        // three-argument signal handler; it gets the arguments the kernel gave us.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute::<usize, _>(handler) };
        f(sig, info, ctx);
    } else {
        // SAFETY: without SA_SIGINFO, `handler` is a one-argument signal handler.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute::<usize, _>(handler) };
        f(sig);
    }
}

// ---------------------------------------------------------------------------
// Alternate signal stacks
// ---------------------------------------------------------------------------

/// An alternate signal stack this module installed on the current thread.
struct AltStack {
    map: Mapping,
}

impl Drop for AltStack {
    /// Disables the alternate stack if it is still this one, before the memory goes away.
    fn drop(&mut self) {
        let mut cur = empty_stack();
        if sigaltstack(None, Some(&mut cur)).is_ok() && cur.ss_sp as usize == self.map.addr() + page_size() {
            let mut off = empty_stack();
            off.ss_flags = libc::SS_DISABLE;
            let _ = sigaltstack(Some(&off), None);
        }
    }
}

thread_local! {
    /// Whether this thread has an alternate signal stack (checked once per thread), and the
    /// one this module installed, if it had to.
    static ALT: std::cell::RefCell<(bool, Option<AltStack>)> = const { std::cell::RefCell::new((false, None)) };
}

fn empty_stack() -> libc::stack_t {
    // SAFETY: `stack_t` is plain data (a pointer, an int, a size) for which zero is valid.
    unsafe { std::mem::zeroed() }
}

/// `sigaltstack(new, old)`, counted as [`Syscall::Sigaltstack`].
fn sigaltstack(new: Option<&libc::stack_t>, old: Option<&mut libc::stack_t>) -> io::Result<()> {
    let new_ptr = new.map_or(std::ptr::null(), |n| n as *const libc::stack_t);
    let old_ptr = old.map_or(std::ptr::null_mut(), |o| o as *mut libc::stack_t);
    call(Syscall::Sigaltstack, || {
        // SAFETY: the kernel reads a stack_t from `new_ptr` and writes one to `old_ptr`; each
        // is NULL or comes from a live reference. A new stack's memory is checked below to be
        // a mapping this thread keeps for as long as the stack is installed.
        unsafe { libc::sigaltstack(new_ptr, old_ptr) }
    })?;
    Ok(())
}

/// `sigaltstack(NULL, &old)`, then, if the calling thread has no alternate signal stack,
/// `mmap` + `sigaltstack(&new, NULL)`: makes sure signal handlers installed with `SA_ONSTACK`
/// (such as the overflow handler of [`register_stack_guards`]) can run on this thread even
/// when its current stack is exhausted.
///
/// Man page: <https://man7.org/linux/man-pages/man2/sigaltstack.2.html>
///
/// Threads started by std already have one (std installs it with its own overflow handler),
/// and so may threads of other libraries: those are left alone. An installed stack is 64 KiB
/// with a guard page below, belongs to the thread, and is disabled and unmapped when the
/// thread exits. Checked once per thread: later calls make no system call. Counted as
/// [`Syscall::Sigaltstack`] (once or twice) and, when it installs one, [`Syscall::Mmap`] and
/// [`Syscall::Mprotect`].
#[doc(alias = "sigaltstack(2)")]
pub fn ensure_alt_signal_stack() -> io::Result<()> {
    let checked = ALT.try_with(|a| a.borrow().0).unwrap_or(true);
    if checked {
        return Ok(());
    }
    let mut cur = empty_stack();
    sigaltstack(None, Some(&mut cur))?;
    if cur.ss_flags & libc::SS_DISABLE == 0 {
        let _ = ALT.try_with(|a| a.borrow_mut().0 = true);
        return Ok(());
    }
    let page = page_size();
    let map = mmap_anonymous(ALT_STACK_SIZE + page, Prot::READ_WRITE)?;
    map.protect(0, page, Prot::NONE)?;
    let mut new = empty_stack();
    new.ss_sp = map.as_ptr().wrapping_add(page).cast();
    new.ss_size = map.len() - page;
    new.ss_flags = 0;
    sigaltstack(Some(&new), None)?;
    let _ = ALT.try_with(|a| *a.borrow_mut() = (true, Some(AltStack { map })));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_slots_are_found_by_stride() {
        let page = page_size();
        let g = register_stack_guards(0x1000_0000, 4 * page, page, 3).unwrap();
        assert_eq!(g.guard_slot(0x1000_0000), Some(0));
        assert_eq!(g.guard_slot(0x1000_0000 + page - 1), Some(0));
        assert_eq!(g.guard_slot(0x1000_0000 + page), None);
        assert_eq!(g.guard_slot(0x1000_0000 + 4 * page + 8), Some(1));
        assert_eq!(g.guard_slot(0x1000_0000 + 8 * page), Some(2));
        assert_eq!(g.guard_slot(0x1000_0000 + 12 * page), None, "past the last slot");
        assert_eq!(g.guard_slot(0x0fff_ffff), None, "below the region");
    }

    #[test]
    fn labels_are_cut_at_a_character_boundary() {
        let page = page_size();
        let g = register_stack_guards(0x2000_0000, 2 * page, page, 2).unwrap();
        g.set_label(1, "echo-7");
        assert_eq!(g.label(1), "echo-7");
        assert_eq!(g.label(0), "");
        let long = "é".repeat(STACK_LABEL_LEN);
        g.set_label(0, &long);
        assert_eq!(g.label(0), "é".repeat(STACK_LABEL_LEN / 2));
        g.set_label(9, "ignored");
    }

    #[test]
    fn bad_layouts_are_refused() {
        let page = page_size();
        for (stride, guard, slots) in [(page, page, 1), (2 * page, 0, 1), (2 * page, page, 0), (page + 1, 1, 1)] {
            let e = register_stack_guards(0x3000_0000, stride, guard, slots).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        }
    }

    #[test]
    fn the_message_names_the_fiber_and_the_size() {
        let mut out = [0u8; 256];
        let n = overflow_message(b"Fiber-3", 256 * 1024, &mut out);
        assert_eq!(
            std::str::from_utf8(&out[..n]).unwrap(),
            "\nfiber 'Fiber-3' has overflowed its stack (256 KiB)\nfatal runtime error: stack overflow, aborting\n"
        );
    }

    #[test]
    fn a_thread_without_an_alternate_stack_gets_one_once() {
        std::thread::spawn(|| {
            // Disable whatever std installed, then ask.
            let mut off = empty_stack();
            off.ss_flags = libc::SS_DISABLE;
            sigaltstack(Some(&off), None).unwrap();
            crate::counters::reset();
            ensure_alt_signal_stack().unwrap();
            let mut cur = empty_stack();
            sigaltstack(None, Some(&mut cur)).unwrap();
            assert_eq!(cur.ss_flags & libc::SS_DISABLE, 0);
            assert_eq!(cur.ss_size, ALT_STACK_SIZE);
            let c = crate::counters::snapshot();
            assert_eq!(c[Syscall::Mmap], 1);
            crate::counters::reset();
            ensure_alt_signal_stack().unwrap();
            assert!(crate::counters::snapshot().is_empty(), "checked once per thread");
        })
        .join()
        .unwrap();
    }
}
