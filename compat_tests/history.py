"""Checks a produce/consume history for lost, duplicated and reordered records.

The failover scenarios write records whose value names the producer, the partition and the
producer's sequence number for that partition (:func:`encode`). The checker compares what the
producers were told (acknowledged, with the offset the broker gave) with what a reader found
afterwards (every offset of every partition with its value), and reports:

- **lost**: an acknowledged record that is not at its acknowledged offset; acks=all promises it
  survives any single broker failure;
- **duplicated**: one value at two or more offsets, which an idempotent producer's retries must
  never cause. The broker deduplicates a retry by its producer id, epoch and sequence number
  only, so a client that takes a new epoch and sends the same records again with new sequence
  numbers writes them twice by design: librdkafka does that after an OUT_OF_ORDER_SEQUENCE_NUMBER
  answer, which Apache Kafka gives while leadership moves (librdkafka issue #4953). Such a
  producer's duplicates are reported apart (**resent**), not as the broker's failure;
- **reordered**: within a partition, a producer's records whose sequence numbers do not grow
  with the offset, which an idempotent producer (up to five requests in flight) must not cause.

Records that were written but never acknowledged (the producer gave up, or its answer was lost
with a broker) may or may not be present: Kafka promises nothing about them either way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

SEPARATOR = ":"
MAX_VALUE_BYTES = 256
"""Values longer than any :func:`encode` result are not the scenario's records."""


@dataclass(frozen=True, order=True)
class RecordId:
    """Which producer wrote a record, to which partition, as its how-manieth record there."""

    producer: str
    partition: int
    sequence: int


def encode(record: RecordId) -> bytes:
    """The value that identifies ``record`` (``producer:partition:sequence``)."""
    if SEPARATOR in record.producer:
        raise ValueError(f"producer name {record.producer!r} contains {SEPARATOR!r}")
    return f"{record.producer}{SEPARATOR}{record.partition}{SEPARATOR}{record.sequence}".encode()


def decode(value: bytes | None) -> RecordId | None:
    """The record a value identifies, or None for a value the scenario did not write."""
    if value is None or len(value) > MAX_VALUE_BYTES:
        return None
    parts = value.decode(errors="replace").split(SEPARATOR)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return RecordId(parts[0], int(parts[1]), int(parts[2]))


@dataclass(frozen=True)
class Acked:
    """A record a producer was told is written, at ``offset`` of its partition."""

    record: RecordId
    offset: int


@dataclass(frozen=True)
class Read:
    """What a reader found at one offset of a partition."""

    partition: int
    offset: int
    value: bytes | None


@dataclass
class Report:
    """Everything wrong with a history; empty lists mean it is linearizable as Kafka promises."""

    lost: list[Acked] = field(default_factory=list)
    """Acknowledged records missing from their offset: (record, acknowledged offset)."""
    found_instead: dict[Acked, bytes | None] = field(default_factory=dict)
    """For lost records whose offset holds something else, what it holds."""
    duplicated: dict[RecordId, list[tuple[int, int]]] = field(default_factory=dict)
    """Records found more than once: their (partition, offset) places."""
    resent: dict[RecordId, list[tuple[int, int]]] = field(default_factory=dict)
    """Records found more than once whose producer took a new epoch meanwhile."""
    reordered: list[tuple[int, RecordId, RecordId]] = field(default_factory=list)
    """(partition, earlier record, later record) where the later offset has a lower sequence."""
    acked: int = 0
    read: int = 0

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.reordered)

    def __str__(self) -> str:
        lines = [
            f"{self.acked} acknowledged, {self.read} read: {len(self.lost)} lost, "
            f"{len(self.duplicated)} duplicated, {len(self.reordered)} reordered, "
            f"{len(self.resent)} resent under a new producer epoch"
        ]
        lines += [f"lost {a.record} acked at offset {a.offset}" for a in self.lost[:10]]
        lines += [f"  offset {a.offset} holds {v!r}" for a, v in list(self.found_instead.items())[:10]]
        lines += [f"duplicated {r} at {places}" for r, places in list(self.duplicated.items())[:10]]
        lines += [f"resent {r} at {places}" for r, places in list(self.resent.items())[:10]]
        lines += [f"partition {p}: {a} before {b}" for p, a, b in self.reordered[:10]]
        return "\n".join(lines)


def check(acked: Iterable[Acked], read: Iterable[Read], new_epochs: Collection[str] = ()) -> Report:
    """Compare the acknowledged records with everything read back; see the module docstring.
    ``new_epochs`` names the producers that took a new producer epoch during the history."""
    report = Report()
    at: dict[tuple[int, int], bytes | None] = {}
    places: dict[RecordId, list[tuple[int, int]]] = defaultdict(list)
    by_partition: dict[int, list[tuple[int, RecordId]]] = defaultdict(list)
    for r in read:
        report.read += 1
        at[(r.partition, r.offset)] = r.value
        record = decode(r.value)
        if record is not None:
            places[record].append((r.partition, r.offset))
            by_partition[r.partition].append((r.offset, record))
    for a in acked:
        report.acked += 1
        place = (a.record.partition, a.offset)
        if place not in at or at[place] != encode(a.record):
            report.lost.append(a)
            if place in at:
                report.found_instead[a] = at[place]
    for record, found in places.items():
        if len(found) > 1:
            kind = report.resent if record.producer in new_epochs else report.duplicated
            kind[record] = sorted(found)
    for partition, records in sorted(by_partition.items()):
        last: dict[str, RecordId] = {}
        for offset, record in sorted(records):
            if record in report.resent and (partition, offset) != report.resent[record][0]:
                continue  # a resent copy: the order is the first copies'
            previous = last.get(record.producer)
            if previous is not None and previous.sequence > record.sequence:
                report.reordered.append((partition, previous, record))
            last[record.producer] = record
    return report
