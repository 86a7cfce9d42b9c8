"""Tests of the primitive encodings: varints (Kafka's and the record format's) and lengths."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wire import primitives as p
from wire.errors import DecodeError, EncodeError


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (2**32 - 1, "ffffffff0f")],
)
def test_uvarint_known_answers(value: int, encoded: str) -> None:
    assert p.encode_uvarint(value).hex() == encoded
    assert p.read_uvarint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (-1, "01"), (1, "02"), (-64, "7f"), (64, "8001"), (-(2**31), "ffffffff0f")],
)
def test_zigzag_varint_known_answers(value: int, encoded: str) -> None:
    assert p.encode_varint(value).hex() == encoded
    assert p.read_varint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1), st.binary(max_size=3))
def test_varlong_round_trip(value: int, suffix: bytes) -> None:
    encoded = p.encode_varlong(value)
    assert len(encoded) <= 10
    assert p.read_varlong(encoded + suffix, 0) == (value, len(encoded))


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**32 - 1))
def test_varint_and_uvarint_round_trip(signed: int, unsigned: int) -> None:
    assert p.read_varint(p.encode_varint(signed), 0)[0] == signed
    assert p.read_uvarint(p.encode_uvarint(unsigned), 0)[0] == unsigned


@pytest.mark.parametrize(
    ("reader", "data"),
    [
        (p.read_uvarint, b"\x80\x80\x80\x80\x80\x01"),
        (p.read_uvarint, b"\x80"),
        (p.read_varlong, b"\xff" * 10 + b"\x01"),
        (p.read_string, b"\x00\x05abc"),
        (p.read_bytes, b"\x7f\xff\xff\xff"),
        (p.read_compact_records, b"\x05ab"),
        (p.skip_tagged_fields, b"\x7f\x00\x00"),
    ],
)
def test_malformed_primitives(reader, data: bytes) -> None:
    with pytest.raises(DecodeError):
        reader(data, 0)


@pytest.mark.parametrize(
    ("encoder", "value"),
    [(p.encode_uvarint, -1), (p.encode_uvarint, 2**32), (p.encode_varint, 2**31), (p.encode_varlong, 2**63)],
)
def test_out_of_range_varints(encoder, value: int) -> None:
    with pytest.raises(EncodeError):
        encoder(value)


def test_array_count_is_bounded_by_remaining_bytes() -> None:
    assert p.read_array_length(b"\x00\x00\x00\x02" + bytes(8), 0, 4) == (2, 4)
    with pytest.raises(DecodeError):
        p.read_array_length(b"\x00\x00\x00\x03" + bytes(8), 0, 4)
    assert p.read_compact_array_length(b"\x00", 0, 1) == (None, 1)


def test_fixed_arrays() -> None:
    packed = p.pack_fixed_array([1, -2], "int32")
    assert packed == bytes.fromhex("00000001fffffffe")
    assert p.unpack_fixed_array(packed, 0, 2, "int32") == ([1, -2], 8)
    ids = [bytes(range(16)), bytes(16)]
    assert p.unpack_fixed_array(p.pack_fixed_array(ids, "uuid"), 0, 2, "uuid") == (ids, 32)


def test_lengths_of_memoryviews_count_bytes() -> None:
    view = memoryview(bytes(8)).cast("q")
    assert p.bytes_length(view) == p.INT32.pack(8)
    assert p.compact_bytes_length(None) == b"\x00"
