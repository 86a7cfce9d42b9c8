"""Checks a produce/consume history for lost, duplicated and reordered records.

The failover scenarios write records whose value names the producer, the partition and the
producer's sequence number for that partition (:func:`encode`). The checker compares what the
producers were told (acknowledged, with the offset the broker gave) with what a reader found
afterwards (every offset of every partition with its value), and reports:

- **lost**: an acknowledged record that is not at its acknowledged offset; acks=all promises it
  survives any single broker failure;
- **duplicated**: one value at two or more offsets written under one producer id, epoch and
  sequence number, which the broker must deduplicate: an idempotent producer's retries must
  never cause it. The broker deduplicates by those three fields only, so a client that sends
  the same value again as a new record (a new epoch, or its sequence numbers started again)
  writes it twice by design: librdkafka does that after an OUT_OF_ORDER_SEQUENCE_NUMBER answer,
  which Apache Kafka gives while leadership moves (librdkafka issue #4953). Copies whose
  writers (:class:`Writer`, read from the batch headers) all differ are reported apart
  (**resent**), not as the broker's failure; copies with an unknown writer count as duplicated;
- **reordered**: within a partition, a producer's records whose sequence numbers do not grow
  with the offset, which an idempotent producer (up to five requests in flight) must not cause.

Records that were written but never acknowledged (the producer gave up, or its answer was lost
with a broker) may or may not be present: Kafka promises nothing about them either way.

Given the record batches each replica holds (:class:`Batch`, read by
:mod:`compat_tests.kit.replica_logs`), it also judges the leaders that wrote them. Every batch
carries the epoch of the leader that appended it, and a leader's epoch is unique to it, so:

- **epoch regressions**: along a replica's log the epochs never decrease (a batch of an older
  epoch after a newer one is a deposed leader's write that a replica kept), and every batch has
  an epoch;
- **diverged**: where two replicas both hold an offset, they hold the same batch (offsets,
  epoch and CRC, which covers the records). Two leaders that both accepted acks=all writes in
  one epoch would leave the replicas with different batches under one epoch, or the survivor's
  batches at offsets the other leader acknowledged (**lost**, found there instead).

And given what a consumer group was given (``consumed``), **unconsumed**: acknowledged records
the group never got, though it must converge to every one of them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

SEPARATOR = ":"
MAX_VALUE_BYTES = 256
"""Values longer than any :func:`encode` result are not the scenario's records."""


# The values below are NamedTuples: a long nemesis run checks hundreds of thousands of each
# after every round, and a frozen dataclass costs several times a tuple to build and to hash.


class RecordId(NamedTuple):
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


class Writer(NamedTuple):
    """What a broker deduplicates a record by: the producer id, epoch and sequence number of the
    batch it was written in (the sequence is the batch's base sequence plus the record's delta)."""

    producer_id: int
    epoch: int
    sequence: int


class Batch(NamedTuple):
    """One record batch as a replica holds it: its partition and offsets, the epoch of the leader
    that appended it, and its CRC (which covers everything from the attributes on, records
    included, but not the epoch)."""

    partition: int
    base_offset: int
    last_offset: int
    leader_epoch: int
    crc: int


class Acked(NamedTuple):
    """A record a producer was told is written, at ``offset`` of its partition."""

    record: RecordId
    offset: int


class Read(NamedTuple):
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
    """Records found more than once, each copy written as a new record (its own writer)."""
    writers: dict[tuple[int, int], Writer] = field(default_factory=dict)
    """The writers known for the places of records found more than once."""
    reordered: list[tuple[int, RecordId, RecordId]] = field(default_factory=list)
    """(partition, earlier record, later record) where the later offset has a lower sequence."""
    epoch_regressions: list[tuple[int, Batch | None, Batch]] = field(default_factory=list)
    """(replica, previous batch, batch) where the batch's epoch is below the previous one's, or
    (replica, None, batch) for a batch without an epoch."""
    diverged: list[tuple[int, int, Batch, Batch | None]] = field(default_factory=list)
    """(replica, other replica, batch of the first, what the other holds there (None: no batch
    starts at that offset)) where both hold the offset."""
    unconsumed: list[Acked] = field(default_factory=list)
    """Acknowledged records the consumer group was not given."""
    acked: int = 0
    read: int = 0
    batches: int = 0
    """Batches compared, over every replica."""

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.duplicated
            or self.reordered
            or self.epoch_regressions
            or self.diverged
            or self.unconsumed
        )

    def __str__(self) -> str:
        lines = [
            f"{self.acked} acknowledged, {self.read} read: {len(self.lost)} lost, "
            f"{len(self.duplicated)} duplicated, {len(self.reordered)} reordered, "
            f"{len(self.resent)} resent as new records; {self.batches} batches: "
            f"{len(self.epoch_regressions)} epoch regressions, {len(self.diverged)} diverged; "
            f"{len(self.unconsumed)} not consumed by the group"
        ]
        lines += [f"lost {a.record} acked at offset {a.offset}" for a in self.lost[:10]]
        lines += [f"  offset {a.offset} holds {v!r}" for a, v in list(self.found_instead.items())[:10]]
        lines += [
            f"duplicated {r} at {self._written(places)}" for r, places in list(self.duplicated.items())[:10]
        ]
        lines += [f"resent {r} at {self._written(places)}" for r, places in list(self.resent.items())[:10]]
        lines += [f"partition {p}: {a} before {b}" for p, a, b in self.reordered[:10]]
        lines += [f"replica {r}: {b} after {before}" for r, before, b in self.epoch_regressions[:10]]
        lines += [f"replica {r} holds {b}, replica {o} {theirs}" for r, o, b, theirs in self.diverged[:10]]
        lines += [f"not consumed: {a.record} at offset {a.offset}" for a in self.unconsumed[:10]]
        return "\n".join(lines)

    def _written(self, places: list[tuple[int, int]]) -> str:
        return ", ".join(f"{place} by {self.writers.get(place, 'an unknown writer')}" for place in places)


