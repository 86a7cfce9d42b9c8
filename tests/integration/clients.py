"""The three stock clients behind one small interface, so each integration test is written once.

The integration tests prove behaviour through kafka-python, confluent-kafka (librdkafka) and
aiokafka over real TCP. Each client spells configuration, results and errors differently; this
module hides exactly that and nothing more, so a test parametrized over :data:`CLIENTS` (or
:data:`ADMINS`) states the Kafka behaviour once and every client must show it.

Everything is synchronous: aiokafka calls run under their own ``asyncio.run`` (pytest-trio owns
``async def`` tests, and aiokafka needs asyncio). Every call is bounded by a deadline so a broker
that stops answering fails the test instead of hanging it.

Errors come back as :class:`ClientFailure` carrying Kafka's name for the error code
(``MESSAGE_TOO_LARGE``, ``OFFSET_OUT_OF_RANGE`` ...) whenever the client exposes the code, so
assertions compare protocol names rather than client exception classes.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import random
import re
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import aiokafka
import aiokafka.codec
import aiokafka.errors
import aiokafka.partitioner
import confluent_kafka
import confluent_kafka.admin
import kafka
import kafka.admin
import kafka.codec
import kafka.errors
from kafka.net.compat import KafkaNetClient
from kafka.protocol.admin import DescribeConfigsRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from compat_tests.drivers.kafka_python_api import assign
from wire.error_codes import ErrorCode

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
"""Kafka's compression codecs, spelled as every client's ``compression.type`` spells them."""

CALL_TIMEOUT_S = 30.0
"""Upper bound for one admin or metadata call."""

CALL_TIMEOUT_MS = int(CALL_TIMEOUT_S * 1000)


# --------------------------------------------------------------------------------------------
# Records and results


@dataclass(frozen=True, slots=True)
class Record:
    """What a producer sends and a consumer must get back, byte for byte."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class Delivered:
    """Where the broker put a produced record (offset -1 when acks=0 gives no answer)."""

    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Consumed:
    """A consumed record with its position."""

    partition: int
    offset: int
    record: Record


class ClientFailure(Exception):
    """A client reported an error; ``error`` is Kafka's name for it when the client gives a code.

    ``error`` falls back to the client's own name (librdkafka's ``_MSG_TIMED_OUT``, kafka-python's
    ``KafkaTimeoutError``) for failures that are not broker error codes.
    """

    def __init__(self, client: str, error: str, detail: str) -> None:
        super().__init__(f"{client}: {error}: {detail}")
        self.client = client
        self.error = error
        self.detail = detail


def kafka_error_name(code: int) -> str:
    """Kafka's name for a protocol error code (``UNKNOWN_<n>`` for a code we do not know)."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN_{code}"


def make_records(count: int, *, seed: int = 0, base_ts: int | None = None) -> list[Record]:
    """Deterministic, varied records: every one keyed, some edge cases on purpose.

    Values vary in length (empty included) and mix compressible text with random bytes so
    codecs do real work; every 1000th value is null (a tombstone) and another one in 1000
    is empty (not null). Headers vary from none to
    three, with a repeated key and an empty value. Timestamps are explicit and deliberately not
    monotonic (negative deltas inside a batch), all within the last day so no broker timestamp
    bound rejects them.
    """
    rng = random.Random(seed)
    pool = [(b"lorem ipsum dolor sit amet %d " % n) * 4 + rng.randbytes(64) + b"tail" * 20 for n in range(64)]
    base = base_ts if base_ts is not None else int(time.time() * 1000) - 3_600_000
    records: list[Record] = []
    append = records.append
    for i in range(count):
        if i % 1000 == 999:
            value: bytes | None = None
        elif i % 1000 == 499:
            value = b""
        else:
            value = b"%08d|" % i + pool[i % 64][: (i * 7919) % 260]
        shape = i % 4
        if shape == 0:
            headers: tuple[tuple[str, bytes | None], ...] = ()
        elif shape == 1:
            headers = (("seq", b"%d" % i),)
        elif shape == 2:
            headers = (("seq", b"%d" % i), ("trace", pool[i % 64][64:80]), ("seq", b""))
        else:
            headers = (("h\u00e9", b"\x00\xff" * (i % 5)),)
        append(Record(b"key-%d" % (i % 1009), value, headers, base + (i * 37) % 100_000))
    return records


def by_partition(records: Sequence[Record], delivered: Sequence[Delivered]) -> dict[int, list[Record]]:
    """Group produced records by the partition the broker reported, in produce order."""
    grouped: dict[int, list[Record]] = {}
    for record, where in zip(records, delivered, strict=True):
        grouped.setdefault(where.partition, []).append(record)
    return grouped


def first_difference(expected: Sequence[Record], actual: Sequence[Record]) -> str | None:
    """Describe the first place two long record sequences differ (None if equal).

    Comparing 25,000-element lists with a bare ``assert ==`` makes pytest render both lists; this
    names the first differing index and both records instead.
    """
    if list(expected) == list(actual):
        return None
    for index, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if want != got:
            return f"index {index}: expected {want!r}, got {got!r}"
    return f"lengths differ: expected {len(expected)}, got {len(actual)}"


def _uuid_text(raw: bytes) -> str:
    """Kafka's printed form of a topic id (URL-safe base64 without padding), as librdkafka shows it."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


