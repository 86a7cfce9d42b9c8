"""The cluster metadata in etcd: a watched image and the conditional writes that change it.

Reads are local: every broker keeps a :class:`ClusterImage` current from one etcd watch over the
root, so Metadata requests never wait for etcd.  Writes are etcd transactions whose compare clause
pins the revision the writer read (``docs/CLUSTER.md``); after a write, :meth:`caught_up` waits
until the watch has delivered it, so a CreateTopics answered here is visible in the next Metadata
answered here.

When etcd cannot be reached the image stays as it was and the broker keeps serving what needs no
metadata change (as Kafka brokers do without a controller); the watch resumes from the last
revision it applied, so no change is missed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence

import trio

from broker.services.cluster.etcd_client import (
    Compare,
    Delete,
    EtcdClient,
    EtcdError,
    Put,
    WatchCompacted,
)
from broker.services.cluster.image import Change, ClusterImage
from broker.services.cluster.layout import (
    Layout,
    PartitionRecord,
    TopicRecord,
    encode,
    encode_cluster_id,
)

log = logging.getLogger(__name__)

# etcd refuses transactions with more than --max-txn-ops operations (128 by default): a topic's
# partition records are written in chunks below that.
TXN_OPS = 100
WATCH_RETRY_S = 1.0


class MetadataConflict(Exception):
    """A conditional write lost: what it was conditioned on changed meanwhile."""


class ClusterMetadata:
    """The image, its watch, and the writes."""

    def __init__(self, client: EtcdClient, layout: Layout) -> None:
        self.client = client
        self.layout = layout
        self.image = ClusterImage(layout)
        self._subscribers: list[Callable[[Change], None]] = []
        self._revision_changed = trio.Event()

    def subscribe(self, callback: Callable[[Change], None]) -> None:
        """``callback`` hears every change, in revision order, right after the image has it."""
        self._subscribers.append(callback)

    # ---------------------------------------------------------------------------------------
    # Reading: snapshot, then watch

    async def load(self) -> None:
        """Read every key under the root (start-up)."""
        kvs, revision = await self.client.get_prefix(self.layout.prefix())
        for kv in kvs:
            self._apply(kv.key, kv.value, kv.mod_revision)
        self.image.revision = max(self.image.revision, revision)
        self._advance()

    async def run_watch(self) -> None:
        """Apply every change after the snapshot until cancelled."""
        while True:
            try:
                async with self.client.watch_prefix(self.layout.prefix(), self.image.revision + 1) as stream:
                    async for events in stream:
                        for event in events:
                            value = None if event.kind == "DELETE" else event.kv.value
                            self._apply(event.kv.key, value, event.kv.mod_revision)
                        self._advance()
            except WatchCompacted:
                log.warning("cluster metadata watch fell behind etcd's compaction; reloading it whole")
                await self._reload()
            except EtcdError as exc:
                log.error(
                    "cluster metadata watch failed (%s); serving the last metadata seen and enforcing "
                    "the ACLs, credentials, quotas and configs last seen; retrying",
                    exc,
                )
                await trio.sleep(WATCH_RETRY_S)

    async def _reload(self) -> None:
        """Replace the image with a fresh snapshot, announcing keys that vanished meanwhile."""
        before = self._keys()
        kvs, revision = await self.client.get_prefix(self.layout.prefix())
        seen = set()
        for kv in kvs:
            seen.add(kv.key)
            self._apply(kv.key, kv.value, kv.mod_revision)
        for key in before - seen:
            self._apply(key, None, revision)
        self.image.revision = max(self.image.revision, revision)
        self._advance()

    def _keys(self) -> set[bytes]:
        layout, image = self.layout, self.image
        keys = {layout.broker(n) for n in image.brokers}
        keys |= {layout.topic(t) for t in image.topics}
        keys |= {layout.partition(t, p) for t, p in image.partitions}
        keys |= {layout.document(name) for name in image.documents}
        if image.controller is not None:
            keys.add(layout.controller)
        return keys

    def _apply(self, key: bytes, value: bytes | None, revision: int) -> None:
        change = self.image.apply(key, value, revision)
        if change is None:
            return
        for callback in self._subscribers:
            callback(change)

    def _advance(self) -> None:
        self._revision_changed.set()
        self._revision_changed = trio.Event()

    async def caught_up(self, revision: int) -> None:
        """Wait until the image holds everything up to ``revision`` (one's own write)."""
        await self.until(lambda image: image.revision >= revision)

    async def until(self, condition: Callable[[ClusterImage], bool]) -> None:
        """Wait until the image satisfies ``condition`` (asked again at each new revision)."""
        while not condition(self.image):
            await self._revision_changed.wait()

    # ---------------------------------------------------------------------------------------
    # Writing

    async def ensure_cluster_id(self, proposed: str) -> str:
        """The cluster's id: ``proposed`` if this broker is the first, else the one stored."""
        key = self.layout.cluster
        result = await self.client.txn(
            [Compare.create_revision(key, 0)], [Put(key, encode_cluster_id(proposed))], []
        )
        if not result.succeeded:
            stored = await self.client.get(key)
            if stored is not None:
                self.image.apply(key, stored.value, stored.mod_revision)
        else:
            self.image.cluster_id = proposed
        return self.image.cluster_id or proposed

    async def create_topic(self, topic: TopicRecord, assignments: Sequence[tuple[int, ...]]) -> None:
        """Create a topic whose partition ``p`` is placed on ``assignments[p]`` (first replica
        leads).  Raises MetadataConflict if the name is taken meanwhile."""
        key = self.layout.topic(topic.name)
        result = await self.client.txn([Compare.create_revision(key, 0)], [Put(key, encode(topic))], [])
        if not result.succeeded:
            raise MetadataConflict(f"topic {topic.name} exists")
        await self._put_partitions(topic, key, result.revision, 0, assignments)

    async def add_partitions(
        self, topic: TopicRecord, topic_revision: int, assignments: Sequence[tuple[int, ...]]
    ) -> None:
        """Grow ``topic`` (as read at ``topic_revision``) by partitions placed on ``assignments``."""
        key = self.layout.topic(topic.name)
        grown = TopicRecord(topic.name, topic.topic_id, topic.partitions + len(assignments), topic.configs)
        result = await self.client.txn(
            [Compare.mod_revision(key, topic_revision)], [Put(key, encode(grown))], []
        )
        if not result.succeeded:
            raise MetadataConflict(f"topic {topic.name} changed meanwhile")
        await self._put_partitions(grown, key, result.revision, topic.partitions, assignments)

    async def _put_partitions(
        self,
        topic: TopicRecord,
        key: bytes,
        revision: int,
        first: int,
        assignments: Sequence[tuple[int, ...]],
    ) -> None:
        """Write partition records in chunks, each conditioned on the topic being unchanged since
        ``revision`` (a deletion meanwhile stops the rest)."""
        revision_done = revision
        for start in range(0, len(assignments), TXN_OPS):
            puts = [
                Put(self.layout.partition(topic.name, first + start + i), encode(_new_partition(replicas)))
                for i, replicas in enumerate(assignments[start : start + TXN_OPS])
            ]
            result = await self.client.txn([Compare.mod_revision(key, revision)], puts, [])
            if not result.succeeded:
                raise MetadataConflict(f"topic {topic.name} changed while its partitions were written")
            revision_done = result.revision
        await self.caught_up(revision_done)

    async def set_topic_configs(
        self, topic: TopicRecord, topic_revision: int, configs: dict[str, str]
    ) -> None:
        key = self.layout.topic(topic.name)
        changed = TopicRecord(topic.name, topic.topic_id, topic.partitions, dict(configs))
        result = await self.client.txn(
            [Compare.mod_revision(key, topic_revision)], [Put(key, encode(changed))], []
        )
        if not result.succeeded:
            raise MetadataConflict(f"topic {topic.name} changed meanwhile")
        await self.caught_up(result.revision)

    async def delete_topic(self, topic: TopicRecord, topic_revision: int) -> None:
        """Delete the topic key (which makes every broker drop the topic), then its partitions."""
        key = self.layout.topic(topic.name)
        result = await self.client.txn([Compare.mod_revision(key, topic_revision)], [Delete(key)], [])
        if not result.succeeded:
            raise MetadataConflict(f"topic {topic.name} changed meanwhile")
        partition_keys = [self.layout.partition(topic.name, p) for p in range(topic.partitions)]
        for start in range(0, len(partition_keys), TXN_OPS):
            done = await self.client.txn([], [Delete(k) for k in partition_keys[start : start + TXN_OPS]], [])
            result = done
        await self.caught_up(result.revision)

    async def write_partition(
        self,
        topic: str,
        partition: int,
        record: PartitionRecord,
        seen_revision: int,
        guard: Sequence[Compare] = (),
    ) -> int | None:
        """Replace a partition's state read at ``seen_revision`` (and whatever ``guard`` also
        pins, such as the controller's own key); the new revision, or None if either changed."""
        key = self.layout.partition(topic, partition)
        result = await self.client.txn(
            [Compare.mod_revision(key, seen_revision), *guard], [Put(key, encode(record))], []
        )
        return result.revision if result.succeeded else None


async def take_producer_id_block(metadata: ClusterMetadata, size: int) -> int:
    """Reserve ``size`` producer ids cluster-wide (Kafka's AllocateProducerIds): the first of a
    block no other broker will ever hand out, retried until the conditional write wins."""
    client, key = metadata.client, metadata.layout.producer_ids
    while True:
        current = await client.get(key)
        first = int(json.loads(current.value)["next"]) if current is not None else 0
        compare = (
            Compare.mod_revision(key, current.mod_revision) if current else Compare.create_revision(key, 0)
        )
        result = await client.txn([compare], [Put(key, json.dumps({"next": first + size}).encode())], [])
        if result.succeeded:
            return first


def _new_partition(replicas: tuple[int, ...]) -> PartitionRecord:
    return PartitionRecord(replicas[0], 0, 0, replicas, replicas)
