"""Bulk producers and consumers of every Python client behind one interface (:class:`BulkClient`).

The integration tests prove behaviour through kafka-python, confluent-kafka (librdkafka) and
aiokafka over real TCP with many records at once: bulk settings (large batches, a short linger)
make each call as fast as its client allows. Each client module of this package implements
``_produce`` and ``_fetch``; the signatures, defaults and the end-of-fetch check are here once.

Everything is synchronous: aiokafka calls run under their own ``asyncio.run`` (pytest-trio owns
``async def`` tests, and aiokafka needs asyncio). Every call is bounded by a deadline so a broker
that stops answering fails the test instead of hanging it. Failures raise
:class:`~compat_tests.kit.drivers.base.ClientError` whose ``error`` is Kafka's name for the error code.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from compat_tests.kit.drivers.records import Consumed, Delivered, Record


@dataclass(frozen=True, slots=True)
class Send:
    """One :meth:`BulkClient.produce` call, as the client-specific part receives it."""

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
class Fetch:
    """One :meth:`BulkClient.consume` call: what to fetch, what came so far, and how long to poll.

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


class BulkClient(ABC):
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
        The first failed delivery raises :class:`~compat_tests.kit.drivers.base.ClientError`.
        """
        return self._produce(Send(topic, records, codec, acks, partition, timeout_s))

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
        fetch = Fetch(topic, positions, until, timeout_s, reset, fetch_bytes)
        self._fetch(fetch)
        if until is not None and not fetch.complete():
            raise TimeoutError(f"{self.name}: not all records after {timeout_s}s: {fetch.progress()}")
        return fetch.received

    def read_partition(self, topic: str, partition: int, *, timeout_s: float = 60.0) -> list[Consumed]:
        """Every record of one partition, from its log start offset to its end offset (the high
        watermark) as ListOffsets answers them now: what the partition holds after the broker
        deleted, compacted or refused parts of it.

        The log start must not move while this reads (``reset`` is none: a record deleted under
        it raises); a partition whose last offsets hold no readable record (transaction markers)
        never reaches its end and raises TimeoutError.
        """
        (start,) = self.list_offsets(topic, [partition], "earliest").values()
        (end,) = self.list_offsets(topic, [partition], "latest").values()
        return self.consume(topic, {partition: start}, until={partition: end}, timeout_s=timeout_s)[partition]

    @abstractmethod
    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        """ListOffsets: ``spec`` is "earliest", "latest" or a timestamp (ms). No match is -1."""

    @abstractmethod
    def _produce(self, send: Send) -> list[Delivered]:
        """:meth:`produce` in this client's terms."""

    @abstractmethod
    def _fetch(self, fetch: Fetch) -> None:
        """Assign ``fetch.positions``, then poll once for each wait ``fetch.polls()`` yields,
        appending every record to ``fetch.received``."""
