"""The broker's view of its partition logs: topic registry entries bound to log engine logs.

The log engine knows directories and bytes; the broker knows topics, their ids and their
config overrides.  This module joins the two: it computes each topic's effective
``LogConfig`` (broker defaults under topic overrides, as Kafka resolves them) and opens,
creates and deletes the logs of registered topics.

Registry and disk: the registry (``broker.state.topic_registry``) is written first, then the directories
are created (or deleted).  A crash in between leaves partitions the registry lists but the disk
lacks, which start-up creates, or directories the registry does not list (a deletion cut
short), which start-up removes when they never held a record and otherwise renames
``-stray`` as Kafka does: deleting data on a guess is worse than keeping it out of the way.
Either way registry and disk agree again after any crash.

Creating partitions at run time never blocks the event loop: directories and files are made in
a worker thread, a bounded chunk at a time, and each finished chunk is registered back on the
loop.  Until then the new partitions answer UNKNOWN_TOPIC_OR_PARTITION (retriable).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import trio

from log.config import LogConfig
from log.manager import LogManager
from log.open_files import OPEN_FILES, default_capacity
from log.partition_log import PartitionLog

if TYPE_CHECKING:
    from broker.config.config import BrokerConfig
    from broker.state.topic_registry import TopicInfo, TopicRegistry
    from log.clock import Clock

log = logging.getLogger(__name__)

# Partitions a worker thread creates per trip: few enough that the descriptors it holds until it
# releases them (three per partition) and the loop's share of the work (placement,
# registration) stay small, many enough that thread round trips do not dominate.
CREATION_CHUNK = 64


def _exempt_from_gc() -> None:
    """Move every object alive now out of the cyclic garbage collector's reach (``gc.freeze``).

    Partition logs live as long as the broker and hold no reference cycles that need collecting,
    but a full collection walks all of them while holding the GIL: about 35 ms per 10,000
    partitions, so with 50,000 the event loop would stall for longer than a client may wait.
    Frozen objects are still freed by reference counting when their topic is deleted.
    """
    gc.freeze()


def _discard(logs: list[PartitionLog]) -> None:
    """Worker thread: delete logs no topic has any more (each is renamed ``-delete`` first)."""
    for partition_log in logs:
        try:
            partition_log.delete()
        except OSError as exc:
            log.error("cannot remove %s: %s", partition_log.directory, exc)


class _DirectoryLocks:
    """One lock per topic name while worker threads create or delete its directories.

    Deleting a topic renames and removes ``<topic>-<p>`` in a worker thread after the registry
    has forgotten it, so a CreateTopics of the same name can arrive meanwhile.  Unserialised,
    the creator took the old directory for debris of a failed deletion and removed it, and the
    deleter's rename then failed, or worse, renamed the new topic's directory away.
    """

    def __init__(self) -> None:
        self._locks: dict[str, trio.Lock] = {}

    @asynccontextmanager
    async def hold(self, topic: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(topic, trio.Lock())
        async with lock:
            try:
                yield
            finally:
                # No checkpoint between this and the release, so nobody can slip in between.
                if lock.statistics().tasks_waiting == 0:
                    del self._locks[topic]


class PartitionStore:
    """Partition logs of every registered topic, opened (and recovered) at start-up."""

    def __init__(
        self,
        config: BrokerConfig,
        topics: TopicRegistry,
        clock: Clock,
        log_dirs: list[str],
        *,
        create_missing: bool = True,
    ) -> None:
        """Open every partition log found; with ``create_missing``, also create the missing
        logs of registered topics (a single node hosts every partition; a cluster member
        creates only the replicas placed on it, once it has read the cluster's metadata)."""
        self._config = config
        self._topics = topics
        self._directory_locks = _DirectoryLocks()
        open_files_max = config.get_int("log.open.files.max")
        OPEN_FILES.reconfigure(open_files_max if open_files_max > 0 else default_capacity())
        self._manager = LogManager(log_dirs, self.log_config, clock)
        self._drop_unregistered()
        if create_missing:
            for topic in topics.all():
                self.create_partitions_now(topic, 0, topic.partitions)
        _exempt_from_gc()

    def _drop_unregistered(self) -> None:
        """Remove never-written partition directories the registry does not list; keep others."""
        for (topic, partition), partition_log in self._manager.partitions():
            info = self._topics.get(topic)
            if info is not None and partition < info.partitions:
                continue
            if partition_log.is_online and partition_log.log_end_offset == 0:
                log.warning(
                    "removing %s: no registered topic has it and it is empty", partition_log.directory
                )
                self._manager.delete(topic, partition)
            else:
                self._manager.set_aside(topic, partition)

    def log_config(self, topic: str) -> LogConfig:
        """Effective log settings of ``topic``: broker-level defaults under its overrides."""
        info = self._topics.get(topic)
        overrides = info.configs if info is not None else {}
        return LogConfig.from_properties(self._config.topic_defaults() | overrides)

    @property
    def log_dirs(self) -> list[str]:
        """The log directories (``log.dirs``), as absolute paths."""
        return list(self._manager.log_dirs)

    def logs(self) -> Iterator[tuple[tuple[str, int], PartitionLog]]:
        """Every open partition log, by (topic, partition)."""
        return self._manager.partitions()

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        """The log of a registered partition, or None if the topic or partition is unknown."""
        info = self._topics.get(topic)
        if info is None or not 0 <= partition < info.partitions:
            return None
        return self._manager.get(topic, partition)

    def create_partitions_now(self, topic: TopicInfo, start: int, end: int) -> None:
        """Create the missing logs of partitions ``start..end-1`` on the calling thread: for
        start-up and the broker's own small topics (``__consumer_offsets``, auto-creation);
        client requests use ``create_partitions``."""
        for partition in range(start, end):
            self._manager.get_or_create(topic.name, partition)

    async def create_partitions(self, topic: TopicInfo, start: int, end: int) -> None:
        """Create (empty) logs for partitions ``start..end-1`` of a registered topic.

        The files are made in a worker thread, ``CREATION_CHUNK`` partitions per trip, so other
        clients are served meanwhile however many partitions are asked for.  A partition whose
        directory cannot be made is registered offline (KAFKA_STORAGE_ERROR) and logged.  If the
        topic is deleted meanwhile, what was made is deleted too and creation stops.

        Shielded from cancellation: the registry already lists the partitions, so a request
        abandoned half-way (its client hung up) must still finish them, as Kafka's controller
        completes a creation whatever happens to the client that asked for it.  The partition
        limits bound how long that takes.
        """
        await self.create_replicas(topic, range(start, end))

    async def create_replicas(self, topic: TopicInfo, wanted: Sequence[int]) -> None:
        """Create the logs of the partitions ``wanted`` of ``topic`` that do not exist yet (see
        ``create_partitions``; a cluster member creates those placed on it)."""
        with trio.CancelScope(shield=True):
            async with self._directory_locks.hold(topic.name):
                await self._create_in_chunks(
                    topic, [p for p in wanted if self._manager.get(topic.name, p) is None]
                )
        _exempt_from_gc()

    async def _create_in_chunks(self, topic: TopicInfo, wanted: Sequence[int]) -> None:
        for first in range(0, len(wanted), CREATION_CHUNK):
            partitions = wanted[first : first + CREATION_CHUNK]
            directories = self._manager.place(topic.name, partitions)
            logs = await trio.to_thread.run_sync(self._create_logs, directories, topic.name)
            if self._topics.by_id(topic.topic_id) is not topic:
                log.info("topic %s was deleted while its partitions were being created", topic.name)
                await trio.to_thread.run_sync(_discard, logs)
                return
            for partition, partition_log in zip(partitions, logs, strict=True):
                self._manager.add(topic.name, partition, partition_log)

    def _create_logs(self, directories: list[str], topic: str) -> list[PartitionLog]:
        """Worker thread: create the logs and close their descriptors before handing them over."""
        config = self._manager.config_for_topic(topic)
        logs = [self._manager.create(directory, config) for directory in directories]
        for partition_log in logs:
            partition_log.release_descriptors()
        return logs

    async def delete_topic(self, topic: TopicInfo) -> None:
        """Delete the logs of a topic already removed from the registry."""
        await self.delete_logs(topic.name, range(topic.partitions))

    async def delete_logs(self, topic: str, partitions: Iterable[int]) -> None:
        """Delete the logs of ``partitions`` of ``topic`` (a deleted topic, or replicas moved
        off this broker).  They leave the store at once; their files go in a worker thread (a
        rename, an fsync and a tree removal per partition would stall the event loop for
        seconds with thousands of partitions)."""
        logs = self._manager.detach(topic, partitions)
        with trio.CancelScope(shield=True):  # detached logs must not be left half-deleted
            async with self._directory_locks.hold(topic):
                await trio.to_thread.run_sync(_discard, logs)

    def reconfigure(self, topic: TopicInfo) -> None:
        """Apply changed topic configs to the open logs of ``topic``."""
        config = self.log_config(topic.name)
        for partition in range(topic.partitions):
            partition_log = self._manager.get(topic.name, partition)
            if partition_log is not None:
                partition_log.config = config

    def reconfigure_all(self) -> None:
        """Apply changed broker-level log defaults to every open log."""
        for topic in self._topics.all():
            self.reconfigure(topic)

    def all_logs(self) -> list[tuple[str, int, PartitionLog]]:
        return [
            (topic.name, partition, plog)
            for topic in self._topics.all()
            for partition in range(topic.partitions)
            if (plog := self._manager.get(topic.name, partition)) is not None
        ]

    def close(self) -> None:
        self._manager.close()
