"""Keys and values of the records in ``__consumer_offsets``, in Apache Kafka's format.

Each record's key starts with an int16 *record type* that says what it describes: 0 and 1
an offset commit (group, topic, partition), 2 a classic group's metadata (group).  The value
starts with its own int16 version; a null value is a tombstone, which is what lets log
compaction drop deleted offsets and groups.  Using Kafka's layout (OffsetCommitKey type 1,
OffsetCommitValue v1/v3, GroupMetadataKey type 2, GroupMetadataValue v3) means Kafka's own
tools can read Odradek's offsets topic.  The layout itself is not written here: the codecs
come from declarations generated from Kafka's specs (``wire/internal_records``), so every
version Kafka defines is read, the flexible v4 values Kafka 4 writes included.  This module
only maps those records to the coordinator's own types.
"""

from __future__ import annotations

from dataclasses import dataclass

from wire import stored_records
from wire.codegen import Message
from wire.errors import DecodeError
from wire.internal_records.consumer_offsets import (
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    LEGACY_OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
)
from wire.primitives import Buffer

Record = tuple[bytes, bytes | None]
"""A record of an internal topic as the coordinators write it: key, and value (None: a tombstone)."""

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
class MemberIdentity:
    """Who a classic group member is, and the timeouts it joined with.

    Both the live member (:class:`coordinator.classic_group.ClassicMember`) and its persisted
    :class:`MemberMetadata` hold one, so the fields are declared once and persisting or
    restoring a member hands this value over whole.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """A classic group member as persisted after a rebalance (enough to resume after restart)."""

    identity: MemberIdentity
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

_KEYS = {
    schema.record_type: schema for schema in (LEGACY_OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY, GROUP_METADATA_KEY)
}


def encode_offset_commit(key: OffsetCommitKey, value: OffsetAndMetadata | None) -> Record:
    """The (key, value) of an offset commit record; ``value`` None makes a tombstone."""
    key_bytes = stored_records.encode(
        OFFSET_COMMIT_KEY,
        stored_records.KEY_VERSION,
        {"group": key.group, "topic": key.topic, "partition": key.partition},
    )
    if value is None:
        return key_bytes, None
    fields = {
        "offset": value.offset,
        "metadata": value.metadata,
        "commit_timestamp": value.commit_timestamp_ms,
    }
    if value.expire_timestamp_ms is not None:
        version = OFFSET_VALUE_VERSION_WITH_EXPIRY
        fields["expire_timestamp"] = value.expire_timestamp_ms
    else:
        version = OFFSET_VALUE_VERSION
        fields["leader_epoch"] = value.leader_epoch
    return key_bytes, stored_records.encode(OFFSET_COMMIT_VALUE, version, fields)


def encode_group_metadata(key: GroupMetadataKey, value: GroupMetadata | None) -> Record:
    """The (key, value) of a group metadata record; ``value`` None makes a tombstone."""
    key_bytes = stored_records.encode(GROUP_METADATA_KEY, stored_records.KEY_VERSION, {"group": key.group})
    if value is None:
        return key_bytes, None
    fields = {
        "protocol_type": value.protocol_type,
        "generation": value.generation,
        "protocol": value.protocol,
        "leader": value.leader,
        "current_state_timestamp": value.current_state_timestamp_ms,
        "members": [_member_fields(member) for member in value.members],
    }
    return key_bytes, stored_records.encode(GROUP_METADATA_VALUE, GROUP_VALUE_VERSION, fields)


def _member_fields(member: MemberMetadata) -> Message:
    """One member of a GroupMetadataValue, under the names of Kafka's schema."""
    identity = member.identity
    return {
        "member_id": identity.member_id,
        "group_instance_id": identity.group_instance_id,
        "client_id": identity.client_id,
        "client_host": identity.client_host,
        "rebalance_timeout": identity.rebalance_timeout_ms,
        "session_timeout": identity.session_timeout_ms,
        "subscription": member.subscription,
        "assignment": member.assignment,
    }


def decode_key(key: Buffer) -> RecordKey:
    """Parse a record key; raises :class:`DecodeError` for record types we do not keep."""
    record_type = stored_records.read_prefix(key)
    schema = _KEYS.get(record_type)
    if schema is None:
        raise DecodeError(f"unknown __consumer_offsets record type {record_type}")
    fields = stored_records.decode(schema, key)
    if schema is GROUP_METADATA_KEY:
        return GroupMetadataKey(fields["group"])
    return OffsetCommitKey(fields["group"], fields["topic"], fields["partition"])


def decode_offset_value(value: Buffer) -> OffsetAndMetadata:
    """Parse an OffsetCommitValue of any version Kafka defines."""
    version = stored_records.read_prefix(value)
    fields = stored_records.decode(OFFSET_COMMIT_VALUE, value)
    return OffsetAndMetadata(
        offset=fields["offset"],
        leader_epoch=fields["leader_epoch"],
        metadata=fields["metadata"],
        commit_timestamp_ms=fields["commit_timestamp"],
        expire_timestamp_ms=fields["expire_timestamp"]
        if version == OFFSET_VALUE_VERSION_WITH_EXPIRY
        else None,
    )


def decode_group_value(value: Buffer) -> GroupMetadata:
    """Parse a GroupMetadataValue of any version Kafka defines."""
    fields = stored_records.decode(GROUP_METADATA_VALUE, value)
    return GroupMetadata(
        fields["protocol_type"],
        fields["generation"],
        fields["protocol"],
        fields["leader"],
        fields["current_state_timestamp"],
        tuple(_member_from_fields(member) for member in fields["members"]),
    )


def _member_from_fields(member: Message) -> MemberMetadata:
    """One member of a decoded GroupMetadataValue (the inverse of :func:`_member_fields`)."""
    identity = MemberIdentity(
        member_id=member["member_id"],
        group_instance_id=member["group_instance_id"],
        client_id=member["client_id"],
        client_host=member["client_host"],
        # Kafka reads a missing rebalance timeout (v0) as the session timeout.
        rebalance_timeout_ms=member["session_timeout"]
        if member["rebalance_timeout"] == -1
        else member["rebalance_timeout"],
        session_timeout_ms=member["session_timeout"],
    )
    return MemberMetadata(identity, bytes(member["subscription"]), bytes(member["assignment"]))
