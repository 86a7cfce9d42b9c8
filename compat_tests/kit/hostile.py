"""Hostile connections that tie up a broker's shared resources cheaply, and a healthy client's
latency measured beside them.

Issue 25 found that three connections sending only the size prefix ``100000000`` stalled every
other client of Odradek for 29.5 s.  The property that replaced that design: a well-behaved
client's latency does not depend on how many idle or slow connections exist.  This module is
broker-agnostic, so the same attacks and the same measurement serve the compatibility
scenario (which Apache Kafka passes too, at the counts its heap survives), the Odradek-only
tests with hundreds of connections, and ``bench/``'s side-by-side case.

The attacks (each connection does one thing and then nothing, until it is reset):

- ``prefix``: a frame size prefix, no body (what the issue's attacker sent);
- ``partial``: a 1 MiB frame of which 64 KiB arrive (a slow sender holding real bytes);
- ``unread``: pipelined Fetch requests for megabytes, with a small receive window, never read
  (responses a client stops reading);
- ``tls-stall``: the first bytes of a TLS ClientHello on a TLS listener, then nothing (a
  handshake in progress).
"""

from __future__ import annotations

import socket
import statistics
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from compat_tests.kit.raw_protocol import ask, fetch_body, request_frame
from wire.api_keys import ApiKey

ATTACKS = ("prefix", "partial", "unread", "tls-stall")
PREFIX_BYTES = 100_000_000
PARTIAL_FRAME_BYTES = 1 << 20
PARTIAL_SENT_BYTES = 64 * 1024
UNREAD_FETCH_BYTES = 8 << 20
UNREAD_PIPELINED = 4
UNREAD_RECEIVE_WINDOW = 4096
# A TLS record header for a handshake message, and the start of a ClientHello in it: the
# server waits for the rest of the record.
TLS_HELLO_START = bytes.fromhex("160301020001000200fc0303")
CONNECT_TIMEOUT_S = 10.0


@dataclass
class Target:
    """Where the attacks go: the PLAINTEXT bootstrap, a topic whose partition 0 holds at least
    a few megabytes (for ``unread``), and a TLS listener's address (for ``tls-stall``)."""

    bootstrap: str
    data_topic: str = ""
    tls_address: str = ""


def _address(text: str) -> tuple[str, int]:
    host, port = text.rsplit(":", 1)
    return host, int(port)


