"""The share-partitions this broker leads: Kafka's ``SharePartitionManager``.

For every (share group, topic-partition) a member fetches from here, this broker keeps a
:class:`~coordinator.share.share_partition.SharePartition` (the in-flight records and their
locks), loads it from the share coordinator's state the first time (or starts it where
``share.auto.offset.reset`` says), reads the log for it, and persists every acknowledgement,
release and lock expiry through the share coordinator before the request that caused it is
answered, so a restart redelivers only what was not acknowledged.

Records stay opaque: a ShareFetch gets the log's batches as they are stored (only their
headers are parsed, for the offsets they span) with the ranges the member acquired; the
client keeps the records inside those ranges.  Under ``share.isolation.level=read_committed``
the share-partition reads up to the last stable offset and archives the records of aborted
transactions instead of handing them out (Kafka's ``filterAbortedTransactionalAcquiredRecords``).

Locks run out on a timer task (:meth:`run_lock_timers`); a release or an expiry wakes the
ShareFetches parked waiting for records (:meth:`wait_available`).
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import trio

from broker.config.group_configs import SHARE_CHOICES
from coordinator.share.model import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    SharePartitionConfig,
    ShareStateError,
    StateBatch,
)
from coordinator.share.persistence import auto_offset_reset_start
from coordinator.share.share_partition import SharePartition
from coordinator.share.state_coordinator import ShareKey, ShareState
from coordinator.share.state_coordinator import ShareStateError as PersistError
from log.errors import LogError
from wire.error_codes import ErrorCode
from wire.record_batch import BatchInfo, parse_batch_header
from wire.record_batch_errors import RecordBatchError

if TYPE_CHECKING:
    from broker.config.config import BrokerConfig
    from broker.services.metrics import BrokerMetrics
    from broker.state.dynamic_config_store import DynamicConfigStore
    from log.clock import Clock
    from log.partition_log import PartitionLog

log = logging.getLogger(__name__)

READ_COMMITTED = "read_committed"
_COORDINATOR_MOVING = frozenset(
    {
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)
PartitionKey = tuple[str, str, int]
"""(group id, topic name, partition)."""


class ShareStatePort(Protocol):
    """Where share-partitions persist: the share coordinator, here or on another broker."""

    async def read(self, key: ShareKey, leader_epoch: int) -> ShareState | None: ...

    async def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> None: ...

    async def write(
        self, key: ShareKey, state_epoch: int, leader_epoch: int, start_offset: int, batches: list[StateBatch]
    ) -> None: ...


@dataclass(slots=True)
class Hosted:
    """A share-partition with what its persistence needs."""

    partition: SharePartition
    topic_id: bytes
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchLimits:
    max_records: int
    batch_size: int
    max_bytes: int
    record_limit: bool


class ShareFetchError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class SharePartitions:
    """Every share-partition of this broker, keyed by (group, topic, partition)."""

    def __init__(
        self,
        config: BrokerConfig,
        clock: Clock,
        dynamic_configs: DynamicConfigStore,
        state: ShareStatePort,
        metrics: BrokerMetrics,
    ) -> None:
        self._config = config
        self._metrics = metrics
        self._clock = clock
        self._dynamic_configs = dynamic_configs
        self._state = state
        self._hosted: dict[PartitionKey, Hosted] = {}
        self._loading: dict[PartitionKey, trio.Event] = {}
        self._deadlines: list[tuple[int, PartitionKey]] = []
        self._timer_wake = trio.Event()
        self._available = trio.Event()
        # State changes made while fetching (aborted transactions archived), persisted after.
        self._pending_writes: list[tuple[PartitionKey, Hosted, list[StateBatch]]] = []
        # Members whose sessions ended with their connection: released by the timer task.
        self._releases: list[tuple[str, str, list[PartitionKey]]] = []

    # --- settings ------------------------------------------------------------------------

    def group_setting(self, group_id: str, key: str) -> str:
        """A share group config, else its default: the broker's ``group.``-prefixed key, or for
        the keys taking a word, Kafka's default word."""
        value = self._dynamic_configs.groups.get(group_id, {}).get(key)
        if value is not None:
            return value.strip().lower() if key in SHARE_CHOICES else value
        if key in SHARE_CHOICES:
            return SHARE_CHOICES[key].default
        return str(self._config.get(f"group.{key}"))

    def _partition_config(self, group_id: str) -> SharePartitionConfig:
        return SharePartitionConfig(
            max_in_flight_records=int(self.group_setting(group_id, "share.partition.max.record.locks")),
            delivery_count_limit=int(self.group_setting(group_id, "share.delivery.count.limit")),
            record_lock_duration_ms=int(self.group_setting(group_id, "share.record.lock.duration.ms")),
            renew_acknowledge_enabled=self.group_setting(group_id, "share.renew.acknowledge.enable").lower()
            == "true",
        )

    def lock_duration_ms(self, group_id: str) -> int:
        return int(self.group_setting(group_id, "share.record.lock.duration.ms"))

    # --- loading -------------------------------------------------------------------------

    async def hosted(
        self, group_id: str, topic: str, index: int, topic_id: bytes, leader_epoch: int, log_: PartitionLog
    ) -> Hosted:
        """The share-partition, loaded from its persisted state (or started) on first use."""
        key = (group_id, topic, index)
        while (loading := self._loading.get(key)) is not None:
            await loading.wait()
        found = self._hosted.get(key)
        if found is not None and found.topic_id == topic_id and found.leader_epoch == leader_epoch:
            found.partition.config = self._partition_config(group_id)
            found.partition.advance_log_start(log_.log_start_offset)
            return found
        self._loading[key] = event = trio.Event()
        try:
            found = await self._load(group_id, topic_id, index, leader_epoch, log_)
            self._hosted[key] = found
            return found
        finally:
            del self._loading[key]
            event.set()

    async def _load(
        self, group_id: str, topic_id: bytes, index: int, leader_epoch: int, log_: PartitionLog
    ) -> Hosted:
        config = self._partition_config(group_id)
        share_key = (group_id, topic_id, index)
        try:
            state = await self._state.read(share_key, leader_epoch)
            if state is None or state.start_offset < 0:
                strategy = self.group_setting(group_id, "share.auto.offset.reset")
                start = auto_offset_reset_start(
                    strategy,
                    log_start_offset=log_.log_start_offset,
                    high_watermark=log_.high_watermark,
                    now_ms=self._clock(),
                    offset_for_timestamp=lambda timestamp: _offset_at(log_, timestamp),
                )
                await self._state.initialize(share_key, 0, start)
                partition = SharePartition(start, state_epoch=0, config=config)
            else:
                partition = SharePartition.restore(
                    start_offset=state.start_offset,
                    state_epoch=state.state_epoch,
                    state_batches=state.batches,
                    config=config,
                )
        except PersistError as error:
            # A share coordinator not there yet (its topic being created, an election) is an
            # error the share consumer retries; Kafka's clients fail on COORDINATOR_* codes here.
            code = ErrorCode.REPLICA_NOT_AVAILABLE if error.code in _COORDINATOR_MOVING else error.code
            raise ShareFetchError(code, str(error)) from error
        partition.advance_log_start(log_.log_start_offset)
        return Hosted(partition, topic_id, leader_epoch)

    def forget(self, *, group_id: str | None = None, topic: str | None = None) -> None:
        """Drop share-partitions (a deleted group or topic, a lost leadership): reloaded from
        their persisted state if fetched again."""
        for key in list(self._hosted):
            if (group_id is None or key[0] == group_id) and (topic is None or key[1] == topic):
                del self._hosted[key]

    # --- fetching ------------------------------------------------------------------------

    def read_and_acquire(
        self,
        group_id: str,
        member_id: str,
        key: PartitionKey,
        hosted: Hosted,
        log_: PartitionLog,
        limits: FetchLimits,
        first: bool,
    ) -> tuple[bytes, list[AcquiredRecords]]:
        """Read what the share-partition may hand out next and acquire it for ``member_id``:
        (the log's batches as stored, the acquired ranges). ``first``: nothing was read for
        an earlier partition of the response, so one batch may exceed ``limits.max_bytes``."""
        partition = hosted.partition
        if limits.max_bytes <= 0 and not first:
            return b"", []
        if not partition.can_acquire():
            return b"", []
        offset = max(partition.next_fetch_offset(), log_.log_start_offset)
        read_committed = self.group_setting(group_id, "share.isolation.level") == READ_COMMITTED
        try:
            if read_committed:
                slices, aborted = log_.read_committed(offset, max(limits.max_bytes, 1))
                data = slices[0].read() if slices else b""
            else:
                data, aborted = log_.read(offset, max(limits.max_bytes, 1)), []
        except LogError as error:
            raise ShareFetchError(error.error_code, str(error)) from error
        if not data:
            return b"", []
        batches = _batch_headers(data)
        now = self._clock()
        acquired = partition.acquire(
            member_id,
            min(offset, partition.end_offset),
            [(b.base_offset, b.last_offset) for b in batches],
            max_records=limits.max_records,
            batch_size=limits.batch_size,
            now_ms=now,
            record_limit=limits.record_limit,
        )
        if aborted and acquired:
            acquired = self._archive_aborted(group_id, member_id, key, hosted, batches, aborted, acquired)
        if not acquired:
            return b"", []
        self._schedule_expiry(key, now + partition.config.record_lock_duration_ms)
        self._count_acquired(acquired)
        return _covering(data, batches, acquired), acquired

    def _count_acknowledged(self, batches: Sequence[AcknowledgementBatch]) -> None:
        """One counter update per acknowledge type (a label look-up per record would cost more
        than the acknowledgement)."""
        counts: dict[int, int] = {}
        for batch in batches:
            types = batch.acknowledge_types
            if len(types) == 1:
                counts[types[0]] = counts.get(types[0], 0) + batch.last_offset - batch.first_offset + 1
            else:
                for kind in types:
                    counts[kind] = counts.get(kind, 0) + 1
        for kind, count in counts.items():
            self._metrics.share_acknowledged.labels(AcknowledgeType(kind).name.title()).inc(count)

    def _count_acquired(self, acquired: list[AcquiredRecords]) -> None:
        first = sum(a.count for a in acquired if a.delivery_count <= 1)
        again = sum(a.count for a in acquired if a.delivery_count > 1)
        if first:
            self._metrics.share_acquired.labels("first").inc(first)
        if again:
            self._metrics.share_acquired.labels("redelivery").inc(again)

    def _archive_aborted(
        self,
        group_id: str,
        member_id: str,
        key: PartitionKey,
        hosted: Hosted,
        batches: list[BatchInfo],
        aborted: list[tuple[int, int]],
        acquired: list[AcquiredRecords],
    ) -> list[AcquiredRecords]:
        """Archive the acquired records of aborted transactions (read_committed) and return the
        acquired ranges without them."""
        aborted_ranges = _aborted_ranges(batches, aborted)
        if not aborted_ranges:
            return acquired
        rejected: list[AcknowledgementBatch] = []
        kept: list[AcquiredRecords] = []
        for entry in acquired:
            pieces = _split(entry.first_offset, entry.last_offset, aborted_ranges)
            for first, last, is_aborted in pieces:
                if is_aborted:
                    rejected.append(AcknowledgementBatch(first, last, [int(AcknowledgeType.GAP)]))
                else:
                    kept.append(AcquiredRecords(first, last, entry.delivery_count))
        if rejected:
            changed = hosted.partition.acknowledge(member_id, rejected, self._clock())
            self._pending_writes.append((key, hosted, changed))
        return kept

    # --- acknowledging -------------------------------------------------------------------

    async def acknowledge(
        self, group_id: str, member_id: str, key: PartitionKey, batches: Sequence[AcknowledgementBatch]
    ) -> ShareStateError | None:
        """Apply a member's acknowledgements of one partition and persist them; the error
        Kafka answers for the partition, or None."""
        hosted = self._hosted.get(key)
        if hosted is None:
            return ShareStateError(
                ErrorCode.INVALID_RECORD_STATE, "The share partition has no acquired records."
            )
        try:
            changed = hosted.partition.acknowledge(member_id, batches, self._clock())
        except ShareStateError as error:
            return error
        self._count_acknowledged(batches)
        if any(b.acknowledge_types and b.acknowledge_types[0] == AcknowledgeType.RENEW for b in batches):
            self._schedule_expiry(key, self._clock() + hosted.partition.config.record_lock_duration_ms)
        failure = await self._persist(key, hosted, changed)
        if changed:
            self._announce_available()
        return failure

    async def release(self, group_id: str, member_id: str, keys: Sequence[PartitionKey]) -> None:
        """Make what ``member_id`` holds in ``keys`` available again (its session closed)."""
        for key in keys:
            hosted = self._hosted.get(key)
            if hosted is None:
                continue
            changed = hosted.partition.release_member(member_id)
            if changed:
                await self._persist(key, hosted, changed)
                self._announce_available()

    def release_soon(self, group_id: str, member_id: str, keys: list[PartitionKey]) -> None:
        """:meth:`release` from where nothing can wait (a connection closing)."""
        self._releases.append((group_id, member_id, keys))
        self._timer_wake.set()

    async def flush_pending(self) -> None:
        """Persist what fetching changed (aborted transactions archived)."""
        while self._pending_writes:
            key, hosted, changed = self._pending_writes.pop()
            await self._persist(key, hosted, changed)

    async def _persist(
        self, key: PartitionKey, hosted: Hosted, changed: list[StateBatch]
    ) -> ShareStateError | None:
        partition = hosted.partition
        try:
            await self._state.write(
                (key[0], hosted.topic_id, key[2]),
                partition.state_epoch,
                hosted.leader_epoch,
                partition.start_offset,
                changed,
            )
        except PersistError as error:
            if error.code is ErrorCode.FENCED_STATE_EPOCH:
                # The group's offsets were reset or deleted: start again from the new state.
                self._hosted.pop(key, None)
                return ShareStateError(error.code, str(error))
            log.error("share group %s, %s-%d: the state was not persisted: %s", key[0], key[1], key[2], error)
            return ShareStateError(error.code, str(error))
        return None

    # --- waiting and timers --------------------------------------------------------------

    def _announce_available(self) -> None:
        self._available.set()
        self._available = trio.Event()

    async def wait_available(self, timeout_s: float) -> bool:
        """Wait until some share-partition's records become available again (True) or the
        time is up (False)."""
        with trio.move_on_after(timeout_s):
            await self._available.wait()
            return True
        return False

    def _schedule_expiry(self, key: PartitionKey, deadline_ms: int) -> None:
        earliest = self._deadlines[0][0] if self._deadlines else None
        heapq.heappush(self._deadlines, (deadline_ms, key))
        if earliest is None or deadline_ms < earliest:
            self._timer_wake.set()

    async def run_lock_timers(self) -> None:
        """Forever: at each lock deadline, make the expired records available again."""
        while True:
            self._timer_wake = trio.Event()
            while self._releases:
                await self.release(*self._releases.pop())
            now = self._clock()
            while self._deadlines and self._deadlines[0][0] <= now:
                _deadline, key = heapq.heappop(self._deadlines)
                await self._expire(key, now)
            timeout = (
                math.inf if not self._deadlines else max(0, self._deadlines[0][0] - self._clock()) / 1000
            )
            with trio.move_on_after(timeout):
                await self._timer_wake.wait()

    async def _expire(self, key: PartitionKey, now_ms: int) -> None:
        hosted = self._hosted.get(key)
        if hosted is None:
            return
        try:
            changed = hosted.partition.expire_locks(now_ms)
        except Exception:
            log.exception("share group %s, %s-%d: expiring locks failed", *key)
            return
        next_deadline = hosted.partition.next_lock_deadline()
        if next_deadline is not None:
            heapq.heappush(self._deadlines, (next_deadline, key))
        if changed:
            await self._persist(key, hosted, changed)
            self._announce_available()

    # --- administration ------------------------------------------------------------------

    def in_flight(self) -> list[tuple[PartitionKey, int]]:
        """Every share-partition here with its count of in-flight records (the metrics' gauge)."""
        return [(key, hosted.partition.in_flight_count) for key, hosted in self._hosted.items()]


