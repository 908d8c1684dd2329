//! CPUs and the threads and sockets bound to them: `sched_setaffinity(2)`,
//! `sched_getaffinity(2)`, `getcpu(2)`, and the two socket options a
//! thread-per-core server steers connections with (`SO_INCOMING_CPU` and a
//! classic-BPF `SO_ATTACH_REUSEPORT_CBPF` program).
//!
//! The multi-loop runtime pins one loop per CPU and binds one listener per
//! loop in a `SO_REUSEPORT` group, in CPU order; the program attached here
//! makes the kernel pick, for each new connection, the listener whose index
//! is the number of the CPU that took the connection's packets. The steering
//! policy lives in the runtime; this file only makes the calls.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, BorrowedFd};

use crate::Syscall;
use crate::call::call;

/// `sched_setaffinity(0, sizeof(cpu_set_t), {cpu})`: pins the calling
/// thread to one CPU.
///
/// Man page: <https://man7.org/linux/man-pages/man2/sched_setaffinity.2.html>
///
/// `EINVAL` when `cpu` is not in the process's allowed set (a container's
/// cpuset, `taskset`) or is beyond `CPU_SETSIZE` (1024). Counted as
/// [`Syscall::SchedSetaffinity`].
///
/// ```
/// let cpus = evloop_syscalls::allowed_cpus()?;
/// std::thread::spawn(move || {
///     evloop_syscalls::pin_thread_to_cpu(cpus[0])?;
///     assert_eq!(evloop_syscalls::current_cpu()?, cpus[0]);
///     Ok::<(), std::io::Error>(())
/// })
/// .join()
/// .expect("no panic")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[doc(alias = "sched_setaffinity")]
pub fn pin_thread_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: `cpu_set_t` is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu < CPU_SETSIZE` (checked above), so the bit is inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    call(Syscall::SchedSetaffinity, || {
        // SAFETY: the kernel reads `size_of::<cpu_set_t>()` bytes from `&set`, a live local.
        unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) }
    })?;
    Ok(())
}

/// `sched_getaffinity(0, sizeof(cpu_set_t), &set)`: the CPUs the calling
/// thread may run on, in increasing order.
///
/// Man page: <https://man7.org/linux/man-pages/man2/sched_getaffinity.2.html>
///
/// Counted as [`Syscall::SchedGetaffinity`].
///
/// ```
/// let cpus = evloop_syscalls::allowed_cpus()?;
/// assert!(!cpus.is_empty());
/// assert!(cpus.windows(2).all(|w| w[0] < w[1]));
/// # Ok::<(), std::io::Error>(())
/// ```
#[doc(alias = "sched_getaffinity")]
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: `cpu_set_t` is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    call(Syscall::SchedGetaffinity, || {
        // SAFETY: the kernel writes at most `size_of::<cpu_set_t>()` bytes to `&mut set`, a
        // live local.
        unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) }
    })?;
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: every `c < CPU_SETSIZE`, so the bit read is inside `set`.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// `getcpu(&cpu, NULL)` (glibc's `sched_getcpu()`): the CPU the calling
/// thread runs on right now (answered by the vDSO on x86_64). Meaningful
/// for a pinned thread; anyone else may have moved by the time it returns.
///
/// Man page: <https://man7.org/linux/man-pages/man3/sched_getcpu.3.html>
///
/// Counted as [`Syscall::Getcpu`].
///
/// ```
/// let cpu = evloop_syscalls::current_cpu()?;
/// assert!(cpu < 1024);
/// # Ok::<(), std::io::Error>(())
/// ```
#[doc(alias = "sched_getcpu")]
#[doc(alias = "getcpu")]
pub fn current_cpu() -> io::Result<usize> {
    // SAFETY: `sched_getcpu` takes no arguments and touches no caller memory.
    let cpu = call(Syscall::Getcpu, || unsafe { libc::sched_getcpu() })?;
    Ok(cpu as usize)
}

