"""The share-group offset APIs (KIP-932): Describe, Alter and DeleteShareGroupOffsets.

``kafka-share-groups.sh`` describes a share group's start offsets and lag, resets them
(``--reset-offsets``) and deletes them (``--delete-offsets``) through these; the group
coordinator answers them, reading and changing the share coordinators' state
(``broker.services.share.share_offsets``). Changing a group's offsets is refused while it has
members (NON_EMPTY_GROUP), as Kafka refuses it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.requests.acl_checks import authorized, unauthorized_names
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.coordinators import coordinator_of, installed
from broker.services.security.acl_model import ResourceType
from broker.services.share.share_offsets import ShareOffsets
from coordinator.share.state_coordinator import ShareStateError
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        AlterShareGroupOffsetsRequest,
        AlterShareGroupOffsetsResponse,
        AlterShareGroupOffsetsResponsePartitions,
        AlterShareGroupOffsetsResponseResponses,
        DeleteShareGroupOffsetsRequest,
        DeleteShareGroupOffsetsResponse,
        DeleteShareGroupOffsetsResponseResponses,
        DescribeShareGroupOffsetsRequest,
        DescribeShareGroupOffsetsRequestGroups,
        DescribeShareGroupOffsetsResponse,
        DescribeShareGroupOffsetsResponseGroups,
        DescribeShareGroupOffsetsResponsePartitions,
        DescribeShareGroupOffsetsResponseTopics,
    )

NO_TOPIC_ID = bytes(16)
FIRST_LAG_VERSION = 1
log = logging.getLogger(__name__)
LATEST_TIMESTAMP = -1  # ListOffsets: the partition's end (its high watermark, read_uncommitted)
PEER_TIMEOUT_S = 5.0


def _offsets(ctx: RequestContext) -> ShareOffsets:
    broker = ctx.broker
    return ShareOffsets(
        installed(broker.share_state, "install_share_coordinator"),
        installed(broker.share, "install_share_coordinator"),
    )


def _group_error(ctx: RequestContext, group_id: str, *, changing: bool) -> ErrorCode:
    """Why the group's offsets cannot be served (changed, with ``changing``) here, or NONE."""
    coordinator = coordinator_of(ctx)
    error = coordinator.availability(group_id)
    if error is not ErrorCode.NONE:
        return error
    coordinator.adopt_share_groups(_offsets(ctx).groups_with_state())
    if not coordinator.is_share_group(group_id):
        return ErrorCode.GROUP_ID_NOT_FOUND
    if changing and not coordinator.share_group_is_empty(group_id):
        return ErrorCode.NON_EMPTY_GROUP
    return ErrorCode.NONE


