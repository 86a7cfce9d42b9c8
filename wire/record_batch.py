"""Kafka record batch v2 (magic 2): header validation, in-place patching, full encode/decode.

Why this module is split the way it is: the fetch hot path never looks at individual records
(DESIGN.md, decision 1), and the produce path only walks them in C (``wire.record_validation``,
as Kafka's LogValidator, because a correct CRC over garbage must not be stored), so the header
is validated here from its 61 bytes plus one CRC-32C call per batch, and the broker only ever
*patches* fields in place (base offset, partition leader epoch, LogAppendTime).  Decoding
records in Python is for tests, tools, compaction and the rare lookups that need a record's
exact offset (ListOffsets by timestamp); it lives here too so that there is exactly one
definition of the format.  Decompression is always bounded (``wire.bounded_decompress``).

Batch header layout (big-endian, 61 bytes)::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 | crc uint32 |
    attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64 |
    producerId int64 | producerEpoch int16 | baseSequence int32 | recordsCount int32

``batchLength`` counts the bytes after itself; the CRC (CRC-32C) covers attributes..end, so the
base offset and the partition leader epoch can be assigned without recomputing it.

Every failure is one of two typed errors (``wire.record_batch_errors``, re-exported here)
carrying the Kafka error name the broker answers with:
``CorruptRecordError`` (CORRUPT_MESSAGE: bytes damaged, CRC mismatch, torn batch) and
``InvalidRecordError`` (INVALID_RECORD: well-formed bytes that break the protocol's rules).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

import cramjam
from crc32c import crc32c

from wire.bounded_decompress import DEFAULT_DECOMPRESSED_LIMIT, XERIAL_HEADER, bounded_decompress
from wire.errors import DecodeError
from wire.primitives import INT32_MAX, encode_varint, encode_varlong, read_varint, read_varlong
from wire.record_batch_errors import CorruptRecordError, InvalidRecordError, RecordBatchError

__all__ = [
    "BatchInfo",
    "CorruptRecordError",
    "Compression",
    "HEADER_SIZE",
    "InvalidRecordError",
    "Record",
    "RecordBatchError",
    "compress",
    "assemble_batch",
    "decode_records",
    "decompress",
    "records_of_payload",
    "encode_batch",
    "parse_batch_header",
    "read_batch_header",
    "scan_batches",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
    "verify_crc",
]


_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61

# Byte offsets of the fields that get patched or checksummed.
_BASE_OFFSET_AT = 0
_LEADER_EPOCH_AT = 12
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35
# batchLength counts everything after itself.
_LOG_OVERHEAD = 12
_MIN_BATCH_LENGTH = HEADER_SIZE - _LOG_OVERHEAD

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")

NO_TIMESTAMP = -1


class Compression:
    """Codec ids of attributes bits 0-2 (a namespace of ints, so comparisons stay cheap)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class BatchInfo(NamedTuple):
    """What the header of one batch says, plus where the batch sits in the scanned buffer.

    A NamedTuple because scanning builds one per batch on the produce path and tuples are the
    cheapest Python object to construct from ``struct.unpack_from``.
    """

    position: int
    size: int
    base_offset: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def compression(self) -> int:
        return self.attributes & _COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & _TIMESTAMP_TYPE_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset after this batch: what the log end offset becomes once it is appended."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def end_position(self) -> int:
        return self.position + self.size

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record; sequences wrap from int32 max back to 0, as Kafka's do."""
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (INT32_MAX + 1)


