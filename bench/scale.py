"""``python -m bench scale``: many partitions and many connections, Odradek next to Apache Kafka.

Why: a broker that is fast on four partitions can still spend its CPU and memory per partition
or per connection (metadata of every partition, a fetch listing thousands of them, a file and
an index per partition, a task per socket). Issue 13 asks for 10,000 partitions over 100 topics,
10 caught-up consumers and 2,000 producer connections, with Kafka's figures beside Odradek's.

Each broker in turn, fresh (``bench.launchers.running``), one after the other in one run:

1. **create** ``--topics`` topics of ``--partitions`` partitions in all, in one CreateTopics,
   timed until Metadata shows a leader for every partition;
2. **produce** ``--megabytes`` of 1 KiB values round-robin over every partition, then
   **consume** all of it from offset 0 (``bench.load``, each in its own client process);
3. **idle**: the broker's cores with no client for ``--idle-seconds`` (its timers, a JVM's
   threads), then with ``--consumers`` confluent-kafka consumers caught up at the end of every
   partition (each ``assign``s its share; no group), polling for ``--idle-seconds``;
4. **connections**: ``--connections`` raw sockets at once, each ApiVersions and one small
   acks=1 Produce (``bench.connections``), all held open while RSS and descriptors are read.

RSS is the broker's resident set (VmRSS) at each step and the peak (VmHWM) at the end;
descriptors are its open files and sockets (``/proc/PID/fd``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.connections import many_producers
from bench.idle_fetch import cores_over
from bench.launchers import Launcher, RunningBroker, make_launchers, running
from bench.load import each_partition
from bench.throughput import Phase, Settings, create_topic, run_phase
from compat_tests.kit.procstat import open_descriptors, snapshot

MB = 1e6
TOPIC_PREFIX = "scale"
# How long caught-up consumers get to start fetching before the idle clock starts.
SETTLE_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Resources:
    """The broker's resident set and open descriptors at one step."""

    rss_mb: float
    descriptors: int

    @classmethod
    def of(cls, pid: int) -> Resources:
        return cls(snapshot(pid).rss_bytes / MB, open_descriptors(pid))


@dataclass
class ScaleResult:
    """Everything measured on one broker; ``steps`` holds Resources by step name."""

    broker: str
    create_seconds: float = 0.0
    create_cpu_seconds: float = 0.0
    produce: Phase | None = None
    consume: Phase | None = None
    baseline_cores: float = 0.0
    idle_consumers_cores: float = 0.0
    connections_seconds: float = 0.0
    connections_cpu_seconds: float = 0.0
    peak_rss_mb: float = 0.0
    steps: dict[str, Resources] = field(default_factory=dict)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench scale", description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=100, help="topics (default 100)")
    parser.add_argument(
        "--partitions", type=int, default=10_000, help="partitions in all, split evenly (default 10000)"
    )
    parser.add_argument("--consumers", type=int, default=10, help="caught-up idle consumers (default 10)")
    parser.add_argument("--connections", type=int, default=2000, help="producer connections (default 2000)")
    parser.add_argument("--megabytes", type=float, default=200.0, help="value MB produced (default 200)")
    parser.add_argument("--value-size", type=int, default=1024, help="bytes per value (default 1024)")
    parser.add_argument("--idle-seconds", type=float, default=15.0, help="each idle measurement (default 15)")
    parser.add_argument(
        "--brokers", default="odradek,apache-kafka", help="comma-separated: odradek,apache-kafka"
    )
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for odradek serve (repeatable)")  # fmt: skip
    parser.add_argument("--override-all", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for Odradek and Apache Kafka alike (repeatable)")  # fmt: skip
    parser.add_argument("--phase-timeout", type=float, default=600.0, help="seconds allowed per step")
    parser.add_argument("--json-out", type=Path, help="also write every figure as JSON")
    args = parser.parse_args(argv)
    if args.topics < 1 or args.partitions % args.topics:
        parser.error("--partitions must be a positive multiple of --topics")
    return args


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(
        messages=int(args.megabytes * MB // args.value_size),
        value_size=args.value_size,
        partitions=args.partitions // args.topics,
        topic=TOPIC_PREFIX,
        phase_timeout_s=args.phase_timeout,
        topic_count=args.topics,
    )


def _timed(pid: int, work: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, broker CPU seconds) of ``work``."""
    cpu, start = snapshot(pid).cpu_seconds, time.monotonic()
    work()
    return time.monotonic() - start, snapshot(pid).cpu_seconds - cpu


def end_offsets(targets: list[tuple[str, int]], messages: int) -> list[int]:
    """Each partition's end after ``bench.load`` sent ``messages`` round-robin over ``targets``."""
    return [messages // len(targets) + (n < messages % len(targets)) for n in range(len(targets))]


class _CaughtUp:
    """Consumers, each assigned every ``count``-th partition at its end offset.

    Ready once each has received one record produced after the assignment to the last of its
    partitions: librdkafka fetches every assigned partition of a broker in one Fetch once it
    fetches any (the offsets are given, no lookup is pending), so the idle time that follows is
    only caught-up fetching. (Its statistics would say so per partition, but for thousands of
    partitions parsing them costs more CPU than the broker being measured.)
    """

    def __init__(self, bootstrap: str, targets: list[tuple[str, int]], ends: list[int], count: int) -> None:
        self.consumers: list[Consumer] = []
        self.markers: list[tuple[str, int]] = []
        for n in range(count):
            config = {
                "bootstrap.servers": bootstrap,
                "group.id": f"scale-idle-{n}",
                "enable.auto.commit": False,
            }
            self.consumers.append(Consumer(config))
            share = [TopicPartition(t, p, end) for (t, p), end in zip(targets, ends, strict=True)][n::count]
            self.consumers[-1].assign(share)
            self.markers.append((share[-1].topic, share[-1].partition))
        self.bootstrap = bootstrap

    def wait_ready(self, timeout_s: float) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap})
        for topic, partition in self.markers:
            producer.produce(topic, b"ready", partition=partition)
        if producer.flush(timeout_s):
            raise TimeoutError(f"ready markers unacknowledged after {timeout_s:.0f}s")
        deadline = time.monotonic() + timeout_s
        for consumer in self.consumers:
            while not any(m.error() is None for m in consumer.consume(num_messages=10, timeout=0.5)):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"a consumer got no ready marker in {timeout_s:.0f}s")

    def poll(self) -> None:
        """Serve each consumer's callbacks; a caught-up consumer must receive no record."""
        for consumer in self.consumers:
            for message in consumer.consume(num_messages=100, timeout=0):
                if message.error() is None:
                    raise RuntimeError("a caught-up consumer received a record")

    def close(self) -> None:
        for consumer in self.consumers:
            consumer.close()


