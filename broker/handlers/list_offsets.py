"""ListOffsets: earliest, latest, by timestamp, max timestamp — Kafka's offset lookups.

Special timestamps (Kafka's ``ListOffsetsRequest``): -1 latest (the high watermark; the
last stable offset for read_committed), -2 earliest (the log start offset), -3 the record
with the largest timestamp, -4 earliest local and -5 earliest tiered (both the log start
offset on a broker without tiered storage).  As in Kafka, a lookup by timestamp (and -3)
finds nothing at or past what the isolation level may read (``isolation_level`` 1 =
read_committed): the offset it answers must be one the consumer can fetch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.error_mapping import error_code_of
from broker.requests.partition_requests import find_partition
from broker.requests.version_rules import READ_COMMITTED
from log.errors import LogError
from log.partition_log import PartitionLog
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        ListOffsetsRequest,
        ListOffsetsRequestPartitions,
        ListOffsetsResponse,
        ListOffsetsResponsePartitions,
    )

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, EARLIEST_TIERED = -1, -2, -3, -4, -5


def lookup(
    ctx: RequestContext, read_committed: bool, topic: str, wanted: ListOffsetsRequestPartitions
) -> ListOffsetsResponsePartitions:
    index = wanted["partition_index"]
    found = find_partition(ctx, topic, index, wanted.get("current_leader_epoch", -1))
    if isinstance(found, ErrorCode):
        return _refused(index, found)
    partition_log, info = found
    try:
        return locate(partition_log, index, wanted["timestamp"], info.leader_epoch, read_committed)
    except LogError as exc:
        return _refused(index, error_code_of(exc))


def _refused(index: int, code: ErrorCode) -> ListOffsetsResponsePartitions:
    return {"partition_index": index, "error_code": code, "timestamp": -1, "offset": -1, "leader_epoch": -1}


def locate(
    partition_log: PartitionLog, index: int, timestamp: int, leader_epoch: int, read_committed: bool
) -> ListOffsetsResponsePartitions:
    """The offset (and timestamp) a ListOffsets timestamp stands for in partition ``index``."""
    result: ListOffsetsResponsePartitions = {
        "partition_index": index,
        "error_code": ErrorCode.NONE,
        "timestamp": -1,
        "offset": -1,
        "leader_epoch": leader_epoch,
    }
    # Kafka's lastFetchableOffset.
    fetchable = partition_log.last_stable_offset if read_committed else partition_log.high_watermark
    if timestamp == LATEST:
        result["offset"] = fetchable
    elif timestamp in (EARLIEST, EARLIEST_LOCAL, EARLIEST_TIERED):
        result["offset"] = partition_log.log_start_offset
    elif timestamp == MAX_TIMESTAMP:
        found = partition_log.max_timestamp_offset()
        if found is not None and found[0] < fetchable:
            result["offset"], result["timestamp"] = found
    elif timestamp < 0:
        result["error_code"], result["leader_epoch"] = ErrorCode.INVALID_REQUEST, -1
    else:
        found = partition_log.offset_for_timestamp(timestamp)
        if found is not None and found[0] < fetchable:
            result["offset"], result["timestamp"] = found
        else:
            result["leader_epoch"] = -1
    return result


async def handle_list_offsets(ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
    read_committed = request.get("isolation_level", 0) == READ_COMMITTED
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t["name"],
                "partitions": [lookup(ctx, read_committed, t["name"], p) for p in t["partitions"]],
            }
            for t in request["topics"]
        ],
    }


LIST_OFFSETS_V11 = "ListOffsets v11 (KIP-1023) adds the earliest offset not yet uploaded to tiered storage (timestamp -6); there is no tiered storage here and what Kafka answers for it without any was not checked yet"

HANDLERS = {ApiKey.LIST_OFFSETS: Served(handle_list_offsets, highest=10, why_not_newer=LIST_OFFSETS_V11)}
