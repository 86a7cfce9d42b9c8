"""When an acknowledgement also means fsynced: Kafka's flush policy with a real group commit.

By default (``flush.messages`` and ``flush.ms`` unlimited) an ack means the batch reached the
operating system, which survives a crash of the broker process but not a power cut.  When a
topic sets ``flush.messages`` (e.g. 1), an append that reaches the threshold is acknowledged
only after its data is on disk.

Group commit: a *round* fdatasyncs the ``.log`` file of every partition waiting at the moment
the round starts, whatever connection, request or topic their appends came from.  One task
runs the rounds, back to back while appends wait: an append registers its partition (and the
log end it reached) and wakes the task, which takes everything registered so far.  So however
many producers and partitions are waiting, the broker pays at most one round in flight plus
one gathering.  The syncs themselves run in the sync process (``broker.services.storage.sync_worker``, which
says why not a thread): a round sends it the descriptors and awaits its answer as the event
loop awaits any socket, so a sync costs the loop two system calls, whatever the disk takes.
Only segment data is synced on this path: offset and time indexes are rebuilt by recovery from
the recovery point on, which a data sync does not move; the checkpoint loop fully flushes such
logs later (``broker.services.storage.log_maintenance``).

Until its round is done, an append that waits is invisible to consumers: the high watermark
stops before it (``PartitionLog.hide_last_append_until_synced``), as Kafka's moves only after
the flush an append triggered, so nothing a consumer reads can vanish in a power cut.

The produce handler does not wait itself: it returns a :class:`PendingResponse` that waits for
its round, and the connection keeps reading and appending the client's next requests meanwhile
(``broker.network.connection``), answering in request order.

``flush.ms`` is enforced by a periodic background task with a full flush.

If a sync fails, that partition goes offline and only the appends waiting on it are refused
(KAFKA_STORAGE_ERROR); the other partitions of the round are acknowledged.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

import trio

from broker.services.storage.sync_process import SyncProcess
from log.config import LONG_MAX
from log.errors import LogError

if TYPE_CHECKING:
    from prometheus_client import Histogram

    from broker.config.config import BrokerConfig
    from broker.services.metrics import BrokerMetrics
    from broker.services.storage.appends import AppendNotifier
    from broker.services.storage.partitions import PartitionStore
    from log.partition_log import DataSync, PartitionLog, SyncMark

log = logging.getLogger(__name__)

PartitionKey = tuple[str, int]

# Logs marked unclean at once (``mark_unclean``), each in a worker thread: the first append to
# a fresh log waits for two fsyncs, and a request creating several logs should not wait for
# them one after another.
MARKING_THREADS = 8

# Partitions whose descriptors one request to the sync process carries: each is duplicated
# until the answer, so this bounds the descriptors a round holds at once.
PARTITIONS_PER_REQUEST = 64

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
    """Applies the flush policy after appends; its round task runs the group-commit rounds."""

    def __init__(
        self,
        config: BrokerConfig,
        partitions: PartitionStore,
        appends: AppendNotifier,
        metrics: BrokerMetrics,
    ) -> None:
        self._config = config
        self._partitions = partitions
        self._appends = appends
        self._metrics = metrics
        self._policies: dict[PartitionKey, _FlushPolicy] = {}
        # The partitions with appends not yet synced (``dirty_since`` set): the periodic flush
        # visits only these, not every partition of the broker each second.
        self._dirty: dict[PartitionKey, _FlushPolicy] = {}
        # What the next round syncs: each partition's log end as of its newest waiting append.
        self._waiting: dict[PartitionKey, tuple[PartitionLog, SyncMark]] = {}
        self._forced = False  # the next round runs even with nothing waiting (``ticket([])``)
        self._taken = 0  # rounds begun
        self._next_round = 1  # the round that covers the newest append that waits
        self._completed = 0  # rounds ended
        self._round_wanted = trio.Event()
        self._round_ended = trio.Event()
        self._failures: dict[int, frozenset[PartitionKey]] = {}
        self.sync_process = SyncProcess()
        self._marking_threads = trio.CapacityLimiter(MARKING_THREADS)
        self._collecting: list[PartitionKey] | None = None

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
        self._clean(key)  # the round that takes it syncs everything written so far
        if wrote:
            partition_log.hide_last_append_until_synced()
        self._waiting[key] = (partition_log, partition_log.sync_mark())
        self._next_round = self._taken + 1
        self._round_wanted.set()
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
        """What appends that ``after_append`` just said must wait (with no await in between)
        are waiting for: the round that takes them.  With no ``keys``, the next round, run
        even if nothing else waits."""
        if keys:
            return SyncTicket(self._next_round, keys)
        self._forced = True
        self._round_wanted.set()
        return SyncTicket(self._taken + 1, keys)

    def done(self, ticket: SyncTicket) -> bool:
        """True once the ticket's round has ended (``wait`` would return at once)."""
        return self._completed >= ticket.round

    async def wait(self, ticket: SyncTicket) -> set[PartitionKey]:
        """Return once the ticket's round has ended; the partitions whose sync failed (their
        appends must not be acknowledged: the log went offline and says KAFKA_STORAGE_ERROR)."""
        while self._completed < ticket.round:
            await self._round_ended.wait()
        return set(ticket.keys) & self._failures.get(ticket.round, frozenset())

    def sync_soon(self) -> None:
        """Have the next round run although no request waits for it (the coordinator's own
        writes): until a round covers an append that waits it stays hidden from consumers and
        from the cleaner, which stop at the high watermark."""
        self.ticket([])

    async def run_rounds(self) -> None:
        """Background task: one round after another while appends wait, each covering every
        append registered before it began (the sync process does the syncs, started here when
        the broker's own default asks for synced acks, else when a topic's first does)."""
        if self._config.get_int("log.flush.interval.messages") < LONG_MAX:
            self.sync_process.ensure_started()  # so the first ack need not wait for it to start
        try:
            while True:
                await self._round_wanted.wait()
                # One turn of the event loop first: the requests already read by then append
                # too and share this round (a fifth fewer rounds at 2,000 msg/s, and a lower
                # p99, than starting at once; issue 14's measurements in docs/NOTES.md).
                await trio.lowlevel.checkpoint()
                self._round_wanted = trio.Event()
                batch, self._waiting = self._waiting, {}
                forced, self._forced = self._forced, False
                if not batch and not forced:
                    continue
                self._taken += 1
                failed = await self._sync(batch)
                self._end_round(self._taken, batch, failed)
        finally:
            with trio.CancelScope(shield=True):
                await self.sync_process.aclose()

    async def _sync(
        self, batch: dict[PartitionKey, tuple[PartitionLog, SyncMark]]
    ) -> frozenset[PartitionKey]:
        """Sync the data of every log in ``batch``, ``PARTITIONS_PER_REQUEST`` at a time (each
        holds duplicated descriptors until its answer); the keys whose sync failed (the log went
        offline and logged why)."""
        began = trio.current_time()
        failed: set[PartitionKey] = set()
        keys = list(batch)
        for start in range(0, len(keys), PARTITIONS_PER_REQUEST):
            syncs: dict[PartitionKey, tuple[PartitionLog, DataSync]] = {}
            try:
                for key in keys[start : start + PARTITIONS_PER_REQUEST]:
                    partition_log = batch[key][0]
                    try:
                        begun = partition_log.begin_data_sync()
                    except LogError:
                        failed.add(key)
                        continue
                    if begun is not None:  # None: closed meanwhile (deleted), nothing to sync
                        syncs[key] = (partition_log, begun)
                await self._sync_all(syncs, failed)
            finally:
                for _, begun in syncs.values():
                    begun.close()
        self._metrics.sync_round_time.observe(trio.current_time() - began)
        return frozenset(failed)

    async def _sync_all(
        self, syncs: dict[PartitionKey, tuple[PartitionLog, DataSync]], failed: set[PartitionKey]
    ) -> None:
        """Have the sync process fdatasync every descriptor of ``syncs``; record the outcomes
        (each log's sync time in the flush histogram is the whole request's)."""
        descriptors = [fd for _, begun in syncs.values() for fd in begun.descriptors]
        began = trio.current_time()
        results = iter(await self.sync_process.fdatasync(descriptors) if descriptors else [])
        took = trio.current_time() - began
        for key, (partition_log, begun) in syncs.items():
            codes = [next(results) for _ in begun.descriptors]
            error = next((OSError(code, os.strerror(code)) for code in codes if code), None)
            try:
                partition_log.end_data_sync(begun, error)
            except LogError:
                failed.add(key)
                continue
            self._metrics.log_flush_time.observe(took)

    def _end_round(
        self,
        number: int,
        batch: dict[PartitionKey, tuple[PartitionLog, SyncMark]],
        failed: frozenset[PartitionKey],
    ) -> None:
        """Show consumers what round ``number`` synced; wake its waiters."""
        for key, (partition_log, mark) in batch.items():
            if key not in failed:
                partition_log.reveal_synced(mark)
                self._appends.notify(key)  # long-polling fetches may read it now
        if failed:
            self._failures[number] = failed
            self._failures.pop(number - _FAILURES_KEPT, None)
        self._completed = number
        ended, self._round_ended = self._round_ended, trio.Event()
        ended.set()

    async def mark_unclean(self, logs: Sequence[PartitionLog]) -> None:
        """Mark ``logs`` unclean on disk before a request appends to them, several at once in
        worker threads (``PartitionLog.mark_unclean``: the first append to a fresh log costs
        two fsyncs). A failure is left to the append, which marks again and reports it."""
        if not logs:
            return  # the usual case: no nursery to open for every Produce
        async with trio.open_nursery() as nursery:
            for partition_log in logs:
                nursery.start_soon(_mark_one, partition_log, self._marking_threads)

    async def run_periodic_flush(self) -> None:
        """Background task enforcing ``flush.ms``: fully flush logs with data older than that."""
        while True:
            await trio.sleep(1.0)
            now = trio.current_time()
            for key, policy in list(self._dirty.items()):
                partition_log = self._partitions.get(*key)
                if partition_log is None:  # deleted since its append
                    self._dirty.pop(key, None)
                    continue
                if policy.dirty_since is None or not partition_log.is_online:
                    continue
                if (now - policy.dirty_since) * 1000 >= partition_log.config.flush_ms:
                    self._clean(key)
                    try:
                        await _timed_flush(partition_log.flush, self._metrics)
                    except LogError:
                        continue  # the partition went offline and said why; the others go on


async def _mark_one(partition_log: PartitionLog, limiter: trio.CapacityLimiter) -> None:
    with suppress(OSError):  # the append marks it again, and reports a failure
        await trio.to_thread.run_sync(partition_log.mark_unclean, limiter=limiter)


async def _timed_flush(flush: Callable[[], None], metrics: BrokerMetrics) -> None:
    """Run one log's flush in a worker thread; its time goes to the log flush histogram
    (measured in the thread, so waiting for a thread or the event loop is not counted)."""
    await trio.to_thread.run_sync(_time_into, flush, metrics.log_flush_time)


def _time_into(sync: Callable[[], None], histogram: Histogram) -> None:
    started = time.perf_counter()
    sync()
    histogram.observe(time.perf_counter() - started)
