"""A partition log's producer state and transactions (Kafka's data plane of KIP-98).

A producer's transactional batches open a transaction at their first offset
(``log.producer_state``); the control batch a marker writes ends it.  The *last stable offset*
is the first offset of the earliest transaction not yet decided, at most the high watermark:
read_committed consumers read below it, and learn which producers' data there was aborted from
the aborted transaction index of each segment (``log.txn_index``; an entry goes into the index
of the segment the abort marker lands in).  Recovery (``log.loader``) rebuilds those entries
for the segments it re-validates while it replays producer state (``log.producer_snapshots``),
which alone knows the open transactions.

Kept beside ``ProducerStateManager`` rather than in it: the manager is what snapshots store and
what a truncation rebuilds from the log, whereas the transactions a marker ended but the high
watermark has not passed (Kafka's unreplicated transactions) belong to the live log only.
"""

from __future__ import annotations

from log.availability import Availability
from log.high_watermark import HighWatermark
from log.local_log import LocalLog
from log.producer_snapshots import aborted_entry, rebuild_producer_state, write_snapshot
from log.producer_state import CompletedTxn, ProducerEntry, ProducerStateManager
from log.segment import Segment


class TransactionState:
    """Producer state of one log and what its transactions leave undecided for consumers."""

    def __init__(self, local: LocalLog, high_watermark: HighWatermark, availability: Availability) -> None:
        self._local = local
        self._high_watermark = high_watermark
        self._availability = availability
        self.producers = ProducerStateManager()
        # Transactions a marker ended that the high watermark has not passed yet: still
        # undecided for consumers (Kafka's unreplicated transactions), see ``last_stable_offset``.
        self._undecided: list[CompletedTxn] = []

    def start_from(self, producers: ProducerStateManager) -> None:
        """Serve the producer state a load rebuilt; a load replays markers into it only."""
        self.producers = producers
        self._undecided = []

    @property
    def last_stable_offset(self) -> int:
        """What read_committed consumers may read up to (Kafka's LSO): the first offset of the
        earliest undecided transaction -- open, or ended by a marker the high watermark has not
        passed (a power cut could still lose the marker) -- never below the log start, and at
        most the high watermark."""
        high_watermark = self._high_watermark.offset
        first = self.producers.first_open_offset()
        if self._undecided:
            self._undecided = [txn for txn in self._undecided if txn.last_offset >= high_watermark]
            firsts = [txn.first_offset for txn in self._undecided] + ([first] if first >= 0 else [])
            first = min(firsts, default=-1)
        if first < 0:
            return high_watermark
        return min(high_watermark, max(first, self._local.log_start_offset))

    def record_completed(self, segment: Segment, completed: CompletedTxn | None) -> None:
        """A marker written to ``segment`` ended ``completed``: index it if it aborted, and keep
        it undecided for consumers until the high watermark passes it."""
        if completed is None:
            return
        if completed.aborted:
            try:
                segment.txn_index.append(aborted_entry(self.producers, completed))
            except OSError as exc:
                raise self._availability.went_offline(exc, segment.txn_index.path) from exc
        self._undecided.append(completed)

    def snapshot(self, *, durable: bool) -> None:
        """Snapshot producer state at the log end (at a roll, as Kafka does, and a clean close)."""
        write_snapshot(self._local.directory, self._local.log_end_offset, self.producers, durable=durable)

    def forget_from(self, end: int) -> None:
        """The log was cut at ``end``: markers from there on are gone."""
        self._undecided = [txn for txn in self._undecided if txn.last_offset < end]

    def rebuild(self) -> None:
        """Rebuild producer state from the newest snapshot at or below the log end plus replay,
        as recovery does (after a truncation)."""
        self.producers = rebuild_producer_state(self._local.directory, self._local.segments, None)

    # ----------------------------------------------------------------------------------------
    # Producers

    def in_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """Whether this producer instance has a transaction open here (Kafka's leader verifies
        a transactional write with the coordinator only when it has not)."""
        entry = self.producers.entries.get(producer_id)
        return entry is not None and entry.epoch == producer_epoch and entry.current_txn_first_offset >= 0

    def active_producers(self) -> list[ProducerEntry]:
        """The producers this partition remembers, with their open transaction's first offset
        (``current_txn_first_offset``, -1 if none) and coordinator epoch (DescribeProducers)."""
        return list(self.producers.entries.values())

    def last_offsets_of_producers(self) -> dict[int, int]:
        """Producer id -> last offset it wrote: batches the cleaner keeps (maybe empty) so that
        idempotent producer state can still be rebuilt from the log."""
        return {
            pid: entry.batches[-1].last_offset
            for pid, entry in self.producers.entries.items()
            if entry.batches
        }
