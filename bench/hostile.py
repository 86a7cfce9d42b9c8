"""``python -m bench hostile``: a healthy client's latency beside 0, 3 and 300 hostile connections.

Issue 25: three connections that sent only the size prefix ``100000000`` made a healthy
client's ApiVersions take 29.5 s on Odradek; Apache Kafka survived three but not 300 (its
network threads ran out of heap, and it stopped answering).  This case measures, for each
broker, attack and number of attackers, what a well-behaved client sees while the attackers
hold their connections (``compat_tests/kit/hostile.py``: ``prefix``, ``partial`` and ``unread``;
stalled TLS handshakes are Odradek's integration test only, as the launchers give a broker one
listener).

Each (attack, count, broker) gets a fresh broker (``bench.launchers.running``): a broker an
attack broke must not spoil the next case.  The brokers take turns within each attack and
count, so drift hits them alike.  The healthy client's operations are ApiVersions on a fresh
socket, a new librdkafka client's first metadata, and, through clients connected before the
attack, Metadata, an ``acks=all`` produce and the fetch that brings that record back.  An
operation without an answer within 60 s ends the case and is reported as such.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException, Producer

from bench.launchers import Launcher, RunningBroker, add_build_option, builds_of, make_launchers, running
from bench.throughput import Settings, create_topic
from compat_tests.kit.hostile import (
    ATTACKS,
    OPERATIONS,
    HealthyClient,
    HostileConnections,
    Latencies,
    Target,
)

PLAINTEXT_ATTACKS = tuple(name for name in ATTACKS if name != "tls-stall")
DATA_TOPIC, HEALTHY_TOPIC = "hostile-data", "hostile-healthy"
DATA_RECORDS, DATA_RECORD_BYTES = 64, 128 * 1024


@dataclass
class CaseResult:
    """What the healthy client saw beside ``count`` connections of ``attack`` on ``broker``."""

    broker: str
    attack: str
    count: int
    samples: dict[str, list[float]] = field(default_factory=dict)
    failure: str = ""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench hostile", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--brokers", default="odradek,apache-kafka", help="from: odradek,apache-kafka,odradek@LABEL"
    )
    parser.add_argument(
        "--attacks", default="prefix", help=f"comma-separated, from: {','.join(PLAINTEXT_ATTACKS)}"
    )
    parser.add_argument("--counts", default="0,3,300", help="hostile connections per case (default 0,3,300)")
    parser.add_argument("--rounds", type=int, default=30, help="healthy rounds per case (default 30)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for odradek serve (repeatable)")  # fmt: skip
    parser.add_argument("--json-out", type=Path, help="write every case's samples here")
    add_build_option(parser)
    return parser.parse_args(argv)


def _fill_data_topic(broker: RunningBroker) -> None:
    """A few megabytes in partition 0 of the data topic, for the ``unread`` attack's Fetches."""
    producer = Producer(broker.librdkafka(acks="all"))
    for _ in range(DATA_RECORDS):
        producer.produce(DATA_TOPIC, bytes(DATA_RECORD_BYTES), partition=0)
    if producer.flush(60):
        raise KafkaException("the data topic's records were not all delivered")


def run_case(launcher: Launcher, attack: str, count: int, rounds: int) -> CaseResult:
    result = CaseResult(launcher.name, attack, count)
    with running(launcher) as broker:
        for topic in (DATA_TOPIC, HEALTHY_TOPIC):
            create_topic(broker, Settings(messages=0, partitions=1, topic=topic))
        _fill_data_topic(broker)
        healthy = HealthyClient(broker.bootstrap, HEALTHY_TOPIC)
        latencies = Latencies()
        try:
            with HostileConnections(attack, count, Target(broker.bootstrap, DATA_TOPIC)):
                healthy.measure(rounds, latencies)
        except (KafkaException, TimeoutError, OSError) as exc:
            result.failure = f"{type(exc).__name__}: {exc}"[:200]
        finally:
            result.samples = latencies.samples
            healthy.close(flush_timeout_s=5.0)
    return result


def _cell(samples: list[float]) -> str:
    if not samples:
        return "-"
    ordered = sorted(samples)
    p50 = ordered[len(ordered) // 2]
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{p50 * 1000:.1f} / {p99 * 1000:.1f}"


def table(results: list[CaseResult]) -> str:
    header = ["attack", "conns", "broker", *(f"{name} p50/p99 ms" for name in OPERATIONS), "failure"]
    rows = [header]
    for result in results:
        cells = [_cell(result.samples.get(name, [])) for name in OPERATIONS]
        rows.append([result.attack, str(result.count), result.broker, *cells, result.failure or "-"])
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    attacks = [name for name in args.attacks.split(",") if name]
    unknown = [name for name in attacks if name not in PLAINTEXT_ATTACKS]
    if unknown:
        sys.exit(f"unknown attack {', '.join(unknown)}; known: {', '.join(PLAINTEXT_ATTACKS)}")
    launchers = make_launchers(args.brokers, args.override, builds=builds_of(args))
    results = []
    for attack in attacks:
        for count in (int(text) for text in args.counts.split(",")):
            for launcher in launchers:
                print(f"{attack} x {count} on {launcher.name} ...", file=sys.stderr, flush=True)
                results.append(run_case(launcher, attack, count, args.rounds))
    print(table(results))
    if args.json_out:
        args.json_out.write_text(json.dumps([asdict(result) for result in results], indent=1))
    return 0
