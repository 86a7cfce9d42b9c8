"""Null lengths in produced records: only -1 means null, anything below -1 refuses the batch.

Kafka reads any negative key, value or header value length as null; librdkafka's consumer
stops at such a record and never reaches the end of the partition, so Odradek refuses the batch
with INVALID_RECORD (``wire.record_validation``).  The records here are written byte by byte,
so a length can be any varint, and every batch carries a correct CRC: only the record check can
object.  The batches cover each way the check places the length bytes (a keyless producer's
records, records of any shape), before and after the first chunk of
:data:`~wire.record_validation.CHUNK` records, and the layouts it cannot place (padded varints,
which Kafka's Java client cannot read beyond five bytes), which are refused.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.batches import BASE_TIMESTAMP as BASE_TS
from tests.fuzz.batches import Nullable
from tests.fuzz.batches import raw_batch as batch
from tests.fuzz.batches import raw_record as record
from wire.error_codes import ErrorCode
from wire.primitives import encode_varint
from wire.record_batch import Compression, decode_records, scan_batches
from wire.record_batch_errors import InvalidRecordError
from wire.record_validation import CHUNK, checked_payload

LOG_APPEND_TIME = 0x08
CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
BELOW_MINUS_ONE = [-2, -24, -65, -(2**31)]  # one byte, one byte, two bytes, five bytes


def check(data: bytes) -> None:
    view = memoryview(data)
    checked_payload(view, scan_batches(view)[0], 64 << 20)


def refused(data: bytes) -> bool:
    try:
        check(data)
    except InvalidRecordError as exc:
        assert exc.error_code == ErrorCode.INVALID_RECORD
        assert "below -1" in str(exc)
        return True
    return False


def with_one_bad(field: str, length: int, count: int, at: int, **shape: Nullable) -> list[bytes]:
    """``count`` records of one shape, record ``at`` writing ``field`` with ``length``."""
    records = []
    for i in range(count):
        fields: dict = {"key": shape.get("key", b"k"), "value": shape.get("value", b"v")}
        fields["headers"] = [(b"h", shape.get("header", b"x"))]
        if i == at:
            if field == "header value":
                fields["headers"] = [(b"h", length)]
            else:
                fields[field] = length
        records.append(record(i, **fields))
    return records


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("field", ["key", "value", "header value"])
@pytest.mark.parametrize("length", BELOW_MINUS_ONE)
def test_a_length_below_minus_one_is_refused(codec: int, field: str, length: int) -> None:
    assert refused(batch(with_one_bad(field, length, 3, 1), codec=codec))


@pytest.mark.parametrize("codec", CODECS)
def test_minus_one_is_null_in_every_field(codec: int) -> None:
    records = [record(0, None, None, [(b"a", None), (b"b", b"")]), record(1, b"", b"", [(b"c", None)])]
    data = batch(records, codec=codec)
    check(data)
    decoded = decode_records(data, scan_batches(data)[0])
    assert [(r.key, r.value, r.headers) for r in decoded] == [
        (None, None, (("a", None), ("b", b""))),
        (b"", b"", (("c", None),)),
    ]


@pytest.mark.parametrize("field", ["key", "value", "header value"])
@pytest.mark.parametrize("at", [0, CHUNK - 1, CHUNK, 2 * CHUNK + 5])
def test_a_bad_length_is_found_in_any_chunk(field: str, at: int) -> None:
    """Nulls everywhere (sized from the first chunk), or only the bad one (first met later)."""
    count = 3 * CHUNK
    assert refused(batch(with_one_bad(field, -2, count, at, key=None, value=None, header=None)))
    assert refused(batch(with_one_bad(field, -2, count, at)))
    check(batch(with_one_bad(field, -1, count, at)))


KEYLESS_LENGTHS = [
    0,
    1,
    50,
    56,
    57,
    58,
    63,
    64,
    65,
    1000,
    8180,
    8185,
    8186,
    8191,
    8192,
    8200,
    16383,
    16384,
    20000,
]
"""Value lengths around the sizes where a length varint, or a record's, grows a byte, and where
the keyless fast path stops looking lengths up."""


@pytest.mark.parametrize("length", KEYLESS_LENGTHS)
def test_keyless_records_of_one_value_length(length: int) -> None:
    count = CHUNK + 3  # offset deltas of one and two bytes
    good = [record(i, None, bytes(length)) for i in range(count)]
    check(batch(good))
    for at in (0, CHUNK - 1, CHUNK, count - 1):
        bad = [record(i, -2 if i == at else None, bytes(length)) for i in range(count)]
        assert refused(batch(bad)), at


@pytest.mark.parametrize("start", range(0, len(KEYLESS_LENGTHS), 3))
def test_keyless_records_of_mixed_value_lengths(start: int) -> None:
    lengths = KEYLESS_LENGTHS[start : start + 4]
    count = 2 * CHUNK + 1
    good = [record(i, None, bytes(lengths[i % len(lengths)])) for i in range(count)]
    check(batch(good))
    for at in (1, CHUNK + 2, count - 1):
        bad = [record(i, -24 if i == at else None, bytes(lengths[i % len(lengths)])) for i in range(count)]
        assert refused(batch(bad)), at


@pytest.mark.parametrize("max_delta", [0, 63, 64, 5000])
@pytest.mark.parametrize("keyed", [True, False])
def test_timestamps_far_from_the_base(max_delta: int, keyed: bool) -> None:
    """Deltas of one and more bytes, also negative ones (a max timestamp below the records')."""
    deltas = [0, max_delta, -max_delta, max_delta // 2]
    good = [record(i, b"k" if keyed else None, None, timestamp_delta=deltas[i % 4]) for i in range(CHUNK + 4)]
    check(batch(good, max_delta=max_delta))
    bad = list(good)
    bad[CHUNK + 1] = record(CHUNK + 1, b"k" if keyed else None, -3, timestamp_delta=max_delta)
    assert refused(batch(bad, max_delta=max_delta))


OVERLONG_MINUS_ONE = b"\x81\x00"  # -1 in two bytes: Kafka reads it, no client writes it


def overlong_null_key(offset_delta: int) -> bytes:
    body = b"\x00\x00" + encode_varint(offset_delta) + OVERLONG_MINUS_ONE + encode_varint(1) + b"v\x00"
    return encode_varint(len(body)) + body


def test_a_padded_varint_is_refused_even_for_minus_one() -> None:
    """Kafka reads -1 written in two bytes, but no client writes it, and a padded varint breaks
    the canonical layout the check relies on: refused, stricter than Kafka."""
    with pytest.raises(InvalidRecordError, match="shortest encoding"):
        check(batch([overlong_null_key(i) for i in range(3)]))


def test_log_append_time_batches_are_sized_by_their_records_timestamps() -> None:
    """The reader would give every record the batch's max timestamp; the check clears the flag."""
    log_append = [record(i, None, timestamp_delta=i * 1000) for i in range(CHUNK + 3)]
    for codec in (Compression.NONE, Compression.ZSTD):
        check(batch(log_append, codec=codec, attributes=LOG_APPEND_TIME))
        bad = [*log_append, record(CHUNK + 3, None, -5)]
        assert refused(batch(bad, codec=codec, attributes=LOG_APPEND_TIME))


def test_a_timestamp_of_minus_one_is_sized_like_any_other() -> None:
    before_the_epoch = [record(0, None, timestamp_delta=-BASE_TS - 1), record(1, None)]
    for max_delta in (0, 100):  # sized with the base timestamp, or with each record's
        check(batch(before_the_epoch, max_delta=max_delta))
        assert refused(batch([*before_the_epoch, record(2, None, None, [(b"h", -9)])], max_delta=max_delta))


@st.composite
def records_with_nulls(draw: st.DrawFn) -> tuple[list[bytes], bool, int]:
    """Records of random shapes, any nullable field possibly written below -1; whether one is."""
    lengths = st.one_of(st.none(), st.binary(max_size=80), st.sampled_from([-1, -2, -64, -65, -(2**31)]))
    count = draw(st.integers(1, 3 * CHUNK))
    shape = draw(st.sampled_from(["keyless", "keyed", "any"]))
    max_delta = draw(st.sampled_from([0, 10, 100, 70000]))
    records, bad = [], False
    for i in range(count):
        key = None if shape == "keyless" else draw(lengths) if shape == "any" else b"k"
        value = draw(lengths) if shape == "any" or draw(st.booleans()) else bytes(draw(st.integers(0, 300)))
        headers = (
            [(b"h%d" % n, draw(lengths)) for n in range(draw(st.integers(0, 2)))] if shape == "any" else []
        )
        fields = [key, value, *(header_value for _, header_value in headers)]
        bad = bad or any(isinstance(field, int) and field < -1 for field in fields)
        delta = draw(st.integers(-max_delta, max_delta))
        records.append(record(i, key, value, headers, timestamp_delta=delta))
    return records, bad, max_delta


@settings(max_examples=300, deadline=None)
@given(records_with_nulls(), st.sampled_from(CODECS))
def test_refused_exactly_when_a_length_is_below_minus_one(
    drawn: tuple[list[bytes], bool, int], codec: int
) -> None:
    records, bad, max_delta = drawn
    assert refused(batch(records, codec=codec, max_delta=max_delta)) == bad


def padded_to(size: int) -> Callable[[int], bytes]:
    """A varint writer padding every varint with zero groups to ``size`` bytes."""

    def write(value: int) -> bytes:
        canonical = encode_varint(value)
        if len(canonical) >= size:
            return canonical
        return (
            canonical[:-1] + bytes([canonical[-1] | 0x80]) + b"\x80" * (size - len(canonical) - 1) + b"\x00"
        )

    return write


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.LZ4])
@pytest.mark.parametrize("key", [b"k", None])
@pytest.mark.parametrize("size", [2, 5, 6, 10])
def test_padded_varints_are_refused(codec: int, key: bytes | None, size: int) -> None:
    """Kafka's clients read a 32-bit varint in at most five bytes (the Java client fails beyond:
    "Varint is too long"), which aiokafka reads; Kafka accepts padding up to five bytes, no
    client writes it: every padded varint is refused, in keyed and keyless records alike."""
    records = [record(i, key, b"value", [(b"h", None)], i, varint=padded_to(size)) for i in range(CHUNK + 2)]
    with pytest.raises(InvalidRecordError, match="shortest encoding"):
        check(batch(records, codec=codec, max_delta=CHUNK + 1))


@pytest.mark.parametrize(
    "body",
    [
        "80047600010300",  # Kafka: attributes 0x80, a record whose fields end before its length
        "81767600000100",  # the same, another way
        "820201000504760100",  # Kafka: a value length of -3
    ],
)
def test_records_aiokafka_reads_shifted_are_refused(body: str) -> None:
    """aiokafka's reader takes the attributes byte for a varint, so from 0x80 on it reads the
    rest of the record shifted, and accepts these records, which Kafka's clients cannot read;
    such a layout is never the canonical one."""
    record_bytes = bytes.fromhex(body)
    with pytest.raises(InvalidRecordError, match="shortest encoding"):
        check(batch([encode_varint(len(record_bytes)) + record_bytes]))


def test_an_attributes_byte_below_0x80_is_kafka_s_reading_too() -> None:
    check(batch([record(0, b"k", b"v", [(b"h", None)], attributes=0x7F)]))
