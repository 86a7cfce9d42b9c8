"""A broker-wide, bounded set of open file descriptors, reopened on demand (an LRU).

Why: a partition has at least three files (``.log``, ``.index``, ``.timeindex``) per segment.
Keeping all of them open ties the number of partitions a broker can hold to ``ulimit -n``:
50,000 partitions would need 150,000 descriptors, and a broker that cannot open its files does
not start.  Instead every segment file is a ``LazyFile``: opened on first use, closed again
when it is the least recently used one and the broker holds ``capacity`` descriptors, and
reopened (by path, without ``O_CREAT``) the next time it is needed.  Memory maps hold no
descriptor, and ``os.dup`` copies (Fetch's ``FileRegion``) are owned by their holder.

Cost on the hot path: a hit is one lock and one ``OrderedDict.move_to_end`` -- no syscall.

Threads: the broker's event loop runs on the main thread, and only the main thread closes a
descriptor to make room, because it alone knows no other code of its own is between fetching
a descriptor and using it.  Worker threads (fsync, the log cleaner, partition creation) use
files the main thread may also use, so they ``pin`` what they use: a pinned file is never
evicted.  A file first opened by a worker thread outside a pin stays pinned until the main
thread uses it or the worker ``release``s it, so a half-built segment never loses its descriptor
under a worker; workers release what they built before handing it over.
Workers never evict, so their opens may briefly exceed ``capacity``; the main thread trims the
excess on its next open.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from log.errors import KafkaStorageError

logger = logging.getLogger(__name__)

# Below this many descriptors for files the broker could not even keep one partition's active
# segment and a few sockets' worth of reads open at once.
MIN_CAPACITY = 64


def default_capacity() -> int:
    """Half of the soft ``RLIMIT_NOFILE`` (the rest is for sockets and the odd temporary file)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 20
    return max(MIN_CAPACITY, soft // 2)


class LazyFile:
    """A file known by path whose descriptor comes and goes; ``fd`` opens it when needed.

    ``rename`` keeps the path current so a reopen after eviction finds the file under its new
    name.  Once ``close``d, a ``LazyFile`` is never reopened: using it raises ``EBADF`` like a
    closed descriptor would.
    """

    __slots__ = ("path", "_files", "_fd", "_pins", "_worker_opened", "_closed")

    def __init__(self, path: str, files: OpenFiles | None = None) -> None:
        self.path = path
        self._files = OPEN_FILES if files is None else files
        self._fd = -1
        self._pins = 0
        self._worker_opened = False
        self._closed = False

    @property
    def fd(self) -> int:
        """The open descriptor (valid until this thread next opens another file)."""
        return self._files.use(self)

    @property
    def is_open(self) -> bool:
        return self._fd >= 0

    def read(self, start: int, end: int) -> bytes:
        """The bytes of ``[start, end)``; a short read means the file shrank under us."""
        data = os.pread(self.fd, end - start, start)
        if len(data) != end - start:
            raise KafkaStorageError(f"{self.path}: short read at byte {start}")
        return data

    def create(self) -> int:
        """Create the file if it is missing and open it (only new files are created)."""
        return self._files.use(self, os.O_CREAT)

    def stat(self) -> os.stat_result:
        """``fstat`` when open, else ``stat`` by path: never opens the file just to look at it."""
        return self._files.stat(self)

    def pin(self) -> None:
        """Never evict this file until ``unpin`` (pins nest)."""
        self._files.pin(self)

    def unpin(self) -> None:
        self._files.unpin(self)

    @contextmanager
    def pinned(self) -> Iterator[int]:
        """The descriptor, guaranteed to stay open until the block ends (for worker threads)."""
        self.pin()
        try:
            yield self.fd
        finally:
            self.unpin()

    def release(self) -> None:
        """Close the descriptor now; the file reopens on its next use.  Only for a file no other
        thread uses yet (a worker hands over what it built this way, holding no descriptor)."""
        self._files.release(self)

    def close(self) -> None:
        self._files.close(self)

    def __repr__(self) -> str:
        return f"LazyFile({self.path!r}, fd={self._fd})"


class OpenFiles:
    """The LRU of open ``LazyFile``s; ``capacity`` bounds the descriptors it keeps."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = default_capacity() if capacity is None else max(1, capacity)
        self._lock = threading.Lock()
        self._owner = threading.main_thread().ident
        # Open files that are not pinned, least recently used first.  Pinned ones are kept out
        # so that making room is one ``popitem``, however many files are pinned.
        self._lru: OrderedDict[LazyFile, None] = OrderedDict()
        self._open = 0
        self.opens = 0  # descriptors opened so far (reopens after eviction included)

    @property
    def open_count(self) -> int:
        """Descriptors currently held (pinned included)."""
        return self._open

    def use(self, file: LazyFile, extra_flags: int = 0) -> int:
        """``file``'s descriptor: on a hit one dict move, else an open (after making room)."""
        with self._lock:
            fd = file._fd
            if fd >= 0:
                if not file._pins:
                    self._lru.move_to_end(file)
                elif file._worker_opened and threading.get_ident() == self._owner:
                    self._adopt_locked(file)
                return fd
            return self._open_locked(file, extra_flags)

    def _open_locked(self, file: LazyFile, extra_flags: int) -> int:
        if file._closed:
            raise OSError(errno.EBADF, "file was closed", file.path)
        on_owner = threading.get_ident() == self._owner
        if on_owner:
            self._trim(self.capacity - 1)
        try:
            fd = os.open(file.path, os.O_RDWR | os.O_CLOEXEC | extra_flags, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE) or not on_owner or not self._lru:
                raise
            # Sockets took descriptors meanwhile: give back half of ours and try once more.
            logger.warning("out of file descriptors with %d files open; closing half", self._open)
            self._trim(self._open // 2)
            fd = os.open(file.path, os.O_RDWR | os.O_CLOEXEC | extra_flags, 0o644)
        file._fd = fd
        self._open += 1
        self.opens += 1
        if not file._pins:
            if on_owner:
                self._lru[file] = None
            else:
                file._pins, file._worker_opened = 1, True
        return fd

    def _trim(self, keep: int) -> None:
        """Close least recently used unpinned files until at most ``keep`` are open."""
        while self._open > keep and self._lru:
            victim, _ = self._lru.popitem(last=False)
            self._release_fd(victim)

    def _release_fd(self, file: LazyFile) -> None:
        fd, file._fd = file._fd, -1
        self._open -= 1
        try:
            os.close(fd)
        except OSError as exc:  # the data was written with pwrite already; nothing to lose
            logger.error("closing %s failed: %s", file.path, exc)

    def stat(self, file: LazyFile) -> os.stat_result:
        with self._lock:  # so a worker's fstat never races the main thread's eviction
            if file._fd >= 0:
                return os.fstat(file._fd)
        return os.stat(file.path)

    def pin(self, file: LazyFile) -> None:
        with self._lock:
            if not file._pins and file._fd >= 0:
                del self._lru[file]
            file._pins += 1

    def unpin(self, file: LazyFile) -> None:
        with self._lock:
            if file._pins:
                file._pins -= 1
                if not file._pins and file._fd >= 0:
                    self._lru[file] = None

    def release(self, file: LazyFile) -> None:
        with self._lock:
            self._lru.pop(file, None)
            if file._fd >= 0:
                self._release_fd(file)
            file._pins, file._worker_opened = 0, False

    def _adopt_locked(self, file: LazyFile) -> None:
        file._worker_opened = False
        file._pins -= 1
        if not file._pins and file._fd >= 0:
            self._lru[file] = None

    def close(self, file: LazyFile) -> None:
        """Close for good (segment closed or deleted); the descriptor goes whatever its pins
        (a pinned close only happens on paths whose locks already exclude the workers)."""
        file._closed = True
        self.release(file)

    def reconfigure(self, capacity: int) -> None:
        """Set a new bound (the broker's config); the excess is closed on the next open."""
        with self._lock:
            self.capacity = max(1, capacity)


# The broker-wide instance every segment uses; the broker sets its capacity from
# ``log.open.files.max`` at start-up.
OPEN_FILES = OpenFiles()
