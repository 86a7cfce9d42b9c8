"""Consumer groups through stock clients: members share a topic's partitions, each message once.

Every scenario waits until the group is stable (the members' assignments are disjoint and
cover the topic) before producing, so the only way a message could be seen twice or not at
all is a coordinator bug, not a rebalance racing a commit.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import Any

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.aiokafka_driver import AiokafkaDriver
from compat_tests.kit.drivers.base import ConsumerSettings, Driver, Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentDriver
from compat_tests.kit.drivers.kafka_python import KafkaPythonDriver
from compat_tests.kit.raw_protocol import RawClient
from tests.integration.waiting import wait_until

PARTITIONS = 6


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    with RawClient(bootstrap) as client:
        client.create_topic(topic, partitions)


def produce(bootstrap: str, topic: str, values: list[bytes], partitions: int = PARTITIONS) -> None:
    """Spread ``values`` over every partition."""
    messages = [Message(value, partition=i % partitions) for i, value in enumerate(values)]
    ConfluentDriver(bootstrap).produce(topic, messages, ProducerSettings())


def values(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(count)]


def filled_topic(bootstrap: str, topic: str, partitions: int, prefix: str, count: int) -> list[bytes]:
    """A new topic of ``partitions`` partitions holding ``count`` values (``prefix-i``, spread
    over every partition); returns the values."""
    create_topic(bootstrap, topic, partitions)
    written = values(prefix, count)
    produce(bootstrap, topic, written, partitions)
    return written


class Member(threading.Thread):
    """One group member: a consumer of ``client`` polling in its own thread, subscribed to
    ``topic`` from the earliest offset, auto-committing every 500 ms, with the member's name as
    its client id; ``settings`` are further :class:`ConsumerSettings`. It records what it got
    and what it owns."""

    def __init__(
        self, client: type[Driver], bootstrap: str, topic: str, group: str, name: str, **settings: Any
    ) -> None:
        super().__init__(name=name, daemon=True)
        self._client, self._address, self._topic = client, bootstrap, topic
        self._settings = ConsumerSettings(
            group=group, reset="earliest", client_id=name, auto_commit_ms=500, **settings
        )
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.received: list[tuple[int, int, bytes]] = []
        self.assignment: frozenset[int] = frozenset()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            with (
                closing(self._client(self._address)) as driver,
                driver.consumer(self._settings) as consumer,
            ):
                consumer.subscribe([self._topic])
                while not self.stop.is_set():
                    for record in consumer.poll(500, 0.1):
                        self.got(record.partition, record.offset, record.value)
                    self.assignment = frozenset(p for _, p in consumer.assignment())
        except BaseException as exc:  # surfaced by the test through .failure
            self.failure = exc

    def got(self, partition: int, offset: int, value: bytes) -> None:
        with self.lock:
            self.received.append((partition, offset, value))

    def values(self) -> list[bytes]:
        with self.lock:
            return [value for _, _, value in self.received]


def start(*members: Member) -> None:
    for member in members:
        member.start()


def stop(*members: Member) -> None:
    for member in members:
        member.stop.set()
    for member in members:
        member.join(timeout=30)
        assert not member.is_alive(), f"{member.name} did not close within 30 s"
        assert member.failure is None, member.failure


def wait_for_balance(
    members: list[Member], partitions: int = PARTITIONS, sizes: list[int] | None = None
) -> None:
    """Until every member owns something and together they own each partition exactly once
    (with ``sizes``: until the members also own that many partitions each, in any order; an
    incremental protocol passes through covering states on its way there)."""

    def balanced() -> bool:
        for member in members:
            assert member.failure is None, member.failure
        owned = [member.assignment for member in members]
        return (
            all(owned)
            and sum(map(len, owned)) == partitions
            and frozenset().union(*owned) == set(range(partitions))
            and (sizes is None or sorted(map(len, owned)) == sorted(sizes))
        )

    wait_until(balanced, f"{len(members)} members to share {partitions} partitions")


def wait_for_all(members: list[Member], expected: list[bytes]) -> Counter[bytes]:
    wanted = set(expected)

    def seen() -> Counter[bytes]:
        return Counter(v for member in members for v in member.values() if v in wanted)

    wait_until(lambda: set(seen()) == wanted, f"{len(wanted)} messages")
    time.sleep(1)  # give duplicates, if any, the chance to show up
    return seen()


def deliver_once(bootstrap: str, topic: str, members: list[Member], expected: list[bytes]) -> None:
    """Produce ``expected`` and wait until the members consumed every message exactly once."""
    produce(bootstrap, topic, expected)
    assert set(wait_for_all(members, expected).values()) == {1}


@contextmanager
def member_of_filled_topic(
    client: type[Driver], bootstrap: str, topic: str, group: str, partitions: int, count: int
) -> Iterator[Member]:
    """A member of ``group`` (named ``{group}-member``) that has consumed all of a new topic of
    ``partitions`` partitions filled with ``count`` values; stopped however the block ends."""
    expected = filled_topic(bootstrap, topic, partitions, topic, count)
    member = Member(client, bootstrap, topic, group, f"{group}-member")
    start(member)
    try:
        wait_for_all([member], expected)
        yield member
    finally:
        stop(member)


@contextmanager
def balanced_group(
    bootstrap: str, topic: str, count: int, make: Callable[[int], Member]
) -> Iterator[list[Member]]:
    """A new topic shared by ``count`` started members (``make(i)``), once balanced; every member
    in the list, including any the block appends, is stopped however the block ends."""
    create_topic(bootstrap, topic)
    members = [make(i) for i in range(count)]
    start(*members)
    try:
        wait_for_balance(members)
        yield members
    finally:
        stop(*members)


def test_kafka_python_members_share_partitions_and_a_fourth_member_rebalances(
    odradek_broker: OdradekProcess,
) -> None:
    bootstrap, topic, group = odradek_broker.bootstrap, "kp-share", "kp-group"

    def member(i: int) -> Member:
        return Member(KafkaPythonDriver, bootstrap, topic, group, f"kp-{i}")

    with balanced_group(bootstrap, topic, 3, member) as members:
        assert sorted(len(m.assignment) for m in members) == [2, 2, 2]
        deliver_once(bootstrap, topic, members, values("first", 600))
        for each in members:
            assert {p for p, _, _ in each.received} <= each.assignment

        fourth = member(3)
        start(fourth)
        members.append(fourth)
        wait_for_balance(members)
        assert sorted(len(m.assignment) for m in members) == [1, 1, 2, 2]
        deliver_once(bootstrap, topic, members, values("second", 300))
        assert fourth.values(), "the new member got partitions and messages"


@pytest.mark.parametrize("client", [ConfluentDriver, AiokafkaDriver], ids=lambda client: client.name)
def test_members_share_partitions_exactly_once(odradek_broker: OdradekProcess, client: type[Driver]) -> None:
    bootstrap, prefix = odradek_broker.bootstrap, client.name
    topic, group = f"{prefix}-share", f"{prefix}-group"
    with balanced_group(
        bootstrap, topic, 3, lambda i: Member(client, bootstrap, topic, group, f"{prefix}-{i}")
    ) as members:
        deliver_once(bootstrap, topic, members, values(prefix, 600))


def test_cooperative_sticky_members_share_partitions(odradek_broker: OdradekProcess) -> None:
    """librdkafka's incremental protocol rides on the same JoinGroup/SyncGroup rounds."""
    bootstrap, topic, group = odradek_broker.bootstrap, "coop-share", "coop-group"

    def member(i: int) -> Member:
        return Member(ConfluentDriver, bootstrap, topic, group, f"coop-{i}", assignor="cooperative-sticky")

    with balanced_group(bootstrap, topic, 2, member) as members:
        third = member(2)
        start(third)
        members.append(third)
        wait_for_balance(members, sizes=[2, 2, 2])
        deliver_once(bootstrap, topic, members, values("coop", 300))


