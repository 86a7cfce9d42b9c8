"""InitProducerId: producer ids for idempotent producers (the Java client's default).

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


HANDLERS = {ApiKey.INIT_PRODUCER_ID: Served(handle_init_producer_id)}
