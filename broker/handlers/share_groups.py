"""Share groups' membership (KIP-932): ShareGroupHeartbeat and ShareGroupDescribe.

The group coordinator runs share groups beside classic and consumer groups
(``coordinator/share/group.py``); these handlers check the request's rights as Kafka does
(READ on the group, DESCRIBE on each subscribed topic; DESCRIBE on a described group).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import authorized, described_groups, unauthorized_names
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.coordinators import client_host, coordinator_of
from broker.services.security.acl_model import ResourceType
from coordinator.share.group import ShareHeartbeat, share_described_error, share_heartbeat_response
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        ShareGroupDescribeRequest,
        ShareGroupDescribeResponse,
        ShareGroupHeartbeatRequest,
        ShareGroupHeartbeatResponse,
    )


async def handle_share_group_heartbeat(
    ctx: RequestContext, request: ShareGroupHeartbeatRequest
) -> ShareGroupHeartbeatResponse:
    if not authorized(ctx, ResourceType.GROUP, request["group_id"]):
        return share_heartbeat_response(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if unauthorized_names(ctx, ResourceType.TOPIC, request["subscribed_topic_names"] or ()):
        return share_heartbeat_response(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    heartbeat = ShareHeartbeat(
        group_id=request["group_id"],
        member_id=request["member_id"],
        member_epoch=request["member_epoch"],
        rack_id=request["rack_id"],
        subscribed_topic_names=request["subscribed_topic_names"],
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
    )
    return coordinator_of(ctx).share_group_heartbeat(heartbeat)


async def handle_share_group_describe(
    ctx: RequestContext, request: ShareGroupDescribeRequest
) -> ShareGroupDescribeResponse:
    groups = described_groups(
        ctx,
        request["group_ids"],
        coordinator_of(ctx).share_group_describe,
        lambda group_id: share_described_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED),
        request["include_authorized_operations"],
    )
    return {"groups": groups}


HANDLERS = {
    ApiKey.SHARE_GROUP_HEARTBEAT: Served(handle_share_group_heartbeat),
    ApiKey.SHARE_GROUP_DESCRIBE: Served(handle_share_group_describe),
}
