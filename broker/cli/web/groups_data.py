"""Groups of every type (classic, consumer, share, streams): their members, what each is
assigned, and the lag of every partition they consume.

ListGroups is asked of every broker (each lists the groups it coordinates) with the group types
of KIP-848; a group is described by the API of its type (DescribeGroups, ConsumerGroupDescribe,
ShareGroupDescribe, StreamsGroupDescribe) at the newest version both sides know, and where the
broker does not serve that API the page falls back to DescribeGroups and says so.  Lag is the
partition's log end offset minus the committed offset (share groups: what
DescribeShareGroupOffsets reports).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker.cli.web.errors import Gone, require
from broker.cli.web.links import Session
from broker.cli.web.offsets import Partition, leaders, log_offsets
from broker.client.admin_client import LATEST, KafkaConnection
from wire.api_keys import ApiKey
from wire.errors import DecodeError
from wire.primitives import INT16, INT32, read_array_length, read_string

OFFSET_FETCH_VERSION = 8
DESCRIBE_GROUPS_VERSION = 5
GROUPS_PER_REQUEST = 100


@dataclass(frozen=True)
class GroupRow:
    group_id: str
    type: str
    state: str
    protocol_type: str


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    host: str
    assignment: list[str]


@dataclass(frozen=True)
class LagRow:
    topic: str
    partition: int
    committed: int | None
    end: int | None
    lag: int | None


@dataclass
class GroupView:
    group_id: str
    type: str
    state: str
    members: list[Member]
    lag: list[LagRow]
    notes: list[str] = field(default_factory=list)

    @property
    def total_lag(self) -> int:
        return sum(row.lag or 0 for row in self.lag)


def list_groups(s: Session, metadata: dict[str, Any]) -> list[GroupRow]:
    """Every group of every broker (ListGroups v5 where served, with types; else v4, classic)."""
    version = s.version(ApiKey.LIST_GROUPS, 4, 5) or 4
    found: dict[str, GroupRow] = {}
    for broker in metadata["brokers"]:
        body: dict[str, list[str]] = {"states_filter": [], "types_filter": []}
        answer = s.node(broker["node_id"]).request(ApiKey.LIST_GROUPS, version, body)
        require(answer, "listing groups", "DESCRIBE on GROUP (for each group to list)")
        for g in answer["groups"]:
            kind = g.get("group_type") or "classic"
            found[g["group_id"]] = GroupRow(g["group_id"], kind, g["group_state"], g["protocol_type"])
    return sorted(found.values(), key=lambda g: g.group_id)


def committed_offsets(s: Session, groups: list[str]) -> dict[str, dict[Partition, int]]:
    """Every committed offset of each group: one OffsetFetch v8 per coordinator for up to
    ``GROUPS_PER_REQUEST`` of its groups."""
    by_coordinator: dict[int, list[str]] = {}
    for group in groups:
        by_coordinator.setdefault(id(s.coordinator(group)), []).append(group)
    found: dict[str, dict[Partition, int]] = {}
    for mine in by_coordinator.values():
        for start in range(0, len(mine), GROUPS_PER_REQUEST):
            chunk = mine[start : start + GROUPS_PER_REQUEST]
            body = {"groups": [{"group_id": g, "topics": None} for g in chunk], "require_stable": False}
            answer = s.coordinator(chunk[0]).request(ApiKey.OFFSET_FETCH, OFFSET_FETCH_VERSION, body)
            for group in answer["groups"]:
                name = group["group_id"]
                require(group, f"reading the offsets of group {name}", f"DESCRIBE on GROUP {name}")
                found[name] = {
                    (t["name"], p["partition_index"]): p["committed_offset"]
                    for t in group["topics"]
                    for p in t["partitions"]
                    if p["committed_offset"] >= 0
                }
    return found


def lag_rows(s: Session, committed: dict[Partition, int]) -> list[LagRow]:
    metadata = s.metadata(sorted({t for t, _ in committed}))
    end = log_offsets(s, leaders(metadata), LATEST)
    rows = []
    for (topic, partition), offset in sorted(committed.items()):
        latest = end.get((topic, partition))
        lag = None if latest is None else max(latest - offset, 0)
        rows.append(LagRow(topic, partition, offset, latest, lag))
    return rows


def consumer_assignment(data: bytes) -> list[str]:
    """The partitions of a classic consumer's ConsumerProtocolAssignment (topic-partition names);
    nothing if the bytes are not one (another protocol type's member)."""
    try:
        count, pos = read_array_length(data, INT16.size, 2)
        names = []
        for _ in range(count or 0):
            topic, pos = read_string(data, pos)
            partitions, pos = read_array_length(data, pos, INT32.size)
            for _ in range(partitions or 0):
                (number,) = INT32.unpack_from(data, pos)
                pos += INT32.size
                names.append(f"{topic}-{number}")
        return names
    except (DecodeError, ValueError, IndexError):
        return []


def topic_partition_names(assignment: dict[str, Any] | None) -> list[str]:
    """The partitions of a consumer or share member's assignment."""
    entries = (assignment or {}).get("topic_partitions") or []
    return [f"{t['topic_name']}-{p}" for t in entries for p in t["partitions"]]


def streams_tasks(assignment: dict[str, Any] | None) -> list[str]:
    """A streams member's active tasks as ``subtopology_partition`` (Kafka Streams' task ids)."""
    tasks = (assignment or {}).get("active_tasks") or []
    return [f"task {t['subtopology_id']}_{p}" for t in tasks for p in t["partitions"]]


def describe_classic(conn: KafkaConnection, group_id: str) -> tuple[str, list[Member]]:
    answer = conn.request(ApiKey.DESCRIBE_GROUPS, DESCRIBE_GROUPS_VERSION, {"groups": [group_id]})
    (group,) = answer["groups"]
    require(group, f"describing group {group_id}", f"DESCRIBE on GROUP {group_id}", f"group {group_id}")
    consumer = group["protocol_type"] == "consumer"
    members = [
        Member(
            m["member_id"],
            m["client_id"],
            m["client_host"],
            consumer_assignment(m["member_assignment"]) if consumer else [],
        )
        for m in group["members"]
    ]
    return group["group_state"], members


DESCRIBE_APIS = {
    "consumer": (ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, topic_partition_names),
    "share": (ApiKey.SHARE_GROUP_DESCRIBE, 1, 1, topic_partition_names),
    "streams": (ApiKey.STREAMS_GROUP_DESCRIBE, 0, 0, streams_tasks),
}
"""Per group type: its describe API, the versions the console speaks, and how its members'
assignments read."""


def describe_typed(
    s: Session, conn: KafkaConnection, group_id: str, kind: str
) -> tuple[str, list[Member]] | None:
    """A consumer, share or streams group through its own API; None where the broker lacks it."""
    api, lowest, highest, assigned = DESCRIBE_APIS[kind]
    version = s.version(api, lowest, highest)
    if version is None:
        return None
    body = {"group_ids": [group_id], "include_authorized_operations": False}
    (group,) = conn.request(api, version, body)["groups"]
    require(group, f"describing group {group_id}", f"DESCRIBE on GROUP {group_id}", f"group {group_id}")
    members = [
        Member(m["member_id"], m["client_id"], m["client_host"], assigned(m["assignment"]))
        for m in group["members"]
    ]
    return group["group_state"], members


def share_lag(conn: KafkaConnection, group_id: str) -> list[LagRow]:
    """Where a share group stands per partition and its lag (DescribeShareGroupOffsets)."""
    return [
        LagRow(topic, partition, start if start >= 0 else None, None, lag if lag >= 0 else None)
        for (topic, partition), (start, lag) in sorted(conn.share_group_offsets(group_id).items())
    ]


def group_view(s: Session, group_id: str) -> GroupView:
    conn = s.coordinator(group_id)
    listed = {g.group_id: g for g in list_groups(s, s.metadata([]))}
    if group_id not in listed:
        raise Gone(f"group {group_id} does not exist (any more): it may have been deleted or expired.")
    kind = listed[group_id].type
    notes = []
    described = describe_typed(s, conn, group_id, kind) if kind in DESCRIBE_APIS else None
    if described is None:
        if kind != "classic":
            notes.append(f"this broker does not serve the {kind} groups' describe API; DescribeGroups shows")
        described = describe_classic(conn, group_id)
    state, members = described
    if kind == "share" and s.version(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, 1) is not None:
        lag = share_lag(conn, group_id)
    else:
        lag = lag_rows(s, committed_offsets(s, [group_id])[group_id])
    return GroupView(group_id, kind, state, members, lag, notes)
