"""Reading one partition for a Fetch, as Kafka's ReplicaManager.readFromLog does.

What a read may return depends on who reads: a consumer reads up to the high watermark (the
last stable offset under read_committed, with the aborted transactions overlapping what it
gets); a follower replicating this broker's partition reads up to the log end, unless a
throttled reassignment copy is over its rate, and its fetch first records its position (which
may move the high watermark and the ISR) or tells it where its log diverged from ours. Nothing
is read from disk here: the answer holds a located ``FileSlice`` that the request turns into a
sendable region. Size limits follow KIP-74: only the first partition of a response with data
may exceed its budget, by one whole batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from broker.services.replication.divergence import diverging_epoch
from broker.services.storage.fetch_sessions import QuietMark
from log.errors import LogError
from log.partition_log import FileSlice
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.services.replication.manager import ReplicaManager
    from broker.services.storage.fetch_sessions import SessionPartition
    from log.partition_log import PartitionLog
    from wire.messages import FetchResponseDivergingEpoch

PartitionKey = tuple[str, int]


class FetchPosition(NamedTuple):
    """Where a fetch of one partition stands: its offset, and for a follower the epochs it
    names (``current_leader_epoch`` -1 when it names none)."""

    offset: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1


class PartitionRead(NamedTuple):
    """A partition's read: the located records (b"" for none), the aborted transactions
    overlapping them (read_committed only), the offsets the answer reports, and for a follower
    whose log diverged from ours, where."""

    records: FileSlice | bytes
    aborted: list[tuple[int, int]]
    high_watermark: int
    last_stable: int
    log_start: int
    diverging: FetchResponseDivergingEpoch | None = None


class ReadRefused(NamedTuple):
    """A partition that may not be read: the error, with the offsets the answer still reports
    (-1 where it reports none)."""

    code: ErrorCode
    high_watermark: int = -1
    log_start: int = -1


def follower_fetched(
    replicas: ReplicaManager, key: PartitionKey, follower: int, position: FetchPosition, log: PartitionLog
) -> FetchResponseDivergingEpoch | ErrorCode | None:
    """A follower's fetch of a partition this broker leads: its diverging epoch if its log
    parted from ours, an error for a replica this partition does not have (Kafka's
    UNKNOWN_LEADER_EPOCH when the fetch names an epoch, else NOT_LEADER_OR_FOLLOWER) or an
    offset out of range; else None, after recording its position (which may move the high
    watermark and the ISR). Nothing to record when this broker does not lead the partition."""
    state = replicas.leader(key)
    if state is None:
        return None
    if follower not in state.followers:
        named_epoch = position.current_leader_epoch >= 0
        return ErrorCode.UNKNOWN_LEADER_EPOCH if named_epoch else ErrorCode.NOT_LEADER_OR_FOLLOWER
    offset = position.offset
    diverging = diverging_epoch(log, state.leader_epoch, position.last_fetched_epoch, offset)
    if diverging is None and log.log_start_offset <= offset <= log.log_end_offset:
        replicas.follower_fetched(key, follower, offset, log)
    return diverging


def log_offsets(log: PartitionLog) -> tuple[int, int, int]:
    """What a quiet partition's answer depends on besides the follower's position, which the
    mark outlives only while the follower does not name it again (``FetchSession.update``)."""
    return (log.log_end_offset, log.high_watermark, log.log_start_offset)


def mark_quiet(
    replicas: ReplicaManager, key: PartitionKey, follower: int, log: PartitionLog, target: SessionPartition
) -> None:
    """Remember that a follower's read of ``target`` found nothing new, if it is at the log end
    (one behind it may have been held back by a throttle, which may lift) and in the ISR (one
    outside it is read, so that its fetch can bring it back in)."""
    state = replicas.leader(key)
    progress = state.followers.get(follower) if state is not None and follower in state.isr else None
    at_end = target.fetch_offset == log.log_end_offset
    target.quiet = QuietMark(log, state, progress, log_offsets(log)) if progress and at_end else None


def still_quiet(replicas: ReplicaManager, key: PartitionKey, follower: int, target: SessionPartition) -> bool:
    """Whether a follower's session partition is as it was when last found quiet (same log,
    online, same offsets, same leadership with this follower in its ISR); if so its fetch is
    recorded on the follower's progress, as a read would record it, and it needs no read.
    (``ReplicaManager.follower_fetched`` would do no more here: a follower in the ISR whose log
    end did not move changes neither the high watermark nor the ISR.)"""
    mark = target.quiet
    if mark is None:
        return False
    state, log = mark.state, mark.log
    if log_offsets(log) != mark.offsets or replicas.leader(key) is not state or not log.is_online:
        return False
    if follower not in state.isr or state.followers.get(follower) is not mark.progress:
        return False
    mark.progress.fetched(target.fetch_offset, mark.offsets[0], replicas.now_ms())
    return True


def read_partition(
    log: PartitionLog,
    key: PartitionKey,
    offset: int,
    budget: int,
    first: bool,
    *,
    read_committed: bool,
    follower: int = -1,
    replicas: ReplicaManager | None = None,
    diverging: FetchResponseDivergingEpoch | ErrorCode | None = None,
) -> PartitionRead | ReadRefused:
    """Locate what a fetch at ``offset`` gets of ``log`` within ``budget`` bytes (``first``:
    no earlier partition of the response has data, so one whole batch may exceed it).
    ``follower`` is the fetching replica's id (-1 for a consumer) and ``diverging`` what
    :func:`follower_fetched` found for it."""
    high_watermark = log.high_watermark
    last_stable = log.last_stable_offset
    log_start = log.log_start_offset
    if isinstance(diverging, ErrorCode) and diverging != ErrorCode.OFFSET_OUT_OF_RANGE:
        return ReadRefused(diverging)
    if diverging is ErrorCode.OFFSET_OUT_OF_RANGE or offset < log_start or offset > log.log_end_offset:
        return ReadRefused(ErrorCode.OFFSET_OUT_OF_RANGE, high_watermark, log_start)
    diverged = diverging if isinstance(diverging, dict) else None
    records: FileSlice | bytes = b""
    aborted: list[tuple[int, int]] = []
    upto: int | None
    if follower >= 0:  # followers replicate what consumers may not read yet
        readable_end = upto = log.log_end_offset
        if replicas is not None and replicas.leader_holds_back(key, follower):
            readable_end = offset  # a throttled reassignment copy over its rate: nothing now
    else:
        readable_end, upto = (last_stable if read_committed else high_watermark), None
    if offset < readable_end and (budget > 0 or first) and diverged is None:
        try:
            if read_committed:
                slices, found_aborted = log.read_committed(offset, max(budget, 1))
            else:
                slices, found_aborted = log.read_slices(offset, max(budget, 1), upto), []
        except LogError as exc:
            return ReadRefused(exc.error_code, high_watermark, log_start)
        # One read stays within one segment (one slice); the client fetches the rest next.
        if slices and (first or slices[0].length <= budget):
            records, aborted = slices[0], found_aborted
            if follower >= 0 and replicas is not None:
                replicas.leader_served(key, follower, records.length)
    return PartitionRead(records, aborted, high_watermark, last_stable, log_start, diverged)
