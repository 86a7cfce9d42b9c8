"""Reassignment throttles: Kafka's replication quotas (``kafka-reassign-partitions --throttle``).

Two broker settings bound replication traffic in bytes per second, measured as Kafka measures it
(``replication.quota.window.num`` = 11 windows of ``replication.quota.window.size.seconds`` = 1):
``leader.replication.throttled.rate`` what a leader serves, ``follower.replication.throttled.rate``
what a follower fetches.  They apply only to the replicas a topic lists in
``leader.replication.throttled.replicas`` / ``follower.replication.throttled.replicas``
(``partition:broker`` pairs, or ``*``), and never to a replica already in the ISR, so a throttle
slows the copies a reassignment adds without pushing healthy followers out of sync.  While a rate
is over its bound the leader leaves the throttled partitions out of its answers and the follower
leaves them out of its fetches (Kafka's ReplicationQuotaManager); unset rates throttle nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from broker.services.quotas.quota_rate import Rate, Windows

if TYPE_CHECKING:
    from broker.config.config import BrokerConfig
    from broker.services.replication.ports import ClusterPorts
    from broker.state.topic_registry import TopicRegistry

PartitionKey = tuple[str, int]

# Kafka's replication.quota.window.num and replication.quota.window.size.seconds defaults.
REPLICATION_WINDOWS = Windows(11, 1000)
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


def listed(configs: Mapping[str, str], key: str, partition: int, node_id: int) -> bool:
    """Whether the topic's ``key`` list names replica ``partition:node_id`` (or is ``*``)."""
    value = (configs.get(key) or "").strip()
    if value == "*":
        return True
    wanted = f"{partition}:{node_id}"
    return any(entry.strip() == wanted for entry in value.split(","))


def throttled_copy(
    topics: TopicRegistry, key: PartitionKey, replicas_key: str, replica: int, in_sync: bool
) -> bool:
    """Whether a replica's copy of ``key`` is throttled: listed under ``replicas_key`` by its
    topic and not in the ISR."""
    info = topics.get(key[0])
    return not in_sync and info is not None and listed(info.configs, replicas_key, key[1], replica)


class ReplicationQuota:
    """The byte rate of throttled replication on this broker against the broker setting
    ``rate_key`` (read at every check, so a dynamic change applies at once; unset: no bound)."""

    def __init__(self, config: BrokerConfig, rate_key: str, clock_ms: Callable[[], int]) -> None:
        self._config = config
        self._rate_key = rate_key
        self._clock_ms = clock_ms
        self._rate = Rate(REPLICATION_WINDOWS, clock_ms())

    def exceeded(self) -> bool:
        value = self._config.get(self._rate_key)
        if not value:
            return False
        bound = int(value)
        rate, _window = self._rate.measure(self._clock_ms())
        return rate > bound

    def record(self, size: int) -> None:
        if size:
            self._rate.record(size, self._clock_ms())


class FollowerThrottle:
    """The follower side, for the fetchers (``broker.services.replication.fetcher.FollowerThrottle``):
    this broker's copies listed in ``follower.replication.throttled.replicas`` and out of the
    ISR (as the cluster's metadata says) against ``follower.replication.throttled.rate``."""

    def __init__(
        self, cluster: ClusterPorts, topics: TopicRegistry, node_id: int, quota: ReplicationQuota
    ) -> None:
        self._cluster = cluster
        self._topics = topics
        self._node_id = node_id
        self._quota = quota

    def _throttled(self, key: PartitionKey) -> bool:
        isr = self._cluster.in_sync_replicas(*key)
        in_sync = isr is None or self._node_id in isr
        return throttled_copy(self._topics, key, FOLLOWER_REPLICAS, self._node_id, in_sync)

    def held_back(self, keys: Iterable[PartitionKey]) -> Collection[PartitionKey]:
        """The rate first, once per fetch: unset (the usual case) or under its bound, nothing is
        held back, without the ISR and topic lookups every partition would otherwise pay."""
        if not self._quota.exceeded():
            return ()
        return {key for key in keys if self._throttled(key)}

    def fetched(self, key: PartitionKey, size: int) -> None:
        if size and self._throttled(key):
            self._quota.record(size)
