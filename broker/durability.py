"""When an acknowledgement also means fsynced: Kafka's flush policy with a real group commit.

By default (``flush.messages`` and ``flush.ms`` unlimited) an ack means the batch reached the
operating system, which survives a crash of the broker process but not a power cut.  When a
topic sets ``flush.messages`` (e.g. 1), an append that reaches the threshold is acknowledged
only after its data is on disk.

Group commit: a *round* fdatasyncs the ``.log`` file of every partition waiting at the moment
the round starts, whatever connection, request or topic their appends came from, in worker
threads, several partitions at once (``SYNC_THREADS``).  While a round runs, new appends
queue for the next one; so however many producers and partitions are
waiting, the broker pays at most one round in flight plus one queued, and a round costs what
the disk needs for the files it touches.  Only segment data is synced on this path: offset and
time indexes are rebuilt by recovery from the recovery point on, which a data sync does not
move; the checkpoint loop fully flushes such logs later (``broker.log_maintenance``).

Until its round is done, an append that waits is invisible to consumers: the high watermark
stops before it (``PartitionLog.hide_last_append_until_synced``), as Kafka's moves only after
the flush an append triggered, so nothing a consumer reads can vanish in a power cut.

The produce handler does not wait itself: it returns a :class:`PendingResponse` that waits for
its round, and the connection keeps reading and appending the client's next requests meanwhile
(``broker.connection``), answering in request order.

``flush.ms`` is enforced by a periodic background task with a full flush.

If a sync fails, that partition goes offline and only the appends waiting on it are refused
(KAFKA_STORAGE_ERROR); the other partitions of the round are acknowledged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

import trio

from log.errors import LogError

if TYPE_CHECKING:
    from prometheus_client import Histogram

    from broker.metrics import BrokerMetrics
    from broker.server import Broker
    from log.partition_log import PartitionLog

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]

# Partitions a round syncs at once, each in its own worker thread: concurrent fdatasyncs on
# one filesystem share journal commits (4 files: ~0.45 ms together against ~0.66 ms one after
# another here), and a thread needs the interpreter lock only once, after its sync, instead of
# between syncs while the event loop is busy.
SYNC_THREADS = 8

# Rounds whose failures are remembered for their waiters; a waiter reads its round's result as
# soon as the round ends, so only a few recent rounds can still matter.
_FAILURES_KEPT = 64


class _FlushPolicy:
    """Per-partition counters for ``flush.messages`` and ``flush.ms``."""

    __slots__ = ("unflushed_messages", "dirty_since")

    def __init__(self) -> None:
        self.unflushed_messages = 0
        self.dirty_since: float | None = None  # trio time of the oldest append not yet synced


class SyncTicket:
    """What a produce request waits for: the round that covers its appends."""

    __slots__ = ("round", "keys")

    def __init__(self, round_number: int, keys: list[PartitionKey]) -> None:
        self.round = round_number
        self.keys = keys


class Durability:
    """Applies the flush policy after appends and runs the group-commit rounds."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._policies: dict[PartitionKey, _FlushPolicy] = {}
        # The partitions with appends not yet synced (``dirty_since`` set): the periodic flush
        # visits only these, not every partition of the broker each second.
        self._dirty: dict[PartitionKey, _FlushPolicy] = {}
        self._waiting: dict[PartitionKey, PartitionLog] = {}  # for the next round
        self._started = 0  # rounds begun
        self._completed = 0  # rounds ended
        self._running = False
        self._round_ended = trio.Event()
        self._failures: dict[int, frozenset[PartitionKey]] = {}
        self._sync_threads = trio.CapacityLimiter(SYNC_THREADS)
        self._collecting: list[PartitionKey] | None = None
        self._round_wanted = trio.Event()  # set by ``sync_soon``

    @property
    def rounds(self) -> int:
        """Group-commit rounds completed so far (each is one sync of every waiting partition)."""
        return self._completed

    def _policy(self, key: PartitionKey) -> _FlushPolicy:
        policy = self._policies.get(key)
        if policy is None:
            policy = self._policies[key] = _FlushPolicy()
        return policy

    def _clean(self, key: PartitionKey) -> None:
        """Forget ``key``'s unsynced appends: a sync or flush of it is starting."""
        policy = self._policy(key)
        policy.unflushed_messages, policy.dirty_since = 0, None
        self._dirty.pop(key, None)

    def after_append(
        self, key: PartitionKey, partition_log: PartitionLog, messages: int, wrote: bool
    ) -> bool:
        """Record an append of ``messages`` records that just completed (``wrote`` is False for
        a producer's retry of a batch already in the log); True if its acknowledgement must wait
        for a sync (then ``ticket`` gives what to wait for).  An append that waits is hidden from
        consumers until its round has synced it.
        """
        policy = self._policy(key)
        if policy.dirty_since is None:
            policy.dirty_since = trio.current_time()
            self._dirty[key] = policy
        policy.unflushed_messages += messages
        if policy.unflushed_messages < partition_log.config.flush_messages:
            return False
        self._waiting[key] = partition_log
        if wrote:
            partition_log.hide_last_append_until_synced()
        if self._collecting is not None:
            self._collecting.append(key)
        return True

    @contextmanager
    def collecting(self) -> Iterator[list[PartitionKey]]:
        """The partitions whose appends made during the block must be synced before answering.

        For handlers whose appends happen deep inside a sans-IO component (the group
        coordinator writing ``__consumer_offsets``): the block must not await, so every append
        in it belongs to the one request.
        """
        self._collecting = collected = []
        try:
            yield collected
        finally:
            self._collecting = None

    def ticket(self, keys: list[PartitionKey]) -> SyncTicket:
        """What appends that ``after_append`` said must wait are waiting for: rounds already
        started cannot cover them, the next one to start will."""
        return SyncTicket(self._started + 1, keys)

    async def wait(self, ticket: SyncTicket) -> set[PartitionKey]:
        """Return once the ticket's round has ended; the partitions whose sync failed (their
        appends must not be acknowledged: the log went offline and says KAFKA_STORAGE_ERROR)."""
        while self._completed < ticket.round:
            if self._running:
                await self._round_ended.wait()
            else:
                await self._run_round()
        return set(ticket.keys) & self._failures.get(ticket.round, frozenset())

    def sync_soon(self) -> None:
        """Have the next round run although no request waits for it (the coordinator's own
        writes): a round runs only in a waiter, and until one covers an append it stays hidden
        from consumers and from the cleaner, which stop at the high watermark."""
        self._round_wanted.set()

    async def run_unawaited_rounds(self) -> None:
        """Background task: wait, on behalf of nobody, for the rounds ``sync_soon`` asked for."""
        while True:
            await self._round_wanted.wait()
            self._round_wanted = trio.Event()
            await self.wait(self.ticket([]))

    async def _run_round(self) -> None:
        """Sync everything waiting now (a worker thread per partition); wake every waiter."""
        self._running = True
        self._started += 1
        number = self._started
        batch, self._waiting = self._waiting, {}
        for key in batch:
            self._clean(key)
        failed: set[PartitionKey] = set()
        marks = {key: partition_log.sync_mark() for key, partition_log in batch.items()}
        metrics = self._broker.metrics
        started = trio.current_time()
        try:
            async with trio.open_nursery() as nursery:
                for key, partition_log in batch.items():
                    nursery.start_soon(_sync_one, key, partition_log, failed, self._sync_threads, metrics)
            metrics.sync_round_time.observe(trio.current_time() - started)
            for key, partition_log in batch.items():
                if key not in failed:
                    partition_log.reveal_synced(marks[key])
                    self._broker.appends.notify(key)  # long-polling fetches may read it now
        finally:
            self._running = False
            self._completed = number
            if failed:
                self._failures[number] = frozenset(failed)
                self._failures.pop(number - _FAILURES_KEPT, None)
            ended, self._round_ended = self._round_ended, trio.Event()
            ended.set()

    async def mark_unclean(self, logs: Sequence[PartitionLog]) -> None:
        """Mark ``logs`` unclean on disk before a request appends to them, several at once in
        worker threads (``PartitionLog.mark_unclean``: the first append to a fresh log costs
        two fsyncs). A failure is left to the append, which marks again and reports it."""
        async with trio.open_nursery() as nursery:
            for partition_log in logs:
                nursery.start_soon(_mark_one, partition_log, self._sync_threads)

    async def run_periodic_flush(self) -> None:
        """Background task enforcing ``flush.ms``: fully flush logs with data older than that."""
        while True:
            await trio.sleep(1.0)
            now = trio.current_time()
            for key, policy in list(self._dirty.items()):
                partition_log = self._broker.partitions.get(*key)
                if partition_log is None:  # deleted since its append
                    self._dirty.pop(key, None)
                    continue
                if policy.dirty_since is None or not partition_log.is_online:
                    continue
                if (now - policy.dirty_since) * 1000 >= partition_log.config.flush_ms:
                    self._clean(key)
                    try:
                        await _timed_sync(partition_log.flush, self._broker.metrics)
                    except LogError:
                        continue  # the partition went offline and said why; the others go on


async def _mark_one(partition_log: PartitionLog, limiter: trio.CapacityLimiter) -> None:
    with suppress(OSError):  # the append marks it again, and reports a failure
        await trio.to_thread.run_sync(partition_log.mark_unclean, limiter=limiter)


async def _sync_one(
    key: PartitionKey,
    partition_log: PartitionLog,
    failed: set[PartitionKey],
    limiter: trio.CapacityLimiter,
    metrics: BrokerMetrics,
) -> None:
    try:
        await _timed_sync(partition_log.sync_data, metrics, limiter)
    except LogError:
        failed.add(key)  # went offline and logged why; the rest of the round goes on


async def _timed_sync(
    sync: Callable[[], None], metrics: BrokerMetrics, limiter: trio.CapacityLimiter | None = None
) -> None:
    """Run one log's sync or flush in a worker thread; its time goes to the log flush histogram
    (measured in the thread, so waiting for a thread or the event loop is not counted)."""
    await trio.to_thread.run_sync(_time_into, sync, metrics.log_flush_time, limiter=limiter)


def _time_into(sync: Callable[[], None], histogram: Histogram) -> None:
    started = time.perf_counter()
    sync()
    histogram.observe(time.perf_counter() - started)
