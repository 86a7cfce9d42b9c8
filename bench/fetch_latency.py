"""``python -m bench.fetch_latency``: does fetching from a big log cost more than from a small one?

Why: a Fetch must find the batch holding its offset through the segment list (bisect) and the
segment's sparse offset index (binary search plus a short header walk), so its latency should
not grow with the size of the log, wherever in the log the offset is.  This fills one partition
to each size in turn (100 MB, then past 1 GiB by default) and, at every size, times single
Fetch requests for an offset at the head, in the middle and at the tail of the log.

The log is filled with the project's blocking client: one pre-built batch (``--batch-kb`` of
1 KiB values) sent again and again with acks=1, which is fast and keeps every batch the same
size, so each fetch moves the same number of bytes (one batch, ``partition_max_bytes`` = 1,
KIP-74).  Each size is its own topic, and fetches go round-robin over every (size, position)
on one connection after a warm-up, so noise from other work on the machine spreads evenly.
Data is in the page cache: this measures the broker's lookup, not the disk.  Latency is wall
time around one request and its decoded response, measured in this process.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.launchers import OdradekLauncher, RunningBroker, running
from bench.report import write_json_out
from bench.throughput import Settings, create_topic
from broker.client.admin_client import LATEST, KafkaConnection
from wire.api_keys import ApiKey
from wire.record_batch import Record, encode_batch

TOPIC = "latency"
VALUE_SIZE = 1024
POSITIONS = ("head", "middle", "tail")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fetch_latency", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--sizes-mb", default="100,1100", help="log sizes to measure at, ascending (MB of values)"
    )
    parser.add_argument(
        "--batch-kb", type=int, default=64, help="KiB of values per produced batch (default 64)"
    )
    parser.add_argument("--samples", type=int, default=300, help="timed fetches per position and size")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for odradek serve (repeatable)")  # fmt: skip
    parser.add_argument("--json-out", type=Path, help="also write every figure as JSON")
    return parser.parse_args(argv)


def fill(
    connection: KafkaConnection, topic: str, batch: bytes, records_per_batch: int, until_offset: int
) -> int:
    """Append ``batch`` until the log end reaches ``until_offset``; returns the log end."""
    end = connection.list_offsets(topic, [0], LATEST)[0]
    while end < until_offset:
        response = connection.produce(topic, 0, batch, acks=1)
        if response["error_code"]:
            raise RuntimeError(f"produce failed: {response}")
        end = response["base_offset"] + records_per_batch
    return end


def fetch_once(connection: KafkaConnection, topic: str, offset: int) -> float:
    """Seconds one Fetch of one batch at ``offset`` takes, request sent to response decoded."""
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 30,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1}],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    started = time.perf_counter()
    response = connection.request(ApiKey.FETCH, 12, body)
    elapsed = time.perf_counter() - started
    partition = response["responses"][0]["partitions"][0]
    if partition["error_code"] or not partition["records"]:
        raise RuntimeError(f"fetch of {topic} at {offset} failed: {partition['error_code']}")
    return elapsed


def summary(latencies_s: list[float]) -> dict[str, float]:
    micros = sorted(value * 1e6 for value in latencies_s)
    return {
        "median_us": statistics.median(micros),
        "p90_us": micros[int(0.9 * (len(micros) - 1))],
        "p99_us": micros[int(0.99 * (len(micros) - 1))],
    }


def measure(broker: RunningBroker, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Fill one topic per size, then time fetches round-robin over every (size, position), so
    that whatever else the machine does meanwhile hits every figure alike."""
    records_per_batch = args.batch_kb
    value = b"v" * VALUE_SIZE
    batch = bytes(
        encode_batch([Record(i, int(time.time() * 1000), None, value) for i in range(records_per_batch)])
    )
    targets: list[tuple[float, str, str, int]] = []
    with KafkaConnection(broker.bootstrap, timeout=60) as connection:
        for size_mb in (float(s) for s in args.sizes_mb.split(",")):
            topic = f"{TOPIC}-{size_mb:.0f}mb"
            create_topic(broker, Settings(messages=0, partitions=1, topic=topic))
            started = time.monotonic()
            end = fill(connection, topic, batch, records_per_batch, int(size_mb * 1e6 / VALUE_SIZE))
            print(f"filled {topic} ({end} records) in {time.monotonic() - started:.0f}s", flush=True)
            offsets = {"head": 0, "middle": end // 2, "tail": end - 1}
            targets += [(size_mb, position, topic, offsets[position]) for position in POSITIONS]
        for _, _, topic, offset in targets:  # warm-up: connection, index mirrors, page cache
            for _ in range(10):
                fetch_once(connection, topic, offset)
        latencies: dict[tuple[float, str, str, int], list[float]] = {target: [] for target in targets}
        for _ in range(args.samples):
            for target in targets:
                latencies[target].append(fetch_once(connection, target[2], target[3]))
    rows = []
    for target in targets:
        size_mb, position, _, offset = target
        rows.append({"log_mb": size_mb, "position": position, "offset": offset, **summary(latencies[target])})
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The figures, then each position's median at the largest size over the smallest."""
    lines = [f"{'log MB':>8} {'position':>8} {'offset':>10} {'median µs':>10} {'p90 µs':>8} {'p99 µs':>8}"]
    for row in rows:
        lines.append(f"{row['log_mb']:>8.0f} {row['position']:>8} {row['offset']:>10} "
                     f"{row['median_us']:>10.0f} {row['p90_us']:>8.0f} {row['p99_us']:>8.0f}")  # fmt: skip
    sizes = sorted({row["log_mb"] for row in rows})
    if len(sizes) > 1:
        median = {(row["log_mb"], row["position"]): row["median_us"] for row in rows}
        ratios = ", ".join(f"{p} {median[(sizes[-1], p)] / median[(sizes[0], p)]:.2f}" for p in POSITIONS)
        lines.append(f"median at {sizes[-1]:.0f} MB / at {sizes[0]:.0f} MB: {ratios}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    launcher = OdradekLauncher(args.override)
    reason = launcher.unavailable_reason()
    if reason:
        sys.exit(f"cannot run: {reason}")
    with running(launcher) as broker:
        rows = measure(broker, args)
    print()
    print(table(rows))
    write_json_out(args, {"rows": rows})
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the broker was already stopped by its context manager
        sys.exit("interrupted")
