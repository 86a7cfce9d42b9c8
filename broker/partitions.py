"""The broker's view of its partition logs: topic registry entries bound to log engine logs.

The log engine knows directories and bytes; the broker knows topics, their ids and their
config overrides.  This module joins the two: it computes each topic's effective
``LogConfig`` (broker defaults under topic overrides, as Kafka resolves them) and opens,
creates and deletes the logs of registered topics.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from log.config import LogConfig
from log.manager import LogManager
from log.partition_log import PartitionLog

if TYPE_CHECKING:
    from broker.server import Broker
    from broker.topics import TopicInfo

log = logging.getLogger(__name__)


class PartitionStore:
    """Partition logs of every registered topic, opened (and recovered) at start-up."""

    def __init__(self, broker: Broker, log_dirs: list[str]) -> None:
        self._broker = broker
        self._manager = LogManager(log_dirs, self.log_config)
        for topic in broker.topics.all():
            for partition in range(topic.partitions):
                self._manager.get_or_create(topic.name, partition)

    def log_config(self, topic: str) -> LogConfig:
        """Effective log settings of ``topic``: broker-level defaults under its overrides."""
        info = self._broker.topics.get(topic)
        overrides = info.configs if info is not None else {}
        return LogConfig.from_properties(self._broker.config.topic_defaults() | overrides)

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        """The log of a registered partition, or None if the topic or partition is unknown."""
        info = self._broker.topics.get(topic)
        if info is None or not 0 <= partition < info.partitions:
            return None
        return self._manager.get(topic, partition)

    def create_partitions(self, topic: TopicInfo, start: int, end: int) -> None:
        """Create (empty) logs for partitions ``start..end-1`` of a registered topic."""
        for partition in range(start, end):
            self._manager.get_or_create(topic.name, partition)

    def delete_topic(self, topic: TopicInfo) -> None:
        for partition in range(topic.partitions):
            self._manager.delete(topic.name, partition)

    def reconfigure(self, topic: TopicInfo) -> None:
        """Apply changed topic configs to the open logs of ``topic``."""
        config = self.log_config(topic.name)
        for partition in range(topic.partitions):
            partition_log = self._manager.get(topic.name, partition)
            if partition_log is not None:
                partition_log.config = config

    def all_logs(self) -> list[tuple[str, int, PartitionLog]]:
        return [
            (topic.name, partition, plog)
            for topic in self._broker.topics.all()
            for partition in range(topic.partitions)
            if (plog := self._manager.get(topic.name, partition)) is not None
        ]

    def close(self) -> None:
        self._manager.close()
