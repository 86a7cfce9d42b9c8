"""Continuous producers and a consuming group that keep working while brokers die under them.

The failover scenarios need what :class:`~compat_tests.kit.drivers.base.Driver` deliberately does
not offer: long-lived clients with many records in flight, each delivery report kept with the
moment it arrived. Here are two idempotent acks=all producers (librdkafka through
confluent-kafka, and kafka-python) and a group consumer (confluent-kafka), each in its own
thread, and :func:`run_rounds`, which kills brokers while they work and measures failover: the
time from a leader's death to the first acknowledgement of a record sent after it.

Every record's value names its producer, partition and sequence (:mod:`compat_tests.kit.history`),
so the history checker can judge what was acknowledged against what the topic holds at the end.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import KafkaError, Producer
from kafka import KafkaProducer

from compat_tests.helpers import eventually
from compat_tests.kit.clusters import Cluster
from compat_tests.kit.drivers.confluent import ConfluentClient
from compat_tests.kit.history import Acked, Read, RecordId, encode

CI_CHAOS_ROUNDS = 3
"""Kill/restart rounds in CI; ``--chaos-rounds`` asks for more (20 or more for a long run)."""
RATE_PER_S = 100.0
"""Records per second per producer: enough to see every failover, little enough for a 2-core
machine that also runs three brokers."""
IN_FLIGHT = 200
"""Records a producer may have unacknowledged; while brokers are down it waits instead of
queueing without bound."""
DELIVERY_TIMEOUT_MS = 120_000
"""How long a producer retries one record: longer than any failover, so records sent while a
leader is dead are delivered once a new one is elected rather than given up."""
FAILOVER_TIMEOUT_S = 90.0
RECOVERY_TIMEOUT_S = 120.0
"""Bounds on waiting for produces to succeed again, and for a restarted node to catch up."""
ERRORS_KEPT = 100
STATISTICS_INTERVAL_MS = 500
"""How often librdkafka reports its statistics, where the producers' epoch bumps show."""
RDKAFKA_DEBUG_ENV = "ODRADEK_CHAOS_RDKAFKA_DEBUG"
"""librdkafka debug contexts for the confluent-kafka chaos producer (``eos,msg`` shows its
idempotence state, retries and timeouts), for a long run that hunts a stalled producer."""


@dataclass(frozen=True)
class Ack:
    """An acknowledged record, with when it was handed to the client and when it was acked."""

    acked: Acked
    sent_at: float
    acked_at: float


