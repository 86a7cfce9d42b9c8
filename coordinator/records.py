"""Keys and values of the records in ``__consumer_offsets``, in Apache Kafka's format.

Each record's key starts with an int16 *key version* that says what it describes:
0 and 1 an offset commit (group, topic, partition), 2 a classic group's metadata (group).
The value starts with its own int16 version; a null value is a tombstone, which is what
lets log compaction drop deleted offsets and groups.  Using Kafka's layout (OffsetCommitKey
v1, OffsetCommitValue v1/v3, GroupMetadataKey v2, GroupMetadataValue v3) means Kafka's own
tools can read Odradek's offsets topic, and the format question is settled by the
specification rather than by us.  Values of versions 0-3 are read; flexible v4 values, which
Kafka writes only with tagged fields we have no use for, are rejected as undecodable.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from wire.errors import DecodeError
from wire.primitives import (
    INT16,
    INT32,
    INT64,
    Buffer,
    bytes_length,
    encode_string,
    read_array_length,
    read_bytes,
    read_string,
)

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
# OffsetCommitValue v3 adds the leader epoch; v1 is the only one with an expire timestamp,
# which Kafka still writes when an old client (OffsetCommit v2-4) asked for a retention time.
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_VALUE_VERSION = 3

NO_LEADER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """One committed position, as OffsetFetch returns it and retention judges it."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """A classic group member as persisted after a rebalance (enough to resume after restart)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """A classic group's generation, protocol, leader and members."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberMetadata, ...]


RecordKey = OffsetCommitKey | GroupMetadataKey


def encode_offset_commit(key: OffsetCommitKey, value: OffsetAndMetadata | None) -> tuple[bytes, bytes | None]:
    """The (key, value) of an offset commit record; ``value`` None makes a tombstone."""
    key_bytes = b"".join(
        (
            INT16.pack(OFFSET_COMMIT_KEY_VERSION),
            encode_string(key.group),
            encode_string(key.topic),
            INT32.pack(key.partition),
        )
    )
    if value is None:
        return key_bytes, None
    if value.expire_timestamp_ms is not None:
        value_bytes = b"".join(
            (
                INT16.pack(OFFSET_VALUE_VERSION_WITH_EXPIRY),
                INT64.pack(value.offset),
                encode_string(value.metadata),
                INT64.pack(value.commit_timestamp_ms),
                INT64.pack(value.expire_timestamp_ms),
            )
        )
    else:
        value_bytes = b"".join(
            (
                INT16.pack(OFFSET_VALUE_VERSION),
                INT64.pack(value.offset),
                INT32.pack(value.leader_epoch),
                encode_string(value.metadata),
                INT64.pack(value.commit_timestamp_ms),
            )
        )
    return key_bytes, value_bytes


def encode_group_metadata(key: GroupMetadataKey, value: GroupMetadata | None) -> tuple[bytes, bytes | None]:
    """The (key, value) of a group metadata record; ``value`` None makes a tombstone."""
    key_bytes = INT16.pack(GROUP_METADATA_KEY_VERSION) + encode_string(key.group)
    if value is None:
        return key_bytes, None
    parts = [
        INT16.pack(GROUP_VALUE_VERSION),
        encode_string(value.protocol_type),
        INT32.pack(value.generation),
        encode_string(value.protocol),
        encode_string(value.leader),
        INT64.pack(value.current_state_timestamp_ms),
        INT32.pack(len(value.members)),
    ]
    for member in value.members:
        parts += (
            encode_string(member.member_id),
            encode_string(member.group_instance_id),
            encode_string(member.client_id),
            encode_string(member.client_host),
            INT32.pack(member.rebalance_timeout_ms),
            INT32.pack(member.session_timeout_ms),
            bytes_length(member.subscription),
            member.subscription,
            bytes_length(member.assignment),
            member.assignment,
        )
    return key_bytes, b"".join(parts)


class _Reader:
    """Sequential reader over one key or value; every read is bounds-checked."""

    def __init__(self, buf: Buffer) -> None:
        self.buf = buf
        self.pos = 0

    def int16(self) -> int:
        return self._fixed(INT16)

    def int32(self) -> int:
        return self._fixed(INT32)

    def int64(self) -> int:
        return self._fixed(INT64)

    def _fixed(self, codec: struct.Struct) -> int:
        if self.pos + codec.size > len(self.buf):
            raise DecodeError(f"truncated record at offset {self.pos}")
        (value,) = codec.unpack_from(self.buf, self.pos)
        self.pos += codec.size
        return value

    def nullable_string(self) -> str | None:
        value, self.pos = read_string(self.buf, self.pos)
        return value

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise DecodeError(f"null string at offset {self.pos}")
        return value

    def bytes(self) -> bytes:
        value, self.pos = read_bytes(self.buf, self.pos)
        return b"" if value is None else value

    def count(self) -> int:
        count, self.pos = read_array_length(self.buf, self.pos, 1)
        return count or 0

    def value_version(self, what: str) -> int:
        """The int16 version a value starts with; 0-3 are read (see the module docstring)."""
        version = self.int16()
        if not 0 <= version <= 3:
            raise DecodeError(f"unsupported {what} value version {version}")
        return version


def decode_key(key: Buffer) -> RecordKey:
    """Parse a record key; raises :class:`DecodeError` for unknown key versions."""
    reader = _Reader(key)
    version = reader.int16()
    if version in (0, 1):
        return OffsetCommitKey(reader.string(), reader.string(), reader.int32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupMetadataKey(reader.string())
    raise DecodeError(f"unknown __consumer_offsets key version {version}")


def decode_offset_value(value: Buffer) -> OffsetAndMetadata:
    """Parse an OffsetCommitValue of version 0-3."""
    reader = _Reader(value)
    version = reader.value_version("offset commit")
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else NO_LEADER_EPOCH
    metadata = reader.string()
    commit_timestamp = reader.int64()
    expire_timestamp = reader.int64() if version == 1 else None
    return OffsetAndMetadata(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


def decode_group_value(value: Buffer) -> GroupMetadata:
    """Parse a GroupMetadataValue of version 0-3."""
    reader = _Reader(value)
    version = reader.value_version("group metadata")
    protocol_type = reader.string()
    generation = reader.int32()
    protocol = reader.nullable_string()
    leader = reader.nullable_string()
    timestamp = reader.int64() if version >= 2 else -1
    members = []
    for _ in range(reader.count()):
        member_id = reader.string()
        instance_id = reader.nullable_string() if version >= 3 else None
        client_id = reader.string()
        client_host = reader.string()
        rebalance_timeout = reader.int32() if version >= 1 else -1
        session_timeout = reader.int32()
        members.append(
            MemberMetadata(
                member_id=member_id,
                group_instance_id=instance_id,
                client_id=client_id,
                client_host=client_host,
                # Kafka reads a missing rebalance timeout (v0) as the session timeout.
                rebalance_timeout_ms=session_timeout if rebalance_timeout == -1 else rebalance_timeout,
                session_timeout_ms=session_timeout,
                subscription=reader.bytes(),
                assignment=reader.bytes(),
            )
        )
    return GroupMetadata(protocol_type, generation, protocol, leader, timestamp, tuple(members))
