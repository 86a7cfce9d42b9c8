"""Record-level validation of produced batches and bounded decompression, on bytes.

Every hostile batch here carries a correct CRC, so only checking the records themselves (as
Kafka's LogValidator does) can refuse it; ``tests/integration/test_hostile_batches.py`` sends
the same batches through a real broker.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from wire.bounded_decompress import bounded_decompress, decompressed_limit
from wire.error_codes import ErrorCode
from wire.primitives import encode_varint, encode_varlong
from wire.record_batch import (
    Compression,
    Record,
    assemble_batch,
    compress,
    decode_records,
    encode_batch,
    scan_batches,
)
from wire.record_batch_errors import CorruptRecordError, InvalidRecordError, RecordBatchError, RecordErrors
from wire.record_validation import checked_payload

LIMIT = decompressed_limit(1_048_588)
CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
BOMB_BYTES = 256 << 20


def record_bytes(key_length: bytes, rest: bytes, offset_delta: int = 0) -> bytes:
    """One record whose key length varint is given raw: ``rest`` follows it unchanged."""
    body = b"\x00" + encode_varlong(0) + encode_varint(offset_delta) + key_length + rest
    return encode_varint(len(body)) + body


GOOD_RECORD = record_bytes(encode_varint(1), b"k" + encode_varint(1) + b"v" + encode_varint(0))


def batch_of(
    payload: bytes, count: int, *, attributes: int = 0, last_offset_delta: int | None = None
) -> bytes:
    """A producer-side batch around ``payload`` with a correct length and CRC."""
    return bytes(
        assemble_batch(
            base_offset=0,
            partition_leader_epoch=-1,
            attributes=attributes,
            last_offset_delta=count - 1 if last_offset_delta is None else last_offset_delta,
            base_timestamp=1_700_000_000_000,
            max_timestamp=1_700_000_000_000,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            record_count=count,
            payload=payload,
        )
    )


def zstd_streamed(pieces: Iterable[bytes]) -> bytes:
    """One zstd frame written piece by piece, as Java's ZstdOutputStream does: its header does
    not declare the decompressed size, so only a bounded decompressor can stop it."""
    compressor = zstandard.ZstdCompressor().compressobj()
    return b"".join(compressor.compress(piece) for piece in pieces) + compressor.flush()


def zstd_bomb() -> bytes:
    """256 MiB of zeros in about 8 KB, built in 1 MiB pieces so the test never holds them."""
    zeros = bytes(1 << 20)
    return zstd_streamed(zeros for _ in range(BOMB_BYTES >> 20))


def hostile_batches() -> dict[str, tuple[bytes, str]]:
    """Attack name -> (batch with a correct CRC, the Kafka error name it must get)."""
    return {
        "garbage records": (batch_of(b"\xde\xad\xbe\xef" * 40, 1), "INVALID_RECORD"),
        "count 5, one record": (batch_of(GOOD_RECORD, 5), "INVALID_RECORD"),
        "count 2^31-1, one record": (batch_of(GOOD_RECORD, 2**31 - 1), "INVALID_RECORD"),
        "negative key length": (
            batch_of(record_bytes(encode_varint(-5), b"key" + encode_varint(1) + b"v" + encode_varint(0)), 1),
            "INVALID_RECORD",
        ),
        "key length -24 (null to Kafka)": (
            batch_of(record_bytes(encode_varint(-24), encode_varint(1) + b"v" + encode_varint(0)), 1),
            "INVALID_RECORD",
        ),
        "header value length -2^31, zstd": (
            batch_of(
                compress(
                    Compression.ZSTD,
                    record_bytes(
                        encode_varint(-1),
                        encode_varint(-1)
                        + encode_varint(1)
                        + encode_varint(1)
                        + b"h"
                        + encode_varint(-(2**31)),
                    ),
                ),
                1,
                attributes=Compression.ZSTD,
            ),
            "INVALID_RECORD",
        ),
        "bytes after the last record": (batch_of(GOOD_RECORD + b"\x00\x00", 1), "INVALID_RECORD"),
        "record length past the payload": (batch_of(b"\x7e" + GOOD_RECORD[1:], 1), "INVALID_RECORD"),
        "header key not UTF-8": (
            batch_of(
                record_bytes(
                    encode_varint(-1),
                    encode_varint(-1) + encode_varint(1) + encode_varint(2) + b"\xff\xfe" + encode_varint(-1),
                ),
                1,
            ),
            "INVALID_RECORD",
        ),
        "gzip attribute on plain records": (
            batch_of(GOOD_RECORD, 1, attributes=Compression.GZIP),
            "CORRUPT_MESSAGE",
        ),
        "zstd bomb": (batch_of(zstd_bomb(), 1, attributes=Compression.ZSTD), "CORRUPT_MESSAGE"),
    }


def check(batch: bytes, limit: int = LIMIT) -> bytes | memoryview:
    """What the produce handler checks before appending: header, CRC, records."""
    view = memoryview(batch)
    return checked_payload(view, scan_batches(view)[0], limit)


ATTACKS = hostile_batches()


@pytest.mark.parametrize("name", list(ATTACKS))
def test_hostile_batch_with_a_correct_crc_is_refused(name: str) -> None:
    batch, error_name = ATTACKS[name]
    with pytest.raises(RecordBatchError) as caught:
        check(batch)
    assert caught.value.error_code == ErrorCode[error_name]


def test_count_errors_use_kafka_wording() -> None:
    with pytest.raises(InvalidRecordError, match="premature EOF"):
        check(ATTACKS["count 5, one record"][0])
    with pytest.raises(InvalidRecordError, match="records still remaining"):
        check(ATTACKS["bytes after the last record"][0])


@pytest.mark.parametrize("codec", CODECS)
def test_batches_as_clients_write_them_pass_unchanged(codec: int) -> None:
    records = [
        Record(i, 1_700_000_000_000 + i, None if i % 3 else b"k%d" % i, b"v" * i, (("h", b"x"), ("n", None)))
        for i in range(50)
    ]
    batch = bytes(encode_batch(records, compression=codec))
    payload = check(batch)
    assert decode_records(batch, scan_batches(batch)[0]) == records
    assert bytes(payload) == bytes(encode_batch(records))[61:]


def test_compressed_batch_with_offsets_out_of_order_lists_the_records() -> None:
    records = [Record(0, 0, b"a", b"1"), Record(5, 0, b"b", b"2"), Record(2, 0, b"c", b"3")]
    batch = bytes(encode_batch(records, compression=Compression.LZ4, last_offset_delta=2))
    with pytest.raises(RecordErrors) as caught:
        check(batch)
    assert caught.value.indices == [1]
    assert caught.value.error_code == ErrorCode.INVALID_RECORD


def test_uncompressed_offset_deltas_must_run_from_zero_too() -> None:
    """Stricter than Kafka's LogValidator, which checks inner offsets only in its compressed
    path: a delta past ``lastOffsetDelta`` would reach consumers above the high watermark."""
    records = [Record(0, 0, b"a", b"1"), Record(5, 0, b"b", b"2")]
    with pytest.raises(RecordErrors) as caught:
        check(bytes(encode_batch(records, last_offset_delta=1)))
    assert caught.value.indices == [1]


def gzip_members(data: bytes, members: int) -> bytes:
    return b"".join(bytes(cramjam.gzip.compress(data)) for _ in range(members))


def snappy_raw(data: bytes) -> bytes:
    return bytes(cramjam.snappy.compress_raw(data))


COMPRESSORS = {
    "gzip": (Compression.GZIP, lambda data: compress(Compression.GZIP, data)),
    "gzip, two members": (Compression.GZIP, lambda data: gzip_members(data[: len(data) // 2], 2)),
    "snappy xerial": (Compression.SNAPPY, lambda data: compress(Compression.SNAPPY, data)),
    "snappy raw": (Compression.SNAPPY, snappy_raw),
    "lz4 frame": (Compression.LZ4, lambda data: compress(Compression.LZ4, data)),
    "zstd with content size": (Compression.ZSTD, lambda data: compress(Compression.ZSTD, data)),
    "zstd streamed": (Compression.ZSTD, lambda data: zstd_streamed([data])),
}


@pytest.mark.parametrize("name", list(COMPRESSORS))
def test_output_up_to_the_limit_passes_and_one_byte_more_is_refused(name: str) -> None:
    codec, pack = COMPRESSORS[name]
    limit = 4 << 20
    exact = pack(bytes(limit))
    assert bounded_decompress(codec, exact, limit) == bytes(limit)
    with pytest.raises(CorruptRecordError, match="more than"):
        bounded_decompress(codec, exact, limit - 1)


@pytest.mark.parametrize("name", list(COMPRESSORS))
def test_truncated_or_damaged_payload_is_corrupt(name: str) -> None:
    codec, pack = COMPRESSORS[name]
    packed = pack(b"some records " * 1000)
    for damaged in (packed[:-3], b"\x00\x01" + packed[2:]):
        with pytest.raises(CorruptRecordError):
            bounded_decompress(codec, damaged, LIMIT)


def test_bomb_is_refused_per_codec_with_output_bounded() -> None:
    """Each codec stops at the bound: the refused output is never materialised."""
    bombs = {
        Compression.GZIP: zlib.compress(bytes(64 << 20), wbits=31),
        Compression.LZ4: lz4.frame.compress(bytes(64 << 20)),
        Compression.SNAPPY: compress(Compression.SNAPPY, bytes(64 << 20)),
        Compression.ZSTD: zstd_bomb(),
    }
    for codec, bomb in bombs.items():
        assert len(bomb) < 4 << 20
        with pytest.raises(CorruptRecordError, match="more than 1048576 bytes"):
            bounded_decompress(codec, bomb, 1 << 20)


VALID = {
    codec: bytes(
        encode_batch(
            [Record(i, 1_700_000_000_000 + i, b"key%d" % i, b"value" * i, (("h", b"v"),)) for i in range(6)],
            compression=codec,
        )
    )
    for codec in CODECS
}


@st.composite
def mutated_batch(draw: st.DrawFn) -> bytes:
    """A valid batch whose records (decompressed, or compressed bytes) are flipped, cut or
    extended, re-wrapped with a correct length and CRC so only record validation can object."""
    codec = draw(st.sampled_from(CODECS))
    batch = VALID[codec]
    info = scan_batches(batch)[0]
    mutate_plain = codec == Compression.NONE or draw(st.booleans())
    body = bytearray(decode_payload(batch) if mutate_plain else batch[61:])
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "cut", "extend"]))
        if kind == "flip" and body:
            body[draw(st.integers(0, len(body) - 1))] = draw(st.integers(0, 255))
        elif kind == "cut" and body:
            del body[draw(st.integers(0, len(body) - 1)) :]
        else:
            body += draw(st.binary(min_size=1, max_size=8))
    payload = compress(codec, bytes(body)) if mutate_plain else bytes(body)
    count = draw(st.sampled_from([info.record_count, 1, info.record_count + 1, 2**31 - 1]))
    return batch_of(payload, count, attributes=codec)


def decode_payload(batch: bytes) -> bytes:
    info = scan_batches(batch)[0]
    return bounded_decompress(info.compression, batch[61:], LIMIT) if info.compression else batch[61:]


@settings(max_examples=600, deadline=None)
@given(mutated_batch())
def test_any_mutation_passes_with_the_declared_records_or_raises_our_error(batch: bytes) -> None:
    try:
        check(batch)
    except RecordBatchError:
        return
    info = scan_batches(batch)[0]
    records = decode_records(batch, info)  # the broker's own, independent Python decoder
    assert len(records) == info.record_count
    if info.compression:
        assert [record.offset for record in records] == list(range(info.record_count))
