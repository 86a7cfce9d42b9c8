"""When an acknowledgement also means fsynced: Kafka's flush policy with group commit.

By default (``flush.messages`` and ``flush.ms`` unlimited) an ack means the batch reached
the operating system, which survives a crash of the broker process.  When a topic sets
``flush.messages`` (e.g. 1), acks wait for an fsync.  Group commit makes that affordable:
an fsync runs in a worker thread while appends continue, and every producer whose data was
written before that fsync started shares its result, so N concurrent producers cost about
one fsync per round instead of N (``PartitionLog.fsyncs`` counts the rounds).  ``flush.ms``
is enforced by a periodic background task.

If an fsync fails, the partition goes offline and the error propagates to the producers
waiting for it: their requests fail (the connection is closed) rather than being acknowledged
as durable, and their retries get KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

import trio

from log.errors import LogError

if TYPE_CHECKING:
    from broker.server import Broker
    from log.partition_log import PartitionLog

log = logging.getLogger(__name__)


class _SyncState:
    """Group-commit bookkeeping for one partition log."""

    __slots__ = ("appended", "synced", "in_progress", "done", "unflushed_messages", "dirty_since")

    def __init__(self) -> None:
        self.appended = 0  # appends seen (a sequence number)
        self.synced = 0  # appends covered by a completed fsync
        self.in_progress = False
        self.done = trio.Event()
        self.unflushed_messages = 0
        self.dirty_since = 0.0  # trio clock time of the oldest append not yet fsynced


class Durability:
    """Applies the flush policy after appends."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._states: dict[tuple[str, int], _SyncState] = {}

    def _state(self, key: tuple[str, int]) -> _SyncState:
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = _SyncState()
        return state

    async def after_append(self, appends: Iterable[tuple[tuple[str, int], int]]) -> set[tuple[str, int]]:
        """Record appends (partition, record count); wait for fsync where the policy says so.

        Returns the partitions whose fsync failed: their appends must not be acknowledged
        (the log has gone offline and answers KAFKA_STORAGE_ERROR from now on).
        """
        waits = []
        for key, messages in appends:
            partition_log = self._broker.partitions.get(*key)
            if partition_log is None:
                continue
            state = self._state(key)
            if state.synced == state.appended:
                state.dirty_since = trio.current_time()
            state.appended += 1
            state.unflushed_messages += messages
            if state.unflushed_messages >= partition_log.config.flush_messages:
                waits.append((key, partition_log, state))
        failed = set()
        for key, partition_log, state in waits:
            try:
                await self._sync(partition_log, state)
            except LogError:
                failed.add(key)
        return failed

    async def _sync(self, partition_log: PartitionLog, state: _SyncState) -> None:
        """Return once an fsync that started after our append has completed."""
        target = state.appended
        while state.synced < target:
            if state.in_progress:
                await state.done.wait()
                continue
            state.in_progress = True
            covered = state.appended
            state.unflushed_messages = 0
            try:
                await trio.to_thread.run_sync(partition_log.flush)
            finally:
                state.in_progress = False
                done, state.done = state.done, trio.Event()
                done.set()
            state.synced = max(state.synced, covered)

    async def run_periodic_flush(self) -> None:
        """Background task enforcing ``flush.ms``: fsync logs with data older than that."""
        while True:
            await trio.sleep(1.0)
            now = trio.current_time()
            for topic, partition, partition_log in self._broker.partitions.all_logs():
                flush_ms = partition_log.config.flush_ms
                state = self._states.get((topic, partition))
                if state is None or state.synced >= state.appended or flush_ms >= 2**62:
                    continue
                if (now - state.dirty_since) * 1000 >= flush_ms and partition_log.is_online:
                    try:
                        await self._sync(partition_log, state)
                    except LogError:
                        continue  # the partition went offline and said why; the others go on