def _idle_with_consumers(broker: RunningBroker, targets: list[tuple[str, int]], ends: list[int],
                         args: argparse.Namespace, result: ScaleResult) -> None:  # fmt: skip
    consumers = _CaughtUp(broker.bootstrap, targets, ends, args.consumers)
    try:
        consumers.wait_ready(SETTLE_TIMEOUT_S)

        def poll() -> None:
            consumers.poll()
            time.sleep(0.5)

        result.idle_consumers_cores = cores_over(broker.pid, args.idle_seconds, poll)
        result.steps["idle consumers"] = Resources.of(broker.pid)
    finally:
        consumers.close()


def measure(launcher: Launcher, args: argparse.Namespace, report: Callable[[str], None]) -> ScaleResult:
    """Every step of the module docstring on one fresh broker, stopped before this returns."""
    settings = _settings(args)
    targets = each_partition(",".join(settings.topics), settings.partitions)
    result = ScaleResult(launcher.name)
    with running(launcher) as broker:
        result.steps["started"] = Resources.of(broker.pid)
        result.create_seconds, result.create_cpu_seconds = _timed(
            broker.pid, lambda: create_topic(broker, settings, timeout_s=args.phase_timeout)
        )
        result.steps["created"] = Resources.of(broker.pid)
        report(f"created {len(targets)} partitions in {result.create_seconds:.1f}s")
        result.produce = run_phase(broker, "produce", settings)
        result.consume = run_phase(broker, "consume", settings)
        result.steps["consumed"] = Resources.of(broker.pid)
        report(f"produce {result.produce.mb_per_s:.0f} MB/s, consume {result.consume.mb_per_s:.0f} MB/s")
        result.baseline_cores = cores_over(broker.pid, args.idle_seconds, lambda: time.sleep(0.5))
        _idle_with_consumers(broker, targets, end_offsets(targets, settings.messages), args, result)
        report(f"idle {result.baseline_cores:.3f} cores, with consumers {result.idle_consumers_cores:.3f}")

        def hold() -> None:
            result.steps["connections"] = Resources.of(broker.pid)

        result.connections_seconds, result.connections_cpu_seconds = _timed(
            broker.pid,
            lambda: many_producers(broker.bootstrap, targets, args.connections, args.phase_timeout, hold),
        )
        report(f"{args.connections} connections in {result.connections_seconds:.1f}s")
        result.peak_rss_mb = snapshot(broker.pid).peak_rss_bytes / MB
    return result


