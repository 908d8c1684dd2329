//! The process's open file descriptors, from `/proc/self/fd`: for tests that check the runtime
//! leaves none behind. The table is process-wide: a test that counts it must hold
//! [`serial`](crate::serial) while every other test of its binary that opens fds holds
//! [`serial_shared`](crate::serial_shared), or have its binary to itself.

use std::collections::BTreeMap;
use std::os::fd::RawFd;

/// The fds open in this process right now (the entries of `/proc/self/fd`, without the
/// one used to list them), sorted.
pub fn open_fds() -> Vec<i32> {
    let mut fds: Vec<i32> = match std::fs::read_dir("/proc/self/fd") {
        Ok(dir) => dir
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect(),
        Err(e) => panic!("cannot list /proc/self/fd: {e}"),
    };
    fds.sort_unstable();
    // The directory's own fd was the highest-numbered or a reused low number; it is closed
    // again now, so drop whichever entry no longer exists.
    fds.retain(|&fd| std::fs::symlink_metadata(format!("/proc/self/fd/{fd}")).is_ok());
    fds
}

/// How many fds are open in this process right now (see [`open_fds`]).
pub fn open_fd_count() -> usize {
    open_fds().len()
}

/// Every fd open in this process right now with what it refers to (the `/proc/self/fd` link:
/// `socket:[..]`, `anon_inode:[eventpoll]`, a path), without the one used to list them.
pub fn fd_table() -> BTreeMap<RawFd, String> {
    let own_dir = format!("/proc/{}/fd", std::process::id());
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir("/proc/self/fd").expect("listing /proc/self/fd") {
        let entry = entry.expect("reading /proc/self/fd");
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<RawFd>() else {
            continue;
        };
        // An fd closed between the listing and the readlink has no target: it is gone.
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        let target = target.to_string_lossy().into_owned();
        if target != own_dir {
            out.insert(fd, target);
        }
    }
    out
}
