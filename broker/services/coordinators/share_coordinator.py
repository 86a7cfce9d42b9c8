"""Hosting the share coordinator (KIP-932) and the share-partitions that persist through it.

The share coordinator keeps every share-partition's state on ``__share_group_state``
(created on first use, as Kafka does), loaded and driven like the group and transaction
coordinators (``group_timers.start_coordinator``); in a cluster it serves the keys of the
partitions of that topic this broker leads. The share-partitions this broker leads
(``broker.services.share``) reach it, or another broker's, through the
``ShareStateRouter`` (``broker.share_state``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.services.coordinators.group_timers import internal_topic_storage, start_coordinator
from broker.services.share.share_partitions import SharePartitions
from broker.services.share.share_sessions import ShareSessions
from broker.services.share.state_router import ShareStateRouter
from coordinator.share.state_coordinator import SHARE_STATE_TOPIC, ShareCoordinator

if TYPE_CHECKING:
    from broker.services.coordinators.host import CoordinatorHost


def install_share_coordinator(broker: CoordinatorHost) -> ShareCoordinator:
    """Set ``broker.share_coordinator``, ``broker.share_state``, ``broker.share`` and ``broker.share_sessions``, and
    register the tasks that load the coordinator and expire acquisition locks."""
    partitions, storage = internal_topic_storage(
        broker,
        SHARE_STATE_TOPIC,
        broker.config.get_int("share.coordinator.state.topic.num.partitions"),
        "share.coordinator.state.topic.segment.bytes",
    )
    coordinator = ShareCoordinator(partitions, storage, broker.clock)
    broker.share_coordinator = coordinator
    # The replica manager is made after the coordinators: looked up at each write.
    broker.share_state = ShareStateRouter(
        coordinator, broker.cluster, broker.node_id, lambda: broker.replicas
    )
    broker.share = SharePartitions(
        broker.config, broker.clock, broker.dynamic_configs, broker.share_state, broker.metrics
    )
    broker.share_sessions = ShareSessions(broker.config.get_int("group.share.max.share.sessions"))
    start_coordinator(broker, coordinator, "share coordinator")
    broker.background_tasks.append(broker.share.run_lock_timers)
    return coordinator
