"""Client load: produce or consume one topic with confluent-kafka, as a separate process.

Why a separate process: the harness samples the broker and prints progress; keeping the
client in its own interpreter means neither disturbs the other's GIL, and the client's own
CPU time (``getrusage``, which counts librdkafka's threads too) shows whether the client,
not the broker, was the bottleneck.

Run as ``python -m bench.load {produce,consume} --bootstrap HOST:PORT --topic T ...``; the
result is one JSON object on stdout, progress goes to stderr.
"""

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from compat_tests.kit.procstat import cpu_seconds, machine_busy_seconds

PROGRESS_EVERY_S = 2.0
MiB = 1024 * 1024

# ~1 MB batches: batch.size bounds each partition's batch; message.max.bytes (the request
# cap) is set just above it so batch.size is the binding limit, and stays under Kafka's
# default broker-side limit of 1048588 bytes per batch. linger.ms gives the batch time to fill.
PRODUCER_CONFIG: dict[str, Any] = {
    "acks": 1,
    "compression.type": "none",
    "enable.idempotence": False,
    "batch.size": 1_000_000,
    "batch.num.messages": 100_000,
    "message.max.bytes": 1_048_576,
    "linger.ms": 20,
    "queue.buffering.max.messages": 500_000,
    "queue.buffering.max.kbytes": 512 * 1024,
}

# What every bench producer gets whatever its profile: batch-size statistics, and no Python
# callback per acknowledged message (it would cost the client more than the broker's work;
# failures are still reported, and flush() still waits for every ack).
HARNESS_CONFIG: dict[str, Any] = {"statistics.interval.ms": 500, "delivery.report.only.error": True}

# An application that wants no loss and no duplicates: acks=all from an idempotent producer,
# librdkafka's defaults for everything else (the replicated bench: what replication costs as
# clients meet it, not as the throughput bench's tuning would hide it).
IDEMPOTENT_CONFIG: dict[str, Any] = {"acks": "all", "enable.idempotence": True}

# Large fetches so the consumer is limited by the broker, not by request round trips
# (librdkafka keeps one Fetch in flight per broker, so each round trip should carry a lot).
CONSUMER_CONFIG: dict[str, Any] = {
    "group.id": "bench",
    "enable.auto.commit": False,
    "enable.partition.eof": True,
    "fetch.max.bytes": 64 * MiB,
    "max.partition.fetch.bytes": 16 * MiB,
    "receive.message.max.bytes": 64 * MiB + 4096,
    "fetch.wait.max.ms": 100,
    "queued.max.messages.kbytes": 512 * 1024,
    # When the consumer's queue passes queued.min.messages (100,000: 100 MB of 1 KiB values),
    # librdkafka stops fetching that broker's partitions for this long (default 1,000 ms). With
    # several brokers' fetches filling one queue that pause, not the brokers, set the pace: two
    # processes consumed at half one's rate, both idle (bench/README.md, "Cores").
    "fetch.queue.backoff.ms": 10,
}


class Window:
    """Wall clock and CPU of the client, the broker and the whole machine over the timed part.

    Measured here, at the exact edges of the timed loop, so connection set-up and process
    start-up are charged to no one.
    """

    def __init__(self, broker_pids: Sequence[int]) -> None:
        self.broker_pids = list(broker_pids)
        self.start = time.monotonic()
        self.client0, self.broker0, self.machine0 = self._cpu()

    def _cpu(self) -> tuple[float, float, float]:
        # RUSAGE_SELF counts all threads, and librdkafka does the network I/O in its own.
        usage = resource.getrusage(resource.RUSAGE_SELF)
        client = usage.ru_utime + usage.ru_stime
        return client, cpu_seconds(self.broker_pids), machine_busy_seconds()

    def close(self) -> dict[str, float]:
        seconds = time.monotonic() - self.start
        client, broker, machine = self._cpu()
        return {
            "seconds": seconds,
            "client_cpu_seconds": client - self.client0,
            "broker_cpu_seconds": broker - self.broker0,
            "machine_cpu_seconds": machine - self.machine0,
        }

    def settled_cpu_seconds(self) -> float:
        """Machine CPU from the window's start until nothing is left dirty in the page cache
        (``sync``, run after ``close``), less the client's: what getting the bytes onto the disk
        cost, whoever did the writing.  A broker that fsyncs before acks writes them back in its
        own threads, inside the timed part; otherwise the kernel's flusher threads do the same
        work, mostly later and outside the broker's process, where its own CPU time misses it.
        """
        subprocess.run(["sync"], check=True)  # a child: not in this process's RUSAGE_SELF
        client, _, machine = self._cpu()
        return (machine - self.machine0) - (client - self.client0)


