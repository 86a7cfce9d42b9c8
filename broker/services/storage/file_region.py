"""How a byte range of a segment file leaves in a Fetch response: ``os.sendfile`` or one read.

Fetch responses carry record batches exactly as they sit on disk, so the kernel can copy
them from the page cache to the socket without Python ever touching them.  A region holds
its own duplicate of the file descriptor: the log may close or delete the segment
(retention, topic deletion) while the response is still being written to a slow client,
and the duplicate keeps the file's data reachable until the region is closed.

Small ranges are read instead (``FileSlice.read``): a region costs a ``dup``, a ``close``
and a ``sendfile`` of its own, and cuts the response into a send per piece, each its own TCP
segment that wakes the client.  A consumer keeping up with a producer fetches a batch or
two per partition at a time, so below ``INLINE_RESPONSE_BYTES`` per response one ``pread``
per range and a single send for the whole response cost a fraction of that; the bytes
are still copied whole, never parsed.
"""

from __future__ import annotations

import os

INLINE_RESPONSE_BYTES = 64 * 1024
"""Bytes of record batches per Fetch response that are read into memory rather than sent
from the file: small enough that a response's copy costs less than the system calls it saves,
and bounded per response, so memory stays bounded by the connections."""


class FileRegion:
    """``length`` bytes of an open file starting at ``offset``; owns a dup of the descriptor."""

    __slots__ = ("fd", "offset", "length")

    def __init__(self, fd: int, offset: int, length: int) -> None:
        self.fd = os.dup(fd)
        self.offset = offset
        self.length = length

    def __len__(self) -> int:
        return self.length

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
