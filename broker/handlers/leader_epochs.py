"""OffsetForLeaderEpoch: where a leader epoch ended, for consumers validating positions and
followers finding where their log diverges from their leader's.

Answered from the partition's leader epoch cache with Kafka's semantics
(``PartitionLog.end_offset_for_epoch``): the current epoch ends at the log end, an older one
where the next epoch began, one newer than ours (or UNDEFINED) is unknown: -1/-1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.partition_requests import find_partition
from broker.services.storage.partition_writes import leader_epoch_of
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        OffsetForLeaderEpochRequest,
        OffsetForLeaderEpochRequestPartitions,
        OffsetForLeaderEpochResponse,
        OffsetForLeaderEpochResponsePartitions,
    )


def end_offset(
    ctx: RequestContext, trusted: bool, topic: str, wanted: OffsetForLeaderEpochRequestPartitions
) -> OffsetForLeaderEpochResponsePartitions:
    index = wanted["partition"]
    found = find_partition(ctx, topic, index, wanted.get("current_leader_epoch", -1), cluster_trusted=trusted)
    if isinstance(found, ErrorCode):
        return {"error_code": found, "partition": index, "leader_epoch": -1, "end_offset": -1}
    partition_log, _info = found
    epoch, offset = partition_log.end_offset_for_epoch(
        wanted["leader_epoch"], leader_epoch_of(ctx.broker, topic, index)
    )
    return {"error_code": ErrorCode.NONE, "partition": index, "leader_epoch": epoch, "end_offset": offset}


async def handle_offset_for_leader_epoch(
    ctx: RequestContext, request: OffsetForLeaderEpochRequest
) -> OffsetForLeaderEpochResponse:
    trusted = cluster_authorized(
        ctx
    )  # as Kafka: CLUSTER_ACTION (brokers) covers every topic, else DESCRIBE on each
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "topic": t["topic"],
                "partitions": [end_offset(ctx, trusted, t["topic"], p) for p in t["partitions"]],
            }
            for t in request["topics"]
        ],
    }


HANDLERS = {ApiKey.OFFSET_FOR_LEADER_EPOCH: Served(handle_offset_for_leader_epoch)}
