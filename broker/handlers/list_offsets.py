"""ListOffsets: earliest, latest, by timestamp, max timestamp — Kafka's offset lookups.

Special timestamps (Kafka's ``ListOffsetsRequest``): -1 latest (the high watermark; the
last stable offset for read_committed, equal here without transactions), -2 earliest (the
log start offset), -3 the record with the largest timestamp, -4 earliest local and -5
earliest tiered (both the log start offset on a broker without tiered storage).
"""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_mapping import error_code_of
from broker.handlers.fetch import leader_epoch_error
from log.errors import LogError
from log.partition_log import PartitionLog
from wire.error_codes import ErrorCode

LIST_OFFSETS = 2
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, EARLIEST_TIERED = -1, -2, -3, -4, -5


def lookup(ctx: RequestContext, topic: str, wanted: dict[str, Any]) -> dict[str, Any]:
    index = wanted["partition_index"]
    result: dict[str, Any] = {"partition_index": index, "timestamp": -1, "offset": -1, "leader_epoch": -1}
    broker = ctx.broker
    partition_log = broker.partitions.get(topic, index)
    info = broker.topics.get(topic)
    if partition_log is None or info is None:
        return result | {"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    epoch_error = leader_epoch_error(wanted.get("current_leader_epoch", -1), info.leader_epoch)
    if epoch_error is not None:
        return result | {"error_code": epoch_error}
    if not partition_log.is_online:
        return result | {"error_code": ErrorCode.KAFKA_STORAGE_ERROR}
    try:
        return result | locate(partition_log, wanted["timestamp"], info.leader_epoch)
    except LogError as exc:
        return result | {"error_code": error_code_of(exc)}


def locate(partition_log: PartitionLog, timestamp: int, leader_epoch: int) -> dict[str, Any]:
    """The offset (and timestamp) a ListOffsets timestamp stands for in one partition."""
    result: dict[str, Any] = {
        "error_code": ErrorCode.NONE,
        "timestamp": -1,
        "offset": -1,
        "leader_epoch": leader_epoch,
    }
    if timestamp == LATEST:
        result["offset"] = partition_log.log_end_offset
    elif timestamp in (EARLIEST, EARLIEST_LOCAL, EARLIEST_TIERED):
        result["offset"] = partition_log.log_start_offset
    elif timestamp == MAX_TIMESTAMP:
        found = partition_log.max_timestamp_offset()
        if found is not None:
            result["offset"], result["timestamp"] = found
    elif timestamp < 0:
        return result | {"error_code": ErrorCode.INVALID_REQUEST, "leader_epoch": -1}
    else:
        found = partition_log.offset_for_timestamp(timestamp)
        if found is not None:
            result["offset"], result["timestamp"] = found
        else:
            result["leader_epoch"] = -1
    return result


async def handle_list_offsets(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": topic["name"],
                "partitions": [lookup(ctx, topic["name"], p) for p in topic["partitions"]],
            }
            for topic in request["topics"]
        ],
    }


HANDLERS = {LIST_OFFSETS: handle_list_offsets}
