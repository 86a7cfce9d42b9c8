"""One transactional id's state, and its record in ``__transaction_state``.

A transactional id names a producer that survives restarts: the coordinator keeps its current
producer id and epoch (bumped by every InitProducerId, which is what fences a zombie), the
transaction timeout, the state of its transaction and the partitions that transaction wrote
to.  Each change is written to ``__transaction_state`` as Kafka's TransactionLogKey /
TransactionLogValue (codecs generated from Kafka's specs, ``wire/internal_records``), so the
latest record per id is the whole state and Kafka's tools can read the topic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from wire import stored_records
from wire.internal_records.transaction_state import TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE
from wire.kafka_names import KafkaNamedEnum
from wire.primitives import Buffer

TopicPartition = tuple[str, int]

NO_PRODUCER_ID = -1
NO_EPOCH = -1
NO_TIMESTAMP = -1
# Kafka gives a producer id a new number rather than let its epoch reach Short.MAX_VALUE, which
# markers of a fenced producer need to stay above every epoch it used.
MAX_EPOCH = 2**15 - 2
# TransactionLogValue v1 carries the KIP-890 fields (client transaction version, next producer
# id/epoch); Kafka writes v0 for transactions of clients that use transaction version 0/1.
VALUE_VERSION = 0


class TxnState(KafkaNamedEnum):
    """Kafka's TransactionState, with the ids it stores and the names (``PrepareCommit``)
    DescribeTransactions/ListTransactions report."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7


PREPARING = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE})
COMPLETE = frozenset({TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})


@dataclass(slots=True)
class TxnMetadata:
    """What the coordinator knows about one transactional id."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = NO_TIMESTAMP
    last_update_ms: int = NO_TIMESTAMP
    previous_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_EPOCH
    """The epoch before the last bump by a producer that named its own (KIP-360), so that a
    retry of that InitProducerId is recognised; like Kafka's, it is not stored."""

    def matches(self, producer_id: int, producer_epoch: int) -> bool:
        return self.producer_id == producer_id and self.producer_epoch == producer_epoch


def encode(metadata: TxnMetadata) -> tuple[bytes, bytes]:
    """The (key, value) of the record that stores ``metadata``."""
    key = stored_records.encode(
        TRANSACTION_LOG_KEY, stored_records.KEY_VERSION, {"transactional_id": metadata.transactional_id}
    )
    value = stored_records.encode(
        TRANSACTION_LOG_VALUE,
        VALUE_VERSION,
        {
            "producer_id": metadata.producer_id,
            "producer_epoch": metadata.producer_epoch,
            "transaction_timeout_ms": metadata.timeout_ms,
            "transaction_status": int(metadata.state),
            "transaction_partitions": [
                {"topic": topic, "partition_ids": ids} for topic, ids in by_topic(metadata.partitions).items()
            ],
            "transaction_last_update_timestamp_ms": metadata.last_update_ms,
            "transaction_start_timestamp_ms": metadata.start_ms,
        },
    )
    return key, value


def tombstone(transactional_id: str) -> tuple[bytes, None]:
    """The record that removes an expired id (log compaction then drops its history)."""
    key = stored_records.encode(
        TRANSACTION_LOG_KEY, stored_records.KEY_VERSION, {"transactional_id": transactional_id}
    )
    return key, None


def decode_key(key: Buffer) -> str:
    """The transactional id of a stored key (DecodeError for another record type)."""
    return stored_records.decode(TRANSACTION_LOG_KEY, key)["transactional_id"]


def decode(transactional_id: str, value: Buffer) -> TxnMetadata:
    """The state a stored value describes (DecodeError if it is not one Kafka defines)."""
    fields = stored_records.decode(TRANSACTION_LOG_VALUE, value)
    return TxnMetadata(
        transactional_id=transactional_id,
        producer_id=fields["producer_id"],
        producer_epoch=fields["producer_epoch"],
        timeout_ms=fields["transaction_timeout_ms"],
        state=TxnState(fields["transaction_status"]),
        partitions={
            (topic["topic"], partition)
            for topic in fields["transaction_partitions"] or ()
            for partition in topic["partition_ids"]
        },
        start_ms=fields["transaction_start_timestamp_ms"],
        last_update_ms=fields["transaction_last_update_timestamp_ms"],
        previous_producer_id=fields["previous_producer_id"],
    )


def by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Partition indexes per topic, both sorted: how the record and the APIs list them."""
    grouped: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        grouped.setdefault(topic, []).append(partition)
    return grouped