# --------------------------------------------------------------------------------------------
# Producers and consumers


@dataclass(frozen=True, slots=True)
class _Send:
    """One :meth:`Client.produce` call, as the client-specific part receives it."""

    topic: str
    records: Sequence[Record]
    codec: str
    acks: str
    partition: int | None
    timeout_s: float

    @property
    def idempotent(self) -> bool:
        """Idempotence needs acks=all, and every client turns it on whenever the acks allow."""
        return self.acks == "all"


@dataclass(slots=True)
class _Fetch:
    """One :meth:`Client.consume` call: what to fetch, what came so far, and how long to poll.

    The deadline starts when the call starts, so connecting counts against ``timeout_s``.
    """

    topic: str
    positions: Mapping[int, int]
    until: Mapping[int, int] | None
    timeout_s: float
    reset: str
    fetch_bytes: int | None
    received: dict[int, list[Consumed]] = field(init=False)
    deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.received = {p: [] for p in self.positions}
        self.deadline = time.monotonic() + self.timeout_s

    def complete(self) -> bool:
        """Whether there is an ``until`` and every partition's next offset reached its end offset:
        the offset after the last record received, or, before any record, the start position if it
        is exactly the end (a start beyond the end is out of range and must first be reset by the
        client)."""
        return self.until is not None and all(
            self.received[p][-1].offset + 1 >= end if self.received.get(p) else self.positions[p] == end
            for p, end in self.until.items()
        )

    def polls(self) -> Iterator[float]:
        """How long each poll may block, in seconds, until the fetch is complete or time is up.

        A poll blocks at most a second so that completion is noticed promptly.
        """
        while not self.complete():
            left = self.deadline - time.monotonic()
            if left <= 0:
                return
            yield min(left, 1.0)

    def progress(self) -> str:
        """Where each partition stopped, so a timeout shows which one stalled."""
        got = {p: (rs[-1].offset + 1 if rs else 0, len(rs)) for p, rs in self.received.items()}
        return f"(next offset, count) per partition {got}, wanted ends {dict(self.until or {})}"


class Client(ABC):
    """One client library's producer, consumer and offset lookups.

    The public methods hold the signatures, defaults and the end-of-fetch check once; each client
    implements ``_produce`` and ``_fetch`` for its own library.
    """

    name: ClassVar[str]

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def codec_unavailable(self, codec: str) -> str | None:
        """Why this client cannot use ``codec`` here (a missing optional library), or None."""
        return None

    def produce(
        self,
        topic: str,
        records: Sequence[Record],
        *,
        codec: str = "none",
        acks: str = "all",
        partition: int | None = None,
        timeout_s: float = 60.0,
    ) -> list[Delivered]:
        """Send ``records`` in order (to ``partition``, or where the client's partitioner puts
        them by key), wait for every delivery and return where each one went.

        Bulk settings (large batches, a short linger) make this as fast as the client allows.
        The first failed delivery raises :class:`ClientFailure`.
        """
        return self._produce(_Send(topic, records, codec, acks, partition, timeout_s))

    def consume(
        self,
        topic: str,
        positions: Mapping[int, int],
        *,
        until: Mapping[int, int] | None = None,
        timeout_s: float = 60.0,
        reset: str = "none",
        fetch_bytes: int | None = None,
    ) -> dict[int, list[Consumed]]:
        """Assign the partitions of ``positions`` starting at those offsets and fetch.

        With ``until`` (end offset per partition) it returns as soon as every partition reached
        its end and raises TimeoutError if that takes longer than ``timeout_s``; without it it
        polls for the whole ``timeout_s`` and returns whatever came. ``reset`` is Kafka's
        auto.offset.reset (none surfaces OFFSET_OUT_OF_RANGE as an error). ``fetch_bytes`` sets
        both the per-partition and the per-request fetch limits.
        """
        fetch = _Fetch(topic, positions, until, timeout_s, reset, fetch_bytes)
        self._fetch(fetch)
        if until is not None and not fetch.complete():
            raise TimeoutError(f"{self.name}: not all records after {timeout_s}s: {fetch.progress()}")
        return fetch.received

    @abstractmethod
    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        """ListOffsets: ``spec`` is "earliest", "latest" or a timestamp (ms). No match is -1."""

    @abstractmethod
    def _produce(self, send: _Send) -> list[Delivered]:
        """:meth:`produce` in this client's terms."""

    @abstractmethod
    def _fetch(self, fetch: _Fetch) -> None:
        """Assign ``fetch.positions``, then poll once for each wait ``fetch.polls()`` yields,
        appending every record to ``fetch.received``."""


# confluent-kafka -----------------------------------------------------------------------------


def _rd_failure(error: confluent_kafka.KafkaError) -> ClientFailure:
    code = error.code()
    name = kafka_error_name(code) if code >= 0 else error.name()
    return ClientFailure("confluent-kafka", name, error.str())


@contextmanager
def _rd_errors() -> Iterator[None]:
    try:
        yield
    except confluent_kafka.KafkaException as exc:
        error = exc.args[0] if exc.args else None
        if isinstance(error, confluent_kafka.KafkaError):
            raise _rd_failure(error) from exc
        raise ClientFailure("confluent-kafka", type(exc).__name__, str(exc)) from exc