/// `setsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &cpu, sizeof(int))`: asks
/// the kernel to prefer this socket of a `SO_REUSEPORT` group for
/// connections whose packets a given CPU received (Linux 4.4+); `getsockopt`
/// of the same option on an accepted socket says which CPU that was.
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// Only a preference: it applies when the group has no BPF program, and a
/// group whose sockets all set it is searched linearly. Counted as
/// [`Syscall::Setsockopt`].
///
/// ```
/// let sock = std::net::TcpListener::bind("127.0.0.1:0")?;
/// use std::os::fd::AsFd;
/// evloop_syscalls::set_incoming_cpu(sock.as_fd(), 0)?;
/// assert_eq!(evloop_syscalls::incoming_cpu(sock.as_fd())?, 0);
/// # Ok::<(), std::io::Error>(())
/// ```
#[doc(alias = "setsockopt")]
#[doc(alias = "SO_INCOMING_CPU")]
pub fn set_incoming_cpu(fd: BorrowedFd<'_>, cpu: usize) -> io::Result<()> {
    let val = libc::c_int::try_from(cpu).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    call(Syscall::Setsockopt, || {
        // SAFETY: the kernel reads sizeof(int) bytes from `&val`, a live local.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_INCOMING_CPU,
                (&val as *const libc::c_int).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        }
    })?;
    Ok(())
}

/// `getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &cpu, &len)`: on an accepted
/// socket, the CPU that received its packets (`-1` before any arrived is
/// reported as `None`); on a listener, the value [`set_incoming_cpu`] set.
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// Counted as [`Syscall::Getsockopt`]. See [`set_incoming_cpu`] for an example.
#[doc(alias = "getsockopt")]
#[doc(alias = "SO_INCOMING_CPU")]
pub fn incoming_cpu(fd: BorrowedFd<'_>) -> io::Result<usize> {
    let mut val: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    call(Syscall::Getsockopt, || {
        // SAFETY: the kernel writes at most `len` (sizeof(int)) bytes to `&mut val` and the
        // length to `&mut len`, both live locals.
        unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_INCOMING_CPU,
                (&mut val as *mut libc::c_int).cast(),
                &mut len,
            )
        }
    })?;
    usize::try_from(val).map_err(|_| io::Error::from_raw_os_error(libc::ENODATA))
}

