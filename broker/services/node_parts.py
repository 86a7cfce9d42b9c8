"""The parts of a node that services built before their collaborators see, as Protocols.

Most services receive exactly the collaborators they use (``PartitionStore(config, topics,
clock, ...)``, ``ReplicaManager(...)``). Two families cannot: the coordinators' hosting
(``broker.services.coordinators``) and cluster membership (``broker.services.cluster``) are
built before some of what they use exists (the replica manager appears once a cluster member
starts replication; the coordinators are installed after the logs are open), and they install
themselves into the node (``coordinator``, ``transactions``, ``background_tasks``). They see
the node through Protocols that list what they read and set (these, and
``broker.services.coordinators.host.CoordinatorHost``); the node
(``broker.node.server.Broker``) satisfies them structurally, and no service imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from broker.config.config import BrokerConfig, Listener
    from broker.services.metrics import BrokerMetrics
    from broker.services.replication.manager import ReplicaManager
    from broker.services.storage.appends import AppendNotifier
    from broker.services.storage.durability import Durability
    from broker.services.storage.partitions import PartitionStore
    from broker.state.topic_registry import TopicRegistry
    from coordinator.partitioned import PartitionedCoordinator
    from log.clock import Clock


class LogsNode(Protocol):
    """Who the node is, its settings, and its partitions with what follows an append
    (``broker.services.storage.partition_writes``)."""

    config: BrokerConfig
    clock: Clock
    node_id: int
    topics: TopicRegistry
    partitions: PartitionStore
    appends: AppendNotifier
    durability: Durability
    metrics: BrokerMetrics
    replicas: ReplicaManager | None  # cluster mode, once replication started


class ClusterHost(LogsNode, Protocol):
    """What a cluster member (``ClusterNode`` and its roles) reads of its node and tells it."""

    cluster_id: str

    def adopt_cluster_id(self, cluster_id: str) -> None:
        """Take the cluster's id (the first member to start wrote it to etcd)."""
        ...

    def endpoint_for(self, listener_name: str) -> Listener:
        """The advertised address of ``listener_name``, with the port bound if it was 0."""
        ...

    def coordinator_over(self, topic: str) -> PartitionedCoordinator | None:
        """The coordinator whose state lives in the internal ``topic``, None for other topics."""
        ...