def _change_refused(ctx: RequestContext, group_id: str) -> ErrorCode | None:
    """Why the group's offsets may not be changed by this request, or None."""
    if not authorized(ctx, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    error = _group_error(ctx, group_id, changing=True)
    return None if error is ErrorCode.NONE else error


async def _describe_group(
    ctx: RequestContext, offsets: ShareOffsets, group: DescribeShareGroupOffsetsRequestGroups
) -> DescribeShareGroupOffsetsResponseGroups:
    group_id = group["group_id"]
    if not authorized(ctx, ResourceType.GROUP, group_id):
        return {"group_id": group_id, "topics": [], "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    error = _group_error(ctx, group_id, changing=False)
    if error is ErrorCode.GROUP_ID_NOT_FOUND and not coordinator_of(ctx).has_group(group_id):
        error = ErrorCode.NONE  # Kafka describes a group that does not exist as one without offsets
        return {"group_id": group_id, "topics": [], "error_code": error, "error_message": None}
    if error is not ErrorCode.NONE:
        return {"group_id": group_id, "topics": [], "error_code": error, "error_message": None}
    requested = group["topics"]
    if requested is None:  # the partitions with state, and every one the members subscribe to
        wanted: dict[str, list[int]] = {}
        for _group, topic_id, index in await offsets.keys_with_state(group_id, ctx.broker.topics):
            info = ctx.broker.topics.by_id(topic_id)
            if info is not None:
                wanted.setdefault(info.name, []).append(index)
        for name in coordinator_of(ctx).share_group_topics(group_id):
            info = ctx.broker.topics.get(name)
            if info is not None:
                wanted[name] = sorted(set(wanted.get(name, [])) | set(range(info.partitions)))
    else:
        wanted = {t["topic_name"]: list(t["partitions"]) for t in requested}
    denied = unauthorized_names(ctx, ResourceType.TOPIC, wanted)
    topics: list[DescribeShareGroupOffsetsResponseTopics] = []
    for name, indexes in sorted(wanted.items()):
        info = ctx.broker.topics.get(name)
        partitions: list[DescribeShareGroupOffsetsResponsePartitions] = []
        for index in sorted(indexes):
            answer: DescribeShareGroupOffsetsResponsePartitions = {
                "partition_index": index,
                "start_offset": -1,
                "leader_epoch": -1,
                "lag": -1,
                "error_code": ErrorCode.NONE,
            }
            if name in denied:
                answer["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None or not 0 <= index < info.partitions:
                answer["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                try:
                    summary = await offsets.summary((group_id, info.topic_id, index))
                except ShareStateError as failure:
                    answer["error_code"], answer["error_message"] = failure.code, str(failure)
                    summary = None
                if summary is not None and summary.start_offset >= 0:
                    answer["start_offset"], answer["leader_epoch"] = (
                        summary.start_offset,
                        summary.leader_epoch,
                    )
                    end = await _high_watermark(ctx, name, index)
                    if end is not None and summary.delivery_complete_count >= 0:
                        answer["lag"] = max(0, end - summary.start_offset - summary.delivery_complete_count)
            if ctx.api_version < FIRST_LAG_VERSION:
                answer.pop("lag")
            partitions.append(answer)
        topics.append(
            {"topic_name": name, "topic_id": info.topic_id if info else NO_TOPIC_ID, "partitions": partitions}
        )
    return {"group_id": group_id, "topics": topics, "error_code": ErrorCode.NONE, "error_message": None}


async def _high_watermark(ctx: RequestContext, topic: str, index: int) -> int | None:
    """The partition's high watermark: its own if this broker leads it, else its leader's
    (ListOffsets LATEST, as Kafka's coordinator asks the leaders for a share group's lag);
    None when the leader cannot say (no leader, unreachable)."""
    cluster, replicas = ctx.broker.cluster, ctx.broker.replicas
    local = ctx.broker.partitions.get(topic, index)
    if local is not None and (replicas is None or replicas.leader((topic, index)) is not None):
        return local.high_watermark
    record = cluster.metadata.image.partition(topic, index) if cluster is not None else None
    if cluster is None or record is None or record.leader < 0:
        return None
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {"name": topic, "partitions": [{"partition_index": index, "timestamp": LATEST_TIMESTAMP}]}
        ],
    }
    try:
        answer = await cluster.peers.request(record.leader, ApiKey.LIST_OFFSETS, 7, body, PEER_TIMEOUT_S)
    except ConnectionError as exc:
        log.warning(
            "lag of %s-%d unknown: its leader %d did not answer (%s)", topic, index, record.leader, exc
        )
        return None
    (found,) = answer["topics"][0]["partitions"]
    return int(found["offset"]) if found["error_code"] == ErrorCode.NONE else None


async def handle_describe_share_group_offsets(
    ctx: RequestContext, request: DescribeShareGroupOffsetsRequest
) -> DescribeShareGroupOffsetsResponse:
    offsets = _offsets(ctx)
    return {"groups": [await _describe_group(ctx, offsets, group) for group in request["groups"]]}


async def handle_alter_share_group_offsets(
    ctx: RequestContext, request: AlterShareGroupOffsetsRequest
) -> AlterShareGroupOffsetsResponse:
    group_id = request["group_id"]
    refusal = _change_refused(ctx, group_id)
    if refusal is not None:
        return {"error_code": refusal, "error_message": None, "responses": []}
    offsets = _offsets(ctx)
    denied = unauthorized_names(ctx, ResourceType.TOPIC, (t["topic_name"] for t in request["topics"]))
    responses: list[AlterShareGroupOffsetsResponseResponses] = []
    for topic in request["topics"]:
        name = topic["topic_name"]
        info = ctx.broker.topics.get(name)
        results: list[AlterShareGroupOffsetsResponsePartitions] = []
        for partition in topic["partitions"]:
            index, code, message = partition["partition_index"], ErrorCode.NONE, None
            if name in denied:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None or not 0 <= index < info.partitions:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif partition["start_offset"] < 0:
                code, message = ErrorCode.INVALID_REQUEST, "The start offset must not be negative."
            else:
                try:
                    await offsets.start_at((group_id, info.topic_id, index), name, partition["start_offset"])
                except ShareStateError as failure:
                    code, message = failure.code, str(failure)
            results.append({"partition_index": index, "error_code": code, "error_message": message})
        responses.append(
            {"topic_name": name, "topic_id": info.topic_id if info else NO_TOPIC_ID, "partitions": results}
        )
    return {"error_code": ErrorCode.NONE, "error_message": None, "responses": responses}


async def handle_delete_share_group_offsets(
    ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
) -> DeleteShareGroupOffsetsResponse:
    group_id = request["group_id"]
    refusal = _change_refused(ctx, group_id)
    if refusal is not None:
        return {"error_code": refusal, "error_message": None, "responses": []}
    offsets = _offsets(ctx)
    denied = unauthorized_names(ctx, ResourceType.TOPIC, (t["topic_name"] for t in request["topics"]))
    responses: list[DeleteShareGroupOffsetsResponseResponses] = []
    for topic in request["topics"]:
        name = topic["topic_name"]
        info = ctx.broker.topics.get(name)
        code, message = ErrorCode.NONE, None
        if name in denied:
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif info is None:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            for index in range(info.partitions):
                try:
                    await offsets.delete((group_id, info.topic_id, index), name)
                except ShareStateError as failure:
                    code, message = failure.code, str(failure)
        responses.append(
            {
                "topic_name": name,
                "topic_id": info.topic_id if info else NO_TOPIC_ID,
                "error_code": code,
                "error_message": message,
            }
        )
    return {"error_code": ErrorCode.NONE, "error_message": None, "responses": responses}


HANDLERS = {
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: Served(handle_describe_share_group_offsets),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: Served(handle_alter_share_group_offsets),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: Served(handle_delete_share_group_offsets),
}
