"""Transactions (KIP-98): commit and abort, what read_committed and read_uncommitted consumers see,
zombie fencing, and consumed offsets committed inside a transaction.

The client under test is the transactional producer and the consumers of each scenario; topics,
plain records and group offsets go through the setup client. kcat has no transactional producer
and skips. Every scenario works on partition 0 of a fresh topic, so offsets are predictable: each
transaction marker (a control batch of one record) takes exactly one offset after the records it
ends, and no client ever hands a marker to the application.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest

from compat_tests.helpers import eventually, poll_until
from compat_tests.kit.drivers import base
from compat_tests.kit.drivers.base import ConsumerSettings, Driver

QUIET_S = 3.0
"""How long a read_committed consumer must get nothing to show that an open transaction holds it
back: the read_uncommitted consumer has fetched the same records by then."""


def new_transactional_id() -> str:
    return f"compat-txn-{uuid.uuid4().hex[:8]}"


def messages(*values: str) -> list[base.Message]:
    """Records for partition 0, so their offsets follow one another."""
    return [base.Message(v.encode(), partition=0) for v in values]


def values(records: Sequence[base.Received]) -> list[bytes | None]:
    return [r.value for r in records]


def transaction(producer: base.TransactionalProducer, topic: str, *sent: str, commit: bool) -> list[int]:
    """Run one whole transaction sending ``sent``; return the offsets the records got."""
    producer.begin()
    offsets = producer.send(topic, messages(*sent))
    if commit:
        producer.commit()
    else:
        producer.abort()
    return offsets


def read(driver: Driver, topic: str, isolation: str, count: int) -> list[base.Received]:
    """The first ``count`` records of partition 0 as a consumer with ``isolation`` sees them."""
    with driver.consumer(ConsumerSettings(isolation=isolation)) as consumer:
        consumer.assign({(topic, 0): 0})
        return poll_until(consumer, count)


def test_commit_and_abort(driver: Driver, admin: Driver, topic: str) -> None:
    """Commit 3, abort 2, commit 1: read_committed sees the 4 committed records, read_uncommitted
    all 6, both without the markers, whose offsets show as gaps (3, 6) and in the end offset (9)."""
    admin.create_topic(topic, 1)
    with driver.transactional_producer(new_transactional_id()) as producer:
        first = transaction(producer, topic, "c0", "c1", "c2", commit=True)
        aborted = transaction(producer, topic, "a0", "a1", commit=False)
        last = transaction(producer, topic, "c3", commit=True)
    assert (first, aborted, last) == ([0, 1, 2], [4, 5], [7])

    committed = read(driver, topic, "read_committed", 4)
    assert values(committed) == [b"c0", b"c1", b"c2", b"c3"]
    assert [r.offset for r in committed] == [0, 1, 2, 7]
    everything = read(driver, topic, "read_uncommitted", 6)
    assert values(everything) == [b"c0", b"c1", b"c2", b"a0", b"a1", b"c3"]
    assert [r.offset for r in everything] == [0, 1, 2, 4, 5, 7]
    assert driver.list_offsets(topic, [0], "latest") == {0: 9}


def test_open_transaction_holds_back_read_committed(driver: Driver, admin: Driver, topic: str) -> None:
    """read_committed stops at the first record of an open transaction, even for records after it
    that another producer wrote outside any transaction; read_uncommitted reads on. The commit
    releases everything up to its marker."""
    admin.create_topic(topic, 1)
    read_committed = ConsumerSettings(isolation="read_committed")
    read_uncommitted = ConsumerSettings(isolation="read_uncommitted")
    with (
        driver.transactional_producer(new_transactional_id()) as producer,
        driver.consumer(read_committed) as committed,
        driver.consumer(read_uncommitted) as uncommitted,
    ):
        admin.produce(topic, messages("before"), base.ProducerSettings())
        committed.assign({(topic, 0): 0})
        uncommitted.assign({(topic, 0): 0})
        # The read_committed consumer is fetching: its silence below is the open transaction's doing.
        assert values(poll_until(committed, 1)) == [b"before"]

        producer.begin()
        assert producer.send(topic, messages("t0")) == [1]
        admin.produce(topic, messages("plain"), base.ProducerSettings())
        assert values(poll_until(uncommitted, 3)) == [b"before", b"t0", b"plain"]
        assert committed.poll(10, QUIET_S) == []

        producer.send(topic, messages("t1"))
        producer.commit()
        assert values(poll_until(committed, 3)) == [b"t0", b"plain", b"t1"]
        assert values(poll_until(uncommitted, 1)) == [b"t1"]


def test_zombie_fencing(driver: Driver, admin: Driver, topic: str) -> None:
    """A second producer with the same transactional.id fences the first: initialising aborts the
    first one's open transaction, whose commit then fails as fenced; only the successor's records
    are committed."""
    admin.create_topic(topic, 1)
    transactional_id = new_transactional_id()
    with driver.transactional_producer(transactional_id) as zombie:
        zombie.begin()
        zombie.send(topic, messages("zombie-0", "zombie-1"))
        with driver.transactional_producer(transactional_id) as successor:
            with pytest.raises(base.ClientError) as fenced:
                zombie.commit()
            assert fenced.value.kind == base.ErrorKind.PRODUCER_FENCED, fenced.value
            assert transaction(successor, topic, "successor", commit=True) == [3]

    assert values(read(driver, topic, "read_committed", 1)) == [b"successor"]
    assert values(read(driver, topic, "read_uncommitted", 3)) == [b"zombie-0", b"zombie-1", b"successor"]


@pytest.mark.usefixtures("group_coordinator")
def test_offsets_in_transaction(driver: Driver, admin: Driver, topic: str) -> None:
    """Consume-transform-produce: offsets sent within a transaction take effect only when it
    commits. An aborted transaction leaves the group's committed offset as it was; an open one's
    offsets are pending (not reported); a committed one's become the group's offsets."""
    output = f"{topic}-out"
    source = (topic, 0)
    group = f"compat-txn-group-{uuid.uuid4().hex[:8]}"
    with driver.transactional_producer(new_transactional_id()) as producer:
        admin.create_topic(topic, 1)
        admin.create_topic(output, 1)
        with admin.consumer(ConsumerSettings(group=group)) as consumer:
            consumer.commit({source: 1})
        assert admin.group_offsets(group) == {source: 1}

        producer.begin()
        producer.send(output, messages("aborted"))
        producer.send_offsets({source: 3}, group)
        producer.abort()

        producer.begin()
        producer.send(output, messages("committed"))
        # The coordinator takes a transaction's offsets only once the previous transaction is
        # complete, markers included: from here the abort is final and these offsets are pending.
        producer.send_offsets({source: 4}, group)
        assert admin.group_offsets(group) == {source: 1}
        producer.commit()

    def committed_offsets() -> None:
        assert admin.group_offsets(group) == {source: 4}

    eventually(committed_offsets)
    assert values(read(driver, output, "read_committed", 1)) == [b"committed"]
