//! asyncio's `sock_*` API on the loop: [`LoopHandle::sock_recv`], `sock_sendall`,
//! `sock_connect`, `sock_accept`, `sock_recvfrom`, `sock_sendto` and `sock_sendfile`, each over
//! a [`Socket`]'s own operations, and the buffer rule of the two that allocate (`sock_recv`,
//! `sock_recvfrom`: never from `n` alone).

use std::io;
use std::os::fd::AsFd;

use evloop_syscalls as sys;
use evloop_syscalls::SockAddr;

use crate::event_loop::LoopHandle;
use crate::io::Interest;
use crate::io::net::Socket;
use crate::io::net::socket::Kind;

impl LoopHandle {
    /// Receives up to `n` bytes (asyncio's `sock_recv`); empty at end of stream.
    ///
    /// `n` bounds the result, not the memory set aside: a stream socket receives at most
    /// 256 KiB per call, however large `n` is (any `n`, even `usize::MAX`, is fine), and a
    /// datagram socket gets a buffer the size of its next datagram when `n` is larger than
    /// that, so a datagram is truncated only to `n`. The result holds no more capacity than
    /// it needs.
    pub async fn sock_recv(&self, sock: &Socket, n: usize) -> io::Result<Vec<u8>> {
        let mut buf = recv_buffer(sock, n).await?;
        let got = sock.recv(&mut buf).await?;
        fit(&mut buf, got);
        Ok(buf)
    }

    /// Receives into `buf` (asyncio's `sock_recv_into`).
    pub async fn sock_recv_into(&self, sock: &Socket, buf: &mut [u8]) -> io::Result<usize> {
        sock.recv(buf).await
    }

    /// Sends all of `data` (asyncio's `sock_sendall`).
    pub async fn sock_sendall(&self, sock: &Socket, data: &[u8]) -> io::Result<()> {
        sock.send_all(data).await
    }

    /// Connects `sock` to `addr` (asyncio's `sock_connect`).
    pub async fn sock_connect(&self, sock: &Socket, addr: &SockAddr) -> io::Result<()> {
        sock.connect(addr).await
    }

    /// Accepts a connection on a listening socket (asyncio's `sock_accept`).
    pub async fn sock_accept(&self, sock: &Socket) -> io::Result<(Socket, SockAddr)> {
        let (fd, addr) = sock.accept().await?;
        // A connection accepted on a stream listener is a stream (seqpacket stays to be asked).
        let kind = if sock.known_kind() == Kind::Stream {
            Kind::Stream
        } else {
            Kind::Unknown
        };
        Ok((Socket::own(Some(self), fd, kind)?, addr))
    }

    /// Receives a datagram and its sender (asyncio's `sock_recvfrom`): up to `n` bytes of it,
    /// with the memory rule of [`sock_recv`](LoopHandle::sock_recv) (any `n` is fine).
    pub async fn sock_recvfrom(&self, sock: &Socket, n: usize) -> io::Result<(Vec<u8>, SockAddr)> {
        let mut buf = recv_buffer(sock, n).await?;
        let (got, addr) = sock.recv_from(&mut buf).await?;
        fit(&mut buf, got);
        Ok((buf, addr))
    }

    /// Sends a datagram to `addr` (asyncio's `sock_sendto`).
    pub async fn sock_sendto(&self, sock: &Socket, data: &[u8], addr: &SockAddr) -> io::Result<usize> {
        sock.send_to(data, addr).await
    }

    /// Sends `count` bytes (all to the end when `None`) of `file` from `offset` (asyncio's
    /// `sock_sendfile`): `sendfile(2)` while the kernel supports it for this pair of fds, a
    /// read/write loop otherwise. Returns the bytes sent.
    pub async fn sock_sendfile(
        &self,
        sock: &Socket,
        file: &std::fs::File,
        offset: u64,
        count: Option<usize>,
    ) -> io::Result<u64> {
        let mut pos = offset;
        let mut sent = 0u64;
        let mut use_sendfile = true;
        // Whether `file` can be read at an offset (a regular file) or only in sequence (a pipe).
        let mut seekable = true;
        loop {
            // Bounded by the bytes sent, not by the offset: some files (`/dev/zero`) report
            // counts without moving the offset.
            let want = match count {
                Some(c) if sent >= c as u64 => return Ok(sent),
                Some(c) => (c as u64 - sent).min(1 << 30) as usize,
                None => 1 << 30,
            };
            if use_sendfile {
                let r = sock
                    .async_fd()
                    .io(Interest::Write, |s| {
                        sys::sendfile(s.as_fd(), file.as_fd(), &mut pos, want)
                    })
                    .await;
                match r {
                    Ok(0) => return Ok(sent),
                    Ok(n) => sent += n as u64,
                    Err(e) if matches!(e.raw_os_error(), Some(sys::errno::EINVAL) | Some(sys::errno::ENOSYS)) => {
                        use_sendfile = false;
                    }
                    // A source without offsets (a pipe): read it in sequence instead.
                    Err(e) if e.raw_os_error() == Some(sys::errno::ESPIPE) => {
                        use_sendfile = false;
                        seekable = false;
                    }
                    Err(e) => return Err(e),
                }
            } else {
                let mut buf = vec![0u8; want.min(64 * 1024)];
                let n = if seekable {
                    match std::os::unix::fs::FileExt::read_at(file, &mut buf, pos) {
                        Err(e) if e.raw_os_error() == Some(sys::errno::ESPIPE) => {
                            seekable = false;
                            std::io::Read::read(&mut &*file, &mut buf)?
                        }
                        other => other?,
                    }
                } else {
                    std::io::Read::read(&mut &*file, &mut buf)?
                };
                if n == 0 {
                    return Ok(sent);
                }
                sock.send_all(&buf[..n]).await?;
                pos += n as u64;
                sent += n as u64;
            }
        }
    }
}

/// The most `sock_recv` / `sock_recvfrom` set aside up front for a stream socket.
const RECV_BUFFER_MAX: usize = 256 * 1024;

/// A zeroed buffer for receiving at most `n` bytes from `sock`, never allocated from `n`
/// alone: asyncio allocates `n` bytes, which for a large `n` is an allocation failure (an
/// abort in Rust) or a capacity overflow (a panic). Up to `RECV_BUFFER_MAX`, `n` is taken as
/// it is. Beyond it, a stream socket gets `RECV_BUFFER_MAX` (a stream read may return less
/// than asked), and a datagram socket waits for its next datagram and gets its exact size, so
/// that no datagram is cut short of `n`.
async fn recv_buffer(sock: &Socket, n: usize) -> io::Result<Vec<u8>> {
    if n <= RECV_BUFFER_MAX {
        return Ok(vec![0u8; n]);
    }
    // The socket's type is known (or learned once): no getsockopt per call.
    let len = if sock.is_stream() {
        RECV_BUFFER_MAX
    } else {
        sock.async_fd()
            .io(Interest::Read, |fd| sys::peek_datagram_len(fd.as_fd()))
            .await?
    };
    Ok(vec![0u8; len.min(n)])
}

/// Truncates a receive buffer to what was received, giving back memory that a short receive
/// left unused.
fn fit(buf: &mut Vec<u8>, got: usize) {
    buf.truncate(got);
    if buf.capacity() > 4096 && buf.capacity() / 2 > got {
        buf.shrink_to_fit();
    }
}
