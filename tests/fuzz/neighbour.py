"""A well-behaved producer and consumer running beside the fuzzer, on a topic of their own.

The point of the fuzzer is that hostile clients cannot hurt anyone else, so this neighbour
measures exactly that: a confluent-kafka producer (idempotent, ``acks=all``) sends a steady
stream of keyed messages and records how long each acknowledgement took, tagged with the
phase it was sent in (before fuzzing, during it); a consumer reads the topic from the start
by assignment and counts every key it sees; it commits its position every
:data:`COMMIT_INTERVAL_S` to a group of its own, as consumers do (the fuzzer's group names
never reach it), which also makes the broker create ``__consumer_offsets`` before the
baseline is taken.  At the end every acknowledged key must have been read exactly once: a
duplicate is a real duplicate in the log (the producer is idempotent), a missing key is
acknowledged data lost.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

TOPIC = "neighbour-exactly-once"
GROUP = "neighbour-reader"
_VALUE = b"v" * 100
COMMIT_INTERVAL_S = 0.5


@dataclass
class NeighbourReport:
    acked: int
    delivery_errors: int
    missing: int
    duplicates: int
    latency_ms: dict[str, tuple[float, float, int]]  # phase -> (p50, p99, acks)

    @property
    def exactly_once(self) -> bool:
        return self.acked > 0 and self.missing == 0 and self.duplicates == 0

    def summary(self) -> str:
        phases = ", ".join(
            f"{phase}: p50 {p50:.1f} ms p99 {p99:.1f} ms over {n} acks"
            for phase, (p50, p99, n) in self.latency_ms.items()
        )
        return (
            f"neighbour: {self.acked} acked, {self.delivery_errors} delivery errors, "
            f"{self.missing} missing, {self.duplicates} duplicated; ack latency {phases}"
        )


class Neighbour:
    """Producer and consumer threads; ``phase`` labels the acknowledgements as they come."""

    def __init__(self, bootstrap: str, rate_per_second: float = 200.0) -> None:
        self.bootstrap = bootstrap
        self.interval = 1.0 / rate_per_second
        self.phase = "startup"
        self._stop_producing = threading.Event()
        self._stop_consuming = threading.Event()
        self._lock = threading.Lock()
        self._acked: set[bytes] = set()
        self._latencies: dict[str, list[float]] = {}
        self._delivery_errors = 0
        self._seen: Counter[bytes] = Counter()
        self._errors: list[BaseException] = []
        self.committed = threading.Event()
        self._threads = [
            threading.Thread(
                target=self._guard, args=(self._produce,), name="neighbour-producer", daemon=True
            ),
            threading.Thread(
                target=self._guard, args=(self._consume,), name="neighbour-consumer", daemon=True
            ),
        ]

    def start(self) -> Neighbour:
        for thread in self._threads:
            thread.start()
        return self

    def acked_count(self) -> int:
        with self._lock:
            return len(self._acked)

    def finish(self, timeout: float = 60.0) -> NeighbourReport:
        """Stop producing, wait until the consumer has read every acknowledged key (or the
        timeout passes), stop it, and compare."""
        self._stop_producing.set()
        self._threads[0].join(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self._errors:
            with self._lock:
                if self._acked <= self._seen.keys():
                    break
            time.sleep(0.1)
        self._stop_consuming.set()
        self._threads[1].join(timeout)
        if self._errors:
            raise RuntimeError("a neighbour thread failed") from self._errors[0]
        with self._lock:
            return NeighbourReport(
                acked=len(self._acked),
                delivery_errors=self._delivery_errors,
                missing=len(self._acked - self._seen.keys()),
                duplicates=sum(1 for count in self._seen.values() if count > 1),
                latency_ms={phase: _percentiles(values) for phase, values in self._latencies.items()},
            )

    def _guard(self, target) -> None:
        try:
            target()
        except BaseException as exc:  # reported by finish(), not lost in a thread
            self._errors.append(exc)

    def _produce(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 0}
        )
        sequence = 0
        next_send = time.monotonic()
        while not self._stop_producing.is_set():
            key = b"%d" % sequence
            sequence += 1
            producer.produce(
                TOPIC, _VALUE, key, on_delivery=self._on_delivery(key, self.phase, time.monotonic())
            )
            next_send += self.interval
            while (wait := next_send - time.monotonic()) > 0:
                producer.poll(wait)
        if producer.flush(30) != 0:
            raise RuntimeError("neighbour producer could not flush within 30 s")

    def _on_delivery(self, key: bytes, phase: str, sent_at: float):
        def delivered(error: KafkaError | None, _message: object) -> None:
            latency = (time.monotonic() - sent_at) * 1000
            with self._lock:
                if error is not None:
                    self._delivery_errors += 1
                    return
                self._acked.add(key)
                self._latencies.setdefault(phase, []).append(latency)

        return delivered

    def _consume(self) -> None:
        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": GROUP, "enable.auto.commit": False}
        )
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        next_commit = time.monotonic()
        try:
            while not self._stop_consuming.is_set():
                messages = [m for m in consumer.consume(500, 0.2) if m.error() is None]
                with self._lock:
                    self._seen.update(message.key() for message in messages)
                if messages and time.monotonic() >= next_commit:
                    consumer.commit(asynchronous=False)
                    self.committed.set()
                    next_commit = time.monotonic() + COMMIT_INTERVAL_S
        finally:
            consumer.close()


def _percentiles(values: list[float]) -> tuple[float, float, int]:
    if len(values) < 2:
        return (values[0], values[0], 1) if values else (0.0, 0.0, 0)
    cuts = statistics.quantiles(values, n=100)
    return cuts[49], cuts[98], len(values)
