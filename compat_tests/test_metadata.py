"""Metadata for unknown topics, with and without auto.create.topics.enable."""

from __future__ import annotations

import pytest

from compat_tests.drivers.base import ClientError, Driver, ErrorKind, Message, ProducerSettings
from compat_tests.helpers import eventually
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
