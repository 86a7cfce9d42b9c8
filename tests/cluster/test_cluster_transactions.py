"""Transactions in a 3-broker Odradek cluster, through confluent-kafka over real sockets: a
transaction spans partitions led by different brokers (markers travel by WriteTxnMarkers), a
read_committed reader sees exactly the committed records, a transaction left open is aborted by
its coordinator's timer on every broker, a write to a partition the transaction lacks is refused
after the leader asks the coordinator on another broker (KIP-890), and an exactly-once
consume-transform-produce service survives the kill -9 of its transaction coordinator.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from compat_tests.kit.clusters import FAST_FAILOVER, Cluster, start_odradek_cluster, wait_for
from compat_tests.kit.eos_loop import Service
from compat_tests.kit.raw_protocol import RawClient
from coordinator.offsets_topic import partition_for
from coordinator.transactions import TRANSACTION_STATE_TOPIC
from tests.cluster.test_cluster import create_topic, produce
from tests.integration.test_transactions import Txn
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

pytestmark = pytest.mark.timeout(400)

TXN_STATE_PARTITIONS = 6
TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def cluster(etcd_cluster, tmp_path_factory):
    overrides = {
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.num.partitions": str(TXN_STATE_PARTITIONS),
    }
    with start_odradek_cluster(
        tmp_path_factory.mktemp("txn-cluster"),
        {**FAST_FAILOVER, **overrides},
        etcd_endpoints=etcd_cluster.endpoints,
    ) as running:
        yield running


@pytest.fixture(autouse=True)
def whole_cluster(cluster: Cluster):
    """Every test starts and ends with all three brokers up and registered."""
    yield
    cluster.start_stopped()


def coordinator_of(cluster: Cluster, transactional_id: str) -> int:
    """The broker leading the transactional id's ``__transaction_state`` partition."""
    return cluster.leader_of(TRANSACTION_STATE_TOPIC, partition_for(transactional_id, TXN_STATE_PARTITIONS))


