"""Reading size-prefixed Kafka request frames from a socket, within memory and time bounds.

Small requests (heartbeats, metadata) are parsed out of a receive buffer, so a burst of
them costs one ``recv`` for many frames.  That buffer exists only while bytes are pending:
it is dropped whenever it runs empty and allocated again once the socket is readable, so an
idle connection holds no buffer at all (10,000 idle connections must stay cheap).  A frame
that fits in it is the connection's own affair: it never waits for the broker-wide
:class:`MemoryBudget`, so small requests are never queued behind large ones.

A larger request (a Produce carrying a megabyte of batches) gets a buffer of its own that the
kernel fills directly with ``recv_into`` (on plaintext); its record batches are later written
to disk from that same memory.  That buffer is allocated only once body bytes are there, and
grows as they arrive: to what the kernel already holds (``FIONREAD``), else to twice its size
(at least ``FIRST_BUFFER``); each growth is charged to the budget before it is allocated.  So a
hostile length prefix costs nothing until bytes come, a buffer is at most twice what arrived
(or was there to read), and a megabyte produce that arrived before its prefix was read gets
its whole buffer at once, without a copy.  (Anonymous memory maps of the declared size, filled
in place, were tried: a fresh map takes a page fault per 4 KiB written, which cost 25% more
broker CPU per GB produced than these heap buffers, which the allocator reuses.)

A frame over ``socket.request.max.bytes`` is never read: the connection is closed, as Kafka
does; so is one over a connection's share of the budget.  Everything after the size prefix,
waiting for memory included, must happen within ``socket.request.read.timeout.ms``.
"""

from __future__ import annotations

import struct

import trio

from broker.network.memory_budget import MemoryBudget
from broker.network.transport import Transport

_SIZE = struct.Struct(">i")
RECEIVE_BUFFER_SIZE = 16 * 1024
_NO_BUFFER = memoryview(b"")
FIRST_BUFFER = 64 * 1024
"""The smallest buffer of a large frame: growing from less would copy more often than it saves."""


class FrameError(Exception):
    """The peer violated framing (negative, oversized or too slow a frame); close the connection."""


class FrameTimeout(FrameError):
    """A frame did not arrive whole within the read timeout (``waiting_for_memory`` if it was
    stuck waiting for the budget rather than for its client)."""

    def __init__(self, message: str, waiting_for_memory: bool) -> None:
        super().__init__(message)
        self.waiting_for_memory = waiting_for_memory


class FrameReader:
    """Yields request frames (as writable memoryviews) from a connection's transport.

    ``charged`` is what the frame last returned by :meth:`read_body` holds of the budget;
    the caller gives it back with :meth:`release` once the request has been handled.
    """

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
        self.charged = 0
        self._waited = 0.0  # seconds the frame being read waited for memory
        self._waiting_for_memory = False

    def limit(self, max_frame_size: int, name: str) -> None:
        """Change the largest frame accepted (``name`` is the setting, for the refusal): a SASL
        listener takes at most ``sasl.server.max.receive.size`` until the client has
        authenticated, as Kafka, so an unauthenticated peer cannot make the broker hold large
        frames."""
        self._max, self._limit_name = max_frame_size, name

    def release(self) -> None:
        """Give the budget back what the last frame held."""
        self._budget.release(self.charged, self)
        self.charged = 0

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
        A frame that may not be read at all (over ``socket.request.max.bytes``, or over a
        connection's share of the budget: ``RequestTooLarge``) is refused here.
        """
        while self._end - self._start < 4:
            if not await self._fill():
                if self._end != self._start:
                    raise FrameError("connection closed in the middle of a frame size")
                return None
        (size,) = _SIZE.unpack_from(self._view, self._start)
        if size < 0 or size > self._max:
            raise FrameError(f"frame of {size} bytes exceeds {self._limit_name}={self._max}")
        if size > RECEIVE_BUFFER_SIZE - 4:
            self._budget.check_frame(size)
        return size

    async def read_body(self, size: int) -> memoryview:
        """The body of the frame whose size :meth:`next_size` returned.

        The caller owns :attr:`charged` once this returns and must :meth:`release` it.
        """
        frame = self._buffered_frame(size)
        if frame is not None:  # the whole request came with its size: no timer to set
            self._budget.on_wait(0.0)
            return frame
        self._waited, self._waiting_for_memory = 0.0, False
        try:
            with trio.move_on_after(self._read_timeout):
                frame = await self._receive(size)
        except BaseException:
            self.release()
            raise
        if frame is not None:
            self._budget.on_wait(self._waited)
            return frame
        self.release()
        waiting = "memory (queued.max.request.bytes) for it" if self._waiting_for_memory else "its bytes"
        raise FrameTimeout(
            f"frame of {size} bytes not received within socket.request.read.timeout.ms="
            f"{round(self._read_timeout * 1000)} (it was waiting for {waiting})",
            self._waiting_for_memory,
        )

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

    async def _receive(self, size: int) -> memoryview:
        if size > RECEIVE_BUFFER_SIZE - 4:
            self._consumed(4)
            return await self._read_large(size, trio.current_time())
        while (frame := self._buffered_frame(size)) is None:
            if not await self._fill():
                raise FrameError("connection closed in the middle of a frame")
        return frame

    async def _read_large(self, size: int, started: float) -> memoryview:
        """Read a frame larger than the receive buffer into a buffer of its own that grows,
        charged to the budget, as bytes arrive."""
        frame = _NO_BUFFER
        buffered = self._end - self._start  # body bytes that came with the prefix
        have = 0
        while have < size:
            if have == len(frame):
                ready = buffered + self._transport.pending()
                if not ready:  # charge for bytes that are there, never for a promise
                    await self._transport.wait_readable()
                    ready = self._transport.pending()
                target = min(size, max(FIRST_BUFFER, 2 * len(frame), have + ready))
                await self._charge(target - len(frame), started)
                grown = memoryview(bytearray(target))
                grown[:have] = frame[:have]
                frame = grown
                if buffered:
                    frame[:buffered] = self._view[self._start : self._end]
                    self._consumed(buffered)
                    have, buffered = buffered, 0
                    continue
            received = await self._transport.recv_into(frame[have:])
            if not received:
                raise FrameError("connection closed in the middle of a frame")
            have += received
        return frame

    async def _charge(self, step: int, started: float) -> None:
        self._waiting_for_memory = True
        self._waited += await self._budget.charge(step, started, self, self.charged)
        self._waiting_for_memory = False
        self.charged += step
