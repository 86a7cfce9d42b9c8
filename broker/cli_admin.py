"""``odradek topics`` and ``odradek groups``: look at and manage a running broker.

These speak the Kafka protocol through :mod:`broker.admin_client`, so they work against any
Kafka-compatible broker, and print tables a person can read: record counts per partition,
committed offsets and lag per group.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from broker.admin_client import EARLIEST, LATEST, KafkaConnection
from broker.cli_table import render_table
from wire.error_codes import ErrorCode


class AdminError(Exception):
    """A refused admin request; the message is shown to the user as is."""


def _check(entry: dict, action: str) -> None:
    code = entry.get("error_code", 0)
    if code:
        detail = entry.get("error_message") or ""
        raise AdminError(f"{action} failed: {ErrorCode(code).name}{': ' + detail if detail else ''}")


def topic_partitions(conn: KafkaConnection, topic: str) -> list[int]:
    (entry,) = conn.metadata([topic])["topics"]
    if entry["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        raise AdminError(f"topic {topic!r} does not exist (see `odradek topics list`)")
    _check(entry, f"describing {topic}")
    return sorted(p["partition_index"] for p in entry["partitions"])


def topics_list(conn: KafkaConnection, _args: argparse.Namespace) -> str:
    rows = []
    for entry in sorted(conn.metadata()["topics"], key=lambda t: t["name"]):
        partitions = [p["partition_index"] for p in entry["partitions"]]
        latest = conn.list_offsets(entry["name"], partitions, LATEST)
        earliest = conn.list_offsets(entry["name"], partitions, EARLIEST)
        records = sum(latest[p] - earliest[p] for p in partitions)
        rows.append([entry["name"], len(partitions), records, "yes" if entry["is_internal"] else ""])
    if not rows:
        return "no topics yet (create one with `odradek topics create NAME`)"
    return render_table(["TOPIC", "PARTITIONS", "RECORDS", "INTERNAL"], rows)


def topics_describe(conn: KafkaConnection, args: argparse.Namespace) -> str:
    partitions = topic_partitions(conn, args.topic)
    latest = conn.list_offsets(args.topic, partitions, LATEST)
    earliest = conn.list_offsets(args.topic, partitions, EARLIEST)
    table = render_table(
        ["PARTITION", "EARLIEST", "LATEST", "RECORDS"],
        [[p, earliest[p], latest[p], latest[p] - earliest[p]] for p in partitions],
    )
    overrides = [c for c in conn.describe_configs(args.topic) if c["config_source"] == 1]
    configs = "\n".join(f"  {c['name']}={c['value']}" for c in overrides) or "  (none; broker defaults apply)"
    return f"{table}\n\nconfig overrides:\n{configs}"


def topics_create(conn: KafkaConnection, args: argparse.Namespace) -> str:
    configs = dict(item.split("=", 1) for item in args.config)
    result = conn.create_topic(args.topic, args.partitions, configs)
    _check(result, f"creating {args.topic}")
    return f"created topic {args.topic} with {result['num_partitions']} partition(s)"


def topics_delete(conn: KafkaConnection, args: argparse.Namespace) -> str:
    _check(conn.delete_topic(args.topic), f"deleting {args.topic}")
    return f"deleted topic {args.topic}"


def groups_list(conn: KafkaConnection, _args: argparse.Namespace) -> str:
    groups = sorted(conn.list_groups(), key=lambda g: g["group_id"])
    if not groups:
        return "no consumer groups"
    return render_table(
        ["GROUP", "STATE", "PROTOCOL TYPE"],
        [[g["group_id"], g["group_state"], g["protocol_type"]] for g in groups],
    )


def groups_describe(conn: KafkaConnection, args: argparse.Namespace) -> str:
    group = conn.describe_group(args.group)
    _check(group, f"describing group {args.group}")
    committed = conn.committed_offsets(args.group)
    rows = []
    for topic in sorted({t for t, _ in committed}):
        partitions = sorted(p for t, p in committed if t == topic)
        latest = conn.list_offsets(topic, partitions, LATEST)
        for partition in partitions:
            offset = committed[(topic, partition)]
            lag = latest[partition] - offset if offset >= 0 else latest[partition]
            rows.append([topic, partition, offset, latest[partition], lag])
    members = ", ".join(m["member_id"] for m in group["members"]) or "none"
    header = f"group {args.group}: state {group['group_state']}, members: {members}"
    if not rows:
        return f"{header}\nno committed offsets"
    return header + "\n" + render_table(["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG"], rows)


Command = Callable[[KafkaConnection, argparse.Namespace], str]


def add_admin_commands(commands: argparse._SubParsersAction) -> None:
    """Register ``topics`` and ``groups`` subcommands on the ``odradek`` parser."""

    connection = argparse.ArgumentParser(add_help=False)
    connection.add_argument(
        "--bootstrap", default="localhost:9092", help="broker address (default localhost:9092)"
    )

    def family(name: str, help_text: str) -> argparse._SubParsersAction:
        return commands.add_parser(name, help=help_text).add_subparsers(dest="action", required=True)

    def action(
        sub: argparse._SubParsersAction, name: str, run: Command, help_text: str
    ) -> argparse.ArgumentParser:
        parser = sub.add_parser(name, help=help_text, parents=[connection])
        parser.set_defaults(admin=run)
        return parser

    topics = family("topics", "list, describe, create and delete topics")
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
    groups = family("groups", "list consumer groups and show their offsets and lag")
    action(groups, "list", groups_list, "every group with its state")
    action(groups, "describe", groups_describe, "committed offsets and lag per partition").add_argument(
        "group"
    )


def run_admin(args: argparse.Namespace) -> str:
    with KafkaConnection(args.bootstrap) as conn:
        return args.admin(conn, args)
