"""Share groups (KIP-932, "queues for Kafka"): the stock Java share consumer and Kafka's tools.

Only kafka-clients 4.x has a share consumer, so these scenarios are not parametrized over the
clients: they drive ``KafkaShareConsumer`` of kafka-clients 4.4.0 through
``java/ShareClient.java`` (``kit/drivers/java_share.py``), one JVM for the module whose consumers
are named handles the scenario polls in turn, and Kafka 4.3.1's ``kafka-share-groups.sh`` and
``kafka-console-share-consumer.sh`` from their main classes. Records are produced with
confluent-kafka (the suite's setup client). What they assert is what Apache Kafka 4.3.1 does:
which records each member is given and with which delivery count, what an acknowledgement
changes, and the error classes and tool output.

Share groups need nothing switched on in Kafka 4.3.1: a freshly formatted cluster finalizes
``share.version=1``. The broker settings these scenarios rely on are in
``kit/brokers.py: SUITE_OVERRIDES`` (a share group's lock duration may go down to 1 s, and members
heartbeat every 500 ms so a new member gets its assignment quickly); each scenario sets its own
group's configs (``share.auto.offset.reset`` and the like) with incrementalAlterConfigs on the
GROUP resource before its first member joins.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from compat_tests.helpers import WAIT_S, eventually
from compat_tests.kafka_tools import ToolRun, ok, run_tool
from compat_tests.kit.brokers import RunningBroker
from compat_tests.kit.drivers.base import ClientError, Driver, Message, ProducerSettings
from compat_tests.kit.drivers.java import JavaProcess
from compat_tests.kit.drivers.java_share import Delivery, ShareAdmin, ShareConsumer, share_jvm
from compat_tests.kit.raw_protocol import addresses_by_id
from compat_tests.topic_metadata import topic_partitions, wait_until_every_broker_knows

SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
CONSOLE_SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"
EARLIEST = {"share.auto.offset.reset": "earliest"}
INVALID_RECORD_STATE = "org.apache.kafka.common.errors.InvalidRecordStateException"
INVALID_CONFIG = "org.apache.kafka.common.errors.InvalidConfigurationException"
QUIET_S = 1.5
"""How long a scenario polls to show that nothing more is delivered."""
RELEASED_WITHIN_S = 10.0
"""A released record is delivered again well before the default 30 s lock would expire."""

OpenConsumer = Callable[..., ShareConsumer]


@pytest.fixture
def share_admin(share_client: JavaProcess, broker: RunningBroker) -> ShareAdmin:
    return ShareAdmin(share_client, broker.bootstrap)


@pytest.fixture
def group(topic: str) -> str:
    return f"share-{topic}"


@pytest.fixture
def open_consumer(share_client: JavaProcess, broker: RunningBroker) -> Iterator[OpenConsumer]:
    """``open_consumer(group, topic, explicit=..., max_records=..., client_id=...)``: a share
    consumer of the module's JVM subscribed to ``topic``; those still open when the scenario ends
    are closed."""
    opened: list[ShareConsumer] = []

    def open_one(group: str, topic: str, **options: Any) -> ShareConsumer:
        consumer = ShareConsumer(share_client, broker.bootstrap, group, [topic], **options)
        opened.append(consumer)
        return consumer

    yield open_one
    for consumer in opened:
        with contextlib.suppress(ClientError):  # the scenario closed it already
            consumer.close()


def produce(admin: Driver, topic: str, values: list[str], partitions: int = 1) -> None:
    """Each value as a record (key ``k<value>``), round-robin over ``partitions`` in order."""
    messages = [
        Message(value.encode(), key=f"k{value}".encode(), partition=i % partitions)
        for i, value in enumerate(values)
    ]
    admin.produce(topic, messages, ProducerSettings())


def poll_until(consumer: ShareConsumer, count: int, timeout_s: float = WAIT_S) -> list[Delivery]:
    """Poll until at least ``count`` records arrived (a poll may bring more), or fail."""
    deadline = time.monotonic() + timeout_s
    received: list[Delivery] = []
    while len(received) < count:
        assert time.monotonic() < deadline, (
            f"got {len(received)} of {count} records in {timeout_s}s: {received}"
        )
        received += consumer.poll(0.5)
    return received


def accept_until(
    consumer: ShareConsumer,
    count: int,
    within_s: float = WAIT_S,
    each: Callable[[list[Delivery]], None] = lambda batch: None,
) -> list[Delivery]:
    """Poll an explicitly acknowledging consumer until ``count`` records arrived, accepting each
    poll's records once ``each`` has seen them; fails after ``within_s``."""
    deadline = time.monotonic() + within_s
    received: list[Delivery] = []
    while len(received) < count:
        assert time.monotonic() < deadline, f"got {summary(received)} in {within_s}s"
        batch = consumer.poll(0.5)
        each(batch)
        consumer.acknowledge(batch, "ACCEPT")
        received += batch
    return received


