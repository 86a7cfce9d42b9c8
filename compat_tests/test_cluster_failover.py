"""A three-broker cluster losing brokers: replication, leader failover and groups, through stock
clients (run with ``--nodes 3``; skipped otherwise).

Every topic here has three replicas and ``min.insync.replicas=2`` (the cluster's defaults), so
acks=all writes survive any one broker. The chaos scenario kills leaders and random brokers with
SIGKILL while two idempotent producers write and a group consumes, then checks the whole history
(:mod:`compat_tests.kit.history`): nothing acknowledged lost, nothing duplicated, nothing reordered.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from confluent_kafka import ElectionType, TopicCollection
from confluent_kafka import TopicPartition as RdPartition

from compat_tests.chaos import (
    PRODUCERS,
    RECOVERY_TIMEOUT_S,
    ChaosProducer,
    ConfluentChaosProducer,
    GroupConsumer,
    Workload,
    nearest_rank,
    read_all,
    run_rounds,
    wait_until_replicated,
)
from compat_tests.helpers import eventually, poll_until
from compat_tests.kit.clusters import CLUSTER_SIZE, Cluster
from compat_tests.kit.drivers.base import (
    ClientError,
    ConsumerSettings,
    Message,
    ProducerSettings,
    client_errors,
)
from compat_tests.kit.drivers.confluent import ConfluentAdmin
from compat_tests.kit.history import Acked, Read, Report, check, places_of, repeated_places
from compat_tests.kit.record_writers import writers_at
from compat_tests.pools import DriverPool
from compat_tests.test_streams_groups import Scenario, lines, spread, start_running, words_of
from compat_tests.topic_metadata import topic_partitions, wait_until_every_broker_lists

pytestmark = pytest.mark.cluster

PARTITIONS = 4


@pytest.fixture
def healthy(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster with every node up and registered; whatever a scenario killed or paused is
    brought back, and registered again before the next test: CI runs the produce/consume and
    group scenarios on the same session cluster after these."""
    wait_until_every_broker_lists(list(cluster.nodes.values()), len(cluster.nodes))
    yield cluster
    for node_id in cluster.nodes:
        node = cluster.members[node_id]
        if node.paused:
            cluster.resume(node_id)
        if not node.running():
            cluster.start(node_id)
    wait_until_every_broker_lists(list(cluster.nodes.values()), len(cluster.nodes))


@pytest.fixture
def admin_client(cluster: Cluster) -> Iterator[ConfluentAdmin]:
    admin = ConfluentAdmin(cluster.bootstrap)
    yield admin
    admin.close()


def replicated_topic(admin: ConfluentAdmin, cluster: Cluster, topic: str, **configs: str) -> None:
    """Create ``topic`` with three replicas per partition and wait until all are in sync."""
    admin.create_topic(topic, PARTITIONS, replication_factor=CLUSTER_SIZE, configs=configs)
    wait_until_replicated(cluster, [topic])


def test_create_topics_places_three_in_sync_replicas_on_distinct_brokers(
    healthy: Cluster, admin_client: ConfluentAdmin, topic: str
) -> None:
    """CreateTopics with replication factor 3: DescribeTopics lists all three brokers as each
    partition's replicas and ISR, and the leaders are spread over the brokers."""
    replicated_topic(admin_client, healthy, topic)
    described = admin_client.admin.describe_topics(TopicCollection([topic]))[topic].result(timeout=30)
    assert len(described.partitions) == PARTITIONS
    for partition in described.partitions:
        replicas = [node.id for node in partition.replicas]
        assert sorted(replicas) == sorted(healthy.nodes), partition
        assert sorted(node.id for node in partition.isr) == sorted(healthy.nodes), partition
        assert partition.leader.id in replicas
    # Every broker answers Metadata alike, each leading some partition (balanced placement).
    views = [topic_partitions(address, topic) for address in healthy.nodes.values()]
    assert all(view == views[0] for view in views)
    assert {state.leader for state in views[0].values()} == set(healthy.nodes)


def test_acks_all_refused_with_fewer_in_sync_replicas_than_required(
    healthy: Cluster, admin_client: ConfluentAdmin, drivers: DriverPool, topic: str
) -> None:
    """min.insync.replicas=3 with one broker dead: the leader refuses acks=all writes with
    NOT_ENOUGH_REPLICAS (the producer's delivery report says so), while acks=1 still works."""
    replicated_topic(admin_client, healthy, topic, **{"min.insync.replicas": "3"})
    leader = healthy.leader_of(topic, 0)
    follower = next(n for n in healthy.nodes if n != leader)
    healthy.kill(follower)
    eventually(lambda: _assert_isr_size(healthy, topic, 0, 2), timeout_s=RECOVERY_TIMEOUT_S)
    no_retries = ProducerSettings(acks="all", idempotence=False, retries=0)
    for client in ("confluent-kafka", "kafka-python"):
        driver = drivers.get(client, healthy.nodes[leader])
        with pytest.raises(ClientError) as refused:
            driver.produce(topic, [Message(b"refused", partition=0)], no_retries)
        assert refused.value.error == "NOT_ENOUGH_REPLICAS", f"{client}: {refused.value}"
        assert driver.produce(topic, [Message(b"one ack", partition=0)], ProducerSettings(acks="1"))


