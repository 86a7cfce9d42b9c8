"""Produce: Kafka's KafkaApis.handleProduceRequest — check the request, resolve and authorize
its topics, and have each partition's batch validated (``broker.services.storage.batch_validation``,
Kafka's LogValidator) and appended (``broker.services.storage.partition_writes``, Kafka's
ReplicaManager.appendRecords: durability, replication and waiting fetches follow from there).

Any defect refuses the partition's batch and stores nothing; an uncompressed batch is written
from the request's own buffer. Kafka 4 rules apply: exactly one v2 batch per partition
(v3+), Produce v0-2 refused with ``UNSUPPORTED_VERSION`` (still advertised for old librdkafka
feature checks), no appends to internal topics, and ``acks=0`` answered with silence — or, on
error, a closed connection, which is the only way Kafka can tell such a producer something
went wrong.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import authorized
from broker.requests.api_support import Served
from broker.requests.context import PendingResponse, RequestContext
from broker.requests.coordinators import joined_transaction
from broker.requests.dispatch import CloseConnection
from broker.requests.error_mapping import error_code_of
from broker.requests.leader_hints import leader_hint, node_endpoints
from broker.requests.txn_verification import verified_elsewhere
from broker.requests.version_rules import FIRST_TOPIC_ID_VERSION
from broker.services.replication.acks import AckWait, min_isr_refusal
from broker.services.security.acl_model import ResourceType
from broker.services.storage.batch_validation import Refused, checked_batch
from broker.services.storage.partition_writes import (
    PendingWrites,
    append_produced,
    leader_epoch_of,
    replicated_ack,
    replication_deadline,
)
from log.errors import LogError
from log.partition_log import PartitionLog
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.record_batch_errors import RecordBatchError, RecordErrors

if TYPE_CHECKING:
    from wire.messages import (
        ProduceRequest,
        ProduceRequestTopicData,
        ProduceResponse,
        ProduceResponseNodeEndpoints,
        ProduceResponseRecordErrors,
        ProduceResponseResponses,
    )
    from wire.messages import ProduceResponsePartitionResponses as PartitionResponse

MIN_ACCEPTED_VERSION = 3
FIRST_LEADER_HINT_VERSION = 10  # KIP-951: current_leader and node_endpoints


def partition_error(index: int, code: ErrorCode, message: str | None = None) -> PartitionResponse:
    return {"index": index, "error_code": code, "base_offset": -1, "error_message": message}


def record_errors_response(index: int, exc: RecordErrors) -> PartitionResponse:
    """INVALID_RECORD with one ``record_errors`` entry per bad record and Kafka's summary."""
    errors: list[ProduceResponseRecordErrors] = [
        {"batch_index": i, "batch_index_error_message": exc.reason} for i in exc.indices
    ]
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{exc.reason}')" for i in exc.indices[:3])
    message = (
        f"One or more records have been rejected due to {len(exc.indices)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]"
    )
    return partition_error(index, ErrorCode.INVALID_RECORD, message) | {"record_errors": errors}


def append_partition(
    ctx: RequestContext,
    topic: str,
    index: int,
    records: memoryview | None,
    now_ms: int,
    transactional_id: str | None,
    verdict: ErrorCode | None = None,
) -> tuple[PartitionResponse, bool]:
    """Validate and append one partition's record set: (partition response, whether its
    acknowledgement must wait for a sync, see ``broker.services.storage.partition_writes``).
    ``verdict``: what the transaction's coordinator on another broker said of a transactional
    write here (``broker.requests.txn_verification``)."""
    partition_log = ctx.broker.partitions.get(topic, index)
    if partition_log is None:
        return partition_error(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), False
    if records is None or len(records) == 0:
        return partition_error(index, ErrorCode.INVALID_RECORD, "Produce request has no record batch"), False
    try:
        records, batches = checked_batch(records, topic, index, partition_log.config, now_ms)
    except RecordErrors as exc:
        return record_errors_response(index, exc), False
    except RecordBatchError as exc:
        return partition_error(index, error_code_of(exc), str(exc)), False
    except Refused as exc:
        return partition_error(index, exc.code, str(exc)), False
    batch = batches[0]
    if batch.is_transactional:
        producer = (batch.producer_id, batch.producer_epoch)
        error = (
            verdict
            if verdict is not None
            else joined_transaction(ctx, transactional_id, producer, (topic, index))
        )
        if error is not ErrorCode.NONE:
            return partition_error(
                index, error, f"{topic}-{index} is not part of the producer's transaction"
            ), False
    epoch = leader_epoch_of(ctx.broker, topic, index)
    try:
        appended, must_sync = append_produced(
            ctx.broker, (topic, index), partition_log, records, batches, epoch, now_ms
        )
    except LogError as exc:
        return partition_error(index, error_code_of(exc), str(exc)), False
    return {
        "index": index,
        "error_code": ErrorCode.NONE,
        "base_offset": appended.first_offset,
        "log_append_time_ms": appended.log_append_time,
        "log_start_offset": appended.log_start_offset,
    }, must_sync


