"""``python -m bench rolling-restart``: produce latency while every broker of a cluster restarts in
turn, Odradek beside Apache Kafka in one run.

An operator's rolling restart (a new version, a config change) stops each broker with SIGTERM,
starts it again and waits until every replica is back in sync before the next. Both brokers stop
with a controlled shutdown: their leaderships move first, so a producer sees one metadata refresh
instead of a session timeout's wait. Each trial starts a fresh three-broker cluster of one kind
(``compat_tests.kit.clusters``, with Kafka's default session timeout), creates a topic with
replication factor 3 and ``min.insync.replicas`` 2, and runs the chaos scenarios' idempotent
acks=all librdkafka producer (``compat_tests.chaos``: 100 records/s, delivery timeout 120 s);
after a warm-up it restarts the three brokers in turn. Reported: the restart's duration, the
acknowledgement latency (p50, p99, max) of the records sent during it, and failed deliveries
(there should be none: every error on the way is retriable).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.launchers import names_of
from bench.replicated import LIVENESS_DEFAULTS, MIN_INSYNC_REPLICAS, REPLICATION_FACTOR
from bench.report import write_json_out
from broker.cli.table import render_table

KINDS = ("odradek", "apache-kafka")
WARMUP_S = 10.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench rolling-restart", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--brokers", default=",".join(KINDS), help=f"comma-separated, from: {','.join(KINDS)}"
    )
    parser.add_argument("--partitions", type=int, default=6, help="topic partitions (default 6)")
    parser.add_argument("--repeat", type=int, default=1, help="trials per broker, interleaved")
    parser.add_argument("--json-out", type=Path, help="also write every trial as JSON")
    args = parser.parse_args(argv)
    unknown = [name for name in names_of(args.brokers) if name not in KINDS]
    if unknown:
        parser.error(f"unknown --brokers {', '.join(unknown)}; known: {', '.join(KINDS)}")
    return args


def run_trial(kind: str, partitions: int) -> dict[str, Any]:
    """One fresh cluster of ``kind`` restarted broker by broker under load; its figures."""
    # The compat kit (clusters, the chaos producer) is test support: imported when used.
    from compat_tests.chaos import ConfluentChaosProducer, nearest_rank, wait_until_replicated
    from compat_tests.kit.clusters import BENCHMARK_CLUSTER_KINDS
    from compat_tests.kit.drivers.confluent import ConfluentAdmin

    with tempfile.TemporaryDirectory(prefix=f"bench-{kind}-rolling-") as scratch:
        cluster = BENCHMARK_CLUSTER_KINDS[kind](Path(scratch), dict(LIVENESS_DEFAULTS))
        try:
            topic = f"rolling-{uuid.uuid4().hex[:8]}"
            configs = {"min.insync.replicas": str(MIN_INSYNC_REPLICAS)}
            ConfluentAdmin(cluster.bootstrap).create_topic(topic, partitions, REPLICATION_FACTOR, configs)
            wait_until_replicated(cluster, [topic])
            producer = ConfluentChaosProducer("bench", cluster.bootstrap, topic, partitions)
            producer.start()
            try:
                time.sleep(WARMUP_S)
                began = time.monotonic()
                for node_id in sorted(cluster.nodes):
                    wait_until_replicated(cluster, [topic])
                    print(f"  {kind}: restarting node {node_id}", flush=True)
                    cluster.terminate(node_id)
                    cluster.start(node_id)
                wait_until_replicated(cluster, [topic])
                ended = time.monotonic()
            finally:
                producer.stop()
        finally:
            cluster.stop()
    latencies = [a.acked_at - a.sent_at for a in producer.acks if began <= a.sent_at <= ended]
    return {
        "broker": kind,
        "restart_s": round(ended - began, 1),
        "records": len(latencies),
        "p50_ms": round(nearest_rank(latencies, 0.5) * 1000, 1),
        "p99_ms": round(nearest_rank(latencies, 0.99) * 1000, 1),
        "max_ms": round(max(latencies, default=0.0) * 1000, 1),
        "failed": producer.failed,
        "errors": producer.errors[:5],
    }


def table(trials: list[dict[str, Any]]) -> str:
    headers = ["broker", "restart s", "records", "p50 ms", "p99 ms", "max ms", "failed"]
    keys = ["broker", "restart_s", "records", "p50_ms", "p99_ms", "max_ms", "failed"]
    return render_table(headers, [tuple(str(t[k]) for k in keys) for t in trials])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    kinds = names_of(args.brokers)
    print(f"rolling restart of 3-broker clusters under an idempotent acks=all producer (100 records/s, "
          f"{args.partitions} partitions, RF {REPLICATION_FACTOR}, min.insync.replicas {MIN_INSYNC_REPLICAS}); "
          f"brokers: {', '.join(kinds)}", flush=True)  # fmt: skip
    trials = [run_trial(kind, args.partitions) for _ in range(args.repeat) for kind in kinds]
    print(table(trials))
    write_json_out(args, {"trials": trials})
    return 1 if any(t["failed"] for t in trials) else 0


if __name__ == "__main__":
    sys.exit(main())
