"""Streams groups (KIP-1071): StreamsGroupHeartbeat and StreamsGroupDescribe.

Kafka Streams with ``group.protocol=streams`` sends its topology in the heartbeat and the
broker assigns its tasks (``coordinator/streams/``). The broker also creates the internal
topics (changelogs, repartition topics) the topology needs, with the configs and partition
counts it implies, before the coordinator works out the tasks, so a new application gets its
tasks on its first heartbeat, as on Kafka. Rights are Kafka's: READ on the group, DESCRIBE on
the topology's source topics, CREATE (on the cluster or the topic) for internal topics to be
created; an internal topic that may not be created leaves the group reporting
MISSING_INTERNAL_TOPICS.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.requests.acl_checks import (
    authorized,
    cluster_authorized,
    described_groups,
    unauthorized_names,
)
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.coordinators import client_host, coordinator_of
from broker.services.security.acl_model import AclOperation, ResourceType
from broker.services.topic_admin import NewTopic, TopicError, register_topic_async, validate_new_topic
from coordinator.streams.group import StreamsHeartbeat, streams_described_error, streams_response
from coordinator.streams.topology import InternalTopic, StreamsTopology
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        StreamsGroupDescribeRequest,
        StreamsGroupDescribeResponse,
        StreamsGroupHeartbeatRequest,
        StreamsGroupHeartbeatResponse,
    )

log = logging.getLogger(__name__)


def _enabled(ctx: RequestContext) -> bool:
    return "streams" in coordinator_of(ctx).config.rebalance_protocols


async def _create_internal_topics(ctx: RequestContext, topics: list[InternalTopic]) -> None:
    """Create what the topology needs and is missing (errors are logged; the heartbeat then
    reports MISSING_INTERNAL_TOPICS and the member asks again)."""
    for topic in topics:
        may_create = cluster_authorized(ctx, AclOperation.CREATE) or authorized(
            ctx, ResourceType.TOPIC, topic.name, AclOperation.CREATE
        )
        if not may_create:
            log.warning("streams internal topic %s not created: the principal may not create it", topic.name)
            continue
        new = NewTopic(topic.name, topic.partitions, topic.replication_factor or -1, dict(topic.configs))
        try:
            await register_topic_async(ctx.broker, validate_new_topic(ctx.broker, new))
            log.info("created streams internal topic %s with %d partitions", topic.name, topic.partitions)
        except TopicError as error:
            if error.code is not ErrorCode.TOPIC_ALREADY_EXISTS:
                log.warning("streams internal topic %s not created: %s", topic.name, error.message)


def unsupported_feature(request: StreamsGroupHeartbeatRequest) -> str | None:
    """What Kafka 4.3 refuses as not supported yet (INVALID_REQUEST), in its order: static
    members, task offsets and end offsets (a later Kafka takes them, for warm-up tasks), warm-up
    tasks, source topic patterns; None when the request uses none of them."""
    if request["instance_id"] is not None:
        return "Static membership is not yet supported."
    if request["task_offsets"] is not None:
        return "TaskOffsets are not supported yet."
    if request["task_end_offsets"] is not None:
        return "TaskEndOffsets are not supported yet."
    if request["warmup_tasks"]:
        return "WarmupTasks are not supported yet."
    topology = request["topology"]
    if topology is not None and any(s["source_topic_regex"] for s in topology["subtopologies"]):
        return "Regular expressions for source topics are not supported yet."
    return None


async def handle_streams_group_heartbeat(
    ctx: RequestContext, request: StreamsGroupHeartbeatRequest
) -> StreamsGroupHeartbeatResponse:
    member_id = request["member_id"]
    if not _enabled(ctx):
        return streams_response(member_id, 0, 0, ErrorCode.UNSUPPORTED_VERSION)
    unsupported = unsupported_feature(request)
    if unsupported is not None:
        return streams_response(member_id, 0, 0, ErrorCode.INVALID_REQUEST, unsupported)
    if not authorized(ctx, ResourceType.GROUP, request["group_id"]):
        return streams_response(member_id, 0, 0, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    topology = None if request["topology"] is None else StreamsTopology.from_request(request["topology"])
    if topology is not None:
        sources = {t for s in topology.subtopologies for t in s.source_topics}
        if unauthorized_names(ctx, ResourceType.TOPIC, sources, AclOperation.DESCRIBE):
            return streams_response(member_id, 0, 0, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    coordinator = coordinator_of(ctx)
    if coordinator.availability(request["group_id"]) is ErrorCode.NONE and request["group_id"]:
        missing = coordinator.streams.missing_internal_topics(request["group_id"], topology)
        if missing:
            await _create_internal_topics(ctx, missing)
            coordinator.streams.refresh(request["group_id"])
    endpoint = request["user_endpoint"]
    tags = request["client_tags"]
    active = request["active_tasks"]
    heartbeat = StreamsHeartbeat(
        group_id=request["group_id"],
        member_id=member_id,
        member_epoch=request["member_epoch"],
        instance_id=request["instance_id"],
        rack_id=request["rack_id"],
        rebalance_timeout_ms=request["rebalance_timeout_ms"],
        topology=topology,
        active_tasks=None if active is None else {t["subtopology_id"]: list(t["partitions"]) for t in active},
        process_id=request["process_id"],
        user_endpoint=None if endpoint is None else (endpoint["host"], endpoint["port"]),
        client_tags=None if tags is None else tuple((t["key"], t["value"]) for t in tags),
        shutdown_application=request["shutdown_application"],
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
        standby_or_warmup_sent=bool(request["standby_tasks"] or request["warmup_tasks"]),
        endpoint_information_epoch=request["endpoint_information_epoch"],
    )
    return coordinator.streams_group_heartbeat(heartbeat)


async def handle_streams_group_describe(
    ctx: RequestContext, request: StreamsGroupDescribeRequest
) -> StreamsGroupDescribeResponse:
    if not _enabled(ctx):
        return {
            "groups": [
                streams_described_error(group_id, ErrorCode.UNSUPPORTED_VERSION)
                for group_id in request["group_ids"]
            ]
        }
    groups = described_groups(
        ctx,
        request["group_ids"],
        coordinator_of(ctx).streams_group_describe,
        lambda group_id: streams_described_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED),
        request["include_authorized_operations"],
    )
    return {"groups": groups}


HANDLERS = {
    ApiKey.STREAMS_GROUP_HEARTBEAT: Served(handle_streams_group_heartbeat),
    ApiKey.STREAMS_GROUP_DESCRIBE: Served(handle_streams_group_describe),
}
