"""Racks: each broker's ``broker.rack`` in Metadata, and consumers fetching from the replica in
their own rack (KIP-392), run with ``--nodes 3`` (skipped otherwise).

The session cluster puts node N in rack ``rack-N`` and runs Kafka's RackAwareReplicaSelector
(:data:`compat_tests.kit.clusters.RACK_AWARE_SELECTOR`). A consumer in a follower's rack is
told by the leader to read from that follower; that the follower serves it is observed twice:
librdkafka's statistics name the broker each partition is fetched from, and the consumer keeps
reading while the leader is stopped (SIGSTOP), which a consumer reading from the leader could not.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as RdPartition

from compat_tests.helpers import eventually
from compat_tests.kit.clusters import Cluster, rack_of
from compat_tests.kit.drivers.confluent import ConfluentAdmin
from compat_tests.kit.raw_protocol import ask
from compat_tests.topic_metadata import wait_until_every_broker_lists
from wire.api_keys import ApiKey

pytestmark = pytest.mark.cluster

RECORDS = 100
PAUSE_S = 2.5
"""How long the leader stays stopped: well inside the session timeout (4 s), so no failover
moves leadership (a new leader would serve the consumer for a reason of its own)."""


@pytest.fixture
def cluster_up(cluster: Cluster) -> Cluster:
    wait_until_every_broker_lists(list(cluster.nodes.values()), len(cluster.nodes))
    return cluster


def test_metadata_lists_each_brokers_rack(cluster_up: Cluster) -> None:
    answer = ask(cluster_up.nodes[1], ApiKey.METADATA, 1, {"topics": []}, 10.0)
    assert {b["node_id"]: b["rack"] for b in answer["brokers"]} == {n: rack_of(n) for n in cluster_up.nodes}


class FetchedFrom:
    """Which broker librdkafka fetches each partition from, as its statistics say."""

    def __init__(self) -> None:
        self.brokers: dict[int, int] = {}

    def __call__(self, report: str) -> None:
        for topic in json.loads(report).get("topics", {}).values():
            for index, partition in topic.get("partitions", {}).items():
                if int(index) >= 0 and partition.get("broker", -1) >= 0:
                    self.brokers[int(index)] = partition["broker"]


def _consume_until(consumer: Consumer, got: list[Any], done: Callable[[], bool], timeout_s: float) -> None:
    """Poll ``consumer`` into ``got`` until ``done()`` (statistics arrive through polls too)."""
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        message = consumer.poll(0.1)
        if message is not None and message.error() is None:
            got.append(message)


def test_consumer_reads_from_the_follower_in_its_rack(cluster_up: Cluster) -> None:
    topic = f"racks-{uuid.uuid4().hex[:10]}"
    ConfluentAdmin(cluster_up.bootstrap).create_topic(topic, 1, assignments=[[1, 2, 3]])
    eventually(lambda: _assert_in_sync(cluster_up, topic), timeout_s=60)
    producer = Producer({"bootstrap.servers": cluster_up.bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(RECORDS):  # a batch each, so that each fetch gets one
        producer.produce(topic, str(i).encode(), partition=0)
        assert producer.flush(30) == 0
    follower = 2
    fetched_from = FetchedFrom()
    consumer = Consumer(
        {
            "bootstrap.servers": cluster_up.bootstrap,
            "group.id": f"racks-{uuid.uuid4().hex[:8]}",
            "client.rack": rack_of(follower),
            "statistics.interval.ms": 100,
            "stats_cb": fetched_from,
            # one batch per fetch and no prefetching: most records are fetched after the pause
            "queued.min.messages": 1,
            "fetch.queue.backoff.ms": 20,
            "message.max.bytes": 1000,
            "fetch.max.bytes": 1000,
            "max.partition.fetch.bytes": 64,
        }
    )
    got: list[Any] = []
    try:
        consumer.assign([RdPartition(topic, 0, 0)])
        _consume_until(consumer, got, lambda: bool(got) and fetched_from.brokers.get(0) == follower, 30)
        assert fetched_from.brokers.get(0) == follower, f"fetching partition 0 from {fetched_from.brokers}"
        before_pause = len(got)
        assert before_pause < RECORDS / 2, f"{before_pause} records were read before the pause"
        cluster_up.pause(1)
        try:
            _consume_until(consumer, got, lambda: len(got) >= RECORDS, PAUSE_S)
        finally:
            cluster_up.resume(1)
        # One record at most was fetched ahead (queued.min.messages): the rest came from the
        # follower while the leader answered nothing.
        during_pause = len(got) - before_pause
        assert during_pause >= 2, f"read {during_pause} records while the leader was stopped"
        _consume_until(consumer, got, lambda: len(got) >= RECORDS, 30)
        assert [m.value() for m in got] == [str(i).encode() for i in range(RECORDS)]
    finally:
        consumer.close()


def _assert_in_sync(cluster: Cluster, topic: str) -> None:
    (state,) = cluster.partitions(topic).values()
    assert state.leader == 1 and sorted(state.isr) == [1, 2, 3], state