def test_two_groups_each_get_every_message(odradek_broker: OdradekProcess) -> None:
    bootstrap, topic = odradek_broker.bootstrap, "fan-out"
    create_topic(bootstrap, topic)
    blue = [Member(KafkaPythonDriver, bootstrap, topic, "blue", f"blue-{i}") for i in range(2)]
    green = [Member(ConfluentDriver, bootstrap, topic, "green", "green-0")]
    start(*blue, *green)
    try:
        wait_for_balance(blue)
        wait_for_balance(green)
        expected = values("fan", 400)
        produce(bootstrap, topic, expected)
        assert set(wait_for_all(blue, expected).values()) == {1}
        assert set(wait_for_all(green, expected).values()) == {1}
    finally:
        stop(*blue, *green)


def test_members_of_three_clients_share_one_group_with_the_range_assignor(
    odradek_broker: OdradekProcess,
) -> None:
    """kafka-python, librdkafka and aiokafka in one group agree on "range"; a fourth member
    joining moves partitions to it, and every message is still consumed exactly once."""
    bootstrap, topic, group = odradek_broker.bootstrap, "mixed-share", "mixed-group"
    create_topic(bootstrap, topic)
    members = [
        Member(client, bootstrap, topic, group, name, assignor="range")
        for client, name in (
            (KafkaPythonDriver, "mixed-kp"),
            (ConfluentDriver, "mixed-ck"),
            (AiokafkaDriver, "mixed-aio"),
        )
    ]
    start(*members)
    try:
        wait_for_balance(members)
        deliver_once(bootstrap, topic, members, values("mixed-a", 300))
        fourth = Member(ConfluentDriver, bootstrap, topic, group, "mixed-ck-2", assignor="range")
        start(fourth)
        members.append(fourth)
        wait_for_balance(members)
        deliver_once(bootstrap, topic, members, values("mixed-b", 300))
    finally:
        stop(*members)
