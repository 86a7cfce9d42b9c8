"""``odradek configs get|set|delete``: a topic's or broker's configs, as kafka-configs.sh.

``get`` shows what is not a default (``--all`` for every key) with where each value comes
from; ``set`` and ``delete`` are IncrementalAlterConfigs SET and DELETE, so keys not named
keep their values, which is what an operator changing one key means.
"""

from __future__ import annotations

import argparse

from broker.cli.registry import AdminError, action, check, family
from broker.cli.table import Output, table_output
from broker.client.admin_client import BROKER_RESOURCE, TOPIC_RESOURCE, KafkaConnection
from broker.config.config_defs import ConfigSource

SET, DELETE = 0, 1


def resource(args: argparse.Namespace) -> tuple[int, str, str]:
    """(resource type, name, what to call it in messages) from ``--topic`` or ``--broker``."""
    if args.topic is not None:
        return TOPIC_RESOURCE, args.topic, f"topic {args.topic}"
    return BROKER_RESOURCE, str(args.broker), f"broker {args.broker}"


def source_name(source: int) -> str:
    try:
        return ConfigSource(source).name
    except ValueError:
        return str(source)


def configs_get(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    kind, name, label = resource(args)
    described = conn.describe_configs(name, kind)
    check(described, f"describing the configs of {label}")
    rows = []
    for entry in sorted(described["configs"], key=lambda c: c["name"]):
        if args.keys and entry["name"] not in args.keys:
            continue
        if not (args.all or args.keys) and entry["config_source"] == ConfigSource.DEFAULT_CONFIG:
            continue
        value = "(sensitive)" if entry["is_sensitive"] else entry["value"]
        rows.append([entry["name"], "" if value is None else value, source_name(entry["config_source"])])
    unknown = sorted(set(args.keys) - {row[0] for row in rows})
    if unknown:
        raise AdminError(f"{label} has no config named {', '.join(unknown)}")
    return table_output(
        ["NAME", "VALUE", "SOURCE"], rows, f"{label} has only default configs (--all shows them)"
    )


def alter(
    conn: KafkaConnection, args: argparse.Namespace, changes: list[tuple[str, int, str | None]]
) -> None:
    kind, name, label = resource(args)
    check(conn.alter_configs(name, changes, kind), f"changing the configs of {label}")


def configs_set(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    pairs = []
    for item in args.pairs:
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise AdminError(f"expected KEY=VALUE, got {item!r}")
        pairs.append((key, value))
    alter(conn, args, [(key, SET, value) for key, value in pairs])
    label = resource(args)[2]
    return Output(f"Completed updating config for {label}.", {"set": dict(pairs)})


def configs_delete(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    alter(conn, args, [(key, DELETE, None) for key in args.keys])
    label = resource(args)[2]
    return Output(f"Completed deleting config(s) {', '.join(args.keys)} of {label}.", {"deleted": args.keys})


def add_config_commands(commands: argparse._SubParsersAction) -> None:
    """Register ``configs get|set|delete``."""
    configs = family(commands, "configs", "show and change topic and broker configs")

    def target(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--topic", help="a topic's configs")
        which.add_argument("--broker", type=int, metavar="NODE_ID", help="a broker's configs")
        return parser

    get = target(
        action(configs, "get", configs_get, "configs that differ from the defaults, and their sources")
    )
    get.add_argument("keys", nargs="*", metavar="KEY", help="only these keys")
    get.add_argument("--all", action="store_true", help="defaults too")
    target(action(configs, "set", configs_set, "set keys (others keep their values)")).add_argument(
        "pairs", nargs="+", metavar="KEY=VALUE"
    )
    target(action(configs, "delete", configs_delete, "remove overrides (back to the defaults)")).add_argument(
        "keys", nargs="+", metavar="KEY"
    )
