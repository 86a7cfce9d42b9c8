"""Records the integration tests send and check byte for byte, whichever client carries them.

:func:`make_records` makes many varied records deterministically; :class:`Delivered` and
:class:`Consumed` are where the broker put them and what came back, in one shape for every
client of :mod:`compat_tests.kit.drivers.bulk`.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
"""Kafka's compression codecs, spelled as every client's ``compression.type`` spells them."""


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


def unique_topic(prefix: str) -> str:
    """A topic name no other test (or earlier run against the same broker) uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