def deliveries(count: int, offsets: range) -> list[tuple[int, str, int]]:
    """What :func:`summary` shows for records ``r<offset>`` delivered for the ``count``-th time."""
    return [(offset, f"r{offset}", count) for offset in offsets]


def poll_nothing(consumer: ShareConsumer, seconds: float = QUIET_S) -> None:
    """Poll for ``seconds``: nothing may be delivered."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        received = consumer.poll(0.3)
        assert not received, f"delivered again: {received}"


def summary(deliveries: list[Delivery]) -> list[tuple[int, str, int | None]]:
    """(offset, value, delivery count) of each delivery, ordered by offset."""
    return sorted((d.offset, (d.value or b"").decode(), d.delivery_count) for d in deliveries)


def join(
    share_admin: ShareAdmin, group: str, members: list[ShareConsumer]
) -> tuple[dict[str, Any], list[list[Delivery]]]:
    """Poll the (implicitly acknowledging) members in turn until describeShareGroups shows the
    group Stable with all of them, each assigned a partition (a share consumer joins its group
    on its first poll); the description, and what each member was given meanwhile."""
    given: list[list[Delivery]] = [[] for _ in members]
    deadline = time.monotonic() + WAIT_S
    while True:
        for i, member in enumerate(members):
            given[i] += member.poll(0.2)
        try:
            described = share_admin.describe(group)
        except ClientError:
            described = {"state": "not found"}  # before the first heartbeat
        if (
            described["state"] == "Stable"
            and len(described["members"]) == len(members)
            and all(member["assignment"] for member in described["members"])
        ):
            return described, given
        assert time.monotonic() < deadline, described


def lag_drains(share_admin: ShareAdmin, group: str, partitions: dict[tuple[str, int], int]) -> None:
    """listShareGroupOffsets reports each partition's lag as given (eventually: the share
    coordinator's state is written after the acknowledgements)."""

    def reported() -> None:
        lags = {tp: lag for tp, (_, lag) in share_admin.offsets(group).items()}
        assert lags == partitions, lags

    eventually(reported)


def test_members_share_one_partition(
    admin: Driver, share_admin: ShareAdmin, open_consumer: OpenConsumer, topic: str, group: str
) -> None:
    """Three members of one group on ONE partition (implicit acknowledgement, 4 records per
    fetch): every record is delivered once, to exactly one member, with delivery count 1; more
    than one member gets records; nothing is delivered again once all are acknowledged."""
    admin.create_topic(topic, 1)
    share_admin.set_group_configs(group, EARLIEST)
    values = [f"r{i}" for i in range(30)]
    produce(admin, topic, values)
    members = [open_consumer(group, topic, max_records=4, client_id=f"member-{i}") for i in range(3)]
    described, joining = join(share_admin, group, members)
    assert all(m["assignment"] == [[topic, 0]] for m in described["members"]), described
    given = dict(enumerate(joining))
    deadline = time.monotonic() + WAIT_S
    while sum(len(d) for d in given.values()) < len(values):
        assert time.monotonic() < deadline, given
        for i, member in enumerate(members):
            batch = member.poll(0.3)
            assert len(batch) <= 4, batch
            given[i] += batch
    everything = [d for batch in given.values() for d in batch]
    assert summary(everything) == deliveries(1, range(30))
    assert sum(1 for batch in given.values() if batch) >= 2, {i: summary(b) for i, b in given.items()}
    for member in members:
        member.commit()  # implicit mode: accepts what the last poll returned
    for member in members:
        poll_nothing(member, 0.5)
    lag_drains(share_admin, group, {(topic, 0): 0})


