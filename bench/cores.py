"""``python -m bench cores``: one machine's cores, ``odradek serve`` beside ``serve --processes N``
and Apache Kafka, in one run.

Why: one Odradek process serves on one core, Kafka's threads on all of them; ``--processes N``
(docs/PROCESSES.md) runs N brokers behind one bootstrap address.  This case measures what that
buys on this machine: each kind in turn, interleaved over ``--repeat``, a fresh broker per trial,
the throughput bench's produce and consume of 1 KiB values (``bench.throughput``: acks=1, tuned
librdkafka, each phase in its own client process), then ``bench.ack_latency``'s fixed-rate
acks=all load (``--latency-rate``, 2,000 msg/s by default).  Broker CPU and RSS cover every broker
process (with ``--processes``, its brokers, not the supervisor or etcd: those are in "others'
cores"); each process's peak RSS is in the JSON.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench import ack_latency
from bench.launchers import ApacheKafkaLauncher, Launcher, OdradekLauncher, names_of, running
from bench.report import add_trial_options, report
from bench.throughput import CLIENTS, Settings, Trial, add_client_option, interleave, measure

LATENCY_WARMUP_S = 5.0  # untimed sending first: a JVM needs it


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench cores", description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=1000.0, help="value MB per trial (default 1000)")
    parser.add_argument("--partitions", type=int, default=8, help="topic partitions (default 8)")
    parser.add_argument("--processes", default="1,2", help="comma-separated process counts (default 1,2)")
    parser.add_argument(
        "--brokers", default="odradek,apache-kafka", help="comma-separated, from: odradek,apache-kafka"
    )
    add_trial_options(parser)
    add_client_option(parser)
    parser.add_argument("--latency-rate", type=int, default=2000, metavar="MSG_PER_S",
                        help="then acks=all latency at this fixed rate (default 2000; 0: not measured)")  # fmt: skip
    parser.add_argument(
        "--latency-seconds", type=float, default=10.0, help="timed latency sending (default 10)"
    )
    return parser.parse_args(argv)


def launchers_of(args: argparse.Namespace) -> list[Launcher]:
    """Odradek once per process count, then the reference."""
    kinds = names_of(args.brokers)
    found: list[Launcher] = []
    if "odradek" in kinds:
        found += [OdradekLauncher(processes=int(n)) for n in names_of(args.processes)]
    if "apache-kafka" in kinds:
        found.append(ApacheKafkaLauncher())
    return found


def run_trial(
    launcher: Launcher, settings: Settings, args: argparse.Namespace, latencies: list[dict[str, Any]]
) -> Trial:
    """One fresh broker of ``launcher``: throughput, then latency; stopped before this returns."""
    with running(launcher) as broker:
        trial = measure(broker, settings)
        if args.latency_rate:
            latencies.append(ack_latency.measure(broker, args.latency_rate, args.latency_seconds,
                                                 settings.partitions, LATENCY_WARMUP_S))  # fmt: skip
    return trial


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = Settings(
        int(args.megabytes * 1e6 // args.value_size),
        args.value_size,
        args.partitions,
        phase_timeout_s=args.phase_timeout,
        client=CLIENTS[args.client],
    )
    by_name = {launcher.name: launcher for launcher in launchers_of(args)}
    print(f"{settings.messages} messages x {settings.value_size} B = "
          f"{settings.messages * settings.value_size / 1e6:.0f} MB, {settings.partitions} partitions, acks=1; "
          f"brokers: {', '.join(by_name)}", flush=True)  # fmt: skip
    latencies: list[dict[str, Any]] = []
    trials, failures = interleave(
        list(by_name), args.repeat, lambda name: run_trial(by_name[name], settings, args, latencies)
    )
    multi = [name for name in by_name if name.startswith("odradek-p")]
    ratios = [(name, "odradek") for name in multi] + [(name, "apache-kafka") for name in ["odradek", *multi]]
    report(trials, failures, settings, args, [r for r in ratios if r[1] in by_name], {"latency": latencies})
    if latencies:
        print(f"\nacks=all latency at {args.latency_rate} msg/s x {args.latency_seconds:.0f} s "
              f"(after {LATENCY_WARMUP_S:.0f} s), 1 KiB, linger.ms=0; cores = all broker processes")  # fmt: skip
        print(ack_latency.table(latencies))
    return 1 if failures else 0
