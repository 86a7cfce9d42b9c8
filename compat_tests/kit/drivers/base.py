"""The one interface every client driver implements, so each scenario is written once.

A scenario talks to a :class:`Driver` (produce, consume, list offsets, admin calls) with neutral
settings; each driver translates them to its client's configuration and translates the client's
exceptions back into an :class:`ErrorKind`, so assertions look the same for every client. What a
client cannot do at all (kcat has no admin API) ends the test as a skip that names the gap, which
the matrix reports as such instead of as a failure.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from types import TracebackType
from typing import ClassVar, NoReturn, Self

import pytest

from wire.error_codes import ErrorCode

TopicPartition = tuple[str, int]

OP_TIMEOUT_S = 30.0
"""Upper bound for one client call (metadata wait, delivery, admin request): a broker that never
answers makes the call fail in bounded time instead of hanging the suite."""

NO_OFFSET = -1
"""Offset a producer reports when the broker does not say (acks=0) or the tool cannot tell."""

GROUP_PROTOCOLS = ("classic", "consumer")
"""Kafka's ``group.protocol`` values. Group scenarios run with both, because a broker implements
them separately: classic is JoinGroup/SyncGroup/Heartbeat with the assignment computed by the group
leader (a client); consumer is KIP-848's ConsumerGroupHeartbeat with the assignment computed by
the broker."""


@dataclass(frozen=True)
class Message:
    """A record to produce; ``partition``/``timestamp_ms`` None let the client choose."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes], ...] = ()
    partition: int | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class Received:
    """A consumed record, normalised across clients."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int


@dataclass(frozen=True)
class ProducerSettings:
    """Neutral producer knobs; None means "the client's own default"."""

    compression: str = "none"
    acks: str = "all"
    idempotence: bool | None = None
    max_request_size: int | None = None
    retries: int | None = None
    timeout_s: float = OP_TIMEOUT_S
    """How long a send may wait for metadata and delivery before it fails."""


@dataclass(frozen=True)
class ConsumerSettings:
    """Neutral consumer knobs. ``reset`` is Kafka's auto.offset.reset: earliest, latest or none."""

    group: str | None = None
    reset: str = "earliest"
    group_protocol: str = "classic"
    """One of :data:`GROUP_PROTOCOLS`; it only matters for a consumer that joins a group."""
    isolation: str = "read_uncommitted"
    """Kafka's ``isolation.level``: read_uncommitted sees every record, also those of open and
    aborted transactions; read_committed stops before the first open transaction and skips
    aborted records. Drivers always set it, since client defaults differ (librdkafka reads
    committed, the Java and Python clients uncommitted); the default here is Kafka's."""
    client_id: str | None = None
    """Kafka's ``client.id``, which the broker reports for the group's members; None: the client's."""
    assignor: str | None = None
    """The classic protocol's partition assignor by Kafka's name (range, roundrobin, sticky,
    cooperative-sticky); None: the client's default."""
    auto_commit_ms: int | None = None
    """Commit the consumed positions every this many ms (``enable.auto.commit``); None commits
    only what the scenario commits explicitly."""
    session_timeout_ms: int | None = None
    """The classic protocol's ``session.timeout.ms``; None: the driver's choice (the Python
    drivers' is :data:`CLASSIC_SESSION_TIMEOUT_MS`). The consumer protocol's is the broker's."""


OPTIONAL_CONSUMER_SETTINGS = ("client_id", "assignor", "auto_commit_ms", "session_timeout_ms")
"""The :class:`ConsumerSettings` a driver honours only if it lists them in ``consumer_options``:
a client that would silently ignore one ends the scenario as a skip instead."""

CLASSIC_SESSION_TIMEOUT_MS = 10000
"""The Python drivers' classic session timeout where a scenario does not choose one: short, so
that a member that vanished is expelled within a test's patience."""


@dataclass(frozen=True)
class GroupDescription:
    """What describe-group reports: the state name in Kafka's spelling and each member's partitions.

    ``assignor`` (the classic protocol's chosen assignor, Kafka's ``protocol_data``) and
    ``clients`` (each member's client id and host, as the broker saw its connection) are filled by
    the admin clients of :mod:`compat_tests.kit.drivers.admin`; other drivers leave them empty.
    """

    state: str
    members: list[frozenset[TopicPartition]] = field(default_factory=list)
    assignor: str = ""
    clients: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class GroupListing:
    """One consumer group as ListGroups reports it.

    ``simple`` is a group without a member protocol (protocol type ""), which only ever had
    offsets committed; ``type`` is Kafka's group type: classic or consumer (KIP-848).
    """

    state: str
    simple: bool
    type: str