def test_explicit_acknowledgement(
    admin: Driver, share_admin: ShareAdmin, open_consumer: OpenConsumer, topic: str, group: str
) -> None:
    """share.acknowledgement.mode=explicit: ACCEPT ends a record's delivery, RELEASE delivers it
    again with delivery count 2, REJECT never delivers it again, RENEW (KIP-1222) keeps it
    acquired and the next poll returns it again, still at delivery count 1."""
    admin.create_topic(topic, 1)
    share_admin.set_group_configs(group, EARLIEST)
    produce(admin, topic, ["accepted", "released", "rejected", "renewed"])
    consumer = open_consumer(group, topic, explicit=True, max_records=4)
    first = poll_until(consumer, 4)
    assert summary(first) == [(0, "accepted", 1), (1, "released", 1), (2, "rejected", 1), (3, "renewed", 1)]
    assert [(d.key, d.partition) for d in first] == [
        (b"kaccepted", 0),
        (b"kreleased", 0),
        (b"krejected", 0),
        (b"krenewed", 0),
    ]
    accepted, released, rejected, renewed = first
    consumer.acknowledge([accepted], "ACCEPT")
    consumer.acknowledge([released], "RELEASE")
    consumer.acknowledge([rejected], "REJECT")
    consumer.acknowledge([renewed], "RENEW")
    assert consumer.commit() == {(topic, 0): None}
    again: list[Delivery] = []
    deadline = time.monotonic() + WAIT_S
    while {d.offset for d in again} != {1, 3}:
        assert time.monotonic() < deadline, summary(again)
        batch = consumer.poll(0.5)
        consumer.acknowledge(batch, "ACCEPT")
        again += batch
    assert summary(again) == [(1, "released", 2), (3, "renewed", 1)]
    assert consumer.commit() == {(topic, 0): None}
    poll_nothing(consumer)
    lag_drains(share_admin, group, {(topic, 0): 0})


def test_renew_keeps_a_record_past_its_lock(
    admin: Driver, share_admin: ShareAdmin, open_consumer: OpenConsumer, topic: str, group: str
) -> None:
    """With a 2 s lock, a record renewed (AcknowledgeType.RENEW) every few hundred ms stays with
    its member for more than twice that: another member is never given it, and the late ACCEPT
    succeeds."""
    admin.create_topic(topic, 1)
    share_admin.set_group_configs(group, {**EARLIEST, "share.record.lock.duration.ms": "2000"})
    produce(admin, topic, ["kept"])
    holder = open_consumer(group, topic, explicit=True, max_records=1, client_id="holder")
    other = open_consumer(group, topic, explicit=True, max_records=1, client_id="other")
    (record,) = poll_until(holder, 1)
    assert holder.lock_timeout_ms() == 2000
    acquired = time.monotonic()
    while time.monotonic() - acquired < 4.5:
        holder.acknowledge([record], "RENEW")
        assert holder.commit() == {(topic, 0): None}
        returned = holder.poll(0.3)
        assert summary(returned) == [(0, "kept", 1)]
        (record,) = returned
        assert other.poll(0.2) == []
    holder.acknowledge([record], "ACCEPT")
    assert holder.commit() == {(topic, 0): None}
    poll_nothing(other)


