"""``python -m bench replicated``: RF 3, acks=all on three local brokers, Odradek beside Apache Kafka.

Why: the throughput bench measures one broker and acks=1, where nothing is replicated. Issue 11
asks what replication costs: every record is written by the leader, fetched by two followers
and acknowledged once they have it. Each trial starts a fresh three-broker cluster of one kind
with the compat suite's launcher (``compat_tests.kit.clusters``: three combined KRaft nodes for
Kafka, three ``odradek serve --cluster`` on a three-member etcd for Odradek), creates one topic
with replication factor 3 and ``min.insync.replicas`` 2, produces with an idempotent acks=all
producer (librdkafka's defaults otherwise) and consumes everything back (``bench.load``, each
phase in its own client process). Broker CPU is the three broker processes' summed (etcd's is
not in it: it is in "others' cores"; Kafka's controllers run inside its brokers); peak RSS is
the largest broker's, every broker's is in the JSON. With ``--latency-rate``, the same cluster
then takes ``bench.ack_latency``'s fixed-rate acks=all load on a second RF 3 topic: what a
producer waits for its acknowledgement, and a consumer for the record, when nothing is queued.
After each cluster, a single fresh broker of the same kind takes the same load on an RF 1 topic,
so the table shows what replication adds per record (broker CPU ms per record) for both kinds in
the same run: Odradek's ratio of cluster to single broker beside Kafka's own.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bench import ack_latency
from bench.launchers import BrokerFailed, RunningBroker, make_launchers, names_of, running
from bench.report import add_trial_options, report
from bench.throughput import Settings, Trial, interleave, measure

KINDS = ("odradek", "apache-kafka")
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2
LATENCY_WARMUP_S = 5.0  # untimed sending first: a JVM needs it

LIVENESS_DEFAULTS: Mapping[str, str] = {
    "broker.session.timeout.ms": "9000",
    "broker.heartbeat.interval.ms": "2000",
}
"""Kafka's defaults, in place of the compat clusters' quick failover settings: a benchmark kills
no broker, and a broker of a loaded two-core machine must not lose its session mid-run."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench replicated", description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=200.0, help="value MB per trial (default 200)")
    parser.add_argument("--partitions", type=int, default=6, help="topic partitions (default 6)")
    parser.add_argument(
        "--brokers", default=",".join(KINDS), help=f"comma-separated, from: {','.join(KINDS)}"
    )
    add_trial_options(parser)
    parser.add_argument("--override-all", action="append", default=[], metavar="KEY=VALUE",
                        help="config for every broker of both kinds (repeatable)")  # fmt: skip
    parser.add_argument("--latency-rate", type=int, default=0, metavar="MSG_PER_S",
                        help="then acks=all latency at this fixed rate (default 0: not measured)")  # fmt: skip
    parser.add_argument(
        "--latency-seconds", type=float, default=10.0, help="timed latency sending (default 10)"
    )
    args = parser.parse_args(argv)
    unknown = [name for name in names_of(args.brokers) if name not in KINDS]
    if unknown:
        parser.error(f"unknown --brokers {', '.join(unknown)}; known: {', '.join(KINDS)}")
    if any("=" not in override for override in args.override_all):
        parser.error("--override-all takes KEY=VALUE")
    return args


def settings_of(args: argparse.Namespace) -> Settings:
    return Settings(
        messages=int(args.megabytes * 1e6 // args.value_size),
        value_size=args.value_size,
        partitions=args.partitions,
        phase_timeout_s=args.phase_timeout,
        replication_factor=REPLICATION_FACTOR,
        min_insync_replicas=MIN_INSYNC_REPLICAS,
        idempotent=True,
    )


@contextlib.contextmanager
def cluster(kind: str, overrides: Mapping[str, str]) -> Iterator[RunningBroker]:
    """A fresh three-broker cluster of ``kind`` as one ``RunningBroker`` (every node in
    ``pids``); stopped, and its scratch directory removed, on exit. A failure while a node is
    dead is blamed on that node, with its log's tail."""
    from compat_tests.kit.clusters import BENCHMARK_CLUSTER_KINDS  # it imports the test support (etcd)

    with tempfile.TemporaryDirectory(prefix=f"bench-{kind}-cluster-") as scratch:
        started = BENCHMARK_CLUSTER_KINDS[kind](Path(scratch), {**LIVENESS_DEFAULTS, **overrides})
        try:
            # Every node answers Metadata a moment before the cluster counts it registered; an
            # RF 3 topic created in between is refused (INVALID_REPLICATION_FACTOR, seen in CI).
            started.wait_all_registered()
            nodes = list(started.members.values())
            pids = [node.process.pid for node in nodes if node.process is not None]
            yield RunningBroker(
                kind, started.bootstrap, pids[0], nodes[0].log_path, other_pids=tuple(pids[1:])
            )
        except Exception as exc:
            dead = [node_id for node_id, node in started.members.items() if not node.running()]
            if dead:
                tails = "\n".join(f"node {i}:\n{started.log_tail(i)}" for i in dead)
                raise BrokerFailed(f"node(s) {dead} died during the run:\n{tails}") from exc
            raise
        finally:
            started.stop()


def run_trial(
    kind: str, settings: Settings, args: argparse.Namespace, latencies: list[dict[str, Any]]
) -> Trial:
    """One fresh cluster of ``kind``, measured end to end (and its latency appended to
    ``latencies`` if asked, then a single broker's of the same kind too); stopped before this
    returns or raises."""
    overrides = dict(override.split("=", 1) for override in args.override_all)
    with cluster(kind, overrides) as brokers:
        trial = measure(brokers, settings)
        if args.latency_rate:
            latencies.append(fixed_rate(brokers, args, settings.partitions, REPLICATION_FACTOR))
    if args.latency_rate:
        (single,) = make_launchers(kind, (), shared=args.override_all)  # the clusters' overrides
        with running(single) as broker:
            latencies.append(fixed_rate(broker, args, settings.partitions, 1))
    return trial


def fixed_rate(
    brokers: RunningBroker, args: argparse.Namespace, partitions: int, replication_factor: int
) -> dict[str, Any]:
    """``bench.ack_latency``'s fixed-rate acks=all load at ``--latency-rate``."""
    return ack_latency.measure(
        brokers, args.latency_rate, args.latency_seconds, partitions, LATENCY_WARMUP_S, replication_factor
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = settings_of(args)
    kinds = names_of(args.brokers)
    print(f"{settings.messages} messages x {settings.value_size} B = "
          f"{settings.messages * settings.value_size / 1e6:.0f} MB, {settings.partitions} partitions, "
          f"replication factor {REPLICATION_FACTOR}, min.insync.replicas {MIN_INSYNC_REPLICAS}, "
          f"idempotent acks=all; 3-broker clusters: {', '.join(kinds)}", flush=True)  # fmt: skip
    latencies: list[dict[str, Any]] = []
    trials, failures = interleave(kinds, args.repeat, lambda kind: run_trial(kind, settings, args, latencies))
    report(trials, failures, settings, args, [("odradek", "apache-kafka")], {"latency": latencies})
    if latencies:
        print(f"\nacks=all latency at {args.latency_rate} msg/s x {args.latency_seconds:.0f} s "
              f"(after {LATENCY_WARMUP_S:.0f} s), 1 KiB, linger.ms=0; cores and CPU = the nodes' summed")  # fmt: skip
        print(ack_latency.table(latencies))
    return 1 if failures else 0
