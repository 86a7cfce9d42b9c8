"""``python -m bench.ack_latency``: acknowledgement and end-to-end latency at a fixed rate.

What a flush policy (``log.flush.interval.messages=1``) costs is latency more than throughput,
so this sends at a steady rate rather than as fast as possible: confluent-kafka, 1 KiB values
round-robin over 4 partitions, ``acks=all``, ``linger.ms=0``, each send scheduled at an absolute
time (no bursts after a stall).  Per message it records the acknowledgement latency (delivery
callback minus send time) and the end-to-end latency (a consumer in the same process, assigned
to every partition, receives it; the send time travels in the value).  Brokers run one after
another in the same run, interleaved with ``--repeat``, with the same ``--override-all``
settings, and the broker's CPU is read from /proc around the timed part: as cores, and as CPU
milliseconds per timed record, the figure that compares a single broker with a replicated
cluster (at a fixed low rate a broker's cost is per request, not per byte).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.launchers import RunningBroker, add_build_option, builds_of, make_launchers, running
from bench.report import write_json_out
from compat_tests.kit.procstat import cpu_seconds

_STAMP = struct.Struct(">d")
TOPIC = "latency"


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    at = lambda q: round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)  # noqa: E731
    return {"p50_ms": at(0.50), "p99_ms": at(0.99), "max_ms": round(ordered[-1] * 1000, 2)}


def measure(
    broker: RunningBroker,
    rate: int,
    seconds: float,
    partitions: int,
    warmup: float,
    replication_factor: int = 1,
) -> dict[str, object]:
    """Send ``rate`` msg/s for ``warmup`` + ``seconds``; return the latency figures of the
    messages sent after the warm-up (a JVM needs it) and the broker's CPU meanwhile, as cores
    and as milliseconds per timed record (a cluster's brokers summed)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, partitions, replication_factor)]).values():
        future.result()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0})
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "bench", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    warm = int(rate * warmup)
    total = warm + int(rate * seconds)
    acks: list[float] = []
    e2e: list[float] = []
    failed: list[str] = []
    done = threading.Event()

    received = 0

    def consume() -> None:
        nonlocal received
        while received < total and not done.is_set():
            message = consumer.poll(0.1)  # returns as soon as one message is there
            if message is not None and message.error() is None:
                sent = _STAMP.unpack_from(message.value())[0]
                received += 1
                if sent >= timed_from:
                    e2e.append(time.perf_counter() - sent)

    def delivered(error: object, _message: object, sent: float) -> None:
        if error is None:
            if sent >= timed_from:
                acks.append(time.perf_counter() - sent)
        else:
            failed.append(str(error))

    padding = b"x" * (1024 - _STAMP.size)
    start = time.perf_counter()
    timed_from = start + warm / rate
    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    before: float | None = None
    for i in range(total):
        if i == warm:
            before = cpu_seconds(broker.pids)
        due = start + i / rate
        if (now := time.perf_counter()) < due:
            time.sleep(due - now)
            now = time.perf_counter()
        producer.poll(0)
        producer.produce(
            TOPIC,
            _STAMP.pack(now) + padding,
            partition=i % partitions,
            on_delivery=lambda error, message, sent=now: delivered(error, message, sent),
        )
    remaining = producer.flush(60)
    elapsed = time.perf_counter() - timed_from
    after = cpu_seconds(broker.pids)
    assert before is not None
    reader.join(60)
    done.set()
    consumer.close()
    if remaining or failed or received < total:
        raise RuntimeError(
            f"{remaining} unacknowledged, {len(failed)} failed, {total - received} not consumed"
        )
    return {
        "broker": broker.name,
        "brokers": len(broker.pids),
        "replication_factor": replication_factor,
        "messages": total - warm,
        "ack": _percentiles(acks),
        "e2e": _percentiles(e2e),
        "broker_cores": round((after - before) / elapsed, 2),
        "cpu_ms_per_record": round((after - before) * 1000 / (total - warm), 3),
    }


def table(results: list[dict[str, Any]]) -> str:
    """One line per run: brokers and replication factor, acknowledgement and end-to-end p50/p99
    in ms, the brokers' cores and CPU ms per record."""
    lines = [f"{'broker':<14}{'nodes':>6}{'RF':>4}{'ack p50':>9}{'ack p99':>9}{'e2e p50':>9}"
             f"{'e2e p99':>9}{'cores':>7}{'CPU ms/rec':>11}"]  # fmt: skip
    for r in results:
        ack, e2e = r["ack"], r["e2e"]
        lines.append(f"{r['broker']:<14}{r['brokers']:>6}{r['replication_factor']:>4}{ack['p50_ms']:>9}"
                     f"{ack['p99_ms']:>9}{e2e['p50_ms']:>9}{e2e['p99_ms']:>9}{r['broker_cores']:>7}"
                     f"{r['cpu_ms_per_record']:>11}")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ack_latency", description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", default="odradek,apache-kafka", help="from: odradek,apache-kafka,tansu")
    parser.add_argument("--rate", type=int, default=2000, help="messages per second (default 2000)")
    parser.add_argument("--seconds", type=float, default=20.0, help="timed sending (default 20)")
    parser.add_argument("--warmup", type=float, default=5.0, help="untimed sending first (default 5 s)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1, help="runs per broker, interleaved")
    parser.add_argument("--override-all", action="append", default=[], metavar="KEY=VALUE",
                        help="setting for every broker that takes Kafka keys (repeatable)")  # fmt: skip
    parser.add_argument("--json-out", type=Path)
    add_build_option(parser)
    args = parser.parse_args(argv)
    launchers = make_launchers(args.brokers, [], args.override_all, builds=builds_of(args))
    results = []
    for rep in range(1, args.repeat + 1):
        for launcher in launchers:
            with running(launcher) as broker:
                result = measure(broker, args.rate, args.seconds, args.partitions, args.warmup)
            results.append(result)
            print(f"[{rep}/{args.repeat}] {json.dumps(result)}", flush=True)
    settings = ", ".join(args.override_all) or "defaults"
    print(f"\n{args.rate} msg/s x {args.seconds:.0f} s, 1 KiB, acks=all, linger.ms=0; {settings}")
    print(table(results))
    write_json_out(args, {"results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
