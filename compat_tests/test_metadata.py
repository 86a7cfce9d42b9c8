"""Metadata for unknown topics, with and without auto.create.topics.enable."""

from __future__ import annotations

import time
from contextlib import closing

import pytest

from compat_tests.helpers import eventually
from compat_tests.kit.drivers.base import ClientError, Driver, ErrorKind, Message, ProducerSettings
from compat_tests.kit.drivers.kafka_python import RawMetadata
from compat_tests.pools import BrokerPool, DriverPool

NO_AUTO_CREATE = {"auto.create.topics.enable": "false"}


def test_describe_unknown_topic(driver: Driver, topic: str) -> None:
    """Describing a topic that does not exist reports UNKNOWN_TOPIC.

    Whether the topic exists afterwards depends on the client: aiokafka's admin describes with a
    Metadata request that allows auto-creation, and Apache Kafka (KRaft) then answers
    UNKNOWN_TOPIC_OR_PARTITION but creates the topic asynchronously, so that is not asserted.
    """
    with pytest.raises(ClientError) as unknown:
        driver.partition_count(topic)
    assert unknown.value.kind == ErrorKind.UNKNOWN_TOPIC, unknown.value.detail


def test_produce_autocreates_topic(driver: Driver, admin: Driver, topic: str) -> None:
    """With auto-creation on (Kafka's default) a producer's metadata request creates the topic."""
    assert driver.produce(topic, [Message(b"first")], ProducerSettings())
    eventually(lambda: assert_partition_count(admin, topic, 1))


def test_produce_without_autocreate(
    client: str, brokers: BrokerPool, drivers: DriverPool, topic: str
) -> None:
    """With auto-creation off, producing to an unknown topic fails in bounded time and creates nothing."""
    broker = brokers.get(NO_AUTO_CREATE)
    driver = drivers.get(client, broker.bootstrap)
    with pytest.raises(ClientError) as failure:
        driver.produce(topic, [Message(b"nowhere", partition=0)], ProducerSettings(timeout_s=5))
    assert failure.value.kind in {ErrorKind.UNKNOWN_TOPIC, ErrorKind.TIMEOUT}, failure.value.detail
    assert topic not in drivers.get("confluent-kafka", broker.bootstrap).list_topics()


def assert_partition_count(driver: Driver, topic: str, count: int) -> None:
    assert driver.partition_count(topic) == count


AUTO_CREATED_PARTITIONS = 3
MAX_POLLS = 3000  # 30 s of polls 10 ms apart: far beyond Kafka's creation (about 0.1 s)


def test_auto_created_topic_appears_whole(brokers: BrokerPool, topic: str) -> None:
    """What the first Metadata answer says about a topic it auto-creates, and what later ones say.

    Apache Kafka 4.3 (KRaft) answers the request that creates the topic with
    UNKNOWN_TOPIC_OR_PARTITION and no partitions (not LEADER_NOT_AVAILABLE), and the topic then
    appears whole: every partition at once, each with its leader. Clients rely on the second
    half: a consumer group leader that assigned from a partial topic would not rebalance when
    the rest appeared.
    """
    broker = brokers.get({"num.partitions": str(AUTO_CREATED_PARTITIONS)})
    with closing(RawMetadata(broker.bootstrap)) as metadata:
        assert metadata.topic(topic) == ("UNKNOWN_TOPIC_OR_PARTITION", [])
        seen = [metadata.topic(topic)]
        while not whole(seen[-1], metadata.broker_ids) and len(seen) < MAX_POLLS:
            assert seen[-1] == ("UNKNOWN_TOPIC_OR_PARTITION", []), seen[-1]
            time.sleep(0.01)
            seen.append(metadata.topic(topic))
    assert whole(seen[-1], metadata.broker_ids), seen[-3:]


def whole(answer: tuple[str, list[tuple[str, int]]], broker_ids: set[int]) -> bool:
    """Every partition listed without an error, each led by a broker the answer lists."""
    error, partitions = answer
    return (
        error == "NONE"
        and len(partitions) == AUTO_CREATED_PARTITIONS
        and all(code == "NONE" and leader in broker_ids for code, leader in partitions)
    )
