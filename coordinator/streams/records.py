"""A streams group in ``__consumer_offsets``, as Kafka writes it (KIP-1071, record types 17, 19-23).

Kafka persists a streams group as a handful of compacted records: the group's epoch
(StreamsGroupMetadata), its topology (StreamsGroupTopology), each member's metadata, target
assignment and current assignment, and the target assignment's epoch. A coordinator that takes
over the group's partition (a failover, a restart) replays them and serves the group where it
was: members keep their epochs and tasks instead of all rejoining from scratch.

The records are derived, not logged event by event: :func:`group_records` gives every record the
group's state calls for, keyed by the record key's bytes, and the coordinator writes the
difference from what it wrote last (changed values, and tombstones for keys the group no longer
has), so a heartbeat that changed nothing writes nothing. Replay keeps the same map per group
(the last value of each key), from which :func:`rebuild_group` makes the group again.

Written as Kafka 4.3 writes them except where noted: the metadata hash is this broker's own
digest of the topology's topics (Kafka's is a murmur3 of topic ids and racks; it only decides
whether a coordinator recomputes the assignment, which this one does from the topics anyway),
and the assignment timestamp and last assignment configs are left at their defaults.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from coordinator.assignors import Assignment
from coordinator.consumer_group import ConsumerMember, MemberState
from coordinator.streams.group import StreamsGroup, StreamsMemberInfo, sources_of, task_key, tasks_field
from coordinator.streams.topology import InternalTopic, StreamsTopology
from wire import stored_records
from wire.codegen import Message
from wire.internal_records.streams_groups import (
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    STREAMS_GROUP_MEMBER_METADATA_KEY,
    STREAMS_GROUP_MEMBER_METADATA_VALUE,
    STREAMS_GROUP_METADATA_KEY,
    STREAMS_GROUP_METADATA_VALUE,
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    STREAMS_GROUP_TOPOLOGY_KEY,
    STREAMS_GROUP_TOPOLOGY_VALUE,
)
from wire.schema import RecordSchema

VALUE_VERSION = 0
RecordMap = dict[bytes, bytes]
"""A group's records by key bytes: the last value written (or replayed) of each."""

