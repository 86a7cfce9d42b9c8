"""A 3-broker cluster on a 3-member etcd: losing an etcd member and the controller at once, and
etcd losing its quorum, must not stop the brokers from serving what needs no metadata change."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import NewTopic

from compat_tests.kit.clusters import FAST_FAILOVER, start_odradek_cluster, wait_for
from compat_tests.kit.raw_protocol import ask, make_batch
from tests.cluster.test_cluster import consume_all, create_topic, produce
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def cluster(etcd_cluster3, tmp_path_factory):
    with start_odradek_cluster(
        tmp_path_factory.mktemp("cluster"), FAST_FAILOVER, etcd_endpoints=etcd_cluster3.endpoints
    ) as running:
        yield running


def test_cluster_survives_an_etcd_member_and_the_controller_dying_together(cluster, etcd_cluster3) -> None:
    create_topic(cluster, "sturdy", 3, **{"min.insync.replicas": "2"})
    produce(cluster, "sturdy", [f"a-{i}" for i in range(100)])
    # the first group creates __consumer_offsets, which (replication factor 3) needs 3 brokers
    assert len(consume_all(cluster, "sturdy", 100)) == 100
    controller = cluster.metadata().controller_id
    etcd_cluster3.kill(0)
    cluster.kill(controller)
    try:
        survivors = sorted({1, 2, 3} - {controller})
        wait_for(lambda: cluster.metadata(survivors[0]).controller_id in survivors, what="a new controller")
        produce(cluster, "sturdy", [f"b-{i}" for i in range(100)])
        assert len(consume_all(cluster, "sturdy", 200)) == 200
    finally:
        etcd_cluster3.restart(0)
        cluster.start(controller)
    wait_for(lambda: cluster.live_brokers() == {1, 2, 3}, what="all brokers back")


def test_brokers_keep_serving_while_etcd_has_no_quorum(cluster, etcd_cluster3) -> None:
    create_topic(cluster, "quorumless", 2, **{"min.insync.replicas": "2"})
    create_topic(cluster, "fenced", 1)
    fenced_leader = cluster.nodes[cluster.leader_of("fenced", 0)]
    assert _created(cluster.nodes[1], _acl("fenced")) == ErrorCode.NONE  # closes it to anyone else
    # A group needs __consumer_offsets, whose creation is a metadata change: it happens first
    # (the scenario passed alone only when an earlier one had created it).
    produce(cluster, "quorumless", ["before"])
    assert consume_all(cluster, "quorumless", 1) == ["before"]
    etcd_cluster3.kill(1)
    etcd_cluster3.kill(2)
    try:
        # acks=all needs no metadata change while every replica stays in sync
        produce(cluster, "quorumless", [f"v-{i}" for i in range(100)])
        assert len(consume_all(cluster, "quorumless", 101)) == 101
        # a metadata change cannot be made, and says so instead of hanging
        admin = cluster.admin()
        futures = admin.create_topics([NewTopic("not-now", 1, 3)], request_timeout=30)
        with pytest.raises(KafkaException):
            futures["not-now"].result(timeout=60)
        # the ACLs last seen stay enforced, and a change to them answers REQUEST_TIMED_OUT
        assert _produced(fenced_leader, "fenced") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert _created(cluster.nodes[2], _acl("quorumless")) == ErrorCode.REQUEST_TIMED_OUT
        # a member's heartbeat fails at once (its watch may just stay silent): it says what it enforces
        said = "enforcing the ACLs, credentials, quotas and configs last seen"
        wait_for(lambda: said in cluster.log_tail(1, 400), timeout=30, what="node 1 saying so")
    finally:
        etcd_cluster3.restart(1)
        etcd_cluster3.restart(2)
    create_topic(cluster, "again", 1)
    wait_for(lambda: cluster.live_brokers() == {1, 2, 3}, what="all brokers registered")


def _acl(topic: str) -> dict[str, object]:
    """ALLOW User:someone-else to WRITE ``topic``: with allow.everyone.if.no.acl.found, that
    closes it to everyone else."""
    return {"resource_type": 2, "resource_name": topic, "resource_pattern_type": 3,
            "principal": "User:someone-else", "host": "*", "operation": 4, "permission_type": 3}  # fmt: skip


def _created(address: str, acl: dict[str, object]) -> int:
    answer = ask(address, ApiKey.CREATE_ACLS, 3, {"creations": [acl]}, 60.0)
    return answer["results"][0]["error_code"]


def _produced(address: str, topic: str) -> int:
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": make_batch([b"x"])}]}]}  # fmt: skip
    answer = ask(address, ApiKey.PRODUCE, 9, body, 10.0)
    return answer["responses"][0]["partition_responses"][0]["error_code"]