def test_two_of_three_brokers_down_acknowledge_no_acks_all_write(
    healthy: Cluster, admin_client: ConfluentAdmin, drivers: DriverPool, topic: str
) -> None:
    """With two of three brokers dead no acks=all write is acknowledged.

    Where the metadata quorum lives apart from the brokers (Odradek's etcd) it shrinks the ISR
    to the survivor, whose leader then refuses acks=all writes with NOT_ENOUGH_REPLICAS. Three
    combined Kafka nodes lose their KRaft quorum with the two brokers: nothing can shrink the
    ISR, so the leader takes the write and waits for replicas that never come, and the write
    fails by a timeout (the broker's REQUEST_TIMED_OUT or the client's own, whichever is first).
    """
    replicated_topic(admin_client, healthy, topic)
    survivor = healthy.leader_of(topic, 0)
    for node_id in healthy.nodes:
        if node_id != survivor:
            healthy.kill(node_id)
    if not healthy.quorum_on_brokers:
        eventually(lambda: _assert_isr_size(healthy, topic, 0, 1), timeout_s=RECOVERY_TIMEOUT_S)
    driver = drivers.get("confluent-kafka", healthy.nodes[survivor])
    settings = ProducerSettings(acks="all", idempotence=False, retries=0, timeout_s=20)
    with pytest.raises(ClientError) as refused:
        driver.produce(topic, [Message(b"unacknowledged", partition=0)], settings)
    if not healthy.quorum_on_brokers:
        assert refused.value.error == "NOT_ENOUGH_REPLICAS", refused.value


def _assert_isr_size(cluster: Cluster, topic: str, partition: int, size: int) -> None:
    state = cluster.partitions(topic)[partition]
    assert len(state.isr) == size, state


@pytest.mark.slow
def test_rolling_restart_under_load_fails_no_delivery_and_loses_nothing(
    healthy: Cluster,
    admin_client: ConfluentAdmin,
    topic: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An operator's rolling restart: each broker in turn is stopped with SIGTERM (a controlled
    shutdown: its leaderships move first), started again and waited for until every replica is
    back in sync, while two idempotent acks=all producers write and a group consumes. No
    delivery fails, nothing acknowledged is lost, duplicated or reordered; the produce latency
    of the records sent meanwhile is reported (``python -m bench rolling-restart`` compares it
    between brokers)."""
    replicated_topic(admin_client, healthy, topic)
    consumer = GroupConsumer(healthy.bootstrap, topic, f"rolling-{uuid.uuid4().hex[:8]}")
    producers: list[ChaosProducer] = [
        cls(name, healthy.bootstrap, topic, PARTITIONS) for name, cls in PRODUCERS.items()
    ]
    with ExitStack() as consuming:
        consumer.start()
        consuming.callback(consumer.stop)
        with ExitStack() as producing:
            for producer in producers:
                producer.start()
                producing.callback(producer.stop)
            eventually(lambda: _assert_consuming(consumer, producers), timeout_s=RECOVERY_TIMEOUT_S)
            began = time.monotonic()
            for node_id in sorted(healthy.nodes):
                wait_until_replicated(healthy, [topic, "__consumer_offsets"])
                healthy.terminate(node_id)
                healthy.start(node_id)
            wait_until_replicated(healthy, [topic, "__consumer_offsets"])
            ended = time.monotonic()
        latencies = sorted(
            a.acked_at - a.sent_at for p in producers for a in p.acks if began <= a.sent_at <= ended
        )
        with capsys.disabled():
            print(
                f"\n[rolling restart] {healthy.kind}: {ended - began:.1f} s, {len(latencies)} records "
                f"sent meanwhile, produce latency p99 {nearest_rank(latencies, 0.99) * 1000:.0f} ms, "
                f"max {latencies[-1] * 1000:.0f} ms; failed deliveries: "
                + ", ".join(f"{p.name} {p.failed} {p.errors[:3]}" for p in producers),
                flush=True,
            )
        assert [p.failed for p in producers] == [0] * len(producers), [p.errors[:3] for p in producers]
        acked = [a for producer in producers for a in producer.acked()]
        history = checked(healthy, topic, acked, read_all(healthy.bootstrap, topic, PARTITIONS))
        assert history.ok, str(history)
        eventually(lambda: _assert_none_missing(consumer, acked), timeout_s=RECOVERY_TIMEOUT_S, interval_s=1)


def _assert_consuming(consumer: GroupConsumer, producers: list[ChaosProducer]) -> None:
    acked = [a for producer in producers for a in producer.acked()]
    assert consumer.given_any(acked), "the group has not been given a record yet"


def test_leader_failover_under_load_loses_duplicates_and_reorders_nothing(
    healthy: Cluster,
    admin_client: ConfluentAdmin,
    topic: str,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two idempotent acks=all producers and a consumer group work while, each round, the
    leader of a partition and then a random broker are SIGKILLed and restarted."""
    rounds = request.config.getoption("--chaos-rounds")
    replicated_topic(admin_client, healthy, topic)
    consumer = GroupConsumer(healthy.bootstrap, topic, f"chaos-{uuid.uuid4().hex[:8]}")
    producers: list[ChaosProducer] = [
        cls(name, healthy.bootstrap, topic, PARTITIONS) for name, cls in PRODUCERS.items()
    ]
    work = Workload(healthy, topic, producers, consumer)

    def report(line: str) -> None:
        with capsys.disabled():
            print(f"\n[chaos] {line}", flush=True)

    with ExitStack() as consuming:
        consumer.start()
        consuming.callback(consumer.stop)
        with ExitStack() as producing:
            for producer in producers:
                producer.start()
                producing.callback(producer.stop)
            run_rounds(work, rounds, report, random.Random())
        acked = [a for producer in producers for a in producer.acked()]
        report(f"{work.failovers}; acknowledged {len(acked)}; {work.clients_report()}")
        history = checked(healthy, topic, acked, read_all(healthy.bootstrap, topic, PARTITIONS))
        report(str(history))
        assert history.ok, str(history)
        assert len(acked) > 0
        eventually(lambda: _assert_none_missing(consumer, acked), timeout_s=RECOVERY_TIMEOUT_S, interval_s=1)