def replica_refusal(ctx: RequestContext, topic: str, index: int, acks: int) -> PartitionResponse | None:
    """In a cluster: the partition's refusal when this broker does not lead it (with KIP-951's
    leader hint), or when acks=all finds the ISR below ``min.insync.replicas`` before appending."""
    replicas = ctx.broker.replicas
    if replicas is None:
        return None
    key = (topic, index)
    partition_log = ctx.broker.partitions.get(topic, index)
    if partition_log is None:
        return None  # UNKNOWN_TOPIC_OR_PARTITION, from ``append_partition``
    if replicas.leader(key) is None:
        refused = partition_error(
            index,
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
            f"Leader not local for partition {topic}-{index} on broker {ctx.broker.node_id}",
        )
        hint = leader_hint(replicas, key, refused["error_code"])
        if hint is not None:
            refused["current_leader"] = hint
        return refused
    if acks == -1:
        problem = min_isr_refusal(replicas, key, partition_log.config.min_insync_replicas)
        if problem is not None:
            return partition_error(index, ErrorCode.NOT_ENOUGH_REPLICAS, problem)
    return None


def resolve_topic(
    ctx: RequestContext, topic_data: ProduceRequestTopicData
) -> tuple[str, tuple[ErrorCode, str | None] | None]:
    """The topic's name (v13+ sends its id instead) and why nothing may be appended to it."""
    if ctx.api_version < FIRST_TOPIC_ID_VERSION:
        name = topic_data["name"]
        info = ctx.broker.topics.get(name)
    else:
        info = ctx.broker.topics.by_id(topic_data["topic_id"])
        if info is None:
            return "", (ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")
        name = info.name
    if not authorized(ctx, ResourceType.TOPIC, name):
        return name, (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    if info is not None and info.internal:
        return name, (ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {name}")
    return name, None


def logs_to_mark(
    ctx: RequestContext,
    resolved: list[tuple[ProduceRequestTopicData, str, tuple[ErrorCode, str | None] | None]],
) -> list[PartitionLog]:
    """The logs the request may append to whose checkpoint still says "clean": each must be
    marked unclean, durably, before its first append (``Durability.mark_unclean``)."""
    found: dict[tuple[str, int], PartitionLog] = {}
    for topic_data, name, topic_refusal in resolved:
        if topic_refusal is not None:
            continue
        for partition in topic_data["partition_data"]:
            partition_log = ctx.broker.partitions.get(name, partition["index"])
            if partition_log is not None and partition_log.needs_unclean_mark:
                found[(name, partition["index"])] = partition_log
    return list(found.values())


async def handle_produce(
    ctx: RequestContext, request: ProduceRequest
) -> ProduceResponse | PendingResponse | None:
    acks = request["acks"]
    refusal: tuple[ErrorCode, str | None] | None = None
    transactional_id = request["transactional_id"]
    if ctx.api_version < MIN_ACCEPTED_VERSION:
        refusal = (ErrorCode.UNSUPPORTED_VERSION, "Produce v0-2 (message format v0/v1) is not supported")
    elif acks not in (0, 1, -1):
        refusal = (ErrorCode.INVALID_REQUIRED_ACKS, f"acks={acks} is not one of 0, 1, -1 (all)")
    elif transactional_id is not None and not authorized(
        ctx, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        refusal = (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
    resolved = [(topic_data, *resolve_topic(ctx, topic_data)) for topic_data in request["topic_data"]]
    verdicts: dict[tuple[str, int], ErrorCode] = {}
    if refusal is None:
        await ctx.broker.durability.mark_unclean(logs_to_mark(ctx, resolved))
    if refusal is None and transactional_id and ctx.broker.cluster is not None:
        # Only a cluster member can be asked to verify for a coordinator elsewhere (KIP-890).
        verdicts = await verified_elsewhere(
            ctx,
            transactional_id,
            [
                (name, partition["index"], partition["records"])
                for topic_data, name, topic_refusal in resolved
                if topic_refusal is None
                for partition in topic_data["partition_data"]
            ],
        )
    now_ms = ctx.broker.clock()
    deadline = replication_deadline(ctx.broker, request["timeout_ms"])
    responses: list[tuple[str | None, ProduceResponseResponses]] = []
    must_sync: list[tuple[str, int]] = []
    ack_waits: list[AckWait] = []
    failed = False
    for topic_data, name, topic_refusal in resolved:
        partitions: list[PartitionResponse] = []
        for partition in topic_data["partition_data"]:
            refused = refusal or topic_refusal
            key = (name, partition["index"])
            if refused:
                result = partition_error(partition["index"], *refused)
            elif (replicated := replica_refusal(ctx, name, partition["index"], acks)) is not None:
                result = replicated
            else:
                result, wait = append_partition(
                    ctx,
                    name,
                    partition["index"],
                    partition["records"],
                    now_ms,
                    transactional_id,
                    verdicts.get(key),
                )
                if wait:
                    must_sync.append(key)
                if result["error_code"] == ErrorCode.NONE and (
                    acked := replicated_ack(ctx.broker, key, acks)
                ):
                    ack_waits.append(acked)
            if result["error_code"] != ErrorCode.NONE:
                failed = True
            partitions.append(result)
        topic_response: ProduceResponseResponses = {"partition_responses": partitions}
        if ctx.api_version >= FIRST_TOPIC_ID_VERSION:
            topic_response["topic_id"] = topic_data["topic_id"]
        else:
            topic_response["name"] = name
        responses.append((name, topic_response))
    if not must_sync and not ack_waits:
        return _answer(ctx, acks, responses, failed)
    pending = PendingWrites(ctx.broker, must_sync, ack_waits, deadline)

    async def after_writes() -> ProduceResponse | None:
        failures = await pending.failures()
        for (topic, index), (code, message) in failures.items():
            _replace(responses, topic, partition_error(index, code, message))
        return _answer(ctx, acks, responses, failed or bool(failures))

    return PendingResponse(after_writes, pending.ready)


def _replace(
    responses: list[tuple[str | None, ProduceResponseResponses]], topic: str, answer: PartitionResponse
) -> None:
    """Put ``answer`` in place of its partition's response in ``topic``'s entry."""
    for name, topic_response in responses:
        if name == topic:
            topic_response["partition_responses"] = [
                answer if p["index"] == answer["index"] else p for p in topic_response["partition_responses"]
            ]


def _answer(
    ctx: RequestContext, acks: int, responses: list[tuple[str | None, ProduceResponseResponses]], failed: bool
) -> ProduceResponse | None:
    """The Produce response; none for acks=0, whose failures can only close the connection.
    In a cluster, v10+ lists where the leaders named in KIP-951 hints listen."""
    if acks == 0:
        if failed:
            raise CloseConnection("an acks=0 produce request failed")
        return None
    body: ProduceResponse = {"responses": [response for _, response in responses], "throttle_time_ms": 0}
    partitions = (p for _, r in responses for p in r["partition_responses"])
    endpoints: list[ProduceResponseNodeEndpoints] = node_endpoints(ctx, partitions, FIRST_LEADER_HINT_VERSION)
    if endpoints:
        body["node_endpoints"] = endpoints
    return body


HANDLERS = {ApiKey.PRODUCE: Served(handle_produce)}
