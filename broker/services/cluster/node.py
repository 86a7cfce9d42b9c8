"""A broker as a cluster member: its etcd session, metadata watch, controller candidacy, roles,
and the metadata writes its admin requests make.

Built by the node (``broker.node.server.Broker``) when ``cluster.etcd.endpoints`` is set; :meth:`start` runs before the
listeners open (it needs etcd: when no endpoint answers, the broker says so and exits), the rest
runs as the broker's background tasks.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import trio

from broker.config.config import ConfigError, parse_security_protocol_map, with_default
from broker.services.cluster.cluster_metadata import ClusterMetadata, MetadataConflict, take_producer_id_block
from broker.services.cluster.controller import Controller, elect, hand_over, preferred
from broker.services.cluster.etcd_client import EtcdClient, EtcdError, parse_endpoints
from broker.services.cluster.etcd_documents import EtcdDocuments
from broker.services.cluster.layout import BrokerRecord, Endpoint, Layout, PartitionRecord, TopicRecord
from broker.services.cluster.membership import Membership
from broker.services.cluster.peer_requests import PeerRequests
from broker.services.cluster.producer_id_blocks import ProducerIdBlocks
from broker.services.cluster.reassignment import cancel_reassignment, start_reassignment
from broker.services.cluster.replica_placement import PlacementError, assign_replicas
from broker.services.cluster.roles import Roles
from broker.services.topic_admin import NewTopic, TopicError
from coordinator.offsets_topic import OFFSETS_TOPIC
from coordinator.share.state_coordinator import SHARE_STATE_TOPIC
from coordinator.transactions import TRANSACTION_STATE_TOPIC
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.services.cluster.image import Versioned
    from broker.services.node_parts import ClusterHost
    from broker.state.topic_registry import TopicInfo

log = logging.getLogger(__name__)

CONTROLLER_WAIT_S = 10.0
"""How long a starting broker holds clients back for want of a controller (``ready_to_serve``)."""

PRODUCER_ID_BLOCK = 1000  # Kafka's block size
# The prefix of each internal topic's settings (``<prefix>.replication.factor``, ``.segment.bytes``).
INTERNAL_TOPIC_SETTINGS = {
    OFFSETS_TOPIC: "offsets.topic",
    TRANSACTION_STATE_TOPIC: "transaction.state.log",
    SHARE_STATE_TOPIC: "share.coordinator.state.topic",
}


class ClusterNode:
    """Everything cluster-specific of one broker."""

    def __init__(self, broker: ClusterHost, endpoints: str) -> None:
        config = broker.config
        self._broker = broker
        try:
            self.client = EtcdClient(parse_endpoints(endpoints))
        except ValueError as exc:
            raise ConfigError(f"cluster.etcd.endpoints: {exc}") from exc
        self.metadata = ClusterMetadata(self.client, Layout(with_default(config.get, "cluster.etcd.prefix")))
        self.membership = Membership(
            self.metadata,
            self._record,
            config.get_int("broker.session.timeout.ms"),
            config.get_int("broker.heartbeat.interval.ms"),
            self._fenced,
            self.roles_again,
        )
        rebalance = config.get_bool("auto.leader.rebalance.enable")
        self.controller = Controller(
            self.metadata,
            self.membership,
            broker.node_id,
            self._unclean,
            float(config.get_int("leader.imbalance.check.interval.seconds")) if rebalance else None,
            config.get_int("leader.imbalance.per.broker.percentage"),
        )
        self.roles = Roles(broker, self.metadata)
        self.documents = EtcdDocuments(self.metadata)
        self._inter_broker_listener = (
            config.get("inter.broker.listener.name") or config.advertised_listeners[0].name
        )
        self._started = False
        self._shutting_down = False
        # Requests to other brokers (transaction markers and verification), one connection each.
        self.peers = PeerRequests(self.endpoint_of, f"broker-{broker.node_id}")
        self.producer_ids = ProducerIdBlocks(
            lambda size: take_producer_id_block(self.metadata, size), PRODUCER_ID_BLOCK
        )

    async def start(self) -> None:
        """Connect, adopt the cluster's id, read the metadata and bring local logs in line.
        Raises ``EtcdUnavailable`` when no etcd endpoint answers.  Runs once (the command
        line starts it before serving, so a missing etcd ends the start in one line)."""
        if self._started:
            return
        self._started = True
        await self.client.connect()
        await self.metadata.load()
        cluster_id = await self.metadata.ensure_cluster_id(self._broker.cluster_id)
        self._broker.adopt_cluster_id(cluster_id)
        await self.roles.reconcile_all()

    async def run_membership(self) -> None:
        """Register (the listeners are bound by now) and heartbeat."""
        await self.membership.register()
        await self.membership.run()

    async def ready_to_serve(self) -> None:
        """Until clients may be served (Kafka opens its listeners to them only once its broker
        is registered): this broker registered, so the metadata it answers lists it, and a
        controller known, for at most ``CONTROLLER_WAIT_S`` (an election takes milliseconds).

        Why: a broker that answered before was seen telling a client of no brokers and no
        controller, on which librdkafka's admin client waited past its 30 s timeout for a
        CreateTopics it never sent. The connections meanwhile wait in the listen backlog."""
        await self.membership.registered.wait()
        with trio.move_on_after(CONTROLLER_WAIT_S) as waited:
            await self.metadata.until(lambda image: image.controller_id >= 0)
        if waited.cancelled_caught:
            log.warning("no cluster controller after %.0f s; serving clients without one", CONTROLLER_WAIT_S)

    @property
    def background_tasks(self) -> list:
        return [
            self.metadata.run_watch,
            self.roles.run,
            self.run_membership,
            self.controller.run,
            self.producer_ids.run,
        ]

    def _record(self, incarnation: str) -> BrokerRecord:
        broker = self._broker
        protocols = parse_security_protocol_map(broker.config.get("listener.security.protocol.map") or "")
        endpoints = tuple(
            Endpoint(a.name, a.host, broker.endpoint_for(a.name).port, protocols.get(a.name, a.name))
            for a in broker.config.advertised_listeners
        )
        return BrokerRecord(
            broker.node_id,
            endpoints,
            broker.config.get("broker.rack"),
            incarnation,
            self._shutting_down,
            broker.config.get("broker.machine") or None,
        )

    def _unclean(self, topic: str) -> bool:
        info = self._broker.topics.get(topic)
        value = (info.configs if info else {}).get("unclean.leader.election.enable")
        if value is None:
            return self._broker.config.get_bool("unclean.leader.election.enable")
        return value.lower() == "true"

    def _fenced(self) -> None:
        """The session is lost: lead nothing until registered again."""
        self._broker.replicas.fence_all()
        self.roles.forget_applied()

    def roles_again(self) -> None:
        """(Re-)registered: apply every partition's state anew, so partitions whose leadership
        did not move while this broker was fenced are led again."""
        self.roles.requeue_all()

    # ---------------------------------------------------------------------------------------
    # What replication asks of the cluster (``broker.services.replication.ports.ClusterPorts``)

    async def propose_isr(
        self, topic: str, partition: int, leader_epoch: int, partition_epoch: int, new_isr: list[int]
    ) -> tuple[bool, int]:
        """Kafka's AlterPartition, as a conditional write: only the leader of the current epoch,
        and only over the partition state it last saw, may change the ISR; and, as Kafka's
        controller refuses it (KIP-841), a broker that is not alive never joins it (the
        controller took it out when it died: its last fetch position says nothing now), nor
        one in a controlled shutdown (INELIGIBLE_REPLICA in Kafka)."""
        image = self.metadata.image
        found = image.partitions.get((topic, partition))
        if found is None:
            return False, -1
        current = found.record
        if (
            not self._leads_at(current, leader_epoch, partition_epoch)
            or not set(new_isr) <= set(current.replicas)
            or not all(image.eligible(node) for node in set(new_isr) - set(current.isr))
        ):
            return False, current.partition_epoch
        changed = replace(current, partition_epoch=partition_epoch + 1, isr=tuple(new_isr))
        if not await self._write_as_leader(topic, partition, found, changed, f"ISR change to {new_isr}"):
            return False, current.partition_epoch
        log.info("%s-%d: isr %s -> %s", topic, partition, list(current.isr), new_isr)
        return True, changed.partition_epoch

    async def hand_over(self, topic: str, partition: int, leader_epoch: int, partition_epoch: int) -> int:
        """This broker's log of a partition it leads is offline after a disk error: give the
        leadership to another eligible in-sync replica and leave the ISR, written as
        :meth:`propose_isr` writes (only by the leader of that epoch, over the state it saw);
        the new leader's id, or -1 when none can take over or the state changed meanwhile."""
        image = self.metadata.image
        found = image.partitions.get((topic, partition))
        if found is None or not self._leads_at(found.record, leader_epoch, partition_epoch):
            return -1
        changed = hand_over(found.record, self._broker.node_id, image.eligible)
        if changed is None or not await self._write_as_leader(topic, partition, found, changed, "hand-over"):
            return -1
        log.warning(
            "%s-%d: leadership handed to %d (epoch %d), isr %s: this broker's log is offline after a disk error",
            topic, partition, changed.leader, changed.leader_epoch, list(changed.isr),
        )  # fmt: skip
        return changed.leader

    def _leads_at(self, record: PartitionRecord, leader_epoch: int, partition_epoch: int) -> bool:
        """Whether this broker leads ``record`` at exactly the epochs its leadership last saw:
        only then may it write the partition's state (Kafka's AlterPartition rule)."""
        return (
            record.leader == self._broker.node_id
            and record.leader_epoch == leader_epoch
            and record.partition_epoch == partition_epoch
        )

    async def _write_as_leader(
        self,
        topic: str,
        partition: int,
        found: Versioned[PartitionRecord],
        changed: PartitionRecord,
        what: str,
    ) -> bool:
        """Write ``changed`` over the revision this leader saw and wait until this broker's image
        has it; False (nothing written) if the partition changed meanwhile or etcd failed."""
        try:
            written = await self.metadata.write_partition(topic, partition, changed, found.mod_revision)
        except EtcdError as exc:
            log.warning("%s-%d: %s not written: %s", topic, partition, what, exc)
            return False
        if written is None:
            return False
        await self.metadata.caught_up(written)
        return True

    def in_sync_replicas(self, topic: str, partition: int) -> list[int] | None:
        record = self.metadata.image.partition(topic, partition)
        return None if record is None else list(record.isr)

    def endpoint_of(self, node_id: int, listener_name: str | None = None) -> tuple[str, int] | None:
        found = self.metadata.image.brokers.get(node_id)
        if found is None:
            return None
        listener = listener_name or self._inter_broker_listener
        endpoint = found.record.endpoint(listener)
        return (endpoint.host, endpoint.port) if endpoint is not None else None

    async def elect_leader(self, topic: str, partition: int, *, unclean: bool) -> ErrorCode:
        """ElectLeaders for one partition, with Kafka's outcomes: NONE when leadership moved,
        ELECTION_NOT_NEEDED, or PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE."""
        image = self.metadata.image
        found = image.partitions.get((topic, partition))
        if found is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        record = found.record
        if unclean:
            if record.leader >= 0 and image.alive(record.leader):
                return ErrorCode.ELECTION_NOT_NEEDED
            changed = elect(record, image.eligible, image.alive, unclean=True)
            missing = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
        else:
            if record.leader == record.replicas[0]:
                return ErrorCode.ELECTION_NOT_NEEDED
            changed = preferred(record, image.eligible)
            missing = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        if changed is None or changed.leader < 0:
            return missing
        written = await self.metadata.write_partition(topic, partition, changed, found.mod_revision)
        if written is None:
            return missing
        await self.metadata.caught_up(written)
        return ErrorCode.NONE

    async def reassign(self, topic: str, partition: int, target: list[int] | None) -> ErrorCode:
        """Start (or, with None, cancel) moving a partition's replicas to ``target``."""
        found = self.metadata.image.partitions.get((topic, partition))
        if found is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if target is None:
            changed = cancel_reassignment(found.record)
            if changed is None:
                return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
        else:
            changed = start_reassignment(found.record, tuple(target))
        written = await self.metadata.write_partition(topic, partition, changed, found.mod_revision)
        if written is None:
            return ErrorCode.REQUEST_TIMED_OUT  # changed meanwhile; the client retries
        await self.metadata.caught_up(written)
        await self.roles.settled()
        return ErrorCode.NONE

    def reassignments(self) -> list[tuple[str, int, PartitionRecord]]:
        """Every partition with a reassignment in progress."""
        return sorted(
            (topic, partition, found.record)
            for (topic, partition), found in self.metadata.image.partitions.items()
            if found.record.reassigning
        )

    # ---------------------------------------------------------------------------------------
    # Admin writes

    def _placement(self, partitions: int, replication_factor: int, first: int = 0) -> list[tuple[int, ...]]:
        image = self.metadata.image
        racks = {node: found.record.rack for node, found in image.brokers.items()}
        machines = {node: found.record.machine for node, found in image.brokers.items()}
        try:
            return assign_replicas(
                racks, partitions, replication_factor, machines=machines, first_partition=first, start=first
            )
        except PlacementError as exc:
            raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)) from exc

    def check_replication_factor(self, replication_factor: int) -> None:
        """Refuse a factor above the live brokers, with Kafka's message."""
        self._placement(1, replication_factor)

    async def create_topic(
        self, topic: NewTopic, assignments: Sequence[tuple[int, ...]] | None = None
    ) -> TopicInfo:
        """Create ``topic`` in the cluster (on ``assignments`` if given, else placed as Kafka
        places replicas) and wait until this broker has it."""
        placed = assignments or self._placement(topic.partitions, topic.replication_factor)
        record = TopicRecord(topic.name, uuid.uuid4().bytes, topic.partitions, dict(topic.configs))
        try:
            await self.metadata.create_topic(record, placed)
        except MetadataConflict as exc:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.") from exc
        except EtcdError as exc:
            raise _timed_out(exc) from exc
        await self.roles.settled()
        info = self._broker.topics.get(topic.name)
        if info is None:
            raise TopicError(
                ErrorCode.UNKNOWN_SERVER_ERROR, f"topic {topic.name} was deleted as it was created"
            )
        return info

    async def add_partitions(self, info: TopicInfo, count: int) -> None:
        found = self.metadata.image.topics.get(info.name)
        if found is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {info.name} does not exist")
        replication = len(self.metadata.image.partition(info.name, 0).replicas)
        placed = self._placement(count - found.record.partitions, replication, found.record.partitions)
        try:
            await self.metadata.add_partitions(found.record, found.mod_revision, placed)
        except MetadataConflict as exc:
            raise TopicError(ErrorCode.REASSIGNMENT_IN_PROGRESS, str(exc)) from exc
        except EtcdError as exc:
            raise _timed_out(exc) from exc
        await self.roles.settled()

    async def set_topic_configs(self, info: TopicInfo, configs: dict[str, str]) -> None:
        found = self.metadata.image.topics.get(info.name)
        if found is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {info.name} does not exist")
        try:
            await self.metadata.set_topic_configs(found.record, found.mod_revision, configs)
        except (MetadataConflict, EtcdError) as exc:
            raise _timed_out(exc) from exc
        await self.roles.settled()

    async def delete_topic(self, info: TopicInfo) -> None:
        found = self.metadata.image.topics.get(info.name)
        if found is None:
            return
        try:
            await self.metadata.delete_topic(found.record, found.mod_revision)
        except MetadataConflict as exc:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(exc)) from exc
        except EtcdError as exc:
            raise _timed_out(exc) from exc
        await self.roles.settled()

    async def ensure_internal_topic(self, name: str) -> None:
        """Create a coordinator's internal topic (``__consumer_offsets``, ``__transaction_state``)
        on first use, as Kafka does on the first FindCoordinator, with the partitions and
        replication its settings name (refused, and retried by the next FindCoordinator, while
        fewer brokers are alive)."""
        if name in self.metadata.image.topics:
            return
        coordinator = self._broker.coordinator_over(name)
        if coordinator is None:
            return
        config = self._broker.config
        prefix = INTERNAL_TOPIC_SETTINGS[name]
        topic = NewTopic(
            name,
            coordinator.partitions,
            config.get_int(f"{prefix}.replication.factor"),
            {"cleanup.policy": "compact", "segment.bytes": str(config.get_int(f"{prefix}.segment.bytes"))},
        )
        try:
            await self.create_topic(topic)
        except TopicError as exc:
            if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                log.warning("cannot create %s yet: %s", name, exc.message)

    # ---------------------------------------------------------------------------------------
    # Controlled shutdown

    async def controlled_shutdown(self) -> None:
        """Kafka's controlled shutdown, before this broker stops serving (``odradek serve`` on
        SIGTERM): its record says it is shutting down, the controller (perhaps this broker)
        moves its leaderships to other in-sync replicas and takes it out of the ISRs, and it
        waits until nothing is left to move, so clients move on with one metadata refresh
        instead of waiting out a session timeout. Bounded by ``controlled.shutdown.max.retries``
        attempts of ``controlled.shutdown.retry.backoff.ms`` each; then it stops anyway, as
        Kafka's broker does, and its partitions fail over as after a crash."""
        config = self._broker.config
        if not config.get_bool("controlled.shutdown.enable") or not self.membership.registered.is_set():
            return
        self._shutting_down = True
        attempts = max(1, config.get_int("controlled.shutdown.max.retries"))
        backoff_s = config.get_int("controlled.shutdown.retry.backoff.ms") / 1000
        started = trio.current_time()
        for attempt in range(1, attempts + 1):
            with trio.move_on_after(backoff_s):
                try:
                    await self.membership.reannounce()
                except EtcdError as exc:
                    log.warning("controlled shutdown attempt %d: etcd did not take it (%s)", attempt, exc)
                    await trio.sleep_forever()  # until this attempt's time is up
                await self._until_handed_over()
                log.info("controlled shutdown: leaderships moved in %.2f s", trio.current_time() - started)
                return
        log.warning(
            "controlled shutdown incomplete after %d attempts: still holding %s; stopping anyway",
            attempts,
            ", ".join(f"{t}-{p}" for t, p in self._held()) or "nothing",
        )

    def _held(self) -> list[tuple[str, int]]:
        """Partitions whose leadership or ISR place this broker must still hand over: those the
        controller would still change about it."""
        image, me = self.metadata.image, self._broker.node_id
        return [
            key
            for key, found in image.partitions.items()
            if (found.record.leader == me or me in found.record.isr)
            and elect(found.record, image.eligible, image.alive, unclean=False) is not None
        ]

    async def _until_handed_over(self) -> None:
        while self._held():
            await self.metadata.caught_up(self.metadata.image.revision + 1)

    async def leave(self) -> None:
        """Leave the cluster at once (the serving tasks have stopped): without this the record
        would linger for a session timeout. Best effort: a lease etcd does not revoke expires."""
        try:
            with trio.move_on_after(2):
                await self.membership.leave()
        except EtcdError as exc:
            log.info("leaving the cluster: the lease will expire on its own (%s)", exc)

    async def aclose(self) -> None:
        await self.client.aclose()


def _timed_out(exc: Exception) -> TopicError:
    """What Kafka answers when its controller cannot commit a change in time."""
    return TopicError(
        ErrorCode.REQUEST_TIMED_OUT, f"the cluster metadata (etcd) did not take the change: {exc}"
    )
