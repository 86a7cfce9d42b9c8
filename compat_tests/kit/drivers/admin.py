"""Admin clients behind one interface (:class:`Admin`): topics, partitions, configs, records, cluster.

Implemented by the confluent-kafka and kafka-python modules of this package. The integration
tests parametrize over :data:`compat_tests.kit.drivers.catalog.ADMINS`; the compatibility drivers of
those clients do their admin calls through the same classes, so each call is written once.
Failures raise :class:`~compat_tests.kit.drivers.base.ClientError` whose ``error`` is Kafka's name
for the broker's error code.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Self

import pytest

from compat_tests.kit.drivers.base import ClientError, Driver, GroupDescription, GroupListing, TopicPartition
from compat_tests.kit.raw_protocol import advertised
from compat_tests.topic_metadata import PROPAGATION_TIMEOUT_S, wait_until_every_broker_knows

Replicas = int | list[list[int]]
"""A new topic's replication: a replication factor, or each partition's replicas by broker id."""


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """One DescribeConfigs entry: its value and Kafka's name for its source.

    ``read_only`` (whether the broker refuses to alter the key) is left out of comparisons, so
    that a test states an entry's value and source as ``ConfigValue(value, source)``.
    """

    value: str | None
    source: str
    read_only: bool = field(default=False, compare=False)


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """What Metadata/DescribeTopics says about a topic."""

    partitions: int
    topic_id: str


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """One broker as DescribeCluster lists it."""

    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Acl:
    """An ACL binding in Kafka's words (``kafka-acls`` prints the same): resource type TOPIC,
    GROUP, CLUSTER, TRANSACTIONAL_ID, ...; pattern LITERAL or PREFIXED; operation READ, WRITE,
    ...; permission ALLOW or DENY.  As a filter, a None name, principal or host matches any, and
    ANY (MATCH for patterns) matches every value."""

    resource_type: str
    name: str | None
    principal: str | None
    operation: str
    permission: str = "ALLOW"
    pattern: str = "LITERAL"
    host: str | None = "*"


class Admin(ABC):
    """An admin client: topics, partitions, configs, records, cluster, ACLs."""

    name: ClassVar[str]

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def create_topic(
        self,
        topic: str,
        partitions: int,
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
        assignments: Sequence[Sequence[int]] | None = None,
    ) -> None:
        """CreateTopics for one topic; the broker's error raises :class:`~compat_tests.kit.drivers.base.ClientError`.

        ``assignments`` lists each partition's replicas by broker id (a manual assignment, which
        Kafka takes instead of a replication factor); ``partitions`` is then its length.
        It returns once the broker knows the topic, as Kafka's own tests wait (see
        :mod:`compat_tests.topic_metadata`): even a single Apache Kafka node answers CreateTopics
        when its controller has committed the topic, a moment before its broker side serves it
        (a DescribeConfigs in between gets UNKNOWN_TOPIC_OR_PARTITION). Against a cluster
        (several bootstrap addresses) it waits for every broker."""
        replicas = replication_factor if assignments is None else [list(r) for r in assignments]
        self._create_topic(topic, partitions, replicas, dict(configs or {}), validate_only)
        if validate_only:
            return
        addresses = advertised(self.bootstrap) or self.bootstrap.split(",")
        if len(addresses) > 1:
            wait_until_every_broker_knows(addresses, topic, partitions)
        else:
            self._wait_until_known(topic)

    def _wait_until_known(self, topic: str) -> None:
        """Describe ``topic`` until the broker stops answering UNKNOWN_TOPIC_OR_PARTITION.

        Through this client's own connection, so that it works on every listener (TLS, SASL);
        any other refusal (an admin not allowed to describe) ends the wait at once."""
        deadline = time.monotonic() + PROPAGATION_TIMEOUT_S
        while True:
            try:
                self.describe_topic(topic)
                return
            except ClientError as exc:
                if exc.error != "UNKNOWN_TOPIC_OR_PARTITION" or time.monotonic() >= deadline:
                    return
            time.sleep(0.05)

    @abstractmethod
    def _create_topic(
        self, topic: str, partitions: int, replicas: Replicas, configs: dict[str, str], validate_only: bool
    ) -> None:
        """:meth:`create_topic` with its defaults filled in and ``configs`` a plain dict."""

    @abstractmethod
    def delete_topic(self, topic: str) -> None:
        """DeleteTopics for one topic."""

    @abstractmethod
    def create_partitions(
        self, topic: str, total: int, assignments: Sequence[Sequence[int]] | None = None
    ) -> None:
        """CreatePartitions: grow ``topic`` to ``total`` partitions; ``assignments`` lists the
        new partitions' replicas by broker id (None: the broker chooses)."""

    @abstractmethod
    def describe_topic(self, topic: str) -> TopicInfo:
        """Partition count and topic id; an unknown topic raises UNKNOWN_TOPIC_OR_PARTITION."""

    @abstractmethod
    def list_topics(self) -> set[str]:
        """Names of every topic in Metadata."""

    def topic_configs(self, topic: str) -> dict[str, ConfigValue]:
        """DescribeConfigs for a topic: every key with its value and source."""
        return self.configs("TOPIC", topic)

    def broker_configs(self, node_id: int) -> dict[str, ConfigValue]:
        """DescribeConfigs for a broker: every key with its value and source."""
        return self.configs("BROKER", str(node_id))

    @abstractmethod
    def configs(self, resource_type: str, name: str) -> dict[str, ConfigValue]:
        """DescribeConfigs for one resource; ``resource_type`` is Kafka's name (TOPIC, BROKER,
        GROUP)."""

    def alter_topic_configs(
        self, topic: str, configs: Mapping[str, str | None], *, incremental: bool
    ) -> None:
        """:meth:`alter_configs` for a topic."""
        self.alter_configs("TOPIC", topic, configs, incremental=incremental)

    @abstractmethod
    def alter_configs(
        self, resource_type: str, name: str, configs: Mapping[str, str | None], *, incremental: bool
    ) -> None:
        """IncrementalAlterConfigs (SET each key, DELETE where the value is None) or the legacy
        whole-set AlterConfigs, for one resource named as in :meth:`configs`."""

    @abstractmethod
    def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        """DeleteRecords: drop records below the given offsets; returns the new low watermarks."""

    @abstractmethod
    def brokers(self) -> list[BrokerInfo]:
        """DescribeCluster's broker list."""

    @abstractmethod
    def list_offsets(
        self, topic: str, partitions: Sequence[int], spec: str | int
    ) -> dict[int, tuple[int, int]]:
        """AdminClient ListOffsets: ``spec`` is "earliest", "latest", "max_timestamp" or a
        timestamp; returns (offset, timestamp) per partition, (-1, -1) where there is none."""

    @abstractmethod
    def describe_group(self, group: str) -> GroupDescription:
        """State, assignor, and member assignments and clients of a consumer group."""

    @abstractmethod
    def list_groups(self, states: Sequence[str] = ()) -> dict[str, GroupListing]:
        """ListGroups: the consumer groups (protocol type "consumer", or "" where only offsets
        were committed, as Java's listConsumerGroups), by id; ``states`` (Kafka's spelling:
        Stable, Empty, ...) asks the broker for those states only."""

    @abstractmethod
    def delete_group(self, group: str) -> None:
        """DeleteGroups for one group (with its committed offsets); the refusal raises."""

    @abstractmethod
    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        """Committed offsets of a consumer group."""

    @abstractmethod
    def alter_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """OffsetCommit from outside the group (no member, no generation): set these committed
        offsets; a partition's refusal raises."""

    def delete_group_offsets(self, group: str, partitions: Sequence[TopicPartition]) -> None:
        """OffsetDelete: forget the group's committed offsets of ``partitions``. Ends the test as
        a skip where the client lacks the call (confluent-kafka's Python API has none)."""
        pytest.skip(f"{self.name} cannot delete group offsets")

    @abstractmethod
    def metadata_allowing_creation(self, topic: str) -> TopicInfo:
        """Metadata for ``topic`` with allow_auto_topic_creation=true (what producers send)."""

    @abstractmethod
    def create_acls(self, acls: Sequence[Acl]) -> list[str | None]:
        """CreateAcls: per ACL, None when created, else Kafka's name for the error."""

    @abstractmethod
    def describe_acls(self, acl_filter: Acl) -> set[Acl]:
        """DescribeAcls: the ACLs the filter matches (a refused request raises)."""

    @abstractmethod
    def delete_acls(self, filters: Sequence[Acl]) -> list[set[Acl]]:
        """DeleteAcls: per filter, the ACLs it deleted (a refused filter raises)."""

    @abstractmethod
    def authorized_operations(self, resource_type: str, name: str) -> set[str]:
        """What the broker says this client may do on a TOPIC, GROUP or the CLUSTER (the
        ``*_authorized_operations`` fields), as Kafka's operation names."""

    @abstractmethod
    def close(self) -> None:
        """Release the client."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AdminDriver(Driver):
    """A compatibility driver whose admin calls go through its client's :class:`Admin`, so each
    admin call of a client is written once for the integration tests and the scenarios alike."""

    admin_class: ClassVar[type[Admin]]
    """The client's admin client, made as ``admin_class(bootstrap)``."""
    _admin_client: Admin | None = None

    @property
    def admin(self) -> Admin:
        """The client's admin client (created on first use: admin clients connect eagerly, and
        not every scenario needs one)."""
        if self._admin_client is None:
            self._admin_client = self.admin_class(self.bootstrap)
        return self._admin_client

    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        return {p: offset for p, (offset, _) in self.admin.list_offsets(topic, partitions, spec).items()}

    def list_topics(self) -> set[str]:
        return self.admin.list_topics()

    def partition_count(self, topic: str) -> int:
        return self.admin.describe_topic(topic).partitions

    def create_topic(self, topic: str, partitions: int, configs: Mapping[str, str] | None = None) -> None:
        self.admin.create_topic(topic, partitions, configs=configs)

    def delete_topic(self, topic: str) -> None:
        self.admin.delete_topic(topic)

    def create_partitions(self, topic: str, total: int) -> None:
        self.admin.create_partitions(topic, total)

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        self.admin.delete_records(topic, {partition: before_offset})

    def describe_configs(self, topic: str) -> dict[str, str | None]:
        return {name: entry.value for name, entry in self.admin.topic_configs(topic).items()}

    def alter_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        self.admin.alter_topic_configs(topic, configs, incremental=True)

    def describe_group(self, group: str) -> GroupDescription:
        return self.admin.describe_group(group)

    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        return self.admin.group_offsets(group)

    def close(self) -> None:
        if self._admin_client is not None:
            self._admin_client.close()
