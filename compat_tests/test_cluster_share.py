"""A share group (KIP-932) on a three-broker cluster whose partition leader is killed and
restarted (run with ``--nodes 3``; skipped otherwise).

Two members of a share group (kafka-clients 4.4.0's ``KafkaShareConsumer``, explicit
acknowledgement) accept every record of a partition with three replicas. Mid-stream, between a
member's poll and its commit, the partition's leader is SIGKILLed: that commit fails or never
reaches a broker, so its records may be delivered again, from the new leader, which loads the
share-partition's state from the share coordinator. More records are written while it is down,
and it is restarted. :func:`compat_tests.kit.share_history.check_failover` then checks the
members' history: no record is delivered after the broker confirmed its ACCEPT (commitSync
without error), and every record written, before, during and after the failover, is accepted.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from compat_tests.chaos import wait_until_replicated
from compat_tests.kit.clusters import CLUSTER_SIZE, Cluster
from compat_tests.kit.drivers.base import ClientError, Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentAdmin
from compat_tests.kit.drivers.java import JavaProcess
from compat_tests.kit.drivers.java_share import ShareAdmin, ShareConsumer
from compat_tests.kit.share_history import ACCEPT, Acknowledged, Delivered, Event, Record, check_failover
from compat_tests.pools import DriverPool
from compat_tests.topic_metadata import wait_until_every_broker_lists

pytestmark = pytest.mark.cluster

BEFORE, DURING, AFTER = 200, 100, 50
"""Records written before the kill, while the old leader is down, and once it is back."""
KILL_AFTER = 60
"""The leader is killed once this many ACCEPTs were confirmed."""
WITHIN_S = 90.0


@pytest.fixture
def healthy(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster with every node registered; a node the scenario left down is started again."""
    wait_until_every_broker_lists(list(cluster.nodes.values()), len(cluster.nodes))
    yield cluster
    cluster.start_stopped()


class Members:
    """The members, polled in turn; each poll's records accepted and committed, all logged."""

    def __init__(self, consumers: dict[str, ShareConsumer]) -> None:
        self.consumers = consumers
        self.events: list[Event] = []
        self.accepted: set[Record] = set()

    def step(self, name: str, before_commit: Callable[[], None] = lambda: None) -> None:
        consumer = self.consumers[name]
        batch = consumer.poll(0.3)
        for d in batch:
            self.events.append(Delivered(name, d.partition, d.offset, d.delivery_count))
        if not batch:
            return
        consumer.acknowledge(batch, ACCEPT)
        before_commit()
        outcome = consumer.commit()
        for d in batch:
            error = outcome.get((d.topic, d.partition), "commitSync named no outcome for the partition")
            self.events.append(Acknowledged(name, d.partition, d.offset, ACCEPT, error))
            if error is None:
                self.accepted.add((d.partition, d.offset))

    def until_accepted(self, count: int, deadline: float) -> None:
        while len(self.accepted) < count:
            assert time.monotonic() < deadline, f"{len(self.accepted)} of {count} records accepted"
            for name in self.consumers:
                self.step(name)


def test_share_group_loses_and_redelivers_no_accepted_record_across_leader_failover(
    healthy: Cluster, share_client: JavaProcess, drivers: DriverPool, topic: str
) -> None:
    """The leader of the group's partition SIGKILLed between a poll and its commit, records
    written while it is down, then restarted: every record is accepted, and none is delivered
    again once its ACCEPT was confirmed."""
    admin = ConfluentAdmin(healthy.bootstrap)
    try:
        admin.create_topic(topic, 1, replication_factor=CLUSTER_SIZE)
    finally:
        admin.close()
    wait_until_replicated(healthy, [topic])
    group = f"share-{topic}"
    ShareAdmin(share_client, healthy.bootstrap).set_group_configs(
        group, {"share.auto.offset.reset": "earliest"}
    )
    producer = drivers.get("confluent-kafka", healthy.bootstrap)
    written = 0

    def write(count: int) -> None:
        nonlocal written
        messages = [Message(f"r{written + i}".encode(), partition=0) for i in range(count)]
        producer.produce(topic, messages, ProducerSettings(idempotence=True))
        written += count

    write(BEFORE)
    members = Members(
        {
            name: ShareConsumer(
                share_client, healthy.bootstrap, group, [topic], explicit=True, max_records=10, client_id=name
            )
            for name in ("member-a", "member-b")
        }
    )
    started = time.monotonic()
    deadline = started + WITHIN_S
    try:
        members.until_accepted(KILL_AFTER, deadline)
        leader = healthy.leader_of(topic, 0)
        killed: list[float] = []

        def kill() -> None:
            healthy.kill(leader)
            killed.append(time.monotonic())

        while not killed:  # the kill lands between a poll that returned records and its commit
            assert time.monotonic() < deadline, "no records to hold when the leader dies"
            for name in members.consumers:
                if not killed:
                    members.step(name, before_commit=kill)
        write(DURING)  # acks=all: acknowledged by the new leader and the last follower
        restart = threading.Thread(target=healthy.start, args=(leader,), daemon=True)
        restart.start()
        members.until_accepted(BEFORE + DURING, deadline)
        restart.join(max(0.0, deadline - time.monotonic()))
        assert not restart.is_alive(), f"node {leader} not back in time"
        assert healthy.members[leader].running(), f"node {leader} stopped again after its restart"
        restarted_s = time.monotonic() - killed[0]
        write(AFTER)
        members.until_accepted(written, deadline)
        quiet = time.monotonic() + 1.5
        while time.monotonic() < quiet:
            for name in members.consumers:
                members.step(name)
        report = check_failover(members.events, {(0, o) for o in range(written)})
        print(
            f"\nshare failover on {healthy.kind}: node {leader} killed, back after {restarted_s:.1f} s; "
            f"{report}; {time.monotonic() - started:.1f} s"
        )
        assert not report.violations, str(report)
    finally:
        for consumer in members.consumers.values():
            with contextlib.suppress(ClientError):  # a member of a broken run: its JVM closes it
                consumer.close()
