"""The ``__consumer_offsets`` record format and the group -> partition mapping."""

from __future__ import annotations

import struct

import pytest

from coordinator.offsets_topic import java_string_hash, partition_for
from coordinator.records import (
    GroupMetadata,
    GroupMetadataKey,
    MemberIdentity,
    MemberMetadata,
    OffsetAndMetadata,
    OffsetCommitKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_metadata,
    encode_offset_commit,
)
from wire.errors import DecodeError


def test_offset_commit_record_has_kafkas_layout() -> None:
    key, value = encode_offset_commit(
        OffsetCommitKey("g", "t", 3),
        OffsetAndMetadata(offset=42, leader_epoch=5, metadata="m", commit_timestamp_ms=9),
    )
    assert key == struct.pack(">hh1sh1si", 1, 1, b"g", 1, b"t", 3)
    assert value == struct.pack(">hqih1sq", 3, 42, 5, 1, b"m", 9)
    assert decode_key(key) == OffsetCommitKey("g", "t", 3)
    assert decode_offset_value(value) == OffsetAndMetadata(42, 5, "m", 9)


def test_offsets_with_an_expiry_use_value_version_1() -> None:
    original = OffsetAndMetadata(
        offset=1, leader_epoch=-1, metadata="", commit_timestamp_ms=2, expire_timestamp_ms=3
    )
    _, value = encode_offset_commit(OffsetCommitKey("g", "t", 0), original)
    assert struct.unpack_from(">h", value)[0] == 1
    assert decode_offset_value(value) == original


def test_old_offset_value_versions_decode() -> None:
    v0 = struct.pack(">hqh2sq", 0, 7, 2, b"md", 11)
    assert decode_offset_value(v0) == OffsetAndMetadata(7, -1, "md", 11)


def test_kafka_4_flexible_offset_value_decodes() -> None:
    """Kafka 4 writes OffsetCommitValue v4 (compact strings, the topic id as tagged field 0)."""
    topic_id = bytes(range(16))
    v4 = struct.pack(">hqiB2sqBBB16s", 4, 7, 3, 3, b"md", 11, 1, 0, 16, topic_id)
    assert decode_offset_value(v4) == OffsetAndMetadata(7, 3, "md", 11)


def test_group_metadata_round_trip_and_tombstone() -> None:
    value = GroupMetadata(
        protocol_type="consumer",
        generation=4,
        protocol="range",
        leader="m1",
        current_state_timestamp_ms=123,
        members=(
            MemberMetadata(MemberIdentity("m1", "i1", "c1", "/h1", 30_000, 10_000), b"sub", b"assign"),
            MemberMetadata(MemberIdentity("m2", None, "c2", "/h2", 30_000, 10_000), b"", b""),
        ),
    )
    key, encoded = encode_group_metadata(GroupMetadataKey("g"), value)
    assert key == struct.pack(">hh1s", 2, 1, b"g")
    assert decode_key(key) == GroupMetadataKey("g")
    assert decode_group_value(encoded) == value
    assert encode_group_metadata(GroupMetadataKey("g"), None) == (key, None)


def test_garbage_raises_decode_error() -> None:
    with pytest.raises(DecodeError):
        decode_key(b"\x00\x07abc")
    with pytest.raises(DecodeError):
        decode_offset_value(b"\x00\x03\x00")
    with pytest.raises(DecodeError):
        decode_group_value(b"\x00\x09")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("hello", 99162322), ("polygenelubricants", -(2**31)), ("é", 233), ("😀", 1772899)],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_partition_for_matches_kafka() -> None:
    assert partition_for("polygenelubricants", 50) == 0  # Integer.MIN_VALUE maps to 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert 0 <= partition_for("my-group", 50) < 50
