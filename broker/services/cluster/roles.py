"""Turning the cluster's metadata into this broker's local state, in revision order.

Every change the watch delivers is queued here and applied by one task, so topics appear before
their partitions and a partition's roles change in the order etcd recorded them:
- the local topic registry mirrors the cluster's topics (same ids, counts and configs);
- a partition placed on this broker gets a log, and this broker becomes its leader or a follower
  of its leader (``broker.services.replication``) at the leader epoch etcd holds;
- a partition no longer placed here (its topic deleted, its replicas moved) loses its log.

At start-up :meth:`reconcile_all` compares everything on disk with the snapshot: whatever changed
while the broker was down (topics deleted or created, leaders moved) is applied the same way.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from broker.services.cluster.image import Change
from broker.services.cluster.layout import PartitionRecord

if TYPE_CHECKING:
    from broker.services.cluster.cluster_metadata import ClusterMetadata
    from broker.services.node_parts import ClusterHost

log = logging.getLogger(__name__)


class Roles:
    """Applies topic and partition changes to the broker's logs and replica roles."""

    def __init__(self, broker: ClusterHost, metadata: ClusterMetadata) -> None:
        self._broker = broker
        self._metadata = metadata
        self._node_id = broker.node_id
        self._pending_topics: set[str] = set()
        self._pending_partitions: set[tuple[str, int]] = set()
        self._wake = trio.Event()
        self._idle = trio.Event()
        self._draining = False
        # The partition state last applied, so an unchanged record is not re-applied.
        self._applied: dict[tuple[str, int], PartitionRecord] = {}
        metadata.subscribe(self._on_change)

    def _on_change(self, change: Change) -> None:
        if change.kind == "topic":
            self._pending_topics.add(str(change.name[0]))
        elif change.kind == "partition":
            topic, partition = change.name
            self._pending_partitions.add((str(topic), int(partition)))
        else:
            return
        self._wake.set()

    async def reconcile_all(self) -> None:
        """Apply the whole image against the local state (start-up)."""
        self.requeue_all()
        await self._drain()

    def requeue_all(self) -> None:
        """Queue every topic and partition, known to the cluster or found on disk."""
        image = self._metadata.image
        self._pending_topics |= set(image.topics) | {t.name for t in self._broker.topics.all()}
        self._pending_partitions |= set(image.partitions) | {key for key, _ in self._broker.partitions.logs()}
        self._wake.set()

    def forget_applied(self) -> None:
        """Roles were dropped (fencing): the next pass applies every state again."""
        self._applied.clear()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await self._drain()

    async def settled(self) -> None:
        """Wait until every change seen so far has been applied (after one's own write)."""
        while self._pending_topics or self._pending_partitions or self._draining:
            await self._idle.wait()

    async def _drain(self) -> None:
        self._draining = True
        try:
            await self._apply_pending()
        finally:
            self._draining = False
            self._idle.set()
            self._idle = trio.Event()

    async def _apply_pending(self) -> None:
        while self._pending_topics or self._pending_partitions:
            topics, self._pending_topics = self._pending_topics, set()
            for name in sorted(topics):
                try:
                    await self._sync_topic(name)
                except Exception:
                    log.exception("applying the cluster state of topic %s failed", name)
            partitions, self._pending_partitions = self._pending_partitions, set()
            for key in sorted(partitions):
                try:
                    await self._sync_partition(*key)
                except Exception:
                    log.exception("applying the cluster state of %s-%d failed", *key)

    async def _sync_topic(self, name: str) -> None:
        broker, wanted = self._broker, self._metadata.image.topic(name)
        local = broker.topics.get(name)
        if local is not None and (wanted is None or wanted.topic_id != local.topic_id):
            hosted = [p for (topic, p), _ in broker.partitions.logs() if topic == name]
            for partition in hosted:
                await self._stop(name, partition)
            broker.topics.delete(name)
            await broker.partitions.delete_topic(local)
            log.info("topic %s deleted", name)
            local = None
        if wanted is None:
            return
        if local is None:
            broker.topics.create(name, wanted.partitions, wanted.configs, topic_id=wanted.topic_id)
            return
        if wanted.partitions > local.partitions:
            broker.topics.set_partitions(name, wanted.partitions)
        if wanted.configs != local.configs:
            broker.topics.set_configs(name, wanted.configs)
            broker.partitions.reconfigure(local)

    async def _sync_partition(self, topic: str, partition: int) -> None:
        broker, image = self._broker, self._metadata.image
        record = image.partition(topic, partition)
        info = broker.topics.get(topic)
        if record is None or info is None or self._node_id not in record.replicas:
            if broker.partitions.get(topic, partition) is not None or (topic, partition) in self._applied:
                await self._stop(topic, partition)
                await broker.partitions.delete_logs(topic, [partition])
            return
        if self._applied.get((topic, partition)) == record:
            return
        await broker.partitions.create_replicas(info, [partition])
        replicas = broker.replicas
        coordinator = broker.coordinator_over(topic)  # it follows its topic's leadership
        if record.leader == self._node_id:
            await replicas.become_leader(
                topic,
                partition,
                record.leader_epoch,
                record.partition_epoch,
                list(record.replicas),
                list(record.isr),
            )
            if coordinator is not None:
                coordinator.claim(partition)
        else:
            if coordinator is not None:
                coordinator.release(partition)
            await replicas.become_follower(topic, partition, record.leader_epoch, record.leader)
        self._applied[(topic, partition)] = record

    async def _stop(self, topic: str, partition: int) -> None:
        self._applied.pop((topic, partition), None)
        coordinator = self._broker.coordinator_over(topic)
        if coordinator is not None:
            coordinator.release(partition)
        await self._broker.replicas.stop_replica(topic, partition, delete=False)
