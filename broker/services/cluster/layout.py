"""Where the cluster's metadata lives in etcd, and the JSON records stored there.

Everything sits under one root (``cluster.etcd.prefix``, default ``/odradek``) so several
clusters, or tests, can share an etcd.  Each fact is its own key so that every change is a small
transaction conditioned on the revision of exactly what it changes (``docs/CLUSTER.md``).

etcd is written only by brokers, yet a value that does not parse (a hand edit, a newer version)
must not take a broker down: :func:`decode` returns None and the caller logs it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

DEFAULT_ROOT = "/odradek"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One advertised listener of a broker."""

    listener: str
    host: str
    port: int
    security_protocol: str


@dataclass(frozen=True, slots=True)
class BrokerRecord:
    """A live broker: written under its lease, so it disappears when the broker does."""

    node_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None
    incarnation: str
    shutting_down: bool = False
    """In a controlled shutdown: alive, but neither to lead nor to join an ISR (Kafka's
    controlled-shutdown broker state)."""
    machine: str | None = None
    """``broker.machine``: the brokers of one machine never hold two replicas of a partition."""

    def endpoint(self, listener: str) -> Endpoint | None:
        return next((e for e in self.endpoints if e.listener == listener), None)


@dataclass(frozen=True, slots=True)
class ControllerRecord:
    node_id: int
    incarnation: str


@dataclass(frozen=True, slots=True)
class TopicRecord:
    name: str
    topic_id: bytes
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """A partition's replica set and leadership (Kafka's PartitionRecord/PartitionChangeRecord).

    ``leader`` is -1 while no eligible replica is alive.  ``partition_epoch`` grows with every
    change, ``leader_epoch`` only with a change of leader.
    """

    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    # An ongoing reassignment (Kafka's addingReplicas/removingReplicas): ``replicas`` is then
    # the target followed by the replicas being removed.
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)


class Layout:
    """Key names under one root."""

    def __init__(self, root: str = DEFAULT_ROOT) -> None:
        self.root = root.rstrip("/") + "/"
        self.cluster = self._key("cluster")
        self.controller = self._key("controller")
        self.producer_ids = self._key("producer_ids")
        self.brokers = self._key("brokers/")
        self.topics = self._key("topics/")
        self.partitions = self._key("partitions/")
        self.documents = self._key("shared/")

    def _key(self, name: str) -> bytes:
        return (self.root + name).encode()

    def broker(self, node_id: int) -> bytes:
        return self.brokers + str(node_id).encode()

    def topic(self, name: str) -> bytes:
        return self.topics + name.encode()

    def partition(self, topic: str, partition: int) -> bytes:
        return self.partitions + f"{topic}/{partition}".encode()

    def document(self, name: str) -> bytes:
        """A document every broker shares (ACLs, credentials, quotas, ...), named as a single
        node's file of it (``acls.json``)."""
        return self.documents + name.encode()

    def prefix(self) -> bytes:
        return self.root.encode()


def encode(record: object) -> bytes:
    """The JSON value of a record."""
    if isinstance(record, TopicRecord):
        body: dict[str, Any] = {
            "name": record.name,
            "id": str(uuid.UUID(bytes=record.topic_id)),
            "partitions": record.partitions,
            "configs": record.configs,
        }
    elif isinstance(record, BrokerRecord):
        body = {
            "id": record.node_id,
            "endpoints": [
                {
                    "listener": e.listener,
                    "host": e.host,
                    "port": e.port,
                    "security_protocol": e.security_protocol,
                }
                for e in record.endpoints
            ],
            "rack": record.rack,
            "incarnation": record.incarnation,
            "shutting_down": record.shutting_down,
            "machine": record.machine,
        }
    elif isinstance(record, PartitionRecord):
        body = {
            "leader": record.leader,
            "leader_epoch": record.leader_epoch,
            "partition_epoch": record.partition_epoch,
            "replicas": list(record.replicas),
            "isr": list(record.isr),
        }
        if record.reassigning:
            body |= {"adding": list(record.adding), "removing": list(record.removing)}
    elif isinstance(record, ControllerRecord):
        body = {"id": record.node_id, "incarnation": record.incarnation}
    else:
        raise TypeError(f"not a cluster record: {record!r}")
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _ints(values: Any) -> tuple[int, ...]:
    if not isinstance(values, list) or not all(isinstance(v, int) for v in values):
        raise ValueError(f"expected a list of node ids, got {values!r}")
    return tuple(values)


def encode_cluster_id(cluster_id: str) -> bytes:
    return json.dumps({"cluster_id": cluster_id}).encode()


def decode_cluster_id(value: bytes) -> str:
    return str(json.loads(value)["cluster_id"])


def decode_broker(value: bytes) -> BrokerRecord:
    body = json.loads(value)
    endpoints = tuple(
        Endpoint(str(e["listener"]), str(e["host"]), int(e["port"]), str(e["security_protocol"]))
        for e in body["endpoints"]
    )
    return BrokerRecord(
        int(body["id"]),
        endpoints,
        body.get("rack"),
        str(body["incarnation"]),
        bool(body.get("shutting_down", False)),
        body.get("machine"),
    )


def decode_controller(value: bytes) -> ControllerRecord:
    body = json.loads(value)
    return ControllerRecord(int(body["id"]), str(body["incarnation"]))


def decode_topic(value: bytes) -> TopicRecord:
    body = json.loads(value)
    configs = body.get("configs") or {}
    return TopicRecord(
        str(body["name"]),
        uuid.UUID(body["id"]).bytes,
        int(body["partitions"]),
        {str(k): str(v) for k, v in configs.items()},
    )


def decode_partition(value: bytes) -> PartitionRecord:
    body = json.loads(value)
    return PartitionRecord(
        int(body["leader"]),
        int(body["leader_epoch"]),
        int(body["partition_epoch"]),
        _ints(body["replicas"]),
        _ints(body["isr"]),
        _ints(body.get("adding", [])),
        _ints(body.get("removing", [])),
    )
