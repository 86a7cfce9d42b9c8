"""The controller: one broker at a time, elected through etcd, that moves leaderships.

Election: the first broker to create the ``controller`` key (create-if-absent, under its own
lease) is the controller until its lease ends.  Every controller write is conditioned on that
key's ``create_revision`` being the one it created, so a deposed controller cannot write even if
it has not noticed yet.

Duties (Kafka's QuorumController partition changes), run whenever brokers, partitions or the
controller change and periodically:
- a partition whose leader is not alive gets the first live replica of its ISR as leader, or with
  ``unclean.leader.election.enable`` any live replica, or none (-1) until one returns; dead
  brokers leave the ISR, except the last member, which keeps its claim to lead;
- a broker in a controlled shutdown (its record says ``shutting_down``) is relieved the same way
  while it still runs: its leaderships go to other in-sync replicas and it leaves the ISRs,
  wherever another in-sync replica exists;
- an offline partition (-1) is led again by the first of its ISR to come back;
- a leader whose log a disk error took offline hands its leadership over itself
  (:func:`hand_over`, through ``ClusterNode.hand_over``), as the controller would;
- with ``auto.leader.rebalance.enable``, a broker leading too few of its preferred partitions
  (more than ``leader.imbalance.per.broker.percentage`` of them led elsewhere) gets them back
  once it is in their ISR (preferred leader election).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

import trio

from broker.services.cluster.cluster_metadata import ClusterMetadata
from broker.services.cluster.etcd_client import Compare, EtcdError, Get, Put
from broker.services.cluster.image import Change
from broker.services.cluster.layout import ControllerRecord, PartitionRecord, decode_controller, encode
from broker.services.cluster.membership import Membership
from broker.services.cluster.reassignment import complete_reassignment

log = logging.getLogger(__name__)

RETRY_S = 0.5


def elect(
    record: PartitionRecord, eligible: Callable[[int], bool], alive: Callable[[int], bool], unclean: bool
) -> PartitionRecord | None:
    """The partition's next state if its leadership or ISR must change, else None.

    ``eligible`` brokers may lead and stay in the ISR; ``alive`` ones include those in a
    controlled shutdown, which hand their leaderships and ISR places to eligible ones where
    there are any, and otherwise keep them until they stop (Kafka's controller does the same:
    a partition is not taken offline before its last in-sync replica has actually gone)."""
    live_isr = tuple(r for r in record.isr if eligible(r))
    if record.leader >= 0 and eligible(record.leader):
        if live_isr != record.isr and live_isr:
            return _changed(record, record.leader, live_isr)
        return None
    candidates = [r for r in record.replicas if r in live_isr]
    if candidates:
        return _changed(record, candidates[0], live_isr)
    if record.leader >= 0 and alive(record.leader):
        return None  # led by a broker shutting down that no in-sync replica can relieve
    if unclean:
        live = [r for r in record.replicas if eligible(r)]
        if live:
            log.warning("unclean leader election: %d leads with records the old ISR may not have", live[0])
            return _changed(record, live[0], (live[0],))
    if record.leader == -1:
        return None
    # Nobody eligible: offline, the last ISR member keeping its claim.
    return _changed(record, -1, record.isr[-1:])


def preferred(record: PartitionRecord, eligible: Callable[[int], bool]) -> PartitionRecord | None:
    """Leadership back to the first replica, when it is eligible, in sync and not leading."""
    first = record.replicas[0]
    if record.leader != first and eligible(first) and first in record.isr:
        return _changed(record, first, record.isr)
    return None


def hand_over(
    record: PartitionRecord, leaving: int, eligible: Callable[[int], bool]
) -> PartitionRecord | None:
    """The partition's next state when its leader ``leaving`` can no longer serve its log (a
    disk error took it offline): the first other eligible in-sync replica leads, at a new
    epoch, and ``leaving`` is out of the ISR (what Kafka's controller does when a broker
    reports a failed log directory). None when no other in-sync replica can lead: the leader
    keeps its claim, as the last in-sync replica of a partition does."""
    others = tuple(r for r in record.isr if r != leaving)
    successor = next((r for r in record.replicas if r in others and eligible(r)), None)
    if record.leader != leaving or successor is None:
        return None
    return _changed(record, successor, others)


def _changed(record: PartitionRecord, leader: int, isr: tuple[int, ...]) -> PartitionRecord:
    new_epoch = record.leader_epoch + 1 if leader != record.leader else record.leader_epoch
    return replace(
        record, leader=leader, leader_epoch=new_epoch, partition_epoch=record.partition_epoch + 1, isr=isr
    )


class Controller:
    """Campaigns for the controller key and, while holding it, keeps leaderships sound."""

    def __init__(
        self,
        metadata: ClusterMetadata,
        membership: Membership,
        node_id: int,
        unclean: Callable[[str], bool],
        rebalance_interval_s: float | None,
        imbalance_percentage: int,
    ) -> None:
        self._metadata = metadata
        self._membership = membership
        self._node_id = node_id
        self._unclean = unclean
        self._rebalance_interval_s = rebalance_interval_s
        self._imbalance = imbalance_percentage
        self._work = trio.Event()
        self._guard: Compare | None = None
        metadata.subscribe(self._on_change)

    @property
    def active(self) -> bool:
        image = self._metadata.image
        return self._guard is not None and image.controller_id == self._node_id

    def _on_change(self, change: Change) -> None:
        if change.kind in ("broker", "partition", "controller", "topic"):
            self._work.set()

    async def run(self) -> None:
        """Campaign, serve while elected, campaign again when the key is free; until cancelled."""
        while True:
            try:
                if await self._campaign():
                    await self._serve()
                else:
                    self._guard = None
                    await self._until_vacant()
            except EtcdError as exc:
                self._guard = None
                log.error("controller election needs etcd (%s); retrying", exc)
                await trio.sleep(RETRY_S)
            except Exception:
                # A bug here must not take the broker down; another broker may take over.
                self._guard = None
                log.exception("the controller failed; campaigning again")
                await trio.sleep(RETRY_S)

    async def _campaign(self) -> bool:
        await self._membership.registered.wait()
        key = self._metadata.layout.controller
        record = ControllerRecord(self._node_id, self._membership.incarnation)
        result = await self._metadata.client.txn(
            [Compare.create_revision(key, 0)],
            [Put(key, encode(record), lease=self._membership.lease_id)],
            [Get(key)],
        )
        if result.succeeded:
            created = result.revision
        else:
            # Still ours (this broker's controller loop restarted): carry on with that key.
            held = result.gets[0][0] if result.gets and result.gets[0] else None
            if held is None or decode_controller(held.value) != record:
                return False
            created = held.create_revision
        self._guard = Compare.create_revision(key, created)
        await self._metadata.caught_up(result.revision)
        log.info("node %d is the cluster controller", self._node_id)
        return True

    async def _until_vacant(self) -> None:
        while self._metadata.image.controller is not None:
            self._work = trio.Event()
            await self._work.wait()

    async def _serve(self) -> None:
        next_rebalance = trio.current_time() + (self._rebalance_interval_s or 0)
        while self.active:
            self._work = trio.Event()
            await self._reconcile()
            if self._rebalance_interval_s and trio.current_time() >= next_rebalance:
                await self._rebalance()
                next_rebalance = trio.current_time() + self._rebalance_interval_s
            with trio.move_on_after(self._rebalance_interval_s or RETRY_S * 20):
                await self._work.wait()
        log.info("node %d is no longer the controller", self._node_id)
        self._guard = None

    async def _reconcile(self) -> None:
        image = self._metadata.image
        for (topic, partition), found in list(image.partitions.items()):
            if image.topic(topic) is None:
                continue
            changed = elect(
                found.record, image.eligible, image.alive, self._unclean(topic)
            ) or complete_reassignment(found.record)
            if changed is not None:
                await self._write(topic, partition, changed, found.mod_revision)

    async def _rebalance(self) -> None:
        """Kafka's auto leader rebalance, per broker over its preferred partitions."""
        image = self._metadata.image
        owed: dict[int, list[tuple[str, int]]] = {}
        preferred_count: dict[int, int] = {}
        for key, found in image.partitions.items():
            first = found.record.replicas[0]
            preferred_count[first] = preferred_count.get(first, 0) + 1
            if found.record.leader != first:
                owed.setdefault(first, []).append(key)
        for node, keys in owed.items():
            if 100 * len(keys) <= self._imbalance * preferred_count[node]:
                continue
            for topic, partition in keys:
                found = image.partitions.get((topic, partition))
                changed = preferred(found.record, image.eligible) if found is not None else None
                if changed is not None:
                    await self._write(topic, partition, changed, found.mod_revision)

    async def _write(self, topic: str, partition: int, record: PartitionRecord, revision: int) -> None:
        if self._guard is None:
            return
        written = await self._metadata.write_partition(topic, partition, record, revision, [self._guard])
        if written is None:
            return  # changed meanwhile (or deposed): the next pass sees the new state
        log.info(
            "%s-%d: leader %d (epoch %d), isr %s",
            topic,
            partition,
            record.leader,
            record.leader_epoch,
            list(record.isr),
        )
        await self._metadata.caught_up(written)
