"""Wake-ups for long-polling fetches when data is appended.

A Fetch that has less than ``min_bytes`` to return parks until one of its partitions grows
or ``max_wait_ms`` passes.  Each waiting fetch registers one ``trio.Event`` under every
partition it reads; an append sets the events registered under its partition.  Nothing is
polled and an idle broker does no work.

Consumers read up to the high watermark, followers up to the log end, so a move of the high
watermark alone wakes only consumers' fetches: a follower's would re-read every partition of
its fetch for nothing (Kafka's DelayedFetch completes a follower's fetch by bytes only).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import trio

PartitionKey = tuple[str, int]


class Waiter:
    """One parked fetch: its event, and the partitions that woke it (so it re-reads only those)."""

    __slots__ = ("event", "woken")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.woken: set[PartitionKey] = set()


Waiters = defaultdict[PartitionKey, set[Waiter]]


def wake(waiters: Waiters, key: PartitionKey) -> None:
    """Wake and forget every fetch waiting under ``key``."""
    for waiter in waiters.pop(key, ()):
        waiter.woken.add(key)
        waiter.event.set()


class AppendNotifier:
    """Maps partitions to the fetches waiting for them."""

    def __init__(self) -> None:
        self._consumers: Waiters = defaultdict(set)
        self._followers: Waiters = defaultdict(set)

    def notify(self, key: PartitionKey) -> None:
        """Called after an append to ``key`` (or a sync that made one visible): wake every
        fetch waiting on it."""
        wake(self._consumers, key)
        wake(self._followers, key)

    def notify_readable(self, key: PartitionKey) -> None:
        """Called when ``key``'s high watermark moved: wake the consumers' fetches waiting on it."""
        wake(self._consumers, key)

    def notify_replicated(self, key: PartitionKey) -> None:
        """Called after an append to ``key`` that its followers must fetch before consumers may
        read it: wake the followers' fetches (the consumers' wake when the high watermark moves)."""
        wake(self._followers, key)

    async def wait_any(
        self, keys: Iterable[PartitionKey], timeout_s: float, follower: bool = False
    ) -> set[PartitionKey]:
        """Wait until any of ``keys`` gets an append (for a consumer's fetch, not a
        ``follower``'s, also a higher high watermark), or the timeout; the partitions that
        woke it (none: the timeout)."""
        waiters = self._followers if follower else self._consumers
        waiter = Waiter()
        keys = list(keys)
        for key in keys:
            waiters[key].add(waiter)
        try:
            with trio.move_on_after(timeout_s):
                await waiter.event.wait()
        finally:
            for key in keys:
                registered = waiters.get(key)
                if registered is not None:
                    registered.discard(waiter)
                    if not registered:
                        del waiters[key]
        return waiter.woken
