"""One record batch with some of its records taken out: what the cleaner writes.

Compaction must keep everything a reader or a producer relies on (Kafka's
MemoryRecords.filterTo): the base offset and ``lastOffsetDelta`` (so offsets, and the
idempotent producer's last sequence, do not move), the producer id/epoch/base sequence, the
partition leader epoch, the codec and the timestamp type.  Only the records, their count, the
max timestamp and the CRC change.

Records are handled as bytes, not decoded into ``Record`` objects and encoded again: a kept
record is copied exactly (attributes, headers, timestamp delta), so the only per-record work is
reading the few varints that lead to its key and value.  The one exception is a batch that gets
a *delete horizon* (KIP-534): the first time a batch holding tombstones is cleaned, attributes
bit 6 is set and the base timestamp becomes ``now + delete.retention.ms``; the records'
timestamp deltas are re-based on it so their absolute timestamps stay the same.  A later pass
that finds the horizon passed drops the tombstones.

The 61-byte header is written by ``wire.record_batch.assemble_batch``, the one definition of it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple

from wire.errors import DecodeError
from wire.primitives import encode_varint, encode_varlong, read_varint, read_varlong
from wire.record_batch import HEADER_SIZE, BatchInfo, InvalidRecordError, assemble_batch, compress, decompress
from wire.record_batch_errors import RecordBatchError

logger = logging.getLogger(__name__)

DELETE_HORIZON_BIT = 0x40
_NO_TIMESTAMP = -1
_COMPRESSION_MASK = 0x07


class RecordSpan(NamedTuple):
    """Where one record sits in a decompressed payload, and what compaction decides on."""

    offset: int
    timestamp: int  # CreateTime of the record (base timestamp + delta)
    key: bytes | None
    tombstone: bool
    start: int  # its length varint
    delta_at: int  # its timestamp delta
    offset_delta_at: int  # its offset delta, the first byte after the timestamp delta
    end: int


def delete_horizon(batch: BatchInfo) -> int | None:
    """The batch's delete horizon (ms), or None if no cleaner has set one yet."""
    return batch.base_timestamp if batch.attributes & DELETE_HORIZON_BIT else None


def readable_records(
    data: memoryview | bytes, batch: BatchInfo, limit: int, where: str | None
) -> tuple[bytes, list[RecordSpan]] | None:
    """The decompressed payload and the records of the batch at ``batch.position`` in ``data``,
    or None when they cannot be read within ``limit`` bytes (logged at ERROR naming ``where``;
    ``None`` for a pass that meets the batch again and says so then).

    Why None rather than the error: a batch already on disk that does not decompress within the
    bound (written before ``max.message.bytes`` was lowered, or by an older broker) must not stop
    the cleaner, nor make it hold the memory the batch asks for; the cleaner keeps it unchanged.
    """
    start = batch.position + HEADER_SIZE
    try:
        payload = decompress(batch.compression, memoryview(data)[start : batch.position + batch.size], limit)
        return payload, record_spans(payload, batch)
    except RecordBatchError as exc:
        if where is not None:
            logger.error("%s: keeping the batch at offset %d uncompacted: %s", where, batch.base_offset, exc)
        return None


def record_spans(payload: bytes | memoryview, batch: BatchInfo) -> list[RecordSpan]:
    """Locate every record of ``batch`` in its decompressed ``payload``."""
    spans: list[RecordSpan] = []
    position = 0
    try:
        for _ in range(batch.record_count):
            length, body = read_varint(payload, position)
            end = body + length
            if length < 1 or end > len(payload):
                raise InvalidRecordError(
                    f"invalid record length {length} in batch at offset {batch.base_offset}"
                )
            timestamp_delta, offset_delta_at = read_varlong(payload, body + 1)  # after the attributes
            offset_delta, cursor = read_varint(payload, offset_delta_at)
            key_length, cursor = read_varint(payload, cursor)
            key = payload[cursor : cursor + key_length] if key_length >= 0 else None
            value_length, _ = read_varint(payload, cursor + max(key_length, 0))
            spans.append(
                RecordSpan(
                    batch.base_offset + offset_delta,
                    batch.base_timestamp + timestamp_delta,
                    key,
                    value_length < 0,
                    position,
                    body + 1,
                    offset_delta_at,
                    end,
                )
            )
            position = end
    except DecodeError as exc:
        raise InvalidRecordError(f"malformed record in batch at offset {batch.base_offset}: {exc}") from exc
    if position != len(payload):
        raise InvalidRecordError(
            f"record count does not match the payload of batch at offset {batch.base_offset}"
        )
    return spans


def rebuild(batch: BatchInfo, payload: bytes, kept: Sequence[RecordSpan], horizon_ms: int | None) -> bytes:
    """``batch`` holding only the ``kept`` records (at least one).

    ``horizon_ms`` sets a new delete horizon; without it the base timestamp (and with it every
    kept record's bytes) stays as it was.
    """
    view = memoryview(payload)
    attributes, base_timestamp = batch.attributes, batch.base_timestamp
    records = bytearray()
    if horizon_ms is None:
        for record in kept:
            records += view[record.start : record.end]
    else:
        attributes, base_timestamp = attributes | DELETE_HORIZON_BIT, horizon_ms
        for record in kept:
            delta = encode_varlong(record.timestamp - horizon_ms)
            rest = view[record.offset_delta_at : record.end]
            records += encode_varint(1 + len(delta) + len(rest))
            records += view[record.delta_at - 1 : record.delta_at]  # the record's attributes
            records += delta
            records += rest
    if batch.is_log_append_time:
        max_timestamp = batch.max_timestamp
    else:
        max_timestamp = max(record.timestamp for record in kept)
    body = compress(batch.compression, records)
    return _assemble(batch, attributes, base_timestamp, max_timestamp, body, len(kept))


def empty_batch(batch: BatchInfo) -> bytes:
    """Only the header of ``batch``, no records (Kafka's writeEmptyHeader): kept when its offsets
    or its producer's sequence numbers must survive although every record is gone."""
    attributes = batch.attributes & ~(_COMPRESSION_MASK | DELETE_HORIZON_BIT)
    return _assemble(batch, attributes, _NO_TIMESTAMP, batch.max_timestamp, b"", 0)


def _assemble(
    batch: BatchInfo, attributes: int, base_timestamp: int, max_timestamp: int, body: bytes, count: int
) -> bytes:
    """``batch``'s header with new attributes, timestamps and record count over ``body``."""
    return bytes(
        assemble_batch(
            base_offset=batch.base_offset,
            partition_leader_epoch=batch.partition_leader_epoch,
            attributes=attributes,
            last_offset_delta=batch.last_offset_delta,
            base_timestamp=base_timestamp,
            max_timestamp=max_timestamp,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            record_count=count,
            payload=body,
        )
    )