def _covering(data: bytes, batches: list[BatchInfo], acquired: list[AcquiredRecords]) -> bytes:
    """The stored batches holding the acquired records, and no others: a read may return far
    more than the share-partition hands out (its record locks bound that), and the client would
    only drop the rest (Kafka slices the same way, ``ShareFetchUtils.maybeSliceFetchRecords``)."""
    first, last = acquired[0].first_offset, acquired[-1].last_offset
    kept = [b for b in batches if b.last_offset >= first and b.base_offset <= last]
    if not kept:
        return b""
    return data[kept[0].position : kept[-1].end_position]


def _offset_at(log_: PartitionLog, timestamp: int) -> int | None:
    found = log_.offset_for_timestamp(timestamp)
    return None if found is None else found[0]


def _batch_headers(data: bytes) -> list[BatchInfo]:
    """The headers of the whole batches in ``data`` (as the log stored them)."""
    headers: list[BatchInfo] = []
    position = 0
    try:
        while position < len(data):
            batch = parse_batch_header(data, position)
            if position + batch.size > len(data):
                break
            headers.append(batch)
            position += batch.size
    except RecordBatchError as error:
        log.error("a stored record batch could not be parsed at byte %d: %s", position, error)
    return headers


def _aborted_ranges(batches: list[BatchInfo], aborted: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The offset ranges of data batches that belong to aborted transactions.

    ``aborted`` holds (producer id, first offset) of each aborted transaction overlapping the
    read; a transactional data batch of that producer from that offset on, up to the producer's
    abort marker, is aborted (the same walk a read_committed consumer does)."""
    open_aborts = sorted(aborted, key=lambda entry: entry[1])
    active: set[int] = set()
    ranges: list[tuple[int, int]] = []
    index = 0
    for batch in batches:
        while index < len(open_aborts) and open_aborts[index][1] <= batch.base_offset:
            active.add(open_aborts[index][0])
            index += 1
        if batch.is_control:
            active.discard(batch.producer_id)
        elif batch.is_transactional and batch.producer_id in active:
            ranges.append((batch.base_offset, batch.last_offset))
    return ranges


def _split(first: int, last: int, ranges: list[tuple[int, int]]) -> list[tuple[int, int, bool]]:
    """``first``..``last`` cut into pieces inside (True) and outside (False) ``ranges``."""
    pieces: list[tuple[int, int, bool]] = []
    cursor = first
    for lo, hi in ranges:
        if hi < cursor or lo > last:
            continue
        if lo > cursor:
            pieces.append((cursor, lo - 1, False))
        pieces.append((max(lo, cursor), min(hi, last), True))
        cursor = min(hi, last) + 1
    if cursor <= last:
        pieces.append((cursor, last, False))
    return pieces
