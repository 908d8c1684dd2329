//! Anonymous memory mappings: `mmap`, `mprotect`, `madvise` and `munmap`.
//!
//! The runtime's fibers run on stacks of their own, carved out of large anonymous mappings
//! (one `mmap` per chunk of stacks). A [`Mapping`] owns one range of such memory: it unmaps
//! its range when dropped, and can be split into pieces that each own a part (a stack per
//! piece) and joined back when the pieces are adjacent (so that a chunk is unmapped with one
//! call instead of one per stack). Nothing here ever hands out a reference into the memory:
//! only its address, which only `unsafe` code can use, so the type's job is ownership (who
//! unmaps what, exactly once), not access.
//!
//! # Guard pages and `vm.max_map_count`
//!
//! A stack needs an inaccessible page below it, so that running off its end faults instead of
//! silently writing over the next stack. The classic way, `mprotect(PROT_NONE)` on that page,
//! splits the mapping: the kernel keeps one VMA (virtual memory area) per run of pages with the
//! same protection, so every guard page costs two VMAs, and a process may have at most
//! `vm.max_map_count` of them (65,530 by default): about 32,000 guarded stacks. Linux 6.13
//! added `madvise(MADV_GUARD_INSTALL)` ([`Advice::GuardInstall`]), which marks pages as guard
//! pages inside the page tables without touching the VMA: a chunk of any number of guarded
//! stacks stays one VMA. Older kernels answer it with `EINVAL`. [`max_map_count`] reads the
//! limit so that callers can budget for the fallback.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::Syscall;
use crate::call::{call, enter};

/// `MADV_GUARD_INSTALL` (Linux 6.13+, `include/uapi/asm-generic/mman-common.h`); the libc
/// crate does not name it yet.
const MADV_GUARD_INSTALL: libc::c_int = 102;
/// `MADV_GUARD_REMOVE` (Linux 6.13+).
const MADV_GUARD_REMOVE: libc::c_int = 103;

/// Memory protection for [`mmap_anonymous`] and [`Mapping::protect`] (`PROT_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Prot(libc::c_int);

impl Prot {
    /// `PROT_NONE`: any access faults (a guard page).
    pub const NONE: Prot = Prot(libc::PROT_NONE);
    /// `PROT_READ`.
    pub const READ: Prot = Prot(libc::PROT_READ);
    /// `PROT_READ | PROT_WRITE`: ordinary data (a stack).
    pub const READ_WRITE: Prot = Prot(libc::PROT_READ | libc::PROT_WRITE);

    /// The raw `PROT_*` bits.
    pub const fn raw(self) -> i32 {
        self.0
    }
}

/// Advice for [`Mapping::advise`] (`MADV_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Advice {
    /// `MADV_DONTNEED`: drop the pages now; the next access to a private anonymous page finds
    /// it zero-filled. This is how a recycled stack gives its memory back (its resident size
    /// falls) while keeping its address range.
    DontNeed,
    /// `MADV_NOHUGEPAGE`: never back the range with transparent huge pages (a stack that
    /// touches one 4 KiB page must not become 2 MiB resident).
    NoHugePage,
    /// `MADV_GUARD_INSTALL` (Linux 6.13+): make the pages guard pages (any access raises
    /// `SIGSEGV`) without splitting the mapping. `EINVAL` on older kernels.
    GuardInstall,
    /// `MADV_GUARD_REMOVE` (Linux 6.13+): undo [`Advice::GuardInstall`].
    GuardRemove,
}

impl Advice {
    /// The raw `MADV_*` value.
    pub const fn raw(self) -> i32 {
        match self {
            Advice::DontNeed => libc::MADV_DONTNEED,
            Advice::NoHugePage => libc::MADV_NOHUGEPAGE,
            Advice::GuardInstall => MADV_GUARD_INSTALL,
            Advice::GuardRemove => MADV_GUARD_REMOVE,
        }
    }
}