def kafka_state_name(name: str) -> str:
    """Kafka's spelling of a group state ("PreparingRebalance") from a client enum name."""
    if "_" in name or name.isupper():
        return "".join(part.capitalize() for part in name.split("_"))
    return name


class ErrorKind(StrEnum):
    """Client failures a scenario asserts on; anything else is OTHER (with the text kept)."""

    MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE"
    OFFSET_RESET_NONE = "OFFSET_RESET_NONE"
    """A position was needed (none committed, or out of range) and auto.offset.reset=none."""
    UNKNOWN_TOPIC = "UNKNOWN_TOPIC"
    GROUP_NOT_FOUND = "GROUP_NOT_FOUND"
    PRODUCER_FENCED = "PRODUCER_FENCED"
    """A newer producer with the same transactional.id took over (or the epoch is stale)."""
    TOPIC_AUTHORIZATION_FAILED = "TOPIC_AUTHORIZATION_FAILED"
    GROUP_AUTHORIZATION_FAILED = "GROUP_AUTHORIZATION_FAILED"
    CLUSTER_AUTHORIZATION_FAILED = "CLUSTER_AUTHORIZATION_FAILED"
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    TIMEOUT = "TIMEOUT"
    OTHER = "OTHER"


_PATTERNS: list[tuple[ErrorKind, re.Pattern[str]]] = [
    (ErrorKind.MESSAGE_TOO_LARGE, re.compile(r"too.?large|MSG_SIZE_TOO_LARGE", re.I)),
    (
        ErrorKind.OFFSET_RESET_NONE,
        re.compile(
            r"NoOffsetForPartition|offset.?out.?of.?range|AUTO_OFFSET_RESET|no previously committed offset",
            re.I,
        ),
    ),
    (
        ErrorKind.UNKNOWN_TOPIC,
        re.compile(r"UnknownTopicOrPartition|UNKNOWN_TOPIC|Unknown topic|not present in metadata", re.I),
    ),
    (ErrorKind.GROUP_NOT_FOUND, re.compile(r"GroupIdNotFound|GROUP_ID_NOT_FOUND", re.I)),
    (
        # Java's ProducerFencedException, librdkafka's _FENCED, kafka-python's ProducerFencedError,
        # aiokafka's ProducerFenced, and the stale-epoch error that some coordinators and
        # clients answer for the same situation.
        ErrorKind.PRODUCER_FENCED,
        re.compile(r"producer.?fenced|\b_FENCED\b|invalid.?producer.?epoch", re.I),
    ),
    # Java's TopicAuthorizationException, kafka-python's and aiokafka's
    # TopicAuthorizationFailedError, librdkafka's "Broker: Topic authorization failed".
    (ErrorKind.TOPIC_AUTHORIZATION_FAILED, re.compile(r"topic.?authorization", re.I)),
    (ErrorKind.GROUP_AUTHORIZATION_FAILED, re.compile(r"group.?authorization", re.I)),
    (ErrorKind.CLUSTER_AUTHORIZATION_FAILED, re.compile(r"cluster.?authorization", re.I)),
    (ErrorKind.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, re.compile(r"transactional.?id.?authorization", re.I)),
    (ErrorKind.TIMEOUT, re.compile(r"time.?out|timed.?out", re.I)),
]


def classify(text: str) -> ErrorKind:
    """Map a client's error text (exception class and message) to an :class:`ErrorKind`.

    All clients spell Kafka's error names recognisably (``RecordTooLargeException``,
    ``MSG_SIZE_TOO_LARGE``, ``MessageSizeTooLargeError``), so one table serves them all.
    """
    for kind, pattern in _PATTERNS:
        if pattern.search(text):
            return kind
    return ErrorKind.OTHER


class ClientError(Exception):
    """A client call failed.

    ``kind`` is the classified failure the compatibility scenarios assert on; ``error`` is
    Kafka's name for the error code wherever the client exposes the code (``MESSAGE_TOO_LARGE``,
    ``OFFSET_OUT_OF_RANGE``), else the client's own name for the failure (librdkafka's
    ``_MSG_TIMED_OUT``), which the integration tests assert on; ``client`` names the client.
    """

    def __init__(self, kind: ErrorKind, detail: str, *, client: str = "", error: str = "") -> None:
        self.kind = kind
        self.detail = detail
        self.client = client
        self.error = error or str(kind)
        super().__init__(f"{client}: {self.error}: {detail}" if client else f"{self.error}: {detail}")


