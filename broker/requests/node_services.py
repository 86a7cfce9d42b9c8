"""What a node offers the request path: the services handlers call, as a Protocol.

Handlers reach shared state through ``ctx.broker`` (tests run several nodes in one process, so
nothing is global). Typing it with this Protocol rather than the node's class keeps the layers
one-way: the node (``broker.node.server.Broker``) satisfies it structurally and is the only
module that knows every service, while the request layer and the handlers see the services'
own types, all from the layers below (``broker.services``, ``broker.state``, ``broker.config``).
It is the request path's list of dependencies, as Kafka's ``KafkaApis`` constructor is.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from broker.config.config import BrokerConfig, Listener
    from broker.requests.api_ranges import ApiSupport
    from broker.services.cluster.node import ClusterNode
    from broker.services.metrics import BrokerMetrics
    from broker.services.quotas.quota_manager import ClientQuotas
    from broker.services.replication.manager import ReplicaManager
    from broker.services.security.acl_store import AclStore
    from broker.services.security.authorizer import Authorizer
    from broker.services.security.listener_security import ListenerSecurity
    from broker.services.security.scram_store import ScramCredentialStore
    from broker.services.share.share_partitions import SharePartitions
    from broker.services.share.share_sessions import ShareSessions
    from broker.services.share.state_router import ShareStateRouter
    from broker.services.storage.appends import AppendNotifier
    from broker.services.storage.durability import Durability
    from broker.services.storage.fetch_sessions import FetchSessionCache
    from broker.services.storage.partitions import PartitionStore
    from broker.services.telemetry.client_metrics_manager import ClientTelemetry
    from broker.services.telemetry.client_software import ClientSoftware
    from broker.state.dynamic_config_store import DynamicConfigStore
    from broker.state.producer_id_allocator import ProducerIdAllocator
    from broker.state.topic_registry import TopicRegistry
    from coordinator.coordinator import GroupCoordinator
    from coordinator.partitioned import PartitionedCoordinator
    from coordinator.share.state_coordinator import ShareCoordinator
    from coordinator.transactions import TransactionCoordinator
    from log.clock import Clock
    from wire.api_keys import ApiKey


class NodeServices(Protocol):
    """The node as requests see it."""

    # Who this node is, and its settings (some change live: ``DynamicConfigStore``).
    config: BrokerConfig
    clock: Clock
    node_id: int
    cluster_id: str
    directory_id: str
    data_dir: Path
    dynamic_configs: DynamicConfigStore
    listener_security: dict[str, ListenerSecurity]
    # Topics and their partition logs: appends, reads, durability, replication.
    topics: TopicRegistry
    partitions: PartitionStore
    appends: AppendNotifier
    durability: Durability
    fetch_sessions: FetchSessionCache
    replicas: ReplicaManager | None  # cluster mode only
    cluster: ClusterNode | None  # cluster mode only
    # Coordinators (installed at start; None only while a cluster member does not host one).
    coordinator: GroupCoordinator | None
    transactions: TransactionCoordinator | None
    share_coordinator: ShareCoordinator | None
    share: SharePartitions | None  # the share-partitions this broker leads (KIP-932)
    share_state: ShareStateRouter | None  # the share coordinator of any key, here or remote
    share_sessions: ShareSessions | None
    producer_ids: ProducerIdAllocator
    # Security, quotas, telemetry, observation.
    acls: AclStore | None
    authorizer: Authorizer | None
    scram_credentials: ScramCredentialStore
    quotas: ClientQuotas
    client_telemetry: ClientTelemetry
    client_software: ClientSoftware
    metrics: BrokerMetrics
    # The versions ApiVersions advertises.
    supported: dict[ApiKey, ApiSupport]

    def endpoint_for(self, listener_name: str) -> Listener:
        """The advertised address of ``listener_name`` (the listener a client came in on)."""
        ...

    def coordinator_over(self, topic: str) -> PartitionedCoordinator | None:
        """The coordinator whose state lives in the internal ``topic``, None for other topics."""
        ...