def parse_batch_header(buf: memoryview | bytes | bytearray, position: int) -> BatchInfo:
    """Parse the header at ``position`` and check what it alone can prove: length and magic.

    The batch body need not be in ``buf``: the log walks file headers through small reads and
    checks the end against the segment size itself.
    """
    if len(buf) - position < HEADER_SIZE:
        raise CorruptRecordError(
            f"record batch at byte {position} is cut short: {len(buf) - position} bytes, "
            f"a header alone is {HEADER_SIZE}"
        )
    fields = _HEADER.unpack_from(buf, position)
    length = fields[1]
    if length < _MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"record batch length {length} is below the minimum {_MIN_BATCH_LENGTH}")
    magic = fields[3]
    if magic != 2:
        if magic in (0, 1):
            raise InvalidRecordError(f"record batches must use magic 2, got magic {magic}")
        raise CorruptRecordError(f"invalid magic {magic} in record batch")
    return BatchInfo(position, length + _LOG_OVERHEAD, fields[0], *fields[2:])


def read_batch_header(buf: memoryview | bytes | bytearray, position: int) -> BatchInfo:
    """``parse_batch_header`` plus a check that the whole batch is inside ``buf``; no CRC check."""
    batch = parse_batch_header(buf, position)
    if position + batch.size > len(buf):
        raise CorruptRecordError(
            f"record batch at byte {position} declares {batch.size} bytes, only {len(buf) - position} remain"
        )
    return batch


def verify_crc(buf: memoryview | bytes | bytearray, batch: BatchInfo) -> None:
    """Check the stored CRC-32C against attributes..end; raise ``CorruptRecordError`` if it differs."""
    view = memoryview(buf)
    actual = crc32c(view[batch.position + _ATTRIBUTES_AT : batch.position + batch.size])
    if actual != batch.crc:
        raise CorruptRecordError(
            f"record batch at byte {batch.position} is corrupt: "
            f"stored crc {batch.crc:#010x}, computed {actual:#010x}"
        )


def _check_client_rules(batch: BatchInfo) -> None:
    """The rules Kafka applies to batches that come from producers (LogValidator, UnifiedLog)."""
    if batch.base_offset != 0:
        raise InvalidRecordError(f"the base offset of a produced batch must be 0, got {batch.base_offset}")
    if batch.record_count <= 0:
        raise InvalidRecordError(f"invalid record count {batch.record_count}")
    if batch.record_count != batch.last_offset_delta + 1:
        raise InvalidRecordError(
            f"inconsistent batch: lastOffsetDelta {batch.last_offset_delta} but {batch.record_count} records"
        )
    if batch.is_control:
        raise InvalidRecordError("clients are not allowed to write control batches")
    if batch.producer_id >= 0 and batch.base_sequence < 0:
        raise InvalidRecordError(
            f"invalid sequence {batch.base_sequence} in a batch from producer {batch.producer_id}"
        )
    if batch.compression > Compression.ZSTD:
        raise InvalidRecordError(f"unknown compression codec id {batch.compression}")


def scan_batches(buf: memoryview | bytes | bytearray, *, from_client: bool = True) -> list[BatchInfo]:
    """Validate every batch in ``buf`` from its header and one CRC call; never touch records.

    ``from_client=True`` applies the producer rules as Kafka does for a Produce request: exactly
    one batch, base offset 0, ``recordsCount == lastOffsetDelta + 1 > 0``, no control batches,
    a sequence number when there is a producer id, a known codec.  With ``from_client=False``
    (replication, internal writers, recovery tools) only the structure and CRC are checked, so
    compacted batches (gaps in offsets, zero records) pass.
    """
    batches: list[BatchInfo] = []
    position = 0
    end = len(buf)
    while position < end:
        batch = read_batch_header(buf, position)
        verify_crc(buf, batch)
        batches.append(batch)
        position += batch.size
    if from_client:
        if len(batches) != 1:
            raise InvalidRecordError(
                f"a produce request must carry exactly one record batch per partition, got {len(batches)}"
            )
        _check_client_rules(batches[0])
    return batches


def set_base_offset(buf: memoryview | bytearray, batch: BatchInfo, base_offset: int) -> None:
    """Assign the batch's base offset in place (not covered by the CRC)."""
    _INT64.pack_into(buf, batch.position + _BASE_OFFSET_AT, base_offset)


