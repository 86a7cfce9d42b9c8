"""Keeping a partition's checkpoint file (``log.checkpoint``) in step with the live log.

The file records offsets three components move -- the log start and recovery point
(``log.local_log``), the replicated high watermark (``log.high_watermark``) and where the
cleaner stopped (``first_dirty_offset``, kept here) -- plus whether the log was shut down
cleanly.  It is rewritten only when what it would say changed, and whoever moves an offset
decides when (a truncation at once, the periodic ``PartitionLog.checkpoint`` otherwise).

"Clean shutdown" stays on disk after a clean open until the first append: the append then
rewrites it durably first (``mark_unclean``), so that a crash after it is recovered.
"""

from __future__ import annotations

import threading

from log.checkpoint import PartitionCheckpoint
from log.high_watermark import HighWatermark
from log.local_log import LocalLog


class CheckpointWriter:
    """What the checkpoint on disk says, and rewriting it (from the event loop and, for
    ``mark_unclean``, worker threads)."""

    def __init__(self, local: LocalLog, high_watermark: HighWatermark) -> None:
        self._local = local
        self._high_watermark = high_watermark
        self._lock = threading.Lock()
        self._checkpointed: PartitionCheckpoint | None = None
        self.clean_on_disk = False  # it says "clean shutdown": appends must say otherwise first
        self.first_dirty_offset = 0  # where the cleaner's next pass starts

    def start_from(
        self, checkpointed: PartitionCheckpoint | None, clean_on_disk: bool, first_dirty_offset: int
    ) -> None:
        """Take what a load left on disk (``log.loader``)."""
        self._checkpointed = checkpointed
        self.clean_on_disk = clean_on_disk
        self.first_dirty_offset = first_dirty_offset

    def write(self, clean_shutdown: bool) -> None:
        """Durably write the checkpoint if it would say something new."""
        with self._lock:
            local, replicated = self._local, self._high_watermark.replicated
            checkpoint = PartitionCheckpoint(
                local.log_start_offset,
                local.recovery_point,
                clean_shutdown,
                self.first_dirty_offset,
                -1 if replicated is None else replicated,
            )
            if checkpoint != self._checkpointed:
                checkpoint.write(local.directory, durable=True)
                self._checkpointed = checkpoint
                self.clean_on_disk = clean_shutdown

    def mark_unclean(self) -> None:
        """Durably mark the checkpoint unclean now, as the next append would (worker-thread safe).

        Why: the first append to a log after its creation or a clean start costs a durable
        checkpoint write (two fsyncs), so a request to thousands of such partitions would wait
        for thousands of them one after another on the event loop; the broker does them in
        worker threads, several at once, before appending. An OSError is raised to the caller
        and changes nothing: the append then tries again and takes the log offline if it fails.
        """
        if self.clean_on_disk:
            self.write(clean_shutdown=False)
