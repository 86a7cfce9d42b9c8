"""Does a log directory take writes again?  Asked before an offline partition is reopened.

A partition goes offline on the first failed write.  Reopening it means recovering its active
segment (reading it back, rebuilding indexes), which is wasted work -- and churn of descriptors
-- while the disk is still full or failing.  One small, fsynced write tells cheaply whether it
is worth trying; the recovery itself then proves the rest.
"""

from __future__ import annotations

import errno
import os

# One page: the smallest write that makes the file system allocate a block.
_PROBE_BYTES = 4096
# Ends in ``.tmp``, so a probe file left by a crash is removed when the log is next opened.
_PROBE_NAME = "storage-probe.tmp"


def probe_writable(directory: str) -> None:
    """Write, fsync and remove a one-page file in ``directory``; raise OSError if any step fails."""
    path = os.path.join(directory, _PROBE_NAME)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        if os.write(fd, bytes(_PROBE_BYTES)) < _PROBE_BYTES:
            raise OSError(errno.ENOSPC, "short write", path)  # the file system is nearly full
        os.fsync(fd)
    finally:
        os.close(fd)
        os.unlink(path)
