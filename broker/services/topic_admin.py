"""Creating topics the way Kafka validates them, shared by CreateTopics and auto-creation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from broker.config.config import ConfigError, check_value
from broker.config.config_defs import TOPIC_CONFIGS
from broker.state.topic_registry import topic_name_error
from log.config import LogConfig
from log.errors import InvalidConfigError
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.config.config import BrokerConfig
    from broker.services.storage.partitions import PartitionStore
    from broker.state.topic_registry import TopicInfo, TopicRegistry


class TopicError(Exception):
    """A topic operation refused with a Kafka error code and a message for the user."""

    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class NewTopic(NamedTuple):
    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str]
    # CreateTopics' manual assignment: each partition's replicas, the first preferred leader.
    assignments: tuple[tuple[int, ...], ...] | None = None


def validate_configs(configs: dict[str, str]) -> None:
    """Reject unknown topic config names and ill-typed, out-of-set or out-of-range values
    (INVALID_CONFIG), before anything is stored: a value the log engine cannot use must never
    reach the registry, or the topic could not be opened again at the next start."""
    for key, value in configs.items():
        definition = TOPIC_CONFIGS.get(key)
        if definition is None:
            raise TopicError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
        try:
            check_value(key, definition.type, value)
        except ConfigError as exc:
            raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        if definition.validator:
            chosen = [v.strip() for v in value.split(",")] if definition.type.name == "LIST" else [value]
            bad = [v for v in chosen if v not in definition.validator]
            if bad:
                raise TopicError(
                    ErrorCode.INVALID_CONFIG,
                    f"Invalid value {value} for configuration {key}: "
                    f"must be one of {list(definition.validator)}",
                )
    try:
        LogConfig.from_properties(configs)
    except InvalidConfigError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None


class TopicCluster(Protocol):
    """A cluster member's side of topic administration (``ClusterNode``): changes go through
    the cluster's metadata in etcd, and each broker applies them to its own logs."""

    def check_replication_factor(self, replication_factor: int) -> None: ...

    async def create_topic(
        self, topic: NewTopic, assignments: Sequence[tuple[int, ...]] | None = None
    ) -> TopicInfo: ...

    async def delete_topic(self, info: TopicInfo) -> None: ...

    async def set_topic_configs(self, info: TopicInfo, configs: dict[str, str]) -> None: ...

    async def add_partitions(self, info: TopicInfo, count: int) -> None: ...


class TopicHost(Protocol):
    """The parts of a node that topic administration reads and changes."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def topics(self) -> TopicRegistry: ...

    @property
    def partitions(self) -> PartitionStore: ...

    @property
    def cluster(self) -> TopicCluster | None: ...


def validate_new_topic(broker: TopicHost, topic: NewTopic) -> NewTopic:
    """Resolve defaults (-1) and check a topic could be created; raises TopicError."""
    error = topic_name_error(topic.name)
    if error:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, error)
    if topic.name in broker.topics:
        raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.")
    clash = broker.topics.collision(topic.name)
    if clash:
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic '{topic.name}' collides with existing topic: {clash}",
        )
    partitions = topic.partitions if topic.partitions != -1 else broker.config.get_int("num.partitions")
    if partitions <= 0:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    replication = (
        topic.replication_factor
        if topic.replication_factor != -1
        else broker.config.get_int("default.replication.factor")
    )
    if replication <= 0:
        raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    if broker.cluster is not None:
        broker.cluster.check_replication_factor(replication)
    elif replication > 1:
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication} time(s): The target replication factor of "
            f"{replication} cannot be reached because only 1 broker(s) are registered.",
        )
    validate_configs(topic.configs)
    return topic._replace(partitions=partitions, replication_factor=replication)


async def register_topic_async(broker: TopicHost, topic: NewTopic) -> TopicInfo:
    """Register a topic that :func:`validate_new_topic` and the partition limits
    (``broker/services/partition_limits.py``) passed, and create its logs off the event loop (a cluster
    member writes it to the cluster's metadata; each broker then creates the replicas placed
    on it)."""
    if broker.cluster is not None:
        return await broker.cluster.create_topic(topic, topic.assignments)
    info = broker.topics.create(topic.name, topic.partitions, topic.configs)
    await broker.partitions.create_partitions(info, 0, topic.partitions)
    return info


async def delete_topic_async(broker: TopicHost, info: TopicInfo) -> None:
    """Delete a topic: from the registry and the disk, or from the cluster's metadata."""
    if broker.cluster is not None:
        await broker.cluster.delete_topic(info)
        return
    broker.topics.delete(info.name)
    await broker.partitions.delete_topic(info)


async def set_topic_configs_async(broker: TopicHost, info: TopicInfo, configs: dict[str, str]) -> None:
    """Replace a topic's config overrides (AlterConfigs passed its checks) and apply them."""
    if broker.cluster is not None:
        await broker.cluster.set_topic_configs(info, configs)
        return
    broker.topics.set_configs(info.name, configs)
    broker.partitions.reconfigure(info)


async def add_partitions_async(broker: TopicHost, info: TopicInfo, count: int) -> None:
    """Grow a topic to ``count`` partitions (CreatePartitions passed its checks)."""
    if broker.cluster is not None:
        await broker.cluster.add_partitions(info, count)
        return
    old = info.partitions
    broker.topics.set_partitions(info.name, count)
    await broker.partitions.create_partitions(info, old, count)


def create_topic(broker: TopicHost, topic: NewTopic) -> TopicInfo:
    """Validate, register and create (on the calling thread) one of the broker's own internal
    topics.

    Not for client requests: the partition limits guard against client input, and the broker
    must be able to create ``__consumer_offsets`` however many partitions clients hold.
    """
    topic = validate_new_topic(broker, topic)
    info = broker.topics.create(topic.name, topic.partitions, topic.configs)
    broker.partitions.create_partitions_now(info, 0, topic.partitions)
    return info
