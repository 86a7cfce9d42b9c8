"""Kafka's LogValidator for a produced record batch: every check before it may be appended.

A batch is checked from its 61-byte header and one CRC-32C (``wire.record_batch.scan_batches``),
then its records are walked in C (``wire.record_validation``: framing, count, and for
compressed batches contiguous offsets), after decompressing with a hard bound on the output
(``wire.bounded_decompress``, 64 x ``max.message.bytes``) so a decompression bomb is refused
without the memory it asks for. Records are decoded in Python only where a topic needs them: a
compacted topic refuses records without a key (compaction could never decide about them); a
topic with its own ``compression.type`` or a past bound on timestamps pays for decoding too.
"""

from __future__ import annotations

from log.compacted_batch import record_spans
from log.config import LONG_MAX, LogConfig
from wire.bounded_decompress import decompressed_limit
from wire.error_codes import ErrorCode
from wire.record_batch import BatchInfo, Compression, encode_batch, records_of_payload, scan_batches
from wire.record_batch_errors import RecordErrors
from wire.record_validation import checked_payload


def timestamp_error(
    payload: bytes | memoryview, batch: BatchInfo, now_ms: int, config: LogConfig
) -> str | None:
    """Kafka's CreateTime bounds (message.timestamp.before/after.max.ms) for every record.

    A LogAppendTime topic ignores the producer's clock entirely.  The future bound holds for
    every record when it holds for the batch's max timestamp, so by default (no past bound)
    nothing is decoded; only a topic that sets ``message.timestamp.before.max.ms`` pays for
    reading each record's timestamp (from ``payload``, the decompressed records), because the
    header does not carry the minimum.
    """
    if config.log_append_time:
        return None
    after_max, before_max = config.message_timestamp_after_max_ms, config.message_timestamp_before_max_ms
    if batch.max_timestamp - now_ms > after_max:
        return f"Timestamp {batch.max_timestamp} of a record is more than {after_max} ms in the future"
    if before_max >= LONG_MAX or now_ms - batch.base_timestamp > before_max:
        oldest = batch.base_timestamp
    else:
        oldest = min(span.timestamp for span in record_spans(payload, batch))
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


def recompress(payload: bytes | memoryview, batch: BatchInfo, compression_type: str) -> memoryview | None:
    """The batch rewritten with the topic's ``compression.type``, or None to keep it as sent.

    Like Kafka, a topic that names a codec stores every batch with it; the default
    (``producer``) keeps the producer's bytes untouched, which is the only fast path.
    Producer id, epoch and sequence survive, so idempotence is unaffected.
    """
    codec = TOPIC_CODECS.get(compression_type)
    if codec is None or codec == batch.compression:
        return None
    rebuilt = encode_batch(
        records_of_payload(bytes(payload), batch),
        compression=codec,
        transactional=batch.is_transactional,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        last_offset_delta=batch.last_offset_delta,
    )
    return memoryview(rebuilt)


def keyless_records(payload: bytes | memoryview, batch: BatchInfo, topic: str, index: int) -> None:
    """Raise ``RecordErrors`` for the records without a key, as Kafka does on a compacted
    topic: compaction could never decide about them."""
    keyless = [i for i, r in enumerate(record_spans(payload, batch)) if r.key is None]
    if keyless:
        raise RecordErrors(
            keyless, f"Compacted topic cannot accept message without key in topic partition {topic}-{index}"
        )


class Refused(Exception):
    """A partition's batch is refused with this error code and message (not a batch defect)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def checked_batch(
    records: memoryview, topic: str, index: int, config: LogConfig, now_ms: int
) -> tuple[memoryview, list[BatchInfo]]:
    """The record set to append (the client's, or rewritten in the topic's codec) once every
    check Kafka makes has passed; raises ``RecordBatchError`` or ``Refused`` otherwise.

    Order as in Kafka's UnifiedLog/LogValidator: one batch, size, header and CRC rules, then
    the records themselves (decompressed with a bound derived from ``max.message.bytes``,
    framing and count), then timestamps and keys, then the size of the converted batch.
    """
    batches = scan_batches(records)  # exactly one batch, as Kafka requires from Produce v3 on
    batch = batches[0]
    too_large(batch, config)
    payload = checked_payload(records, batch, decompressed_limit(config.max_message_bytes))
    problem = timestamp_error(payload, batch, now_ms, config)
    if problem:
        raise Refused(ErrorCode.INVALID_TIMESTAMP, problem)
    if config.compact:
        keyless_records(payload, batch, topic, index)
    converted = recompress(payload, batch, config.compression_type)
    if converted is None:
        return records, batches
    batches = scan_batches(converted)
    too_large(batches[0], config)
    return converted, batches


def too_large(batch: BatchInfo, config: LogConfig) -> None:
    if batch.size > config.max_message_bytes:
        raise Refused(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"The record batch is {batch.size} bytes, larger than max.message.bytes={config.max_message_bytes}",
        )