/// Classic BPF: `BPF_LD | BPF_W | BPF_ABS` (load a 32-bit word at an absolute offset into A).
const LD_W_ABS: u16 = 0x20;
/// Classic BPF: `BPF_JMP | BPF_JEQ | BPF_K` (if A == k skip `jt` instructions, else `jf`).
const JEQ_K: u16 = 0x15;
/// Classic BPF: `BPF_ALU | BPF_MOD | BPF_K` (A %= k).
const ALU_MOD_K: u16 = 0x94;
/// Classic BPF: `BPF_RET | BPF_K` (return k).
const RET_K: u16 = 0x06;
/// Classic BPF: `BPF_RET | BPF_A` (return A).
const RET_A: u16 = 0x16;
/// The ancillary-data offset base of classic BPF loads (`SKF_AD_OFF`, -0x1000) ...
const SKF_AD_OFF: i32 = -0x1000;
/// ... plus `SKF_AD_CPU` (36): the load yields the number of the CPU running the program.
const SKF_AD_CPU: i32 = 36;
/// The kernel's bound on a classic BPF program (`BPF_MAXINSNS`).
const MAX_INSNS: usize = 4096;

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The reuseport program [`attach_reuseport_cpu_program`] attaches: socket `i` of the group
/// takes the connections that CPU `cpus[i]` received; any other CPU `c` goes to `c % n`.
///
/// ```text
/// 0        ld  [SKF_AD_OFF + SKF_AD_CPU]   ; A = the CPU running the program (the receiving one)
/// 1+2i     jeq #cpus[i], 0, 1              ; A == cpus[i]? fall through, else skip the ret
/// 2+2i     ret #i                          ; socket i of the group
/// 1+2n     mod #n                          ; a CPU no loop is pinned to: A %= n
/// 2+2n     ret a
/// ```
pub(crate) fn cpu_program(cpus: &[usize]) -> io::Result<Vec<libc::sock_filter>> {
    let n = u32::try_from(cpus.len()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    if cpus.is_empty() || 2 * cpus.len() + 3 > MAX_INSNS {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut code = vec![insn(LD_W_ABS, 0, 0, (SKF_AD_OFF + SKF_AD_CPU) as u32)];
    for (i, &cpu) in cpus.iter().enumerate() {
        let cpu = u32::try_from(cpu).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        code.push(insn(JEQ_K, 0, 1, cpu));
        code.push(insn(RET_K, 0, 0, i as u32));
    }
    code.push(insn(ALU_MOD_K, 0, 0, n));
    code.push(insn(RET_A, 0, 0, 0));
    Ok(code)
}

/// `struct sock_fprog` with its padding as a field: the kernel copies all of the struct, and
/// libc's version leaves the bytes between `len` and `filter` uninitialised (memcheck reports
/// the `setsockopt` as reading them).
#[repr(C)]
struct Fprog {
    len: u16,
    _pad: [u8; size_of::<usize>() - 2],
    filter: *mut libc::sock_filter,
}

static_assertions::assert_eq_size!(Fprog, libc::sock_fprog);
static_assertions::assert_eq_align!(Fprog, libc::sock_fprog);

/// `setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog))`
/// with a classic-BPF program that steers each new connection of the socket's
/// `SO_REUSEPORT` group to the group's socket number `i` when CPU `cpus[i]`
/// received it (Linux 4.5+; the kernel's selftest `reuseport_bpf_cpu.c` does
/// the same with `cpu % n`). The program, instruction by instruction:
///
/// ```text
/// ld  [SKF_AD_OFF + SKF_AD_CPU]   ; A = the CPU running the program (the receiving one)
/// jeq #cpus[i], 0, 1              ; for each i: A == cpus[i]? then
/// ret #i                          ;   socket i of the group
/// mod #n                          ; a CPU no socket is listed for: A %= n
/// ret a
/// ```
///
/// Man page: <https://man7.org/linux/man-pages/man7/socket.7.html>
///
/// The index is the socket's position in the group, which is the order the
/// sockets joined it (`listen` for TCP), as long as none leaves: the kernel
/// fills a hole with the group's last socket. An index beyond the group makes
/// the kernel fall back to its hash. `EINVAL` on a socket without
/// `SO_REUSEPORT`, or for an empty table. Counted as [`Syscall::Setsockopt`].
///
/// ```
/// use std::os::fd::AsFd;
/// use evloop_syscalls::{Domain, SockAddr, SockType};
///
/// let sock = evloop_syscalls::socket(Domain::Inet, SockType::Stream)?;
/// evloop_syscalls::set_reuseport(sock.as_fd(), true)?; // the program belongs to a reuseport group
/// evloop_syscalls::bind(sock.as_fd(), &SockAddr::from("127.0.0.1:0".parse::<std::net::SocketAddr>()?))?;
/// evloop_syscalls::listen(sock.as_fd(), 16)?;
/// evloop_syscalls::attach_reuseport_cpu_program(sock.as_fd(), &[0, 1])?; // CPU 0 -> socket 0, CPU 1 -> socket 1
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[doc(alias = "setsockopt")]
#[doc(alias = "SO_ATTACH_REUSEPORT_CBPF")]
pub fn attach_reuseport_cpu_program(fd: BorrowedFd<'_>, cpus: &[usize]) -> io::Result<()> {
    let mut code = cpu_program(cpus)?;
    let prog = Fprog {
        len: code.len() as u16,
        _pad: [0; size_of::<usize>() - 2],
        filter: code.as_mut_ptr(),
    };
    call(Syscall::Setsockopt, || {
        // SAFETY: the kernel reads `sizeof(sock_fprog)` bytes from `&prog`, a live local, and
        // through it `prog.len` instructions from `code`, a live vector of that length; it
        // copies the program before returning.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ATTACH_REUSEPORT_CBPF,
                (&prog as *const Fprog).cast(),
                size_of::<Fprog>() as libc::socklen_t,
            )
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cbpf_opcodes_match_the_kernel_headers() {
        assert_eq!(LD_W_ABS, (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16);
        assert_eq!(ALU_MOD_K, (libc::BPF_ALU | libc::BPF_MOD | libc::BPF_K) as u16);
        // `BPF_A` (0x10, linux/filter.h's return-the-accumulator source) is missing from libc
        // before 0.2.171, below the declared minimum; spelled out here.
        assert_eq!(RET_A, (libc::BPF_RET | 0x10) as u16);
        assert_eq!(RET_K, (libc::BPF_RET | libc::BPF_K) as u16);
        assert_eq!(JEQ_K, (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16);
        assert_eq!(SKF_AD_OFF, libc::SKF_AD_OFF);
        assert_eq!(SKF_AD_CPU, libc::SKF_AD_CPU);
    }

    #[test]
    fn cpu_program_maps_each_listed_cpu_to_its_socket() {
        let p = cpu_program(&[3, 1]).unwrap();
        assert_eq!(p.len(), 7);
        assert_eq!((p[1].code, p[1].jt, p[1].jf, p[1].k), (JEQ_K, 0, 1, 3));
        assert_eq!((p[2].code, p[2].k), (RET_K, 0));
        assert_eq!((p[3].k, p[4].k), (1, 1));
        assert_eq!((p[5].code, p[5].k), (ALU_MOD_K, 2));
        assert!(cpu_program(&[]).is_err());
    }
}