/// The size of a memory page (`sysconf(_SC_PAGESIZE)`, read once; 4096 on x86_64, 4096 or
/// 65536 on aarch64 depending on the kernel).
pub fn page_size() -> usize {
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    let cached = PAGE.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    // SAFETY: sysconf takes an integer and touches no user memory.
    let raw = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let page = usize::try_from(raw)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096);
    PAGE.store(page, Ordering::Relaxed);
    page
}

/// `vm.max_map_count` from `/proc/sys/vm/max_map_count`: how many memory mappings (VMAs) the
/// kernel lets one process have; 65,530 by default. `None` if the file cannot be read (no
/// `/proc`). Read with `std::fs`, not counted.
pub fn max_map_count() -> Option<usize> {
    std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// An owned range of anonymous memory, page-aligned: `munmap`ped when dropped.
///
/// Made by [`mmap_anonymous`]; [`Mapping::split_at`] cuts it into pieces that each own their
/// part, [`Mapping::join`] glues adjacent pieces back. The type never gives out references into
/// the memory, only its address ([`Mapping::as_ptr`]): reading or writing it is up to `unsafe`
/// code, which can rely on the range staying mapped for as long as the `Mapping` lives and on
/// no other `Mapping` owning any of it.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// The mapping is plain memory with no thread affinity: owning it on another thread is fine.
// SAFETY: `Mapping` holds no references to thread-local state; `munmap` may be called from any
// thread of the process.
unsafe impl Send for Mapping {}

/// `mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0)`:
/// a new private anonymous mapping of `len` bytes (rounded up to whole pages), zero-filled on
/// first touch.
///
/// Man page: <https://man7.org/linux/man-pages/man2/mmap.2.html>
///
/// * `MAP_NORESERVE`: no swap space is reserved up front, so a process can map far more stack
///   than it will ever touch (100,000 fibers of 256 KiB are 25 GiB of address space but only
///   the pages they touch in memory). A page touched when memory is exhausted kills the process
///   (the OOM killer) rather than failing this call; with `vm.overcommit_memory = 2` the flag
///   is ignored and large calls fail with `ENOMEM` instead.
/// * `MAP_STACK`: a hint that the memory holds stacks; since Linux 6.7 it also keeps transparent
///   huge pages away from it.
///
/// `len == 0` is `InvalidInput` without a call. Errors are the kernel's `errno`, unwrapped
/// (`raw_os_error()` works), as for every wrapper of this module. Counted as [`Syscall::Mmap`].
#[doc(alias = "mmap(2)")]
#[doc(alias = "mmap")]
pub fn mmap_anonymous(len: usize, prot: Prot) -> io::Result<Mapping> {
    if len == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "mmap: a mapping of 0 bytes (EINVAL)",
        ));
    }
    let page = page_size();
    let len = len
        .checked_add(page - 1)
        .map(|l| l & !(page - 1))
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("mmap: {len} bytes is too large")))?;
    enter(Syscall::Mmap)?;
    // SAFETY: an anonymous private mapping at an address the kernel chooses (NULL hint, no
    // MAP_FIXED), so no existing memory is replaced; fd -1 and offset 0 as MAP_ANONYMOUS
    // requires. The kernel reads no user memory.
    let ret = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot.raw(),
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if ret == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    match NonNull::new(ret.cast::<u8>()) {
        Some(ptr) => Ok(Mapping { ptr, len }),
        // The kernel never maps page 0 for a NULL hint; treat it as a failure anyway.
        None => Err(io::Error::other("mmap returned address 0")),
    }
}

fn out_of_range(op: &str, offset: usize, len: usize, total: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{op}: bytes {offset}..{offset}+{len} are not page-aligned or not inside the {total}-byte mapping"),
    )
}

