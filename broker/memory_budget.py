"""A broker-wide budget for the bytes of requests being received and handled.

Without it, the memory a connection costs is chosen by the client: a length prefix of 100 MB
used to reserve 100 MB at once, and twenty connections trickling such frames held 2.2 GB.
This is Kafka's ``queued.max.request.bytes`` memory pool: a frame's declared size is reserved
before its body is read and returned once the request has been handled.  When the budget is
spent, further connections wait for it before reading their next frame (backpressure; the
kernel's socket buffers then push back on the clients).

Reserving the whole declared size up front (the bytes themselves are allocated as they
arrive) keeps the scheme free of deadlock: a connection that holds a reservation can always
finish its frame, and one that waits holds nothing.  A frame larger than the whole budget
could never be granted, so it is refused instead of waited for.  Slow senders cannot sit on
reservations forever because every frame must arrive within ``socket.request.read.timeout.ms``.
Waiters are served first come, first served, so a large request is not starved by a stream
of small ones.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import trio


class RequestTooLarge(Exception):
    """A frame larger than the whole budget: waiting would never end, so it is refused."""


class MemoryBudget:
    """Counts reserved request bytes against ``capacity``; ``None`` means unbounded.

    ``on_wait`` hears how long each reservation waited, in seconds (0 for most): the request
    queue time of the broker's metrics.
    """

    def __init__(self, capacity: int | None, on_wait: Callable[[float], None] = lambda seconds: None) -> None:
        self.capacity = capacity
        self.available = capacity if capacity is not None else 0
        self._waiters: deque[tuple[int, trio.Event]] = deque()
        self._on_wait = on_wait

    async def acquire(self, size: int) -> None:
        """Reserve ``size`` bytes, waiting in line while the budget is spent.

        The fast path (budget available, nobody waiting) does not yield: reserving must not
        add a scheduler round trip to every request.
        """
        if self.capacity is None:
            self._on_wait(0.0)
            return
        if size > self.capacity:
            raise RequestTooLarge(
                f"frame of {size} bytes exceeds the whole request memory budget "
                f"(queued.max.request.bytes={self.capacity})"
            )
        if not self._waiters and size <= self.available:
            self.available -= size
            self._on_wait(0.0)
            return
        entry = (size, trio.Event())
        self._waiters.append(entry)
        waiting_since = trio.current_time()
        try:
            await entry[1].wait()
            self._on_wait(trio.current_time() - waiting_since)
        except BaseException:
            if entry[1].is_set():
                self.release(size)
            else:
                self._waiters.remove(entry)
                self._grant()
            raise

    def release(self, size: int) -> None:
        """Return a reservation and hand the freed bytes to whoever waits first in line."""
        if self.capacity is None:
            return
        self.available += size
        self._grant()

    def _grant(self) -> None:
        while self._waiters and self._waiters[0][0] <= self.available:
            size, event = self._waiters.popleft()
            self.available -= size
            event.set()
