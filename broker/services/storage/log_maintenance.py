"""Periodic upkeep of partition logs that Kafka's LogManager and LogCleaner schedule in the background.

Three loops, each a thin trio shell around decisions made in ``log/``:

- every ``log.flush.offset.checkpoint.interval.ms``: logs that rolled a segment since the last
  pass are fsynced (Kafka flushes a rolled segment asynchronously), and so are logs whose data
  acknowledgements fdatasynced past the recovery point (their indexes were not synced, see
  ``broker.services.storage.durability``), so recovery rescans little; every log's recovery point,
  log start offset and cleaner position are checkpointed (so recovery after a crash rescans
  only what came after), and idempotent-producer state idle for longer than
  ``producer.id.expiration.ms`` is dropped;
- every ``log.retention.check.interval.ms``: retention by log start, size and time
  (``PartitionLog.delete_old_segments``); in between, the files of removed segments are deleted
  once their ``file.delete.delay.ms`` has passed;
- with ``log.cleaner.enable``: compaction of ``cleanup.policy=compact`` logs, the filthiest
  first, sleeping ``log.cleaner.backoff.ms`` when none is dirty enough (``log.cleaner``);
- every ``log.offline.retry.ms`` (Odradek's own): logs taken offline by a disk error are
  reopened once their disk takes writes again, so a freed full disk needs no restart.

fsyncs, the cleaner's reading and writing and the recovery of offline logs run in worker
threads so appends and fetches continue meanwhile.  A log whose disk fails goes offline
(KAFKA_STORAGE_ERROR for its clients) and is skipped; the loops, and the broker, carry on with
the others.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from log.cleaner import LogCleaner
from log.disk_error_report import describe_os_error
from log.errors import LogError

if TYPE_CHECKING:
    from broker.config.config import BrokerConfig
    from broker.services.storage.partitions import PartitionStore
    from log.clock import Clock
    from log.partition_log import PartitionLog

log = logging.getLogger(__name__)

# A floor for log.offline.retry.ms: each retry walks every log and probes each offline one.
_MIN_OFFLINE_RETRY_MS = 100

# Removals by DeleteRecords or the cleaner happen between retention checks; purging this often
# bounds how much longer than file.delete.delay.ms their files stay.
_PURGE_CHECK_MS = 10_000


@dataclass(frozen=True, slots=True)
class _Storage:
    """What the maintenance loops read: the settings (some change live), the clock, the logs."""

    config: BrokerConfig
    clock: Clock
    partitions: PartitionStore


async def run_log_maintenance(config: BrokerConfig, clock: Clock, partitions: PartitionStore) -> None:
    """Background task: checkpoints, retention and (if enabled) the log cleaner."""
    node = _Storage(config, clock, partitions)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_checkpoint_loop, node)
        nursery.start_soon(_retention_loop, node)
        nursery.start_soon(_offline_retry_loop, node)
        if node.config.get_bool("log.cleaner.enable"):
            nursery.start_soon(_cleaner_loop, node)


async def _checkpoint_loop(node: _Storage) -> None:
    interval_s = node.config.get_int("log.flush.offset.checkpoint.interval.ms") / 1000
    segments_seen: dict[tuple[str, int], int] = {}
    while True:
        await trio.sleep(interval_s)
        now_ms = node.clock()
        expiration_ms = node.config.get_int("producer.id.expiration.ms")  # dynamic
        for topic, partition, partition_log in node.partitions.all_logs():
            if not partition_log.is_online:
                continue
            segment_count = len(partition_log.segment_base_offsets)
            try:
                rolled = segments_seen.get((topic, partition), 1) != segment_count
                if rolled or partition_log.synced_past_recovery_point:
                    await trio.to_thread.run_sync(partition_log.flush)
                partition_log.checkpoint()
            except LogError:
                continue  # the log took itself offline and said why
            segments_seen[(topic, partition)] = segment_count
            partition_log.remove_expired_producers(now_ms, expiration_ms)


async def _retention_loop(node: _Storage) -> None:
    interval_ms = node.config.get_int("log.retention.check.interval.ms")
    next_check_ms = node.clock() + interval_ms
    while True:
        now_ms = node.clock()
        logs = [partition_log for _, _, partition_log in node.partitions.all_logs()]
        if now_ms >= next_check_ms:
            next_check_ms = now_ms + interval_ms
            for partition_log in logs:
                try:
                    partition_log.delete_old_segments(now_ms)
                except LogError:
                    continue
        for partition_log in logs:
            partition_log.purge_deleted_segments(now_ms)
        purges = [p for partition_log in logs if (p := partition_log.next_purge_ms) is not None]
        wake_ms = min([next_check_ms, now_ms + _PURGE_CHECK_MS, *purges])
        await trio.sleep(max(0, wake_ms - now_ms) / 1000)


async def _cleaner_loop(node: _Storage) -> None:
    """One pass at a time.  On cancellation (shutdown) the log stays claimed: closing it stops
    the worker thread within a batch and waits for it."""
    cleaner = LogCleaner()
    while True:
        logs = [partition_log for _, _, partition_log in node.partitions.all_logs()]
        job = cleaner.next_job(logs, node.clock())
        if job is None:
            await trio.sleep(node.config.get_int("log.cleaner.backoff.ms") / 1000)  # dynamic
            continue
        try:
            await trio.to_thread.run_sync(job.build_offset_map, abandon_on_cancel=True)
            for group in job.groups:
                cleaned = await trio.to_thread.run_sync(job.clean_group, group, abandon_on_cancel=True)
                job.swap(group, cleaned)
        except LogError:
            job.abandon()  # offline or closing: the log said why
        except Exception as exc:  # a log the cleaner cannot parse must not stop the broker
            log.exception("cleaning %s failed", job.log.directory)
            cleaner.mark_uncleanable(job, exc)
            job.abandon()
        else:
            job.finish()


async def _offline_retry_loop(node: _Storage) -> None:
    interval_ms = max(_MIN_OFFLINE_RETRY_MS, node.config.get_int("log.offline.retry.ms"))
    while True:
        await trio.sleep(interval_ms / 1000)
        for _, _, partition_log in node.partitions.all_logs():
            if not partition_log.is_online:
                await _bring_back_online(partition_log)


async def _bring_back_online(partition_log: PartitionLog) -> None:
    """One attempt; a disk that still fails is quiet (the log said so when it went offline)."""
    try:
        recovered = await trio.to_thread.run_sync(partition_log.reopen_after_disk_error)
    except (OSError, LogError) as exc:
        log.debug("%s is still offline: %s", partition_log.directory, describe_os_error(exc))
        return
    except Exception:
        log.exception("reopening %s after a disk error failed", partition_log.directory)
        return
    if recovered is not None:
        partition_log.adopt_recovered(recovered)