def set_partition_leader_epoch(buf: memoryview | bytearray, batch: BatchInfo, epoch: int) -> None:
    """Stamp the leader epoch in place (not covered by the CRC, precisely so this is cheap)."""
    _INT32.pack_into(buf, batch.position + _LEADER_EPOCH_AT, epoch)


def set_log_append_time(buf: memoryview | bytearray, batch: BatchInfo, timestamp: int) -> None:
    """Turn the batch into a LogAppendTime batch: set the type bit and max timestamp, redo the CRC.

    Readers take every record's timestamp from maxTimestamp when the bit is set, so the records
    themselves stay untouched (as Kafka does for magic 2).
    """
    view = memoryview(buf)
    start = batch.position
    _INT16.pack_into(view, start + _ATTRIBUTES_AT, batch.attributes | _TIMESTAMP_TYPE_BIT)
    _INT64.pack_into(view, start + _MAX_TIMESTAMP_AT, timestamp)
    _UINT32.pack_into(view, start + _CRC_AT, crc32c(view[start + _ATTRIBUTES_AT : start + batch.size]))


# --------------------------------------------------------------------------------------------
# Compression.

_XERIAL_BLOCK = 32 * 1024


def _snappy_compress(data: bytes | bytearray | memoryview) -> bytes:
    """Write xerial framing like the Java client, so every Kafka client can read it back."""
    view = memoryview(data)
    out = bytearray(XERIAL_HEADER)
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


def _lz4_compress(data: bytes | bytearray | memoryview) -> bytes:
    """LZ4 frame format with independent blocks: Kafka's Java reader rejects linked blocks."""
    compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
    compressor.compress(bytes(data))
    return bytes(compressor.finish())


def compress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """Compress a records payload with a Kafka codec id (``Compression.*``)."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.compress(bytes(data)))
    if codec == Compression.SNAPPY:
        return _snappy_compress(data)
    if codec == Compression.LZ4:
        return _lz4_compress(data)
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(bytes(data)))
    raise InvalidRecordError(f"unknown compression codec id {codec}")


def decompress(codec: int, data: bytes | memoryview, limit: int = DEFAULT_DECOMPRESSED_LIMIT) -> bytes:
    """Inverse of ``compress``, never more than ``limit`` bytes of output (see
    ``wire.bounded_decompress``); damaged or oversized input raises ``CorruptRecordError``."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec > Compression.ZSTD:
        raise InvalidRecordError(f"unknown compression codec id {codec}")
    return bounded_decompress(codec, data, limit)


# --------------------------------------------------------------------------------------------
# Records.

Header = tuple[str, bytes | None]


