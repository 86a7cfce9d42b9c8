"""Keyed one-shot timers for a sans-IO state machine.

The coordinator's deadlines (session timeouts, rebalance timeouts, the initial rebalance
delay, offset expiration) are kept here as data: whoever drives the coordinator asks
:meth:`Timer.next_deadline` how long it may sleep and runs :meth:`Timer.pop_due` callbacks
when the clock has moved.  Scheduling under an existing key replaces the old deadline, which is how
Kafka's coordinator timer behaves and what "reset the session timeout on every heartbeat"
needs.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable

TimerCallback = Callable[[], None]


class Timer:
    """Deadlines in milliseconds keyed by any hashable value; at most one per key."""

    def __init__(self) -> None:
        # Called when a new deadline becomes the earliest, so that whoever sleeps until the
        # previous earliest deadline can wake up and sleep less.
        self.on_earlier_deadline: Callable[[], None] | None = None
        self._entries: dict[Hashable, tuple[int, int, TimerCallback]] = {}
        # Heap of (deadline, sequence, key); stale entries (rescheduled or cancelled keys) are
        # skipped lazily, which keeps rescheduling a heartbeat O(log n).
        self._heap: list[tuple[int, int, Hashable]] = []
        self._sequence = itertools.count()

    def schedule(self, key: Hashable, deadline_ms: int, callback: TimerCallback) -> None:
        """Run ``callback`` once the clock reaches ``deadline_ms``, replacing ``key``'s timer."""
        earliest = self.next_deadline()
        sequence = next(self._sequence)
        self._entries[key] = (deadline_ms, sequence, callback)
        heapq.heappush(self._heap, (deadline_ms, sequence, key))
        if self.on_earlier_deadline is not None and (earliest is None or deadline_ms < earliest):
            self.on_earlier_deadline()

    def advance(self, key: Hashable, deadline_ms: int) -> None:
        """Move ``key``'s timer to ``deadline_ms`` if it is scheduled for later."""
        entry = self._entries.get(key)
        if entry is not None and deadline_ms < entry[0]:
            self.schedule(key, deadline_ms, entry[2])

    def cancel(self, key: Hashable) -> None:
        self._entries.pop(key, None)

    def cancel_where(self, predicate: Callable[[Hashable], bool]) -> None:
        """Cancel every timer whose key ``predicate`` selects (state handed to another node)."""
        for key in [key for key in self._entries if predicate(key)]:
            del self._entries[key]

    def next_deadline(self) -> int | None:
        """The earliest live deadline, or None when nothing is scheduled."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> TimerCallback | None:
        """Remove and return the earliest callback due at ``now_ms``, or None.

        One at a time, so that a callback cancelling or rescheduling another due timer is
        honoured before that one would run.
        """
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        return self._entries.pop(key)[2]

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            deadline, sequence, key = heap[0]
            entry = self._entries.get(key)
            if entry is not None and entry[1] == sequence:
                return
            heapq.heappop(heap)
