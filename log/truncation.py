"""A follower's side of divergence: where its epochs end, and cutting the log back to where it
agrees with its leader (Kafka's UnifiedLog.truncateTo, truncateFullyAndStartAt and
LeaderEpochFileCache.endOffsetFor).

A follower truncates before fetching from a new leader, to where OffsetForLeaderEpoch says its
last epoch ended, or restarts empty where its leader's log starts.  Everything that follows from
the data is made to agree with the new end -- producer state (rebuilt from snapshots plus
replay, as recovery does), undecided transactions, the high watermark's marks, the leader
epoch cache -- and the cut is durable before it returns: the recovery point is lowered first,
so a crash midway re-validates from the cut, then the data, the epoch cache and the checkpoint
are synced in that order.
"""

from __future__ import annotations

import logging

from log.availability import Availability
from log.checkpoint_writer import CheckpointWriter
from log.cleaning_claim import CleaningClaim
from log.clock import Clock
from log.flusher import Flusher
from log.high_watermark import HighWatermark
from log.leader_epochs import UNDEFINED_EPOCH, EpochEntry, end_offset_for
from log.local_log import LocalLog
from log.producer_snapshots import remove_snapshots
from log.sync_ledger import sync_directory
from log.transaction_state import TransactionState

logger = logging.getLogger(__name__)


class Truncator:
    """Leader epoch answers and truncation for one log."""

    def __init__(
        self,
        local: LocalLog,
        high_watermark: HighWatermark,
        transactions: TransactionState,
        checkpoint: CheckpointWriter,
        flusher: Flusher,
        cleaning: CleaningClaim,
        availability: Availability,
        clock: Clock,
    ) -> None:
        self._local = local
        self._high_watermark = high_watermark
        self._transactions = transactions
        self._checkpoint = checkpoint
        self._flusher = flusher
        self._cleaning = cleaning
        self._availability = availability
        self._clock = clock

    def end_offset_for_epoch(
        self, requested_epoch: int, current_leader_epoch: int = UNDEFINED_EPOCH
    ) -> tuple[int, int]:
        """(epoch, end offset) of ``requested_epoch`` as OffsetForLeaderEpoch answers it
        (Kafka's LeaderEpochFileCache.endOffsetFor, ``log.leader_epochs.end_offset_for``).

        ``current_leader_epoch`` is the epoch this broker leads the partition in: Kafka assigns
        it at the log end when the broker becomes leader, so it counts as the latest epoch even
        before anything was written in it; here it is added to the answer without being stored
        (the first append in it stores it).
        """
        epochs = self._local.epochs
        entries = epochs.epoch_entries()
        end = self._local.log_end_offset
        if current_leader_epoch > epochs.latest_epoch:
            entries.append(EpochEntry(current_leader_epoch, end))
        return end_offset_for(entries, requested_epoch, end)

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch holding an offset at or after ``offset`` (Kafka's truncateTo); True
        if anything was removed.

        Segments starting past ``offset`` are removed, the one holding it is cut at the batch
        holding it (a batch is never split, so the log end may end up below ``offset``) and its
        indexes trimmed; the epoch cache forgets the epochs starting at or after the new end.
        The cut is fsynced before it returns: a crash leaves the old tail or none, never a mix.
        Offsets at or past the log end change nothing; below the first segment the log restarts
        there (``truncate_fully_and_start_at``).
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {offset}")
        self._availability.check_online()
        local = self._local
        if offset >= local.log_end_offset:
            # A leader that assigned an epoch and wrote nothing in it may hold an entry at the end.
            self._truncate_epochs(local.log_end_offset)
            return False
        if offset < local.segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        logger.info("%s: truncating from offset %d to %d", local.directory, local.log_end_offset, offset)
        with self._cleaning.stopped():
            try:
                self._lower_recovery_point(offset)
                doomed = local.segments[local.index_for(offset) + 1 :]
                if doomed:
                    local.remove(doomed, self._clock())
                    sync_directory(local.directory)
                local.segments[-1].truncate_to(offset)
            except OSError as exc:
                raise self._availability.went_offline(exc) from exc
            self._after_truncation(min(local.log_start_offset, offset))
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop the whole log and start it empty at ``offset`` (Kafka's truncateFullyAndStartAt):
        for a follower whose leader's log starts past its end, or truncating below its start.
        Producer state and the leader epoch cache start empty; the log start becomes ``offset``."""
        if offset < 0:
            raise ValueError(f"cannot start a log at a negative offset {offset}")
        self._availability.check_online()
        local = self._local
        logger.info("%s: emptying the log and starting it at offset %d", local.directory, offset)
        with self._cleaning.stopped():
            try:
                # The old segments go first: a crash before the checkpoint below then finds no
                # data and starts at the new segment, never the old data above an old log start.
                local.restart_at(offset, self._clock())
                sync_directory(local.directory)
                local.log_start_offset = offset
                self._lower_recovery_point(offset)
                remove_snapshots(local.directory)
                local.epochs.clear()
            except OSError as exc:
                raise self._availability.went_offline(exc) from exc
            self._after_truncation(offset)

    def _lower_recovery_point(self, offset: int) -> None:
        """Before cutting files: recovery must re-validate from ``offset`` if we crash midway."""
        self._flusher.lower_to(offset)
        self._checkpoint.write(clean_shutdown=False)

    def _after_truncation(self, log_start_offset: int) -> None:
        """Make the state that follows the data agree with the new log end, then make it durable:
        the cut data first, then the epoch cache and the checkpoint."""
        local = self._local
        end = local.log_end_offset
        local.log_start_offset = log_start_offset
        self._high_watermark.after_truncation(end)
        self._checkpoint.first_dirty_offset = min(self._checkpoint.first_dirty_offset, end)
        self._transactions.forget_from(end)
        try:
            self._transactions.rebuild()
            self._flusher.flush()
            self._truncate_epochs(end)
            self._checkpoint.write(clean_shutdown=False)
        except OSError as exc:
            raise self._availability.went_offline(exc) from exc

    def _truncate_epochs(self, offset: int) -> None:
        """Forget the epochs starting at or after ``offset``, durably."""
        epochs = self._local.epochs
        try:
            epochs.truncate_from_end(offset)
            epochs.sync()
        except OSError as exc:
            raise self._availability.went_offline(exc, epochs.path) from exc
