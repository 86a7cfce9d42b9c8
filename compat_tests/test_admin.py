"""Admin API: topic lifecycle, configs and partitions, as each client's admin API does them."""

from __future__ import annotations

import pytest

from compat_tests.drivers.base import ClientError, Driver, ErrorKind, Message, ProducerSettings
from compat_tests.helpers import eventually


def test_create_describe_delete(driver: Driver, topic: str) -> None:
    """Create with configs, see it listed and described, delete it, and see it gone."""
    driver.create_topic(topic, 3, {"retention.ms": "3600000"})

    def created() -> None:
        assert topic in driver.list_topics()
        assert driver.partition_count(topic) == 3
        assert driver.describe_configs(topic)["retention.ms"] == "3600000"

    eventually(created)
    with pytest.raises(ClientError) as duplicate:
        driver.create_topic(topic, 3)
    assert "exist" in duplicate.value.detail.lower()
    driver.delete_topic(topic)

    def deleted() -> None:
        assert topic not in driver.list_topics()
        with pytest.raises(ClientError) as unknown:
            driver.partition_count(topic)
        assert unknown.value.kind == ErrorKind.UNKNOWN_TOPIC

    eventually(deleted)


def test_alter_configs(driver: Driver, admin: Driver, topic: str) -> None:
    """A config set through the client is what every client then describes."""
    admin.create_topic(topic, 1)
    driver.alter_configs(topic, {"retention.ms": "7200000"})

    def altered() -> None:
        assert driver.describe_configs(topic)["retention.ms"] == "7200000"
        assert admin.describe_configs(topic)["retention.ms"] == "7200000"

    eventually(altered)


def test_create_partitions(driver: Driver, admin: Driver, topic: str) -> None:
    """Growing a topic adds partitions that take records at once."""
    admin.create_topic(topic, 2)
    driver.create_partitions(topic, 4)
    eventually(lambda: assert_partitions(admin, topic, 4))
    assert admin.produce(topic, [Message(b"in the new partition", partition=3)], ProducerSettings()) == [0]


def assert_partitions(driver: Driver, topic: str, count: int) -> None:
    assert driver.partition_count(topic) == count
