"""``odradek users list|describe|set|delete``: SCRAM credentials, as ``kafka-configs --entity-type users``.

They are DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), so they work
against any Kafka broker. ``set`` salts and hashes the password here, as Kafka's admin client
does, so the password never crosses the network: the broker receives only a random salt and
the salted password. Read the password from standard input (or a prompt on a terminal) rather
than the command line, where other users' ``ps`` would see it.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from broker.cli.registry import AdminError, action, check, family
from broker.cli.table import Output, table_output
from broker.client.admin_client import KafkaConnection
from broker.services.security.scram import HASHES, MECHANISM_TYPES, MIN_ITERATIONS, salt_password

MECHANISM_NAMES = {number: name for name, number in MECHANISM_TYPES.items()}
HEADERS = ["USER", "MECHANISM", "ITERATIONS"]


def credential_rows(conn: KafkaConnection, users: list[str] | None) -> list[list[object]]:
    """One row per (user, mechanism), sorted (brokers list mechanisms in different orders); a
    user the broker does not know is an error naming it."""
    described = conn.describe_scram_credentials(users)
    check(described, "describing SCRAM credentials")
    rows: list[list[object]] = []
    for result in described["results"]:
        check(result, f"describing the SCRAM credentials of {result['user']}")
        for info in result["credential_infos"]:
            mechanism = MECHANISM_NAMES.get(info["mechanism"], str(info["mechanism"]))
            rows.append([result["user"], mechanism, info["iterations"]])
    return sorted(rows)


def users_list(conn: KafkaConnection, _args: argparse.Namespace) -> Output:
    return table_output(
        HEADERS,
        credential_rows(conn, None),
        "no SCRAM users (add one with `odradek users set NAME --mechanism SCRAM-SHA-512`)",
    )


def users_describe(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    return table_output(HEADERS, credential_rows(conn, args.users), "")


def read_password(args: argparse.Namespace) -> str:
    """``--password``, else a prompt on a terminal, else the first line of standard input."""
    if args.password is not None:
        password = args.password
    elif sys.stdin.isatty():
        password = getpass.getpass(f"password for {args.user}: ")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise AdminError("the password is empty")
    return password


def check_results(results: list[dict], action_text: str) -> None:
    for result in results:
        check(result, f"{action_text} for {result['user']}")


def users_set(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    salt, salted = salt_password(args.mechanism, read_password(args), args.iterations)
    upsertion = {
        "name": args.user,
        "mechanism": MECHANISM_TYPES[args.mechanism],
        "iterations": args.iterations,
        "salt": salt,
        "salted_password": salted,
    }
    check_results(conn.alter_scram_credentials([upsertion], []), f"setting the {args.mechanism} credential")
    return Output(
        f"Completed updating the {args.mechanism} credential of user {args.user}.",
        {"user": args.user, "mechanism": args.mechanism, "iterations": args.iterations},
    )


def users_delete(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    """Removes the named mechanisms, or every credential the user has."""
    mechanisms = args.mechanism or [row[1] for row in credential_rows(conn, [args.user])]
    deletions = [{"name": args.user, "mechanism": MECHANISM_TYPES[m]} for m in mechanisms]
    # AlterUserScramCredentials refuses a user named twice in one request: one request each.
    for deletion in deletions:
        check_results(conn.alter_scram_credentials([], [deletion]), "deleting the SCRAM credential")
    return Output(
        f"Deleted the {', '.join(mechanisms)} credential(s) of user {args.user}.",
        {"user": args.user, "deleted": mechanisms},
    )


def add_user_commands(commands: argparse._SubParsersAction) -> None:
    """Register ``users list|describe|set|delete``."""
    users = family(commands, "users", "manage SCRAM users (SCRAM-SHA-256, SCRAM-SHA-512)")
    action(users, "list", users_list, "every SCRAM user with its mechanisms and iterations")
    action(users, "describe", users_describe, "the named users' mechanisms and iterations").add_argument(
        "users", nargs="+", metavar="USER"
    )
    setter = action(users, "set", users_set, "create a user's credential or change its password")
    setter.add_argument("user", metavar="USER")
    setter.add_argument("--mechanism", choices=sorted(HASHES), required=True)
    setter.add_argument(
        "--iterations", type=int, default=MIN_ITERATIONS, help=f"PBKDF2 rounds (default {MIN_ITERATIONS})"
    )
    setter.add_argument(
        "--password", help="the password (visible to `ps`; default: a prompt, or a line of stdin)"
    )
    deleter = action(users, "delete", users_delete, "remove a user's credentials")
    deleter.add_argument("user", metavar="USER")
    deleter.add_argument(
        "--mechanism",
        action="append",
        choices=sorted(HASHES),
        help="only this mechanism (repeatable; default: every one the user has)",
    )
