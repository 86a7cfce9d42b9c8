"""Admin requests that would take a broker down or lose group state, through each client's admin API.

What is asserted is what Apache Kafka 4.3 and Odradek both answer: an excessive partition count
is refused with POLICY_VIOLATION and creates nothing, DeleteRecords on ``__consumer_offsets`` is
INVALID_TOPIC_EXCEPTION, and a config change to ``__consumer_offsets`` that keeps it compacted
is accepted. (Kafka also accepts switching it to ``cleanup.policy=delete``, which Odradek
refuses: see the differences in ``compat_tests/README.md``.)
"""

from __future__ import annotations

import re

import pytest

from compat_tests.helpers import eventually
from compat_tests.kit.drivers.base import ClientError, ConsumerSettings, Driver

OFFSETS_TOPIC = "__consumer_offsets"

EXCESSIVE_PARTITIONS = 100_000
"""Far above the 10,000 partitions Kafka's controller accepts per request (Odradek's
``max.partitions.per.request`` default), and the most librdkafka's AdminClient lets a caller
ask for: it refuses larger counts itself, before sending anything."""

POLICY_VIOLATION = re.compile(r"polic", re.I)  # POLICY_VIOLATION, PolicyViolationException/Error
INVALID_TOPIC = re.compile(r"invalid.?topic|TOPIC_EXCEPTION", re.I)


def commit_an_offset(admin: Driver, topic: str) -> None:
    """Make sure ``__consumer_offsets`` exists and holds something: commit for a fresh group.

    Kafka creates the topic when a group coordinator is first looked up, Odradek on the first
    write to it; a commit is both.
    """
    admin.create_topic(topic, 1)

    def commit() -> None:
        # Retried: right after start-up and creation Kafka may still answer NOT_COORDINATOR or
        # UNKNOWN_TOPIC_OR_PARTITION.
        with admin.consumer(ConsumerSettings(group=f"{topic}-group")) as consumer:
            consumer.assign({(topic, 0): 0})
            consumer.commit({(topic, 0): 0})

    eventually(commit)
    eventually(lambda: admin.partition_count(OFFSETS_TOPIC))


def test_excessive_partition_count(driver: Driver, admin: Driver, topic: str) -> None:
    """CreateTopics with far too many partitions is a policy violation and creates nothing."""
    with pytest.raises(ClientError) as refused:
        driver.create_topic(topic, EXCESSIVE_PARTITIONS)
    assert POLICY_VIOLATION.search(refused.value.detail), refused.value.detail
    assert topic not in admin.list_topics()


def test_delete_records_on_consumer_offsets(driver: Driver, admin: Driver, topic: str) -> None:
    """Committed offsets cannot be deleted record by record: the topic is internal."""
    commit_an_offset(admin, topic)
    with pytest.raises(ClientError) as refused:
        driver.delete_records(OFFSETS_TOPIC, 0, 0)
    assert INVALID_TOPIC.search(refused.value.detail), refused.value.detail


def test_consumer_offsets_config_keeping_compaction(driver: Driver, admin: Driver, topic: str) -> None:
    """A change that keeps ``__consumer_offsets`` compacted is accepted and described.

    The values are the topic's defaults, so the session's other scenarios see no change; they
    are sent explicitly because some clients (aiokafka) only have the legacy AlterConfigs, which
    resets every key it is not given.
    """
    commit_an_offset(admin, topic)
    driver.alter_configs(OFFSETS_TOPIC, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.5"})

    def described() -> None:
        configs = admin.describe_configs(OFFSETS_TOPIC)
        assert configs["cleanup.policy"] == "compact"
        assert float(configs["min.cleanable.dirty.ratio"]) == 0.5

    eventually(described)