def checked(cluster: Cluster, topic: str, acked: list[Acked], read: list[Read]) -> Report:
    """The history's report, with the writers of repeated records asked of the brokers."""
    places = places_of(read)
    return check(acked, read, writers_at(cluster.bootstrap, topic, repeated_places(places)), places=places)


def _assert_none_missing(consumer: GroupConsumer, acked: list[Acked]) -> None:
    missing = consumer.missing(acked)
    assert not missing, f"the group has not consumed {len(missing)} records, e.g. {missing[:3]}"


def test_paused_leader_is_replaced_and_converges_after_resuming(
    healthy: Cluster, admin_client: ConfluentAdmin, topic: str
) -> None:
    """SIGSTOP the leader of a partition: a new leader acknowledges the writes; after SIGCONT
    the old leader rejoins the ISR, agrees with the others' Metadata, and once it leads again
    (preferred leader election) serves every acknowledged write."""
    replicated_topic(admin_client, healthy, topic)
    producer = ConfluentChaosProducer("paused", healthy.bootstrap, topic, PARTITIONS)
    producer.start()
    try:
        old = healthy.leader_of(topic, 0)
        paused_at = time.monotonic()
        healthy.pause(old)
        eventually(lambda: _assert_led_by_other(healthy, topic, old), timeout_s=RECOVERY_TIMEOUT_S)
        eventually(lambda: _assert_acked_after(producer, paused_at), timeout_s=RECOVERY_TIMEOUT_S)
        healthy.resume(old)
        wait_until_replicated(healthy, [topic])
    finally:
        producer.stop()
    eventually(
        lambda: _lead_again(admin_client, healthy, topic, old), timeout_s=RECOVERY_TIMEOUT_S, interval_s=1
    )
    history = checked(healthy, topic, producer.acked(), read_all(healthy.nodes[old], topic, PARTITIONS))
    assert history.ok, str(history)


def _assert_led_by_other(cluster: Cluster, topic: str, old: int) -> None:
    leader = cluster.leader_of(topic, 0)
    assert leader not in (old, -1), f"partition 0 still led by {leader}"


def _assert_acked_after(producer: ChaosProducer, moment: float) -> None:
    assert producer.first_ack_after(0, moment) is not None, "no write to partition 0 acknowledged yet"


def _lead_again(admin: ConfluentAdmin, cluster: Cluster, topic: str, old: int) -> None:
    """Elect the preferred leader of partition 0 (``old``, its first replica) and check that all
    nodes agree it leads."""
    with client_errors():
        elected = admin.admin.elect_leaders(ElectionType.PREFERRED, [RdPartition(topic, 0)]).result(
            timeout=30
        )
    failed = {tp.partition: e.name() for tp, e in elected.items() if e is not None}
    assert set(failed.values()) <= {"ELECTION_NOT_NEEDED"}, failed
    views = {n: topic_partitions(address, topic) for n, address in cluster.nodes.items()}
    assert views[old][0].leader == old, views[old][0]
    assert all(view == views[old] for view in views.values()), views


