"""Periodic upkeep of partition logs that Kafka's LogManager schedules in the background.

Every ``log.flush.offset.checkpoint.interval.ms``: logs that rolled a segment since the last
pass are fsynced (Kafka flushes a rolled segment asynchronously), every log's recovery point
and log start offset are checkpointed (so recovery after a crash rescans only what came after
the last checkpoint), and idempotent-producer state idle for longer than
``producer.id.expiration.ms`` is dropped.  The fsyncs run in a worker thread so appends and
fetches continue meanwhile.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from broker.server import Broker


async def run_log_maintenance(broker: Broker) -> None:
    """Background task: flush rolled logs, checkpoint recovery points, expire producers."""
    interval_s = broker.config.get_int("log.flush.offset.checkpoint.interval.ms") / 1000
    expiration_ms = broker.config.get_int("producer.id.expiration.ms")
    segments_seen: dict[tuple[str, int], int] = {}
    while True:
        await trio.sleep(interval_s)
        now_ms = int(time.time() * 1000)
        for topic, partition, partition_log in broker.partitions.all_logs():
            segment_count = len(partition_log.segment_base_offsets)
            if segments_seen.get((topic, partition), 1) != segment_count:
                await trio.to_thread.run_sync(partition_log.flush)
            segments_seen[(topic, partition)] = segment_count
            partition_log.checkpoint()
            partition_log.remove_expired_producers(now_ms, expiration_ms)
