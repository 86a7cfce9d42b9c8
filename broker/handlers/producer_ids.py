"""InitProducerId: producer ids for idempotent producers (the Java client's default);
DescribeProducers: the producers each partition remembers (``kafka-transactions describe-producers``).

Without transactions every call allocates a fresh producer id with epoch 0, as Kafka's
coordinator does for a null transactional id (also when an idempotent producer re-inits
after a fatal sequence error, KIP-360).  Transactional ids are refused until transactions
exist, rather than half-supported.
"""

from __future__ import annotations

from typing import Any

from broker.api_support import Served
from broker.context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


async def handle_init_producer_id(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if request.get("transactional_id") is not None:
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "producer_id": ctx.broker.producer_ids.allocate(),
        "producer_epoch": 0,
    }


def _producers_of(ctx: RequestContext, topic: str, partition: int) -> dict[str, Any]:
    """One partition of a DescribeProducers answer; no transactions yet, so none is open."""
    partition_log = ctx.broker.partitions.get(topic, partition)
    if partition_log is None:
        return {"partition_index": partition, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    if not partition_log.is_online:
        return {"partition_index": partition, "error_code": ErrorCode.KAFKA_STORAGE_ERROR}
    return {
        "partition_index": partition,
        "error_code": ErrorCode.NONE,
        "active_producers": [
            {
                "producer_id": entry.producer_id,
                "producer_epoch": entry.epoch,
                "last_sequence": entry.last_seq,
                "last_timestamp": entry.last_timestamp,
                "coordinator_epoch": -1,
            }
            for entry in partition_log.active_producers()
        ],
    }


async def handle_describe_producers(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": t["name"],
                "partitions": [_producers_of(ctx, t["name"], p) for p in t["partition_indexes"]],
            }
            for t in request["topics"]
        ]
    }


HANDLERS = {
    ApiKey.INIT_PRODUCER_ID: Served(handle_init_producer_id),
    ApiKey.DESCRIBE_PRODUCERS: Served(handle_describe_producers),
}
