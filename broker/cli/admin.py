"""``odradek topics`` and ``odradek groups list|describe``: look at and manage a running broker.

These speak the Kafka protocol through :mod:`broker.client.admin_client`, so they work against any
Kafka-compatible broker, and print tables a person can read: record counts per partition,
committed offsets and lag per group.
"""

from __future__ import annotations

import argparse
from typing import Any

from broker.cli.registry import AdminError, action, check, family
from broker.cli.table import Output, render_table, table_output, table_records
from broker.client.admin_client import EARLIEST, LATEST, KafkaConnection
from wire.error_codes import ErrorCode

CONFIG_SOURCE_TOPIC = 1


def topic_partitions(conn: KafkaConnection, topic: str) -> list[int]:
    (entry,) = conn.metadata([topic])["topics"]
    if entry["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        raise AdminError(f"topic {topic!r} does not exist (see `odradek topics list`)")
    check(entry, f"describing {topic}")
    return sorted(p["partition_index"] for p in entry["partitions"])


def topics_list(conn: KafkaConnection, _args: argparse.Namespace) -> Output:
    rows = []
    for entry in sorted(conn.metadata()["topics"], key=lambda t: t["name"]):
        partitions = [p["partition_index"] for p in entry["partitions"]]
        latest = conn.list_offsets(entry["name"], partitions, LATEST)
        earliest = conn.list_offsets(entry["name"], partitions, EARLIEST)
        records = sum(latest[p] - earliest[p] for p in partitions)
        rows.append([entry["name"], len(partitions), records, entry["is_internal"]])
    return table_output(
        ["TOPIC", "PARTITIONS", "RECORDS", "INTERNAL"],
        rows,
        "no topics yet (create one with `odradek topics create NAME`)",
    )


def topics_describe(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    partitions = topic_partitions(conn, args.topic)
    latest = conn.list_offsets(args.topic, partitions, LATEST)
    earliest = conn.list_offsets(args.topic, partitions, EARLIEST)
    headers = ["PARTITION", "EARLIEST", "LATEST", "RECORDS"]
    rows = [[p, earliest[p], latest[p], latest[p] - earliest[p]] for p in partitions]
    described = conn.describe_configs(args.topic)
    check(described, f"describing the configs of {args.topic}")
    overrides = {
        c["name"]: c["value"] for c in described["configs"] if c["config_source"] == CONFIG_SOURCE_TOPIC
    }
    configs = "\n".join(f"  {k}={v}" for k, v in overrides.items()) or "  (none; broker defaults apply)"
    return Output(
        f"{render_table(headers, rows)}\n\nconfig overrides:\n{configs}",
        {"topic": args.topic, "partitions": table_records(headers, rows), "config_overrides": overrides},
    )


def topics_create(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    configs = dict(item.split("=", 1) for item in args.config)
    result = conn.create_topic(args.topic, args.partitions, configs)
    check(result, f"creating {args.topic}")
    partitions = result["num_partitions"]
    return Output(
        f"created topic {args.topic} with {partitions} partition(s)",
        {"topic": args.topic, "partitions": partitions},
    )


def topics_delete(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    check(conn.delete_topic(args.topic), f"deleting {args.topic}")
    return Output(f"deleted topic {args.topic}", {"deleted": args.topic})


def groups_list(conn: KafkaConnection, _args: argparse.Namespace) -> Output:
    groups = sorted(conn.list_groups(), key=lambda g: g["group_id"])
    return table_output(
        ["GROUP", "TYPE", "STATE", "PROTOCOL TYPE"],
        [[g["group_id"], g["group_type"], g["group_state"], g["protocol_type"]] for g in groups],
        "no groups",
    )


def latest_offsets(conn: KafkaConnection, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The log end offset of each (topic, partition), one ListOffsets per topic."""
    latest = {}
    for topic in sorted({t for t, _ in partitions}):
        numbers = sorted(p for t, p in partitions if t == topic)
        latest.update({(topic, p): o for p, o in conn.list_offsets(topic, numbers, LATEST).items()})
    return latest


def share_group_describe(conn: KafkaConnection, group: dict[str, Any]) -> Output:
    """A share group: its members and, per partition, where the group stands and its lag."""
    offsets = conn.share_group_offsets(group["group_id"])
    rows = [
        [topic, partition, start if start >= 0 else "-", lag if lag >= 0 else "-"]
        for (topic, partition), (start, lag) in sorted(offsets.items())
    ]
    members = [m["member_id"] for m in group["members"]]
    title = f"share group {group['group_id']}: state {group['group_state']}, members: {', '.join(members) or 'none'}"
    table = table_output(["TOPIC", "PARTITION", "START-OFFSET", "LAG"], rows, "no share-partitions", title)
    data = {
        "group": group["group_id"],
        "type": "share",
        "state": group["group_state"],
        "members": members,
        "offsets": table.data,
    }
    return Output(table.text, data)


def groups_describe(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    share = conn.describe_share_group(args.group)
    if share["error_code"] == ErrorCode.NONE:
        return share_group_describe(conn, share)
    group = conn.describe_group(args.group)
    check(group, f"describing group {args.group}")
    committed = conn.committed_offsets(args.group)
    latest = latest_offsets(conn, list(committed))
    rows = []
    for (topic, partition), offset in sorted(committed.items()):
        end = latest[(topic, partition)]
        rows.append([topic, partition, offset, end, end - offset if offset >= 0 else end])
    members = [m["member_id"] for m in group["members"]]
    title = f"group {args.group}: state {group['group_state']}, members: {', '.join(members) or 'none'}"
    table = table_output(
        ["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG"], rows, "no committed offsets", title
    )
    data = {"group": args.group, "state": group["group_state"], "members": members, "offsets": table.data}
    return Output(table.text, data)


def add_admin_commands(commands: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """Register ``topics`` and ``groups list|describe``; returns the ``groups`` family."""
    topics = family(commands, "topics", "list, describe, create and delete topics")
    action(topics, "list", topics_list, "every topic with its partition and record counts")
    action(topics, "describe", topics_describe, "offsets per partition and config overrides").add_argument(
        "topic"
    )
    create = action(topics, "create", topics_create, "create a topic")
    create.add_argument("topic")
    create.add_argument("--partitions", type=int, default=-1, help="default: the broker's num.partitions")
    create.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="topic config (repeatable)"
    )
    action(topics, "delete", topics_delete, "delete a topic and its data").add_argument("topic")
    groups = family(commands, "groups", "list, describe, reset and delete consumer groups")
    action(groups, "list", groups_list, "every group with its state")
    action(groups, "describe", groups_describe, "committed offsets and lag per partition").add_argument(
        "group"
    )
    return groups
