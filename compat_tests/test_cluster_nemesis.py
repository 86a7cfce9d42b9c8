"""The nemesis suite: a three-node cluster whose nodes reach each other only through proxies
(:mod:`compat_tests.kit.proxied_clusters`), faulted one way per round (:mod:`compat_tests.nemesis`)
while two idempotent acks=all producers write and a consumer group reads, its whole history
checked after every round (:mod:`compat_tests.kit.history`): nothing acknowledged lost,
duplicated or reordered, every replica's log in rising leader epochs and the same as the others'
where both hold an offset, and the group given every acknowledged record.

Run with ``--nodes 3`` (skipped otherwise), against either broker; ``--nemesis-rounds N`` for N
rounds (default: each fault once; the long mode is 100). The cluster is the scenario's own, not
the session's: its proxies and small disk would change what the other scenarios measure.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from compat_tests.chaos import PRODUCERS, ChaosProducer, GroupConsumer, Workload
from compat_tests.kit import small_disk
from compat_tests.kit.clusters import CLUSTER_SIZE, ClusterUnavailable
from compat_tests.kit.drivers.confluent import ConfluentAdmin
from compat_tests.kit.proxied_clusters import NemesisCluster, start_nemesis_cluster
from compat_tests.nemesis import NEMESIS_OVERRIDES, plan, run_nemesis, wait_until_in_sync

pytestmark = pytest.mark.cluster

PARTITIONS = 4
DISK_NODE = 3
"""The node whose log directory is on a small disk of its own (where one can be mounted)."""


@pytest.fixture(scope="module")
def disk_unavailable() -> str | None:
    """Why no node can get a small disk here (None: one can)."""
    return small_disk.unavailable()


@pytest.fixture(scope="module")
def nemesis_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, disk_unavailable: str | None
) -> Iterator[NemesisCluster]:
    """A proxied three-node cluster of ``--broker``'s kind, node :data:`DISK_NODE` on a small disk."""
    if request.config.getoption("--bootstrap"):
        pytest.skip("needs a cluster the suite starts: drop --bootstrap")
    kind = request.config.getoption("--broker")
    workdir = tmp_path_factory.mktemp(f"{kind}-nemesis")
    disk_node = None if disk_unavailable else DISK_NODE
    try:
        target = start_nemesis_cluster(kind, workdir, NEMESIS_OVERRIDES, disk_node)
    except ClusterUnavailable as exc:
        pytest.skip(str(exc))
    yield target
    target.stop()


def test_faults_lose_duplicate_reorder_and_fork_nothing(
    nemesis_cluster: NemesisCluster,
    disk_unavailable: str | None,
    topic: str,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every round one fault (leader partitioned, cut from the metadata quorum, paused past its
    session, the metadata quorum lost, a leader's disk full), held 12 s, healed; after each,
    the cluster back in sync and the history so far without fault."""
    cluster = nemesis_cluster.cluster
    chosen, skipped = plan(nemesis_cluster, disk_unavailable)
    rounds = request.config.getoption("--nemesis-rounds") or len(chosen)

    def report(line: str) -> None:
        with capsys.disabled():
            print(f"\n[nemesis] {cluster.kind}: {line}", flush=True)

    for reason in skipped:
        report(reason)
    admin = ConfluentAdmin(cluster.bootstrap)
    try:
        admin.create_topic(topic, PARTITIONS, replication_factor=CLUSTER_SIZE)
    finally:
        admin.close()
    wait_until_in_sync(nemesis_cluster, [topic])
    consumer = GroupConsumer(cluster.bootstrap, topic, f"nemesis-{uuid.uuid4().hex[:8]}")
    producers: list[ChaosProducer] = [
        cls(name, cluster.bootstrap, topic, PARTITIONS) for name, cls in PRODUCERS.items()
    ]
    work = Workload(cluster, topic, producers, consumer)
    with ExitStack() as running:
        consumer.start()
        running.callback(consumer.stop)
        for producer in producers:
            producer.start()
            running.callback(producer.stop)
        done = run_nemesis(work, nemesis_cluster, chosen, rounds, report)
    report(f"{len(done)} rounds, {len(work.acked_since(0.0))} records acknowledged; {work.clients_report()}")
