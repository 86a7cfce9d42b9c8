"""The log's side of compaction (the policy and the copying are ``log.cleaner``'s): claiming a
log for one cleaning pass, swapping cleaned segments in, and stopping a pass.

The cleaner reads and writes segments in a worker thread.  While a pass holds the log no segment
leaves it except through the cleaner's own swap -- retention waits for the next pass and
DeleteRecords only moves the log start -- so the worker never reads a closed descriptor; the
segments it reads are pinned so that the descriptor LRU (``log.open_files``) does not evict them.
A truncation stops a running pass (Kafka's abortAndPauseCleaning): the worker finishes its
current step, and everything it did after is discarded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from log.availability import Availability
from log.clock import Clock
from log.local_log import LocalLog
from log.segment import Segment
from log.swap import SWAP
from log.sync_ledger import sync_directory


class CleaningClaim:
    """Whether a cleaning pass holds one log, and the handshake with its worker thread."""

    def __init__(self, local: LocalLog, availability: Availability, clock: Clock) -> None:
        self._local = local
        self._availability = availability
        self._clock = clock
        self.active = False
        self._pinned: list[Segment] = []
        # Held by the cleaner's worker thread while it reads segments; ``closing`` asks it to stop.
        self.lock = threading.Lock()
        self.closing = threading.Event()
        # Set while a truncation stops the running pass (Kafka's abortAndPauseCleaning).
        self.aborted = threading.Event()

    def begin(self) -> bool:
        """Claim the log for one cleaning pass; False if it is offline, closed or already claimed."""
        if self.active or not self._availability.is_online:
            return False
        self.active = True
        # The cleaner's worker thread reads these: the main thread must not evict them meanwhile.
        self._pinned = list(self._local.segments)
        for segment in self._pinned:
            segment.pin()
        return True

    def replace_segments(self, old: Sequence[Segment], cleaned: Segment) -> bool:
        """Swap a fsynced ``.cleaned`` segment in for ``old`` (Kafka's replaceSegments).

        The rename to ``.swap`` is the commit point: after it a crash completes the swap at
        start-up (``log.swap``), before it the old segments stay.  Returns False (and discards
        ``cleaned``) if the log was closed meanwhile.
        """
        if not self._availability.is_online or self.aborted.is_set():
            cleaned.delete()
            return False
        local = self._local
        try:
            cleaned.rename(SWAP)
            sync_directory(local.directory)
            local.replace(old, cleaned)
            local.retire(old, self._clock())
            cleaned.release()
            cleaned.rename("")
            sync_directory(local.directory)
        except OSError as exc:
            raise self._availability.went_offline(exc) from exc
        return True

    def release(self, first_dirty_offset: int | None) -> int | None:
        """End the claim after a pass that found ``first_dirty_offset`` (None when it did not
        finish); returns it, or None if a truncation ran meanwhile and made it stale."""
        self.active = False
        for segment in self._pinned:
            segment.unpin()
        self._pinned = []
        if self.aborted.is_set():
            self.aborted.clear()
            return None
        return first_dirty_offset

    @contextmanager
    def stopped(self) -> Iterator[None]:
        """Stop a running cleaning pass for a truncation: its worker finishes its current step,
        and everything it did after is discarded (``replace_segments``, ``release``)."""
        if not self.active:
            yield
            return
        self.aborted.set()
        with self.lock:
            yield

    def stop_worker(self) -> None:
        """Ask a running cleaner thread to stop for good and wait until it no longer reads our
        files (the log is closing)."""
        self.closing.set()
        with self.lock:
            pass