class Worker(ABC):
    """A client working in its own thread until :meth:`stop`; whatever it raises is re-raised
    by :meth:`stop` in the test's thread, so a crashed client fails the scenario."""

    def __init__(self, name: str) -> None:
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"chaos-{name}", daemon=True)
        self.crash: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            self._work()
        except BaseException as exc:  # noqa: BLE001 - re-raised by stop() in the test's thread
            self.crash = exc

    @abstractmethod
    def _work(self) -> None:
        """Work until ``self._stop`` is set, then release the client."""

    def _note_error(self, text: str) -> None:
        """Keep the first :data:`ERRORS_KEPT` errors (call with the lock held)."""
        if len(self.errors) < ERRORS_KEPT:
            self.errors.append(text)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Ask the thread to finish and wait for it."""
        self._stop.set()
        self._thread.join(timeout_s)
        if self.crash is not None:
            raise AssertionError(f"{self._thread.name} crashed: {self.crash!r}") from self.crash
        assert not self._thread.is_alive(), f"{self._thread.name} did not stop within {timeout_s}s"


class ChaosProducer(Worker):
    """A producer thread writing ``producer:partition:sequence`` values round-robin over the
    partitions at :data:`RATE_PER_S`, with at most :data:`IN_FLIGHT` records unacknowledged."""

    def __init__(self, name: str, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(name)
        self.name = name
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.acks: list[Ack] = []
        self.failed = 0
        self.epoch_bumps = 0
        """Times the client gave up its producer epoch and took a new one (so its sequence
        numbers started again): counted where the client tells (librdkafka's statistics)."""
        self._in_flight = 0
        self.client_state = ""
        """The client's own view of its queues and idempotence, where it tells (librdkafka's
        statistics): what a stalled producer's report needs to say which side stopped."""

    def _work(self) -> None:
        sequences = [0] * self.partitions
        sent = 0
        began = time.monotonic()
        while not self._stop.is_set():
            self._service()
            if self._in_flight >= IN_FLIGHT or sent > (time.monotonic() - began) * RATE_PER_S:
                time.sleep(0.01)
                continue
            partition = sent % self.partitions
            record = RecordId(self.name, partition, sequences[partition])
            sequences[partition] += 1
            sent += 1
            with self._lock:
                self._in_flight += 1
            self._send(record, time.monotonic())
        self._finish()

    def _delivered(self, record: RecordId, sent_at: float, offset: int | None, error: str | None) -> None:
        """Called by the client (on its own thread) for each record's outcome."""
        with self._lock:
            self._in_flight -= 1
            if error is None and offset is not None and offset >= 0:
                self.acks.append(Ack(Acked(record, offset), sent_at, time.monotonic()))
            else:
                self.failed += 1
                self._note_error(f"{record}: {error}")

    def acked(self, since: float = 0.0) -> list[Acked]:
        """The records acknowledged so far (those acknowledged at or after ``since``)."""
        with self._lock:
            return [a.acked for a in self.acks if a.acked_at >= since]

    def first_ack_after(self, partition: int, moment: float) -> float | None:
        """When the first record sent to ``partition`` at or after ``moment`` was acknowledged."""
        with self._lock:
            times = [
                a.acked_at for a in self.acks if a.acked.record.partition == partition and a.sent_at >= moment
            ]
        return min(times, default=None)

    def ack_times(self, partition: int, since: float) -> list[float]:
        """When each record of ``partition`` acknowledged at or after ``since`` was acknowledged."""
        with self._lock:
            return [
                a.acked_at for a in self.acks if a.acked.record.partition == partition and a.acked_at >= since
            ]

    def stop(self, timeout_s: float = DELIVERY_TIMEOUT_MS / 1000 + 30) -> None:
        """Stop sending, wait for every outstanding delivery report, close the client."""
        super().stop(timeout_s)

    @abstractmethod
    def _send(self, record: RecordId, sent_at: float) -> None:
        """Hand one record to the client; its outcome must reach :meth:`_delivered`."""

    def _service(self) -> None:  # noqa: B027 - only clients that need driving override it
        """Let the client run its callbacks (librdkafka needs polling)."""

    @abstractmethod
    def _finish(self) -> None:
        """Flush (every outcome reported) and close the client."""


class ConfluentChaosProducer(ChaosProducer):
    """librdkafka: idempotent, acks=all, up to five requests in flight per broker."""

    def __init__(self, name: str, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(name, bootstrap, topic, partitions)
        settings: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": DELIVERY_TIMEOUT_MS,
            "statistics.interval.ms": STATISTICS_INTERVAL_MS,
            "stats_cb": self._statistics,
        }
        if debug := os.environ.get(RDKAFKA_DEBUG_ENV):
            settings["debug"] = debug  # to stderr, which a run with -s keeps in its log
        self._producer = Producer(settings)

    def _statistics(self, report: str) -> None:
        """librdkafka's statistics (served by ``poll``): ``eos.epoch_cnt`` counts the producer
        id and epoch assignments since start, so every one after the first is a bump; the
        idempotence state, each partition's queues and sequence state and each broker's waiting
        requests are kept as :attr:`client_state`."""
        statistics = json.loads(report)
        eos = statistics.get("eos", {})
        partitions = statistics.get("topics", {}).get(self.topic, {}).get("partitions", {})
        state = [f"idempotence {eos.get('idemp_state')} epoch {eos.get('producer_epoch')}"]
        state += [
            f"partition {number}: leader {p.get('leader')}, queued {p.get('msgq_cnt')}+"
            f"{p.get('xmit_msgq_cnt')}, in flight {p.get('msgs_inflight')}, next ack seq "
            f"{p.get('next_ack_seq')}, next err seq {p.get('next_err_seq')}, acked msgid {p.get('acked_msgid')}"
            for number, p in sorted(partitions.items())
            if int(number) >= 0
        ]
        state += [
            f"{b.get('name')} {b.get('state')} waiting {b.get('waitresp_cnt')} outbuf {b.get('outbuf_cnt')}"
            for b in statistics.get("brokers", {}).values()
            if b.get("nodeid", -1) >= 0
        ]
        with self._lock:
            self.epoch_bumps = max(self.epoch_bumps, eos.get("epoch_cnt", 0) - 1)
            self.client_state = "; ".join(state)

    def _send(self, record: RecordId, sent_at: float) -> None:
        def report(error: KafkaError | None, message: Any) -> None:
            offset = None if error is not None else message.offset()
            self._delivered(record, sent_at, offset, None if error is None else error.name())

        self._producer.produce(self.topic, encode(record), partition=record.partition, on_delivery=report)

    def _service(self) -> None:
        self._producer.poll(0)

    def _finish(self) -> None:
        left = self._producer.flush(DELIVERY_TIMEOUT_MS / 1000 + 10)
        if left:
            raise RuntimeError(f"{left} records without a delivery report")
        self._producer.poll(2 * STATISTICS_INTERVAL_MS / 1000)  # statistics as of the end


class KafkaPythonChaosProducer(ChaosProducer):
    """kafka-python: idempotent, acks=all; its futures report on the client's sender thread."""

    def __init__(self, name: str, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(name, bootstrap, topic, partitions)
        self._producer = KafkaProducer(
            bootstrap_servers=bootstrap.split(","),
            enable_idempotence=True,
            acks="all",
            linger_ms=5,
            delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
            request_timeout_ms=10_000,
        )

    def _send(self, record: RecordId, sent_at: float) -> None:
        future = self._producer.send(self.topic, value=encode(record), partition=record.partition)
        future.add_callback(lambda metadata: self._delivered(record, sent_at, metadata.offset, None))
        future.add_errback(lambda exc: self._delivered(record, sent_at, None, repr(exc)))

    def _finish(self) -> None:
        self._producer.flush(timeout=DELIVERY_TIMEOUT_MS / 1000 + 10)
        self._producer.close(timeout=10)


PRODUCERS: dict[str, type[ChaosProducer]] = {
    "confluent": ConfluentChaosProducer,
    "kafkapython": KafkaPythonChaosProducer,
}


class GroupConsumer(Worker):
    """A confluent-kafka consumer in a group, polling and auto-committing in its own thread; it
    remembers every (partition, offset) it was given, to show the group kept consuming."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        super().__init__(f"group-{group}")
        self.seen: set[tuple[int, int]] = set()
        self._consumer = RdConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 1000,
                "session.timeout.ms": 10_000,
            }
        )
        self._consumer.subscribe([topic])

    def _work(self) -> None:
        while not self._stop.is_set():
            for message in self._consumer.consume(500, 0.5):
                error = message.error()
                with self._lock:
                    if error is None:
                        self.seen.add((message.partition(), message.offset()))
                    else:
                        self._note_error(error.name())
        self._consumer.close()

    def missing(self, acked: Sequence[Acked]) -> list[Acked]:
        """Acknowledged records the group has not been given yet."""
        with self._lock:
            return [a for a in acked if (a.record.partition, a.offset) not in self.seen]

    def given(self) -> set[tuple[int, int]]:
        """Every (partition, offset) the group has been given so far."""
        with self._lock:
            return set(self.seen)

    def given_any(self, acked: Sequence[Acked]) -> bool:
        """Whether the group has been given at least one of ``acked``."""
        with self._lock:
            return any((a.record.partition, a.offset) in self.seen for a in acked)


def read_all(bootstrap: str, topic: str, partitions: int) -> list[Read]:
    """Every record of ``topic`` from offset 0 to each partition's end, by a fresh consumer.

    The end offsets are asked again while a new leader answers OFFSET_NOT_AVAILABLE: Kafka's
    leader refuses ListOffsets until its high watermark reaches the start of its leader epoch
    (KIP-207), which takes a fetch round of its followers after an election."""
    client = ConfluentClient(bootstrap)
    ends = eventually(lambda: client.list_offsets(topic, range(partitions), "latest"), interval_s=0.5)
    consumed = client.consume(topic, dict.fromkeys(range(partitions), 0), until=ends, timeout_s=120)
    return [Read(c.partition, c.offset, c.record.value) for records in consumed.values() for c in records]


def wait_until_replicated(cluster: Cluster, topics: Sequence[str]) -> None:
    """Wait until every partition of ``topics`` has a live leader and all its replicas in sync,
    so that the next kill leaves the two replicas acks=all needs."""

    def replicated() -> None:
        for topic in topics:
            for partition, state in cluster.partitions(topic).items():
                assert state.leader in cluster.live(), f"{topic}-{partition} leader {state.leader}"
                assert set(state.isr) == set(state.replicas), f"{topic}-{partition}: {state}"

    eventually(replicated, timeout_s=RECOVERY_TIMEOUT_S, interval_s=0.5)


def nearest_rank(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values`` (0 for none)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))] if ordered else 0.0


@dataclass
class Failovers:
    """Failover times (seconds), one per producer per kill of a leader."""

    seconds: list[float] = field(default_factory=list)

    def percentile(self, fraction: float) -> float:
        return nearest_rank(self.seconds, fraction)

    def __str__(self) -> str:
        if not self.seconds:
            return "no failovers measured"
        return (
            f"failover over {len(self.seconds)} measurements: p50 {self.percentile(0.5):.2f}s "
            f"p99 {self.percentile(0.99):.2f}s max {max(self.seconds):.2f}s"
        )


@dataclass
class Workload:
    """What runs while brokers die: the producers writing ``topic`` and the group reading it."""

    cluster: Cluster
    topic: str
    producers: Sequence[ChaosProducer]
    group: GroupConsumer
    failovers: Failovers = field(default_factory=Failovers)

    def acked_since(self, moment: float) -> list[Acked]:
        return [a for producer in self.producers for a in producer.acked(since=moment)]

    def clients_report(self) -> str:
        """What the clients went through: failed deliveries, producer epoch bumps, group errors."""
        return (
            "failed deliveries: "
            + ", ".join(f"{p.name} {p.failed} {p.errors[:3]}" for p in self.producers)
            + "; producer epoch bumps: "
            + ", ".join(f"{p.name} {p.epoch_bumps}" for p in self.producers)
            + f"; group errors {self.group.errors[:5]}"
            + "".join(f"; {p.name}'s own state: {p.client_state}" for p in self.producers if p.client_state)
        )


def kill_and_fail_over(work: Workload, victim: int) -> None:
    """SIGKILL ``victim``; wait until every producer has a record sent after the kill acknowledged
    on a partition it led (any partition, if it led none), and until the group has been given a
    record acknowledged after the kill; record the failover times; restart it."""
    cluster = work.cluster
    led = [p for p, state in cluster.partitions(work.topic).items() if state.leader == victim]
    watched = led[0] if led else 0
    killed_at = time.monotonic()
    cluster.kill(victim)

    def produced_again() -> list[float]:
        firsts = [p.first_ack_after(watched, killed_at) for p in work.producers]
        assert all(t is not None for t in firsts), f"no produce to partition {watched} acknowledged yet"
        return [t - killed_at for t in firsts if t is not None]

    def consumed_again() -> None:
        assert work.group.given_any(work.acked_since(killed_at)), (
            f"the group got none of the records acknowledged since node {victim} was killed"
        )

    times = eventually(produced_again, timeout_s=FAILOVER_TIMEOUT_S, interval_s=0.1)
    if led:
        work.failovers.seconds += times
    eventually(consumed_again, timeout_s=FAILOVER_TIMEOUT_S, interval_s=0.2)
    cluster.start(victim)


def run_rounds(work: Workload, rounds: int, progress: Callable[[str], None], rng: random.Random) -> None:
    """Each round: kill the leader of a partition (partitions in turn), wait for produces and
    the group to succeed again, restart it; then the same for a random broker. Before each kill
    every partition of the topic and of ``__consumer_offsets`` is fully in sync again, and before
    the first the group consumes: the scenario is a group that keeps consuming through failures,
    not one whose coordinator dies while the group is still forming (docs/NOTES.md)."""
    topics = [work.topic, "__consumer_offsets"]

    def consuming() -> None:
        assert work.group.given_any(work.acked_since(0.0)), "the group has not been given a record yet"

    eventually(consuming, timeout_s=FAILOVER_TIMEOUT_S, interval_s=0.2)
    for round_number in range(rounds):
        for what in ("leader", "random"):
            wait_until_replicated(work.cluster, topics)
            if what == "leader":
                victim = work.cluster.leader_of(work.topic, round_number % work.producers[0].partitions)
            else:
                victim = rng.choice(sorted(work.cluster.nodes))
            kill_and_fail_over(work, victim)
            progress(f"round {round_number + 1}/{rounds}: killed {what} node {victim}; {work.failovers}")
    wait_until_replicated(work.cluster, topics)
