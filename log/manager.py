"""All partition logs of the broker, spread over ``log.dirs``.

At start-up every ``<topic>-<partition>`` directory is opened (with recovery); leftovers of
interrupted deletions (``*-delete``) are removed, as Kafka does.  New partitions go to the log
directory holding the fewest partitions -- Kafka's placement rule.

A partition that cannot be opened (no descriptors left, no permission, a file where its
directory should be, unreadable metadata) does not stop the others: it is logged at ERROR with
the reason and kept as an offline ``PartitionLog.unopenable`` stand-in that answers
KAFKA_STORAGE_ERROR.  Opening touches no more descriptors than the LRU allows
(``log.open_files``), so the partition count is not bound by ``ulimit -n``.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

from log.clock import Clock, wall_clock_ms
from log.config import LogConfig
from log.deletion import delete_partition_directory, is_deletion_leftover, remove_tree, rename_aside
from log.disk_error_report import describe_os_error
from log.errors import LogError
from log.partition_log import PartitionLog

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

# Kafka's suffixes for directories that are not live partitions (``-delete``: ``log.deletion``).
STRAY_SUFFIX = "-stray"
_SKIPPED_SUFFIXES = ("-future", STRAY_SUFFIX)


def parse_partition_dir(name: str) -> TopicPartition | None:
    """``"orders-3"`` -> ``("orders", 3)``; None for anything that is not a partition directory."""
    topic, dash, partition = name.rpartition("-")
    if not dash or not topic or not partition.isdigit() or name.endswith(_SKIPPED_SUFFIXES):
        return None
    return topic, int(partition)


class LogManager:
    """Opens, creates, finds and deletes ``PartitionLog``s across the broker's log directories."""

    def __init__(
        self,
        log_dirs: Sequence[str],
        config_for_topic: Callable[[str], LogConfig],
        clock: Clock = wall_clock_ms,
    ) -> None:
        if not log_dirs:
            raise ValueError("at least one log directory is required")
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.config_for_topic = config_for_topic
        self.clock = clock
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._per_dir: Counter[str] = Counter()  # partitions per log directory, for placement
        # One LogConfig per topic, not per partition: building it cost a fifth of opening an
        # empty log, and the logs of one topic share it anyway (``LogConfig`` is frozen).
        configs: dict[str, LogConfig] = {}
        for log_dir in self.log_dirs:
            os.makedirs(log_dir, exist_ok=True)
            for entry in sorted(os.scandir(log_dir), key=lambda e: e.name):
                if is_deletion_leftover(entry.name) and entry.is_dir():
                    logger.info("removing %s, left by an interrupted deletion", entry.path)
                    remove_tree(entry.path)
                    continue
                key = parse_partition_dir(entry.name)
                if key is None:
                    continue
                if key in self._logs:
                    raise RuntimeError(f"partition {key} exists in two log directories ({entry.path})")
                topic, partition = key
                if topic not in configs:
                    configs[topic] = self.config_for_topic(topic)
                self.add(topic, partition, self._open_or_offline(entry.path, configs[topic]))

    def _open_or_offline(self, directory: str, config: LogConfig) -> PartitionLog:
        try:
            return PartitionLog.open(directory, config, self.clock)
        except Exception as exc:  # whatever it is, one partition must not keep the rest down
            logger.error(
                "cannot open %s, serving it as offline: %s",
                directory,
                describe_os_error(exc, directory),
                exc_info=not isinstance(exc, OSError | LogError),
            )
            return PartitionLog.unopenable(directory, config, exc, self.clock)

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int) -> PartitionLog:
        """The partition's log, created empty in the least-loaded log directory if missing."""
        log = self._logs.get((topic, partition))
        if log is None:
            (directory,) = self.place(topic, range(partition, partition + 1))
            log = self.create(directory, self.config_for_topic(topic))
            self.add(topic, partition, log)
        return log

    def place(self, topic: str, partitions: Iterable[int]) -> list[str]:
        """Directories for new partitions: each in the log directory holding the fewest."""
        counts = Counter({log_dir: self._per_dir[log_dir] for log_dir in self.log_dirs})
        directories = []
        for partition in partitions:
            log_dir = min(self.log_dirs, key=counts.__getitem__)
            counts[log_dir] += 1
            directories.append(os.path.join(log_dir, f"{topic}-{partition}"))
        return directories

    def create(self, directory: str, config: LogConfig) -> PartitionLog:
        """A new, empty log in ``directory`` under ``config`` (its topic's, :attr:`config_for_topic`;
        safe in a worker thread: it only touches files).

        A failure leaves an offline stand-in (logged at ERROR), so the partition answers
        KAFKA_STORAGE_ERROR instead of not existing.
        """
        if os.path.exists(directory):
            # Every directory found at start-up is open, so this one outlived a deletion that
            # failed: its records belong to a deleted topic and must not come back.
            logger.error("%s was left by a failed deletion; deleting it now", directory)
            delete_partition_directory(directory)
        return self._open_or_offline(directory, config)

    def add(self, topic: str, partition: int, log: PartitionLog) -> None:
        """Register a log opened or created by this manager (the event loop's thread)."""
        self._logs[(topic, partition)] = log
        self._per_dir[os.path.dirname(log.directory)] += 1

    def delete(self, topic: str, partition: int) -> bool:
        """Delete the partition's data; False if it did not exist."""
        log = self._logs.pop((topic, partition), None)
        if log is None:
            return False
        self._per_dir[os.path.dirname(log.directory)] -= 1
        try:
            log.delete()
        except OSError as exc:
            # The topic is gone either way; re-creating it retries the removal (get_or_create).
            logger.error("cannot delete %s: %s", log.directory, describe_os_error(exc))
        return True

    def detach(self, topic: str, partitions: Iterable[int]) -> list[PartitionLog]:
        """Stop managing the logs of ``partitions`` and hand them over (to be deleted
        elsewhere, e.g. off the event loop)."""
        detached = []
        for partition in partitions:
            log = self._logs.pop((topic, partition), None)
            if log is not None:
                self._per_dir[os.path.dirname(log.directory)] -= 1
                detached.append(log)
        return detached

    def set_aside(self, topic: str, partition: int) -> None:
        """Close a log no registered topic has and rename its directory ``-stray``, as Kafka
        does with stray logs: kept for an operator to look at, but never served again nor
        mistaken for the data of a topic created later under the same name."""
        log = self._logs.pop((topic, partition))
        self._per_dir[os.path.dirname(log.directory)] -= 1
        try:
            log.close()
        except LogError as exc:
            logger.error("closing %s failed: %s", log.directory, exc)
        try:
            stray = rename_aside(log.directory, STRAY_SUFFIX)
        except OSError as exc:
            logger.error("cannot set %s aside: %s", log.directory, describe_os_error(exc))
            return
        logger.warning("%s holds data of no registered topic; kept as %s", log.directory, stray)

    def partitions(self) -> Iterator[tuple[TopicPartition, PartitionLog]]:
        return iter(list(self._logs.items()))

    def checkpoint(self) -> None:
        """Persist every log's start offset and recovery point (call periodically)."""
        for log in self._logs.values():
            log.checkpoint()

    def close(self) -> None:
        """Clean shutdown of every log (fsync + clean markers), so the next start skips recovery."""
        for (topic, partition), log in self._logs.items():
            try:
                log.close()
            except LogError as exc:  # an offline log must not keep the others from closing
                logger.error("closing %s-%d failed: %s", topic, partition, exc)
        self._logs.clear()
