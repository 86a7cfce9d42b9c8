"""Classic group APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, and the
admin trio DescribeGroups / ListGroups / DeleteGroups.

These handlers only translate between wire versions and the coordinator
(``ctx.broker.coordinator``, see :mod:`broker.services.coordinators.group_timers`).  JoinGroup and SyncGroup may be
parked by the coordinator until the rebalance moves on; the handler then waits on a
``trio.Event`` that the coordinator's responder sets, which keeps the connection muted as
Kafka does while the request is in flight.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import trio

from broker.requests.acl_checks import answer_each, authorized, cluster_authorized, operations_field
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.coordinators import client_host, coordinator_of, installed
from broker.services.cluster_view import NodeAddress, node_address
from broker.services.security.acl_model import AclOperation, ResourceType
from broker.services.share.share_offsets import ShareOffsets
from coordinator.classic_group import join_error, sync_error
from coordinator.classic_protocol import JoinRequest, SyncRequest
from coordinator.offsets_topic import OFFSETS_TOPIC
from coordinator.records import MemberIdentity
from coordinator.share.state_coordinator import SHARE_STATE_TOPIC, ShareStateError
from coordinator.transactions import TRANSACTION_STATE_TOPIC
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        DeleteGroupsRequest,
        DeleteGroupsResponse,
        DeleteGroupsResponseResults,
        DescribeGroupsRequest,
        DescribeGroupsResponse,
        DescribeGroupsResponseGroups,
        FindCoordinatorRequest,
        FindCoordinatorResponse,
        FindCoordinatorResponseCoordinators,
        HeartbeatRequest,
        HeartbeatResponse,
        JoinGroupRequest,
        JoinGroupResponse,
        LeaveGroupRequest,
        LeaveGroupResponse,
        ListGroupsRequest,
        ListGroupsResponse,
        SyncGroupRequest,
        SyncGroupResponse,
    )

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2
KEY_RESOURCES = {GROUP_KEY_TYPE: ResourceType.GROUP, TRANSACTION_KEY_TYPE: ResourceType.TRANSACTIONAL_ID}
"""FindCoordinator needs DESCRIBE on the group or transactional id it looks up (and a broker
looking up a share coordinator, CLUSTER_ACTION)."""
KEY_TOPICS = {
    GROUP_KEY_TYPE: OFFSETS_TOPIC,
    TRANSACTION_KEY_TYPE: TRANSACTION_STATE_TOPIC,
    SHARE_KEY_TYPE: SHARE_STATE_TOPIC,
}
"""The internal topic whose partition leaders coordinate each kind of key."""
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED

_Answer = TypeVar("_Answer", "JoinGroupResponse", "SyncGroupResponse")


async def parked(start: Callable[[Callable[[_Answer], None]], None]) -> _Answer:
    """Run a coordinator call that answers through a responder, and wait for the answer."""
    answered = trio.Event()
    box: list[_Answer] = []

    def respond(body: _Answer) -> None:
        box.append(body)
        answered.set()

    start(respond)
    await answered.wait()
    return box[0]


# --- FindCoordinator ---------------------------------------------------------------------


async def handle_find_coordinator(
    ctx: RequestContext, request: FindCoordinatorRequest
) -> FindCoordinatorResponse:
    """A single node coordinates every group and transactional id; a cluster member answers
    the leader of the key's partition of ``__consumer_offsets`` or ``__transaction_state``,
    creating that topic on first use as Kafka does."""
    key_type = request.get("key_type", GROUP_KEY_TYPE)
    cluster = ctx.broker.cluster
    if cluster is not None and key_type in KEY_TOPICS:
        await cluster.ensure_internal_topic(KEY_TOPICS[key_type])
    if ctx.api_version >= 4:
        return {
            "coordinators": [_coordinator_entry(ctx, key_type, key) for key in request["coordinator_keys"]]
        }
    entry = _coordinator_entry(ctx, key_type, request["key"])  # v0-3: the one key's, at the top level
    return {
        "error_code": entry["error_code"],
        "error_message": entry["error_message"],
        "node_id": entry["node_id"],
        "host": entry["host"],
        "port": entry["port"],
    }


def _coordinator_entry(ctx: RequestContext, key_type: int, key: str) -> FindCoordinatorResponseCoordinators:
    resource = KEY_RESOURCES.get(key_type)
    if resource is not None and not authorized(ctx, resource, key):
        error = (
            ErrorCode.GROUP_AUTHORIZATION_FAILED
            if key_type == GROUP_KEY_TYPE
            else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        )
    elif key_type == GROUP_KEY_TYPE:
        error = ErrorCode.NONE if ctx.broker.coordinator is not None else ErrorCode.COORDINATOR_NOT_AVAILABLE
    elif key_type == TRANSACTION_KEY_TYPE:
        advertised = ApiKey.END_TXN in ctx.broker.supported
        error = ErrorCode.NONE if advertised else ErrorCode.COORDINATOR_NOT_AVAILABLE
    elif key_type == SHARE_KEY_TYPE:  # "group:topicId:partition", asked by brokers (KIP-932)
        if not cluster_authorized(ctx, AclOperation.CLUSTER_ACTION):
            error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        else:
            installed_here = ctx.broker.share_coordinator is not None
            error = ErrorCode.NONE if installed_here else ErrorCode.COORDINATOR_NOT_AVAILABLE
    else:  # anything newer
        error = ErrorCode.INVALID_REQUEST
    if error is not ErrorCode.NONE:
        return {
            "key": key,
            "error_code": error,
            "error_message": error.name,
            "node_id": -1,
            "host": "",
            "port": -1,
        }
    node = coordinator_node(ctx, key, KEY_TOPICS[key_type])
    if node is None:
        return {
            "key": key,
            "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
            "error_message": ErrorCode.COORDINATOR_NOT_AVAILABLE.name,
            "node_id": -1,
            "host": "",
            "port": -1,
        }
    return {
        "key": key,
        "error_code": error,
        "error_message": None,
        "node_id": node.node_id,
        "host": node.host,
        "port": node.port,
    }


def coordinator_node(ctx: RequestContext, key: str, topic: str) -> NodeAddress | None:
    """The broker coordinating a group or transactional id: this one, or in a cluster the
    leader of the key's partition of the coordinator's internal ``topic`` (None while it has
    none)."""
    broker = ctx.broker
    if broker.cluster is None:
        endpoint = broker.endpoint_for(ctx.listener_name)
        return NodeAddress(broker.node_id, endpoint.host, endpoint.port, None)
    coordinator = installed(broker.coordinator_over(topic), f"the coordinator over {topic}")
    record = broker.cluster.metadata.image.partition(topic, coordinator.partition_for(key))
    return node_address(broker, record.leader, ctx.listener_name) if record is not None else None


# --- membership --------------------------------------------------------------------------


async def handle_join_group(ctx: RequestContext, request: JoinGroupRequest) -> JoinGroupResponse:
    version = ctx.api_version
    if not authorized(ctx, ResourceType.GROUP, request["group_id"]):
        return join_error(GROUP_DENIED) | {"protocol_name": None if version >= 7 else ""}
    identity = MemberIdentity(
        member_id=request["member_id"],
        group_instance_id=request.get("group_instance_id"),
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
        # v0 has no rebalance timeout: Kafka uses the session timeout for both.
        rebalance_timeout_ms=request["rebalance_timeout_ms"]
        if version >= 1
        else request["session_timeout_ms"],
        session_timeout_ms=request["session_timeout_ms"],
    )
    join = JoinRequest(
        group_id=request["group_id"],
        identity=identity,
        protocol_type=request["protocol_type"],
        protocols=[(p["name"], bytes(p["metadata"])) for p in request["protocols"]],
        api_version=version,
    )
    coordinator = coordinator_of(ctx)
    response = await parked(lambda respond: coordinator.join_group(join, respond))
    if version < 7 and response["protocol_name"] is None:
        # The protocol name is nullable only from v7 on; before that Kafka sends "".
        response = {**response, "protocol_name": ""}
    return response


async def handle_sync_group(ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
    if not authorized(ctx, ResourceType.GROUP, request["group_id"]):
        return sync_error(GROUP_DENIED)
    sync = SyncRequest(
        group_id=request["group_id"],
        generation_id=request["generation_id"],
        member_id=request["member_id"],
        group_instance_id=request.get("group_instance_id"),
        protocol_type=request.get("protocol_type"),
        protocol_name=request.get("protocol_name"),
        assignments={a["member_id"]: bytes(a["assignment"]) for a in request["assignments"]},
        api_version=ctx.api_version,
    )
    coordinator = coordinator_of(ctx)
    return await parked(lambda respond: coordinator.sync_group(sync, respond))


async def handle_heartbeat(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    if not authorized(ctx, ResourceType.GROUP, request["group_id"]):
        return {"error_code": GROUP_DENIED}
    error = coordinator_of(ctx).heartbeat(
        request["group_id"], request["generation_id"], request["member_id"], request.get("group_instance_id")
    )
    return {"error_code": error}


async def handle_leave_group(ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
    if not authorized(ctx, ResourceType.GROUP, request["group_id"]):
        return {"error_code": GROUP_DENIED, "members": []}
    if ctx.api_version >= 3:
        leaving = [(m["member_id"], m.get("group_instance_id")) for m in request["members"]]
    else:
        leaving = [(request["member_id"], None)]
    error, members = coordinator_of(ctx).leave_group(request["group_id"], leaving)
    if ctx.api_version < 3 and error is ErrorCode.NONE and members:
        # Before the batch form the single member's error is the response's error.
        return {"error_code": members[0]["error_code"], "members": members}
    return {"error_code": error, "members": members}


# --- administration ----------------------------------------------------------------------


def denied_group(group_id: str) -> DescribeGroupsResponseGroups:
    """A DescribeGroups entry for a group the principal may not describe."""
    return {
        "error_code": GROUP_DENIED,
        "group_id": group_id,
        "group_state": "",
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
    }


async def handle_describe_groups(
    ctx: RequestContext, request: DescribeGroupsRequest
) -> DescribeGroupsResponse:
    with_operations = bool(request.get("include_authorized_operations"))
    groups = answer_each(
        ctx,
        ResourceType.GROUP,
        request["groups"],
        lambda allowed: coordinator_of(ctx).describe_groups(allowed, missing_is_error=ctx.api_version >= 6),
        denied_group,
    )
    for group in groups:
        if with_operations and group["error_code"] == ErrorCode.NONE:
            group["authorized_operations"] = operations_field(
                ctx, ResourceType.GROUP, group["group_id"], True
            )
    return {"groups": groups}


def _adopt_share_groups(ctx: RequestContext) -> None:
    """Share groups whose state outlived their membership (a restart) are listed too."""
    if ctx.broker.share_state is not None and ctx.broker.share is not None:
        coordinator_of(ctx).adopt_share_groups(
            ShareOffsets(ctx.broker.share_state, ctx.broker.share).groups_with_state()
        )


async def handle_list_groups(ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    _adopt_share_groups(ctx)
    error, groups = coordinator_of(ctx).list_groups(
        request.get("states_filter") or [], request.get("types_filter") or []
    )
    if not cluster_authorized(ctx, AclOperation.DESCRIBE):
        # Without DESCRIBE on the cluster, only the groups the principal may describe.
        groups = [
            g for g in groups if authorized(ctx, ResourceType.GROUP, g["group_id"], AclOperation.DESCRIBE)
        ]
    return {"error_code": error, "groups": groups}


def denied_deletion(group_id: str) -> DeleteGroupsResponseResults:
    """A DeleteGroups result for a group the principal may not delete."""
    return {"group_id": group_id, "error_code": GROUP_DENIED}


async def handle_delete_groups(ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    # Kafka answers each distinct group once.
    group_ids = list(dict.fromkeys(request["groups_names"]))
    _adopt_share_groups(ctx)
    coordinator = coordinator_of(ctx)
    share_groups = {group_id for group_id in group_ids if coordinator.is_share_group(group_id)}
    results = answer_each(ctx, ResourceType.GROUP, group_ids, coordinator.delete_groups, denied_deletion)
    for result in results:
        if result["group_id"] in share_groups and result["error_code"] == ErrorCode.NONE:
            result["error_code"] = await _delete_share_state(ctx, result["group_id"])
    return {"results": results}


async def _delete_share_state(ctx: RequestContext, group_id: str) -> ErrorCode:
    """A deleted share group's share-partitions are deleted with it, as Kafka's DeleteGroups does."""
    if ctx.broker.share_state is None or ctx.broker.share is None:
        return ErrorCode.NONE
    offsets = ShareOffsets(ctx.broker.share_state, ctx.broker.share)
    for key in await offsets.keys_with_state(group_id, ctx.broker.topics):
        info = ctx.broker.topics.by_id(key[1])
        try:
            await offsets.delete(key, info.name if info is not None else "")
        except ShareStateError as failure:
            return failure.code
    return ErrorCode.NONE


HANDLERS = {
    ApiKey.FIND_COORDINATOR: Served(handle_find_coordinator),
    ApiKey.JOIN_GROUP: Served(handle_join_group),
    ApiKey.HEARTBEAT: Served(handle_heartbeat),
    ApiKey.LEAVE_GROUP: Served(handle_leave_group),
    ApiKey.SYNC_GROUP: Served(handle_sync_group),
    ApiKey.DESCRIBE_GROUPS: Served(handle_describe_groups),
    ApiKey.LIST_GROUPS: Served(handle_list_groups),
    ApiKey.DELETE_GROUPS: Served(handle_delete_groups),
}
