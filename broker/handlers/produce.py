"""Produce: validate record batches from their headers and append them to partition logs.

The hot path never decodes a record: a batch is checked from its 61-byte header and one
CRC-32C (``wire.record_batch.scan_batches``), then written from the request's own buffer.
Kafka 4 rules apply: exactly one v2 batch per partition (v3+), Produce v0-2 refused with
``UNSUPPORTED_VERSION`` (still advertised for old librdkafka feature checks), no appends to
internal topics, and ``acks=0`` answered with silence — or, on error, a closed connection,
which is the only way Kafka can tell such a producer something went wrong.  The one place
records are looked at is a compacted topic, which (like Kafka's LogValidator) refuses records
without a key: compaction could never decide about them; a topic with its own
``compression.type`` or a past bound on timestamps pays for decoding too.
"""

from __future__ import annotations

import time
from typing import Any

from broker.context import RequestContext
from broker.dispatch import CloseConnection
from broker.error_mapping import error_code_of
from log.compacted_batch import payload_of, record_spans
from log.config import LONG_MAX, LogConfig
from log.errors import LogError
from wire.error_codes import ErrorCode
from wire.record_batch import (
    BatchInfo,
    Compression,
    RecordBatchError,
    decode_records,
    encode_batch,
    scan_batches,
)

PRODUCE = 0
MIN_ACCEPTED_VERSION = 3
FIRST_TOPIC_ID_VERSION = 13


def partition_error(index: int, code: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"index": index, "error_code": code, "base_offset": -1, "error_message": message}


def timestamp_error(records: memoryview, batch: BatchInfo, now_ms: int, config: LogConfig) -> str | None:
    """Kafka's CreateTime bounds (message.timestamp.before/after.max.ms) for every record.

    A LogAppendTime topic ignores the producer's clock entirely.  The future bound holds for
    every record when it holds for the batch's max timestamp, so by default (no past bound)
    nothing is decoded; only a topic that sets ``message.timestamp.before.max.ms`` pays for
    reading each record's timestamp, because the header does not carry the minimum.
    """
    if config.log_append_time:
        return None
    after_max, before_max = config.message_timestamp_after_max_ms, config.message_timestamp_before_max_ms
    if batch.max_timestamp - now_ms > after_max:
        return f"Timestamp {batch.max_timestamp} of a record is more than {after_max} ms in the future"
    if before_max >= LONG_MAX or now_ms - batch.base_timestamp > before_max:
        oldest = batch.base_timestamp
    else:
        oldest = min(span.timestamp for span in record_spans(payload_of(records, batch), batch))
    if now_ms - oldest > before_max:
        return f"Timestamp {oldest} of a record is more than {before_max} ms in the past"
    return None


TOPIC_CODECS = {
    "uncompressed": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}


def recompress(records: memoryview, batch: BatchInfo, compression_type: str) -> memoryview | None:
    """The batch rewritten with the topic's ``compression.type``, or None to keep it as sent.

    Like Kafka, a topic that names a codec stores every batch with it; the default
    (``producer``) keeps the producer's bytes untouched, which is the only fast path.
    Producer id, epoch and sequence survive, so idempotence is unaffected.
    """
    codec = TOPIC_CODECS.get(compression_type)
    if codec is None or codec == batch.compression:
        return None
    rebuilt = encode_batch(
        decode_records(records, batch),
        compression=codec,
        transactional=batch.is_transactional,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        last_offset_delta=batch.last_offset_delta,
    )
    return memoryview(rebuilt)


def keyless_records_error(
    topic: str, index: int, records: memoryview, batch: BatchInfo
) -> dict[str, Any] | None:
    """INVALID_RECORD with one record error per keyless record, as Kafka answers for a
    compacted topic; None when every record has a key."""
    try:
        keyless = [i for i, r in enumerate(record_spans(payload_of(records, batch), batch)) if r.key is None]
    except RecordBatchError as exc:
        return partition_error(index, error_code_of(exc), str(exc))
    if not keyless:
        return None
    reason = f"Compacted topic cannot accept message without key in topic partition {topic}-{index}"
    errors = [{"batch_index": i, "batch_index_error_message": reason} for i in keyless]
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{reason}')" for i in keyless[:3])
    message = (
        f"One or more records have been rejected due to {len(keyless)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]"
    )
    return partition_error(index, ErrorCode.INVALID_RECORD, message) | {"record_errors": errors}