def _rd_delivered(
    reports: list[Delivered | confluent_kafka.KafkaError | None],
    index: int,
    error: confluent_kafka.KafkaError | None,
    message: confluent_kafka.Message,
) -> None:
    reports[index] = error if error is not None else Delivered(message.partition(), message.offset())


def _rd_record(message: confluent_kafka.Message) -> Record:
    return Record(message.key(), message.value(), tuple(message.headers() or ()), message.timestamp()[1])


class ConfluentClient(Client):
    """librdkafka through confluent-kafka: the most widely deployed non-Java client."""

    name = "confluent-kafka"

    def _produce(self, send: _Send) -> list[Delivered]:
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "acks": send.acks,
            "enable.idempotence": send.idempotent,
            "compression.type": send.codec,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "batch.num.messages": 100_000,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "message.timeout.ms": int(send.timeout_s * 1000),
            "topic.metadata.propagation.max.ms": 2000,
        }
        if send.codec == "gzip":
            config["compression.level"] = 1  # level 6 doubles the test's time for no extra coverage
        producer = confluent_kafka.Producer(config)
        reports: list[Delivered | confluent_kafka.KafkaError | None] = [None] * len(send.records)
        target = -1 if send.partition is None else send.partition
        with _rd_errors():
            for index, r in enumerate(send.records):
                producer.produce(
                    send.topic,
                    value=r.value,
                    key=r.key,
                    partition=target,
                    timestamp=r.timestamp_ms,
                    headers=list(r.headers) or None,
                    on_delivery=functools.partial(_rd_delivered, reports, index),
                )
                if index % 20_000 == 0:
                    producer.poll(0)
            left = producer.flush(send.timeout_s + 5)
        if left:
            raise ClientFailure(self.name, "TIMEOUT", f"{left} messages undelivered after {send.timeout_s}s")
        delivered: list[Delivered] = []
        for report in reports:
            if not isinstance(report, Delivered):
                assert report is not None, "flush returned but a delivery report is missing"
                raise _rd_failure(report)
            delivered.append(report)
        return delivered

    def _consumer(self, reset: str, fetch_bytes: int | None) -> confluent_kafka.Consumer:
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            # librdkafka insists on a group id even for assign(); nothing is committed to it.
            "group.id": f"it-assign-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": {"none": "error"}.get(reset, reset),
            "fetch.wait.max.ms": 100,
            "queued.max.messages.kbytes": 262_144,
            "socket.timeout.ms": 20_000,
        }
        if fetch_bytes is not None:
            config["max.partition.fetch.bytes"] = fetch_bytes
            config["fetch.max.bytes"] = fetch_bytes
            # librdkafka requires fetch.max.bytes >= message.max.bytes (whose minimum is 1000).
            config["message.max.bytes"] = max(1000, min(fetch_bytes, 1_000_000))
        else:
            config["max.partition.fetch.bytes"] = 16_777_216
        return confluent_kafka.Consumer(config)

    def _fetch(self, fetch: _Fetch) -> None:
        with _rd_errors(), closing(self._consumer(fetch.reset, fetch.fetch_bytes)) as consumer:
            consumer.assign(
                [confluent_kafka.TopicPartition(fetch.topic, p, o) for p, o in fetch.positions.items()]
            )
            for wait in fetch.polls():
                for message in consumer.consume(num_messages=50_000, timeout=wait):
                    error = message.error()
                    if error is not None:
                        raise _rd_failure(error)
                    fetch.received[message.partition()].append(
                        Consumed(message.partition(), message.offset(), _rd_record(message))
                    )

    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        """Earliest/latest by ``get_watermark_offsets`` (a ListOffsets each), timestamps by
        ``offsets_for_times``; librdkafka reports "no such offset" as -1 (OFFSET_END)."""
        with _rd_errors(), closing(self._consumer("earliest", None)) as consumer:
            if isinstance(spec, int):
                found = consumer.offsets_for_times(
                    [confluent_kafka.TopicPartition(topic, p, spec) for p in partitions],
                    timeout=CALL_TIMEOUT_S,
                )
                for tp in found:
                    if tp.error is not None:
                        raise _rd_failure(tp.error)
                return {tp.partition: tp.offset for tp in found}
            result: dict[int, int] = {}
            for p in partitions:
                low, high = consumer.get_watermark_offsets(
                    confluent_kafka.TopicPartition(topic, p), timeout=CALL_TIMEOUT_S, cached=False
                )
                result[p] = low if spec == "earliest" else high
            return result


# kafka-python and aiokafka -------------------------------------------------------------------
#
# aiokafka began as an asyncio port of kafka-python and kept its keyword arguments, its
# TopicPartition tuples, its assign/seek calls, its record shape and its exceptions' ``errno``.
# What the two clients share is written once here; the classes differ only in blocking or
# awaiting and in the few settings only one of them has.


def _kp_failure(exc: BaseException, client: str = "kafka-python") -> ClientFailure:
    errno = getattr(exc, "errno", None)
    name = kafka_error_name(errno) if isinstance(errno, int) and errno >= 0 else type(exc).__name__
    return ClientFailure(client, name, f"{type(exc).__name__}: {exc}")


