"""The replica roles of this broker, as the cluster layer assigns them (Kafka's ReplicaManager).

``become_leader``/``become_follower``/``stop_replica`` are the whole interface the cluster
layer drives; ``ClusterPorts`` is what this calls back: ``propose_isr`` (an ISR change, written
by the cluster layer with the partition epoch as a compare-and-set) and ``endpoint_of`` (where
another broker listens).

A leader keeps a :class:`LeaderState` per partition, fed by its followers' fetches (the fetch
handler calls :meth:`follower_fetched`) and by its own appends (:meth:`leader_appended`); the
high watermark it computes goes into the log (``set_replicated_high_watermark``), wakes long
polling fetches and acks=all producers. The ISR is checked on a follower fetch that moved
its log end or comes from outside the ISR, and on a timer every half
``replica.lag.time.max.ms`` (as Kafka's isr-expiration task), one proposal per partition in
flight. A follower's partitions are handed to one :class:`LeaderFetcher` per leader broker.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import trio

from broker.config.config import ConfigError
from broker.services.replication.acks import AckWait, ack_wait
from broker.services.replication.fetcher import FetcherSettings, LeaderFetcher
from broker.services.replication.leader_state import LeaderState
from broker.services.replication.throttle import (
    LEADER_REPLICAS,
    FollowerThrottle,
    ReplicationQuota,
    throttled_copy,
)
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.config.config import BrokerConfig
    from broker.services.replication.ports import ClusterPorts
    from broker.services.storage.appends import AppendNotifier
    from broker.services.storage.partitions import PartitionStore
    from broker.state.topic_registry import TopicRegistry
    from log.clock import Clock
    from log.partition_log import PartitionLog

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]


class ReplicaManager:
    """Leader and follower roles of this broker's partitions."""

    def __init__(
        self,
        config: BrokerConfig,
        node_id: int,
        clock: Clock,
        topics: TopicRegistry,
        partitions: PartitionStore,
        appends: AppendNotifier,
        ports: ClusterPorts,
    ) -> None:
        self._node_id = node_id
        self._clock = clock
        self._topics = topics
        self._partitions = partitions
        self._appends = appends
        self._ports = ports
        self.max_lag_ms = config.get_int("replica.lag.time.max.ms")
        self._leader_quota = ReplicationQuota(config, "leader.replication.throttled.rate", clock)
        self._follower_throttle = FollowerThrottle(
            ports, topics, node_id, ReplicationQuota(config, "follower.replication.throttled.rate", clock)
        )
        self._settings = FetcherSettings(
            node_id=node_id,
            wait_max_ms=config.get_int("replica.fetch.wait.max.ms"),
            min_bytes=config.get_int("replica.fetch.min.bytes"),
            max_bytes=config.get_int("replica.fetch.max.bytes"),
            response_max_bytes=config.get_int("replica.fetch.response.max.bytes"),
            backoff_s=config.get_int("replica.fetch.backoff.ms") / 1000,
            socket_timeout_s=config.get_int("replica.socket.timeout.ms") / 1000,
        )
        if config.get_int("replica.socket.timeout.ms") < self._settings.wait_max_ms:
            raise ConfigError(  # Kafka's start-up check: a long poll must fit in the timeout
                "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to "
                "prevent unnecessary socket timeouts"
            )
        self._leading: dict[PartitionKey, LeaderState] = {}
        self._following: dict[PartitionKey, tuple[int, int]] = {}  # (leader id, leader epoch)
        self._fetchers: dict[int, LeaderFetcher] = {}
        self._nursery: trio.Nursery | None = None
        self._collecting: list[AckWait] | None = None

    # --- the cluster layer's interface ------------------------------------------------------

    async def become_leader(
        self,
        topic: str,
        partition: int,
        leader_epoch: int,
        partition_epoch: int,
        replicas: list[int],
        isr: list[int],
    ) -> None:
        """Lead ``topic-partition`` at ``leader_epoch`` (its log must exist): stop fetching
        it and take followers' positions from their fetches; the epoch enters the log's
        leader-epoch cache with its first append (until then OffsetForLeaderEpoch and
        divergence checks count it as starting at the log end). Called again with the same epoch (an ISR or replica
        change) it keeps what the followers' fetches told."""
        key = (topic, partition)
        partition_log = self._log(key)
        self._stop_following(key)
        state = self._leading.get(key)
        if state is not None and state.leader_epoch == leader_epoch:
            state.update_assignment(partition_epoch, replicas, isr, self._clock())
            self._refresh(key, state, partition_log)
            return
        if state is not None:
            state.signal()  # producers waiting under the old epoch re-check who leads
        state = LeaderState(
            self._node_id,
            leader_epoch,
            partition_epoch,
            replicas,
            isr,
            epoch_start_offset=partition_log.log_end_offset,
            high_watermark=partition_log.high_watermark,
            now_ms=self._clock(),
        )
        self._leading[key] = state
        partition_log.set_replicated_high_watermark(state.high_watermark)
        log.info("leading %s-%d at epoch %d, ISR %s", topic, partition, leader_epoch, isr)
        self._refresh(key, state, partition_log)

    async def become_follower(self, topic: str, partition: int, leader_epoch: int, leader_id: int) -> None:
        """Follow ``leader_id`` for ``topic-partition`` at ``leader_epoch``: stop leading it
        and fetch it from that leader, truncating first."""
        key = (topic, partition)
        self._log(key)
        self._stop_leading(key)
        if self._following.get(key) == (leader_id, leader_epoch):
            return
        self._stop_following(key)
        self._following[key] = (leader_id, leader_epoch)
        self._fetcher(leader_id).add(key, leader_epoch)
        log.info("following leader %d for %s-%d at epoch %d", leader_id, topic, partition, leader_epoch)

    async def stop_replica(self, topic: str, partition: int, delete: bool) -> None:
        """Neither lead nor follow ``topic-partition`` any more; with ``delete`` its log goes."""
        key = (topic, partition)
        self._stop_leading(key)
        self._stop_following(key)
        if delete:
            await self._partitions.delete_logs(topic, range(partition, partition + 1))

    # --- reassignment throttles (``broker.services.replication.throttle``) ------------------------------

    def leader_holds_back(self, key: PartitionKey, follower: int) -> bool:
        """Serve ``follower`` nothing of ``key`` this time: a throttled copy (this leader is
        listed in ``leader.replication.throttled.replicas``, the follower is out of the ISR)
        while ``leader.replication.throttled.rate`` is exceeded (asked first: unset, it spares
        every partition of every follower fetch the lookups)."""
        return self._leader_quota.exceeded() and self.leader_throttled(key, follower)

    def leader_throttled(self, key: PartitionKey, follower: int) -> bool:
        state = self._leading.get(key)
        in_sync = state is None or follower in state.isr
        return throttled_copy(self._topics, key, LEADER_REPLICAS, self._node_id, in_sync)

    def leader_served(self, key: PartitionKey, follower: int, size: int) -> None:
        if self.leader_throttled(key, follower):
            self._leader_quota.record(size)

    def fence_all(self) -> None:
        """The cluster session is lost: lead nothing (producers get NOT_LEADER_OR_FOLLOWER,
        acks=all waiters give up) until the cluster layer applies the metadata again."""
        for key in list(self._leading):
            self._stop_leading(key)

    def is_leader(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self._leading

    def under_replicated(self) -> int:
        """Partitions led here whose ISR is smaller than their replica set (Kafka's
        UnderReplicatedPartitions)."""
        return sum(1 for state in self._leading.values() if len(state.isr) < len(state.replicas))

    # --- what the handlers ask --------------------------------------------------------------

    def leader(self, key: PartitionKey) -> LeaderState | None:
        """The partition's leader state, None unless this broker leads it."""
        return self._leading.get(key)

    def now_ms(self) -> int:
        """The clock followers' fetches are recorded by."""
        return self._clock()

    def known_leader(self, key: PartitionKey) -> tuple[int, int] | None:
        """(leader id, leader epoch) as this broker knows them, None if it has no role for it."""
        state = self._leading.get(key)
        if state is not None:
            return self._node_id, state.leader_epoch
        return self._following.get(key)

    def endpoint_of(self, node_id: int, listener_name: str) -> tuple[str, int] | None:
        return self._ports.endpoint_of(node_id, listener_name)

    def leader_appended(self, key: PartitionKey, partition_log: PartitionLog) -> None:
        """After an append on the leader: an ISR of one moves the high watermark at once."""
        state = self._leading.get(key)
        if state is not None:
            if self._collecting is not None:
                self._collecting.append(ack_wait(key, partition_log))
            self._advance(key, state, partition_log)

    @contextmanager
    def collecting(self) -> Iterator[list[AckWait]]:
        """What the leader appends made during the block wait for to be acknowledged (the
        coordinators' writes, deep inside sans-IO code: the block must not await)."""
        self._collecting = collected = []
        try:
            yield collected
        finally:
            self._collecting = None

    def follower_fetched(
        self, key: PartitionKey, replica_id: int, fetch_offset: int, partition_log: PartitionLog
    ) -> None:
        """A follower's fetch from ``fetch_offset`` (within the log) reached the leader."""
        state = self._leading.get(key)
        if state is None:
            return
        if state.follower_fetched(replica_id, fetch_offset, partition_log.log_end_offset, self._clock()):
            self._advance(key, state, partition_log)
            self._maintain_isr(key, state, partition_log)

    async def replicated(self, key: PartitionKey, required_offset: int, min_insync: int) -> ErrorCode:
        """Wait (no deadline of its own) until the high watermark reaches ``required_offset``:
        NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is below ``min_insync`` by then, or
        NOT_LEADER_OR_FOLLOWER if this broker stopped leading the partition or leads it in
        another epoch (its log may have been truncated in between, as a follower)."""
        state = self._leading.get(key)
        while True:
            if state is None or self._leading.get(key) is not state:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            if state.high_watermark >= required_offset:
                if len(state.isr) < state.effective_min_isr(min_insync):
                    return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
                return ErrorCode.NONE
            await state.wait_progress()

    # --- background ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Background task: the fetchers, and the ISR check every half ``replica.lag.time.max.ms``."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for fetcher in self._fetchers.values():
                nursery.start_soon(fetcher.run)
            while True:
                await trio.sleep(max(self.max_lag_ms, 2) / 2000)
                for key, state in list(self._leading.items()):
                    partition_log = self._partitions.get(*key)
                    if partition_log is not None:
                        self._maintain_isr(key, state, partition_log)

    # --- internals ------------------------------------------------------------------------------

    def _log(self, key: PartitionKey) -> PartitionLog:
        partition_log = self._partitions.get(*key)
        if partition_log is None:
            raise LookupError(f"no log for {key[0]}-{key[1]} on broker {self._node_id}")
        return partition_log

    def _fetcher(self, leader_id: int) -> LeaderFetcher:
        fetcher = self._fetchers.get(leader_id)
        if fetcher is None:
            fetcher = LeaderFetcher(
                leader_id,
                self._settings,
                self._partitions,
                self._ports,
                self._follower_throttle,
                self._appends.notify_readable,
            )
            self._fetchers[leader_id] = fetcher
            if self._nursery is not None:
                self._nursery.start_soon(fetcher.run)
        return fetcher

    def _stop_leading(self, key: PartitionKey) -> None:
        state = self._leading.pop(key, None)
        if state is not None:
            state.signal()

    def _stop_following(self, key: PartitionKey) -> None:
        followed = self._following.pop(key, None)
        if followed is not None:
            self._fetchers[followed[0]].remove(key)

    def _advance(self, key: PartitionKey, state: LeaderState, partition_log: PartitionLog) -> None:
        """Move the high watermark if the ISR allows; wake fetches and producers if it moved."""
        if state.advance_high_watermark(partition_log.log_end_offset):
            partition_log.set_replicated_high_watermark(state.high_watermark)
            self._appends.notify_readable(key)
            state.signal()

    def _refresh(self, key: PartitionKey, state: LeaderState, partition_log: PartitionLog) -> None:
        """After the ISR changed: the high watermark may move, producers re-check min ISR."""
        self._advance(key, state, partition_log)
        state.signal()

    def _maintain_isr(self, key: PartitionKey, state: LeaderState, partition_log: PartitionLog) -> None:
        """Propose dropping followers that lag more than ``replica.lag.time.max.ms``, else
        adding those that caught up; one proposal at a time."""
        if state.pending_isr is not None or self._nursery is None:
            return
        if not partition_log.is_online:
            # Followers cannot fetch from a log a disk error took offline: their lag says
            # nothing, and shrinking the ISR to this leader would leave the partition's acked
            # records to a log that may come back without them. Hand the leadership over.
            state.pending_isr = [r for r in state.isr if r != self._node_id]
            self._nursery.start_soon(self._hand_over, key, state)
            return
        lagging = state.out_of_sync(partition_log.log_end_offset, self._clock(), self.max_lag_ms)
        if lagging:
            new_isr = [r for r in state.isr if r not in lagging]
        else:
            joining = state.ready_to_join()
            if not joining:
                return
            new_isr = [r for r in state.replicas if r in state.isr or r in joining]
        state.pending_isr = new_isr
        self._nursery.start_soon(self._propose, key, state, new_isr)

    async def _hand_over(self, key: PartitionKey, state: LeaderState) -> None:
        """Give up leading ``key`` while its log is offline (the cluster layer then makes this
        broker a follower, which catches up once the log is back); tried again on the next
        check while no other in-sync replica can take over."""
        topic, partition = key
        try:
            successor = await self._ports.hand_over(
                topic, partition, state.leader_epoch, state.partition_epoch
            )
        finally:
            state.pending_isr = None
        if successor < 0:
            log.warning("%s-%d: log offline, and no other in-sync replica can lead it yet", topic, partition)

    async def _propose(self, key: PartitionKey, state: LeaderState, new_isr: list[int]) -> None:
        topic, partition = key
        try:
            accepted, partition_epoch = await self._ports.propose_isr(
                topic, partition, state.leader_epoch, state.partition_epoch, new_isr
            )
        finally:
            state.pending_isr = None
        if self._leading.get(key) is not state:
            return
        if not accepted:
            log.info("ISR %s for %s-%d was refused; waiting for newer metadata", new_isr, topic, partition)
            return
        log.info("ISR of %s-%d: %s -> %s", topic, partition, state.isr, new_isr)
        state.isr, state.partition_epoch = list(new_isr), partition_epoch
        partition_log = self._partitions.get(*key)
        if partition_log is not None:
            self._refresh(key, state, partition_log)