def test_implicit_acknowledgement(
    admin: Driver, share_admin: ShareAdmin, open_consumer: OpenConsumer, topic: str, group: str
) -> None:
    """share.acknowledgement.mode=implicit: the next poll accepts what the previous one
    returned, and closing releases what the last poll returned. A second member is given the
    released records with delivery count 2 and the rest with 1, never the accepted ones;
    commitSync accepts its last poll's records."""
    admin.create_topic(topic, 1)
    share_admin.set_group_configs(group, EARLIEST)
    produce(admin, topic, [f"r{i}" for i in range(9)])
    first = open_consumer(group, topic, max_records=3, client_id="first")
    polled = poll_until(first, 1)
    assert summary(polled) == deliveries(1, range(3))
    polled = poll_until(first, 1)  # accepts offsets 0-2
    assert summary(polled) == deliveries(1, range(3, 6))
    first.close()  # releases offsets 3-5
    second = open_consumer(group, topic, max_records=10, client_id="second")
    started = time.monotonic()
    given = poll_until(second, 6)
    assert time.monotonic() - started < RELEASED_WITHIN_S
    assert summary(given) == deliveries(2, range(3, 6)) + deliveries(1, range(6, 9))
    assert second.commit() == {(topic, 0): None}
    poll_nothing(second)
    lag_drains(share_admin, group, {(topic, 0): 0})


def test_lock_expiry_redelivers(
    admin: Driver, share_admin: ShareAdmin, open_consumer: OpenConsumer, topic: str, group: str
) -> None:
    """share.record.lock.duration.ms=2000 (a GROUP config; below the broker's
    group.share.min.record.lock.duration.ms it is refused): a member that acquires records and
    then neither acknowledges nor polls loses them when the lock expires; another member gets
    them with delivery count 2, and the first member's late ACCEPT fails with
    InvalidRecordStateException."""
    admin.create_topic(topic, 1)
    with pytest.raises(ClientError) as refused:
        share_admin.set_group_configs(group, {"share.record.lock.duration.ms": "999"})
    assert INVALID_CONFIG in str(refused.value) and "must be at least 1000" in str(refused.value)
    share_admin.set_group_configs(group, {**EARLIEST, "share.record.lock.duration.ms": "2000"})
    produce(admin, topic, [f"r{i}" for i in range(6)])
    stalled = open_consumer(group, topic, explicit=True, max_records=3, client_id="stalled")
    taken = poll_until(stalled, 1)
    acquired = time.monotonic()
    assert summary(taken) == deliveries(1, range(3))
    assert stalled.lock_timeout_ms() == 2000
    other = open_consumer(group, topic, explicit=True, max_records=10, client_id="other")

    def too_late(batch: list[Delivery]) -> None:
        """Once the records are another member's, the first member's ACCEPT is refused."""
        if any(d.offset < 3 for d in batch) and taken:
            assert time.monotonic() - acquired > 1.0, "redelivered before the 2 s lock expired"
            stalled.acknowledge(taken, "ACCEPT")
            taken.clear()
            (outcome,) = stalled.commit().values()
            assert outcome is not None and outcome.startswith(INVALID_RECORD_STATE + ": "), outcome

    given = accept_until(other, 6, each=too_late)
    assert summary(given) == deliveries(2, range(3)) + deliveries(1, range(3, 6))
    assert other.commit() == {(topic, 0): None}
    poll_nothing(other)
    lag_drains(share_admin, group, {(topic, 0): 0})


