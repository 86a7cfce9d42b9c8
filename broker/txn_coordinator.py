"""The transaction coordinator inside the broker: its storage, its producer ids, its markers.

``__transaction_state`` is created on first use (compacted, ``transaction.state.log.*``), and
producer ids come from the same allocator as idempotent producers', so no two producers ever
share one.  Markers are written straight into the partition logs of this node (a single node
leads every partition, so Kafka's WriteTxnMarkers round trip is a local call); a marker for
``__consumer_offsets`` goes through the group coordinator, which applies or drops the
transaction's offsets when it writes it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection
from typing import TYPE_CHECKING

from broker.group_timers import announce_append, internal_topic_storage, start_coordinator
from broker.partition_requests import leader_epoch_of
from coordinator.config import TransactionConfig
from coordinator.log_storage import COORDINATOR_EPOCH
from coordinator.offsets_topic import OFFSETS_TOPIC
from coordinator.transactions import TRANSACTION_STATE_TOPIC, TransactionCoordinator
from coordinator.txn_metadata import TopicPartition
from log.errors import LogError

if TYPE_CHECKING:
    from broker.server import Broker

log = logging.getLogger(__name__)


def write_markers(
    broker: Broker,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    partitions: Collection[TopicPartition],
) -> set[TopicPartition]:
    """A marker in each of ``partitions``; returns those that could not be written."""
    unreached: set[TopicPartition] = set()
    now = broker.clock()
    for topic, partition in partitions:
        try:
            if topic == OFFSETS_TOPIC and broker.coordinator is not None:
                broker.coordinator.complete_transaction(partition, (producer_id, producer_epoch), commit)
                continue
            partition_log = broker.partitions.get(topic, partition)
            if partition_log is None:
                continue  # the topic was deleted: nothing is left to mark (Kafka skips it too)
            epoch = leader_epoch_of(broker, topic, partition)
            partition_log.append_marker(
                producer_id, producer_epoch, commit, COORDINATOR_EPOCH, now, leader_epoch=epoch
            )
            announce_append(broker, (topic, partition))
        except (OSError, LogError) as error:
            log.error(
                "transaction marker for producer %d to %s-%d failed: %s", producer_id, topic, partition, error
            )
            unreached.add((topic, partition))
    return unreached


def install_transaction_coordinator(broker: Broker) -> TransactionCoordinator:
    """Set ``broker.transactions`` and register the task that loads it and drives its timers."""
    config = TransactionConfig.from_config(broker.config)
    partitions, storage = internal_topic_storage(
        broker, TRANSACTION_STATE_TOPIC, config.state_log_partitions, "transaction.state.log.segment.bytes"
    )
    config = dataclasses.replace(config, state_log_partitions=partitions)
    coordinator = TransactionCoordinator(
        config,
        storage,
        broker.producer_ids.allocate,
        lambda pid, epoch, commit, partitions: write_markers(broker, pid, epoch, commit, partitions),
        broker.clock,
    )
    broker.transactions = coordinator
    start_coordinator(broker, coordinator, "transaction coordinator")
    return coordinator
