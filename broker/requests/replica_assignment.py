"""Checking a manual replica assignment, as CreateTopics, CreatePartitions and
AlterPartitionReassignments receive one."""

from __future__ import annotations

from broker.requests.context import RequestContext
from broker.services.cluster_view import live_nodes


def replica_lists_error(ctx: RequestContext, replica_lists: list[list[int]], expected: int) -> str | None:
    """Why manual replica lists cannot be honoured, or None.

    Kafka accepts an explicit assignment as long as every replica is a registered broker, none
    twice, and every partition has as many; a single node's only broker is itself.
    """
    if len(replica_lists) != expected:
        return f"Expected {expected} partition assignments, but got {len(replica_lists)}"
    known = {node.node_id for node in live_nodes(ctx.broker, ctx.listener_name)}
    for replicas in replica_lists:
        unknown = sorted(set(replicas) - known)
        if unknown:
            return f"Replica assignment references unknown broker(s) {unknown}"
        if not replicas or len(set(replicas)) != len(replicas):
            return f"Replica assignment {replicas} has duplicate or missing replicas"
        if len(replicas) != len(replica_lists[0]):
            return "All partitions should have the same number of replicas"
    return None
