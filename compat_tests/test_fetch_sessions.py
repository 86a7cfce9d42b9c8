"""Fetch sessions (KIP-227): what the broker answers in each session state, and stock consumers
fetching incrementally.

Stock Java, librdkafka and Python clients open a session with epoch 0; a Go client sends a
sessionless full fetch as session -1, epoch -1. Whatever session a full fetch (epoch 0 or -1)
names, Kafka serves its data; an incremental fetch (a later epoch) in a session the broker does
not hold is FETCH_SESSION_ID_NOT_FOUND with no data.
"""

from __future__ import annotations

from contextlib import closing

import pytest

from compat_tests.helpers import poll_until
from compat_tests.kit.brokers import RunningBroker
from compat_tests.kit.drivers.base import ConsumerSettings, Driver, Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentAdmin
from compat_tests.kit.drivers.kafka_python import FetchAnswer, RawFetcher, raw_fetch
from compat_tests.kit.raw_protocol import addresses_by_id


@pytest.mark.parametrize(
    ("session_id", "session_epoch", "served"),
    [
        pytest.param(-1, -1, True, id="go-sessionless"),
        pytest.param(0, -1, True, id="sessionless"),
        pytest.param(0, 0, True, id="new-session"),
        pytest.param(123456, -1, True, id="closing-an-unknown-session"),
        pytest.param(123456, 3, False, id="incremental-in-an-unknown-session"),
    ],
)
def test_full_fetches_are_served_whatever_session_they_name(
    broker: RunningBroker, admin: Driver, topic: str, session_id: int, session_epoch: int, served: bool
) -> None:
    admin.create_topic(topic, 1)
    admin.produce(topic, [Message(b"v%d" % i, partition=0) for i in range(5)], ProducerSettings())
    error, received = raw_fetch(
        broker.bootstrap, topic, 0, session_id=session_id, session_epoch=session_epoch
    )
    if served:
        assert (error, received > 0) == ("NONE", True)
    else:
        assert (error, received) == ("FETCH_SESSION_ID_NOT_FOUND", 0)


def test_incremental_fetches_in_a_session(admin: Driver, broker: RunningBroker, topic: str) -> None:
    """KIP-227 as Kafka answers it: epoch 0 opens a session, each later epoch names only what
    changed and is answered only with partitions that have news; a wrong epoch is refused, a
    forgotten partition is no longer read, and epoch -1 closes the session.

    The three partitions have one leader, so that one broker's session can hold them all (behind
    one bootstrap address there may be several brokers, each holding its own sessions)."""
    leader = min(addresses_by_id(broker.bootstrap))
    creator = ConfluentAdmin(broker.bootstrap)
    try:
        creator.create_topic(topic, 3, assignments=[[leader]] * 3)
    finally:
        creator.close()

    def produce(partition: int) -> None:
        admin.produce(topic, [Message(b"v", partition=partition)], ProducerSettings())

    produce(1)
    with closing(RawFetcher(broker.bootstrap)) as fetcher:
        opened = fetcher.fetch(0, 0, {topic: {0: 0, 1: 0, 2: 0}})
        session = opened.session_id
        assert (opened.error, session != 0) == ("NONE", True)
        assert sorted(opened.partitions) == [(topic, 0), (topic, 1), (topic, 2)]
        # Partition 1 moves to offset 1, its end: nothing anywhere is new.
        assert fetcher.fetch(session, 1, {topic: {1: 1}}) == FetchAnswer("NONE", session, {})
        produce(2)
        news = fetcher.fetch(session, 2, {})
        assert (news.error, news.session_id, list(news.partitions)) == ("NONE", session, [(topic, 2)])
        assert news.partitions[(topic, 2)] > 0
        assert fetcher.fetch(session, 7, {}) == FetchAnswer("INVALID_FETCH_SESSION_EPOCH", 0, {})
        # Partition 2 caught up and forgotten: new records there are not read any more.
        assert fetcher.fetch(session, 3, {topic: {2: 1}}, forgotten={topic: [2]}) == FetchAnswer(
            "NONE", session, {}
        )
        produce(2)
        assert fetcher.fetch(session, 4, {}) == FetchAnswer("NONE", session, {})
        closed = fetcher.fetch(session, -1, {topic: {2: 1}})
        assert (closed.error, closed.session_id, list(closed.partitions)) == ("NONE", 0, [(topic, 2)])
        assert fetcher.fetch(session, 5, {}) == FetchAnswer("FETCH_SESSION_ID_NOT_FOUND", 0, {})


def test_consumer_on_many_partitions_receives_only_new_records(
    driver: Driver, admin: Driver, topic: str
) -> None:
    """Java and kafka-python consumers fetch in a session; once caught up on every partition,
    their incremental answers name only the few partitions that got records."""
    partitions = 24
    admin.create_topic(topic, partitions)
    admin.produce(
        topic, [Message(b"first-%d" % p, partition=p) for p in range(partitions)], ProducerSettings()
    )
    with driver.consumer(ConsumerSettings()) as consumer:
        consumer.assign({(topic, p): 0 for p in range(partitions)})
        first = poll_until(consumer, partitions)
        assert sorted((r.partition, r.offset) for r in first) == [(p, 0) for p in range(partitions)]
        later = [Message(b"later-%d-%d" % (p, i), partition=p) for p in (5, 17) for i in range(3)]
        admin.produce(topic, later, ProducerSettings())
        second = poll_until(consumer, len(later))
    assert sorted((r.partition, r.offset, r.value) for r in second) == sorted(
        (m.partition, 1 + i % 3, m.value) for i, m in enumerate(later)
    )


def test_forgetting_every_partition_ends_the_session(
    admin: Driver, broker: RunningBroker, topic: str
) -> None:
    """A session left with no partitions is closed: the answer is sessionless (session id 0)
    and the session is gone."""
    admin.create_topic(topic, 2)
    with closing(RawFetcher(broker.bootstrap)) as fetcher:
        session = fetcher.fetch(0, 0, {topic: {0: 0, 1: 0}}).session_id
        assert session != 0
        assert fetcher.fetch(session, 1, {}, forgotten={topic: [0, 1]}) == FetchAnswer("NONE", 0, {})
        assert fetcher.fetch(session, 2, {}) == FetchAnswer("FETCH_SESSION_ID_NOT_FOUND", 0, {})


def test_a_session_keeps_to_topic_names_or_ids(admin: Driver, broker: RunningBroker, topic: str) -> None:
    """Fetch 13+ names topics by id: a session opened with ids answers by id and refuses a
    request by name with FETCH_SESSION_TOPIC_ID_ERROR, and the reverse."""
    admin.create_topic(topic, 1)
    admin.produce(topic, [Message(b"v", partition=0)], ProducerSettings())
    with closing(RawFetcher(broker.bootstrap)) as fetcher:
        ids = {topic: fetcher.topic_id(topic)}
        by_id = fetcher.fetch(0, 0, {topic: {0: 0}}, topic_ids=ids)
        assert (by_id.error, by_id.session_id != 0, list(by_id.partitions)) == ("NONE", True, [(topic, 0)])
        assert fetcher.fetch(by_id.session_id, 1, {topic: {0: 1}}, topic_ids=ids) == FetchAnswer(
            "NONE", by_id.session_id, {}
        )
        refused = FetchAnswer("FETCH_SESSION_TOPIC_ID_ERROR", 0, {})
        assert fetcher.fetch(by_id.session_id, 2, {}) == refused
        by_name = fetcher.fetch(0, 0, {topic: {0: 0}}).session_id
        assert fetcher.fetch(by_name, 1, {}, topic_ids=ids) == refused
