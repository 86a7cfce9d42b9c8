"""Read a partition from its start to its end through librdkafka, for tests that check what a
partition holds after the broker rewrote or refused parts of it (compaction, hostile batches).

librdkafka reports the end as a ``_PARTITION_EOF`` event (``enable.partition.eof``), so the
read stops exactly there instead of waiting for a quiet period; any other error fails the test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

T = TypeVar("T")


def read_to_end(
    bootstrap: str, topic: str, partition: int, pick: Callable[[Message], T], stall_s: float = 30
) -> list[T]:
    """``pick`` of every record of the partition, in order; fails when no message comes for ``stall_s``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "partition-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    picked = []
    try:
        while True:
            message = consumer.poll(stall_s)
            assert message is not None, "the consumer stalled before the end of the partition"
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                return picked
            picked.append(pick(message))
    finally:
        consumer.close()