class Progress:
    """Prints ``phase: n/total`` to stderr at most every PROGRESS_EVERY_S, so long runs show life."""

    def __init__(self, phase: str, total: int, value_size: int) -> None:
        self.phase, self.total, self.value_size = phase, total, value_size
        self.start = self.last = time.monotonic()

    def update(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        rate = done * self.value_size / 1e6 / (now - self.start)
        print(f"    {self.phase}: {done}/{self.total} msgs ({100 * done // self.total}%), {rate:.0f} MB/s",
              file=sys.stderr, flush=True)  # fmt: skip


# A transactional producer must be idempotent with acks=all; its id is fixed, each trial
# runs on a fresh broker.
TRANSACTIONAL_CONFIG: dict[str, Any] = {
    "transactional.id": "bench",
    "enable.idempotence": True,
    "acks": "all",
}


def each_partition(topics: str, partitions: int) -> list[tuple[str, int]]:
    """Every (topic, partition) of the comma-separated ``topics`` of ``partitions`` each."""
    return [(topic, p) for topic in topics.split(",") for p in range(partitions)]


def produce(client: dict[str, Any], broker_pids: Sequence[int], topic: str, partitions: int, messages: int,
            value_size: int, timeout_s: float, transaction_records: int = 0,
            idempotent: bool = False) -> dict[str, Any]:  # fmt: skip
    """Send ``messages`` values round-robin over the partitions of the comma-separated
    ``topic`` names and wait for every ack.

    The clock starts after Metadata is known, so connection set-up is not counted, and stops
    when flush() returns, i.e. when the broker has acknowledged every message.  With
    ``transaction_records`` every that many messages are one transaction (init before the
    clock starts; each commit waits for its records, its markers and the coordinator).
    ``idempotent`` sends with ``IDEMPOTENT_CONFIG`` instead of the tuned ``PRODUCER_CONFIG``.
    """
    batches = {"bytes": 0, "count": 0}
    errors: list[str] = []

    def on_stats(raw: str) -> None:
        # Each report holds a histogram of the batches sent since the previous one; summing
        # them gives the run's mean batch size, the check that batching really is ~1 MB.
        for stats in json.loads(raw).get("topics", {}).values():
            window = stats.get("batchsize", {})
            batches["bytes"] += window.get("sum", 0)
            batches["count"] += window.get("cnt", 0)

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None and len(errors) < 10:
            errors.append(str(err))

    config = {**HARNESS_CONFIG, **(IDEMPOTENT_CONFIG if idempotent else PRODUCER_CONFIG),
              **(TRANSACTIONAL_CONFIG if transaction_records else {})}  # fmt: skip
    producer = Producer({**client, "stats_cb": on_stats, "on_delivery": on_delivery, **config})
    targets = each_partition(topic, partitions)
    producer.list_topics(timeout=30)
    if transaction_records:
        producer.init_transactions(timeout_s)
        producer.begin_transaction()
    value = b"x" * value_size
    progress = Progress("produce", messages, value_size)
    window = Window(broker_pids)
    deadline = window.start + timeout_s
    sent = 0
    while sent < messages:
        try:
            name, partition = targets[sent % len(targets)]
            producer.produce(name, value, partition=partition)
            sent += 1
        except BufferError:  # local queue full: let librdkafka drain it
            producer.poll(0.01)
            progress.update(sent)
            if time.monotonic() > deadline:
                raise TimeoutError(f"produce: only {sent}/{messages} queued in {timeout_s}s") from None
        if transaction_records and not sent % transaction_records:
            producer.commit_transaction(max(0.0, deadline - time.monotonic()))
            producer.begin_transaction()
        if not sent % 10_000:
            producer.poll(0)
            progress.update(sent)
    if transaction_records:
        producer.commit_transaction(max(0.0, deadline - time.monotonic()))
    remaining = producer.flush(max(0.0, deadline - time.monotonic()))
    measured = window.close()
    measured["settled_cpu_seconds"] = window.settled_cpu_seconds()
    if remaining:
        raise TimeoutError(f"produce: {remaining} messages unacknowledged after {timeout_s}s")
    if errors:
        raise KafkaException(f"produce: delivery failed: {errors}")
    producer.poll(HARNESS_CONFIG["statistics.interval.ms"] * 2 / 1000)  # the last batch-size window
    return {
        "messages": messages,
        "bytes": messages * value_size,
        **measured,
        "avg_batch_bytes": batches["bytes"] / max(1, batches["count"]),
    }


def consume(client: dict[str, Any], broker_pids: Sequence[int], topic: str, partitions: int, messages: int,
            value_size: int, timeout_s: float) -> dict[str, Any]:  # fmt: skip
    """Read every partition of the comma-separated ``topic`` names from offset 0 until
    ``messages`` records have arrived.

    ``assign`` (no group join) keeps the measurement to Fetch alone. Reaching the end of every
    partition with fewer records than produced is an error, not a slow run.
    """
    consumer = Consumer({**client, **CONSUMER_CONFIG})
    try:
        targets = each_partition(topic, partitions)
        consumer.list_topics(timeout=30)
        progress = Progress("consume", messages, value_size)
        window = Window(broker_pids)
        deadline = window.start + timeout_s
        consumer.assign([TopicPartition(name, p, 0) for name, p in targets])
        received = nbytes = 0
        at_end: set[tuple[str, int]] = set()
        while received < messages:
            if time.monotonic() > deadline:
                raise TimeoutError(f"consume: only {received}/{messages} read in {timeout_s}s")
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                err = msg.error()
                if err is None:
                    received += 1
                    nbytes += len(msg.value())
                    at_end.discard((msg.topic(), msg.partition()))
                elif err.code() == KafkaError._PARTITION_EOF:
                    at_end.add((msg.topic(), msg.partition()))
                else:
                    raise KafkaException(err)
            if len(at_end) == len(targets) and received < messages:
                raise RuntimeError(f"consume: end of all partitions after {received}/{messages} messages")
            progress.update(received)
        measured = window.close()
    finally:
        consumer.close()
    return {"messages": received, "bytes": nbytes, **measured}


PHASES: dict[str, Callable[..., dict[str, Any]]] = {"produce": produce, "consume": consume}


def _pids(text: str) -> list[int]:
    return [int(pid) for pid in text.split(",")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=sorted(PHASES))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--broker-pids", type=_pids, required=True,
                        help="whose CPU time to measure: comma-separated, a cluster's brokers are summed")  # fmt: skip
    parser.add_argument("--topic", required=True, help="one topic, or several comma-separated")
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--messages", type=int, required=True)
    parser.add_argument("--value-size", type=int, required=True)
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--transaction-records", type=int, default=0, help="produce: records per transaction")
    parser.add_argument("--idempotent", action="store_true",
                        help="produce: acks=all, idempotent, librdkafka's defaults otherwise")  # fmt: skip
    parser.add_argument("--client-config", type=json.loads, default={},
                        help="JSON object of further librdkafka settings (the listener's security)")  # fmt: skip
    args = parser.parse_args(argv)
    extra = ({"transaction_records": args.transaction_records, "idempotent": args.idempotent}
             if args.phase == "produce" else {})  # fmt: skip
    result = PHASES[args.phase](
        {"bootstrap.servers": args.bootstrap, **args.client_config},
        args.broker_pids,
        args.topic,
        args.partitions,
        args.messages,
        args.value_size,
        args.timeout,
        **extra,
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C reaches the whole group; the harness reports it
        sys.exit(130)
