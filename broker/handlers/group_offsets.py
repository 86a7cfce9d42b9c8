"""Committed offsets: OffsetCommit, OffsetFetch and OffsetDelete, translated to the coordinator.

OffsetFetch changed shape twice: v2 added a group-level error (before it, such errors are
repeated on every partition) and v8 batches several groups per request.  The coordinator
answers per group; this module folds that into each version's layout.
"""

from __future__ import annotations

from typing import Any

from broker.api_support import Served
from broker.context import PendingResponse, RequestContext
from broker.handlers.groups import coordinator_of
from coordinator.offsets import topics_with_error
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


async def handle_offset_commit(
    ctx: RequestContext, request: dict[str, Any]
) -> dict[str, Any] | PendingResponse:
    """Commit through the coordinator; under ``flush.messages`` the answer waits for the sync of
    the ``__consumer_offsets`` write, as Kafka's does for its append."""
    durability = ctx.broker.durability
    with durability.collecting() as must_sync:
        topics = coordinator_of(ctx).commit_offsets(
            group_id=request["group_id"],
            generation_id=request.get("generation_id_or_member_epoch", -1),
            member_id=request.get("member_id", ""),
            group_instance_id=request.get("group_instance_id"),
            retention_time_ms=request.get("retention_time_ms", -1),
            topics=request["topics"],
            api_version=ctx.api_version,
        )
    if not must_sync:
        return {"topics": topics}
    ticket = durability.ticket(must_sync)

    async def after_sync() -> dict[str, Any]:
        if await durability.wait(ticket):
            # Kafka answers a failed __consumer_offsets append (KAFKA_STORAGE_ERROR) this way.
            for topic in topics:
                for partition in topic["partitions"]:
                    if partition["error_code"] == ErrorCode.NONE:
                        partition["error_code"] = ErrorCode.NOT_COORDINATOR
        return {"topics": topics}

    return PendingResponse(after_sync)


async def handle_offset_fetch(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    coordinator = coordinator_of(ctx)
    if ctx.api_version >= 8:
        return {
            "groups": [
                coordinator.fetch_offsets(
                    group["group_id"], group["topics"], group["member_id"], group["member_epoch"]
                )
                for group in request["groups"]
            ]
        }
    result = coordinator.fetch_offsets(request["group_id"], request["topics"])
    error = result["error_code"]
    if ctx.api_version < 2 and error is not ErrorCode.NONE:
        # No group-level error before v2: every requested partition carries it.
        requested = [
            {"name": t["name"], "partitions": [{"partition_index": p} for p in t["partition_indexes"]]}
            for t in request["topics"] or []
        ]
        failed = topics_with_error(requested, error)
        for topic in failed:
            for partition in topic["partitions"]:
                partition.update(committed_offset=-1, committed_leader_epoch=-1, metadata="")
        return {"topics": failed}
    return {"topics": result["topics"], "error_code": error}


async def handle_offset_delete(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    error, topics = coordinator_of(ctx).delete_offsets(request["group_id"], request["topics"])
    return {"error_code": error, "topics": topics}


GROUP_OFFSETS_V10 = "OffsetCommit and OffsetFetch v10 (KIP-848) name topics by id instead of by name; the coordinator keys offsets by name and does not translate ids yet"

HANDLERS = {
    ApiKey.OFFSET_COMMIT: Served(handle_offset_commit, highest=9, why_not_newer=GROUP_OFFSETS_V10),
    ApiKey.OFFSET_FETCH: Served(handle_offset_fetch, highest=9, why_not_newer=GROUP_OFFSETS_V10),
    ApiKey.OFFSET_DELETE: Served(handle_offset_delete),
}
