"""Where a follower cuts its log so that no divergent tail survives a leader change.

Kafka's ``AbstractFetcherThread.getOffsetTruncationState`` (KIP-101, KIP-279): the leader tells
the follower where an epoch ends in the leader's log (from OffsetForLeaderEpoch, or a Fetch's
``diverging_epoch``); the follower keeps the shorter of that and where the same epoch ends in
its own log. If the follower does not have the leader's epoch at all, it cuts back to the end
of its own largest smaller epoch and asks again.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

UNDEFINED_EPOCH = -1


class EpochEnds(Protocol):
    """What truncation needs from the follower's own leader-epoch cache."""

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]: ...


class Truncation(NamedTuple):
    """Cut the log at ``offset``; ``complete`` False means ask the leader again afterwards."""

    offset: int
    complete: bool


def truncation_point(
    leader_epoch: int,
    leader_end_offset: int,
    own_epochs: EpochEnds,
    log_end_offset: int,
    high_watermark: int,
) -> Truncation:
    """Where to truncate given the leader's (epoch, end offset) for the follower's epoch."""
    if leader_epoch == UNDEFINED_EPOCH or leader_end_offset < 0:
        # The leader knows nothing of that epoch: only what was committed is safe to keep.
        return Truncation(min(high_watermark, log_end_offset), True)
    own_epoch, own_end = own_epochs.end_offset_for(leader_epoch, log_end_offset)
    if own_epoch == UNDEFINED_EPOCH or own_end < 0:
        return Truncation(min(leader_end_offset, log_end_offset), True)
    if own_epoch != leader_epoch:
        return Truncation(min(own_end, log_end_offset), False)
    return Truncation(min(leader_end_offset, own_end, log_end_offset), True)
