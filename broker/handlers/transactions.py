"""Transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
DescribeTransactions and ListTransactions, translated to the transaction coordinator
(``ctx.broker.transactions``, :mod:`coordinator.transactions`).  InitProducerId, which serves
idempotent producers too, lives in :mod:`broker.handlers.producer_ids`.

Version differences are Kafka's: PRODUCER_FENCED (KIP-588) is only known to clients of newer
versions, older ones are told INVALID_PRODUCER_EPOCH; AddPartitionsToTxn v4+ batches several
transactions (the form brokers use to verify a partition, KIP-890) and reports errors per
transaction; a partition that does not exist fails the request with UNKNOWN_TOPIC_OR_PARTITION
for it and OPERATION_NOT_ATTEMPTED for the rest, as Kafka answers.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from broker.requests.acl_checks import answer_each, authorized, cluster_authorized, unauthorized_names
from broker.requests.api_support import Served
from broker.requests.context import PendingResponse, RequestContext
from broker.requests.coordinator_writes import (
    answer_when_synced,
    durably,
    replicated_writes,
    split_authorized_topics,
)
from broker.requests.coordinators import coordinator_of, error_for, joined_transaction, transactions_of
from broker.services.security.acl_model import ResourceType
from coordinator.offsets import topics_with_error
from coordinator.offsets_topic import OFFSETS_TOPIC
from coordinator.transactions import TxnError
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        AddOffsetsToTxnRequest,
        AddOffsetsToTxnResponse,
        AddPartitionsToTxnRequest,
        AddPartitionsToTxnRequestTopics,
        AddPartitionsToTxnResponse,
        AddPartitionsToTxnResponseResultsByTransaction,
        AddPartitionsToTxnResponseTopicResults,
        DescribeTransactionsRequest,
        DescribeTransactionsResponse,
        DescribeTransactionsResponseTransactionStates,
        EndTxnRequest,
        EndTxnResponse,
        ListTransactionsRequest,
        ListTransactionsResponse,
        TxnOffsetCommitRequest,
        TxnOffsetCommitResponse,
    )

FIRST_BATCHED_ADD_PARTITIONS_VERSION = 4
FIRST_END_TXN_EPOCH_BUMP_VERSION = 5


# --- AddPartitionsToTxn ------------------------------------------------------------------


def _partitions_result(
    topics: list[AddPartitionsToTxnRequestTopics], errors: dict[tuple[str, int], ErrorCode]
) -> list[AddPartitionsToTxnResponseTopicResults]:
    return [
        {
            "name": topic["name"],
            "results_by_partition": [
                {"partition_index": p, "partition_error_code": errors[topic["name"], p]}
                for p in topic["partitions"]
            ],
        }
        for topic in topics
    ]


async def _add_partitions(
    ctx: RequestContext,
    transactional_id: str,
    producer_id: int,
    epoch: int,
    topics: list[AddPartitionsToTxnRequestTopics],
    verify: bool,
    denied: Collection[str] = (),
) -> dict[tuple[str, int], ErrorCode]:
    """One transaction's partitions, added (or checked, ``verify``): an error per partition;
    topics in ``denied`` (no WRITE) fail it as missing partitions do."""
    wanted = [(topic["name"], p) for topic in topics for p in topic["partitions"]]
    failed = {
        tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp[0] in denied else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        for tp in wanted
        if tp[0] in denied or not _exists(ctx, *tp)
    }
    if failed:
        return {tp: failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
    coordinator = transactions_of(ctx)
    try:
        if verify:
            return coordinator.verify_partitions(transactional_id, producer_id, epoch, wanted)
        await durably(ctx, lambda: coordinator.add_partitions(transactional_id, producer_id, epoch, wanted))
    except TxnError as failure:
        return dict.fromkeys(wanted, error_for(ctx, failure))
    return dict.fromkeys(wanted, ErrorCode.NONE)


def _exists(ctx: RequestContext, topic: str, partition: int) -> bool:
    """Whether the partition exists (in a cluster the coordinator need not host a replica)."""
    info = ctx.broker.topics.get(topic)
    return info is not None and 0 <= partition < info.partitions


async def handle_add_partitions_to_txn(
    ctx: RequestContext, request: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse:
    if ctx.api_version < FIRST_BATCHED_ADD_PARTITIONS_VERSION:
        topics = request["v3_and_below_topics"]
        transactional_id = request["v3_and_below_transactional_id"]
        if not authorized(ctx, ResourceType.TRANSACTIONAL_ID, transactional_id):
            wanted = [(t["name"], p) for t in topics for p in t["partitions"]]
            errors = dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        else:
            errors = await _add_partitions(
                ctx,
                transactional_id,
                request["v3_and_below_producer_id"],
                request["v3_and_below_producer_epoch"],
                topics,
                verify=False,
                denied=unauthorized_names(ctx, ResourceType.TOPIC, (t["name"] for t in topics)),
            )
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _partitions_result(topics, errors)}
    if not cluster_authorized(ctx):
        # v4+ is the brokers' own verification (KIP-890): CLUSTER_ACTION.
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "results_by_transaction": [],
        }
    results: list[AddPartitionsToTxnResponseResultsByTransaction] = []
    for txn in request["transactions"]:
        errors = await _add_partitions(
            ctx,
            txn["transactional_id"],
            txn["producer_id"],
            txn["producer_epoch"],
            txn["topics"],
            txn["verify_only"],
        )
        results.append(
            {
                "transactional_id": txn["transactional_id"],
                "topic_results": _partitions_result(txn["topics"], errors),
            }
        )
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results_by_transaction": results}


# --- AddOffsetsToTxn / TxnOffsetCommit ---------------------------------------------------


async def handle_add_offsets_to_txn(
    ctx: RequestContext, request: AddOffsetsToTxnRequest
) -> AddOffsetsToTxnResponse:
    """The group's ``__consumer_offsets`` partition joins the transaction (its offsets follow
    in TxnOffsetCommit and are applied by the transaction's marker)."""
    group_id = request["group_id"]
    if not authorized(ctx, ResourceType.TRANSACTIONAL_ID, request["transactional_id"]):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    if not authorized(ctx, ResourceType.GROUP, group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    if not group_id:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_GROUP_ID}
    offsets_partition = (OFFSETS_TOPIC, coordinator_of(ctx).partition_for(group_id))
    try:
        await durably(
            ctx,
            lambda: transactions_of(ctx).add_partitions(
                request["transactional_id"],
                request["producer_id"],
                request["producer_epoch"],
                [offsets_partition],
            ),
        )
    except TxnError as failure:
        return {"throttle_time_ms": 0, "error_code": error_for(ctx, failure)}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE}


