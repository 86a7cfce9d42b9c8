"""KIP-848 consumer groups: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

Available when ``group.coordinator.rebalance.protocols`` includes ``consumer`` (Kafka 4's
default); otherwise both APIs answer UNSUPPORTED_VERSION, as Kafka does, and clients fall
back to the classic protocol or report the setting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import authorized, described_groups, unauthorized_names
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.coordinators import client_host, coordinator_of
from broker.services.security.acl_model import ResourceType
from coordinator.consumer_heartbeat import HeartbeatRequest, described_error
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        ConsumerGroupDescribeRequest,
        ConsumerGroupDescribeResponse,
        ConsumerGroupHeartbeatRequest,
        ConsumerGroupHeartbeatResponse,
    )


def _enabled(ctx: RequestContext) -> bool:
    return "consumer" in coordinator_of(ctx).config.rebalance_protocols


def _heartbeat_refused(code: ErrorCode) -> ConsumerGroupHeartbeatResponse:
    return {"error_code": code, "member_epoch": 0, "heartbeat_interval_ms": 0}


async def handle_consumer_group_heartbeat(
    ctx: RequestContext, request: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse:
    if not _enabled(ctx):
        return _heartbeat_refused(ErrorCode.UNSUPPORTED_VERSION)
    if not authorized(ctx, ResourceType.GROUP, request["group_id"]):
        return _heartbeat_refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if unauthorized_names(ctx, ResourceType.TOPIC, request["subscribed_topic_names"] or ()):
        # Kafka refuses a subscription naming a topic the member may not describe.
        return _heartbeat_refused(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    owned = request["topic_partitions"]
    heartbeat = HeartbeatRequest(
        group_id=request["group_id"],
        member_id=request["member_id"],
        member_epoch=request["member_epoch"],
        instance_id=request["instance_id"],
        rack_id=request["rack_id"],
        rebalance_timeout_ms=request["rebalance_timeout_ms"],
        subscribed_topic_names=request["subscribed_topic_names"],
        subscribed_topic_regex=request.get("subscribed_topic_regex"),
        server_assignor=request["server_assignor"],
        owned=None if owned is None else {bytes(tp["topic_id"]): list(tp["partitions"]) for tp in owned},
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
    )
    return coordinator_of(ctx).consumer_group_heartbeat(heartbeat)


async def handle_consumer_group_describe(
    ctx: RequestContext, request: ConsumerGroupDescribeRequest
) -> ConsumerGroupDescribeResponse:
    if not _enabled(ctx):
        return {
            "groups": [
                described_error(group_id, ErrorCode.UNSUPPORTED_VERSION) for group_id in request["group_ids"]
            ]
        }
    groups = described_groups(
        ctx,
        request["group_ids"],
        coordinator_of(ctx).consumer_group_describe,
        lambda group_id: described_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED),
        request["include_authorized_operations"],
    )
    return {"groups": groups}


HANDLERS = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: Served(handle_consumer_group_heartbeat),
    ApiKey.CONSUMER_GROUP_DESCRIBE: Served(handle_consumer_group_describe),
}
