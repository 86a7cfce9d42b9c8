"""Client load without a client library: pre-built Produce requests and plain Fetches, as a
separate process (``python -m bench.raw_load {produce,consume} ...``, ``bench.load``'s command
line and JSON).

Why: on a two-core machine librdkafka spends more CPU per byte than the broker it measures (the
cores bench: 1.34 cores of client for 0.55 of broker at 697 MB/s), so the client bounds the
throughput and nothing shows what a second broker process adds. This client builds each
leader's Produce request once (one batch of ``BATCH_RECORDS`` values per partition, acks=1, no
idempotence: the broker assigns the offsets, which the CRC does not cover) and sends it again and
again, ``IN_FLIGHT`` at a time per leader, so a produced byte costs it about a socket write. It
consumes with plain Fetch requests (the consumer's limits of ``bench.load``), counting records from
the batch headers without looking at them, as a consumer that does not check CRCs
(librdkafka's default). ``WORKERS`` client processes share the partitions, each with a thread
per leader connection: receiving is the client's dearest work (the kernel's copy into it), more
than a broker's sendfile, and one process would bound the consume phase by itself.

Every broker of a run gets this same client, so the figures still compare; what it does not
measure is a real client's cost, which the default librdkafka client shows.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.load import Progress, Window, each_partition
from broker.client.admin_client import (
    KafkaConnection,
    decode_answer,
    fetch_request_body,
    request_frame,
    response_size,
)
from wire.api_keys import ApiKey
from wire.record_batch import Record, encode_batch, parse_batch_header

BATCH_RECORDS = 960
"""Values per batch: ~1 MB of 1 KiB values, as the tuned librdkafka producer's ``batch.size``,
and under Kafka's default ``message.max.bytes`` (1,048,588)."""
IN_FLIGHT = 5  # librdkafka's max.in.flight.requests.per.connection
WORKERS = 2  # client processes, each with every other partition
PRODUCE_VERSION = 9
FETCH_VERSION = 12
FETCH_MAX_BYTES = 64 * 1024 * 1024  # bench.load's consumer: fetch.max.bytes
PARTITION_MAX_BYTES = 16 * 1024 * 1024  # and max.partition.fetch.bytes
FETCH_WAIT_MS = 500
MAX_RESPONSE_BYTES = FETCH_MAX_BYTES + PARTITION_MAX_BYTES
BATCH_HEADER_BYTES = 61
CORRELATION = struct.Struct(">i")
CORRELATION_AT = 8  # a request frame: size (4), api key (2), version (2), correlation id


