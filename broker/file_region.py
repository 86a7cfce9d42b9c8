"""A byte range of a segment file that goes to the socket with ``os.sendfile``.

Fetch responses carry record batches exactly as they sit on disk, so the kernel can copy
them from the page cache to the socket without Python ever touching them.  The region
holds its own duplicate of the file descriptor: the log may close or delete the segment
(retention, topic deletion) while the response is still being written to a slow client,
and the duplicate keeps the file's data reachable until the region is closed.
"""

from __future__ import annotations

import os


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
