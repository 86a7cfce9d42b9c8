"""Leadership rules a cluster applies on its own: the automatic preferred-leader rebalance
(Kafka's ``auto.leader.rebalance.enable``), and unclean leader election, which only a topic that
allows it gets when every in-sync replica is gone."""

from __future__ import annotations

import pytest

from compat_tests.kit.clusters import FAST_FAILOVER, Cluster, start_odradek_cluster, wait_for
from tests.cluster.test_cluster import create_topic, lose_preferred_leadership, produce

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def cluster(etcd_cluster, tmp_path_factory):
    quick_rebalance = {"leader.imbalance.check.interval.seconds": "2"}
    with start_odradek_cluster(
        tmp_path_factory.mktemp("cluster"),
        {**FAST_FAILOVER, **quick_rebalance},
        etcd_endpoints=etcd_cluster.endpoints,
    ) as running:
        yield running


def test_leadership_returns_to_the_preferred_replica_by_itself(cluster: Cluster) -> None:
    create_topic(cluster, "rebalanced", 1)
    preferred = lose_preferred_leadership(cluster, "rebalanced")
    # no ElectLeaders: the controller's imbalance check moves it back once it is in sync
    wait_for(lambda: cluster.leader_of("rebalanced", 0) == preferred, timeout=90, what="leadership back")


@pytest.mark.parametrize("unclean", [False, True])
def test_a_partition_without_in_sync_replicas_waits_unless_unclean_election_is_allowed(
    cluster: Cluster, unclean: bool
) -> None:
    topic = f"unclean-{str(unclean).lower()}"
    create_topic(
        cluster,
        topic,
        1,
        **{"unclean.leader.election.enable": str(unclean).lower(), "min.insync.replicas": "1"},
    )
    produce(cluster, topic, ["before"])
    leader = cluster.leader_of(topic, 0)
    followers = sorted({1, 2, 3} - {leader})
    for node in followers:
        cluster.kill(node)
    wait_for(lambda: cluster.partition(topic, 0, leader).isrs == [leader], what="the ISR down to the leader")
    cluster.kill(leader)
    cluster.start(followers[0])
    try:
        if unclean:
            wait_for(lambda: cluster.leader_of(topic, 0) == followers[0], what="an unclean leader")
        else:
            wait_for(
                lambda: cluster.partition(topic, 0, followers[0]).leader == -1, what="the partition offline"
            )
            # the old ISR's last member coming back leads again, with everything it had
            cluster.start(leader)
            wait_for(lambda: cluster.leader_of(topic, 0) == leader, what="the last in-sync replica leading")
    finally:
        for node, broker in cluster.members.items():
            if not broker.running():
                cluster.start(node)
    wait_for(lambda: cluster.live_brokers() == {1, 2, 3}, what="all brokers back")
