"""The ``odradek`` command line.

``odradek serve`` starts a broker the way Kafka's start script does: a properties file with
Kafka's key names, overridable by ``--override key=value`` (repeatable) and by the shortcut
flags below.  With no arguments at all it serves ``localhost:9092`` from ``./odradek-data``.
``odradek topics|groups|configs ...`` inspect and manage a running broker,
``odradek console-produce|console-consume`` move records between a terminal and a topic, and
``odradek dump-log`` reads a partition's files offline.

Only ``serve`` loads the broker itself (``broker.node.server``, every service, the etcd client):
it is imported when ``serve`` runs, so an admin or console command starts in half a second
instead of one and a half (tests run it hundreds of times; operators in scripts, too).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from broker.cli.admin import add_admin_commands
from broker.cli.cluster_import import add_cluster_import_command
from broker.cli.configs import add_config_commands
from broker.cli.console import add_console_commands
from broker.cli.dump import add_dump_command
from broker.cli.group_offsets import add_group_offset_actions
from broker.cli.local_cluster import add_local_cluster_command
from broker.cli.registry import AdminError
from broker.cli.users import add_user_commands
from broker.cli.web.command import add_web_console_command
from broker.client.admin_client import BrokerUnreachable
from broker.config.config import BrokerConfig, ConfigError
from broker.network.bind_failure import BindFailure

if TYPE_CHECKING:
    from broker.node.server import Broker

log = logging.getLogger("odradek")


def _parse_override(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--override expects key=value, got {text!r}")
    key, value = text.split("=", 1)
    return key.strip(), value.strip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="odradek", description="A Kafka-compatible broker.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("serve", help="run a broker")
    run.add_argument("--config", help="a server.properties file (Kafka key names)")
    run.add_argument("--data-dir", help="shortcut for --override log.dirs=DIR")
    run.add_argument("--listeners", help="shortcut for listeners, e.g. PLAINTEXT://localhost:9092")
    run.add_argument("--advertised-listeners", help="shortcut for advertised.listeners")
    run.add_argument("--node-id", type=int, help="shortcut for node.id")
    run.add_argument(
        "--cluster",
        metavar="etcd://HOST:PORT,...",
        help="join the cluster whose metadata is in this etcd (shortcut for cluster.etcd.endpoints)",
    )
    run.add_argument(
        "--processes",
        metavar="N|auto",
        help="run N broker processes to use N cores, auto = every usable core (shortcut for num.processes)",
    )
    run.add_argument(
        "--override",
        action="append",
        default=[],
        type=_parse_override,
        metavar="KEY=VALUE",
        help="set any broker config key (repeatable; wins over the file and the environment)",
    )
    run.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    run.add_argument(
        "--log-requests",
        action="store_true",
        help="log one JSON line per request (shortcut for log.requests.enable=true)",
    )
    add_group_offset_actions(add_admin_commands(commands))
    add_config_commands(commands)
    add_user_commands(commands)
    add_console_commands(commands)
    add_web_console_command(commands)
    add_dump_command(commands)
    add_local_cluster_command(commands)
    add_cluster_import_command(commands)
    return parser


def config_from_args(args: argparse.Namespace) -> BrokerConfig:
    overrides = dict(args.override)
    if args.log_requests:
        overrides["log.requests.enable"] = "true"
    for flag, key in (
        ("data_dir", "log.dirs"),
        ("listeners", "listeners"),
        ("advertised_listeners", "advertised.listeners"),
        ("node_id", "node.id"),
        ("cluster", "cluster.etcd.endpoints"),
        ("processes", "num.processes"),
    ):
        value = getattr(args, flag)
        if value is not None:
            overrides[key] = str(value)
    return BrokerConfig.load(args.config, overrides)


async def run_broker(broker: Broker) -> None:
    """Serve until SIGINT or SIGTERM, then stop accepting and close the logs cleanly."""
    from broker.node.server import serve

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        if broker.cluster is not None:
            await broker.cluster.start()  # before the nursery: EtcdUnavailable ends the start plainly
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(serve, broker)
            for listener in listeners:
                log.info(
                    "Odradek node %d listening on %s://%s:%d",
                    broker.node_id,
                    listener.name,
                    listener.host,
                    listener.port,
                )
            log.info(
                "advertising %s:%d, data in %s", broker.endpoint.host, broker.endpoint.port, broker.data_dir
            )
            async for signum in signals:
                log.info("received %s, shutting down", signal.Signals(signum).name)
                if broker.cluster is not None:
                    await broker.cluster.controlled_shutdown()
                nursery.cancel_scope.cancel()
                break
        if broker.cluster is not None:
            await broker.cluster.leave()


def lone_bind_failure(group: BaseExceptionGroup) -> BindFailure | None:
    """The listener that could not bind, dug out of the nursery groups it ended the start in;
    None if anything else went wrong too (that keeps its traceback: it may be a bug)."""
    matched, rest = group.split(BindFailure)
    if matched is None or rest is not None:
        return None
    found: BaseException = matched
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    return found if isinstance(found, BindFailure) else None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command != "serve":
        try:
            result = args.run(args)
        except (AdminError, BrokerUnreachable, ConnectionError) as exc:
            print(f"odradek: {exc}", file=sys.stderr)
            return 1
        if result is not None:
            print(result)
        return 0
    return run_serve(args)


def processes_data(config: BrokerConfig) -> str | None:
    """``num.processes=N`` if ``odradek serve --processes`` keeps its data in ``log.dirs``: a
    single broker must not open it (it would read each process's directory as a partition)."""
    from broker.cli.processes import MARKER

    for directory in config.log_dirs:
        marker = Path(directory) / MARKER
        if marker.exists():
            return marker.read_text().strip()
    return None


def run_serve(args: argparse.Namespace) -> int:
    """``odradek serve``: the broker, until SIGINT or SIGTERM; its exit status."""
    from broker.node.server import Broker
    from broker.services.cluster.etcd_client import EtcdUnavailable

    logging.basicConfig(
        level=getattr(logging, args.log_level), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # httpx (the etcd client's transport) logs every request at INFO: a cluster member's
    # heartbeats would fill the log.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.getLogger().level))
    try:
        config = config_from_args(args)
    except ConfigError as exc:
        print(f"odradek: configuration error: {exc}", file=sys.stderr)
        return 2
    if config.processes > 1 or ("num.processes" in config.explicit and processes_data(config)):
        from broker.cli.processes import run_processes

        return run_processes(args, config)
    try:
        if processes_data(config):
            raise ConfigError(
                f"{config.log_dirs[0]} holds the data of odradek serve --processes "
                f"({processes_data(config)}); start it with --processes (the same N, or another to move its partitions)"
            )
        broker = Broker(config)
    except ConfigError as exc:
        print(f"odradek: configuration error: {exc}", file=sys.stderr)
        return 2
    for key in config.unknown_keys:
        log.warning("unknown config key %s (ignored); check its spelling against Kafka's broker configs", key)
    try:
        trio.run(run_broker, broker)
    except EtcdUnavailable as exc:
        print(f"odradek: cannot join the cluster: {exc}", file=sys.stderr)
        return 1
    except (BindFailure, BaseExceptionGroup) as exc:
        failure = exc if isinstance(exc, BindFailure) else lone_bind_failure(exc)
        if failure is None:
            raise
        print(f"odradek: {failure}", file=sys.stderr)
        return 1
    finally:
        broker.close()
    log.info("stopped cleanly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