@contextmanager
def _kp_errors(client: str = "kafka-python") -> Iterator[None]:
    try:
        yield
    except (kafka.errors.KafkaError, aiokafka.errors.KafkaError) as exc:
        raise _kp_failure(exc, client) from exc


def _py_producer_config(bootstrap: str, send: _Send) -> dict[str, Any]:
    """The producer keywords both clients spell alike (their batch size keywords differ)."""
    return {
        "bootstrap_servers": bootstrap,
        "acks": send.acks if send.acks == "all" else int(send.acks),
        "enable_idempotence": send.idempotent,
        "compression_type": None if send.codec == "none" else send.codec,
        "linger_ms": 20,
        "max_request_size": 16_777_216,
        "request_timeout_ms": int(min(send.timeout_s, 30) * 1000),
    }


def _py_consumer_config(bootstrap: str, reset: str, fetch_bytes: int | None) -> dict[str, Any]:
    """Consumer keywords for assign() without a group: nothing is ever committed."""
    return {
        "bootstrap_servers": bootstrap,
        "group_id": None,
        "enable_auto_commit": False,
        "auto_offset_reset": reset,
        "fetch_max_wait_ms": 100,
        "fetch_max_bytes": fetch_bytes or 52_428_800,
        "max_partition_fetch_bytes": fetch_bytes or 16_777_216,
        "request_timeout_ms": 30_000,
    }


def _py_assign(consumer: Any, partition: Callable[[str, int], Any], fetch: _Fetch) -> None:
    """Assign the fetch's partitions and seek each to its start (``partition`` builds the tuples)."""
    assign(consumer, partition, {(fetch.topic, p): offset for p, offset in fetch.positions.items()})


def _py_take(fetch: _Fetch, batches: Mapping[Any, Sequence[Any]]) -> None:
    """Append a ``poll``/``getmany`` result (records by TopicPartition) to ``fetch.received``.

    Both clients hand out header values as bytes already; only the container differs.
    """
    for tp, messages in batches.items():
        fetch.received[tp.partition].extend(
            Consumed(tp.partition, m.offset, Record(m.key, m.value, tuple(m.headers or ()), m.timestamp))
            for m in messages
        )


def _py_offset_query(
    consumer: Any,
    partition: Callable[[str, int], Any],
    topic: str,
    partitions: Sequence[int],
    spec: str | int,
) -> tuple[Callable[..., Any], Any]:
    """The consumer method that answers ``spec`` and its argument, for the caller to call (or await)."""
    tps = [partition(topic, p) for p in partitions]
    if spec == "earliest":
        return consumer.beginning_offsets, tps
    if spec == "latest":
        return consumer.end_offsets, tps
    return consumer.offsets_for_times, {tp: int(spec) for tp in tps}


def _py_offsets(found: Mapping[Any, Any]) -> dict[int, int]:
    """Offsets by partition number from what the query answered.

    beginning/end_offsets answer offsets; offsets_for_times answers an OffsetAndTimestamp, or None
    where no record is that recent, which becomes -1 as librdkafka reports it.
    """
    offsets: dict[int, int] = {}
    for tp, answer in found.items():
        if answer is None:
            offsets[tp.partition] = -1
        else:
            offsets[tp.partition] = answer if isinstance(answer, int) else answer.offset
    return offsets


_KP_CODEC_LIBRARY = {"snappy": "python-snappy", "lz4": "lz4", "zstd": "zstandard"}


class KafkaPythonClient(Client):
    """kafka-python 3.x: pure Python, infers the broker version from ApiVersions ranges."""

    name = "kafka-python"

    def codec_unavailable(self, codec: str) -> str | None:
        has = {"none": True, "gzip": True}.get(codec) or getattr(kafka.codec, f"has_{codec}")()
        if has:
            return None
        return f"kafka-python needs the optional '{_KP_CODEC_LIBRARY[codec]}' package for {codec}"

    def _produce(self, send: _Send) -> list[Delivered]:
        with _kp_errors():
            producer = kafka.KafkaProducer(
                **_py_producer_config(self.bootstrap, send),
                batch_size=1_000_000,
                max_block_ms=int(send.timeout_s * 1000),
                delivery_timeout_ms=int(send.timeout_s * 1000) + 1000,
            )
            try:
                futures = [
                    producer.send(
                        send.topic,
                        value=r.value,
                        key=r.key,
                        partition=send.partition,
                        timestamp_ms=r.timestamp_ms,
                        headers=list(r.headers),
                    )
                    for r in send.records
                ]
                producer.flush(timeout=send.timeout_s)
                failures = [f.exception for f in futures if f.failed()]
                if failures:
                    # A batch rejected for one record fails the other records with a generic
                    # KafkaError; report the error that carries the broker's code.
                    raise next(
                        (e for e in failures if isinstance(getattr(e, "errno", None), int)), failures[0]
                    )
                return [Delivered(m.partition, m.offset) for m in (f.get(timeout=0) for f in futures)]
            finally:
                producer.close(timeout=5)

    def _consumer(self, reset: str, fetch_bytes: int | None) -> kafka.KafkaConsumer:
        return kafka.KafkaConsumer(
            **_py_consumer_config(self.bootstrap, reset, fetch_bytes), max_poll_records=50_000
        )

    def _fetch(self, fetch: _Fetch) -> None:
        with _kp_errors(), closing(self._consumer(fetch.reset, fetch.fetch_bytes)) as consumer:
            _py_assign(consumer, kafka.TopicPartition, fetch)
            for wait in fetch.polls():
                _py_take(fetch, consumer.poll(timeout_ms=int(wait * 1000)))

    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        with _kp_errors(), closing(self._consumer("earliest", None)) as consumer:
            query, argument = _py_offset_query(consumer, kafka.TopicPartition, topic, partitions, spec)
            return _py_offsets(query(argument, timeout_ms=CALL_TIMEOUT_MS))


