"""What hosting the group and transaction coordinators reads of the node and sets in it
(see ``broker.services.node_parts`` for why this is a Protocol)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from broker.services.node_parts import LogsNode

if TYPE_CHECKING:
    from broker.services.cluster.node import ClusterNode
    from broker.services.share.share_partitions import SharePartitions
    from broker.services.share.share_sessions import ShareSessions
    from broker.services.share.state_router import ShareStateRouter
    from broker.state.dynamic_config_store import DynamicConfigStore
    from broker.state.producer_id_allocator import ProducerIdAllocator
    from coordinator.coordinator import GroupCoordinator
    from coordinator.share.state_coordinator import ShareCoordinator
    from coordinator.transactions import TransactionCoordinator


class MarkedNode(LogsNode, Protocol):
    """What writing a transaction marker into a local partition reads: the logs, and the
    group coordinator, which applies a marker in ``__consumer_offsets`` to its offsets."""

    coordinator: GroupCoordinator | None


class CoordinatorHost(MarkedNode, Protocol):
    """What hosting the group and transaction coordinators reads and sets."""

    cluster: ClusterNode | None
    dynamic_configs: DynamicConfigStore
    producer_ids: ProducerIdAllocator
    transactions: TransactionCoordinator | None
    share_coordinator: ShareCoordinator | None
    share: SharePartitions | None
    share_state: ShareStateRouter | None
    share_sessions: ShareSessions | None
    background_tasks: list[Callable[[], Awaitable[None]]]