def test_delivery_count_limit(
    admin: Driver, share_admin: ShareAdmin, open_consumer: OpenConsumer, topic: str, group: str
) -> None:
    """share.delivery.count.limit=2 (the lowest a group may set; 1 and anything above the
    broker's group.share.max.delivery.count.limit, 10, are refused): a record released on each
    of its two deliveries is archived and never delivered again; later records still are."""
    admin.create_topic(topic, 1)
    for refused_value, message in (("1", "must be at least 2"), ("11", "less than or equal to")):
        with pytest.raises(ClientError) as refused:
            share_admin.set_group_configs(group, {"share.delivery.count.limit": refused_value})
        assert INVALID_CONFIG in str(refused.value) and message in str(refused.value)
    share_admin.set_group_configs(group, {**EARLIEST, "share.delivery.count.limit": "2"})
    produce(admin, topic, ["r0", "r1"])
    consumer = open_consumer(group, topic, explicit=True, max_records=10)
    for attempt in (1, 2):
        released = poll_until(consumer, 2)
        assert summary(released) == [(0, "r0", attempt), (1, "r1", attempt)]
        consumer.acknowledge(released, "RELEASE")
        assert consumer.commit() == {(topic, 0): None}
    poll_nothing(consumer)
    produce(admin, topic, ["later"])
    later = poll_until(consumer, 1)
    assert summary(later) == [(2, "later", 1)]
    consumer.acknowledge(later, "ACCEPT")
    assert consumer.commit() == {(topic, 0): None}
    lag_drains(share_admin, group, {(topic, 0): 0})


@pytest.mark.parametrize("ending", ["closed", "killed"])
def test_member_gone_mid_batch(
    admin: Driver,
    share_admin: ShareAdmin,
    open_consumer: OpenConsumer,
    topic: str,
    group: str,
    ending: str,
    broker: RunningBroker,
    tmp_path: Path,
) -> None:
    """A member holding records it never acknowledged is closed, or its process SIGKILLed:
    another member gets those records with delivery count 2 long before the (default 30 s) lock
    would expire; Kafka releases them when the share session ends or its connection drops."""
    admin.create_topic(topic, 1)
    share_admin.set_group_configs(group, EARLIEST)
    produce(admin, topic, [f"r{i}" for i in range(6)])
    own_jvm = share_jvm(tmp_path / "doomed-share-client.log") if ending == "killed" else None
    try:
        doomed = (
            open_consumer(group, topic, explicit=True, max_records=3, client_id="doomed")
            if own_jvm is None
            else ShareConsumer(own_jvm, broker.bootstrap, group, [topic], explicit=True, max_records=3)
        )
        survivor = open_consumer(group, topic, explicit=True, max_records=10, client_id="survivor")
        taken = poll_until(doomed, 1)
        assert summary(taken) == deliveries(1, range(3))
        if own_jvm is not None:
            own_jvm.kill()
        else:
            doomed.close()
        given = accept_until(survivor, 6, within_s=RELEASED_WITHIN_S)
        assert summary(given) == deliveries(2, range(3)) + deliveries(1, range(3, 6))
        assert survivor.commit() == {(topic, 0): None}
    finally:
        if own_jvm is not None:
            own_jvm.stop()


def test_one_fetch_acquires_at_most_max_records_over_all_its_partitions(
    admin: Driver,
    share_admin: ShareAdmin,
    open_consumer: OpenConsumer,
    topic: str,
    group: str,
    broker: RunningBroker,
) -> None:
    """``share.acquire.mode=record_limit``: one ShareFetch acquires at most ``max.poll.records``
    records over every partition it names (Kafka takes what earlier partitions acquired off the
    limit), so a member closed after one poll held only what that poll returned: another member
    then gets exactly those again, with delivery count 2, and every other record once. The bound
    is per request, and a client sends one to each leader: where the two partitions have two
    leaders (a cluster, ``serve --processes``), each fetch may take its own share, so the
    scenario needs one broker leading both."""
    admin.create_topic(topic, 2)
    wait_until_every_broker_knows([broker.bootstrap.split(",")[0]], topic, 2)
    leaders = {state.leader for state in topic_partitions(broker.bootstrap.split(",")[0], topic).values()}
    if len(leaders) > 1:
        pytest.skip(f"the partitions have {len(leaders)} leaders: one ShareFetch each, each bounded alone")
    share_admin.set_group_configs(group, EARLIEST)
    produce(admin, topic, [f"r{i}" for i in range(12)], partitions=2)
    doomed = open_consumer(group, topic, explicit=True, max_records=3, client_id="doomed")
    taken = doomed.poll(0.5) or poll_until(doomed, 1)
    assert 1 <= len(taken) <= 3, summary(taken)
    doomed.close()
    survivor = open_consumer(group, topic, explicit=True, max_records=20, client_id="survivor")
    given = accept_until(survivor, 12, within_s=RELEASED_WITHIN_S)
    held = {(d.partition, d.offset) for d in taken}
    counts = {(d.partition, d.offset): d.delivery_count for d in given}
    assert counts == {key: 2 if key in held else 1 for key in counts}, (summary(taken), summary(given))
    assert len(counts) == 12


