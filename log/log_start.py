"""Moving a partition log's start forward: DeleteRecords and retention (Kafka's
maybeIncrementLogStartOffset and deleteOldSegments; the retention rules are ``log.retention``'s).

The new log start is checkpointed before any file is touched, and the segments wholly below it
then leave the log (``LocalLog.remove``: renamed ``*.deleted``, their files deleted later).
While a cleaning pass holds the log, retention waits for the next pass and DeleteRecords only
moves the log start; the pass's end removes what was deferred.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from log.availability import Availability
from log.checkpoint_writer import CheckpointWriter
from log.cleaning_claim import CleaningClaim
from log.clock import Clock
from log.errors import OffsetOutOfRangeError
from log.high_watermark import HighWatermark
from log.local_log import LocalLog
from log.retention import SegmentFacts, segments_to_delete
from log.segment import Segment

logger = logging.getLogger(__name__)


class LogStartMover:
    """DeleteRecords and retention for one log."""

    def __init__(
        self,
        local: LocalLog,
        high_watermark: HighWatermark,
        checkpoint: CheckpointWriter,
        cleaning: CleaningClaim,
        roll: Callable[[int, int], Segment],
        availability: Availability,
        clock: Clock,
    ) -> None:
        self._local = local
        self._high_watermark = high_watermark
        self._checkpoint = checkpoint
        self._cleaning = cleaning
        self._roll = roll  # ``LogAppender.roll``: retention may empty the log of every segment
        self._availability = availability
        self._clock = clock

    def delete_records(self, before_offset: int) -> int:
        """Move the log start to ``before_offset`` (DeleteRecords); return the new log start.

        Durable at once (checkpointed); segments wholly below the new start are deleted.
        """
        self._availability.check_online()
        local = self._local
        if not 0 <= before_offset <= local.log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot delete records before {before_offset}: the log ends at {local.log_end_offset}"
            )
        if before_offset > local.log_start_offset:
            local.log_start_offset = before_offset
            try:
                self._checkpoint.write(clean_shutdown=False)
                self.remove_segments_below_log_start()
                local.epochs.truncate_from_start(before_offset)
            except OSError as exc:
                raise self._availability.went_offline(exc) from exc
        return local.log_start_offset

    def remove_segments_below_log_start(self) -> None:
        """Remove leading segments that hold only offsets below the log start (never the active).

        Deferred while the cleaner works; the end of its pass calls this again.
        """
        segments, log_start = self._local.segments, self._local.log_start_offset
        count = 0
        while count + 1 < len(segments) and segments[count + 1].base_offset <= log_start:
            count += 1
        if count and not self._cleaning.active:
            self._local.remove(segments[:count], self._clock())

    def delete_old_segments(self, now_ms: int) -> int:
        """Retention (Kafka's deleteOldSegments, rules in ``log.retention``): returns segments removed.

        Moves the log start to the first kept segment (checkpointed before any file is touched).
        Skipped while the cleaner works on this log, and for logs that went offline.
        """
        availability, local = self._availability, self._local
        if self._cleaning.active or not availability.is_online:
            return 0
        facts = [SegmentFacts(s.base_offset, s.size, s.largest_timestamp) for s in local.segments]
        deletion = segments_to_delete(facts, local.log_start_offset, local.config, now_ms)
        count = deletion.count
        high_watermark = self._high_watermark.offset
        if high_watermark < local.log_end_offset:  # keep what consumers cannot see yet, as Kafka does
            count = min(count, local.index_for(high_watermark))
        if not count:
            return 0
        try:
            if count == len(local.segments):
                self._roll(now_ms, local.log_end_offset)
            doomed = local.segments[:count]
            local.log_start_offset = max(local.log_start_offset, local.segments[count].base_offset)
            self._checkpoint.write(clean_shutdown=False)
            local.remove(doomed, now_ms)
            local.epochs.truncate_from_start(local.log_start_offset)
        except OSError as exc:
            raise availability.went_offline(exc) from exc
        logger.info(
            "%s: deleted %d segment(s) (%s); log start offset is now %d",
            local.directory,
            count,
            deletion.reason,
            local.log_start_offset,
        )
        return count