def reset(sock: socket.socket) -> None:
    """Close abruptly (RST), as a crashed attacker does: the broker learns at once."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class HostileConnections:
    """``count`` connections making attack ``kind``, opened on entry and reset on exit."""

    def __init__(
        self,
        kind: str,
        count: int,
        target: Target,
        frame_bytes: int | None = None,
        sent_bytes: int = PARTIAL_SENT_BYTES,
    ) -> None:
        """``frame_bytes`` is the size prefix of ``prefix`` and ``partial`` (by default
        PREFIX_BYTES and PARTIAL_FRAME_BYTES), ``sent_bytes`` how much of it ``partial`` sends."""
        if kind not in ATTACKS:
            raise ValueError(f"unknown attack {kind!r}; choose one of {ATTACKS}")
        self.kind, self.count, self.target = kind, count, target
        self.frame_bytes = frame_bytes or (PARTIAL_FRAME_BYTES if kind == "partial" else PREFIX_BYTES)
        self.sent_bytes = sent_bytes
        self.sockets: list[socket.socket] = []

    def __enter__(self) -> HostileConnections:
        try:
            for _ in range(self.count):
                self.sockets.append(self._open())
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        for sock in self.sockets:
            reset(sock)
        self.sockets.clear()

    def _open(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.settimeout(CONNECT_TIMEOUT_S)
            if self.kind == "unread":  # before connecting: the window the broker sees stays small
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UNREAD_RECEIVE_WINDOW)
            address = self.target.tls_address if self.kind == "tls-stall" else self.target.bootstrap
            sock.connect(_address(address))
            sock.sendall(self._payload())
        except BaseException:
            sock.close()
            raise
        return sock

    def _payload(self) -> bytes:
        if self.kind == "prefix":
            return struct.pack(">i", self.frame_bytes)
        if self.kind == "partial":
            return struct.pack(">i", self.frame_bytes) + bytes(self.sent_bytes)
        if self.kind == "unread":
            body = fetch_body(self.target.data_topic, 0, 0, max_bytes=UNREAD_FETCH_BYTES)
            return b"".join(request_frame(ApiKey.FETCH, 4, body, index) for index in range(UNREAD_PIPELINED))
        return TLS_HELLO_START


OPERATIONS = ("api versions", "new client", "metadata", "produce", "fetch")
OPERATION_TIMEOUT_S = 60.0


@dataclass
class Latencies:
    """Seconds each operation of a healthy client took, per operation."""

    samples: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in OPERATIONS})

    def median(self, operation: str) -> float:
        return statistics.median(self.samples[operation])

    def worst(self, operation: str) -> float:
        return max(self.samples[operation])

    def p99(self, operation: str) -> float:
        ordered = sorted(self.samples[operation])
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _timed(samples: list[float], operation: Callable[[], object]) -> None:
    started = time.perf_counter()
    operation()
    samples.append(time.perf_counter() - started)


class HealthyClient:
    """A well-behaved client of ``topic`` (one partition): connected before an attack starts,
    as the issue's existing client was, and measuring five things per round: ApiVersions on a
    fresh socket (the issue's figure), a new librdkafka client's first metadata (its own
    ApiVersions and Metadata), and, through librdkafka clients made before the attack, a
    metadata request, an ``acks=all`` produce, and the fetch that brings that record back."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        common = {"bootstrap.servers": bootstrap, "socket.timeout.ms": int(OPERATION_TIMEOUT_S * 1000)}
        self.admin = AdminClient(common)
        self.producer = Producer({**common, "acks": "all", "linger.ms": 0})
        self.consumer = Consumer(
            {**common, "group.id": f"healthy-{topic}", "enable.auto.commit": False, "fetch.wait.max.ms": 100}
        )
        self.admin.list_topics(topic, timeout=OPERATION_TIMEOUT_S)
        end = self.consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=OPERATION_TIMEOUT_S)[1]
        self.consumer.assign([TopicPartition(topic, 0, end)])
        self.round = 0

    def close(self, flush_timeout_s: float = OPERATION_TIMEOUT_S) -> None:
        self.consumer.close()
        self.producer.flush(flush_timeout_s)

    def measure(self, rounds: int, latencies: Latencies | None = None) -> Latencies:
        """``rounds`` rounds, their samples added to ``latencies`` (a new one by default), so a
        caller that may see an operation fail keeps the rounds measured before it."""
        latencies = latencies if latencies is not None else Latencies()
        for _ in range(rounds):
            self.round += 1
            value = b"healthy-%d" % self.round
            _timed(latencies.samples["api versions"], self._api_versions)
            _timed(latencies.samples["new client"], self._new_client_metadata)
            _timed(
                latencies.samples["metadata"],
                lambda: self.admin.list_topics(self.topic, timeout=OPERATION_TIMEOUT_S),
            )
            _timed(latencies.samples["produce"], lambda value=value: self._produce(value))
            _timed(latencies.samples["fetch"], lambda value=value: self._fetch(value))
        return latencies

    def _api_versions(self) -> None:
        ask(self.bootstrap, ApiKey.API_VERSIONS, 0, {}, OPERATION_TIMEOUT_S)

    def _new_client_metadata(self) -> None:
        AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(
            self.topic, timeout=OPERATION_TIMEOUT_S
        )

    def _produce(self, value: bytes) -> None:
        failures: list[object] = []
        self.producer.produce(
            self.topic, value, partition=0, on_delivery=lambda error, _: failures.append(error)
        )
        if self.producer.flush(OPERATION_TIMEOUT_S) or failures != [None]:
            raise KafkaException(f"a healthy produce failed: {failures or 'not delivered in time'}")

    def _fetch(self, value: bytes) -> None:
        deadline = time.monotonic() + OPERATION_TIMEOUT_S
        while time.monotonic() < deadline:
            message = self.consumer.poll(1.0)
            if message is None:
                continue
            if message.error():
                raise KafkaException(message.error())
            if message.value() == value:
                return
        raise TimeoutError(f"the healthy consumer did not get {value!r} within {OPERATION_TIMEOUT_S} s")


NEVER_A_TIMEOUT_S = 5.0
"""No healthy operation may take this long: every stall the issue found lasted a timeout
(socket.request.read.timeout.ms, 30 s), and clients' own request timeouts are 30 s."""
SLOWDOWN_FACTOR = 5.0
SLOWDOWN_SLACK_S = 0.05
"""A healthy median may grow by this factor plus this slack under attack: loose enough for a
noisy 2-core machine running the attack's own sockets, far below any wait for a timeout."""


def harm(unloaded: Latencies, loaded: Latencies) -> list[str]:
    """The ways the attack harmed the healthy client (none if it was unharmed)."""
    found = []
    for operation in OPERATIONS:
        bound = SLOWDOWN_FACTOR * unloaded.median(operation) + SLOWDOWN_SLACK_S
        if loaded.median(operation) > bound:
            found.append(
                f"{operation}: median {loaded.median(operation) * 1000:.1f} ms > {bound * 1000:.1f} ms"
            )
        if loaded.worst(operation) >= NEVER_A_TIMEOUT_S:
            found.append(f"{operation}: one took {loaded.worst(operation):.1f} s")
    return found


def summary(label: str, latencies: Latencies) -> str:
    parts = (
        f"{operation} {latencies.median(operation) * 1000:.1f}/{latencies.worst(operation) * 1000:.1f}"
        for operation in OPERATIONS
    )
    return f"{label}: median/worst ms: " + ", ".join(parts)