def test_read_committed(
    admin: Driver, share_admin: ShareAdmin, open_consumer: OpenConsumer, topic: str, group: str
) -> None:
    """share.isolation.level=read_committed: a committed transaction's records are delivered, an
    aborted one's never; a read_uncommitted group (the default) gets both."""
    admin.create_topic(topic, 1)
    share_admin.set_group_configs(group, {**EARLIEST, "share.isolation.level": "read_committed"})
    uncommitted = f"{group}-uncommitted"
    share_admin.set_group_configs(uncommitted, EARLIEST)
    producer = admin.transactional_producer(f"share-{uuid.uuid4().hex[:10]}")
    try:
        for values, commit in ((["c0", "c1"], True), (["a0", "a1"], False), (["c2"], True)):
            producer.begin()
            producer.send(topic, [Message(v.encode()) for v in values])
            if commit:
                producer.commit()
            else:
                producer.abort()
    finally:
        producer.close()
    # Offsets: c0 c1 (marker 2) a0 a1 (marker 5) c2 (marker 7).
    committed_only = open_consumer(group, topic, max_records=10)
    assert summary(poll_until(committed_only, 3)) == [(0, "c0", 1), (1, "c1", 1), (6, "c2", 1)]
    poll_nothing(committed_only)
    everything = open_consumer(uncommitted, topic, max_records=10)
    assert summary(poll_until(everything, 5)) == [
        (0, "c0", 1),
        (1, "c1", 1),
        (3, "a0", 1),
        (4, "a1", 1),
        (6, "c2", 1),
    ]


def test_auto_offset_reset(
    admin: Driver, share_admin: ShareAdmin, open_consumer: OpenConsumer, topic: str, group: str
) -> None:
    """share.auto.offset.reset: a group with the default (latest) starts at the end, so records
    written before it started are never delivered; a group set to earliest gets them too."""
    admin.create_topic(topic, 1)
    latest, earliest = f"{group}-latest", f"{group}-earliest"
    share_admin.set_group_configs(earliest, EARLIEST)
    produce(admin, topic, ["before"])
    from_latest = open_consumer(latest, topic, max_records=10)
    from_earliest = open_consumer(earliest, topic, max_records=10)
    assert join(share_admin, latest, [from_latest])[1] == [[]]
    assert summary(poll_until(from_earliest, 1)) == [(0, "before", 1)]
    poll_nothing(from_latest)  # its first fetches fix where the group starts
    produce(admin, topic, ["after"])
    assert summary(poll_until(from_latest, 1)) == [(1, "after", 1)]
    assert summary(poll_until(from_earliest, 1)) == [(1, "after", 1)]