class AiokafkaClient(Client):
    """aiokafka: asyncio-native, shares kafka-python's heritage but not its code paths."""

    name = "aiokafka"

    def _run(self, coroutine_factory: Callable[[], Any], timeout_s: float) -> Any:
        """Run one coroutine in a fresh event loop under a deadline, translating client errors."""

        async def bounded() -> Any:
            return await asyncio.wait_for(coroutine_factory(), timeout_s)

        with _kp_errors(self.name):
            try:
                return asyncio.run(bounded())
            except TimeoutError as exc:
                raise ClientFailure(self.name, "TIMEOUT", f"no result after {timeout_s}s") from exc

    def codec_unavailable(self, codec: str) -> str | None:
        if codec == "none" or getattr(aiokafka.codec, f"has_{codec}")():
            return None
        return f"aiokafka lacks a library for {codec}"

    def _produce(self, send: _Send) -> list[Delivered]:
        async def produce() -> list[Delivered]:
            config = _py_producer_config(self.bootstrap, send)
            async with aiokafka.AIOKafkaProducer(**config, max_batch_size=1_000_000) as producer:
                return await self._send_batches(producer, send)

        result: list[Delivered] = self._run(produce, send.timeout_s + 10)
        return result

    @staticmethod
    async def _send_batches(producer: aiokafka.AIOKafkaProducer, send: _Send) -> list[Delivered]:
        """Fill aiokafka's own batch builders and submit them with ``send_batch``.

        This is aiokafka's documented high-throughput path: per-record ``send()`` costs a future
        and a task wake-up per record and made a 100,000-record case several times slower. The
        partition of each key comes from aiokafka's default (murmur2) partitioner, as ``send()``
        would choose it.
        """

        def append(builder: Any, r: Record) -> bool:
            """Whether ``r`` fit into the batch ``builder`` (a full batch answers None)."""
            metadata = builder.append(
                key=r.key, value=r.value, timestamp=r.timestamp_ms, headers=list(r.headers)
            )
            return metadata is not None

        partitioner = aiokafka.partitioner.DefaultPartitioner()
        all_partitions = sorted(await producer.partitions_for(send.topic))
        chosen: dict[bytes | None, int] = {}
        open_batches: dict[int, tuple[Any, list[int]]] = {}
        sent: list[tuple[asyncio.Future[Any], int, list[int]]] = []
        for index, r in enumerate(send.records):
            if send.partition is not None:
                p = send.partition
            elif (p := chosen.get(r.key, -1)) < 0:
                p = chosen[r.key] = partitioner(r.key, all_partitions, all_partitions)
            if p not in open_batches:
                open_batches[p] = (producer.create_batch(), [])
            builder, members = open_batches[p]
            if not append(builder, r):
                sent.append((await producer.send_batch(builder, send.topic, partition=p), p, members))
                builder, members = open_batches[p] = (producer.create_batch(), [])
                if not append(builder, r):
                    raise ClientFailure("aiokafka", "RECORD_TOO_LARGE_FOR_BATCH", f"record {index}")
            members.append(index)
        for p, (builder, members) in open_batches.items():
            sent.append((await producer.send_batch(builder, send.topic, partition=p), p, members))
        results = await asyncio.gather(*(future for future, _, _ in sent))
        delivered: list[Delivered | None] = [None] * len(send.records)
        for (_, p, members), metadata in zip(sent, results, strict=True):
            base = -1 if metadata is None else metadata.offset  # acks=0 resolves to None
            for position, index in enumerate(members):
                delivered[index] = Delivered(p, base + position if base >= 0 else -1)
        assert all(d is not None for d in delivered)
        return delivered  # type: ignore[return-value]

    def _consumer(self, reset: str, fetch_bytes: int | None) -> aiokafka.AIOKafkaConsumer:
        return aiokafka.AIOKafkaConsumer(**_py_consumer_config(self.bootstrap, reset, fetch_bytes))

    def _fetch(self, fetch: _Fetch) -> None:
        async def fetch_all() -> None:
            async with self._consumer(fetch.reset, fetch.fetch_bytes) as consumer:
                _py_assign(consumer, aiokafka.TopicPartition, fetch)
                for wait in fetch.polls():
                    _py_take(fetch, await consumer.getmany(timeout_ms=int(wait * 1000), max_records=50_000))

        self._run(fetch_all, fetch.timeout_s + 10)

    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        async def list_offsets() -> dict[int, int]:
            async with self._consumer("earliest", None) as consumer:
                query, argument = _py_offset_query(consumer, aiokafka.TopicPartition, topic, partitions, spec)
                return _py_offsets(await query(argument))

        result: dict[int, int] = self._run(list_offsets, CALL_TIMEOUT_S)
        return result


