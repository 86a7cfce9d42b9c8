"""KIP-951: tell a client sent to the wrong broker who leads now, and where it listens.

Produce (v10+) and Fetch (v16+) answers to NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carry
the partition's ``current_leader`` and, at the top level, the ``node_endpoints`` of those
leaders on the listener the client used, so the client retries there without a Metadata round.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.requests.context import RequestContext
    from broker.services.replication.manager import ReplicaManager

HINTED_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})


def with_leader_hint(
    replicas: ReplicaManager, key: tuple[str, int], response: dict[str, Any]
) -> dict[str, Any]:
    """``response`` (a partition's) with ``current_leader`` when its error calls for one and
    this broker knows the leader."""
    if response["error_code"] not in HINTED_ERRORS:
        return response
    known = replicas.known_leader(key)
    if known is None:
        return response
    leader_id, leader_epoch = known
    return response | {"current_leader": {"leader_id": leader_id, "leader_epoch": leader_epoch}}


def add_node_endpoints(
    ctx: RequestContext,
    body: dict[str, Any],
    partition_responses: Iterable[dict[str, Any]],
    first_version: int,
) -> None:
    """Put in ``body`` (from ``first_version`` of its API, in a cluster) the ``node_endpoints``
    of every leader a ``current_leader`` of ``partition_responses`` names, on the listener the
    client came in on; nothing when there are none."""
    replicas = ctx.broker.replicas
    if replicas is None or ctx.api_version < first_version:
        return
    leaders = sorted({p["current_leader"]["leader_id"] for p in partition_responses if "current_leader" in p})
    endpoints = []
    for node_id in leaders:
        address = replicas.endpoint_of(node_id, ctx.listener_name)
        if address is not None:
            endpoints.append({"node_id": node_id, "host": address[0], "port": address[1], "rack": None})
    if endpoints:
        body["node_endpoints"] = endpoints
