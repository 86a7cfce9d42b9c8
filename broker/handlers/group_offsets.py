"""Committed offsets: OffsetCommit, OffsetFetch and OffsetDelete, translated to the coordinator.

OffsetFetch changed shape twice: v2 added a group-level error (before it, such errors are
repeated on every partition) and v8 batches several groups per request.  The coordinator
answers per group; this module folds that into each version's layout.  From v10 both APIs
name topics by id (KIP-848): the coordinator keeps offsets by topic name, as Kafka's does, so
ids are translated here; an id no topic has is UNKNOWN_TOPIC_ID for its partitions, and a
topic without an id any more (deleted) is left out of a fetch of everything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from broker.requests.acl_checks import authorized
from broker.requests.api_support import Served
from broker.requests.context import PendingResponse, RequestContext
from broker.requests.coordinator_writes import (
    answer_when_synced,
    replicated_writes,
    split_authorized_topics,
)
from broker.requests.coordinators import coordinator_of
from broker.services.security.acl_model import ResourceType
from coordinator.coordinator import GroupCoordinator
from coordinator.offsets import TopicErrors, topics_with_error
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        OffsetCommitRequest,
        OffsetCommitRequestTopics,
        OffsetCommitResponse,
        OffsetCommitResponseTopics,
        OffsetDeleteRequest,
        OffsetDeleteResponse,
        OffsetFetchRequest,
        OffsetFetchRequestGroups,
        OffsetFetchRequestGroupsTopics,
        OffsetFetchRequestTopics,
        OffsetFetchResponse,
        OffsetFetchResponseGroups,
        OffsetFetchResponseGroupsTopics,
        OffsetFetchResponsePartitions,
        OffsetFetchResponseTopics,
    )

_ById = TypeVar("_ById", "OffsetCommitRequestTopics", "OffsetFetchRequestGroupsTopics")
_Answered = TypeVar("_Answered", "OffsetCommitResponseTopics", "OffsetFetchResponseGroupsTopics")


def _by_name(ctx: RequestContext, topics: list[_ById]) -> tuple[list[_ById], list[_ById]]:
    """Request topics named by id (v10+) with their names added, and those whose id is unknown."""
    known: list[_ById] = []
    unknown: list[_ById] = []
    for topic in topics:
        info = ctx.broker.topics.by_id(topic["topic_id"])
        if info is None:
            unknown.append(topic)
        else:
            known.append(topic | {"name": info.name})
    return known, unknown


def _with_ids(ctx: RequestContext, topics: list[_Answered]) -> list[_Answered]:
    """Response topics with their ids added; topics that have no id (deleted) are left out."""
    found: list[_Answered] = []
    for topic in topics:
        info = ctx.broker.topics.get(topic["name"])
        if info is not None:
            found.append(topic | {"topic_id": info.topic_id})
    return found


def _commit_topics(topics: list[TopicErrors]) -> list[OffsetCommitResponseTopics]:
    """The coordinator's answer as OffsetCommit's topics (whose name v10+ leaves out)."""
    return [{"name": topic["name"], "partitions": topic["partitions"]} for topic in topics]


def _no_offsets(indexes: list[int], code: ErrorCode) -> list[OffsetFetchResponsePartitions]:
    """What OffsetFetch answers for partitions refused with ``code``: no offset, beside the error."""
    return [
        {
            "partition_index": index,
            "committed_offset": -1,
            "committed_leader_epoch": -1,
            "metadata": "",
            "error_code": code,
        }
        for index in indexes
    ]


async def handle_offset_commit(
    ctx: RequestContext, request: OffsetCommitRequest
) -> OffsetCommitResponse | PendingResponse:
    """Commit through the coordinator; under ``flush.messages`` the answer waits for the sync of
    the ``__consumer_offsets`` write, as Kafka's does for its append."""
    durability = ctx.broker.durability
    requested, unknown = (
        _by_name(ctx, request["topics"]) if ctx.api_version >= 10 else (request["topics"], [])
    )
    if not authorized(ctx, ResourceType.GROUP, request["group_id"]):
        denied = _commit_topics(topics_with_error(requested, ErrorCode.GROUP_AUTHORIZATION_FAILED))
        return {"topics": _with_ids(ctx, denied) if ctx.api_version >= 10 else denied}
    requested, refused = split_authorized_topics(ctx, requested)
    with durability.collecting() as must_sync, replicated_writes(ctx.broker) as acks:
        committed = coordinator_of(ctx).commit_offsets(
            group_id=request["group_id"],
            generation_id=request.get("generation_id_or_member_epoch", -1),
            member_id=request.get("member_id", ""),
            group_instance_id=request.get("group_instance_id"),
            retention_time_ms=request.get("retention_time_ms", -1),
            topics=requested,
            api_version=ctx.api_version,
        )
    topics = _commit_topics(committed + topics_with_error(refused, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    if ctx.api_version >= 10:
        topics = _with_ids(ctx, topics) + [
            {
                "topic_id": topic["topic_id"],
                "partitions": [
                    {"partition_index": p["partition_index"], "error_code": ErrorCode.UNKNOWN_TOPIC_ID}
                    for p in topic["partitions"]
                ],
            }
            for topic in unknown
        ]
    answer: OffsetCommitResponse = {"topics": topics}
    return answer_when_synced(ctx, must_sync, answer, acks)


async def handle_offset_fetch(ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
    coordinator = coordinator_of(ctx)
    if ctx.api_version >= 10:
        return {
            "groups": [
                _fetch_offsets_by_id(ctx, group, request["require_stable"]) for group in request["groups"]
            ]
        }
    if ctx.api_version >= 8:
        return {
            "groups": [
                authorized_fetch(
                    ctx,
                    group["group_id"],
                    group["topics"],
                    partial(
                        _fetch_group_offsets, coordinator, group, require_stable=request["require_stable"]
                    ),
                )
                for group in request["groups"]
            ]
        }
    result = authorized_fetch(
        ctx,
        request["group_id"],
        request["topics"],
        lambda topics: coordinator.fetch_offsets(
            request["group_id"], topics, require_stable=request.get("require_stable", False)
        ),
    )
    error = result["error_code"]
    if ctx.api_version < 2 and error is not ErrorCode.NONE:
        # No group-level error before v2: every requested partition carries it.
        failed: list[OffsetFetchResponseTopics] = [
            {"name": t["name"], "partitions": _no_offsets(t["partition_indexes"], ErrorCode(error))}
            for t in request["topics"] or []
        ]
        return {"topics": failed}
    topics: list[OffsetFetchResponseTopics] = [
        {"name": t["name"], "partitions": t["partitions"]} for t in result["topics"]
    ]
    return {"topics": topics, "error_code": error}


def _fetch_group_offsets(
    coordinator: GroupCoordinator,
    group: OffsetFetchRequestGroups,
    topics: Sequence[OffsetFetchRequestTopics] | None,
    require_stable: bool,
) -> OffsetFetchResponseGroups:
    """One group's committed offsets, for a v8+ OffsetFetch that names several groups."""
    return coordinator.fetch_offsets(
        group["group_id"], topics, group["member_id"], group["member_epoch"], require_stable
    )


def _fetch_offsets_by_id(
    ctx: RequestContext, group: OffsetFetchRequestGroups, require_stable: bool
) -> OffsetFetchResponseGroups:
    """One group of an OffsetFetch v10+, whose topics are named by id."""
    requested, unknown = _by_name(ctx, group["topics"]) if group["topics"] is not None else (None, [])
    result = authorized_fetch(
        ctx,
        group["group_id"],
        requested,
        lambda topics: coordinator_of(ctx).fetch_offsets(
            group["group_id"], topics, group["member_id"], group["member_epoch"], require_stable
        ),
    )
    if result["error_code"] is ErrorCode.NONE:
        unknown_ids: list[OffsetFetchResponseGroupsTopics] = [
            {
                "topic_id": t["topic_id"],
                "partitions": _no_offsets(t["partition_indexes"], ErrorCode.UNKNOWN_TOPIC_ID),
            }
            for t in unknown
        ]
        result["topics"] = _with_ids(ctx, result["topics"]) + unknown_ids
    return result


def authorized_fetch(
    ctx: RequestContext,
    group_id: str,
    topics: Sequence[OffsetFetchRequestTopics] | None,
    fetch: Callable[[Sequence[OffsetFetchRequestTopics] | None], OffsetFetchResponseGroups],
) -> OffsetFetchResponseGroups:
    """One group's OffsetFetch as Kafka authorizes it: DESCRIBE on the group, else
    GROUP_AUTHORIZATION_FAILED; named topics the principal may not describe answer
    TOPIC_AUTHORIZATION_FAILED, and a fetch of every topic leaves them out."""
    if not authorized(ctx, ResourceType.GROUP, group_id):
        return {"group_id": group_id, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "topics": []}
    if topics is None:
        result = fetch(None)
        result["topics"] = [t for t in result["topics"] if authorized(ctx, ResourceType.TOPIC, t["name"])]
        return result
    allowed, refused = split_authorized_topics(ctx, topics)
    result = fetch(allowed)
    if result["error_code"] is ErrorCode.NONE:
        result["topics"] = result["topics"] + [
            {
                "name": t["name"],
                "partitions": _no_offsets(t["partition_indexes"], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
            }
            for t in refused
        ]
    return result


async def handle_offset_delete(ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    if not authorized(ctx, ResourceType.GROUP, request["group_id"]):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "topics": []}
    allowed, refused = split_authorized_topics(ctx, request["topics"])
    error, topics = coordinator_of(ctx).delete_offsets(request["group_id"], allowed)
    if error is ErrorCode.NONE:
        topics = topics + topics_with_error(refused, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return {"error_code": error, "topics": topics}


HANDLERS = {
    ApiKey.OFFSET_COMMIT: Served(handle_offset_commit),
    ApiKey.OFFSET_FETCH: Served(handle_offset_fetch),
    ApiKey.OFFSET_DELETE: Served(handle_offset_delete),
}
