"""Three-broker clusters whose nodes reach each other only through links a test can cut.

The nemesis suite (``compat_tests/test_cluster_nemesis.py``) partitions nodes from each other
and from their metadata quorum, on a machine where it may not touch the network itself. So each
cluster here is started by :mod:`compat_tests.kit.clusters` (the same settings as the session
cluster), with every link a fault may cut going through a :class:`~compat_tests.kit.link_proxy.Link`:

- replication: every node gets an inter-broker listener (``INTERNAL``) of its own, advertised at
  a proxy's address, so followers fetch, and brokers send each other requests, through the
  proxy in front of the broker they reach; the proxy tells the connecting node by its process
  (:mod:`compat_tests.kit.socket_owner`), so one node's links can be cut both ways while the
  other two still replicate. Clients keep the direct PLAINTEXT listener;
- metadata: an Odradek node reaches each etcd member through a proxy of its own (its own
  ``cluster.etcd.endpoints``), and a Kafka node reaches each other controller through a proxy of
  its own (its own ``controller.quorum.voters``; a combined node's broker reaches the active
  controller through the same addresses), so one node can be cut off from the quorum;
- optionally, one node's log directory on a small disk of its own (:mod:`compat_tests.kit.small_disk`)
  that a fault fills.

The session cluster of ``--nodes 3`` stays unproxied, so the other scenarios are unaffected.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from compat_tests.kit.brokers import free_ports
from compat_tests.kit.clusters import (
    CLUSTER_SIZE,
    Cluster,
    ClusterUnavailable,
    start_kafka_cluster,
    start_odradek_cluster,
)
from compat_tests.kit.etcd_cluster import EtcdCluster, etcd_binary
from compat_tests.kit.link_proxy import Link, Mode, SourceOf, Switchboard
from compat_tests.kit.small_disk import SmallDisk
from compat_tests.kit.socket_owner import connecting_process, processes_in

INTER_BROKER = "INTERNAL"
"""The inter-broker listener's name on both brokers (Kafka's session clusters already use it)."""


@dataclass
class Network:
    """The cluster's cuttable links: into each node's inter-broker listener, and from each node
    to its metadata quorum (and, for Kafka's combined nodes, into each node's controller)."""

    board: Switchboard
    replication: dict[int, Link] = field(default_factory=dict)
    """Node id -> the link in front of its inter-broker listener (sources told apart)."""
    metadata_from: dict[int, list[Link]] = field(default_factory=lambda: defaultdict(list))
    """Node id -> its links to the metadata quorum (etcd members, or the other controllers)."""
    metadata_into: dict[int, list[Link]] = field(default_factory=lambda: defaultdict(list))
    """Node id -> the other controllers' links to its controller (Kafka)."""

    def cut_replication(self, node: int, mode: Mode = Mode.HOLD) -> None:
        """Partition ``node`` from the other brokers: no byte moves on a connection into its
        inter-broker listener, nor on one it made to theirs."""
        self.replication[node].set(mode)
        for other, link in self.replication.items():
            if other != node:
                link.set(mode, source=node)

    def cut_metadata(self, node: int, mode: Mode = Mode.HOLD) -> None:
        """Cut ``node`` off from the metadata quorum, both ways."""
        for link in [*self.metadata_from[node], *self.metadata_into[node]]:
            link.set(mode)

    def cut_all_metadata(self, mode: Mode = Mode.HOLD) -> None:
        """No node reaches any member of the metadata quorum (Kafka: no controller reaches another)."""
        for links in self.metadata_from.values():
            for link in links:
                link.set(mode)

    def heal(self) -> None:
        self.board.heal()


@dataclass
class NemesisCluster:
    """A cluster with its network, its own etcd (Odradek) and the node on a small disk, if any.
    Stopping the cluster stops the rest too."""

    cluster: Cluster
    network: Network
    etcd: EtcdCluster | None = None
    disk: SmallDisk | None = None
    disk_node: int | None = None

    def stop(self) -> None:
        self.cluster.stop()


