//! The simplest simulated files: eventfds and pipes, and `read`/`write` on any simulated file.
//!
//! An eventfd is a counter (eventfd(2)): a write adds to it and wakes readers (every write,
//! even of 0, as Linux does), a read takes it whole and resets it, `EAGAIN` when it is 0; a
//! write that would push it past `u64::MAX - 1` is `EAGAIN`. A pipe holds 64 KiB; a write of
//! at most `PIPE_BUF` (4096) bytes is all or nothing, a longer one takes what fits; reading
//! from a pipe whose writer is gone gives end of file, writing to one whose reader is gone
//! `EPIPE` (and no `SIGPIPE`: the simulation raises no signals).

use std::collections::VecDeque;
use std::io;

use crate::sim::socket::{self, RecvFlags};
use crate::sim::state::{EPOLLIN, EPOLLOUT, File, FileId, Kind, Life, PIPE_BUF, PIPE_CAPACITY, PipeBuf, State, errno};

/// `eventfd(initval)`.
pub(crate) fn eventfd(st: &mut State, initval: u32) -> io::Result<(FileId, i32)> {
    st.install(Kind::Eventfd {
        count: u64::from(initval),
    })
}

/// `pipe2()`: (read end, write end).
pub(crate) fn pipe(st: &mut State) -> io::Result<((FileId, i32), (FileId, i32))> {
    let read = st.install(Kind::PipeRead(PipeBuf {
        data: VecDeque::new(),
        writer: 0,
        writer_open: true,
    }))?;
    let write = st.install(Kind::PipeWrite { reader: read.0 })?;
    if let Some(File {
        kind: Kind::PipeRead(p),
        ..
    }) = st.file_mut(read.0)
    {
        p.writer = write.0;
    }
    Ok((read, write))
}

/// Reads an eventfd's counter.
pub(crate) fn eventfd_read(st: &mut State, id: FileId) -> io::Result<u64> {
    let Some(File {
        kind: Kind::Eventfd { count },
        ..
    }) = st.file_mut(id)
    else {
        return Err(errno(libc::EINVAL));
    };
    if *count == 0 {
        return Err(errno(libc::EAGAIN));
    }
    let v = std::mem::take(count);
    st.wake(id, EPOLLOUT);
    Ok(v)
}

/// Adds to an eventfd's counter.
pub(crate) fn eventfd_write(st: &mut State, id: FileId, v: u64) -> io::Result<()> {
    let Some(File {
        kind: Kind::Eventfd { count },
        ..
    }) = st.file_mut(id)
    else {
        return Err(errno(libc::EINVAL));
    };
    if v == u64::MAX {
        return Err(errno(libc::EINVAL));
    }
    if *count > u64::MAX - 1 - v {
        return Err(errno(libc::EAGAIN));
    }
    *count += v;
    st.wake(id, EPOLLIN);
    Ok(())
}

/// `read(2)` on a simulated file.
pub(crate) fn read(st: &mut State, id: FileId, buf: &mut [u8]) -> io::Result<usize> {
    match st.file(id).map(|f| &f.kind) {
        Some(Kind::Socket(_)) => socket::recv(st, id, buf, RecvFlags::default()).map(|(n, _)| n),
        Some(Kind::Eventfd { .. }) => {
            if buf.len() < 8 {
                return Err(errno(libc::EINVAL));
            }
            let v = eventfd_read(st, id)?;
            buf[..8].copy_from_slice(&v.to_ne_bytes());
            Ok(8)
        }
        Some(Kind::PipeRead(_)) => pipe_read(st, id, buf),
        Some(Kind::PipeWrite { .. }) => Err(errno(libc::EBADF)),
        Some(Kind::Epoll(_)) | None => Err(errno(libc::EINVAL)),
    }
}

/// `write(2)` on a simulated file.
pub(crate) fn write(st: &mut State, id: FileId, buf: &[u8]) -> io::Result<usize> {
    match st.file(id).map(|f| &f.kind) {
        Some(Kind::Socket(_)) => socket::send(st, id, buf, None),
        Some(Kind::Eventfd { .. }) => {
            let Some(bytes) = buf.get(..8) else {
                return Err(errno(libc::EINVAL));
            };
            let mut v = [0u8; 8];
            v.copy_from_slice(bytes);
            eventfd_write(st, id, u64::from_ne_bytes(v))?;
            Ok(8)
        }
        Some(Kind::PipeWrite { .. }) => pipe_write(st, id, buf),
        Some(Kind::PipeRead(_)) => Err(errno(libc::EBADF)),
        Some(Kind::Epoll(_)) | None => Err(errno(libc::EINVAL)),
    }
}

fn pipe_read(st: &mut State, id: FileId, buf: &mut [u8]) -> io::Result<usize> {
    if buf.is_empty() {
        return Ok(0);
    }
    let Some(File {
        kind: Kind::PipeRead(p),
        ..
    }) = st.file_mut(id)
    else {
        return Err(errno(libc::EBADF));
    };
    if p.data.is_empty() {
        return if p.writer_open { Err(errno(libc::EAGAIN)) } else { Ok(0) };
    }
    let n = buf.len().min(p.data.len());
    let (front, back) = p.data.as_slices();
    let a = n.min(front.len());
    buf[..a].copy_from_slice(&front[..a]);
    buf[a..n].copy_from_slice(&back[..n - a]);
    p.data.drain(..n);
    let writer = p.writer;
    st.wake(writer, EPOLLOUT);
    Ok(n)
}

fn pipe_write(st: &mut State, id: FileId, buf: &[u8]) -> io::Result<usize> {
    let Some(Kind::PipeWrite { reader }) = st.file(id).map(|f| &f.kind) else {
        return Err(errno(libc::EBADF));
    };
    let reader = *reader;
    let Some(File {
        kind: Kind::PipeRead(p),
        life: Life::Open,
        ..
    }) = st.file_mut(reader)
    else {
        return Err(errno(libc::EPIPE));
    };
    if buf.is_empty() {
        return Ok(0);
    }
    let room = PIPE_CAPACITY - p.data.len();
    if room == 0 || (buf.len() <= PIPE_BUF && room < buf.len()) {
        return Err(errno(libc::EAGAIN));
    }
    let n = buf.len().min(room);
    p.data.extend(&buf[..n]);
    st.wake(reader, EPOLLIN);
    Ok(n)
}
