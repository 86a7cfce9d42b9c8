"""Spark's Kafka source and sink against a 3-broker Odradek cluster, unchanged: a batch read of a
replicated topic after one partition's leader was killed (the connector follows the new leaders),
and a write through Spark's sink that every replica then holds."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from compat_tests.kit.clusters import FAST_FAILOVER, Cluster, start_odradek_cluster, wait_for
from compat_tests.kit.etcd_cluster import EtcdCluster
from compat_tests.kit.fixtures import require_etcd
from spark_integration.jobs import read_topic
from spark_integration.tests.support import consume_all, numbered_records, produce, spark_records

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_etcd()
    with (
        EtcdCluster(1) as etcd,
        start_odradek_cluster(
            tmp_path_factory.mktemp("cluster"), FAST_FAILOVER, etcd_endpoints=etcd.endpoints
        ) as running,
    ):
        yield running


def replicated_topic(cluster: Cluster, partitions: int) -> str:
    from confluent_kafka.admin import NewTopic

    name = f"spark-cluster-{uuid.uuid4().hex[:8]}"
    cluster.wait_all_registered()  # the broker the scenario before restarted may not count yet
    admin = cluster.admin()
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(timeout=60)
    wait_for(lambda: all(len(p.isrs) == 3 for p in cluster.metadata().topics[name].partitions.values()))
    return name


def test_spark_reads_a_replicated_topic_after_a_leader_died(spark: SparkSession, cluster: Cluster) -> None:
    topic = replicated_topic(cluster, 3)
    produced = produce(cluster.bootstrap, topic, numbered_records(60, partitions=3))
    victim = cluster.leader_of(topic, 0)
    cluster.kill(victim)
    try:
        wait_for(lambda: cluster.leader_of(topic, 0) not in (victim, -1), what="a new leader")
        assert spark_records(read_topic(spark, cluster.bootstrap, topic)) == produced
    finally:
        cluster.start_stopped()


def test_spark_sink_writes_to_the_cluster(spark: SparkSession, cluster: Cluster) -> None:
    topic = replicated_topic(cluster, 2)
    rows = [(f"k{i}", f"v{i}") for i in range(20)]
    frame = spark.createDataFrame(rows, ["key", "value"])
    frame.write.format("kafka").option("kafka.bootstrap.servers", cluster.bootstrap).option(
        "kafka.acks", "all"
    ).option("topic", topic).save()
    written = consume_all(cluster.bootstrap, topic, 2)
    assert sorted((r.key, r.value) for r in written) == sorted((k.encode(), v.encode()) for k, v in rows)
