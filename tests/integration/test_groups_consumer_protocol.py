"""KIP-848 consumer groups (``group.protocol=consumer``) through librdkafka.

The coordinator assigns partitions itself; members converge through ConsumerGroupHeartbeat.
The broker runs with a short heartbeat interval and session timeout so that convergence and
failure detection take seconds, not Kafka's default 5 s / 45 s.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.confluent import ConfluentAdmin, ConfluentDriver
from tests.integration.test_groups_failover import Victim, check_survivor_takes_over_after_the_session
from tests.integration.test_groups_sharing import (
    Member,
    create_topic,
    deliver_once,
    filled_topic,
    produce,
    start,
    stop,
    values,
    wait_for_all,
    wait_for_balance,
)
from tests.integration.waiting import wait_until


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[OdradekProcess]:
    with OdradekProcess(
        tmp_path / "broker",
        {"group.consumer.heartbeat.interval.ms": "500", "group.consumer.session.timeout.ms": "6000"},
    ) as process:
        yield process


def members(bootstrap: str, topic: str, group: str, count: int, first: int = 0) -> list[Member]:
    return [
        Member(ConfluentDriver, bootstrap, topic, group, f"cg-{i}", group_protocol="consumer")
        for i in range(first, count)
    ]


def test_consumer_protocol_members_share_partitions_and_rebalance(broker: OdradekProcess) -> None:
    bootstrap, topic, group = broker.bootstrap, "kip848-share", "kip848-group"
    create_topic(bootstrap, topic)
    group_members = members(bootstrap, topic, group, 3)
    start(*group_members)
    try:
        wait_for_balance(group_members, sizes=[2, 2, 2])
        deliver_once(bootstrap, topic, group_members, values("first", 600))

        fourth = members(bootstrap, topic, group, 4, first=3)
        start(*fourth)
        group_members += fourth
        wait_for_balance(group_members, sizes=[1, 1, 2, 2])
        deliver_once(bootstrap, topic, group_members, values("second", 300))

        admin = ConfluentAdmin(bootstrap)
        assert admin.list_groups()[group].type == "consumer"

        def described_stable() -> bool:
            """Members that kept their partitions learn the new epoch on their next heartbeat."""
            description = admin.describe_group(group)
            owned = sorted(p for member in description.members for _, p in member)
            return description.state == "Stable" and len(description.members) == 4 and owned == list(range(6))

        wait_until(described_stable, "the group to be described as stable with 4 members owning 6 partitions")
    finally:
        stop(*group_members)


def test_partitions_of_a_killed_consumer_protocol_member_move_after_its_session(
    broker: OdradekProcess,
) -> None:
    bootstrap, topic, group = broker.bootstrap, "kip848-kill", "kip848-kill-group"
    create_topic(bootstrap, topic)
    victim = Victim("confluent-kafka", bootstrap, topic, group, "consumer")
    [survivor] = members(bootstrap, topic, group, 1)
    check_survivor_takes_over_after_the_session(bootstrap, topic, victim, survivor, 60)


def test_consumer_protocol_group_resumes_from_committed_offsets_after_a_restart(
    broker: OdradekProcess,
) -> None:
    bootstrap, topic, group = broker.bootstrap, "kip848-restart", "kip848-restart-group"
    before = filled_topic(bootstrap, topic, 2, "before", 100)
    [member] = members(bootstrap, topic, group, 1)
    start(member)
    try:
        wait_for_all([member], before)
        time.sleep(1.5)  # past an auto-commit
    finally:
        stop(member)
    broker.restart()
    after = values("after", 50)
    produce(bootstrap, topic, after, 2)
    [member] = members(bootstrap, topic, group, 1)
    start(member)
    try:
        seen = wait_for_all([member], after)
        assert set(seen.values()) == {1}
        assert not set(member.values()) & set(before)
    finally:
        stop(member)