def start_nemesis_cluster(
    kind: str, workdir: Path, overrides: Mapping[str, str], disk_node: int | None = None
) -> NemesisCluster:
    """A three-node cluster of ``kind`` behind proxies (module docstring), ``disk_node``'s log
    directory on a small disk of its own; returns once every node serves."""
    if kind == "odradek" and etcd_binary() is None:
        raise ClusterUnavailable("etcd is not installed (Debian package etcd-server)")
    network = Network(Switchboard())
    etcd = EtcdCluster(CLUSTER_SIZE) if kind == "odradek" else None
    disks: list[SmallDisk] = []
    node_dirs: dict[Path, int] = {}

    def source_of(peer: tuple[str, int], local: tuple[str, int]) -> int | None:
        return connecting_process(peer, local, processes_in(node_dirs))

    def proxied(node_id: int, data_dir: Path, settings: Mapping[str, str]) -> Mapping[str, str]:
        node_dirs[data_dir.parent] = node_id
        if node_id == disk_node:
            disks.append(SmallDisk(data_dir))
        if etcd is not None:
            return _odradek_links(network, node_id, settings, etcd.endpoints, source_of)
        return _kafka_links(network, node_id, settings, source_of)

    def cleanup() -> None:
        network.board.stop()
        if etcd is not None:
            etcd.stop()
        for disk in disks:
            disk.unmount()

    try:
        if etcd is not None:
            etcd.start()
            cluster = start_odradek_cluster(workdir, overrides, etcd.endpoints, per_node=proxied)
        else:
            cluster = start_kafka_cluster(workdir, overrides, per_node=proxied)
    except BaseException:
        cleanup()
        raise
    cluster.cleanups.append(cleanup)
    return NemesisCluster(cluster, network, etcd, disks[0] if disks else None, disk_node)


def _replication_link(network: Network, node_id: int, upstream: str, source_of: SourceOf) -> Link:
    host, port = upstream.rsplit(":", 1)
    link = network.board.link(f"replication-{node_id}", (host, int(port)), source_of)
    network.replication[node_id] = link
    return link


def _kafka_links(
    network: Network, node_id: int, config: Mapping[str, str], source_of: SourceOf
) -> dict[str, str]:
    """A Kafka node's inter-broker listener advertised at its proxy, and its quorum voters: the
    other controllers each at a proxy of this node's, itself direct."""
    internal = _listeners(config["listeners"])[INTER_BROKER]
    link = _replication_link(network, node_id, internal, source_of)
    voters = []
    for voter in config["controller.quorum.voters"].split(","):
        voter_id, address = voter.split("@")
        if int(voter_id) != node_id:
            host, port = address.rsplit(":", 1)
            to_controller = network.board.link(f"controller-{node_id}-{voter_id}", (host, int(port)))
            network.metadata_from[node_id].append(to_controller)
            network.metadata_into[int(voter_id)].append(to_controller)
            address = to_controller.address
        voters.append(f"{voter_id}@{address}")
    return {
        "advertised.listeners": _with_listener(config["advertised.listeners"], INTER_BROKER, link.address),
        "controller.quorum.voters": ",".join(voters),
    }


def _odradek_links(
    network: Network,
    node_id: int,
    settings: Mapping[str, str],
    etcd_endpoints: list[str],
    source_of: SourceOf,
) -> dict[str, str]:
    """An Odradek node's own inter-broker listener, advertised at its proxy, and its etcd
    endpoints, each member at a proxy of this node's."""
    (port,) = free_ports(1)
    internal = f"127.0.0.1:{port}"
    link = _replication_link(network, node_id, internal, source_of)
    listeners = _with_listener(settings["listeners"], INTER_BROKER, internal)
    to_etcd = []
    for index, endpoint in enumerate(etcd_endpoints):
        host, member_port = endpoint.split("://")[-1].rsplit(":", 1)
        member = network.board.link(f"etcd-{node_id}-{index}", (host, int(member_port)))
        network.metadata_from[node_id].append(member)
        to_etcd.append(member.address)
    return {
        "listeners": listeners,
        "advertised.listeners": _with_listener(listeners, INTER_BROKER, link.address),
        "listener.security.protocol.map": f"{settings['listener.security.protocol.map']},{INTER_BROKER}:PLAINTEXT",
        "inter.broker.listener.name": INTER_BROKER,
        "cluster.etcd.endpoints": "etcd://" + ",".join(to_etcd),
    }


def _listeners(text: str) -> dict[str, str]:
    """``NAME://host:port,...`` as name -> ``host:port``."""
    return dict(entry.split("://", 1) for entry in text.split(",") if entry)  # type: ignore[misc]


def _with_listener(text: str, name: str, address: str) -> str:
    """``listeners``-style ``text`` with listener ``name`` at ``address`` (replaced or added)."""
    entries = {**_listeners(text), name: address}
    return ",".join(f"{listener}://{at}" for listener, at in entries.items())
