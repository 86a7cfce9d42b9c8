"""Describe APIs Kafka's own tools use, through kafka-python's admin client (which exposes them raw).

- DescribeTopicPartitions (KIP-966; Java 4.x admin clients and ``kafka-topics --describe`` use
  it): topics sorted by name, at most ``response_partition_limit`` partitions a page, a cursor to
  the first partition left out, unknown topics reported, a cursor outside the topic list refused.
- DescribeLogDirs (``kafka-log-dirs``): each directory's partitions and sizes, and its disk space.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing

import pytest
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient

from compat_tests.kit.brokers import RunningBroker
from compat_tests.kit.drivers.base import Driver, Message, ProducerSettings
from compat_tests.kit.drivers.kafka_python_api import TIMEOUT_MS

UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUEST = 42


@pytest.fixture
def kafka_admin(broker: RunningBroker) -> Iterator[KafkaAdminClient]:
    with closing(
        KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=TIMEOUT_MS)
    ) as admin:
        yield admin


def page(answer: dict) -> tuple[list[tuple[str, list[int]]], tuple[str, int] | None]:
    """A page as (topic, partition indexes) pairs and its next cursor."""
    topics = [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in answer["topics"]]
    cursor = answer["next_cursor"]
    return topics, None if cursor is None else (cursor["topic_name"], cursor["partition_index"])


def test_pages_of_partitions_follow_the_cursor(
    admin: Driver, kafka_admin: KafkaAdminClient, topic: str
) -> None:
    first, second = f"{topic}-a", f"{topic}-b"
    admin.create_topic(second, 2)
    admin.create_topic(first, 3)
    names = [second, first]  # asked out of order: answers come sorted by name

    def describe(
        cursor: tuple[str, int] | None,
    ) -> tuple[list[tuple[str, list[int]]], tuple[str, int] | None]:
        at = None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]}
        return page(kafka_admin.describe_topic_partitions(names, response_partition_limit=2, cursor=at))

    assert describe(None) == ([(first, [0, 1])], (first, 2))
    assert describe((first, 2)) == ([(first, [2]), (second, [0])], (second, 1))
    assert describe((second, 1)) == ([(second, [1])], None)


def test_unknown_topics_and_a_cursor_outside_the_list(
    admin: Driver, kafka_admin: KafkaAdminClient, topic: str
) -> None:
    admin.create_topic(topic, 1)
    missing = f"{topic}-missing"
    answer = kafka_admin.describe_topic_partitions([topic, missing])
    errors = {t["name"]: (t["error_code"], len(t["partitions"])) for t in answer["topics"]}
    assert errors == {topic: (0, 1), missing: (UNKNOWN_TOPIC_OR_PARTITION, 0)}
    assert answer["next_cursor"] is None

    refused = kafka_admin.describe_topic_partitions(
        [topic], cursor={"topic_name": missing, "partition_index": 0}
    )
    assert [(t["name"], t["error_code"]) for t in refused["topics"]] == [(topic, INVALID_REQUEST)]


def test_log_dirs_list_each_partition_with_its_size(
    admin: Driver, kafka_admin: KafkaAdminClient, topic: str
) -> None:
    """DescribeLogDirs (``kafka-log-dirs``): the directory holding the topic, its partitions'
    sizes (what was produced is on disk) and the directory's total and usable bytes."""
    admin.create_topic(topic, 2)
    admin.produce(topic, [Message(b"x" * 1000, partition=0)], ProducerSettings())
    sizes: dict[int, int] = {}
    for broker_answer in kafka_admin.describe_log_dirs(topic_partitions=[topic]):  # one per broker
        holding = [d for d in broker_answer["log_dirs"] if any(t["name"] == topic for t in d["topics"])]
        assert len(holding) <= 1, broker_answer  # one directory of a broker holds the topic
        for log_dir in holding:
            assert log_dir["error_code"] == 0
            assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
            (described,) = [t for t in log_dir["topics"] if t["name"] == topic]
            sizes |= {p["partition_index"]: p["partition_size"] for p in described["partitions"]}
    assert sizes.keys() == {0, 1} and sizes[0] > 1000 and sizes[1] == 0, sizes


def test_producers_of_a_partition(admin: Driver, kafka_admin: KafkaAdminClient, topic: str) -> None:
    """DescribeProducers (``kafka-transactions describe-producers``): after an idempotent producer
    wrote three records to a partition, the partition remembers it with its last sequence; an
    idle partition remembers nobody."""
    admin.create_topic(topic, 2)
    messages = [Message(b"v%d" % i, partition=0) for i in range(3)]
    admin.produce(topic, messages, ProducerSettings(idempotence=True, acks="all"))
    states = kafka_admin.describe_producers([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    written, idle = states[TopicPartition(topic, 0)], states[TopicPartition(topic, 1)]
    assert idle.active_producers == [], idle
    (producer,) = written.active_producers
    assert producer.producer_id >= 0 and producer.producer_epoch >= 0
    assert producer.last_sequence == 2
    assert producer.current_transaction_start_offset == -1