def _phase(name: str) -> Callable[[ScaleResult], Phase]:
    def get(result: ScaleResult) -> Phase:
        phase = getattr(result, name)
        assert phase is not None, "measure() sets both phases"
        return phase

    return get


_produce, _consume = _phase("produce"), _phase("consume")
# (label, value, format, whether a ratio means anything). CPU per GB, idle cores and RSS are the
# issue's goals; the rest says where the time and memory went.
ROWS: list[tuple[str, Callable[[ScaleResult], float], str, bool]] = [
    ("create topics s", lambda r: r.create_seconds, ".1f", True),
    ("create broker CPU s", lambda r: r.create_cpu_seconds, ".1f", True),
    ("produce MB/s", lambda r: _produce(r).mb_per_s, ".1f", True),
    ("consume MB/s", lambda r: _consume(r).mb_per_s, ".1f", True),
    ("broker CPU s/GB produce", lambda r: _produce(r).broker_cpu_s_per_gb, ".2f", True),
    ("broker CPU s/GB consume", lambda r: _consume(r).broker_cpu_s_per_gb, ".2f", True),
    (
        "others' cores produce/consume max",
        lambda r: max(_produce(r).other_cores, _consume(r).other_cores),
        ".2f",
        False,
    ),
    ("idle broker cores, no client", lambda r: r.baseline_cores, ".4f", True),
    ("idle broker cores, consumers", lambda r: r.idle_consumers_cores, ".4f", True),
    ("connections s (all answered)", lambda r: r.connections_seconds, ".1f", True),
    ("connections broker CPU s", lambda r: r.connections_cpu_seconds, ".2f", True),
    ("RSS MB started", lambda r: r.steps["started"].rss_mb, ".0f", True),
    ("RSS MB created", lambda r: r.steps["created"].rss_mb, ".0f", True),
    ("RSS MB consumed", lambda r: r.steps["consumed"].rss_mb, ".0f", True),
    ("RSS MB idle consumers", lambda r: r.steps["idle consumers"].rss_mb, ".0f", True),
    ("RSS MB connections open", lambda r: r.steps["connections"].rss_mb, ".0f", True),
    ("peak RSS MB", lambda r: r.peak_rss_mb, ".0f", True),
    ("descriptors created", lambda r: r.steps["created"].descriptors, ".0f", True),
    ("descriptors idle consumers", lambda r: r.steps["idle consumers"].descriptors, ".0f", True),
    ("descriptors connections open", lambda r: r.steps["connections"].descriptors, ".0f", True),
]


def table(results: list[ScaleResult]) -> str:
    """Metrics down, brokers across, and odradek over the other broker last."""
    header = ["", *(r.broker for r in results)]
    ratio = len(results) == 2 and results[0].broker == "odradek"
    if ratio:
        header.append(f"{results[0].broker}/{results[1].broker}")
    rows = [header]
    for label, value, fmt, compares in ROWS:
        values = [value(r) for r in results]
        row = [label, *(f"{v:{fmt}}" for v in values)]
        if ratio:
            row.append(f"{values[0] / values[1]:.2f}x" if compares and values[1] else "")
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    launchers = make_launchers(args.brokers, args.override, args.override_all)
    if not launchers:
        return 2
    print(f"{args.partitions} partitions over {args.topics} topics, {args.megabytes:.0f} MB of "
          f"{args.value_size} B values, {args.consumers} idle consumers, {args.connections} producer "
          f"connections; brokers: {', '.join(la.name for la in launchers)}", flush=True)  # fmt: skip
    results = []
    failed = False
    for launcher in launchers:
        started = time.monotonic()

        def report(line: str, name: str = launcher.name, started: float = started) -> None:
            print(f"{name}: {line} ({time.monotonic() - started:.0f}s)", flush=True)

        try:
            results.append(measure(launcher, args, report))
        except Exception as exc:  # one broker failing must not hide the other's figures
            report(f"FAILED: {exc!r}")
            failed = True
    if not results:
        return 1
    print()
    print(table(results))
    print("\nMB = 10^6 value bytes; cores = broker CPU seconds / wall seconds; others' cores = the rest "
          "of the machine during produce + consume (noise above ~0.3).")  # fmt: skip
    if args.json_out:
        args.json_out.write_text(json.dumps({"settings": vars(args) | {"json_out": str(args.json_out)},
                                             "results": [asdict(r) for r in results]}, indent=2))  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