def client_failure(client: str, error: str, detail: str) -> ClientError:
    """A :class:`ClientError` for a failure the client named (``error``), classified from its text."""
    return ClientError(classify(f"{error}: {detail}"), detail, client=client, error=error)


def kafka_error_name(code: int) -> str:
    """Kafka's name for a protocol error code (``UNKNOWN_<n>`` for a code we do not know)."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN_{code}"


@contextmanager
def client_errors() -> Iterator[None]:
    """Turn any exception a client raises into a classified :class:`ClientError`."""
    try:
        yield
    except (ClientError, pytest.skip.Exception):
        raise
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        raise ClientError(classify(text), text) from exc


class Handle(ABC):
    """A client object a scenario holds across steps; ``with`` closes it whatever happened."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver

    @abstractmethod
    def close(self) -> None:
        """Release the client (leaving its group, if any)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Consumer(Handle):
    """A consumer handle; the scenario drives it step by step (assign, poll, commit, close)."""

    @abstractmethod
    def assign(self, positions: Mapping[TopicPartition, int | None]) -> None:
        """Manually assign partitions, each starting at an offset or (None) at the committed one."""

    def subscribe(self, topics: Sequence[str]) -> None:
        """Join the consumer group for ``topics``."""
        self.driver.unsupported("group subscription")

    @abstractmethod
    def poll(self, max_records: int, timeout_s: float) -> list[Received]:
        """Return up to ``max_records`` records, waiting at most ``timeout_s`` for the first."""

    def assignment(self) -> set[TopicPartition]:
        """Partitions currently assigned to this consumer."""
        self.driver.unsupported("reading the assignment")

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Synchronously commit explicit offsets (the next offset to read) for the group."""
        self.driver.unsupported("explicit offset commit")


class Producer(Handle):
    """A producer kept open across sends: one client, with its connections and producer id."""

    @abstractmethod
    def deliver(self, topic: str, messages: Sequence[Message]) -> list[int | ClientError]:
        """Send ``messages`` in order, flush, and return each one's outcome: its offset
        (:data:`NO_OFFSET` where the client cannot know it), or the error that failed it.

        A failed delivery does not hide the others' acknowledgements, which is what a test that
        kills the broker under a load must know. A failure before anything was sent raises.
        """

    def send(self, topic: str, messages: Sequence[Message]) -> list[int]:
        """Send ``messages`` in order, flush, and return their offsets; the first failed delivery
        raises :class:`ClientError`.

        Each call flushes, so sending one message per call makes every record a batch of its own.
        """
        offsets: list[int] = []
        for outcome in self.deliver(topic, messages):
            if isinstance(outcome, ClientError):
                raise outcome
            offsets.append(outcome)
        return offsets


class TransactionalProducer(Handle):
    """A producer with a ``transactional.id`` (KIP-98), already past ``init_transactions``.

    Opening one fences every older producer with the same id and aborts its open transaction,
    which is exactly what the zombie-fencing scenario needs to happen before the next step.
    """

    @abstractmethod
    def begin(self) -> None:
        """Start a transaction (client-side only: the coordinator hears of it with the first send)."""

    @abstractmethod
    def send(self, topic: str, messages: Sequence[Message]) -> list[int]:
        """Send ``messages`` in order inside the transaction, flush, and return their offsets.

        Flushing makes the records part of the log before the call returns, so a scenario can
        observe an open transaction's records (read_uncommitted sees them, read_committed not).
        """

    @abstractmethod
    def send_offsets(self, offsets: Mapping[TopicPartition, int], group: str) -> None:
        """Commit ``offsets`` (the next offset to read) for consumer group ``group`` within the
        transaction: they take effect only if it commits (consume-transform-produce)."""

    @abstractmethod
    def commit(self) -> None:
        """Commit the transaction and wait for the coordinator's answer."""

    @abstractmethod
    def abort(self) -> None:
        """Abort the transaction and wait for the coordinator's answer."""


