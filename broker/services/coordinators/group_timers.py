"""The coordinators inside the broker: creating them, loading them, and firing their timers.

The coordinators are sans-IO; this module gives them what they need from the broker — the
partition logs of their internal topic (``__consumer_offsets``, ``__transaction_state``:
created on first use, as Kafka does), the topic registry, the wall clock, the flush policy for
their writes (``broker.services.storage.durability``: under ``flush.messages`` an offset commit is answered once
synced) — and runs, per coordinator, the one background task that replays its topic at
start-up and then sleeps until its next deadline (a session timeout, a rebalance timeout, the
initial rebalance delay, the offset retention check, a transaction timeout).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from functools import partial
from typing import TYPE_CHECKING

import trio

from broker.config.group_configs import group_overrides
from broker.services.storage import partition_writes
from broker.services.topic_admin import NewTopic, create_topic
from coordinator.config import CoordinatorConfig
from coordinator.coordinator import GroupCoordinator
from coordinator.log_storage import LogStorage
from coordinator.offsets_topic import OFFSETS_TOPIC
from coordinator.partitioned import PartitionedCoordinator
from log.clock import Clock
from log.partition_log import PartitionLog

if TYPE_CHECKING:
    from broker.services.coordinators.host import CoordinatorHost
    from broker.services.node_parts import LogsNode

log = logging.getLogger(__name__)


def internal_topic_storage(
    broker: CoordinatorHost, topic: str, configured_partitions: int, segment_bytes_key: str
) -> tuple[int, LogStorage]:
    """How many partitions a coordinator's compacted internal topic has, and storage over it
    (the topic is created on first use, as Kafka does).

    Keys map to partitions by the topic's real size, so changing the setting later must not
    move them: an existing topic's count wins over ``configured_partitions`` (Kafka, too, reads
    the count from the existing topic).
    """
    existing = broker.topics.get(topic)
    partitions = existing.partitions if existing is not None else configured_partitions

    def partition_log(partition: int, create: bool) -> PartitionLog | None:
        if topic not in broker.topics:
            # A cluster creates the topic through its metadata (FindCoordinator does).
            if not create or broker.cluster is not None:
                return None
            segment_bytes = str(broker.config.get_int(segment_bytes_key))
            create_topic(
                broker,
                NewTopic(topic, partitions, 1, {"cleanup.policy": "compact", "segment.bytes": segment_bytes}),
            )
        return broker.partitions.get(topic, partition)

    return partitions, LogStorage(
        partition_log,
        lambda partition: partition_writes.leader_epoch_of(broker, topic, partition),
        lambda partition: announce_append(broker, (topic, partition)),
    )


def announce_append(broker: LogsNode, key: tuple[str, int]) -> None:
    """A coordinator wrote to ``key``: have it replicated, synced under the flush policy, and
    wake fetchers. Its write may wait for a sync: an OffsetCommit waits for that itself, the
    coordinator's other writes (group metadata, expiry, transaction state and markers) have the
    next round run without a waiter (until then it stays hidden from consumers)."""
    written = broker.partitions.get(*key)
    if written is not None and partition_writes.announce_append(broker, key, written, 1):
        broker.durability.sync_soon()


def create_group_coordinator(broker: CoordinatorHost) -> GroupCoordinator:
    """A coordinator over this broker's ``__consumer_offsets`` (not yet loaded)."""
    config = CoordinatorConfig.from_config(broker.config)
    partitions, storage = internal_topic_storage(
        broker, OFFSETS_TOPIC, config.offsets_topic_partitions, "offsets.topic.segment.bytes"
    )
    config = dataclasses.replace(config, offsets_topic_partitions=partitions)
    return GroupCoordinator(config, storage, broker.topics, broker.clock)


def install_group_coordinator(broker: CoordinatorHost) -> GroupCoordinator:
    """Set ``broker.coordinator`` and register the task that loads it and drives its timers."""
    coordinator = create_group_coordinator(broker)
    stored = broker.dynamic_configs

    def use_group_configs() -> None:
        """The groups' configs as stored now (in a cluster, maybe changed through another broker)."""
        group_configs = coordinator.consumer.group_configs
        group_configs.clear()
        group_configs.update((group, group_overrides(configs)) for group, configs in stored.groups.items())

    use_group_configs()
    stored.on_change.append(use_group_configs)
    broker.coordinator = coordinator
    start_coordinator(broker, coordinator, "group coordinator")
    return coordinator


def start_coordinator(broker: CoordinatorHost, coordinator: PartitionedCoordinator, name: str) -> None:
    """Register the background task that loads ``coordinator`` and then drives its timers.

    In a cluster nothing is loaded up front: the coordinator serves the partitions of its
    internal topic this broker leads, claimed and released as leadership moves
    (``broker.services.cluster.roles``), and the task only drives its timers."""
    if broker.cluster is not None:
        coordinator.own_claimed_partitions_only()
        broker.background_tasks.append(partial(drive_timers, coordinator, broker.clock, name))
        return

    async def run() -> None:
        await run_coordinator(coordinator, broker.clock, name)

    broker.background_tasks.append(run)


async def run_coordinator(coordinator: PartitionedCoordinator, clock: Clock, name: str) -> None:
    """Replay the coordinator's internal topic partition by partition, then fire timers on time forever.

    Loading yields between partitions so the broker keeps serving other requests; keys of
    partitions not yet loaded are answered with COORDINATOR_LOAD_IN_PROGRESS meanwhile.
    """
    started = time.monotonic()
    for partition in range(coordinator.partitions):
        coordinator.load_partition(partition)
        await trio.sleep(0)
    log.info("%s loaded in %.2f s", name, time.monotonic() - started)
    await drive_timers(coordinator, clock, name)


async def drive_timers(coordinator: PartitionedCoordinator, clock: Clock, name: str) -> None:
    """Sleep until the next deadline (or an earlier one gets scheduled), then fire what is due."""
    while True:
        wake = trio.Event()
        coordinator.set_wakeup(wake.set)
        try:
            coordinator.on_time(clock())
        except Exception:
            # A bug in one timer callback must not take the broker down with it.
            log.exception("%s timer failed", name)
        deadline = coordinator.next_deadline()
        timeout = math.inf if deadline is None else max(0, deadline - clock()) / 1000
        with trio.move_on_after(timeout):
            await wake.wait()
