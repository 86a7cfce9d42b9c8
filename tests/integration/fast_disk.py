"""A scratch directory on tmpfs for tests that create tens of thousands of files.

Those tests are about descriptors and the event loop, not the disk: on this machine's journaling
file system every file creation costs a fraction of a millisecond, which for 150,000 files would
dominate the test.  Falls back to the given directory where there is no writable ``/dev/shm``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SHM = Path("/dev/shm")


@contextmanager
def fast_scratch_dir(fallback: Path) -> Iterator[Path]:
    if not (SHM.is_dir() and os.access(SHM, os.W_OK)):
        yield fallback
        return
    directory = Path(tempfile.mkdtemp(prefix="odradek-test-", dir=SHM))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
