"""Reading size-prefixed Kafka request frames from a socket with as few copies as possible.

Small requests (heartbeats, metadata) are parsed out of one reusable receive buffer, so a
burst of them costs one ``recv`` for many frames.  A large request (a Produce carrying a
megabyte of batches) gets a buffer of exactly its size that the kernel fills directly with
``recv_into``: its record batches are later written to disk from that same memory.
A frame whose declared size exceeds ``socket.request.max.bytes`` is never read: the
connection is closed, as Kafka does, so a hostile size cannot make the broker allocate.
"""

from __future__ import annotations

import struct

import trio

_SIZE = struct.Struct(">i")
RECEIVE_BUFFER_SIZE = 64 * 1024


class FrameError(Exception):
    """The peer violated framing (negative or oversized frame); close the connection."""


class FrameReader:
    """Yields request frames (as writable memoryviews) from a trio socket."""

    def __init__(self, sock: trio.socket.SocketType, max_frame_size: int) -> None:
        self._sock = sock
        self._max = max_frame_size
        self._buffer = bytearray(RECEIVE_BUFFER_SIZE)
        self._view = memoryview(self._buffer)
        self._start = 0
        self._end = 0

    async def _fill(self) -> bool:
        """Read more bytes into the shared buffer; False at end of stream."""
        if self._end == len(self._buffer):
            pending = self._end - self._start
            self._view[:pending] = self._view[self._start : self._end]
            self._start, self._end = 0, pending
        received = await self._sock.recv_into(self._view[self._end :])
        self._end += received
        return received > 0

    async def read_frame(self) -> memoryview | None:
        """The next frame's body, or None if the peer closed the connection cleanly."""
        while self._end - self._start < 4:
            if not await self._fill():
                if self._end != self._start:
                    raise FrameError("connection closed in the middle of a frame size")
                return None
        (size,) = _SIZE.unpack_from(self._buffer, self._start)
        if size < 0 or size > self._max:
            raise FrameError(f"frame of {size} bytes exceeds socket.request.max.bytes={self._max}")
        self._start += 4
        if size <= len(self._buffer) - 4:
            while self._end - self._start < size:
                if not await self._fill():
                    raise FrameError("connection closed in the middle of a frame")
            # Copy small frames out: the shared buffer is reused for the next read while the
            # handler may still hold slices of this one.
            frame = memoryview(bytearray(self._view[self._start : self._start + size]))
            self._start += size
            if self._start == self._end:
                self._start = self._end = 0
            return frame
        return await self._read_large(size)

    async def _read_large(self, size: int) -> memoryview:
        """Read a frame larger than the shared buffer into a buffer of its own."""
        frame = memoryview(bytearray(size))
        have = self._end - self._start
        frame[:have] = self._view[self._start : self._end]
        self._start = self._end = 0
        while have < size:
            received = await self._sock.recv_into(frame[have:])
            if not received:
                raise FrameError("connection closed in the middle of a frame")
            have += received
        return frame