impl Mapping {
    /// The first byte's address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The first byte's address as an integer.
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Its length in bytes (a whole number of pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: a mapping has at least one page.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Checks that `offset..offset + len` is page-aligned and inside the mapping.
    fn sub_range(&self, op: &str, offset: usize, len: usize) -> io::Result<*mut libc::c_void> {
        let page = page_size();
        let end = offset.checked_add(len);
        if len == 0 || offset % page != 0 || len % page != 0 || !matches!(end, Some(e) if e <= self.len) {
            return Err(out_of_range(op, offset, len, self.len));
        }
        Ok(self.ptr.as_ptr().wrapping_add(offset).cast())
    }

    /// `mprotect(addr + offset, len, prot)`: changes the protection of whole pages of the
    /// mapping.
    ///
    /// Man page: <https://man7.org/linux/man-pages/man2/mprotect.2.html>
    ///
    /// Giving part of a mapping a different protection splits its VMA in two or three, each
    /// counting against `vm.max_map_count`; past the limit the call fails with `ENOMEM` (see
    /// the module documentation). A range that is not page-aligned or not inside the mapping
    /// is `InvalidInput`, without a call. Counted as [`Syscall::Mprotect`].
    #[doc(alias = "mprotect(2)")]
    pub fn protect(&self, offset: usize, len: usize, prot: Prot) -> io::Result<()> {
        let addr = self.sub_range("mprotect", offset, len)?;
        call(Syscall::Mprotect, || {
            // SAFETY: `addr..addr + len` lies inside the range this Mapping owns (checked by
            // `sub_range`); the kernel reads no user memory. The Mapping hands out no
            // references, so no Rust reference can point into pages that become inaccessible.
            unsafe { libc::mprotect(addr, len, prot.raw()) }
        })?;
        Ok(())
    }

    /// `madvise(addr + offset, len, advice)`: advice about whole pages of the mapping.
    ///
    /// Man page: <https://man7.org/linux/man-pages/man2/madvise.2.html>
    ///
    /// [`Advice::GuardInstall`] fails with `EINVAL` on kernels before 6.13: callers probe it
    /// once and fall back to [`Mapping::protect`]. [`Advice::DontNeed`] discards the contents
    /// of the pages. A range that is not page-aligned or not inside the mapping is
    /// `InvalidInput`, without a call. Counted as [`Syscall::Madvise`].
    #[doc(alias = "madvise(2)")]
    pub fn advise(&self, offset: usize, len: usize, advice: Advice) -> io::Result<()> {
        let addr = self.sub_range("madvise", offset, len)?;
        call(Syscall::Madvise, || {
            // SAFETY: `addr..addr + len` lies inside the range this Mapping owns (checked by
            // `sub_range`); the kernel reads no user memory. Discarding or guarding pages of
            // this range can only affect memory this Mapping owns, which it never lends out.
            unsafe { libc::madvise(addr, len, advice.raw()) }
        })?;
        Ok(())
    }

    /// Cuts the mapping at byte `at` (a multiple of the page size, strictly inside it) into two
    /// mappings that own `0..at` and `at..len`. No system call: the kernel's VMA is unchanged,
    /// only the ownership is divided. Gives `self` back if `at` is not a valid cut.
    pub fn split_at(self, at: usize) -> Result<(Mapping, Mapping), Mapping> {
        if at == 0 || at >= self.len || at % page_size() != 0 {
            return Err(self);
        }
        let me = std::mem::ManuallyDrop::new(self);
        let tail = me.ptr.as_ptr().wrapping_add(at);
        match NonNull::new(tail) {
            Some(tail) => Ok((
                Mapping { ptr: me.ptr, len: at },
                Mapping {
                    ptr: tail,
                    len: me.len - at,
                },
            )),
            // Unreachable: a non-null address plus less than the length is non-null.
            None => Err(std::mem::ManuallyDrop::into_inner(me)),
        }
    }

    /// Glues `next` onto the end of `self` when it starts exactly where `self` ends (two pieces
    /// of one split, back together); gives both back otherwise. No system call.
    pub fn join(self, next: Mapping) -> Result<Mapping, (Mapping, Mapping)> {
        if self.addr().checked_add(self.len) != Some(next.addr()) {
            return Err((self, next));
        }
        let me = std::mem::ManuallyDrop::new(self);
        let next = std::mem::ManuallyDrop::new(next);
        Ok(Mapping {
            ptr: me.ptr,
            len: me.len + next.len,
        })
    }

    /// `munmap(addr, len)`: unmaps the range and reports what the kernel said (dropping the
    /// mapping does the same and ignores the result).
    ///
    /// Man page: <https://man7.org/linux/man-pages/man2/munmap.2.html>
    ///
    /// Unmapping a piece from the middle of a VMA splits it, which can fail with `ENOMEM` when
    /// the process is at `vm.max_map_count`: the memory then stays mapped (and is leaked: the
    /// `Mapping` is gone either way). Join adjacent pieces first to avoid it.
    /// Counted as [`Syscall::Munmap`].
    #[doc(alias = "munmap(2)")]
    pub fn unmap(self) -> io::Result<()> {
        let me = std::mem::ManuallyDrop::new(self);
        munmap(me.ptr, me.len)
    }
}

fn munmap(ptr: NonNull<u8>, len: usize) -> io::Result<()> {
    call(Syscall::Munmap, || {
        // SAFETY: `ptr..ptr + len` is a range this process mapped and that exactly one Mapping
        // owned; that Mapping is consumed (or being dropped), so nothing refers to the range
        // any more.
        unsafe { libc::munmap(ptr.as_ptr().cast(), len) }
    })?;
    Ok(())
}

impl Drop for Mapping {
    fn drop(&mut self) {
        let _ = munmap(self.ptr, self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters;

    #[test]
    fn a_mapping_is_counted_split_joined_and_unmapped_once() {
        let page = page_size();
        counters::reset();
        let m = mmap_anonymous(4 * page, Prot::READ_WRITE).unwrap();
        assert_eq!(m.len(), 4 * page);
        assert_eq!(m.addr() % page, 0);
        let addr = m.addr();
        let (a, b) = m.split_at(page).unwrap();
        assert_eq!((a.addr(), a.len()), (addr, page));
        assert_eq!((b.addr(), b.len()), (addr + page, 3 * page));
        // Not adjacent in this order.
        let (b, a) = b.join(a).unwrap_err();
        let whole = a.join(b).unwrap();
        assert_eq!((whole.addr(), whole.len()), (addr, 4 * page));
        whole.unmap().unwrap();
        let c = counters::snapshot();
        assert_eq!(c[Syscall::Mmap], 1);
        assert_eq!(c[Syscall::Munmap], 1);
    }

    #[test]
    fn bad_cuts_and_ranges_are_refused_without_a_call() {
        let page = page_size();
        let m = mmap_anonymous(2 * page, Prot::READ_WRITE).unwrap();
        let m = m.split_at(0).unwrap_err();
        let m = m.split_at(2 * page).unwrap_err();
        let m = m.split_at(page / 2).unwrap_err();
        counters::reset();
        for (off, len) in [(0, 0), (1, page), (page, 2 * page), (usize::MAX - page + 1, page)] {
            let e = m.protect(off, len, Prot::NONE).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{off} {len}");
            assert!(e.to_string().contains("mprotect"), "{e}");
        }
        assert!(counters::snapshot().is_empty());
        assert_eq!(
            mmap_anonymous(0, Prot::READ_WRITE).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn rounds_up_to_whole_pages_and_reads_the_map_limit() {
        let m = mmap_anonymous(1, Prot::READ).unwrap();
        assert_eq!(m.len(), page_size());
        // Every Linux with /proc has the file; the value is at least the historical default.
        if let Some(n) = max_map_count() {
            assert!(n >= 1024, "{n}");
        }
    }
}