def places_of(read: Iterable[Read]) -> dict[RecordId, list[tuple[int, int]]]:
    """Where each of the scenario's records was found: its (partition, offset) places (for
    :func:`repeated_places` and :func:`check`, which a caller gives it once: decoding every
    value is most of a long history's check)."""
    places: dict[RecordId, list[tuple[int, int]]] = defaultdict(list)
    for r in read:
        record = decode(r.value)
        if record is not None:
            places[record].append((r.partition, r.offset))
    return places


def repeated_places(places: Mapping[RecordId, list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """The places of every record found more than once (``places`` from :func:`places_of`):
    those whose writers :func:`check` needs to tell a duplicate from a resent record."""
    return sorted(place for found in places.values() if len(found) > 1 for place in found)


def check(
    acked: Iterable[Acked],
    read: Iterable[Read],
    writers: Mapping[tuple[int, int], Writer] | None = None,
    *,
    replicas: Mapping[int, Iterable[Batch]] | None = None,
    consumed: Collection[tuple[int, int]] | None = None,
    places: Mapping[RecordId, list[tuple[int, int]]] | None = None,
) -> Report:
    """Compare the acknowledged records with everything read back; see the module docstring.
    ``writers`` gives the writer of (at least) each place :func:`repeated_places` names;
    ``replicas`` each replica's batches (by node id), ``consumed`` the (partition, offset)
    places a consumer group was given, ``places`` what :func:`places_of` found in ``read``
    (found again when not given)."""
    read = list(read)
    acked = list(acked)
    report = Report(writers=dict(writers or {}), read=len(read))
    if replicas is not None:
        _check_epochs(report, {node: sorted(batches) for node, batches in replicas.items()})
    if consumed is not None:
        report.unconsumed = [a for a in acked if (a.record.partition, a.offset) not in consumed]
    at = {(r.partition, r.offset): r.value for r in read}
    if places is None:
        places = places_of(read)
    by_partition: dict[int, list[tuple[int, RecordId]]] = defaultdict(list)
    for record, found in places.items():
        for partition, offset in found:
            by_partition[partition].append((offset, record))
    for a in acked:
        report.acked += 1
        place = (a.record.partition, a.offset)
        if place not in at or at[place] != encode(a.record):
            report.lost.append(a)
            if place in at:
                report.found_instead[a] = at[place]
    for record, found in places.items():
        if len(found) > 1:
            copies = [report.writers.get(place) for place in found]
            each_new = None not in copies and len(set(copies)) == len(copies)
            (report.resent if each_new else report.duplicated)[record] = sorted(found)
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


def _check_epochs(report: Report, replicas: Mapping[int, list[Batch]]) -> None:
    """Epochs never decrease along a replica's log; replicas agree where both hold an offset."""
    for node, batches in replicas.items():
        report.batches += len(batches)
        previous: dict[int, Batch] = {}
        for batch in batches:
            before = previous.get(batch.partition)
            if batch.leader_epoch < 0:
                report.epoch_regressions.append((node, None, batch))
            elif before is not None and batch.leader_epoch < before.leader_epoch:
                report.epoch_regressions.append((node, before, batch))
            previous[batch.partition] = batch
    ends = {
        (node, partition): max(b.last_offset for b in batches if b.partition == partition)
        for node, batches in replicas.items()
        for partition in {b.partition for b in batches}
    }
    starts = {node: {(b.partition, b.base_offset): b for b in batches} for node, batches in replicas.items()}
    for node, batches in replicas.items():
        for other in replicas:
            if other == node:
                continue
            for batch in batches:
                if batch.last_offset > ends.get((other, batch.partition), -1):
                    continue  # the other replica has not got this far (yet)
                theirs = starts[other].get((batch.partition, batch.base_offset))
                if theirs != batch:
                    report.diverged.append((node, other, batch, theirs))
