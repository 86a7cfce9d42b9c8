"""KIP-951: tell a client sent to the wrong broker who leads now, and where it listens.

Produce (v10+) and Fetch (v16+) answers to NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carry
the partition's ``current_leader`` and, at the top level, the ``node_endpoints`` of those
leaders on the listener the client used, so the client retries there without a Metadata round.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.requests.context import RequestContext
    from broker.services.replication.manager import ReplicaManager
    from wire.messages import ProduceResponseCurrentLeader as CurrentLeader
    from wire.messages import ProduceResponseNodeEndpoints as NodeEndpoint

HINTED_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})


def leader_hint(replicas: ReplicaManager, key: tuple[str, int], error_code: int) -> CurrentLeader | None:
    """The ``current_leader`` of a partition's answer (Produce's and Fetch's are the same struct)
    when its error calls for one and this broker knows the leader."""
    if error_code not in HINTED_ERRORS:
        return None
    known = replicas.known_leader(key)
    if known is None:
        return None
    leader_id, leader_epoch = known
    return {"leader_id": leader_id, "leader_epoch": leader_epoch}


def node_endpoints(
    ctx: RequestContext, partition_responses: Iterable[Mapping[str, Any]], first_version: int
) -> list[NodeEndpoint]:
    """The ``node_endpoints`` of a response (from ``first_version`` of its API, in a cluster):
    where every leader a ``current_leader`` of ``partition_responses`` names listens, on the
    listener the client came in on; empty when there are none."""
    replicas = ctx.broker.replicas
    if replicas is None or ctx.api_version < first_version:
        return []
    leaders = sorted({p["current_leader"]["leader_id"] for p in partition_responses if "current_leader" in p})
    endpoints: list[NodeEndpoint] = []
    for node_id in leaders:
        address = replicas.endpoint_of(node_id, ctx.listener_name)
        if address is not None:
            endpoints.append({"node_id": node_id, "host": address[0], "port": address[1], "rack": None})
    return endpoints
