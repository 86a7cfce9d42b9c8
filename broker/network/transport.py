"""The bytes of a connection, over plaintext or TLS, behind one small interface.

The frame reader and the response writer only need: wait until bytes can be read (without
holding a buffer while idle), read into a buffer, send a response's parts.  Plaintext keeps
its fast paths (``recv_into`` straight from the socket, file regions by ``sendfile``); TLS
cannot hand file pages to the kernel, so a region is read (``preadv``, from the page cache)
into a buffer and encrypted in writes of up to TLS_CHUNK bytes.
"""

from __future__ import annotations

import fcntl
import os
import struct
import termios
from typing import Any, TypeAlias

import trio

from broker.services.storage.file_region import FileRegion

TLS_CHUNK = 256 * 1024  # plaintext bytes per TLS write: 16 TLS records, bounded memory per send
IDLE_PROBE_BYTES = 16 * 1024
_INT = struct.Struct("i")
_INT_ZERO = bytes(_INT.size)


def socket_pending(fd: int) -> int:
    """Bytes the kernel holds for ``fd`` that no read has taken yet (``FIONREAD``): how much a
    frame's buffer may grow by now, since those bytes have already arrived."""
    return _INT.unpack(fcntl.ioctl(fd, termios.FIONREAD, _INT_ZERO))[0]


async def _send_buffer(fd: int, data: bytes) -> None:
    """Write ``data`` straight away, waiting only while the socket's buffer is full.

    Not trio's ``send``, which also yields to the scheduler after every successful write: a
    response is the last thing its request does before the connection waits for the next one
    (and yields there), so that extra round per request bought nothing."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await trio.lowlevel.wait_writable(fd)


async def _send_file(fd: int, region: FileRegion) -> None:
    offset, remaining = region.offset, region.length
    while remaining:
        try:
            sent = os.sendfile(fd, region.fd, offset, remaining)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(fd)
            continue
        if sent == 0:
            raise OSError(f"segment file ended {remaining} bytes before the fetched range")
        offset += sent
        remaining -= sent
        await trio.lowlevel.checkpoint_if_cancelled()


class PlainTransport:
    """A TCP socket: reads straight into the caller's buffer, file regions by ``sendfile``."""

    __slots__ = ("fd", "recv_into")

    def __init__(self, sock: trio.socket.SocketType) -> None:
        self.fd = sock.fileno()  # asked once: trio's fileno() is a Python call each time
        self.recv_into = sock.recv_into

    async def wait_readable(self) -> None:
        await trio.lowlevel.wait_readable(self.fd)

    def pending(self) -> int:
        """Bytes that have arrived and wait to be read."""
        return socket_pending(self.fd)

    def recv_ready_into(self, view: memoryview) -> int | None:
        """Right after :meth:`wait_readable`: read without the extra scheduler round of trio's
        ``recv_into`` (the wait just yielded); None if nothing was there after all."""
        try:
            return os.readv(self.fd, [view])
        except BlockingIOError:
            return None

    async def send_parts(self, parts: list[Any]) -> None:
        """In-memory parts joined into one send, file regions by sendfile, so the large
        ranges of a Fetch never pass through Python."""
        pending: list[Any] = []
        for part in parts:
            if isinstance(part, FileRegion):
                if pending:
                    await _send_buffer(self.fd, b"".join(pending))
                    pending = []
                await _send_file(self.fd, part)
            else:
                pending.append(part)
        if pending:
            await _send_buffer(self.fd, b"".join(pending))


class TlsTransport:
    """A TLS stream over the socket (trio's ``SSLStream``), after its handshake."""

    __slots__ = ("sock", "stream", "_pending")

    def __init__(self, sock: trio.socket.SocketType, stream: trio.SSLStream[trio.SocketStream]) -> None:
        self.sock, self.stream = sock, stream
        self._pending = b""  # decrypted bytes read by wait_readable, not yet taken

    async def wait_readable(self) -> None:
        # Decrypted bytes may already sit in the TLS layer while the socket has nothing, so
        # "readable" means a read returned something; it is kept for the next recv_into.
        if not self._pending:
            self._pending = await self.stream.receive_some(IDLE_PROBE_BYTES) or b""

    def pending(self) -> int:
        """Bytes that have arrived and wait to be read: those already decrypted, and the
        encrypted ones in the kernel (a little more than the plaintext they carry)."""
        return len(self._pending) + socket_pending(self.sock.fileno())

    def recv_ready_into(self, view: memoryview) -> int | None:
        """Right after :meth:`wait_readable`: the bytes it decrypted (None at end of stream)."""
        return self._take(view) if self._pending else None

    async def recv_into(self, view: memoryview) -> int:
        if not self._pending:
            # Capped: ssl allocates what it is asked for, and a large frame's view is tens of MB.
            self._pending = await self.stream.receive_some(min(len(view), TLS_CHUNK))
        return self._take(view)

    def _take(self, view: memoryview) -> int:
        """Move decrypted bytes into ``view``; how many."""
        taken = min(len(self._pending), len(view))
        view[:taken] = self._pending[:taken]
        self._pending = self._pending[taken:]
        return taken

    async def send_parts(self, parts: list[Any]) -> None:
        """The parts in TLS writes of up to TLS_CHUNK plaintext bytes, gathered in one buffer:
        file regions are read (``preadv``) straight into it and small parts copied in, so each
        byte is copied once before encryption (no ``pread`` result, no join), and the buffer
        lives only while this response is sent (idle connections hold none)."""
        total = sum(part.length if isinstance(part, FileRegion) else len(part) for part in parts)
        out = memoryview(bytearray(min(total, TLS_CHUNK)))
        size = 0
        for part in parts:
            if isinstance(part, FileRegion):
                offset, end = part.offset, part.offset + part.length
                while offset < end:
                    if size == len(out):
                        await self.stream.send_all(out)
                        size = 0
                    read = os.preadv(part.fd, [out[size : size + end - offset]], offset)
                    if not read:
                        raise OSError(f"segment file ended {end - offset} bytes before the fetched range")
                    offset += read
                    size += read
            elif size + len(part) <= len(out):
                out[size : size + len(part)] = part
                size += len(part)
            else:  # too big to gather now: send what is gathered, then the part as it is
                if size:
                    await self.stream.send_all(out[:size])
                    size = 0
                await self.stream.send_all(part)
        if size:
            await self.stream.send_all(out[:size])


Transport: TypeAlias = PlainTransport | TlsTransport
