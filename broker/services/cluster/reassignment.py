"""Moving a partition's replicas (AlterPartitionReassignments), as Kafka's controller does.

A reassignment first grows the replica set: ``replicas`` becomes the target followed by the
replicas to remove, ``adding`` lists the new ones, ``removing`` the old ones.  The new replicas
fetch from the leader like any follower and join the ISR once caught up; then the controller
completes it: the replica set becomes the target, the removed replicas leave the ISR, and if the
leader was among them the first in-sync target replica leads, at a new leader epoch.  Until then
nothing acknowledged depends on the new replicas, so a reassignment can be cancelled at any
point by going back to the original set.
"""

from __future__ import annotations

from dataclasses import replace

from broker.services.cluster.layout import PartitionRecord


def original_replicas(record: PartitionRecord) -> tuple[int, ...]:
    """The replicas before any ongoing reassignment."""
    return tuple(r for r in record.replicas if r not in record.adding)


def target_replicas(record: PartitionRecord) -> tuple[int, ...]:
    return tuple(r for r in record.replicas if r not in record.removing)


def start_reassignment(record: PartitionRecord, target: tuple[int, ...]) -> PartitionRecord:
    """The partition's state once a reassignment to ``target`` begins (replacing any ongoing
    one, as Kafka does)."""
    original = original_replicas(record)
    adding = tuple(r for r in target if r not in original)
    removing = tuple(r for r in original if r not in target)
    started = replace(
        record,
        partition_epoch=record.partition_epoch + 1,
        replicas=target + removing,
        adding=adding,
        removing=removing,
    )
    return complete_reassignment(started) or started


def cancel_reassignment(record: PartitionRecord) -> PartitionRecord | None:
    """Back to the original replicas, or None when no reassignment is ongoing."""
    if not record.reassigning:
        return None
    return _settle(record, original_replicas(record))


def complete_reassignment(record: PartitionRecord) -> PartitionRecord | None:
    """The finished state once every added replica is in sync, else None."""
    if not record.reassigning or not set(record.adding) <= set(record.isr):
        return None
    return _settle(record, target_replicas(record))


def _settle(record: PartitionRecord, replicas: tuple[int, ...]) -> PartitionRecord:
    isr = tuple(r for r in record.isr if r in replicas)
    leader = record.leader
    if leader not in replicas:
        leader = next((r for r in replicas if r in isr), -1)
    epoch = record.leader_epoch + 1 if leader != record.leader else record.leader_epoch
    return PartitionRecord(leader, epoch, record.partition_epoch + 1, replicas, isr)