class Driver(ABC):
    """One client library or tool, bound to one broker's bootstrap address."""

    name: str
    sets_timestamps = True
    """Whether the client can give a record its own CreateTime (kcat cannot)."""
    group_protocols: frozenset[str] = frozenset({"classic"})
    """The ``group.protocol`` values the client implements; KIP-848's "consumer" is recent."""
    group_protocol_gap = "its consumer only implements the classic group protocol, not KIP-848's"
    """Why the client lacks the protocols it lacks: the skip reason names it."""
    consumer_class: ClassVar[type[Consumer]]
    """The client's consumer, made as ``consumer_class(driver, settings)`` by :meth:`consumer`."""
    consumer_options: ClassVar[frozenset[str]] = frozenset()
    """Which of :data:`OPTIONAL_CONSUMER_SETTINGS` the client's consumer honours."""
    producer_class: ClassVar[type[Producer] | None] = None
    """The client's producer, made as ``producer_class(driver, settings)`` by :meth:`producer`;
    None where the driver only produces in one call (:meth:`produce`)."""
    transactional_producer_class: ClassVar[type[TransactionalProducer] | None] = None
    """The client's transactional producer, made as ``(driver, transactional_id, timeout_ms)``;
    None where the client has no transactions."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def unsupported(self, what: str) -> NoReturn:
        """End the scenario as skipped: the client has no way to do ``what``."""
        pytest.skip(f"{self.name} cannot do {what}")

    def produce(self, topic: str, messages: Sequence[Message], settings: ProducerSettings) -> list[int]:
        """Send ``messages`` in order, wait for every delivery, return their offsets.

        The offset is :data:`NO_OFFSET` where the client cannot know it (acks=0). The first
        failed delivery raises :class:`ClientError`. A producer is opened for this call only.
        """
        with self.producer(settings) as producer:
            return producer.send(topic, messages)

    def producer(self, settings: ProducerSettings) -> Producer:
        """Open a producer that stays open across sends (until closed)."""
        if self.producer_class is None:
            self.unsupported("keeping a producer open across sends")
        return self.producer_class(self, settings)

    def consumer(self, settings: ConsumerSettings) -> Consumer:
        """Create a consumer handle (not yet assigned or subscribed).

        A group protocol the client does not implement, or an optional setting it does not
        honour, ends the scenario as a skip here, once for every driver, before the client would
        fail on (or silently ignore) the setting.
        """
        if settings.group_protocol not in self.group_protocols:
            self.unsupported(f"group.protocol={settings.group_protocol}: {self.group_protocol_gap}")
        for option in OPTIONAL_CONSUMER_SETTINGS:
            if getattr(settings, option) is not None and option not in self.consumer_options:
                self.unsupported(f"the consumer setting {option}")
        return self.consumer_class(self, settings)

    def transactional_producer(self, transactional_id: str, timeout_ms: int = 60000) -> TransactionalProducer:
        """Open a transactional producer: ``transactional.id`` is ``transactional_id``,
        ``transaction.timeout.ms`` is ``timeout_ms``; init_transactions has returned when this does."""
        if self.transactional_producer_class is None:
            self.unsupported("transactions")
        return self.transactional_producer_class(self, transactional_id, timeout_ms)

    @abstractmethod
    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        """Offsets by ListOffsets: ``spec`` is "earliest", "latest" or a timestamp in ms.

        A timestamp later than every record maps to -1, as Kafka answers it.
        """

    def list_topics(self) -> set[str]:
        """Names of all topics the broker reports."""
        self.unsupported("listing topics")

    def partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has; an unknown topic raises UNKNOWN_TOPIC."""
        self.unsupported("describing topics")

    def create_topic(self, topic: str, partitions: int, configs: Mapping[str, str] | None = None) -> None:
        """Create a topic (replication factor 1) and wait until the broker confirms it."""
        self.unsupported("creating topics")

    def delete_topic(self, topic: str) -> None:
        """Delete a topic and wait until the broker confirms it."""
        self.unsupported("deleting topics")

    def create_partitions(self, topic: str, total: int) -> None:
        """Grow ``topic`` to ``total`` partitions."""
        self.unsupported("creating partitions")

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        """Delete the records of one partition below ``before_offset`` (DeleteRecords)."""
        self.unsupported("deleting records")

    def describe_configs(self, topic: str) -> dict[str, str]:
        """The topic's effective configuration (all keys, defaults included)."""
        self.unsupported("describing configs")

    def alter_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        """Set topic configs, leaving all other keys as they are."""
        self.unsupported("altering configs")

    def describe_group(self, group: str) -> GroupDescription:
        """State and member assignments of a consumer group."""
        self.unsupported("describing groups")

    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        """Committed offsets of a consumer group."""
        self.unsupported("listing group offsets")

    def close(self) -> None:  # noqa: B027 - most drivers keep nothing, so no-op is the right default
        """Release whatever the driver keeps between calls (admin clients, processes)."""
