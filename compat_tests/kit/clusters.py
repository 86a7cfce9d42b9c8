"""Three-broker clusters: start, kill, restart, pause and resume nodes.

The one cluster harness of the repository: the compatibility suite's ``--nodes 3`` mode and its
failover scenarios, the cluster tests of ``tests/cluster/``, the Spark tests and the benchmarks
start their clusters here.

- ``apache-kafka``: three combined broker+controller KRaft nodes formatted with one cluster id,
  a static quorum (``controller.quorum.voters``) and replicated internal topics;
- ``odradek``: three ``odradek serve --cluster etcd://...`` brokers on an etcd: a three-member
  one of their own (:mod:`compat_tests.kit.etcd_cluster`), or the one a test shares between
  its clusters (``etcd_endpoints``), each cluster under its own key prefix.

Nodes are driven by signals, as an operator's bad day would: ``kill`` is SIGKILL (no clean
shutdown, no flushed state), ``start`` restarts a node on its own port and data directory,
``pause``/``resume`` are SIGSTOP/SIGCONT (a node that is alive to the kernel but answers nothing,
like a long GC pause). Leaders are looked up with a raw Metadata request to a live node
(:mod:`compat_tests.kit.raw_protocol`); ``admin()`` and ``metadata()`` give confluent-kafka's
view, for tests written against its types.
"""

from __future__ import annotations

import signal
import struct
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from compat_tests.kit.brokers import (
    KAFKA_AUTHORIZER_SETTINGS,
    READY_TIMEOUT_S,
    SUITE_OVERRIDES,
    RunningBroker,
    format_kafka_storage,
    free_ports,
    kafka_jvm,
    kafka_node_config,
    launch,
    odradek_command,
    properties_text,
    random_cluster_id,
    wait_until_ready,
)
from compat_tests.kit.etcd_cluster import EtcdCluster, etcd_binary
from compat_tests.topic_metadata import PartitionState, topic_partitions, wait_until_every_broker_lists

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

T = TypeVar("T")

CLUSTER_SIZE = 3

REPLICATED: Mapping[str, str] = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
}
"""What every cluster node gets, whichever broker: topics (also the internal ones) on all three
brokers, and acks=all needing two of them, so one broker may die without losing a write."""


LIVENESS: Mapping[str, str] = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "1000",
}
"""How soon a silent broker is declared dead and its partitions get new leaders (Kafka's
controller fences it; an Odradek broker's etcd lease expires): the same keys for both. The
defaults (9 s, heartbeats every 2 s) make each failover take ~12 s, which the CI rounds would
pay a dozen times; four missed heartbeats still tolerate a loaded machine."""


SCRAM_LISTENER = "SASL_PLAINTEXT"
SHARED_SECURITY: Mapping[str, str] = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-256",
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": (
        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    ),
}
"""What every cluster node gets so that the state Kafka keeps in its metadata log (ACLs, SCRAM
credentials, quotas, dynamic configs) can be shown to hold on every broker
(``compat_tests/test_cluster_shared_state.py``): the StandardAuthorizer, allowing what no ACL
names (so the other scenarios, which set no ACLs, run as without it), and a SCRAM-SHA-256
listener (:data:`SCRAM_LISTENER`) beside the PLAINTEXT one the clients of the other scenarios
use. Kafka's nodes also need their controller and inter-broker listeners to speak SASL as a
super user (:data:`compat_tests.kit.brokers.KAFKA_AUTHORIZER_SETTINGS`): its authorizer refuses
the quorum's own requests until it has loaded the metadata; Odradek's brokers replicate over
PLAINTEXT, which nothing here denies."""


RACK_AWARE_SELECTOR: Mapping[str, str] = {
    "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
}
"""Every cluster node runs in a rack of its own (``broker.rack`` ``rack-<node id>``, see
:func:`rack_of`) and lets consumers fetch from the replica in their rack (KIP-392): a consumer
with ``client.rack`` gets that replica as its preferred read replica."""


def rack_of(node_id: int) -> str:
    """The ``broker.rack`` of cluster node ``node_id``."""
    return f"rack-{node_id}"


FAST_FAILOVER: Mapping[str, str] = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "5000",
    "offsets.topic.num.partitions": "6",
}
"""What the cluster tests of ``tests/cluster/`` add: failovers within seconds (session 3 s,
replica lag 5 s), and fewer offsets partitions to place."""


