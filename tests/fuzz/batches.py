"""Crafted record sets for generated Produce requests: valid batches and the ways to lie in one.

A Produce body that decodes still carries a record set the broker must validate itself, so
this is where hostile producers do their damage: record counts and offset deltas that
disagree with the records, lengths that point past the end, a compression attribute on data
that is not compressed that way, garbage records under a *correct* CRC (so header checks
alone pass), decompression bombs, several batches back to back.  Each lie is one small
patch of a valid batch at its header offset (Kafka's v2 layout), with the CRC recomputed
when the point is to get past the CRC check.
"""

from __future__ import annotations

import functools
import random
import struct
from collections.abc import Callable, Sequence

from crc32c import crc32c

from wire.primitives import encode_varint, encode_varlong
from wire.record_batch import Compression, Record, assemble_batch, compress, encode_batch

# Offsets in the v2 batch header (Kafka's DefaultRecordBatch).
_LENGTH_AT = 8
_MAGIC_AT = 16
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_LAST_OFFSET_DELTA_AT = 23
_RECORD_COUNT_AT = 57
_HEADER_SIZE = 61
_HUGE = (2**31 - 1, -1, -(2**31), 1_000_000)
_CODECS = (Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD)
BOMB_BYTES = 32 * 1024 * 1024


def random_record_set(rng: random.Random) -> bytes:
    """One record set: usually a valid batch, often with one lie in it."""
    if rng.random() < 0.005:
        return decompression_bomb()
    batch = _valid_batch(rng)
    lie = rng.choice(_LIES)
    if lie is not None:
        lie(rng, batch)
    if rng.random() < 0.1:
        batch += _valid_batch(rng)
    return bytes(batch)


def _valid_batch(rng: random.Random) -> bytearray:
    count = rng.randint(1, 3)
    records = [
        Record(i, 1_700_000_000_000 + i, b"k%d" % rng.randint(0, 9), rng.randbytes(8)) for i in range(count)
    ]
    idempotent = rng.random() < 0.2
    return encode_batch(
        records,
        compression=rng.choice(_CODECS),
        producer_id=rng.randint(0, 1000) if idempotent else -1,
        producer_epoch=rng.randint(0, 2) if idempotent else -1,
        base_sequence=rng.choice((0, 1, 5)) if idempotent else -1,
    )


def refresh_crc(batch: bytearray) -> None:
    """Write the CRC-32C that the batch's bytes (attributes to the end) now have."""
    struct.pack_into(">I", batch, _CRC_AT, crc32c(memoryview(batch)[_ATTRIBUTES_AT:]))


def _patch_int32(at: int, *, fix_crc: bool):
    def patch(rng: random.Random, batch: bytearray) -> None:
        value = rng.choice((*_HUGE, rng.randint(0, 10)))
        struct.pack_into(">i", batch, at, value)
        if fix_crc:
            refresh_crc(batch)

    return patch


def _wrong_codec(rng: random.Random, batch: bytearray) -> None:
    attributes = struct.unpack_from(">h", batch, _ATTRIBUTES_AT)[0]
    struct.pack_into(">h", batch, _ATTRIBUTES_AT, (attributes & ~0x7) | rng.choice((1, 2, 3, 4, 5, 7)))
    refresh_crc(batch)


def _garbage_records(rng: random.Random, batch: bytearray) -> None:
    batch[_HEADER_SIZE:] = rng.randbytes(len(batch) - _HEADER_SIZE)
    refresh_crc(batch)


def _truncate(rng: random.Random, batch: bytearray) -> None:
    del batch[rng.randint(0, len(batch) - 1) :]


def _bad_magic(rng: random.Random, batch: bytearray) -> None:
    batch[_MAGIC_AT] = rng.choice((0, 1, 3, 255))


_LIES = (
    None,
    None,
    _patch_int32(_RECORD_COUNT_AT, fix_crc=True),
    _patch_int32(_LAST_OFFSET_DELTA_AT, fix_crc=True),
    _patch_int32(_LENGTH_AT, fix_crc=False),
    _patch_int32(_RECORD_COUNT_AT, fix_crc=False),
    _wrong_codec,
    _garbage_records,
    _truncate,
    _bad_magic,
)


@functools.cache
def decompression_bomb() -> bytes:
    """A zstd batch of a few KB whose single record inflates to 32 MiB of zeros."""
    bomb = Record(0, 1_700_000_000_000, None, bytes(BOMB_BYTES))
    return bytes(encode_batch([bomb], compression=Compression.ZSTD))


# --------------------------------------------------------------------------------------------
# Records written field by field, for what no encoder writes (lengths below -1, say).

BASE_TIMESTAMP = 1_700_000_000_000

Nullable = bytes | int | None
"""A nullable field as :func:`raw_record` writes it: bytes with their length, None as -1, an
int as that raw length alone (no bytes follow it)."""


def nullable(field: Nullable, varint: Callable[[int], bytes] = encode_varint) -> bytes:
    if field is None:
        return varint(-1)
    if isinstance(field, int):
        return varint(field)
    return varint(len(field)) + field


def raw_record(
    offset_delta: int,
    key: Nullable = None,
    value: Nullable = b"v",
    headers: Sequence[tuple[bytes, Nullable]] = (),
    timestamp_delta: int = 0,
    *,
    attributes: int = 0,
    varint: Callable[[int], bytes] = encode_varint,
) -> bytes:
    """One record, written field by field as Kafka's DefaultRecord.writeTo does, every 32-bit
    varint (lengths, counts, the offset delta) by ``varint``."""
    body = bytes([attributes]) + encode_varlong(timestamp_delta) + varint(offset_delta)
    body += nullable(key, varint) + nullable(value, varint) + varint(len(headers))
    for name, header_value in headers:
        body += varint(len(name)) + name + nullable(header_value, varint)
    return varint(len(body)) + body


def raw_batch(
    records: Sequence[bytes],
    *,
    codec: int = Compression.NONE,
    base_timestamp: int = BASE_TIMESTAMP,
    max_delta: int = 0,
    attributes: int = 0,
    producer: tuple[int, int, int] = (-1, -1, -1),
    count: int | None = None,
) -> bytes:
    """A producer's batch of ``records`` (already written) with a correct length and CRC: base
    offset 0, the max timestamp ``max_delta`` from the base one, ``producer`` its id, epoch and
    base sequence, ``count`` (by default, how many ``records`` there are) its record count."""
    producer_id, producer_epoch, base_sequence = producer
    count = len(records) if count is None else count
    return bytes(
        assemble_batch(
            base_offset=0,
            partition_leader_epoch=-1,
            attributes=codec | attributes,
            last_offset_delta=count - 1,
            base_timestamp=base_timestamp,
            max_timestamp=base_timestamp + max_delta,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            record_count=count,
            payload=compress(codec, b"".join(records)),
        )
    )