class Record(NamedTuple):
    """One record with absolute offset and timestamp (what a consumer sees)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


def _encode_bytes(value: bytes | None, out: bytearray) -> None:
    if value is None:
        out += encode_varint(-1)
    else:
        out += encode_varint(len(value))
        out += value


def _encode_record(record: Record, base_offset: int, base_timestamp: int, out: bytearray) -> None:
    body = bytearray(b"\x00")  # record attributes: unused, always 0
    body += encode_varlong(record.timestamp - base_timestamp)
    body += encode_varint(record.offset - base_offset)
    _encode_bytes(record.key, body)
    _encode_bytes(record.value, body)
    body += encode_varint(len(record.headers))
    for name, value in record.headers:
        _encode_bytes(name.encode(), body)
        _encode_bytes(value, body)
    out += encode_varint(len(body))
    out += body


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    compression: int = Compression.NONE,
    log_append_time: bool = False,
    transactional: bool = False,
    control: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    last_offset_delta: int | None = None,
) -> bytearray:
    """Build one complete batch (CRC included); offsets/timestamps are stored as deltas.

    ``last_offset_delta`` may exceed the records' span (or the batch may be empty) to express
    what compaction leaves behind; by default it is the last record's delta.
    """
    base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    if last_offset_delta is None:
        last_offset_delta = records[-1].offset - base_offset if records else 0
    body = bytearray()
    for record in records:
        _encode_record(record, base_offset, base_timestamp, body)
    payload = compress(compression, body)
    attributes = (
        compression
        | (_TIMESTAMP_TYPE_BIT if log_append_time else 0)
        | (_TRANSACTIONAL_BIT if transactional else 0)
        | (_CONTROL_BIT if control else 0)
    )
    return assemble_batch(
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        record_count=len(records),
        payload=payload,
    )


def assemble_batch(
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    record_count: int,
    payload: bytes | bytearray | memoryview,
) -> bytearray:
    """A batch from its header fields and its (already compressed) records payload; the length
    and CRC are computed here, so every writer of batches (encoder, cleaner) agrees on them."""
    out = bytearray(HEADER_SIZE)
    out += payload
    _HEADER.pack_into(
        out,
        0,
        base_offset,
        len(out) - _LOG_OVERHEAD,
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )
    _UINT32.pack_into(out, _CRC_AT, crc32c(memoryview(out)[_ATTRIBUTES_AT:]))
    return out


def _decode_bytes(buf: bytes, position: int) -> tuple[bytes | None, int]:
    length, position = read_varint(buf, position)
    if length < 0:
        return None, position
    if position + length > len(buf):
        raise InvalidRecordError("record field runs past the end of the batch")
    return buf[position : position + length], position + length


def _decode_record(buf: bytes, position: int, batch: BatchInfo) -> tuple[Record, int]:
    length, position = read_varint(buf, position)
    end = position + length
    if length < 1 or end > len(buf):
        raise InvalidRecordError(f"invalid record length {length}")
    position += 1  # record attributes, unused
    timestamp_delta, position = read_varlong(buf, position)
    offset_delta, position = read_varint(buf, position)
    key, position = _decode_bytes(buf, position)
    value, position = _decode_bytes(buf, position)
    header_count, position = read_varint(buf, position)
    if header_count < 0:
        raise InvalidRecordError(f"invalid header count {header_count}")
    headers: list[Header] = []
    for _ in range(header_count):
        name, position = _decode_bytes(buf, position)
        if name is None:
            raise InvalidRecordError("record header key must not be null")
        header_value, position = _decode_bytes(buf, position)
        try:
            headers.append((name.decode(), header_value))
        except UnicodeDecodeError as exc:
            raise InvalidRecordError("record header key is not UTF-8") from exc
    if position != end:
        raise InvalidRecordError("record length does not match its fields")
    timestamp = batch.max_timestamp if batch.is_log_append_time else batch.base_timestamp + timestamp_delta
    return Record(batch.base_offset + offset_delta, timestamp, key, value, tuple(headers)), end


def records_of_payload(payload: bytes, batch: BatchInfo) -> list[Record]:
    """Decode every record of ``batch`` from its decompressed records section ``payload``."""
    records: list[Record] = []
    position = 0
    try:
        for _ in range(batch.record_count):
            record, position = _decode_record(payload, position, batch)
            records.append(record)
    except DecodeError as exc:
        raise InvalidRecordError(f"malformed record in batch at byte {batch.position}: {exc}") from exc
    if position != len(payload) or batch.record_count < 0:
        raise InvalidRecordError("record count does not match the batch payload")
    return records


def decode_records(
    buf: memoryview | bytes | bytearray, batch: BatchInfo, limit: int = DEFAULT_DECOMPRESSED_LIMIT
) -> list[Record]:
    """Decode (and decompress, at most ``limit`` bytes) every record of ``batch``; for tools,
    tests and compaction only."""
    view = memoryview(buf)
    payload = decompress(batch.compression, view[batch.position + HEADER_SIZE : batch.end_position], limit)
    return records_of_payload(payload, batch)
