"""The group coordinator inside the broker: creating it, loading it, and firing its timers.

The coordinator is sans-IO; this module gives it what it needs from the broker — the
``__consumer_offsets`` partition logs (the topic is created on first use, as Kafka does),
the topic registry, the wall clock, the flush policy for its writes (``broker.durability``:
under ``flush.messages`` an offset commit is answered once synced) — and runs the one background task that replays the
offsets topic at start-up and then sleeps until the coordinator's next deadline (a session
timeout, a rebalance timeout, the initial rebalance delay, the offset retention check).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from typing import TYPE_CHECKING

import trio

from broker.topic_admin import NewTopic, create_topic
from coordinator.config import CoordinatorConfig
from coordinator.coordinator import GroupCoordinator
from coordinator.log_storage import LogStorage
from coordinator.offsets_topic import OFFSETS_TOPIC
from log.clock import Clock
from log.partition_log import PartitionLog

if TYPE_CHECKING:
    from broker.server import Broker

log = logging.getLogger(__name__)


def create_group_coordinator(broker: Broker) -> GroupCoordinator:
    """A coordinator over this broker's ``__consumer_offsets`` (not yet loaded)."""
    config = CoordinatorConfig.from_config(broker.config)
    existing = broker.topics.get(OFFSETS_TOPIC)
    if existing is not None and existing.partitions != config.offsets_topic_partitions:
        # Groups map to partitions by the topic's real size; changing the setting later
        # must not move them (Kafka, too, reads the count from the existing topic).
        config = dataclasses.replace(config, offsets_topic_partitions=existing.partitions)

    def partition_log(partition: int, create: bool) -> PartitionLog | None:
        if OFFSETS_TOPIC not in broker.topics:
            if not create:
                return None
            segment_bytes = str(broker.config.get_int("offsets.topic.segment.bytes"))
            create_topic(
                broker,
                NewTopic(
                    OFFSETS_TOPIC,
                    config.offsets_topic_partitions,
                    1,
                    {"cleanup.policy": "compact", "segment.bytes": segment_bytes},
                ),
            )
        return broker.partitions.get(OFFSETS_TOPIC, partition)

    def appended(partition: int) -> None:
        key = (OFFSETS_TOPIC, partition)
        written = broker.partitions.get(*key)
        if written is not None and broker.durability.after_append(key, written, 1, wrote=True):
            # Hidden until synced; an OffsetCommit waits for that itself, the coordinator's other
            # writes (group metadata, expiry) have the next round run without a waiter.
            broker.durability.sync_soon()
        else:
            broker.appends.notify(key)

    storage = LogStorage(partition_log, appended)
    return GroupCoordinator(config, storage, broker.topics, broker.clock)


def install_group_coordinator(broker: Broker) -> GroupCoordinator:
    """Set ``broker.coordinator`` and register the task that loads it and drives its timers."""
    coordinator = create_group_coordinator(broker)
    broker.coordinator = coordinator

    async def run() -> None:
        await run_group_coordinator(coordinator, broker.clock)

    broker.background_tasks.append(run)
    return coordinator


async def run_group_coordinator(coordinator: GroupCoordinator, clock: Clock) -> None:
    """Replay ``__consumer_offsets`` partition by partition, then fire timers on time forever.

    Loading yields between partitions so the broker keeps serving other requests; groups of
    partitions not yet loaded are answered with COORDINATOR_LOAD_IN_PROGRESS meanwhile.
    """
    started = time.monotonic()
    for partition in range(coordinator.config.offsets_topic_partitions):
        coordinator.load_partition(partition)
        await trio.sleep(0)
    log.info("group coordinator loaded in %.2f s", time.monotonic() - started)
    await drive_timers(coordinator, clock)


async def drive_timers(coordinator: GroupCoordinator, clock: Clock) -> None:
    """Sleep until the next deadline (or an earlier one gets scheduled), then fire what is due."""
    while True:
        wake = trio.Event()
        coordinator.set_wakeup(wake.set)
        try:
            coordinator.on_time(clock())
        except Exception:
            # A bug in one timer callback must not take the broker down with it.
            log.exception("group coordinator timer failed")
        deadline = coordinator.next_deadline()
        timeout = math.inf if deadline is None else max(0, deadline - clock()) / 1000
        with trio.move_on_after(timeout):
            await wake.wait()
