"""WriteTxnMarkers: a transaction coordinator on another broker ends a transaction in the
partitions this broker leads (Kafka's ``KafkaApis.handleWriteTxnMarkersRequest``).

Brokers only (CLUSTER_ACTION).  Each marker is appended here and answered once the in-sync
replicas have it (Kafka appends markers with acks=all); a partition led elsewhere is
NOT_LEADER_OR_FOLLOWER, one of an unknown topic UNKNOWN_TOPIC_OR_PARTITION, and the
coordinator retries the first at the partition's new leader.  Markers for ``__consumer_offsets``
go through the group coordinator, which applies or drops the transaction's offsets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from broker.requests.acl_checks import cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.coordinator_writes import replicated_writes
from broker.services.coordinators.marker_channel import REQUEST_TIMEOUT_S, TxnKey, write_local_marker
from broker.services.replication.acks import acknowledged
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse


async def handle_write_txn_markers(
    ctx: RequestContext, request: WriteTxnMarkersRequest
) -> WriteTxnMarkersResponse:
    refused = None if cluster_authorized(ctx) else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    errors: dict[tuple[int, str, int], ErrorCode] = {}
    with replicated_writes(ctx.broker) as acks:
        for marker in request["markers"]:
            txn = TxnKey(
                marker["producer_id"],
                marker["producer_epoch"],
                marker["transaction_result"],
                marker["coordinator_epoch"],
            )
            for topic in marker["topics"]:
                for partition in topic["partition_indexes"]:
                    key = (txn.producer_id, topic["name"], partition)
                    errors[key] = refused or write_local_marker(ctx.broker, txn, (topic["name"], partition))
    if acks and ctx.broker.replicas is not None:
        unacknowledged = await acknowledged(
            ctx.broker.replicas, acks, trio.current_time() + REQUEST_TIMEOUT_S
        )
        for key, code in errors.items():
            if code is ErrorCode.NONE and key[1:] in unacknowledged:
                errors[key] = unacknowledged[key[1:]]
    return {
        "markers": [
            {
                "producer_id": marker["producer_id"],
                "topics": [
                    {
                        "name": topic["name"],
                        "partitions": [
                            {
                                "partition_index": p,
                                "error_code": errors[marker["producer_id"], topic["name"], p],
                            }
                            for p in topic["partition_indexes"]
                        ],
                    }
                    for topic in marker["topics"]
                ],
            }
            for marker in request["markers"]
        ]
    }


HANDLERS = {ApiKey.WRITE_TXN_MARKERS: Served(handle_write_txn_markers)}
