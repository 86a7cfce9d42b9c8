"""InitProducerId: producer ids for idempotent producers (the Java client's default) and for
transactional ones; DescribeProducers: the producers each partition remembers
(``kafka-transactions describe-producers``).

Without a transactional id every call allocates a fresh producer id with epoch 0, as Kafka's
coordinator does (also when an idempotent producer re-inits after a fatal sequence error,
KIP-360).  With one, the transaction coordinator answers: the id's producer id under a new
epoch, which fences older instances (:mod:`coordinator.transactions`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import authorized, authorized_on_any, cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.coordinator_writes import durably
from broker.requests.coordinators import error_for, transactions_of
from broker.services.cluster.etcd_client import EtcdError
from broker.services.security.acl_model import AclOperation, ResourceType
from coordinator.transactions import TxnError
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        DescribeProducersRequest,
        DescribeProducersResponse,
        DescribeProducersResponsePartitions,
        InitProducerIdRequest,
        InitProducerIdResponse,
    )


def _refusal(ctx: RequestContext, transactional_id: str | None) -> ErrorCode | None:
    """Kafka's checks: WRITE on the transactional id; without one IDEMPOTENT_WRITE on the
    cluster or WRITE on some topic (KIP-679)."""
    if transactional_id is not None:
        allowed = authorized(ctx, ResourceType.TRANSACTIONAL_ID, transactional_id)
        return None if allowed else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if cluster_authorized(ctx) or authorized_on_any(ctx, ResourceType.TOPIC, AclOperation.WRITE):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


async def handle_init_producer_id(
    ctx: RequestContext, request: InitProducerIdRequest
) -> InitProducerIdResponse:
    transactional_id = request.get("transactional_id")
    refused = _refusal(ctx, transactional_id)
    if refused is not None:
        return {"throttle_time_ms": 0, "error_code": refused, "producer_id": -1, "producer_epoch": -1}
    if transactional_id is None:
        cluster = ctx.broker.cluster
        try:
            producer_id = (
                await cluster.producer_ids.allocate() if cluster else ctx.broker.producer_ids.allocate()
            )
        except EtcdError:
            # As Kafka's brokers while the controller hands out no block: retriable.
            return {
                "throttle_time_ms": 0,
                "error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                "producer_id": -1,
                "producer_epoch": -1,
            }
        epoch = 0
    else:
        try:
            producer_id, epoch = await durably(
                ctx,
                lambda: transactions_of(ctx).init_producer_id(
                    transactional_id,
                    request["transaction_timeout_ms"],
                    request.get("producer_id", -1),
                    request.get("producer_epoch", -1),
                ),
            )
        except TxnError as failure:
            return {
                "throttle_time_ms": 0,
                "error_code": error_for(ctx, failure),
                "producer_id": -1,
                "producer_epoch": -1,
            }
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "producer_id": producer_id,
        "producer_epoch": epoch,
    }


def _refused_partition(partition: int, code: ErrorCode) -> DescribeProducersResponsePartitions:
    return {"partition_index": partition, "error_code": code, "active_producers": []}


def _producers_of(ctx: RequestContext, topic: str, partition: int) -> DescribeProducersResponsePartitions:
    """One partition of a DescribeProducers answer, with each producer's open transaction
    (``current_txn_start_offset``, -1 when none) as Kafka reports it."""
    partition_log = ctx.broker.partitions.get(topic, partition)
    if not authorized(ctx, ResourceType.TOPIC, topic):
        return _refused_partition(partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if partition_log is None:
        return _refused_partition(partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if not partition_log.is_online:
        return _refused_partition(partition, ErrorCode.KAFKA_STORAGE_ERROR)
    return {
        "partition_index": partition,
        "error_code": ErrorCode.NONE,
        "active_producers": [
            {
                "producer_id": entry.producer_id,
                "producer_epoch": entry.epoch,
                "last_sequence": entry.last_seq,
                "last_timestamp": entry.last_timestamp,
                "coordinator_epoch": entry.coordinator_epoch,
                "current_txn_start_offset": entry.current_txn_first_offset,
            }
            for entry in partition_log.active_producers()
        ],
    }


async def handle_describe_producers(
    ctx: RequestContext, request: DescribeProducersRequest
) -> DescribeProducersResponse:
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
