"""The cluster's metadata as this broker last saw it in etcd.

The image is fed every key under the root, first from a snapshot and then from a watch, in etcd's
revision order; it keeps each record with the ``mod_revision`` it was read at, because every
write is conditioned on that revision (a writer that read something stale fails instead of
overwriting a newer fact).  ``apply`` answers what changed, so the broker's reactions (local
logs, roles, the group coordinator) follow the same order on every broker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from broker.services.cluster.layout import (
    BrokerRecord,
    ControllerRecord,
    Layout,
    PartitionRecord,
    TopicRecord,
    decode_broker,
    decode_cluster_id,
    decode_controller,
    decode_partition,
    decode_topic,
)

log = logging.getLogger(__name__)

R = TypeVar("R")
K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Versioned(Generic[R]):
    """A record and the etcd revision it was last modified at."""

    record: R
    mod_revision: int


@dataclass(frozen=True, slots=True)
class Change:
    """One key that changed: its kind (``broker``, ``controller``, ``topic``, ``partition``,
    ``cluster``, ``document``) and its name parts (a node id, a topic name, a topic and
    partition, a document's name)."""

    kind: str
    name: tuple[str | int, ...]
    deleted: bool


class ClusterImage:
    """Brokers, controller, topics, partition states and shared documents, kept by ``apply``."""

    def __init__(self, layout: Layout) -> None:
        self._root = layout.prefix()
        self.revision = 0
        self.cluster_id: str | None = None
        self.brokers: dict[int, Versioned[BrokerRecord]] = {}
        self.controller: Versioned[ControllerRecord] | None = None
        self.topics: dict[str, Versioned[TopicRecord]] = {}
        self.partitions: dict[tuple[str, int], Versioned[PartitionRecord]] = {}
        self.documents: dict[str, Versioned[bytes]] = {}

    # ---------------------------------------------------------------------------------------
    # Reading

    def alive(self, node_id: int) -> bool:
        return node_id in self.brokers

    def eligible(self, node_id: int) -> bool:
        """Alive and not in a controlled shutdown: may lead, and may join an ISR."""
        found = self.brokers.get(node_id)
        return found is not None and not found.record.shutting_down

    def partition(self, topic: str, partition: int) -> PartitionRecord | None:
        found = self.partitions.get((topic, partition))
        return found.record if found is not None else None

    def topic(self, name: str) -> TopicRecord | None:
        found = self.topics.get(name)
        return found.record if found is not None else None

    @property
    def controller_id(self) -> int:
        return self.controller.record.node_id if self.controller is not None else -1

    # ---------------------------------------------------------------------------------------
    # Applying etcd's keys

    def apply(self, key: bytes, value: bytes | None, mod_revision: int) -> Change | None:
        """Apply a put (``value`` given) or a delete of ``key``; the change, or None for keys
        this version does not know (or a value that does not parse, logged)."""
        self.revision = max(self.revision, mod_revision)
        if not key.startswith(self._root):
            return None
        path = key[len(self._root) :].decode(errors="replace")
        kind, _, rest = path.partition("/")
        try:
            return self._apply(kind, rest, value, mod_revision)
        except (ValueError, KeyError, TypeError) as exc:
            log.error("ignoring unreadable cluster metadata at %s: %s", key.decode(errors="replace"), exc)
            return None

    def _apply(self, kind: str, rest: str, value: bytes | None, revision: int) -> Change | None:
        deleted = value is None
        if kind == "cluster" and not rest:
            self.cluster_id = None if value is None else decode_cluster_id(value)
            return Change("cluster", (), deleted)
        if kind == "controller" and not rest:
            self.controller = None if value is None else Versioned(decode_controller(value), revision)
            return Change("controller", (), deleted)
        if kind == "brokers":
            node_id = int(rest)
            _store(self.brokers, node_id, value, decode_broker, revision)
            return Change("broker", (node_id,), deleted)
        if kind == "topics":
            _store(self.topics, rest, value, decode_topic, revision)
            return Change("topic", (rest,), deleted)
        if kind == "partitions":
            topic, _, index = rest.rpartition("/")
            key = (topic, int(index))
            _store(self.partitions, key, value, decode_partition, revision)
            return Change("partition", key, deleted)
        if kind == "shared" and rest:
            _store(self.documents, rest, value, bytes, revision)
            return Change("document", (rest,), deleted)
        return None


def _store(
    table: dict[K, Versioned[R]], key: K, value: bytes | None, decode: Callable[[bytes], R], revision: int
) -> None:
    """Keep the decoded ``value`` under ``key`` at ``revision``, or drop ``key`` (a delete)."""
    if value is None:
        table.pop(key, None)
    else:
        table[key] = Versioned(decode(value), revision)
