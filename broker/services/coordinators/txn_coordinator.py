"""The transaction coordinator inside the broker: its storage, its producer ids, its markers.

``__transaction_state`` is created on first use (compacted, ``transaction.state.log.*``), and
producer ids come from the same allocator as idempotent producers', so no two producers ever
share one: on a single node the broker's own, in a cluster blocks reserved in etcd ahead of use
(``broker.services.cluster.producer_id_blocks``).  On a single node markers are written straight into
the partition logs (this node leads every partition, so Kafka's WriteTxnMarkers round trip is
a local call); in a cluster the coordinator serves the transactional ids of the
``__transaction_state`` partitions this broker leads, and the marker channel
(``broker.services.coordinators.marker_channel``) writes markers here or sends them to the other partitions' leaders.
A marker for ``__consumer_offsets`` goes through the group coordinator, which applies or drops
the transaction's offsets when it writes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import TYPE_CHECKING

from broker.services.coordinators.group_timers import internal_topic_storage, start_coordinator
from broker.services.coordinators.marker_channel import MARKED, MarkerChannel, TxnKey, write_local_marker
from coordinator.config import TransactionConfig
from coordinator.log_storage import COORDINATOR_EPOCH
from coordinator.transactions import TRANSACTION_STATE_TOPIC, TransactionCoordinator, TxnError
from coordinator.txn_metadata import TopicPartition
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.services.coordinators.host import CoordinatorHost


def write_markers(
    broker: CoordinatorHost,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    partitions: Collection[TopicPartition],
) -> set[TopicPartition]:
    """A marker in each of ``partitions`` of this single node; returns those that could not be
    written."""
    txn = TxnKey(producer_id, producer_epoch, commit)
    return {tp for tp in partitions if write_local_marker(broker, txn, tp) not in MARKED}


def install_transaction_coordinator(broker: CoordinatorHost) -> TransactionCoordinator:
    """Set ``broker.transactions`` and register the task that loads it (on a single node) and
    drives its timers; in a cluster also the marker channel."""
    config = TransactionConfig.from_config(broker.config)
    partitions, storage = internal_topic_storage(
        broker, TRANSACTION_STATE_TOPIC, config.state_log_partitions, "transaction.state.log.segment.bytes"
    )
    config = dataclasses.replace(config, state_log_partitions=partitions)
    cluster = broker.cluster
    if cluster is None:
        coordinator = TransactionCoordinator(
            config,
            storage,
            broker.producer_ids.allocate,
            lambda pid, epoch, commit, partitions: write_markers(broker, pid, epoch, commit, partitions),
            broker.clock,
        )
    else:

        def allocate() -> int:
            producer_id = cluster.producer_ids.allocate_now()
            if producer_id is None:  # no block reserved yet: Kafka's answer, clients retry
                raise TxnError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            return producer_id

        def coordinator_epoch(producer_id: int) -> int:
            """The leader epoch of the ``__transaction_state`` partition holding the producer's
            transactional id, as Kafka's coordinator epoch."""
            transactional_id = coordinator.transactional_id_of(producer_id)
            if transactional_id is None or broker.replicas is None:
                return COORDINATOR_EPOCH
            state = broker.replicas.leader(
                (TRANSACTION_STATE_TOPIC, coordinator.partition_for(transactional_id))
            )
            return state.leader_epoch if state is not None else COORDINATOR_EPOCH

        channel = MarkerChannel(
            broker,
            cluster.peers,
            lambda producer_id: coordinator.markers_written(producer_id),
            coordinator_epoch,
        )
        coordinator = TransactionCoordinator(
            config, storage, allocate, channel.write, broker.clock, channel.forget
        )
        broker.background_tasks.append(channel.run)
    broker.transactions = coordinator
    start_coordinator(broker, coordinator, "transaction coordinator")
    return coordinator
