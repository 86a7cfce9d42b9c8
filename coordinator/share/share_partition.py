"""The delivery state of one share-partition: Kafka's ``SharePartition``, without the I/O.

A share group (KIP-932) lets many members consume one partition together.  For each
(group, topic-partition) the partition leader keeps which records are in flight: from the
share-partition start offset (SPSO) up to the end offset (SPEO; exclusive here, the first
offset not in flight, where Kafka's field holds the last in-flight offset), every record is
AVAILABLE, ACQUIRED by one member under a time-limited lock, ACKNOWLEDGED or ARCHIVED, with a
count of how many times it was delivered.  Records below the SPSO are done; records from the SPEO on
were never fetched.

This class holds that state and enforces Kafka 4.2/4.3's rules on it; it does no I/O and
keeps no clock.  Whoever drives it (the ShareFetch/ShareAcknowledge handlers, a share session
closing, a timer) passes the time in, reads the log itself and persists what the operations
report:

* :meth:`acquire` hands fetched records to a member (see ``acquisition.py``), returning the
  ShareFetch ``AcquiredRecords``; nothing needs persisting.
* :meth:`acknowledge` applies a member's acknowledgements, all or none: ACCEPT makes records
  ACKNOWLEDGED, REJECT and GAP make them ARCHIVED, RELEASE makes them AVAILABLE again and
  RENEW (KIP-1222) restarts their lock; a record must be ACQUIRED by that member.
* :meth:`release_member` (a member left, or its share session closed) and
  :meth:`expire_locks` (a lock ran out) make ACQUIRED records AVAILABLE again.

Whenever a record would become AVAILABLE with its delivery count at the delivery limit it is
ARCHIVED instead, Kafka's ``InFlightState.tryUpdateState``: it will not be delivered again.
After every change the SPSO moves past the ACKNOWLEDGED/ARCHIVED prefix and those records are
forgotten.  The changing operations return the state batches that changed, which is what
Kafka sends in WriteShareGroupState; :meth:`state_batches` is the whole persisted state, and
:meth:`restore` rebuilds a share-partition from it (``persistence.py``).

Memory follows Kafka's bound: new records enter flight only while fewer than
``max_in_flight_records`` are in flight, and at most the rest of the log batch crossing that
limit more (Kafka's soft limit).  The state is held as ranges (``in_flight.py``), so neither a
client's acknowledgement nor a persisted range costs memory per offset.

Errors are Kafka's: a client's malformed acknowledgement is INVALID_REQUEST (Kafka's
``KafkaApis.validateAcknowledgementBatches`` and the "past acquired records" checks of
``SharePartition``), acknowledging a record the member does not hold is INVALID_RECORD_STATE.

Not here yet, for the layers above: the persist-then-commit of an acknowledgement (Kafka
keeps a transition pending until WriteShareGroupState succeeds and rolls it back if it fails;
here it applies at once), filtering aborted transactions for ``share.isolation.level``
read_committed, and the ``by_duration`` reset strategy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial

from coordinator.share.acquisition import Acquisition, acquire_in_flight, acquire_new, archive_skipped
from coordinator.share.in_flight import NO_MEMBER, InFlightRecords, Run
from coordinator.share.model import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    InFlightRange,
    RecordState,
    SharePartitionConfig,
    ShareStateError,
    StateBatch,
)
from coordinator.share.persistence import load_state_batches, merge_state_batches, snapshot_batches
from wire.error_codes import ErrorCode

_ACKNOWLEDGE_TYPES = frozenset(int(kind) for kind in AcknowledgeType)
# What each acknowledge type makes of an ACQUIRED record (Kafka's ACK_TYPE_TO_RECORD_STATE).
_ACKNOWLEDGED_STATE = {
    AcknowledgeType.GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
}


class SharePartition:
    """The in-flight records of one (share group, topic-partition)."""

    def __init__(
        self, start_offset: int, *, state_epoch: int = 0, config: SharePartitionConfig | None = None
    ) -> None:
        if start_offset < 0:
            raise ValueError(f"start offset must not be negative: {start_offset}")
        # Replaceable between operations: group configs are dynamic.
        self.config = config if config is not None else SharePartitionConfig()
        # Assigned by the share coordinator and written back with every state write, which
        # fences a writer holding an older state (FENCED_STATE_EPOCH).
        self.state_epoch = state_epoch
        self._records = InFlightRecords(start_offset)

    @classmethod
    def restore(
        cls,
        *,
        start_offset: int,
        state_epoch: int,
        state_batches: Iterable[StateBatch],
        config: SharePartitionConfig | None = None,
    ) -> SharePartition:
        """Rebuild a share-partition from ReadShareGroupState's answer.

        A start offset of -1 (no state yet) is the caller's to replace first, with
        :func:`~coordinator.share.persistence.auto_offset_reset_start`.  Nothing read back is
        ACQUIRED: every lock died with the previous leader.
        """
        partition = cls(start_offset, state_epoch=state_epoch, config=config)
        load_state_batches(partition._records, state_batches)
        partition._advance_start()
        return partition

    @property
    def start_offset(self) -> int:
        return self._records.start

    @property
    def end_offset(self) -> int:
        """The first offset not in flight: where fetching new records continues."""
        return self._records.end

    @property
    def in_flight_count(self) -> int:
        return self._records.end - self._records.start

    def next_fetch_offset(self) -> int:
        """Where the next fetch reads the log: the first AVAILABLE record, else the end offset."""
        for run in self._records.runs():
            if run.state is RecordState.AVAILABLE:
                return run.first
        return self._records.end

    def can_acquire(self) -> bool:
        """Whether a fetch could acquire anything: a redelivery, or room under the record locks."""
        return (
            self.next_fetch_offset() != self._records.end
            or self.in_flight_count < self.config.max_in_flight_records
        )

    def acquire(
        self,
        member_id: str,
        fetch_offset: int,
        fetched: Sequence[tuple[int, int]],
        *,
        max_records: int,
        batch_size: int,
        now_ms: int,
        record_limit: bool = False,
    ) -> list[AcquiredRecords]:
        """Acquire for ``member_id`` what it may have of the log batches read from ``fetch_offset``.

        ``fetched`` holds the (first offset, last offset) of each record batch the log
        returned, in order.  ``max_records``, ``batch_size`` and ``record_limit`` (ShareFetch
        v2 ``ShareAcquireMode`` 1) come from the client's request.
        """
        if not member_id:
            raise ShareStateError(ErrorCode.INVALID_REQUEST, "A member id is required to acquire records.")
        records = self._records
        _check_fetched(fetch_offset, records.end, fetched)
        if max_records <= 0 or not fetched or fetched[-1][1] < records.start:
            return []
        last = fetched[-1][1]
        limit = min(max_records, self.config.max_in_flight_records - self.in_flight_count)
        if limit <= 0:
            # At the record-lock limit only redeliveries inside the in-flight range are acquired.
            if fetch_offset >= records.end:
                return []
            limit = min(max_records, records.end - fetch_offset)
            last = min(last, records.end - 1)
        acquisition = Acquisition(
            member_id,
            now_ms + self.config.record_lock_duration_ms,
            limit,
            record_limit,
            self.config.delivery_count_limit,
        )
        archive_skipped(records, fetch_offset, fetched[0][0])
        first = max(fetched[0][0], records.start)
        acquire_in_flight(records, first, min(last, records.end - 1), acquisition)
        if not acquisition.full and last >= records.end:
            acquire_new(records, max(first, records.end), last, fetched, batch_size, acquisition)
        self._advance_start()
        return acquisition.acquired

    def acknowledge(
        self, member_id: str, batches: Sequence[AcknowledgementBatch], now_ms: int
    ) -> list[StateBatch]:
        """Apply ``member_id``'s acknowledgements of one ShareFetch/ShareAcknowledge partition.

        All of them or none: any refusal raises :class:`ShareStateError` before anything
        changes, as Kafka rolls back a partition's acknowledgements when one fails.  Offsets
        below the start offset are skipped (already done, or the log start moved past them),
        as Kafka skips them.  Returns the state batches that changed (RENEW changes no
        persisted state).

        Locks end only in :meth:`expire_locks`, which the driver runs once
        :meth:`next_lock_deadline` has passed (Kafka's timer task); an acknowledgement that
        beats it succeeds, as one that beats Kafka's timer thread does.
        """
        _check_acknowledgements(batches)
        plan: list[tuple[int, int, AcknowledgeType]] = []
        for batch in batches:
            if batch.last_offset < self._records.start:
                continue
            if self.in_flight_count == 0:
                raise ShareStateError(
                    ErrorCode.INVALID_RECORD_STATE,
                    "Batch record not found. The request batch offsets are not found in the cache.",
                )
            if batch.last_offset >= self._records.end:
                raise ShareStateError(
                    ErrorCode.INVALID_REQUEST,
                    "Batch record not found. The last offset in request is past acquired records.",
                )
            for first, last, kind in _typed_ranges(batch, max(batch.first_offset, self._records.start)):
                self._check_held(member_id, first, last, kind)
                plan.append((first, last, kind))
        renewed = partial(_renew, deadline_ms=now_ms + self.config.record_lock_duration_ms)
        changed: list[StateBatch] = []
        for first, last, kind in plan:
            if kind is AcknowledgeType.RENEW:
                self._change(first, last, _everything, renewed)
            else:
                changed += self._change(
                    first, last, _everything, partial(self._settle, target=_ACKNOWLEDGED_STATE[kind])
                )
        self._advance_start()
        return merge_state_batches(changed)

    def release_member(self, member_id: str) -> list[StateBatch]:
        """Make every record ``member_id`` holds AVAILABLE again (it left, or its session closed)."""
        changed = self._change(
            self._records.start,
            self._records.end - 1,
            lambda run: run.state is RecordState.ACQUIRED and run.member_id == member_id,
            partial(self._settle, target=RecordState.AVAILABLE),
        )
        self._advance_start()
        return merge_state_batches(changed)

    def expire_locks(self, now_ms: int) -> list[StateBatch]:
        """Make AVAILABLE again every ACQUIRED record whose lock deadline has passed."""
        changed = self._change(
            self._records.start,
            self._records.end - 1,
            lambda run: run.state is RecordState.ACQUIRED and run.deadline_ms <= now_ms,
            partial(self._settle, target=RecordState.AVAILABLE),
        )
        self._advance_start()
        return merge_state_batches(changed)

    def next_lock_deadline(self) -> int | None:
        """When :meth:`expire_locks` next has something to do, or None."""
        deadlines = [run.deadline_ms for run in self._records.runs() if run.state is RecordState.ACQUIRED]
        return min(deadlines, default=None)

    def advance_log_start(self, log_start_offset: int) -> bool:
        """Follow the log start offset past the SPSO (retention or DeleteRecords removed records).

        Kafka archives the AVAILABLE records below it and moves the SPSO there; records
        acquired below it stay locked until released or expired and are archived then, but
        acknowledgements below the SPSO are skipped, so nothing of them is observable and they
        are forgotten at once here.  The new SPSO is persisted with the next state write, as
        Kafka writes it lazily.  Returns whether the start offset moved.
        """
        if log_start_offset <= self._records.start:
            return False
        self._records.move_start(log_start_offset)
        self._advance_start()
        return True

    def state_batches(self) -> list[StateBatch]:
        """The state to persist (with :attr:`start_offset` and :attr:`state_epoch`) so that a
        :meth:`restore` redelivers exactly the records not yet acknowledged."""
        return snapshot_batches(self._records)

    def in_flight(self) -> list[InFlightRange]:
        """The in-flight records, one entry per range in one state within an in-flight batch."""
        return [
            InFlightRange(
                run.first,
                run.last,
                run.state,
                run.delivery_count,
                run.member_id,
                run.deadline_ms if run.state is RecordState.ACQUIRED else None,
            )
            for run in self._records.runs()
        ]

    def _check_held(self, member_id: str, first: int, last: int, kind: AcknowledgeType) -> None:
        for run in self._records.runs_between(first, last):
            if run.state is not RecordState.ACQUIRED:
                raise ShareStateError(
                    ErrorCode.INVALID_RECORD_STATE,
                    "The offset cannot be acknowledged. The offset is not acquired.",
                )
            if run.member_id != member_id:
                raise ShareStateError(ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of offset")
        if kind is AcknowledgeType.RENEW and not self.config.renew_acknowledge_enabled:
            raise ShareStateError(
                ErrorCode.INVALID_RECORD_STATE, "Renewing acquisition locks is not enabled for the group."
            )

    def _settle(self, run: Run, target: RecordState) -> None:
        """End an acquisition: ``target`` unless AVAILABLE at the delivery limit (then ARCHIVED)."""
        if target is RecordState.AVAILABLE and run.delivery_count >= self.config.delivery_count_limit:
            target = RecordState.ARCHIVED
        run.state = target
        run.member_id = NO_MEMBER
        run.deadline_ms = 0

    def _change(
        self, lo: int, hi: int, wanted: Callable[[Run], bool], change: Callable[[Run], None]
    ) -> list[StateBatch]:
        """Apply ``change`` to the records of ``lo``..``hi`` that ``wanted`` selects."""
        changed: list[StateBatch] = []
        for batch in self._records.batches_between(lo, hi):
            if not any(wanted(run) for run in batch.overlapping(lo, hi)):
                continue
            for run in batch.split(lo, hi):
                if wanted(run):
                    change(run)
                    changed.append(StateBatch(run.first, run.last, run.state, run.delivery_count))
            batch.merge()
        return changed

    def _advance_start(self) -> None:
        """Move the SPSO past the ACKNOWLEDGED/ARCHIVED prefix and forget it."""
        offset = self._records.start
        for run in self._records.runs():
            if not run.state.terminal:
                break
            offset = run.last + 1
        if offset > self._records.start:
            self._records.move_start(offset)


def _everything(run: Run) -> bool:
    return True


def _renew(run: Run, deadline_ms: int) -> None:
    """RENEW (KIP-1222): the lock starts again for a full lock duration; nothing is persisted."""
    run.deadline_ms = deadline_ms


def _check_fetched(fetch_offset: int, end_offset: int, fetched: Sequence[tuple[int, int]]) -> None:
    """The fetch is the broker's own doing: anything odd is a bug in the caller.

    A fetch offset past the end offset would make the offsets in between look missing from
    the log (and archived); the next fetch offset is never past it.
    """
    if not 0 <= fetch_offset <= end_offset:
        raise ValueError(f"fetch offset {fetch_offset} is not within 0-{end_offset}")
    previous_last = -1
    for first, last in fetched:
        if first <= previous_last or last < first:
            raise ValueError(f"fetched batches are not ascending ranges: {list(fetched)}")
        previous_last = last


def _check_acknowledgements(batches: Sequence[AcknowledgementBatch]) -> None:
    """Kafka's ``validateAcknowledgementBatches``: INVALID_REQUEST for a malformed batch.

    Kafka lets a batch start at the previous batch's last offset (and then fails with
    INVALID_RECORD_STATE on the offset acknowledged twice); overlapping batches are refused
    outright here, as are negative offsets.
    """
    previous_last = -1
    for batch in batches:
        first, last, types = batch.first_offset, batch.last_offset, batch.acknowledge_types
        if first > last or first <= previous_last:
            raise ShareStateError(
                ErrorCode.INVALID_REQUEST, f"Acknowledgement batch {first}-{last} is out of order or empty."
            )
        if not types or (len(types) > 1 and len(types) != last - first + 1):
            raise ShareStateError(
                ErrorCode.INVALID_REQUEST,
                f"Acknowledgement batch {first}-{last} has {len(types)} acknowledge types.",
            )
        if any(kind not in _ACKNOWLEDGE_TYPES for kind in types):
            raise ShareStateError(ErrorCode.INVALID_REQUEST, f"Invalid acknowledge type: {list(types)}")
        previous_last = last


def _typed_ranges(batch: AcknowledgementBatch, lo: int) -> list[tuple[int, int, AcknowledgeType]]:
    """The offsets ``lo``..last of ``batch`` as ranges with one acknowledge type each."""
    types = batch.acknowledge_types
    if len(types) == 1:
        return [(lo, batch.last_offset, AcknowledgeType(types[0]))]
    ranges: list[tuple[int, int, AcknowledgeType]] = []
    for index in range(lo - batch.first_offset, len(types)):
        offset, kind = batch.first_offset + index, AcknowledgeType(types[index])
        if ranges and ranges[-1][2] is kind:
            ranges[-1] = (ranges[-1][0], offset, kind)
        else:
            ranges.append((offset, offset, kind))
    return ranges
