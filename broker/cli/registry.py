"""How ``odradek`` admin subcommands are declared, connected and their failures reported.

Each command family (topics, groups, configs) registers its actions here with one helper, so
every action gets the same ``--bootstrap`` and ``--output`` options and the same error style.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from broker.cli.table import Output
from broker.client.admin_client import KafkaConnection
from broker.client.routed import RoutedConnection
from broker.client.security import (
    PLAINTEXT,
    ClientSecurity,
    SecurityConfigError,
    security_from_properties,
)
from broker.config.config import parse_properties
from wire.error_codes import ErrorCode


class AdminError(Exception):
    """A refused admin request; the message is shown to the user as is."""


def check(entry: dict, action: str) -> None:
    """Raise :class:`AdminError` naming Kafka's error if ``entry`` carries one."""
    code = entry.get("error_code", 0)
    if code:
        detail = entry.get("error_message") or ""
        raise AdminError(f"{action} failed: {ErrorCode(code).name}{': ' + detail if detail else ''}")


Command = Callable[[KafkaConnection, argparse.Namespace], Output]


def client_security(path: str) -> ClientSecurity:
    """``--command-config``: a client properties file (Kafka's keys), read when the command starts."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise argparse.ArgumentTypeError(
            f"cannot read the client properties file {path}: {exc.strerror}"
        ) from exc
    try:
        return security_from_properties(parse_properties(text))
    except SecurityConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _connection_options() -> argparse.ArgumentParser:
    connection = argparse.ArgumentParser(add_help=False)
    connection.add_argument(
        "--bootstrap", default="localhost:9092", help="broker address (default localhost:9092)"
    )
    connection.add_argument(
        "--command-config",
        dest="security",
        type=client_security,
        default=PLAINTEXT,
        metavar="FILE",
        help="client properties for a secured listener, as Kafka's tools take them (security.protocol, "
        "sasl.mechanism, sasl.jaas.config, ssl.truststore.location with ssl.truststore.type=PEM, ...)",
    )
    return connection


def connect(args: argparse.Namespace, address: str | None = None) -> KafkaConnection:
    """A connection to ``address`` (default ``--bootstrap``) with the command's ``--command-config``."""
    return RoutedConnection(address or args.bootstrap, security=args.security)


def _output_options() -> argparse.ArgumentParser:
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument(
        "--output", choices=["text", "json"], default="text", help="a table (default) or JSON for scripts"
    )
    return output


CONNECTION, OUTPUT = _connection_options(), _output_options()


def family(commands: argparse._SubParsersAction, name: str, help_text: str) -> argparse._SubParsersAction:
    """A command family such as ``topics``, whose actions are subcommands."""
    return commands.add_parser(name, help=help_text).add_subparsers(dest="action", required=True)


def action(
    sub: argparse._SubParsersAction, name: str, run: Command, help_text: str
) -> argparse.ArgumentParser:
    """One admin action: connects to ``--bootstrap``, runs ``run`` and prints its output."""
    parser = sub.add_parser(name, help=help_text, parents=[CONNECTION, OUTPUT])
    parser.set_defaults(admin=run, run=run_admin)
    return parser


def run_admin(args: argparse.Namespace) -> str:
    with connect(args) as conn:
        return args.admin(conn, args).render(args.output)
