"""Which leading segments retention deletes: Kafka's UnifiedLog.deleteOldSegments, as pure rules.

Kafka applies three predicates in turn, each deleting a prefix of the segment list and
stopping at the first segment it keeps:

1. log start breached (always, whatever the cleanup policy): the *next* segment starts at or
   below the log start offset, so nothing in this one is readable any more;
2. size (``retention.bytes`` >= 0, policy includes ``delete``): while the partition size minus
   this segment's size is still at least ``retention.bytes``;
3. time (``retention.ms`` >= 0, policy includes ``delete``): while ``now`` minus the segment's
   largest timestamp exceeds ``retention.ms``.

A last segment that is empty is never deleted.  A non-empty last (active) segment may be: the
log then rolls a fresh empty segment first, so the active segment itself is never removed and
an idle partition still expires its data, as in Kafka.

The functions take plain facts (``SegmentFacts``) and a clock value, so they are tested without
files and without sleeping.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from log.config import LogConfig


class SegmentFacts(NamedTuple):
    """What retention needs to know about one segment."""

    base_offset: int
    size: int
    largest_timestamp: int


class Deletion(NamedTuple):
    """How many leading segments go, and the rule that removed the last of them."""

    count: int
    reason: str


def _prefix(segments: Sequence[SegmentFacts], start: int, deletable: Callable[[int], bool]) -> int:
    """Length of the run of deletable segments from ``start`` (an empty last one never counts)."""
    end = start
    while end < len(segments):
        last_and_empty = end == len(segments) - 1 and segments[end].size == 0
        if last_and_empty or not deletable(end):
            break
        end += 1
    return end - start


def segments_to_delete(
    segments: Sequence[SegmentFacts], log_start_offset: int, config: LogConfig, now_ms: int
) -> Deletion:
    """The leading segments retention removes now (``count`` may equal ``len(segments)``)."""
    count = _prefix(
        segments,
        0,
        lambda i: i + 1 < len(segments) and segments[i + 1].base_offset <= log_start_offset,
    )
    reason = "log start offset breached"
    if not config.delete:
        return Deletion(count, reason)
    retention_bytes = config.retention_bytes
    remaining = sum(s.size for s in segments[count:])
    if retention_bytes >= 0 and remaining >= retention_bytes:
        excess = remaining - retention_bytes

        def over_size(i: int) -> bool:
            nonlocal excess
            if excess - segments[i].size < 0:
                return False
            excess -= segments[i].size
            return True

        by_size = _prefix(segments, count, over_size)
        if by_size:
            count, reason = count + by_size, f"retention.bytes {retention_bytes} breached"
    retention_ms = config.retention_ms
    if retention_ms >= 0:
        by_time = _prefix(segments, count, lambda i: now_ms - segments[i].largest_timestamp > retention_ms)
        if by_time:
            count, reason = count + by_time, f"retention.ms {retention_ms} breached"
    return Deletion(count, reason)
