"""Making a partition log durable: full flushes that move the recovery point, and data syncs
that make appends survive a power cut without it (Kafka's UnifiedLog.flush and the
``flush.messages`` path).

Both run in worker threads (or, for data syncs, the broker's sync process, ``broker.services.storage.sync_worker``)
while the event loop keeps appending: they fsync what was written before they began and leave
the rest to the next one, and take the log's lock only so that segment removal and close
cannot close a descriptor under them.  A truncation meanwhile must not let them claim a log end
sampled before the cut, hence the count of truncations each compares before and after.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from log.availability import Availability
from log.errors import KafkaStorageError
from log.local_log import LocalLog
from log.segment import Segment
from log.sync_ledger import SyncReceipt, confirm, receipt


@dataclass
class DataSync:
    """An fdatasync of a log's unsynced data, begun by ``PartitionLog.begin_data_sync``: the
    descriptors to sync (duplicates, whoever syncs them; ``close`` them after) and what
    ``end_data_sync`` records once they are."""

    target: int  # the log end when it began: what the sync makes durable
    truncations: int  # a truncation since means the target may no longer exist
    descriptors: list[int]
    receipts: list[SyncReceipt]

    def close(self) -> None:
        for fd in self.descriptors:
            os.close(fd)
        self.descriptors = []


class Flusher:
    """The fsyncs of one log, and how far they reached."""

    def __init__(self, local: LocalLog, availability: Availability, fsyncs: int) -> None:
        self._local = local
        self._availability = availability
        self._data_synced_to = 0  # offsets below this are fdatasynced (``sync_data``)
        self._truncations = 0
        # Flushes that found something to fsync (group commit makes this small), the open's included.
        self.fsyncs = fsyncs

    def flush(self) -> None:
        """fsync everything written so far and advance the recovery point (worker-thread safe).

        Returns at once when nothing was written since the last flush.  Concurrent appends are
        fine: whatever they add after the end offset sampled here is left for the next flush.
        """
        local = self._local
        target, truncations = local.log_end_offset, self._truncations
        if target == local.recovery_point and not any(s.dirty for s in local.segments):
            return
        if not self._each_segment_locked(Segment.flush, local.epochs.sync):
            return
        self.fsyncs += 1
        if truncations == self._truncations:
            local.recovery_point = max(local.recovery_point, target)

    def sync_data(self) -> None:
        """fdatasync every segment's unsynced data here: appends made before this call survive a
        power cut (worker-thread safe).  The broker syncs the same way in its sync process
        (``begin_data_sync``)."""
        started = self.begin_data_sync()
        if started is None:
            return
        error: OSError | None = None
        try:
            for fd in started.descriptors:
                os.fdatasync(fd)
        except OSError as exc:
            error = exc
        finally:
            started.close()
        self.end_data_sync(started, error)

    def begin_data_sync(self) -> DataSync | None:
        """Descriptors of every segment with data not yet fdatasynced, for a sync made anywhere
        (``end_data_sync`` records it); None if the log is closed.  The ack path of
        ``flush.messages``: indexes are not synced and the recovery point does not move, so
        recovery rebuilds indexes past it; a later ``flush`` (see ``synced_past_recovery_point``)
        moves it.  A log that is offline, or cannot give its descriptors and goes offline,
        raises: an ack waiting for this sync must not succeed.
        """
        target, truncations = self._local.log_end_offset, self._truncations
        descriptors: list[int] = []

        def collect(segment: Segment) -> None:
            fd = segment.data_to_sync()
            if fd is not None:
                descriptors.append(fd)

        try:
            if not self._each_segment_locked(collect):
                return None
        except KafkaStorageError:
            DataSync(target, truncations, descriptors, []).close()
            raise
        return DataSync(target, truncations, descriptors, [receipt(fd) for fd in descriptors])

    def end_data_sync(self, started: DataSync, error: OSError | None) -> None:
        """The sync of ``started``'s descriptors completed, or failed with ``error`` (then the
        log goes offline and this raises ``KafkaStorageError``)."""
        if error is not None:
            raise self._availability.went_offline(error) from error
        for synced in started.receipts:
            confirm(synced)
        self.fsyncs += 1
        if started.truncations == self._truncations:
            self._data_synced_to = max(self._data_synced_to, started.target)

    def _each_segment_locked(
        self, action: Callable[[Segment], None], then: Callable[[], None] | None = None
    ) -> bool:
        """Apply ``action`` (a sync, or taking what to sync) to every segment, then call
        ``then``, under the lock; False if the log is closed.  A log that is offline, or fails
        and goes offline, raises: an ack waiting for this sync must not succeed.

        ``flush`` also makes the leader epoch cache durable: the recovery point it moves is
        where recovery stops assigning epochs from batch headers."""
        availability = self._availability
        with self._local.lock:
            if availability.closed:
                return False
            availability.check_online()
            try:
                for segment in list(self._local.segments):
                    action(segment)
                if then is not None:
                    then()
            except OSError as exc:
                raise availability.went_offline(exc) from exc
            return True

    @property
    def synced_offset(self) -> int:
        """Every offset below this has its data fdatasynced (indexes maybe not)."""
        return max(self._data_synced_to, self._local.recovery_point)

    @property
    def synced_past_recovery_point(self) -> bool:
        """Data was fdatasynced beyond the recovery point: a full ``flush`` would move it."""
        return self._data_synced_to > self._local.recovery_point

    def lower_to(self, offset: int) -> None:
        """A truncation is about to cut the files at ``offset``: recovery must re-validate from
        there if we crash midway, and syncs under way must not claim more."""
        self._truncations += 1
        self._local.recovery_point = min(self._local.recovery_point, offset)
        self._data_synced_to = min(self._data_synced_to, offset)