def test_group_keeps_consuming_while_its_coordinator_is_killed(
    healthy: Cluster, admin_client: ConfluentAdmin, drivers: DriverPool, topic: str
) -> None:
    """FindCoordinator moves the group to another broker when its coordinator dies: the member
    keeps its partitions, consumes what is produced afterwards, and commits."""
    replicated_topic(admin_client, healthy, topic)
    group = f"coordinator-{uuid.uuid4().hex[:8]}"
    driver = drivers.get("confluent-kafka", healthy.bootstrap)
    idempotent = ProducerSettings(idempotence=True)
    driver.produce(topic, [Message(b"before", partition=p) for p in range(PARTITIONS)], idempotent)
    with driver.consumer(ConsumerSettings(group=group)) as consumer:
        consumer.subscribe([topic])
        assert len(poll_until(consumer, PARTITIONS, timeout_s=60)) == PARTITIONS
        consumer.commit({(topic, p): 1 for p in range(PARTITIONS)})
        coordinator = _coordinator(admin_client, group)
        healthy.kill(coordinator)
        driver.produce(topic, [Message(b"after", partition=p) for p in range(PARTITIONS)], idempotent)
        after: set[tuple[int, int, bytes | None]] = set()

        def every_partition_after() -> None:
            after.update((r.partition, r.offset, r.value) for r in consumer.poll(10, 1.0))
            assert {p for p, _, _ in after} == set(range(PARTITIONS)), after

        # A record may come twice (a rebalance re-reads from the committed offset, 1): at least once.
        eventually(every_partition_after, timeout_s=90, interval_s=0)
        assert after == {(p, 1, b"after") for p in range(PARTITIONS)}
        eventually(lambda: consumer.commit({(topic, p): 2 for p in range(PARTITIONS)}), timeout_s=60)
        new = eventually(lambda: _coordinator_other_than(admin_client, group, coordinator), timeout_s=60)
        assert new in healthy.live()
    assert admin_client.group_offsets(group) == {(topic, p): 2 for p in range(PARTITIONS)}


def test_streams_group_keeps_its_epochs_while_its_coordinator_is_killed(
    healthy: Cluster, admin_client: ConfluentAdmin, drivers: DriverPool, topic: str, tmp_path: Path
) -> None:
    """A streams group's coordinator is SIGKILLed: the new one loads the group from
    ``__consumer_offsets`` (KIP-1071's records), so the instance goes on at its member epoch
    instead of rejoining a group started over (whose epochs would begin again at 1), and the word
    counts stay exact. A second instance joined and left first, so the epochs are past where a
    new group's would be."""
    streams = Scenario(
        topic,
        healthy.broker(),
        drivers.get("confluent-kafka", healthy.bootstrap),
        tmp_path,
        replicas=CLUSTER_SIZE,
    )
    try:
        first, second = streams.instance("first"), streams.instance("second")
        start_running([first, second], streams.settings())
        text = lines(100, seed=5)
        streams.produce(text)
        reader = streams.reader(streams.output)
        reader.wait_for(words_of(text))
        assert second.stop(leave=True)
        spread(first, streams, 1)
        before = first.describe_group(streams.application_id)
        assert before["group_epoch"] >= 3, before  # first, second and its leaving each moved it
        coordinator = _coordinator(admin_client, streams.application_id)
        healthy.kill(coordinator)
        more = lines(100, seed=6)
        # Idempotent, and as long as a new leader of a partition of the dead node may take.
        streams.produce(more, ProducerSettings(idempotence=True, timeout_s=RECOVERY_TIMEOUT_S))
        reader.wait_for(words_of(text) + words_of(more))
        after = first.describe_group(streams.application_id)
        [member] = after["members"]
        assert after["group_epoch"] >= before["group_epoch"], (before, after)
        assert member["member_epoch"] >= before["members"][0]["member_epoch"], (before, after)
        assert first.state() == "RUNNING"
    finally:
        streams.close()


def _coordinator(admin: ConfluentAdmin, group: str) -> int:
    (described,) = admin.admin.describe_consumer_groups([group]).values()
    return described.result(timeout=30).coordinator.id


def _coordinator_other_than(admin: ConfluentAdmin, group: str, old: int) -> int:
    coordinator = _coordinator(admin, group)
    assert coordinator != old, f"coordinator still {old}"
    return coordinator


def test_cluster_fixture_reports_every_node(cluster: Cluster) -> None:
    """The cluster object the scenarios use: three nodes, all live, all in the bootstrap list."""
    assert len(cluster.nodes) == CLUSTER_SIZE
    assert sorted(cluster.live()) == sorted(cluster.nodes)
    assert set(cluster.bootstrap.split(",")) == set(cluster.nodes.values())