_SCHEMAS = (
    (STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_METADATA_VALUE),
    (STREAMS_GROUP_TOPOLOGY_KEY, STREAMS_GROUP_TOPOLOGY_VALUE),
    (STREAMS_GROUP_MEMBER_METADATA_KEY, STREAMS_GROUP_MEMBER_METADATA_VALUE),
    (STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    (STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    (STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
)
_KEYS: dict[int, RecordSchema] = {key.record_type: key for key, _value in _SCHEMAS}
_VALUES: dict[int, RecordSchema] = {key.record_type: value for key, value in _SCHEMAS}
STREAMS_RECORD_TYPES = frozenset(_KEYS)

# Kafka's streams MemberState bytes.
_STATE_BYTES = {
    MemberState.STABLE: 1,
    MemberState.UNREVOKED_PARTITIONS: 2,
    MemberState.UNRELEASED_PARTITIONS: 3,
}
_STATES = {value: state for state, value in _STATE_BYTES.items()}


def key_group(key: bytes) -> str:
    """The group id of a streams record key (any of the six types)."""
    return stored_records.decode(_KEYS[stored_records.read_prefix(key)], key)["group_id"]


def _key(schema: RecordSchema, group_id: str, member_id: str | None = None) -> bytes:
    fields = {"group_id": group_id} if member_id is None else {"group_id": group_id, "member_id": member_id}
    return stored_records.encode(schema, stored_records.KEY_VERSION, fields)


def _value(schema: RecordSchema, fields: dict[str, Any]) -> bytes:
    return stored_records.encode(schema, VALUE_VERSION, fields)


# --- writing ---------------------------------------------------------------------------


def group_records(group: StreamsGroup) -> RecordMap:
    """Every record ``group``'s state calls for, by key."""
    gid = group.group_id
    topology = group.topology
    validated = topology.epoch if topology is not None and group.subscription_metadata else -1
    records = {
        _key(STREAMS_GROUP_METADATA_KEY, gid): _value(
            STREAMS_GROUP_METADATA_VALUE,
            {
                "epoch": group.group_epoch,
                "metadata_hash": _metadata_hash(group),
                "validated_topology_epoch": validated,
            },
        ),
        _key(STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, gid): _value(
            STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, {"assignment_epoch": group.assignment_epoch}
        ),
    }
    if topology is not None:
        records[_key(STREAMS_GROUP_TOPOLOGY_KEY, gid)] = _value(
            STREAMS_GROUP_TOPOLOGY_VALUE, _topology_fields(topology)
        )
    for member_id, member in group.members.items():
        info = group.info.get(member_id, StreamsMemberInfo())
        records[_key(STREAMS_GROUP_MEMBER_METADATA_KEY, gid, member_id)] = _value(
            STREAMS_GROUP_MEMBER_METADATA_VALUE, _member_fields(member, info)
        )
        records[_key(STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, gid, member_id)] = _value(
            STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
            {
                "member_epoch": member.member_epoch,
                "previous_member_epoch": member.previous_member_epoch,
                "state": _STATE_BYTES[member.state],
                "active_tasks": _tasks(member.assigned),
                "standby_tasks": _tasks(group.standby_sent.get(member_id, {})),
                "warmup_tasks": [],
                "active_tasks_pending_revocation": _tasks(member.pending_revocation),
                "standby_tasks_pending_revocation": [],
                "warmup_tasks_pending_revocation": [],
            },
        )
    for member_id, active in group.target.items():
        records[_key(STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, gid, member_id)] = _value(
            STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
            {
                "active_tasks": _tasks(active),
                "standby_tasks": _tasks(group.standby.get(member_id, {})),
                "warmup_tasks": [],
            },
        )
    return records


def changes(
    written: Mapping[bytes, bytes], wanted: Mapping[bytes, bytes]
) -> list[tuple[bytes, bytes | None]]:
    """The records that turn ``written`` into ``wanted``: new or changed values, then tombstones."""
    updated: list[tuple[bytes, bytes | None]] = [
        (key, value) for key, value in wanted.items() if written.get(key) != value
    ]
    return updated + [(key, None) for key in written if key not in wanted]


def _metadata_hash(group: StreamsGroup) -> int:
    """A signed 64-bit digest of the topology's topics and their partition counts."""
    digest = hashlib.blake2b(digest_size=8)
    for name, (_key_bytes, count) in sorted(group.subscription_metadata.items()):
        digest.update(b"%s:%d;" % (name.encode(), count))
    return int.from_bytes(digest.digest(), "big", signed=True)


def _tasks(assignment: Assignment) -> list[Message]:
    """The heartbeat's task list of ``assignment``, without subtopologies that have no task."""
    return [dict(tasks) for tasks in tasks_field(assignment) if tasks["partitions"]]


def _member_fields(member: ConsumerMember, info: StreamsMemberInfo) -> dict[str, Any]:
    endpoint = info.user_endpoint
    return {
        "instance_id": member.instance_id,
        "rack_id": member.rack_id,
        "client_id": member.client_id,
        "client_host": member.client_host,
        "rebalance_timeout_ms": member.rebalance_timeout_ms,
        "topology_epoch": info.topology_epoch,
        "process_id": info.process_id,
        "user_endpoint": None if endpoint is None else {"host": endpoint[0], "port": endpoint[1]},
        "client_tags": [{"key": k, "value": v} for k, v in info.client_tags],
    }


def _topology_fields(topology: StreamsTopology) -> dict[str, Any]:
    """The topology as Kafka's record has it: copartition groups as indexes into the
    subtopology's source and repartition source topics."""
    subtopologies = []
    for sub in topology.subtopologies:
        repartition_names = [t.name for t in sub.repartition_source_topics]
        subtopologies.append(
            {
                "subtopology_id": sub.subtopology_id,
                "source_topics": list(sub.source_topics),
                "source_topic_regex": [],
                "state_changelog_topics": [_topic_info(t) for t in sub.state_changelog_topics],
                "repartition_sink_topics": list(sub.repartition_sink_topics),
                "repartition_source_topics": [_topic_info(t) for t in sub.repartition_source_topics],
                "copartition_groups": [
                    {
                        "source_topics": _indexes(group, sub.source_topics),
                        "source_topic_regex": [],
                        "repartition_source_topics": _indexes(group, repartition_names),
                    }
                    for group in sub.copartition_groups
                ],
            }
        )
    return {"epoch": topology.epoch, "subtopologies": subtopologies}


def _topic_info(topic: InternalTopic) -> dict[str, Any]:
    return {
        "name": topic.name,
        "partitions": topic.partitions,
        "replication_factor": topic.replication_factor,
        "topic_configs": [{"key": k, "value": v} for k, v in topic.configs],
    }


def _indexes(names: Iterable[str], within: Iterable[str]) -> list[int]:
    positions = {name: i for i, name in enumerate(within)}
    return [positions[name] for name in names if name in positions]


# --- replaying -------------------------------------------------------------------------


def rebuild_group(group_id: str, records: RecordMap) -> StreamsGroup:
    """The streams group ``records`` describe (the last value of each of its keys)."""
    of_group: dict[int, Message] = {}  # record type -> value, for the group-wide records
    of_members: dict[int, dict[str, Message]] = {}  # record type -> member id -> value
    for key, value in records.items():
        record_type = stored_records.read_prefix(key)
        member_id = stored_records.decode(_KEYS[record_type], key).get("member_id")
        fields = stored_records.decode(_VALUES[record_type], value)
        if member_id is None:
            of_group[record_type] = fields
        else:
            of_members.setdefault(record_type, {})[member_id] = fields
    group = StreamsGroup(group_id)
    if (metadata := of_group.get(STREAMS_GROUP_METADATA_KEY.record_type)) is not None:
        group.group_epoch = metadata["epoch"]
    if (target := of_group.get(STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY.record_type)) is not None:
        group.assignment_epoch = target["assignment_epoch"]
    if (topology := of_group.get(STREAMS_GROUP_TOPOLOGY_KEY.record_type)) is not None:
        group.topology = StreamsTopology.from_request(topology)
    subscribed = frozenset(sources_of(group.topology))
    current = of_members.get(STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY.record_type, {})
    for member_id, fields in of_members.get(STREAMS_GROUP_MEMBER_METADATA_KEY.record_type, {}).items():
        held = current.get(member_id)
        group.put_member(
            ConsumerMember(
                member_id=member_id,
                instance_id=fields["instance_id"],
                rack_id=fields["rack_id"],
                client_id=fields["client_id"],
                client_host=fields["client_host"],
                rebalance_timeout_ms=fields["rebalance_timeout_ms"],
                subscribed_topic_names=subscribed,
                member_epoch=held["member_epoch"] if held else 0,
                previous_member_epoch=held["previous_member_epoch"] if held else -1,
                state=_STATES.get(held["state"], MemberState.STABLE) if held else MemberState.STABLE,
                assigned=_assignment(held["active_tasks"]) if held else {},
                pending_revocation=_assignment(held["active_tasks_pending_revocation"]) if held else {},
            )
        )
        endpoint = fields["user_endpoint"]
        group.info[member_id] = StreamsMemberInfo(
            process_id=fields["process_id"],
            topology_epoch=fields["topology_epoch"],
            user_endpoint=None if endpoint is None else (endpoint["host"], endpoint["port"]),
            client_tags=tuple((t["key"], t["value"]) for t in fields["client_tags"]),
        )
        if held:
            group.standby_sent[member_id] = _assignment(held["standby_tasks"])
    for member_id, fields in of_members.get(
        STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY.record_type, {}
    ).items():
        group.target[member_id] = _assignment(fields["active_tasks"])
        group.standby[member_id] = _assignment(fields["standby_tasks"])
    return group


def _assignment(tasks: list[Message]) -> Assignment:
    return {task_key(t["subtopology_id"]): frozenset(t["partitions"]) for t in tasks if t["partitions"]}
