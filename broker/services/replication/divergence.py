"""The leader's side of KIP-320 truncation: does a follower's log diverge from ours?

A follower's Fetch (v12+) names the epoch of its last fetched batch. If, in the leader's log,
that epoch ends below the follower's fetch offset, or the leader never had that epoch, the
follower wrote a tail the leader does not have: the answer carries no records but a
``diverging_epoch`` (the leader's epoch and where it ends) for the follower to truncate to
(Kafka's ``Partition.readRecords``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from log.partition_log import PartitionLog
    from wire.messages import FetchResponseDivergingEpoch

UNDEFINED = -1


def diverging_epoch(
    partition_log: PartitionLog, leader_epoch: int, last_fetched_epoch: int, fetch_offset: int
) -> FetchResponseDivergingEpoch | ErrorCode | None:
    """``{"epoch", "end_offset"}`` when the follower's log diverges, OFFSET_OUT_OF_RANGE when
    the leader cannot tell where that epoch ends (or the offset is below its log start), None
    when the follower may read on."""
    if last_fetched_epoch < 0:
        return None
    epoch, end_offset = partition_log.end_offset_for_epoch(last_fetched_epoch, leader_epoch)
    if epoch == UNDEFINED or end_offset == UNDEFINED or fetch_offset < partition_log.log_start_offset:
        return ErrorCode.OFFSET_OUT_OF_RANGE
    if epoch < last_fetched_epoch or end_offset < fetch_offset:
        return {"epoch": epoch, "end_offset": end_offset}
    return None