def test_admin_api(
    admin: Driver, share_admin: ShareAdmin, open_consumer: OpenConsumer, topic: str, group: str
) -> None:
    """describeShareGroups (state, members, assignment, epochs), listGroups filtered by type
    SHARE and CONSUMER, listShareGroupOffsets (lag), for a group of two members on two
    partitions; then Empty once both left, and GroupIdNotFoundException for an unknown group."""
    admin.create_topic(topic, 2)
    share_admin.set_group_configs(group, EARLIEST)
    produce(admin, topic, [f"r{i}" for i in range(6)], partitions=2)
    members = [open_consumer(group, topic, max_records=10, client_id=f"admin-{i}") for i in range(2)]
    _, joining = join(share_admin, group, members)

    def caught_up() -> dict[str, Any]:
        described = share_admin.describe(group)
        assert all(m["member_epoch"] == described["assignment_epoch"] for m in described["members"]), (
            described
        )
        return described

    described = eventually(caught_up)
    assert described["group_id"] == group
    assert sorted(m["client_id"] for m in described["members"]) == ["admin-0", "admin-1"]
    assert all(m["host"] == "/127.0.0.1" for m in described["members"])
    assigned = [tuple(tp) for m in described["members"] for tp in m["assignment"]]
    assert sorted(assigned) == [(topic, 0), (topic, 1)], described
    assert described["group_epoch"] == described["assignment_epoch"]
    assert (group, "Share", "Stable") in share_admin.list_groups(["SHARE"])
    assert all(kind == "Share" for _, kind, _ in share_admin.list_groups(["SHARE"]))
    assert group not in {g for g, _, _ in share_admin.list_groups(["CONSUMER"])}
    given = [d for batch in joining for d in batch]
    deadline = time.monotonic() + WAIT_S
    while len(given) < 6:
        assert time.monotonic() < deadline, given
        for member in members:
            given += member.poll(0.3)
    assert sorted((d.partition, d.offset) for d in given) == [(p, o) for p in (0, 1) for o in range(3)]
    for member in members:
        member.commit()
    lag_drains(share_admin, group, {(topic, 0): 0, (topic, 1): 0})
    for member in members:
        member.close()

    def empty() -> None:
        after = share_admin.describe(group)
        assert (after["state"], after["members"]) == ("Empty", []), after

    eventually(empty)
    assert (group, "Share", "Empty") in share_admin.list_groups(["SHARE"])
    with pytest.raises(ClientError) as unknown:
        share_admin.describe(f"{group}-unknown")
    assert "GroupIdNotFoundException" in str(unknown.value)


def table(printed: str) -> list[list[str]]:
    """A tool's table as the words of each non-blank line: columns are padded to the longest
    value, which may leave a single space between them (``COORDINATOR (ID)`` is two words)."""
    return [line.split() for line in printed.splitlines() if line.strip()]