def wait_for(condition: Callable[[], T | None], timeout: float = 60.0, what: str = "condition") -> T:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = condition()
        except Exception as exc:  # a broker restarting refuses connections meanwhile
            result, last = None, exc
        else:
            last = None
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f" (last error: {last})" if last else ""))
        time.sleep(0.2)


NodeSettings = Callable[[int, Path, Mapping[str, str]], Mapping[str, str]]
"""A starter's ``per_node`` hook: given a node's id, its data directory and the settings built for
it, the settings to add or replace on that node alone; for Odradek ``cluster.etcd.endpoints``
replaces the ``--cluster`` endpoints. :mod:`compat_tests.kit.proxied_clusters` puts each node's
inter-broker listener and metadata links behind proxies with it."""


class ClusterUnavailable(RuntimeError):
    """This kind of broker cannot run as a cluster here; the message says why (a skip reason)."""


@dataclass
class Node:
    """One broker of a cluster: how to start it, and its process while it runs."""

    node_id: int
    address: str
    workdir: Path
    command: list[str]
    kind: str
    scram_address: str = ""
    """``host:port`` of its :data:`SCRAM_LISTENER` (SCRAM-SHA-256 logins)."""
    process: subprocess.Popen[bytes] | None = None
    paused: bool = False

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.kind}.log"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def as_broker(self) -> RunningBroker:
        return RunningBroker(self.address, self.kind, self.process, self.log_path)