def read_committed(cluster: Cluster, topic: str, partitions: int, until: set[str]) -> list[str]:
    """Every value a read_committed reader gets from ``topic`` until it has seen all of ``until``
    (written last, in a committed transaction, to every partition: whatever precedes them is
    decided by then)."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[str] = []

    def all_seen() -> bool:
        values.extend(m.value().decode() for m in consumer.consume(500, timeout=0.5) if m.error() is None)
        return until <= set(values)

    try:
        wait_for(all_seen, timeout=90, what=f"the end markers of {topic}")
    finally:
        consumer.close()
    return values


def test_committed_and_aborted_across_brokers(cluster: Cluster) -> None:
    topic, partitions = "txn-spread", 3
    create_topic(cluster, topic, partitions)
    leaders = {cluster.leader_of(topic, p) for p in range(partitions)}
    assert len(leaders) > 1  # the transaction's partitions are led by several brokers
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "transactional.id": f"spread-{uuid.uuid4().hex[:8]}"}
    )
    producer.init_transactions(TIMEOUT_S)

    def transaction(prefix: str, count: int, commit: bool) -> list[str]:
        producer.begin_transaction()
        values = [f"{prefix}-{i}" for i in range(count)]
        for i, value in enumerate(values):
            producer.produce(topic, value.encode(), partition=i % partitions)
        if commit:
            producer.commit_transaction(TIMEOUT_S)
        else:
            producer.flush(TIMEOUT_S)
            producer.abort_transaction(TIMEOUT_S)
        return values

    committed = transaction("first", 30, commit=True)
    transaction("aborted", 30, commit=False)
    committed += transaction("second", 30, commit=True)
    ends = transaction("end", partitions, commit=True)
    seen = read_committed(cluster, topic, partitions, set(ends))
    assert sorted(seen) == sorted(committed + ends)


def test_a_timed_out_transaction_is_aborted_on_every_broker(cluster: Cluster) -> None:
    topic, partitions = "txn-timeout", 3
    create_topic(cluster, topic, partitions)
    stalled = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": f"stalled-{uuid.uuid4().hex[:8]}",
            "transaction.timeout.ms": 2000,
        }
    )
    stalled.init_transactions(TIMEOUT_S)
    stalled.begin_transaction()
    for p in range(partitions):
        stalled.produce(topic, b"never-committed", partition=p)
    assert stalled.flush(TIMEOUT_S) == 0  # written, then left open: its coordinator aborts it
    ends = transactional_ends(cluster, topic, partitions)
    assert sorted(read_committed(cluster, topic, partitions, set(ends))) == sorted(ends)


def transactional_ends(cluster: Cluster, topic: str, partitions: int) -> list[str]:
    """One committed ``end-<p>`` record in every partition of ``topic``, from a producer of its own."""
    ends = [f"end-{p}" for p in range(partitions)]
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "transactional.id": f"ends-{uuid.uuid4().hex[:8]}"}
    )
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    for p, value in enumerate(ends):
        producer.produce(topic, value.encode(), partition=p)
    producer.commit_transaction(TIMEOUT_S)
    return ends


def test_a_write_to_a_partition_outside_the_transaction_is_refused_by_its_remote_coordinator(
    cluster: Cluster,
) -> None:
    """KIP-890: the partition's leader asks the coordinator (another broker) before appending."""
    topic = "txn-verify"
    create_topic(cluster, topic, 1)
    leader = cluster.leader_of(topic, 0)
    with RawClient(cluster.nodes[leader]) as client:  # creates __transaction_state
        client.request(ApiKey.FIND_COORDINATOR, 3, {"key": "verify", "key_type": 1})
    wait_for(lambda: TRANSACTION_STATE_TOPIC in cluster.metadata().topics, what="__transaction_state")
    transactional_id = next(
        candidate
        for candidate in (f"verify-{i}" for i in range(1000))
        if cluster.leader_of(TRANSACTION_STATE_TOPIC, partition_for(candidate, TXN_STATE_PARTITIONS))
        != leader
    )
    coordinator = coordinator_of(cluster, transactional_id)
    with (
        RawClient(cluster.nodes[coordinator]) as to_coordinator,
        RawClient(cluster.nodes[leader]) as to_leader,
    ):
        txn = Txn(to_coordinator, transactional_id)
        wait_for(lambda: txn.init() == ErrorCode.NONE, what="the coordinator to load")  # retriable until then
        txn.client = to_leader
        assert txn.produce(topic, 0, b"not-added")["error_code"] == ErrorCode.INVALID_TXN_STATE
        txn.client = to_coordinator
        assert txn.add(topic, 0) == {0: ErrorCode.NONE}
        txn.client = to_leader
        assert txn.produce(topic, 0, b"added")["error_code"] == ErrorCode.NONE
        txn.client = to_coordinator
        assert txn.end(commit=True) == ErrorCode.NONE


def test_exactly_once_across_the_death_of_the_transaction_coordinator(cluster: Cluster) -> None:
    source, sink, partitions, inputs = "eos-in", "eos-out", 3, 300
    create_topic(cluster, source, partitions)
    create_topic(cluster, sink, partitions)
    values = [f"v{i}" for i in range(inputs)]
    produce(cluster, source, values)
    group, txn_id = f"eos-{uuid.uuid4().hex[:8]}", f"eos-{uuid.uuid4().hex[:8]}"

    service = Service(cluster.bootstrap, source, sink, group, txn_id)
    service.wait_until_copied(60)
    coordinator = coordinator_of(cluster, txn_id)
    cluster.kill(coordinator)  # mid-run: its transaction may be open or being committed
    service.kill()
    wait_for(lambda: coordinator_of(cluster, txn_id) not in (coordinator, -1), what="a new coordinator")
    # The next instance initialises against the new coordinator, which fences the old one and
    # aborts what it left open; then it copies the rest.
    assert Service(cluster.bootstrap, source, sink, group, txn_id).finish() == 0

    ends = transactional_ends(cluster, sink, partitions)
    copied = read_committed(cluster, sink, partitions, set(ends))
    assert sorted(copied) == sorted([f"{v}!" for v in values] + ends)
