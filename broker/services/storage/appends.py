"""Wake-ups for long-polling fetches when data is appended.

A Fetch that has less than ``min_bytes`` to return parks until one of its partitions grows
or ``max_wait_ms`` passes.  Each waiting fetch registers one ``trio.Event`` under every
partition it reads; an append sets the events registered under its partition.  Nothing is
polled and an idle broker does no work.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import trio

PartitionKey = tuple[str, int]


class AppendNotifier:
    """Maps partitions to the events of fetches waiting for them."""

    def __init__(self) -> None:
        self._waiters: defaultdict[PartitionKey, set[trio.Event]] = defaultdict(set)

    def notify(self, key: PartitionKey) -> None:
        """Called after an append to ``key``: wake every fetch waiting on it."""
        waiters = self._waiters.pop(key, None)
        if waiters:
            for event in waiters:
                event.set()

    async def wait_any(self, keys: Iterable[PartitionKey], timeout_s: float) -> bool:
        """Wait until any of ``keys`` gets an append, or the timeout; True if woken."""
        event = trio.Event()
        keys = list(keys)
        for key in keys:
            self._waiters[key].add(event)
        try:
            with trio.move_on_after(timeout_s):
                await event.wait()
        finally:
            for key in keys:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.discard(event)
                    if not waiters:
                        del self._waiters[key]
        return event.is_set()
