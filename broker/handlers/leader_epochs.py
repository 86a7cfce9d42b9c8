"""OffsetForLeaderEpoch: where a leader epoch ended, for consumers validating positions.

A single node keeps one leader epoch per partition for its whole life, so the end offset
of the current (or any older) epoch is the log end offset, and an epoch newer than ours is
unknown (UNDEFINED_EPOCH_OFFSET: -1/-1), as Kafka answers.
"""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.handlers.fetch import leader_epoch_error
from wire.error_codes import ErrorCode

OFFSET_FOR_LEADER_EPOCH = 23


def end_offset(ctx: RequestContext, topic: str, wanted: dict[str, Any]) -> dict[str, Any]:
    index = wanted["partition"]
    result = {"partition": index, "leader_epoch": -1, "end_offset": -1}
    partition_log = ctx.broker.partitions.get(topic, index)
    info = ctx.broker.topics.get(topic)
    if partition_log is None or info is None:
        return result | {"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    epoch_error = leader_epoch_error(wanted.get("current_leader_epoch", -1), info.leader_epoch)
    if epoch_error is not None:
        return result | {"error_code": epoch_error}
    if not partition_log.is_online:
        return result | {"error_code": ErrorCode.KAFKA_STORAGE_ERROR}
    if wanted["leader_epoch"] > info.leader_epoch:
        return result | {"error_code": ErrorCode.NONE}
    return {
        "partition": index,
        "error_code": ErrorCode.NONE,
        "leader_epoch": info.leader_epoch,
        "end_offset": partition_log.log_end_offset,
    }


async def handle_offset_for_leader_epoch(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {"topic": t["topic"], "partitions": [end_offset(ctx, t["topic"], p) for p in t["partitions"]]}
            for t in request["topics"]
        ],
    }


HANDLERS = {OFFSET_FOR_LEADER_EPOCH: handle_offset_for_leader_epoch}
