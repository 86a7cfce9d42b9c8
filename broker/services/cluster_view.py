"""Who leads what and where brokers are: the one question every handler asks, for both modes.

A single node leads every partition of its topics, at the topic's leader epoch, alone in its ISR.
A cluster member answers from the metadata image it watches in etcd (``broker.services.cluster``).  Handlers
ask here instead of branching on the mode, so Metadata, FindCoordinator, DescribeCluster and the
partition-addressed APIs read the same facts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from broker.config.config import BrokerConfig, Listener
    from broker.services.cluster.cluster_metadata import ClusterMetadata
    from broker.state.topic_registry import TopicInfo


class PartitionState(NamedTuple):
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]


class NodeAddress(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None


class ClusterMember(Protocol):
    """A cluster member's view of the cluster: the metadata image it watches in etcd."""

    @property
    def metadata(self) -> ClusterMetadata: ...


class ViewedNode(Protocol):
    """What this module reads of a node: who it is, where it listens, and its cluster if any."""

    @property
    def node_id(self) -> int: ...

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def cluster(self) -> ClusterMember | None: ...

    def endpoint_for(self, listener_name: str) -> Listener: ...


def partition_state(broker: ViewedNode, topic: TopicInfo, partition: int) -> PartitionState | None:
    """The partition's leadership, or None while a cluster has not written its state yet."""
    cluster = broker.cluster
    if cluster is None:
        node = [broker.node_id]
        return PartitionState(broker.node_id, topic.leader_epoch, node, node)
    record = cluster.metadata.image.partition(topic.name, partition)
    if record is None:
        return None
    return PartitionState(record.leader, record.leader_epoch, list(record.replicas), list(record.isr))


def live_nodes(broker: ViewedNode, listener_name: str) -> list[NodeAddress]:
    """Every live broker with its address on ``listener_name`` (the client's listener)."""
    cluster = broker.cluster
    if cluster is None:
        endpoint = broker.endpoint_for(listener_name)
        return [NodeAddress(broker.node_id, endpoint.host, endpoint.port, broker.config.get("broker.rack"))]
    nodes = []
    for node_id, found in sorted(cluster.metadata.image.brokers.items()):
        endpoint = found.record.endpoint(listener_name)
        if endpoint is not None:
            nodes.append(NodeAddress(node_id, endpoint.host, endpoint.port, found.record.rack))
    return nodes


def node_address(broker: ViewedNode, node_id: int, listener_name: str) -> NodeAddress | None:
    """A live broker's address on ``listener_name``."""
    return next((n for n in live_nodes(broker, listener_name) if n.node_id == node_id), None)


def rack_of(broker: ViewedNode, node_id: int) -> str | None:
    """A live broker's ``broker.rack`` (None: none set, or not alive)."""
    cluster = broker.cluster
    if cluster is None:
        return broker.config.get("broker.rack") if node_id == broker.node_id else None
    found = cluster.metadata.image.brokers.get(node_id)
    return found.record.rack if found is not None else None


def controller_id(broker: ViewedNode) -> int:
    cluster = broker.cluster
    return broker.node_id if cluster is None else cluster.metadata.image.controller_id


def topic_complete(broker: ViewedNode, topic: TopicInfo) -> bool:
    """Whether every partition of ``topic`` has its state (a cluster writes a new topic's
    partitions in chunks after the topic: until the last, the topic is not shown, as Kafka
    shows a created topic whole)."""
    cluster = broker.cluster
    if cluster is None:
        return True
    image = cluster.metadata.image
    return all(image.partition(topic.name, p) is not None for p in range(topic.partitions))
