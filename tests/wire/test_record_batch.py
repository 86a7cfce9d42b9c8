"""Record batch v2: header scanning, CRC checks, in-place patching, record round trips."""

from __future__ import annotations

import contextlib
import struct

import cramjam
import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from wire.record_batch import (
    HEADER_SIZE,
    Compression,
    CorruptRecordError,
    InvalidRecordError,
    Record,
    RecordBatchError,
    compress,
    decode_records,
    decompress,
    encode_batch,
    scan_batches,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)

CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]


def records(n: int, start_ts: int = 1_700_000_000_000) -> list[Record]:
    return [Record(i, start_ts + i, b"key-%d" % i, b"value-%d" % i * 3, (("h", b"x"),)) for i in range(n)]


headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3).map(tuple)
record_lists = st.lists(
    st.tuples(
        st.integers(-(2**40), 2**40),
        st.none() | st.binary(max_size=40),
        st.none() | st.binary(max_size=200),
        headers,
    ),
    min_size=1,
    max_size=20,
).map(lambda rows: [Record(i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(rows)])


@settings(max_examples=60, deadline=None)
@given(rows=record_lists, codec=st.sampled_from(CODECS))
def test_encode_decode_round_trip_all_codecs(rows: list[Record], codec: int) -> None:
    batch = encode_batch(rows, compression=codec, producer_id=42, producer_epoch=3, base_sequence=7)
    [info] = scan_batches(memoryview(batch))
    assert info.compression == codec
    assert info.record_count == len(rows)
    assert info.last_offset_delta == len(rows) - 1
    assert info.max_timestamp == max(r.timestamp for r in rows)
    assert (info.producer_id, info.producer_epoch, info.base_sequence) == (42, 3, 7)
    assert decode_records(batch, info) == rows


def test_header_fields_and_flags() -> None:
    batch = encode_batch(records(3), transactional=True, partition_leader_epoch=9)
    [info] = scan_batches(batch)
    assert info.size == len(batch) and info.position == 0
    assert info.partition_leader_epoch == 9
    assert info.is_transactional and not info.is_control and not info.is_log_append_time
    assert info.next_offset == 3 and info.last_offset == 2
    assert info.last_sequence == -1  # no producer id


def test_last_sequence_wraps_at_int32_max() -> None:
    batch = encode_batch(records(3), producer_id=1, producer_epoch=0, base_sequence=2**31 - 2)
    [info] = scan_batches(batch)
    assert info.last_sequence == 0


@pytest.mark.parametrize("codec", CODECS)
def test_codec_round_trip(codec: int) -> None:
    data = b"kafka " * 20_000  # spans several snappy/lz4 blocks
    assert decompress(codec, compress(codec, data)) == data


def test_snappy_writes_xerial_framing_and_reads_raw_snappy() -> None:
    data = b"abc" * 30_000
    framed = compress(Compression.SNAPPY, data)
    assert framed.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    raw = bytes(cramjam.snappy.compress_raw(data))  # what librdkafka writes
    assert decompress(Compression.SNAPPY, raw) == data


def test_lz4_frames_have_independent_blocks() -> None:
    frame = compress(Compression.LZ4, b"x" * 100_000)
    assert frame[:4] == b"\x04\x22\x4d\x18"
    assert frame[4] & 0x20, "Kafka's Java LZ4 reader rejects linked blocks"


def test_scan_many_batches_when_not_from_client() -> None:
    buf = bytearray()
    for i in range(5):
        buf += encode_batch(records(i + 1), base_offset=100 * i)
    infos = scan_batches(memoryview(buf), from_client=False)
    assert [b.base_offset for b in infos] == [0, 100, 200, 300, 400]
    assert [b.position for b in infos] == [sum(b.size for b in infos[:i]) for i in range(5)]
    assert infos[-1].end_position == len(buf)


def test_client_rules() -> None:
    good = encode_batch(records(2))
    with pytest.raises(InvalidRecordError, match="exactly one"):
        scan_batches(good + good)
    with pytest.raises(InvalidRecordError, match="base offset"):
        scan_batches(encode_batch(records(2), base_offset=5))
    with pytest.raises(InvalidRecordError, match="inconsistent"):
        scan_batches(encode_batch(records(2), last_offset_delta=5))
    with pytest.raises(InvalidRecordError, match="count"):
        scan_batches(encode_batch([]))
    with pytest.raises(InvalidRecordError, match="control"):
        scan_batches(encode_batch(records(1), control=True))
    with pytest.raises(InvalidRecordError, match="sequence"):
        scan_batches(encode_batch(records(1), producer_id=5, producer_epoch=0, base_sequence=-1))
    with pytest.raises(InvalidRecordError):
        scan_batches(b"")
    # Compacted-looking batches are fine outside the client path.
    scan_batches(encode_batch(records(2), last_offset_delta=5), from_client=False)


def test_crc_mismatch_is_corrupt() -> None:
    batch = encode_batch(records(3))
    batch[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="crc"):
        scan_batches(batch)


def test_truncated_and_bad_length_and_magic() -> None:
    batch = encode_batch(records(3))
    with pytest.raises(CorruptRecordError):
        scan_batches(batch[:-1])
    with pytest.raises(CorruptRecordError):
        scan_batches(batch[:30])
    short = bytearray(batch)
    struct.pack_into(">i", short, 8, 10)
    with pytest.raises(CorruptRecordError, match="length"):
        scan_batches(short)
    for magic, error in ((1, InvalidRecordError), (7, CorruptRecordError)):
        bad = bytearray(batch)
        bad[16] = magic
        with pytest.raises(error):
            scan_batches(bad)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300), from_client=st.booleans())
def test_scanning_random_bytes_raises_only_typed_errors(data: bytes, from_client: bool) -> None:
    with contextlib.suppress(RecordBatchError):
        scan_batches(memoryview(data), from_client=from_client)


@settings(max_examples=200, deadline=None)
@given(codec=st.sampled_from(CODECS), flips=st.lists(st.integers(HEADER_SIZE, 10_000), max_size=4))
def test_decoding_damaged_payloads_raises_only_typed_errors(codec: int, flips: list[int]) -> None:
    """Records of a batch whose CRC was fixed up after damage (a lying producer)."""
    batch = encode_batch(records(5), compression=codec)
    for flip in flips:
        batch[flip % len(batch)] ^= 0x5A
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    try:
        [info] = scan_batches(batch, from_client=False)
        decode_records(batch, info)
    except RecordBatchError:
        pass


def test_patch_base_offset_and_leader_epoch_keep_crc_valid() -> None:
    buf = bytearray(b"\x00" * 7) + encode_batch(records(4))
    view = memoryview(buf)
    [info] = scan_batches(view[7:])
    inner = view[7:]
    set_base_offset(inner, info, 1000)
    set_partition_leader_epoch(inner, info, 12)
    [patched] = scan_batches(inner, from_client=False)
    assert patched.base_offset == 1000 and patched.partition_leader_epoch == 12
    assert [r.offset for r in decode_records(inner, patched)] == [1000, 1001, 1002, 1003]


def test_log_append_time_sets_type_bit_timestamp_and_crc() -> None:
    buf = encode_batch(records(3), compression=Compression.GZIP)
    [info] = scan_batches(buf)
    set_log_append_time(buf, info, 99)
    [patched] = scan_batches(buf)  # CRC recomputed, still valid
    assert patched.is_log_append_time and patched.max_timestamp == 99
    assert patched.compression == Compression.GZIP
    assert {r.timestamp for r in decode_records(buf, patched)} == {99}
