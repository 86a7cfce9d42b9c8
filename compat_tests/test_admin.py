"""Admin API: topic lifecycle, configs and partitions, as each client's admin API does them."""

from __future__ import annotations

import uuid

import pytest

from compat_tests.helpers import eventually
from compat_tests.kit.drivers.base import (
    ClientError,
    Driver,
    ErrorKind,
    GroupDescription,
    Message,
    ProducerSettings,
)


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


def test_describe_group_nobody_joined(driver: Driver) -> None:
    """A group nobody ever joined: older clients (DescribeGroups v5 and below, or clients that
    ignore the code) describe it as Dead with no members; clients that negotiate DescribeGroups v6
    and honour its GROUP_ID_NOT_FOUND (the Java client from 4.0) report the group as not found."""
    group = f"compat-nobody-{uuid.uuid4().hex[:8]}"

    def described() -> GroupDescription | ClientError:
        # On a fresh broker the coordinator is not available until __consumer_offsets exists,
        # and some admin clients report that instead of retrying.
        try:
            return driver.describe_group(group)
        except ClientError as failure:
            if failure.kind != ErrorKind.GROUP_NOT_FOUND:
                raise
            return failure

    answer = eventually(described)
    if isinstance(answer, ClientError):
        assert f"Group {group} not found." in answer.detail
    else:
        assert (answer.state, answer.members) == ("Dead", [])
