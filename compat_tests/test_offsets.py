"""Offsets: empty topics, auto.offset.reset policies, out-of-range positions and ListOffsets."""

from __future__ import annotations

import uuid

import pytest

from compat_tests.helpers import poll_for_error, poll_until
from compat_tests.kit.drivers.base import ConsumerSettings, Driver, ErrorKind, Message, ProducerSettings

QUIET_S = 3.0
"""How long a consumer must stay quiet to show that there is nothing for it."""


def fill(admin: Driver, topic: str, count: int, start: int = 0) -> None:
    admin.produce(
        topic, [Message(f"m{start + i}".encode(), partition=0) for i in range(count)], ProducerSettings()
    )


def test_empty_topic(driver: Driver, admin: Driver, topic: str) -> None:
    """An empty partition has earliest == latest == 0 and a consumer of it just gets nothing."""
    admin.create_topic(topic, 1)
    assert driver.list_offsets(topic, [0], "earliest") == {0: 0}
    assert driver.list_offsets(topic, [0], "latest") == {0: 0}
    with driver.consumer(ConsumerSettings(reset="earliest")) as consumer:
        consumer.assign({(topic, 0): None})
        assert consumer.poll(10, QUIET_S) == []


@pytest.mark.parametrize("reset", ["earliest", "latest", "none"])
@pytest.mark.parametrize("start", ["no-commit", "out-of-range"])
@pytest.mark.usefixtures("group_coordinator")
def test_offset_reset(driver: Driver, admin: Driver, topic: str, start: str, reset: str) -> None:
    """auto.offset.reset decides where a consumer without a valid position starts.

    ``no-commit``: a fresh group has no committed offset; ``out-of-range``: the consumer seeks
    past the end, so its fetch gets OFFSET_OUT_OF_RANGE. earliest rewinds to 0, latest waits at
    the end for new records, none surfaces an error to the application.
    """
    admin.create_topic(topic, 1)
    fill(admin, topic, 5)
    settings = ConsumerSettings(group=f"compat-reset-{uuid.uuid4().hex[:8]}", reset=reset)
    with driver.consumer(settings) as consumer:
        consumer.assign({(topic, 0): None if start == "no-commit" else 100})
        if reset == "earliest":
            assert [r.offset for r in poll_until(consumer, 5)] == [0, 1, 2, 3, 4]
        elif reset == "latest":
            assert consumer.poll(10, QUIET_S) == []
            fill(admin, topic, 2, start=5)
            assert [r.value for r in poll_until(consumer, 2)] == [b"m5", b"m6"]
        else:
            error = poll_for_error(consumer)
            assert error.kind == ErrorKind.OFFSET_RESET_NONE, error.detail


def test_list_offsets(driver: Driver, admin: Driver, topic: str) -> None:
    """ListOffsets: earliest, latest, and by timestamp (first offset with timestamp >= target, else -1)."""
    # Years-old timestamps: no retention, or a retention check could delete them mid-test.
    admin.create_topic(topic, 2, {"retention.ms": "-1"})
    base = 1_700_000_000_000
    messages = [Message(f"t{i}".encode(), partition=0, timestamp_ms=base + i * 1000) for i in range(5)]
    admin.produce(topic, messages, ProducerSettings())
    assert driver.list_offsets(topic, [0, 1], "earliest") == {0: 0, 1: 0}
    assert driver.list_offsets(topic, [0, 1], "latest") == {0: 5, 1: 0}
    assert driver.list_offsets(topic, [0, 1], base) == {0: 0, 1: -1}
    assert driver.list_offsets(topic, [0, 1], base + 1500) == {0: 2, 1: -1}
    assert driver.list_offsets(topic, [0], base + 4000) == {0: 4}
    assert driver.list_offsets(topic, [0], base + 4001) == {0: -1}