def append_partition(
    ctx: RequestContext, topic: str, index: int, records: memoryview | None, now_ms: int
) -> tuple[int, dict[str, Any]]:
    """Validate and append one partition's record set: (records appended, partition response)."""
    broker = ctx.broker
    partition_log = broker.partitions.get(topic, index)
    if partition_log is None:
        return 0, partition_error(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if records is None or len(records) == 0:
        return 0, partition_error(index, ErrorCode.INVALID_RECORD, "Produce request has no record batch")
    try:
        batches = scan_batches(records)
    except RecordBatchError as exc:
        return 0, partition_error(index, error_code_of(exc), str(exc))
    if len(batches) != 1:
        return 0, partition_error(
            index,
            ErrorCode.INVALID_RECORD,
            "Produce requests with version 3 and above must contain exactly one record batch per partition",
        )
    config = partition_log.config
    try:
        converted = recompress(records, batches[0], config.compression_type)
    except RecordBatchError as exc:
        return 0, partition_error(index, error_code_of(exc), str(exc))
    if converted is not None:
        records, batches = converted, scan_batches(converted)
    if batches[0].size > config.max_message_bytes:
        return 0, partition_error(
            index,
            ErrorCode.MESSAGE_TOO_LARGE,
            f"The record batch is {batches[0].size} bytes, "
            f"larger than max.message.bytes={config.max_message_bytes}",
        )
    try:
        problem = timestamp_error(records, batches[0], now_ms, config)
    except RecordBatchError as exc:
        return 0, partition_error(index, error_code_of(exc), str(exc))
    if problem:
        return 0, partition_error(index, ErrorCode.INVALID_TIMESTAMP, problem)
    if config.compact and (rejected := keyless_records_error(topic, index, records, batches[0])):
        return 0, rejected
    info = broker.topics.get(topic)
    try:
        appended = partition_log.append(records, batches, info.leader_epoch if info else 0, now_ms)
    except LogError as exc:
        return 0, partition_error(index, error_code_of(exc), str(exc))
    broker.appends.notify((topic, index))
    return batches[0].record_count, {
        "index": index,
        "error_code": ErrorCode.NONE,
        "base_offset": appended.first_offset,
        "log_append_time_ms": appended.log_append_time,
        "log_start_offset": appended.log_start_offset,
    }


def resolve_topic(
    ctx: RequestContext, topic_data: dict[str, Any]
) -> tuple[str, tuple[ErrorCode, str] | None]:
    """The topic's name (v13+ sends its id instead) and why nothing may be appended to it."""
    if ctx.api_version < FIRST_TOPIC_ID_VERSION:
        name = topic_data["name"]
        info = ctx.broker.topics.get(name)
    else:
        info = ctx.broker.topics.by_id(topic_data["topic_id"])
        if info is None:
            return "", (ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")
        name = info.name
    if info is not None and info.internal:
        return name, (ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {name}")
    return name, None


async def handle_produce(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any] | None:
    acks = request["acks"]
    refusal: tuple[ErrorCode, str] | None = None
    if ctx.api_version < MIN_ACCEPTED_VERSION:
        refusal = (ErrorCode.UNSUPPORTED_VERSION, "Produce v0-2 (message format v0/v1) is not supported")
    elif acks not in (0, 1, -1):
        refusal = (ErrorCode.INVALID_REQUIRED_ACKS, f"acks={acks} is not one of 0, 1, -1 (all)")
    elif request.get("transactional_id") is not None:
        refusal = (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactions are not supported yet")
    now_ms = int(time.time() * 1000)
    responses: list[tuple[str | None, dict[str, Any]]] = []
    touched = []
    failed = False
    for topic_data in request["topic_data"]:
        name, topic_refusal = resolve_topic(ctx, topic_data)
        partitions = []
        for partition in topic_data["partition_data"]:
            appended = 0
            if refusal or topic_refusal:
                result = partition_error(partition["index"], *(refusal or topic_refusal))
            else:
                appended, result = append_partition(
                    ctx, name, partition["index"], partition["records"], now_ms
                )
            if result["error_code"] == ErrorCode.NONE:
                touched.append(((name, partition["index"]), appended))
            else:
                failed = True
            partitions.append(result)
        key = (
            {"topic_id": topic_data["topic_id"]}
            if ctx.api_version >= FIRST_TOPIC_ID_VERSION
            else {"name": name}
        )
        responses.append((name, key | {"partition_responses": partitions}))
    if touched:
        for topic, index in await ctx.broker.durability.after_append(touched):
            failed = True
            storage_error = partition_error(index, ErrorCode.KAFKA_STORAGE_ERROR, "fsync failed")
            for name, topic_response in responses:
                if name == topic:
                    topic_response["partition_responses"] = [
                        storage_error if p["index"] == index else p
                        for p in topic_response["partition_responses"]
                    ]
    if acks == 0:
        if failed:
            raise CloseConnection("an acks=0 produce request failed")
        return None
    return {"responses": [response for _, response in responses], "throttle_time_ms": 0}


HANDLERS = {PRODUCE: handle_produce}
