"""Where a new partition's replicas go: Kafka's assignment, rack-aware.

As Kafka's ``AdminUtils.assignReplicasToBrokers``: brokers are listed alternating racks, the first
replica of partition ``p`` is broker ``(start + p) % n`` and the others follow at a shift that
grows every ``n`` partitions, so leaders and followers spread evenly.  With racks, a replica skips
a broker whose rack (or which itself) already holds one while racks without one remain.  The start
and shift are random in Kafka; here they come from the caller so placement is reproducible.

Odradek adds one rule: brokers that are processes of one machine (``broker.machine``, set by
``num.processes``) never hold two replicas of a partition, since the machine fails as one.
"""

from __future__ import annotations

from collections.abc import Mapping


class PlacementError(Exception):
    """Not enough brokers for the replication factor."""


def rack_alternated(racks: Mapping[int, str | None]) -> list[int]:
    """Broker ids ordered by id within each rack, then interleaved rack by rack."""
    by_rack: dict[str | None, list[int]] = {}
    for node in sorted(racks):
        by_rack.setdefault(racks[node], []).append(node)
    columns = [by_rack[rack] for rack in sorted(by_rack, key=lambda r: (r is None, r or ""))]
    ordered: list[int] = []
    for row in range(max((len(c) for c in columns), default=0)):
        ordered.extend(column[row] for column in columns if row < len(column))
    return ordered


def assign_replicas(
    racks: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    *,
    machines: Mapping[int, str | None] | None = None,
    first_partition: int = 0,
    start: int = 0,
) -> list[tuple[int, ...]]:
    """Replicas of partitions ``first_partition ..`` over the brokers ``racks`` (id -> rack),
    no two on one of ``machines`` (id -> machine; a broker without one is a machine of its own)."""
    brokers = rack_alternated(racks)
    n = len(brokers)
    unable = f"Unable to replicate the partition {replication_factor} time(s): The target replication factor"
    if replication_factor > n:
        raise PlacementError(
            f"{unable} of {replication_factor} cannot be reached because only {n} broker(s) are registered."
        )
    machine_of = {node: (machines or {}).get(node) or f"broker {node}" for node in brokers}
    machine_count = len(set(machine_of.values()))
    if replication_factor > machine_count:
        raise PlacementError(
            f"{unable} of {replication_factor} cannot be reached because the {n} broker(s) run on only "
            f"{machine_count} machine(s), and two replicas of a partition never share a machine."
        )
    rack_count = len(set(racks.values()))
    assignments = []
    for p in range(first_partition, first_partition + partitions):
        first = (start + p) % n
        shift = 1 + (start + p // n) % max(1, n - 1)
        replicas = [brokers[first]]
        used_racks = {racks[brokers[first]]}
        k = 0
        while len(replicas) < replication_factor:
            candidate = brokers[(first + shift + k) % n]
            k += 1
            if machine_of[candidate] in {machine_of[r] for r in replicas}:
                continue  # the broker itself, or another process of its machine
            if racks[candidate] in used_racks and len(used_racks) < rack_count and k < 2 * n:
                continue
            replicas.append(candidate)
            used_racks.add(racks[candidate])
        assignments.append(tuple(replicas))
    return assignments