class Leader:
    """One broker's connection and the partitions it leads, with each one's share of the load.

    Not a ``KafkaConnection``: that one gathers an answer by appending chunks and copies it to
    ``bytes`` (fine for the CLI's small answers); here a 64 MB Fetch answer is received into one
    buffer and decoded from a view of it, so the consume phase measures brokers, not copies."""

    def __init__(self, host: str, port: int, shares: dict[tuple[str, int], int]) -> None:
        self.sock = socket.create_connection((host, port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.shares = shares
        self.correlation = 0

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> int:
        self.correlation += 1
        self.sock.sendall(request_frame(api_key, version, self.correlation, "bench-raw", body))
        return self.correlation

    def send_frame(self, frame: bytearray) -> None:
        """A pre-built request frame, its correlation id (after the size, key and version) set
        in place: ``sendall`` returns only once all of it is written, so the next send may
        change it again, and a megabytes-long frame is never copied."""
        self.correlation += 1
        CORRELATION.pack_into(frame, CORRELATION_AT, self.correlation)
        self.sock.sendall(frame)

    def receive(self, api_key: int, version: int, correlation_id: int) -> dict[str, Any]:
        size = response_size(self._exactly(4), MAX_RESPONSE_BYTES)
        return decode_answer(api_key, version, correlation_id, self._exactly(size))

    def _exactly(self, size: int) -> memoryview:
        data = bytearray(size)
        view = memoryview(data)
        received = 0
        while received < size:
            got = self.sock.recv_into(view[received:], size - received)
            if not got:
                raise ConnectionError("the broker closed the connection")
            received += got
        return view

    def close(self) -> None:
        self.sock.close()


def shares_of(topics: str, partitions: int, messages: int, workers: int) -> list[dict[tuple[str, int], int]]:
    """Each worker's partitions (every ``workers``-th) with each one's share of ``messages``:
    an equal split, the remainder to the first ones, the same in both phases."""
    targets = each_partition(topics, partitions)
    shares = {
        target: messages // len(targets) + (1 if index < messages % len(targets) else 0)
        for index, target in enumerate(targets)
    }
    return [{target: shares[target] for target in targets[first::workers]} for first in range(workers)]


def leaders_of(bootstrap: str, shares: dict[tuple[str, int], int]) -> list[Leader]:
    """A connection to each leader of ``shares``' partitions (Metadata), with its partitions."""
    with KafkaConnection(bootstrap, timeout=30) as connection:
        metadata = connection.metadata(sorted({topic for topic, _ in shares}))
    endpoints = {b["node_id"]: (b["host"], b["port"]) for b in metadata["brokers"]}
    leader_of = {
        (t["name"], p["partition_index"]): p["leader_id"] for t in metadata["topics"] for p in t["partitions"]
    }
    by_leader: dict[int, dict[tuple[str, int], int]] = {}
    for target, share in shares.items():
        by_leader.setdefault(leader_of[target], {})[target] = share
    return [Leader(*endpoints[node], owned) for node, owned in by_leader.items()]


def produce_request(counts: dict[tuple[str, int], int], value: bytes) -> dict[str, Any]:
    """A Produce body with one batch of ``counts[target]`` values for each target."""
    now = int(time.time() * 1000)
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), count in counts.items():
        batch = bytes(encode_batch([Record(i, now, None, value) for i in range(count)]))
        topics.setdefault(topic, []).append({"index": partition, "records": batch})
    data = [{"name": name, "partition_data": entries} for name, entries in topics.items()]
    return {"transactional_id": None, "acks": 1, "timeout_ms": 30_000, "topic_data": data}


def check_produced(response: dict[str, Any]) -> None:
    """Raises unless every partition of a Produce answer took its batch."""
    for topic in response["responses"]:
        for answer in topic["partition_responses"]:
            if answer["error_code"]:
                raise RuntimeError(
                    f"produce to {topic['name']}-{answer['index']}: error {answer['error_code']}"
                )


def produce_to(leader: Leader, value: bytes, progress: Callable[[int], None]) -> None:
    """Send the leader's shares in batches of ``BATCH_RECORDS``, ``IN_FLIGHT`` requests at a time."""
    remaining = dict(leader.shares)
    frames: dict[tuple[tuple[tuple[str, int], int], ...], bytearray] = {}
    pending: list[int] = []
    while any(remaining.values()) or pending:
        if any(remaining.values()) and len(pending) < IN_FLIGHT:
            counts = {target: min(BATCH_RECORDS, left) for target, left in remaining.items() if left}
            shape = tuple(counts.items())
            if shape not in frames:
                body = produce_request(counts, value)
                frames[shape] = bytearray(
                    request_frame(ApiKey.PRODUCE, PRODUCE_VERSION, 0, "bench-raw", body)
                )
            leader.send_frame(frames[shape])
            pending.append(leader.correlation)
            for target, count in counts.items():
                remaining[target] -= count
            progress(sum(counts.values()))
            continue
        check_produced(leader.receive(ApiKey.PRODUCE, PRODUCE_VERSION, pending.pop(0)))


def records_in(records: memoryview | bytes | None) -> tuple[int, int]:
    """(records, next offset) of the whole batches in a fetched record set (-1: none); a
    partial last batch (a broker may cut one at the size limit) is fetched again next time."""
    view = memoryview(records or b"")
    position, count, next_offset = 0, 0, -1
    while position + BATCH_HEADER_BYTES <= len(view):
        batch = parse_batch_header(view, position)
        if position + batch.size > len(view):
            break
        count += batch.record_count
        next_offset = batch.base_offset + batch.last_offset_delta + 1
        position += batch.size
    return count, next_offset


def consume_from(leader: Leader, deadline: float, progress: Callable[[int], None]) -> None:
    """Fetch the leader's partitions from offset 0 until each has given its share."""
    positions = dict.fromkeys(leader.shares, 0)
    received = dict.fromkeys(leader.shares, 0)
    while any(received[target] < share for target, share in leader.shares.items()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"consume: {sum(received.values())}/{sum(leader.shares.values())} read")
        body = fetch_request_body(
            positions, FETCH_WAIT_MS, 1, max_bytes=FETCH_MAX_BYTES, partition_max_bytes=PARTITION_MAX_BYTES
        )
        response = leader.receive(ApiKey.FETCH, FETCH_VERSION, leader.send(ApiKey.FETCH, FETCH_VERSION, body))
        if response["error_code"]:
            raise RuntimeError(f"fetch: error {response['error_code']}")
        for topic in response["responses"]:
            for answer in topic["partitions"]:
                target = (topic["topic"], answer["partition_index"])
                if answer["error_code"]:
                    raise RuntimeError(f"fetch {target}: error {answer['error_code']}")
                count, next_offset = records_in(answer["records"])
                if next_offset >= 0:
                    positions[target] = next_offset
                    received[target] += count
                    progress(count)


def run_threads(leaders: Sequence[Leader], work: Callable[[Leader], None]) -> None:
    """``work`` on every leader at once; the first failure is raised."""
    failures: list[BaseException] = []

    def guarded(leader: Leader) -> None:
        try:
            work(leader)
        except BaseException as exc:  # handed to the main thread, raised there
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=(leader,), daemon=True) for leader in leaders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def worker(phase: str, bootstrap: str, shares: dict[tuple[str, int], int], value_size: int,
           timeout_s: float, start: Any, done: Any) -> None:  # fmt: skip
    """One client process: connect to the leaders of ``shares``, wait at ``start`` for the
    others (connecting is not timed), then produce or consume, adding records to ``done``."""
    leaders = leaders_of(bootstrap, shares)

    def count(records: int) -> None:
        with done.get_lock():
            done.value += records

    try:
        start.wait()
        deadline = time.monotonic() + timeout_s
        if phase == "produce":
            value = b"x" * value_size
            run_threads(leaders, lambda leader: produce_to(leader, value, count))
        else:
            run_threads(leaders, lambda leader: consume_from(leader, deadline, count))
    finally:
        for leader in leaders:
            leader.close()


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(phase: str, bootstrap: str, broker_pids: Sequence[int], topic: str, partitions: int,
        messages: int, value_size: int, timeout_s: float, workers: int = WORKERS) -> dict[str, Any]:  # fmt: skip
    """``workers`` client processes, each with every ``workers``-th partition; the client's
    CPU is theirs (reaped children) plus this process's."""
    context = multiprocessing.get_context("fork")
    start, done = context.Barrier(workers + 1), context.Value("q", 0)
    processes = [
        context.Process(target=worker, args=(phase, bootstrap, shares, value_size, timeout_s, start, done))
        for shares in shares_of(topic, partitions, messages, workers)
    ]
    for process in processes:
        process.start()
    progress = Progress(phase, messages, value_size)
    children_before = children_cpu_seconds()
    start.wait(timeout=60)
    window = Window(broker_pids)
    for process in processes:
        while process.is_alive():
            process.join(timeout=0.2)
            progress.update(done.value)
    measured = window.close()
    failed = [process.exitcode for process in processes if process.exitcode != 0]
    if failed:
        raise RuntimeError(f"{phase}: client processes exited with {failed}")
    clients = children_cpu_seconds() - children_before
    measured["client_cpu_seconds"] += clients
    if phase == "produce":
        measured["settled_cpu_seconds"] = window.settled_cpu_seconds() - clients
        measured["avg_batch_bytes"] = BATCH_RECORDS * value_size
    return {"messages": done.value, "bytes": done.value * value_size, **measured}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=("produce", "consume"))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--broker-pids", type=lambda text: [int(p) for p in text.split(",")], required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--messages", type=int, required=True)
    parser.add_argument("--value-size", type=int, required=True)
    parser.add_argument("--timeout", type=float, required=True)
    args = parser.parse_args(argv)
    result = run(args.phase, args.bootstrap, args.broker_pids, args.topic, args.partitions,
                 args.messages, args.value_size, args.timeout)  # fmt: skip
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
