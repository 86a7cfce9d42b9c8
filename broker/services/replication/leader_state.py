"""What the leader of one partition knows about its followers (Kafka's ``Partition`` and
``Replica`` on the leader): each follower's log end offset and when it last caught up, the
ISR, and the high watermark, which is the smallest log end offset in the ISR.

Plain state with no I/O: the manager feeds it follower fetches and log ends, and proposes the
ISR changes it reports through the cluster layer.
"""

from __future__ import annotations

import trio

UNKNOWN_OFFSET = -1


class FollowerProgress:
    """One follower as its fetches show it (Kafka's ``Replica.updateFetchStateOrThrow``)."""

    __slots__ = ("log_end_offset", "last_caught_up_ms", "last_fetch_ms", "last_fetch_leader_end")

    def __init__(self, now_ms: int) -> None:
        self.log_end_offset = UNKNOWN_OFFSET  # until its first fetch under this leader
        # A follower starts as caught up now, so it is not dropped before it could fetch.
        self.last_caught_up_ms = now_ms
        self.last_fetch_ms = now_ms
        self.last_fetch_leader_end = UNKNOWN_OFFSET

    def fetched(self, fetch_offset: int, leader_end: int, now_ms: int) -> None:
        """A fetch from ``fetch_offset`` arrived while the leader's log ended at ``leader_end``.

        As Kafka: a fetch at the leader's end means caught up now; one at or past where the
        leader's log ended at the previous fetch means caught up as of that previous fetch.
        """
        if fetch_offset >= leader_end:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_end:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_end = leader_end
        self.last_fetch_ms = now_ms

    def caught_up(self, leader_end: int, now_ms: int, max_lag_ms: int) -> bool:
        """Kafka's ``isCaughtUp``: at the leader's end, or caught up within ``max_lag_ms``."""
        return self.log_end_offset == leader_end or now_ms - self.last_caught_up_ms <= max_lag_ms


class LeaderState:
    """One partition led by this broker, for one leader epoch."""

    def __init__(
        self,
        node_id: int,
        leader_epoch: int,
        partition_epoch: int,
        replicas: list[int],
        isr: list[int],
        epoch_start_offset: int,
        high_watermark: int,
        now_ms: int,
    ) -> None:
        self.node_id = node_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = list(replicas)
        self.isr = list(isr)
        # The ISR proposed to the cluster layer and not answered yet (one at a time, as Kafka's
        # in-flight AlterPartition): counted for the high watermark if it adds a replica.
        self.pending_isr: list[int] | None = None
        # The log end when this epoch began: a follower joins the ISR only once it holds all of
        # the previous epochs' data (Kafka's leaderEpochStartOffset).
        self.epoch_start_offset = epoch_start_offset
        self.high_watermark = high_watermark
        self.followers = {r: FollowerProgress(now_ms) for r in replicas if r != node_id}
        self._progressed = trio.Event()

    def update_assignment(
        self, partition_epoch: int, replicas: list[int], isr: list[int], now_ms: int
    ) -> None:
        """New metadata in the same leader epoch (an ISR change, a reassignment): keep what
        the remaining followers' fetches told, start new followers afresh."""
        self.partition_epoch, self.replicas, self.isr = partition_epoch, list(replicas), list(isr)
        self.followers = {
            r: self.followers.get(r) or FollowerProgress(now_ms) for r in replicas if r != self.node_id
        }

    def effective_min_isr(self, min_insync_replicas: int) -> int:
        """``min.insync.replicas`` capped at the replication factor, as Kafka 4 does (KIP-966):
        a topic with fewer replicas than the setting asks for still takes acks=all writes once
        all of them are in sync."""
        return min(min_insync_replicas, len(self.replicas))

    def follower_fetched(self, replica_id: int, fetch_offset: int, leader_end: int, now_ms: int) -> bool:
        """Record a fetch of ``replica_id``; whether it may move the high watermark or the ISR:
        False for a replica this partition does not have, and for an ISR member whose log end
        did not move. As Kafka's ``updateFollowerFetchState``, only a moved log end can raise
        the high watermark, only a follower outside the ISR can join it, and in-sync followers
        that stop moving are dropped by the periodic check; the fetches of every quiet
        partition are spared that work."""
        progress = self.followers.get(replica_id)
        if progress is None:
            return False
        moved = fetch_offset != progress.log_end_offset
        progress.fetched(fetch_offset, leader_end, now_ms)
        return moved or replica_id not in self.isr

    def maximal_isr(self) -> set[int]:
        """The ISR the high watermark must respect: the current one plus any replica a pending
        proposal adds (Kafka's maximal ISR), so an expansion cannot commit below it."""
        return set(self.isr) | set(self.pending_isr or ())

    def advance_high_watermark(self, leader_end: int) -> bool:
        """Move the high watermark to the smallest log end in the ISR; it never goes back.
        True if it moved."""
        ends = [leader_end]
        for replica in self.maximal_isr():
            progress = self.followers.get(replica)
            if progress is not None:
                ends.append(progress.log_end_offset)
        candidate = min(ends)
        if candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        return True

    def out_of_sync(self, leader_end: int, now_ms: int, max_lag_ms: int) -> list[int]:
        """The ISR followers that have not caught up to the leader's end within ``max_lag_ms``."""
        return [
            replica
            for replica in self.isr
            if replica in self.followers
            and not self.followers[replica].caught_up(leader_end, now_ms, max_lag_ms)
        ]

    def ready_to_join(self) -> list[int]:
        """Followers outside the ISR whose log end reached the high watermark and this epoch's
        start offset (Kafka's ``isFollowerInSync`` for an expansion)."""
        return [
            replica
            for replica, progress in self.followers.items()
            if replica not in self.isr
            and progress.log_end_offset >= self.high_watermark
            and progress.log_end_offset >= self.epoch_start_offset
        ]

    def signal(self) -> None:
        """Wake everything waiting on this partition's progress (acks=all producers)."""
        self._progressed.set()
        self._progressed = trio.Event()

    async def wait_progress(self) -> None:
        """Until the next ``signal`` (high watermark moved, ISR changed, role given up)."""
        await self._progressed.wait()