CLIENTS: dict[str, type[Client]] = {c.name: c for c in (KafkaPythonClient, ConfluentClient, AiokafkaClient)}
"""Every client, by name: parametrize tests over its keys."""


# --------------------------------------------------------------------------------------------
# Admin clients


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """One DescribeConfigs entry: its value and Kafka's name for its source."""

    value: str | None
    source: str


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """What Metadata/DescribeTopics says about a topic."""

    partitions: int
    topic_id: str


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """One broker as DescribeCluster lists it."""

    node_id: int
    host: str
    port: int


class Admin(ABC):
    """An admin client: topics, partitions, configs, records, cluster."""

    name: ClassVar[str]

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    @abstractmethod
    def create_topic(
        self,
        topic: str,
        partitions: int,
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> None:
        """CreateTopics for one topic; the broker's error raises :class:`ClientFailure`."""

    @abstractmethod
    def delete_topic(self, topic: str) -> None:
        """DeleteTopics for one topic."""

    @abstractmethod
    def create_partitions(self, topic: str, total: int) -> None:
        """CreatePartitions: grow ``topic`` to ``total`` partitions."""

    @abstractmethod
    def describe_topic(self, topic: str) -> TopicInfo:
        """Partition count and topic id; an unknown topic raises UNKNOWN_TOPIC_OR_PARTITION."""

    @abstractmethod
    def list_topics(self) -> set[str]:
        """Names of every topic in Metadata."""

    @abstractmethod
    def topic_configs(self, topic: str) -> dict[str, ConfigValue]:
        """DescribeConfigs for a topic: every key with its value and source."""

    @abstractmethod
    def broker_configs(self, node_id: int) -> dict[str, ConfigValue]:
        """DescribeConfigs for a broker: every key with its value and source."""

    @abstractmethod
    def alter_topic_configs(
        self, topic: str, configs: Mapping[str, str | None], *, incremental: bool
    ) -> None:
        """IncrementalAlterConfigs (SET each key, DELETE where the value is None) or the legacy
        whole-set AlterConfigs."""

    @abstractmethod
    def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        """DeleteRecords: drop records below the given offsets; returns the new low watermarks."""

    @abstractmethod
    def brokers(self) -> list[BrokerInfo]:
        """DescribeCluster's broker list."""

    @abstractmethod
    def list_offsets(
        self, topic: str, partitions: Sequence[int], spec: str | int
    ) -> dict[int, tuple[int, int]]:
        """AdminClient ListOffsets: ``spec`` is "earliest", "latest", "max_timestamp" or a
        timestamp; returns (offset, timestamp) per partition, (-1, -1) where there is none."""

    @abstractmethod
    def metadata_allowing_creation(self, topic: str) -> TopicInfo:
        """Metadata for ``topic`` with allow_auto_topic_creation=true (what producers send)."""

    @abstractmethod
    def close(self) -> None:
        """Release the client."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ConfluentAdmin(Admin):
    """confluent-kafka's AdminClient (librdkafka)."""

    name = "confluent-kafka"

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self.admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": bootstrap})

    @staticmethod
    def _wait(futures: Mapping[Any, Any]) -> list[Any]:
        with _rd_errors():
            return [f.result(timeout=CALL_TIMEOUT_S) for f in futures.values()]

    def create_topic(
        self,
        topic: str,
        partitions: int,
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> None:
        new = confluent_kafka.admin.NewTopic(
            topic, partitions, replication_factor, config=dict(configs or {})
        )
        self._wait(
            self.admin.create_topics([new], operation_timeout=CALL_TIMEOUT_S, validate_only=validate_only)
        )

    def delete_topic(self, topic: str) -> None:
        self._wait(self.admin.delete_topics([topic], operation_timeout=CALL_TIMEOUT_S))

    def create_partitions(self, topic: str, total: int) -> None:
        self._wait(
            self.admin.create_partitions(
                [confluent_kafka.admin.NewPartitions(topic, total)], operation_timeout=CALL_TIMEOUT_S
            )
        )

    def describe_topic(self, topic: str) -> TopicInfo:
        with _rd_errors():
            (description,) = self.admin.describe_topics(confluent_kafka.TopicCollection([topic])).values()
            result = description.result(timeout=CALL_TIMEOUT_S)
        return TopicInfo(len(result.partitions), str(result.topic_id))

    def list_topics(self) -> set[str]:
        with _rd_errors():
            return set(self.admin.list_topics(timeout=CALL_TIMEOUT_S).topics)

    def _configs(self, kind: confluent_kafka.admin.ResourceType, name: str) -> dict[str, ConfigValue]:
        resource = confluent_kafka.admin.ConfigResource(kind, name)
        (entries,) = self._wait(self.admin.describe_configs([resource]))
        return {
            key: ConfigValue(entry.value, confluent_kafka.admin.ConfigSource(entry.source).name)
            for key, entry in entries.items()
        }

    def topic_configs(self, topic: str) -> dict[str, ConfigValue]:
        return self._configs(confluent_kafka.admin.ResourceType.TOPIC, topic)

    def broker_configs(self, node_id: int) -> dict[str, ConfigValue]:
        return self._configs(confluent_kafka.admin.ResourceType.BROKER, str(node_id))

    def alter_topic_configs(
        self, topic: str, configs: Mapping[str, str | None], *, incremental: bool
    ) -> None:
        kind = confluent_kafka.admin.ResourceType.TOPIC
        op = confluent_kafka.admin.AlterConfigOpType
        if incremental:
            entries = [
                confluent_kafka.admin.ConfigEntry(
                    k, v, incremental_operation=op.SET if v is not None else op.DELETE
                )
                for k, v in configs.items()
            ]
            resource = confluent_kafka.admin.ConfigResource(kind, topic, incremental_configs=entries)
            self._wait(self.admin.incremental_alter_configs([resource]))
        else:
            resource = confluent_kafka.admin.ConfigResource(kind, topic, set_config=dict(configs))
            self._wait(self.admin.alter_configs([resource]))

    def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        tps = [confluent_kafka.TopicPartition(topic, p, o) for p, o in before.items()]
        futures = self.admin.delete_records(tps, operation_timeout=CALL_TIMEOUT_S)
        results = self._wait(futures)
        return {tp.partition: r.low_watermark for tp, r in zip(futures, results, strict=True)}

    def brokers(self) -> list[BrokerInfo]:
        with _rd_errors():
            result = self.admin.describe_cluster(request_timeout=CALL_TIMEOUT_S).result(
                timeout=CALL_TIMEOUT_S
            )
        return [BrokerInfo(n.id, n.host, n.port) for n in result.nodes]

    def list_offsets(
        self, topic: str, partitions: Sequence[int], spec: str | int
    ) -> dict[int, tuple[int, int]]:
        offset_spec = confluent_kafka.admin.OffsetSpec
        wire = (
            offset_spec.for_timestamp(spec)
            if isinstance(spec, int)
            else {
                "earliest": offset_spec.earliest(),
                "latest": offset_spec.latest(),
                "max_timestamp": offset_spec.max_timestamp(),
            }[spec]
        )
        futures = self.admin.list_offsets(
            {confluent_kafka.TopicPartition(topic, p): wire for p in partitions},
            request_timeout=CALL_TIMEOUT_S,
        )
        results = self._wait(futures)
        return {tp.partition: (r.offset, r.timestamp) for tp, r in zip(futures, results, strict=True)}

    def close(self) -> None:
        """librdkafka's AdminClient has no close: its handle goes with the last reference."""

    def metadata_allowing_creation(self, topic: str) -> TopicInfo:
        """librdkafka producers request Metadata with allow_auto_topic_creation=true."""
        producer = confluent_kafka.Producer({"bootstrap.servers": self.bootstrap})
        with _rd_errors():
            metadata = producer.list_topics(topic, timeout=CALL_TIMEOUT_S).topics[topic]
        if metadata.error is not None:
            raise _rd_failure(metadata.error)
        return TopicInfo(len(metadata.partitions), "")


def _kp_raise_for(code: int, what: str) -> None:
    if code:
        raise ClientFailure("kafka-python", kafka_error_name(code), what)


def _kp_net(bootstrap: str) -> KafkaNetClient:
    """kafka-python's bare network client, for requests its admin and producer never send as needed."""
    return KafkaNetClient(bootstrap_servers=bootstrap, request_timeout_ms=CALL_TIMEOUT_MS)


def _kp_request(client: KafkaNetClient, request: Any) -> dict[str, Any]:
    """Send one request built from kafka-python's protocol classes to any broker; the answer as a dict."""
    with _kp_errors():
        client.check_version(timeout_ms=CALL_TIMEOUT_MS)
        node = client.least_loaded_node(bootstrap_fallback=True)
        response = client.send_and_receive(node, request, timeout_ms=CALL_TIMEOUT_MS)
    result: dict[str, Any] = response.to_dict()
    return result


class KafkaPythonAdmin(Admin):
    """kafka-python's KafkaAdminClient."""

    name = "kafka-python"

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        with _kp_errors():
            self.admin = kafka.admin.KafkaAdminClient(
                bootstrap_servers=bootstrap, request_timeout_ms=CALL_TIMEOUT_MS
            )
        self._net: KafkaNetClient | None = None

    def create_topic(
        self,
        topic: str,
        partitions: int,
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> None:
        spec = {
            "num_partitions": partitions,
            "replication_factor": replication_factor,
            "configs": dict(configs or {}),
        }
        with _kp_errors():
            self.admin.create_topics({topic: spec}, validate_only=validate_only)

    def delete_topic(self, topic: str) -> None:
        with _kp_errors():
            self.admin.delete_topics([topic])

    def create_partitions(self, topic: str, total: int) -> None:
        with _kp_errors():
            self.admin.create_partitions({topic: total})

    def describe_topic(self, topic: str) -> TopicInfo:
        with _kp_errors():
            (description,) = self.admin.describe_topics([topic])
        _kp_raise_for(description["error_code"], f"describe_topics {topic}")
        topic_id = description["topic_id"]
        raw = topic_id.bytes if isinstance(topic_id, uuid.UUID) else uuid.UUID(str(topic_id)).bytes
        return TopicInfo(len(description["partitions"]), _uuid_text(raw))

    def list_topics(self) -> set[str]:
        with _kp_errors():
            return set(self.admin.list_topics())

    def _configs(self, kind: kafka.admin.ConfigResourceType, name: str) -> dict[str, ConfigValue]:
        with _kp_errors():
            result = self.admin.describe_configs(
                [kafka.admin.ConfigResource(kind, name)], config_filter="all"
            )
        (entries,) = result[kind.name.lower()].values()
        if not entries:
            # KafkaAdminClient drops a resource's error code and returns no entries; every real
            # resource has entries, so ask again raw to report the broker's error.
            resource = DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=int(kind), resource_name=name, configuration_keys=None
            )
            (raw,) = self._send(DescribeConfigsRequest(resources=[resource]))["results"]
            _kp_raise_for(raw["error_code"], f"describe_configs {name}")
        return {key: ConfigValue(entry["value"], entry["config_source"]) for key, entry in entries.items()}

    def topic_configs(self, topic: str) -> dict[str, ConfigValue]:
        return self._configs(kafka.admin.ConfigResourceType.TOPIC, topic)

    def broker_configs(self, node_id: int) -> dict[str, ConfigValue]:
        return self._configs(kafka.admin.ConfigResourceType.BROKER, str(node_id))

    def alter_topic_configs(
        self, topic: str, configs: Mapping[str, str | None], *, incremental: bool
    ) -> None:
        ops = {
            k: v if v is not None else (kafka.admin.AlterConfigOp.DELETE, None) for k, v in configs.items()
        }
        resource = kafka.admin.ConfigResource(kafka.admin.ConfigResourceType.TOPIC, topic, ops)
        with _kp_errors():
            result = self.admin.alter_configs([resource], incremental=incremental, raise_on_unknown=False)
        outcome = str(result["topic"][topic])
        if outcome != "OK":
            # kafka-python reports a failed resource as the text of its exception, "[Error 40] ...".
            code = re.search(r"\[Error (-?\d+)\]", outcome)
            raise ClientFailure(self.name, kafka_error_name(int(code.group(1))) if code else outcome, outcome)

    def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        with _kp_errors():
            result = self.admin.delete_records({kafka.TopicPartition(topic, p): o for p, o in before.items()})
        return {tp.partition: r["low_watermark"] for tp, r in result.items()}

    def brokers(self) -> list[BrokerInfo]:
        with _kp_errors():
            cluster = self.admin.describe_cluster()
        return [BrokerInfo(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]]

    def list_offsets(
        self, topic: str, partitions: Sequence[int], spec: str | int
    ) -> dict[int, tuple[int, int]]:
        wire = spec if isinstance(spec, int) else kafka.admin.OffsetSpec[spec.upper()]
        with _kp_errors():
            found = self.admin.list_partition_offsets(
                {kafka.TopicPartition(topic, p): wire for p in partitions}
            )
        return {tp.partition: (r.offset, r.timestamp) for tp, r in found.items()}

    def _send(self, request: Any) -> dict[str, Any]:
        """Send one request built from kafka-python's protocol classes through its network client.

        For the few answers whose error codes KafkaAdminClient drops or never sees.
        """
        if self._net is None:
            self._net = _kp_net(self.bootstrap)
        return _kp_request(self._net, request)

    def metadata_allowing_creation(self, topic: str) -> TopicInfo:
        """kafka-python's producer only times out on an unknown topic, so the Metadata request
        (allow_auto_topic_creation=true, as producers send it) goes out raw to see the error code."""
        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True
        )
        (found,) = (t for t in self._send(request)["topics"] if t["name"] == topic)
        _kp_raise_for(found["error_code"], f"metadata {topic}")
        return TopicInfo(len(found["partitions"]), "")

    def close(self) -> None:
        self.admin.close()
        if self._net is not None:
            self._net.close()


ADMINS: dict[str, type[Admin]] = {a.name: a for a in (ConfluentAdmin, KafkaPythonAdmin)}
"""Every admin client, by name: parametrize tests over its keys."""


def raw_produce(bootstrap: str, topic: str, partition: int) -> str:
    """Send one Produce request (acks=all, one record) without asking Metadata first, and return
    the partition's error name ("NONE" on success).

    Stock producers never send to a topic Metadata did not list, so this is the only way to see
    what the broker itself answers for an unknown topic or partition. The request and its record
    batch are built by kafka-python's protocol and record classes.
    """
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    builder.append(timestamp=int(time.time() * 1000), key=b"k", value=b"v", headers=[])
    builder.close()
    partition_data = ProduceRequest.TopicProduceData.PartitionProduceData(
        index=partition, records=builder.buffer()
    )
    request = ProduceRequest(
        max_version=12,  # v13 names topics by id; this checks what a name that was never created gets
        transactional_id=None,
        acks=-1,
        timeout_ms=CALL_TIMEOUT_MS,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[partition_data])],
    )
    with closing(_kp_net(bootstrap)) as client:
        response = _kp_request(client, request)
    codes = [p["error_code"] for t in response["responses"] for p in t["partition_responses"]]
    assert len(codes) == 1, response
    return kafka_error_name(codes[0])


def unique_topic(prefix: str) -> str:
    """A topic name no other test (or earlier run against the same broker) uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