def test_share_groups_tool(
    tool_classpath: str,
    broker: RunningBroker,
    admin: Driver,
    share_admin: ShareAdmin,
    open_consumer: OpenConsumer,
    topic: str,
    group: str,
) -> None:
    """kafka-share-groups.sh: --list (and --state), --describe with --members, --state and the
    offsets, --reset-offsets refused while the group has a member and done once it is empty,
    --delete-offsets and --delete."""

    def tool(*args: str) -> ToolRun:
        return run_tool(tool_classpath, broker.bootstrap, SHARE_GROUPS, *args)

    admin.create_topic(topic, 2)
    share_admin.set_group_configs(group, EARLIEST)
    produce(admin, topic, [f"r{i}" for i in range(10)], partitions=2)
    member = open_consumer(group, topic, max_records=3, client_id="tool-member")
    described, _ = join(share_admin, group, [member])
    (member_id,) = [m["member_id"] for m in described["members"]]

    assert group in ok(tool("--list")).split()
    assert ["GROUP", "STATE"] in table(ok(tool("--list", "--state", "stable")))
    assert [group, "Stable"] in table(ok(tool("--list", "--state", "stable")))
    members = table(ok(tool("--describe", "--group", group, "--members")))
    assert members == [
        ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"],
        [group, member_id, "/127.0.0.1", "tool-member", "2", f"{topic}:0,1"],
    ]
    state = table(ok(tool("--describe", "--group", group, "--state")))
    assert state[0] == ["GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"]
    assert (state[1][0], state[1][3:]) == (group, ["Stable", "1"]), state
    coordinator = described["coordinator"]
    assert (state[1][1], state[1][2]) == (
        addresses_by_id(broker.bootstrap)[coordinator],
        f"({coordinator})",
    ), state
    offsets = table(ok(tool("--describe", "--group", group)))
    assert offsets[0] == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
    assert sorted(row[:3] for row in offsets[1:]) == [[group, topic, "0"], [group, topic, "1"]]

    reset = ["--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"]
    refused = tool(*reset)
    assert (refused.code, refused.err.strip()) == (1, f"Share group '{group}' is not empty."), refused
    member.close()

    def empty() -> None:
        assert share_admin.describe(group)["state"] == "Empty"

    eventually(empty)
    done = table(ok(tool(*reset)))
    assert done[0] == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert sorted(done[1:]) == [[group, topic, "0", "0"], [group, topic, "1", "0"]]
    offsets = table(ok(tool("--describe", "--group", group)))
    assert offsets[0] == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
    assert sorted(offsets[1:]) == [[group, topic, "0", "0", "5"], [group, topic, "1", "0", "5"]]
    assert share_admin.offsets(group) == {(topic, 0): (0, 5), (topic, 1): (0, 5)}

    assert table(ok(tool("--delete-offsets", "--group", group, "--topic", topic))) == [
        ["TOPIC", "STATUS"],
        [topic, "Successful"],
    ]
    assert (
        ok(tool("--describe", "--group", group)).strip()
        == f"Share group '{group}' has no offset information."
    )
    assert share_admin.offsets(group) == {}

    deleted = ok(tool("--delete", "--group", group))
    assert deleted.strip() == f"Deletion of requested share groups ('{group}') was successful."
    assert group not in ok(tool("--list")).split()
    with pytest.raises(ClientError) as gone:
        share_admin.describe(group)
    assert "GroupIdNotFoundException" in str(gone.value)


def test_console_share_consumer(
    tool_classpath: str, broker: RunningBroker, admin: Driver, share_admin: ShareAdmin, topic: str, group: str
) -> None:
    """kafka-console-share-consumer.sh prints the records with their delivery counts: a run
    with --release gives them back, so the next run is given them again (delivery 2) and
    accepts them, after which a third run finds nothing."""

    def console(*args: str) -> ToolRun:
        formatting = [f"print.{what}=true" for what in ("offset", "delivery", "key")]
        options = [option for setting in formatting for option in ("--formatter-property", setting)]
        return run_tool(
            tool_classpath, broker.bootstrap, CONSOLE_SHARE_CONSUMER, "--topic", topic, "--group", group,
            *options, *args,
        )  # fmt: skip

    admin.create_topic(topic, 1)
    share_admin.set_group_configs(group, EARLIEST)
    produce(admin, topic, ["one", "two", "three"])
    released = console("--max-messages", "3", "--release")
    assert ok(released).splitlines() == [
        "Offset:0\tDelivery:1\tkone\tone",
        "Offset:1\tDelivery:1\tktwo\ttwo",
        "Offset:2\tDelivery:1\tkthree\tthree",
    ]
    assert "Processed a total of 3 messages" in released.err
    accepted = console("--max-messages", "3")
    assert ok(accepted).splitlines() == [
        "Offset:0\tDelivery:2\tkone\tone",
        "Offset:1\tDelivery:2\tktwo\ttwo",
        "Offset:2\tDelivery:2\tkthree\tthree",
    ]
    nothing = console("--timeout-ms", "2000")
    assert nothing.out == ""
    assert "Processed a total of 0 messages" in nothing.err
    lag_drains(share_admin, group, {(topic, 0): 0})
