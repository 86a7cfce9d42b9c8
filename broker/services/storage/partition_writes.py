"""Appends to partition logs and what must follow each, as Kafka's ReplicaManager.appendRecords.

Every append — a producer's batch, a coordinator's record, a transaction marker — is told to
replication (followers fetch it; acks=all waits for them), to durability (synced under the
flush policy, group-committed) and to long-polling fetches (woken once it is visible, which a
write that waits for a sync is only after its round). A request whose appends wait is answered
once they are synced and replicated: :class:`PendingWrites` waits for both and says which
partitions failed and why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import trio

from broker.services.replication.acks import AckWait, ack_wait, acknowledged
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.services.node_parts import LogsNode
    from log.appender import AppendInfo
    from log.partition_log import PartitionLog
    from wire.record_batch import BatchInfo

PartitionKey = tuple[str, int]


def leader_epoch_of(node: LogsNode, topic: str, index: int) -> int:
    """The leader epoch an append to the partition here carries: the replica's current one in
    a cluster, the topic's on a single node (0 for a topic it does not know). Every leader append
    must carry it (a producer's batch, a coordinator's record, a marker): followers truncate by
    these epochs, so a deposed leader's unreplicated tail stamped with an older one is found and
    cut (Kafka's ``Partition.appendRecordsToLeader`` stamps ``leaderEpoch``)."""
    replicas = node.replicas
    state = replicas.leader((topic, index)) if replicas is not None else None
    if state is not None:
        return state.leader_epoch
    info = node.topics.get(topic)
    return info.leader_epoch if info else 0


def announce_append(
    node: LogsNode, key: PartitionKey, partition_log: PartitionLog, records: int, wrote: bool = True
) -> bool:
    """Tell replication, durability and waiting fetches about an append of ``records`` records
    to ``partition_log`` (``wrote`` is False for a producer's retry already in the log); True if
    its acknowledgement must wait for a sync, and then its round wakes the fetchers."""
    replicated = node.replicas is not None and node.replicas.leader(key) is not None
    if node.replicas is not None:
        node.replicas.leader_appended(key, partition_log)
    must_sync = node.durability.after_append(key, partition_log, records, wrote=wrote)
    if must_sync:
        return True
    if replicated:  # consumers are woken once the high watermark covers it (``notify_readable``)
        node.appends.notify_replicated(key)
    else:
        node.appends.notify(key)
    return False


class Appended(NamedTuple):
    """A produced batch in the log: its offsets, and whether its answer waits for a sync."""

    info: AppendInfo
    must_sync: bool


def append_produced(
    node: LogsNode,
    key: PartitionKey,
    partition_log: PartitionLog,
    records: memoryview,
    batches: list[BatchInfo],
    leader_epoch: int,
    now_ms: int,
) -> Appended:
    """Append a validated batch (``broker.services.storage.batch_validation``) from a producer;
    ``LogError`` as the log raises it."""
    appended = partition_log.append(records, batches, leader_epoch, now_ms)
    count = sum(batch.record_count for batch in batches)
    must_sync = announce_append(node, key, partition_log, count, wrote=not appended.duplicate)
    if not appended.duplicate:
        node.metrics.appended(key[0], len(records), count)
    return Appended(appended, must_sync)


class PendingWrites:
    """What a request's appends still wait for before it may be answered: a sync round for
    ``must_sync``, and (acks=all in a cluster) the in-sync replicas for ``acks`` until
    ``deadline`` (trio time)."""

    def __init__(
        self, node: LogsNode, must_sync: list[PartitionKey], acks: list[AckWait], deadline: float
    ) -> None:
        self._node = node
        self._ticket = node.durability.ticket(must_sync) if must_sync else None
        self._acks = acks
        self._deadline = deadline

    def ready(self) -> bool:
        """True if :meth:`failures` would return without waiting (only a sync, already done)."""
        return self._ticket is not None and not self._acks and self._node.durability.done(self._ticket)

    async def failures(self) -> dict[PartitionKey, tuple[ErrorCode, str | None]]:
        """Wait for the sync and the replicas; the partitions whose append may not be
        acknowledged, with the error and message their client is told."""
        failed: dict[PartitionKey, tuple[ErrorCode, str | None]] = {}
        if self._ticket is not None:
            for key in await self._node.durability.wait(self._ticket):
                failed[key] = (ErrorCode.KAFKA_STORAGE_ERROR, "fsync failed")
        waits = [wait for wait in self._acks if wait.key not in failed]
        replicas = self._node.replicas
        if waits and replicas is not None:
            for key, code in (await acknowledged(replicas, waits, self._deadline)).items():
                failed[key] = (code, None)
        return failed


def replication_deadline(node: LogsNode, timeout_ms: int) -> float:
    """When acks=all stops waiting for the in-sync replicas: the request's ``timeout_ms`` from
    now (trio time); a single node has no replicas to wait for."""
    return trio.current_time() + max(0, timeout_ms) / 1000 if node.replicas is not None else 0.0


def replicated_ack(node: LogsNode, key: PartitionKey, acks: int) -> AckWait | None:
    """What an acks=all append just made to ``key`` waits for in a cluster, else None."""
    if node.replicas is None or acks != -1:
        return None
    partition_log = node.partitions.get(*key)
    return ack_wait(key, partition_log) if partition_log is not None else None
