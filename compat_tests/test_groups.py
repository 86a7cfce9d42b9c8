"""Consumer groups: join, rebalance, commit, resume, describe and lag.

Every scenario runs with both group protocols (``[classic]`` and ``[consumer]`` rows of the
matrix): a broker implements KIP-848's server-side assignment apart from the classic protocol, and
clients that lack one protocol skip its rows with the reason. What is asserted holds for both
protocols on Apache Kafka: a described group is "Stable" once its members own the partitions, and
"Empty" once they left.
"""

from __future__ import annotations

import time
import uuid

import pytest

from compat_tests.helpers import WAIT_S, eventually, poll_assignments_until, poll_until
from compat_tests.kit.drivers.base import (
    GROUP_PROTOCOLS,
    ConsumerSettings,
    Driver,
    GroupDescription,
    Message,
    ProducerSettings,
    TopicPartition,
)
from compat_tests.topic_metadata import wait_until_every_broker_knows

pytestmark = pytest.mark.parametrize("group_protocol", GROUP_PROTOCOLS)


def create_known_topic(admin: Driver, topic: str, partitions: int) -> None:
    """Create ``topic`` and return once the broker's Metadata lists it with a leader for every partition.

    Kafka answers CreateTopics before its broker has applied the topic from the metadata log, even
    on one node; a consumer that subscribes in between is told the topic is unknown (librdkafka's
    "Subscribed topic not available", which the confluent-kafka driver raises). On a loaded machine
    that gap is long enough to hit."""
    admin.create_topic(topic, partitions)
    wait_until_every_broker_knows(admin.bootstrap.split(","), topic, partitions)


def new_group() -> str:
    return f"compat-group-{uuid.uuid4().hex[:8]}"


def test_group_rebalance(driver: Driver, admin: Driver, topic: str, group_protocol: str) -> None:
    """One member owns every partition; when a second joins they split them without overlap."""
    create_known_topic(admin, topic, 4)
    everything = {(topic, p) for p in range(4)}
    group = new_group()
    settings = ConsumerSettings(group=group, group_protocol=group_protocol)
    with driver.consumer(settings) as first, driver.consumer(settings) as second:
        first.subscribe([topic])
        deadline = time.monotonic() + WAIT_S
        while first.assignment() != everything:
            assert time.monotonic() < deadline, f"first member got {first.assignment()}"
            first.poll(10, 0.5)
        second.subscribe([topic])

        def split(seen: list[set[TopicPartition]]) -> bool:
            mine, theirs = seen
            return bool(mine and theirs and not mine & theirs and mine | theirs == everything)

        poll_assignments_until([first, second], split, WAIT_S * 1.5)
        description = eventually(lambda: stable_with(driver, group, 2))
        assert set().union(*description.members) == everything


def stable_with(driver: Driver, group: str, members: int) -> GroupDescription:
    description = driver.describe_group(group)
    assert (description.state, len(description.members)) == ("Stable", members), description
    return description


def test_group_commit_resume(driver: Driver, admin: Driver, topic: str, group_protocol: str) -> None:
    """Offsets committed by one consumer are where the next consumer of the group starts."""
    create_known_topic(admin, topic, 1)
    admin.produce(topic, [Message(f"r{i}".encode(), partition=0) for i in range(10)], ProducerSettings())
    group = new_group()
    settings = ConsumerSettings(group=group, reset="earliest", group_protocol=group_protocol)
    with driver.consumer(settings) as consumer:
        consumer.subscribe([topic])
        first = poll_until(consumer, 4)
        assert [r.offset for r in first] == [0, 1, 2, 3]
        consumer.commit({(topic, 0): 4})
    assert driver.group_offsets(group) == {(topic, 0): 4}
    with driver.consumer(settings) as restarted:
        restarted.subscribe([topic])
        assert [r.offset for r in poll_until(restarted, 6)] == [4, 5, 6, 7, 8, 9]


def test_group_describe_lag(driver: Driver, admin: Driver, topic: str, group_protocol: str) -> None:
    """A live group is Stable with its member's partitions; lag is latest minus committed."""
    create_known_topic(admin, topic, 2)
    admin.produce(topic, [Message(b"x", partition=i % 2) for i in range(10)], ProducerSettings())
    group = new_group()
    settings = ConsumerSettings(group=group, reset="earliest", group_protocol=group_protocol)
    with driver.consumer(settings) as consumer:
        consumer.subscribe([topic])
        poll_until(consumer, 10)
        consumer.commit({(topic, 0): 2, (topic, 1): 5})
        description = eventually(lambda: stable_with(driver, group, 1))
        assert description.members == [frozenset({(topic, 0), (topic, 1)})]
        committed = driver.group_offsets(group)
        latest = driver.list_offsets(topic, [0, 1], "latest")
        assert {p: latest[p] - committed[(topic, p)] for p in (0, 1)} == {0: 3, 1: 0}
    eventually(lambda: assert_state(driver, group, "Empty"))


def assert_state(driver: Driver, group: str, state: str) -> None:
    assert driver.describe_group(group).state == state