@dataclass
class Cluster:
    """Three brokers of one kind sharing one cluster, driven node by node by the scenarios."""

    kind: str
    members: dict[int, Node]
    quorum_on_brokers: bool
    """Whether the metadata quorum runs in the broker processes (combined KRaft nodes), so that
    losing two brokers also loses it; Odradek keeps it in a separate etcd."""
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    """Run by :meth:`stop` after the brokers are gone (e.g. stopping etcd)."""

    @property
    def nodes(self) -> dict[int, str]:
        """Node id -> ``host:port`` of its client listener."""
        return {node_id: node.address for node_id, node in self.members.items()}

    @property
    def bootstrap(self) -> str:
        """Every node's address, as a client's ``bootstrap.servers``."""
        return ",".join(self.nodes.values())

    def broker(self) -> RunningBroker:
        """The cluster as the single-broker scenarios see a broker: one bootstrap string."""
        return RunningBroker(self.bootstrap, self.kind)

    def live(self) -> list[int]:
        """Nodes whose process runs and is not stopped by :meth:`pause`."""
        return [i for i, node in self.members.items() if node.running() and not node.paused]

    def start(self, node_id: int) -> None:
        """(Re)start a node on its port and data directory; return once it serves Metadata."""
        self._launch(node_id)
        wait_until_ready(self.members[node_id].as_broker(), READY_TIMEOUT_S)

    def start_stopped(self) -> None:
        """Resume every paused node, start every node that is down, and wait until all are registered."""
        for node_id, node in self.members.items():
            if node.paused:
                self.resume(node_id)
            if not node.running():
                self.start(node_id)
        self.wait_all_registered()

    def wait_all_registered(self) -> None:
        """Wait until every node's Metadata lists every node. A restarted broker answers a moment
        before the cluster counts it registered, and a topic with three replicas created in
        between is refused with INVALID_REPLICATION_FACTOR."""
        wait_until_every_broker_lists(list(self.nodes.values()), len(self.members))

    def start_all(self) -> None:
        """Start every node before waiting for any: a KRaft node opens its listener only once
        the quorum, which needs a majority of them, has elected a leader."""
        for node_id in self.members:
            self._launch(node_id)
        for node in self.members.values():
            wait_until_ready(node.as_broker(), READY_TIMEOUT_S)

    def _launch(self, node_id: int) -> None:
        node = self.members[node_id]
        if node.running():
            raise RuntimeError(f"node {node_id} is already running")
        node.process = launch(node.command, node.workdir, node.log_path)
        node.paused = False

    def kill(self, node_id: int) -> None:
        """SIGKILL a node and reap it: nothing of its state is flushed or handed over."""
        node = self.members[node_id]
        if node.process is not None and node.process.poll() is None:
            node.process.kill()
            node.process.wait()
        node.paused = False

    def terminate(self, node_id: int, timeout_s: float = 120.0) -> None:
        """SIGTERM a node and wait until it has exited: an operator's stop, which both brokers
        answer with a controlled shutdown (leaderships moved away first)."""
        node = self.members[node_id]
        if node.process is not None and node.process.poll() is None:
            node.process.terminate()
            node.process.wait(timeout_s)

    def pause(self, node_id: int) -> None:
        """SIGSTOP a node: its sockets stay open but it answers nothing."""
        self._signal(node_id, signal.SIGSTOP)
        self.members[node_id].paused = True

    def resume(self, node_id: int) -> None:
        """SIGCONT a paused node."""
        self._signal(node_id, signal.SIGCONT)
        self.members[node_id].paused = False

    def _signal(self, node_id: int, sig: signal.Signals) -> None:
        node = self.members[node_id]
        if not node.running():
            raise RuntimeError(f"node {node_id} is not running")
        assert node.process is not None
        node.process.send_signal(sig)

    def partitions(self, topic: str) -> dict[int, PartitionState]:
        """``topic``'s partitions as the first live node that knows the topic reports them."""
        errors = []
        for node_id in self.live():
            try:
                found = topic_partitions(self.members[node_id].address, topic)
            except (OSError, struct.error) as exc:
                errors.append(f"node {node_id}: {exc}")
                continue
            if found:
                return found
        raise AssertionError(f"no live node reports topic {topic!r} {errors}")

    def leader_of(self, topic: str, partition: int) -> int:
        """The leader of a partition (-1 for none) according to a live node's Metadata."""
        return self.partitions(topic)[partition].leader

    def log_tail(self, node_id: int, lines: int = 40) -> str:
        return self.members[node_id].as_broker().log_tail(lines)

    def admin(self, node_id: int | None = None) -> AdminClient:
        """A confluent-kafka admin client of one node (or of the whole cluster)."""
        from confluent_kafka.admin import AdminClient  # the harness itself needs no client library

        return AdminClient(
            {"bootstrap.servers": self.nodes[node_id] if node_id is not None else self.bootstrap}
        )

    def metadata(self, node_id: int | None = None) -> Any:
        """confluent-kafka's ClusterMetadata as one node (or any) answers it."""
        return self.admin(node_id).list_topics(timeout=10)

    def live_brokers(self, node_id: int | None = None) -> set[int]:
        """The brokers Metadata lists, as one node (or any) answers it."""
        return set(self.metadata(node_id).brokers)

    def partition(self, topic: str, partition: int, node_id: int | None = None) -> Any:
        """confluent-kafka's PartitionMetadata (leader, replicas, isrs) as one node (or any) answers it."""
        return self.metadata(node_id).topics[topic].partitions[partition]

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGKILL every node (the data is thrown away, so a clean shutdown buys nothing and a
        combined KRaft node without its quorum would wait for it), then run the cleanups."""
        for node_id, node in self.members.items():
            if node.paused:
                self.resume(node_id)
            self.kill(node_id)
        for cleanup in self.cleanups:
            cleanup()


def start_kafka_cluster(
    workdir: Path,
    overrides: Mapping[str, str] | None = None,
    per_node: NodeSettings | None = None,
    quick_jit: bool = True,
) -> Cluster:
    """Three combined broker+controller KRaft nodes with a static quorum of all three, one
    cluster id, each with its own ports and log directory; return once all serve. Their JVMs
    compile with C1 only unless ``quick_jit`` is false (:data:`compat_tests.kit.brokers.KAFKA_TEST_JIT`)."""
    jvm = kafka_jvm(quick_jit=quick_jit)
    ports = free_ports(4 * CLUSTER_SIZE)
    ids = range(1, CLUSTER_SIZE + 1)
    voters = ",".join(f"{i}@127.0.0.1:{ports[4 * (i - 1) + 1]}" for i in ids)
    cluster_id = random_cluster_id()
    members = {}
    for i in ids:
        broker_port, controller_port, scram_port, internal_port = ports[4 * (i - 1) : 4 * i]
        node_dir = workdir / f"node-{i}"
        node_dir.mkdir(parents=True, exist_ok=True)
        config = kafka_node_config(i, broker_port, controller_port, node_dir / "data")
        extra = f",{SCRAM_LISTENER}://127.0.0.1:{scram_port},INTERNAL://127.0.0.1:{internal_port}"
        config["listeners"] += extra
        config["advertised.listeners"] += extra
        config["listener.security.protocol.map"] = (
            f"PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT,{SCRAM_LISTENER}:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT"
        )
        config["controller.quorum.voters"] = voters
        config.update(REPLICATED)
        config.update(LIVENESS)
        config.update(KAFKA_AUTHORIZER_SETTINGS)
        config.update(SHARED_SECURITY)
        config.update(RACK_AWARE_SELECTOR)
        config["broker.rack"] = rack_of(i)
        config.update(overrides or {})
        config.update(per_node(i, node_dir / "data", config) if per_node else {})
        properties = node_dir / "server.properties"
        properties.write_text(properties_text(config))
        format_kafka_storage(jvm, properties, cluster_id)
        command = [*jvm, "kafka.Kafka", str(properties)]
        members[i] = Node(
            i, f"127.0.0.1:{broker_port}", node_dir, command, "apache-kafka", f"127.0.0.1:{scram_port}"
        )
    return _started(Cluster("apache-kafka", members, quorum_on_brokers=True))


def start_odradek_cluster(
    workdir: Path,
    overrides: Mapping[str, str] | None = None,
    etcd_endpoints: Sequence[str] | None = None,
    per_node: NodeSettings | None = None,
) -> Cluster:
    """Three ``odradek serve --cluster`` brokers on the etcd at ``etcd_endpoints``, or on a
    three-node etcd of their own; return once all serve."""
    if etcd_endpoints is not None:
        nodes = _odradek_nodes(workdir, etcd_endpoints, overrides or {}, per_node)
        return _started(Cluster("odradek", nodes, False))
    if etcd_binary() is None:
        raise ClusterUnavailable("etcd is not installed (Debian package etcd-server)")
    etcd = EtcdCluster(CLUSTER_SIZE)
    etcd.start()
    try:
        members = _odradek_nodes(workdir, etcd.endpoints, overrides or {})
    except BaseException:
        etcd.stop()
        raise
    return _started(Cluster("odradek", members, quorum_on_brokers=False, cleanups=[etcd.stop]))


def _odradek_nodes(
    workdir: Path,
    etcd_endpoints: Sequence[str],
    overrides: Mapping[str, str],
    per_node: NodeSettings | None = None,
) -> dict[int, Node]:
    """The command line of each Odradek cluster node, on ports and data directories of its own."""
    # etcd://h1:2379,h2:2379 (docs/CLUSTER.md), whether the endpoints carry a scheme or not
    cluster = "etcd://" + ",".join(endpoint.split("://")[-1] for endpoint in etcd_endpoints)
    prefix = f"/odradek-test-{uuid.uuid4().hex[:12]}"  # clusters sharing an etcd stay apart
    members = {}
    ports = free_ports(2 * CLUSTER_SIZE)
    for i in range(1, CLUSTER_SIZE + 1):
        port, scram_port = ports[2 * (i - 1) : 2 * i]
        node_dir = workdir / f"node-{i}"
        node_dir.mkdir(parents=True, exist_ok=True)
        settings = {
            "node.id": str(i),
            "listeners": f"PLAINTEXT://127.0.0.1:{port},{SCRAM_LISTENER}://127.0.0.1:{scram_port}",
            "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,{SCRAM_LISTENER}:SASL_PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "cluster.etcd.prefix": prefix,
            **SUITE_OVERRIDES,
            **REPLICATED,
            **LIVENESS,
            **SHARED_SECURITY,
            **RACK_AWARE_SELECTOR,
            "broker.rack": rack_of(i),
            **overrides,
        }
        settings.update(per_node(i, node_dir / "data", settings) if per_node else {})
        etcd = settings.pop("cluster.etcd.endpoints", cluster)  # --cluster would win over an override
        command = [odradek_command(), "serve", "--cluster", etcd, "--data-dir", str(node_dir / "data")]
        for key, value in settings.items():
            command += ["--override", f"{key}={value}"]
        members[i] = Node(i, f"127.0.0.1:{port}", node_dir, command, "odradek", f"127.0.0.1:{scram_port}")
    return members


def _started(cluster: Cluster) -> Cluster:
    """``cluster`` once every node serves and every node lists all of them (a scenario's first
    topic with three replicas was refused while one was still registering, on a loaded machine)."""
    try:
        cluster.start_all()
        cluster.wait_all_registered()
    except BaseException:
        cluster.stop()
        raise
    return cluster


CLUSTER_KINDS: Mapping[str, Callable[[Path, Mapping[str, str] | None], Cluster]] = {
    "odradek": start_odradek_cluster,
    "apache-kafka": start_kafka_cluster,
}
BENCHMARK_CLUSTER_KINDS: Mapping[str, Callable[[Path, Mapping[str, str] | None], Cluster]] = {
    **CLUSTER_KINDS,
    "apache-kafka": partial(start_kafka_cluster, quick_jit=False),
}
"""The clusters of the benchmarks (``bench/``): Kafka's nodes with the JVM's full JIT, since a
benchmark measures its throughput (the test suites' nodes compile with C1 only)."""
