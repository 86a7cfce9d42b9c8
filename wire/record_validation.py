"""Check a produced batch's records against its header, as Kafka's LogValidator does.

The header and CRC (``wire.record_batch.scan_batches``) prove the bytes arrived as the client
wrote them, not that they make sense: a client can write a correct CRC over garbage, claim
2^31-1 records for one, or flag plain bytes as gzip.  Stored, such a batch moves the log end
offset by its claimed count and stalls consumers at it.  So every record is walked before the
batch is accepted, and, like Kafka, nothing of a partition's batch is stored when one record is
wrong:

- framing (DefaultRecord.readFrom): each record's length varint matches its fields, every
  varint is well formed, key/value/header lengths stay inside the record, the header count is
  not negative, header keys are not null;
- count (DefaultRecordBatch's iterator): exactly ``recordsCount`` records fill the payload, no
  fewer ("premature EOF") and no bytes left over ("records still remaining");
- offsets: the records' offsets run ``base, base+1, ...`` ("does not have incremental
  offsets"), answered with ``record_errors``.  Kafka checks this only in its compressed path;
  an uncompressed record whose offset delta points past ``lastOffsetDelta`` is stored there and
  surfaces to consumers as an offset above the high watermark.  Odradek refuses it for every
  batch: the check is one C-level ``map`` over the records (~0.05 ms per MB of 1 KiB records).

Framing errors are INVALID_RECORD, as Kafka's InvalidRecordException; a payload that does not
decompress is CORRUPT_MESSAGE (``wire.bounded_decompress``).

Header keys must be valid UTF-8 here, where Java Kafka decodes them leniently (replacing bad
bytes): a key that is not text is refused with INVALID_RECORD rather than stored for consumers
that decode strictly (aiokafka, kafka-python) to choke on.  A length below -1 (key, value,
header value) reads as null, exactly as in Kafka, which only tests ``length >= 0``.

Why aiokafka's reader: the walk must not cost a Python loop per record on the produce path (a
pure-Python walker takes ~1.8 ms per MB of 1 KiB records, more than the broker's whole produce
path).  aiokafka's ``DefaultRecordBatch`` is a Cython implementation of exactly Kafka's record
format, shipped compiled in its wheels, with bounds checks on every length (fuzzed with 600,000
mutated batches: only ``CorruptRecordException`` or ``UnicodeDecodeError``); consuming it from
C (``map`` over the records' offsets) costs ~0.15 ms per MB of 1 KiB records.  Without its C extension it
falls back to its pure-Python reader, slower but with the same answers.
"""

from __future__ import annotations

import struct
from operator import attrgetter

from aiokafka.errors import CorruptRecordException
from aiokafka.record.default_records import DefaultRecordBatch

from wire.record_batch import HEADER_SIZE, BatchInfo, Compression, decompress
from wire.record_batch_errors import InvalidRecordError, RecordErrors

__all__ = ["checked_payload", "validate_records"]

_ATTRIBUTES_AT = 21
_INT16 = struct.Struct(">h")
_COMPRESSION_MASK = 0x07
_offset_of = attrgetter("offset")

# aiokafka's messages for the two count errors, and Kafka's wording for them.
_KAFKA_WORDING = {
    "unconsumed bytes after all records consumed": "Incorrect declared batch size, records still remaining",
    "Can't read": "Incorrect declared batch size, premature EOF reached",
}


def _framing_error(batch: BatchInfo, exc: Exception) -> InvalidRecordError:
    detail = str(exc.args[0]) if exc.args else type(exc).__name__  # without aiokafka's "[Error 2]" prefix
    if isinstance(exc, UnicodeDecodeError):
        detail = f"a record header key is not valid UTF-8 ({exc.reason})"
    else:
        detail = next((kafka for ours, kafka in _KAFKA_WORDING.items() if ours in detail), detail)
    return InvalidRecordError(f"{detail} (batch of {batch.record_count} records)")


def _uncompressed_view(data: memoryview, batch: BatchInfo, payload: bytes | memoryview) -> bytes | memoryview:
    """The batch as aiokafka's reader takes it: the client's own bytes when uncompressed, else
    the header (codec bits cleared) followed by the already decompressed records."""
    if batch.compression == Compression.NONE:
        return data[batch.position : batch.end_position]
    header = bytearray(data[batch.position : batch.position + HEADER_SIZE])
    _INT16.pack_into(header, _ATTRIBUTES_AT, batch.attributes & ~_COMPRESSION_MASK)
    return bytes(header) + bytes(payload)


def validate_records(data: memoryview, batch: BatchInfo, payload: bytes | memoryview) -> None:
    """Raise ``InvalidRecordError`` unless ``payload`` (the decompressed records of ``batch``,
    which sits at ``batch.position`` in ``data``) holds exactly the records its header claims.

    ``batch`` must already have passed ``scan_batches`` (so ``recordsCount`` is positive and
    matches ``lastOffsetDelta``): then the count bounds the walk, and a claimed count far above
    what the bytes can hold fails at the first missing record, not after 2^31 iterations.
    """
    records = DefaultRecordBatch(_uncompressed_view(data, batch, payload))
    try:
        offsets = list(map(_offset_of, records))
    except (CorruptRecordException, UnicodeDecodeError, IndexError, struct.error) as exc:
        raise _framing_error(batch, exc) from exc
    expected = range(batch.base_offset, batch.base_offset + batch.record_count)
    if offsets != list(expected):
        wrong = [index for index, offset in enumerate(offsets) if offset != expected[index]]
        raise RecordErrors(
            wrong,
            f"Inner record inside the {'' if batch.compression == Compression.NONE else 'compressed '}"
            "record batch does not have incremental offsets, "
            f"expected offset is {expected[wrong[0]]}",
        )


def checked_payload(data: memoryview, batch: BatchInfo, limit: int) -> bytes | memoryview:
    """The records section of ``batch`` (at ``batch.position`` in ``data``, already through
    ``scan_batches``), decompressed to at most ``limit`` bytes and validated; the client's own
    bytes, not a copy, when the batch is uncompressed."""
    body = data[batch.position + HEADER_SIZE : batch.end_position]
    payload = body if batch.compression == Compression.NONE else decompress(batch.compression, body, limit)
    validate_records(data, batch, payload)
    return payload
