"""Reading size-prefixed Kafka request frames from a socket, within memory and time bounds.

Small requests (heartbeats, metadata) are parsed out of a receive buffer, so a burst of
them costs one ``recv`` for many frames.  That buffer exists only while bytes are pending:
it is dropped whenever it runs empty and allocated again once the socket is readable, so an
idle connection holds no buffer at all (10,000 idle connections must stay cheap).

A large request (a Produce carrying a megabyte of batches) gets a buffer of its own that the
kernel fills directly with ``recv_into`` (on plaintext); its record batches are later written to disk from
that same memory.  That buffer grows as bytes arrive (doubling, starting at
``LARGE_FRAME_FIRST_CHUNK``) instead of being allocated at the declared size, so a hostile
length prefix costs little until the bytes are actually sent.  The first chunk (2 MiB) holds
a whole request at the clients' default 1 MiB request size limit, so ordinary produce
requests are still received without a copy; and since a buffer never exceeds its frame's
reserved size, all of them together stay within the budget.

Every frame's declared size is reserved from the broker-wide :class:`MemoryBudget` before its
body is read, and the body must arrive within the read timeout; a frame over
``socket.request.max.bytes`` is never read: the connection is closed, as Kafka does.
"""

from __future__ import annotations

import struct

import trio

from broker.memory_budget import MemoryBudget
from broker.security.transport import Transport

_SIZE = struct.Struct(">i")
RECEIVE_BUFFER_SIZE = 16 * 1024
_NO_BUFFER = memoryview(b"")
LARGE_FRAME_FIRST_CHUNK = 2 * 1024 * 1024


class FrameError(Exception):
    """The peer violated framing (negative, oversized or too slow a frame); close the connection."""


class FrameReader:
    """Yields request frames (as writable memoryviews) from a connection's transport."""

    def __init__(
        self, transport: Transport, max_frame_size: int, budget: MemoryBudget, read_timeout: float
    ) -> None:
        self._transport = transport
        self._max = max_frame_size
        self._limit_name = "socket.request.max.bytes"
        self._budget = budget
        self._read_timeout = read_timeout
        self._buffer: bytearray | None = None
        self._view = _NO_BUFFER
        self._start = 0
        self._end = 0

    def limit(self, max_frame_size: int, name: str) -> None:
        """Change the largest frame accepted (``name`` is the setting, for the refusal): a SASL
        listener takes at most ``sasl.server.max.receive.size`` until the client has
        authenticated, as Kafka, so an unauthenticated peer cannot make the broker hold large
        frames."""
        self._max, self._limit_name = max_frame_size, name

    async def _fill(self) -> bool:
        """Read more bytes into the receive buffer; False at end of stream."""
        received: int | None = None
        if self._buffer is None:
            # Idle: wait without holding memory; the buffer is allocated once bytes are there.
            await self._transport.wait_readable()
            self._buffer = bytearray(RECEIVE_BUFFER_SIZE)
            self._view = memoryview(self._buffer)
            received = self._transport.recv_ready_into(self._view)
        elif self._end == len(self._buffer):
            pending = self._end - self._start
            self._view[:pending] = self._view[self._start : self._end]
            self._start, self._end = 0, pending
        if received is None:
            received = await self._transport.recv_into(self._view[self._end :])
        self._end += received
        return received > 0

    def _consumed(self, count: int) -> None:
        """Advance past ``count`` buffered bytes; an emptied buffer is given back."""
        self._start += count
        if self._start == self._end:
            self._start = self._end = 0
            self._buffer, self._view = None, _NO_BUFFER

    async def next_size(self) -> int | None:
        """Wait for the next frame's size prefix; None if the peer closed cleanly.

        This is the idle part of a connection's life, timed by the caller with
        ``connections.max.idle.ms``; everything after the prefix runs under the read timeout.
        """
        while self._end - self._start < 4:
            if not await self._fill():
                if self._end != self._start:
                    raise FrameError("connection closed in the middle of a frame size")
                return None
        (size,) = _SIZE.unpack_from(self._view, self._start)
        if size < 0 or size > self._max:
            raise FrameError(f"frame of {size} bytes exceeds {self._limit_name}={self._max}")
        return size

    async def read_body(self, size: int) -> memoryview:
        """The body of the frame whose size :meth:`next_size` returned, reserved in the budget.

        The caller owns the reservation of ``size`` bytes once this returns and must release it.
        """
        await self._budget.acquire(size)
        try:
            frame = self._buffered_frame(size)
            if frame is not None:  # the whole request came with its size: no timer to set
                return frame
            with trio.move_on_after(self._read_timeout):
                return await self._read_reserved(size)
            raise FrameError(
                f"frame of {size} bytes not received within socket.request.read.timeout.ms="
                f"{round(self._read_timeout * 1000)}"
            )
        except BaseException:
            self._budget.release(size)
            raise

    def _buffered_frame(self, size: int) -> memoryview | None:
        """The frame of ``size`` bytes after the buffered size prefix, if all of it is buffered.

        Small frames are copied out: the receive buffer is reused for the next read while the
        handler may still hold slices of this one."""
        if size > RECEIVE_BUFFER_SIZE - 4 or self._end - self._start < 4 + size:
            return None
        self._consumed(4)
        frame = memoryview(bytearray(self._view[self._start : self._start + size]))
        self._consumed(size)
        return frame

    async def _read_reserved(self, size: int) -> memoryview:
        if size > RECEIVE_BUFFER_SIZE - 4:
            self._consumed(4)
            return await self._read_large(size)
        while (frame := self._buffered_frame(size)) is None:
            if not await self._fill():
                raise FrameError("connection closed in the middle of a frame")
        return frame

    async def _read_large(self, size: int) -> memoryview:
        """Read a frame larger than the receive buffer into a growing buffer of its own."""
        have = self._end - self._start
        frame = memoryview(bytearray(min(size, max(LARGE_FRAME_FIRST_CHUNK, have))))
        if have:
            frame[:have] = self._view[self._start : self._end]
            self._consumed(have)
        while have < size:
            if have == len(frame):
                grown = memoryview(bytearray(min(size, 2 * len(frame))))
                grown[:have] = frame
                frame = grown
            received = await self._transport.recv_into(frame[have:])
            if not received:
                raise FrameError("connection closed in the middle of a frame")
            have += received
        return frame