async def handle_txn_offset_commit(
    ctx: RequestContext, request: TxnOffsetCommitRequest
) -> TxnOffsetCommitResponse | PendingResponse:
    """Offsets written inside the producer's transaction, applied when it commits.

    The group's partition must have joined the transaction (AddOffsetsToTxn, or this request
    from v5) under the producer's current epoch; otherwise the commit could never be decided.
    """
    group_id = request["group_id"]
    refusal = (
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if not authorized(ctx, ResourceType.TRANSACTIONAL_ID, request["transactional_id"])
        else ErrorCode.GROUP_AUTHORIZATION_FAILED
        if not authorized(ctx, ResourceType.GROUP, group_id)
        else ErrorCode.INVALID_GROUP_ID
        if not group_id
        else None
    )
    if refusal is not None:
        return {"throttle_time_ms": 0, "topics": topics_with_error(request["topics"], refusal)}
    producer = (request["producer_id"], request["producer_epoch"])
    groups = coordinator_of(ctx)
    offsets_partition = (OFFSETS_TOPIC, groups.partition_for(group_id))
    error = joined_transaction(ctx, request["transactional_id"], producer, offsets_partition)
    if error is not ErrorCode.NONE:
        return {"throttle_time_ms": 0, "topics": topics_with_error(request["topics"], error)}
    durability = ctx.broker.durability
    allowed, refused = split_authorized_topics(ctx, request["topics"])
    with durability.collecting() as must_sync, replicated_writes(ctx.broker) as acks:
        committed = groups.commit_offsets(
            group_id=group_id,
            generation_id=request.get("generation_id", -1),
            member_id=request.get("member_id", ""),
            group_instance_id=request.get("group_instance_id"),
            retention_time_ms=-1,
            topics=allowed,
            api_version=ctx.api_version,
            producer=producer,
        )
    answer: TxnOffsetCommitResponse = {
        "topics": committed + topics_with_error(refused, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    }
    return answer_when_synced(ctx, must_sync, answer, acks)


# --- EndTxn ------------------------------------------------------------------------------


async def handle_end_txn(ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    """Commit or abort; from v5 (transaction version 2) the epoch moves on with every end and
    the answer says to what."""
    bump = ctx.api_version >= FIRST_END_TXN_EPOCH_BUMP_VERSION
    if not authorized(ctx, ResourceType.TRANSACTIONAL_ID, request["transactional_id"]):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    try:
        producer_id, epoch = await durably(
            ctx,
            lambda: transactions_of(ctx).end_txn(
                request["transactional_id"],
                request["producer_id"],
                request["producer_epoch"],
                request["committed"],
                bump,
            ),
        )
    except TxnError as failure:
        return {"throttle_time_ms": 0, "error_code": error_for(ctx, failure)}
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "producer_id": producer_id,
        "producer_epoch": epoch,
    }


# --- DescribeTransactions / ListTransactions ---------------------------------------------


def denied_transaction(transactional_id: str) -> DescribeTransactionsResponseTransactionStates:
    """A DescribeTransactions entry the principal may not see: Kafka's defaults beside the error."""
    return {
        "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        "transactional_id": transactional_id,
        "transaction_state": "",
        "transaction_timeout_ms": 0,
        "transaction_start_time_ms": 0,
        "producer_id": 0,
        "producer_epoch": 0,
        "topics": [],
    }


async def handle_describe_transactions(
    ctx: RequestContext, request: DescribeTransactionsRequest
) -> DescribeTransactionsResponse:
    coordinator = transactions_of(ctx)
    states = answer_each(
        ctx,
        ResourceType.TRANSACTIONAL_ID,
        request["transactional_ids"],
        lambda allowed: [coordinator.describe(txn_id) for txn_id in allowed],
        denied_transaction,
    )
    for state in states:
        # Only the partitions of topics the principal may describe.
        state["topics"] = [t for t in state["topics"] if authorized(ctx, ResourceType.TOPIC, t["topic"])]
    return {"throttle_time_ms": 0, "transaction_states": states}


async def handle_list_transactions(
    ctx: RequestContext, request: ListTransactionsRequest
) -> ListTransactionsResponse:
    error, unknown, listed = transactions_of(ctx).list_transactions(
        request["state_filters"],
        request["producer_id_filters"],
        request.get("duration_filter", -1),
        request.get("transactional_id_pattern"),
    )
    return {
        "throttle_time_ms": 0,
        "error_code": error,
        "unknown_state_filters": unknown,
        "transaction_states": [
            t for t in listed if authorized(ctx, ResourceType.TRANSACTIONAL_ID, t["transactional_id"])
        ],
    }


HANDLERS = {
    ApiKey.ADD_PARTITIONS_TO_TXN: Served(handle_add_partitions_to_txn),
    ApiKey.ADD_OFFSETS_TO_TXN: Served(handle_add_offsets_to_txn),
    ApiKey.TXN_OFFSET_COMMIT: Served(handle_txn_offset_commit),
    ApiKey.END_TXN: Served(handle_end_txn),
    ApiKey.DESCRIBE_TRANSACTIONS: Served(handle_describe_transactions),
    ApiKey.LIST_TRANSACTIONS: Served(handle_list_transactions),
}
