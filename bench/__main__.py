"""``python -m bench``: produce/consume throughput of Odradek and Tansu, side by side, in one run.

``python -m bench scale ...`` runs the many-partitions, many-connections comparison instead
(``bench.scale``); ``python -m bench replicated ...`` three-broker clusters with RF 3 and
acks=all (``bench.replicated``); ``python -m bench hostile ...`` a healthy client's latency beside
hostile connections (``bench.hostile``); ``python -m bench rolling-restart`` produce latency while
a cluster's brokers restart in turn (``bench.rolling_restart``); ``python -m bench share-consumers``
a share group's records/s (``bench.share_consumers``); ``python -m bench streams-rebalance`` the
time from a Kafka Streams instance's SIGKILL to a rebalanced group (``bench.streams_rebalance``);
``python -m bench cores`` one process beside ``serve --processes N`` and Kafka (``bench.cores``).

Why both brokers in one run: this machine is shared and noisy, so figures from different
runs do not compare; interleaving the brokers within one run (and --repeat) does. The same
holds for plaintext against TLS (``--security plaintext,tls``): every broker in every mode
takes its turn in each repeat.
"""

import argparse
import signal
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

from bench import cores, hostile, replicated, rolling_restart, scale, share_consumers, streams_rebalance
from bench.launchers import add_build_option, builds_of, make_launchers, names_of, securities
from bench.report import add_trial_options, report
from bench.throughput import CLIENTS, Settings, add_client_option, interleave, run_trial


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--messages", type=int, help="messages per trial")
    size.add_argument("--megabytes", type=float, default=1000.0, help="value MB per trial (default 1000)")
    parser.add_argument("--partitions", type=int, default=4, help="topic partitions (default 4)")
    parser.add_argument(
        "--brokers", default="odradek,tansu", help="comma-separated, from: odradek,apache-kafka,tansu"
    )
    parser.add_argument(
        "--security",
        default="plaintext",
        help="comma-separated listener kinds, from: plaintext,tls (a TLS listener for Odradek and Apache Kafka)",
    )
    add_trial_options(parser)
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for odradek serve (repeatable)")  # fmt: skip
    parser.add_argument("--override-all", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for Odradek and Apache Kafka alike (repeatable)")  # fmt: skip
    add_build_option(parser)
    add_client_option(parser)
    parser.add_argument(
        "--transaction-records",
        type=int,
        default=0,
        metavar="N",
        help="produce transactionally, committing every N records (acks=all, idempotent)",
    )
    return parser.parse_args(argv)


def _exit_on_sigterm(_signum: int, _frame: object) -> NoReturn:
    """Turn SIGTERM into SystemExit so the finally blocks stop the brokers."""
    sys.exit(128 + signal.SIGTERM)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    if argv[:1] == ["scale"]:
        return scale.main(argv[1:])
    if argv[:1] == ["replicated"]:
        return replicated.main(argv[1:])
    if argv[:1] == ["cores"]:
        return cores.main(argv[1:])
    if argv[:1] == ["hostile"]:
        return hostile.main(argv[1:])
    if argv[:1] == ["rolling-restart"]:
        return rolling_restart.main(argv[1:])
    if argv[:1] == ["share-consumers"]:
        return share_consumers.main(argv[1:])
    if argv[:1] == ["streams-rebalance"]:
        return streams_rebalance.main(argv[1:])
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as certificates:
        return run(args, Path(certificates))


def run(args: argparse.Namespace, certificates: Path) -> int:
    """Every trial of every broker in every listener kind, interleaved; the table; the JSON."""
    messages = args.messages or int(args.megabytes * 1e6 // args.value_size)
    settings = Settings(
        messages,
        args.value_size,
        args.partitions,
        phase_timeout_s=args.phase_timeout,
        transaction_records=args.transaction_records,
        client=CLIENTS[args.client],
    )
    modes = securities(args.security, certificates)
    builds = builds_of(args)
    launchers = [
        launcher
        for security in modes
        for launcher in make_launchers(args.brokers, args.override, args.override_all, security, builds)
    ]
    if not launchers:
        return 2
    mb = messages * args.value_size / 1e6
    names = ", ".join(la.name for la in launchers)
    mode = (f"transactions of {args.transaction_records} records (acks=all)" if args.transaction_records
            else "acks=1")  # fmt: skip
    print(f"{messages} messages x {args.value_size} B = {mb:.0f} MB, {args.partitions} partitions, "
          f"{mode}, no compression; brokers: {names}", flush=True)  # fmt: skip

    by_name = {launcher.name: launcher for launcher in launchers}
    trials, failures = interleave(list(by_name), args.repeat, lambda name: run_trial(by_name[name], settings))
    reference = next((name for name in names_of(args.brokers) if name != "odradek"), "tansu")
    suffixes = [f"+{security.label}" if security.label else "" for security in modes]
    report(trials, failures, settings, args, ratios=[(f"odradek{s}", f"{reference}{s}") for s in suffixes])
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the brokers were already stopped by their context managers
        sys.exit("interrupted")
