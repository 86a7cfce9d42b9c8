"""A broker-wide budget for the bytes of requests being received and handled.

This is Kafka's ``queued.max.request.bytes`` memory pool, built so that a few clients cannot
capture it.  The first design reserved each frame's *declared* size before reading its body,
first come first served: three connections that sent the prefix ``100000000`` and nothing
else held the whole 256 MiB, and every other client queued behind them until the read timeout
closed them (29.5 s for a healthy ApiVersions; with 450 such connections nobody was served).
The property kept now is that a well-behaved client's latency does not depend on how many
idle or slow connections exist (within ``max.connections``):

- **Charged as bytes arrive.**  A frame is charged in steps just before the bytes of each step
  are received (``broker.network.frames``), never for what its prefix claims; a prefix alone costs
  nothing.  Holding the budget means sending that many bytes, and every frame must arrive
  whole within ``socket.request.read.timeout.ms``.
- **Small requests are never queued.**  A frame that fits the connection's own 16 KiB receive
  buffer (ApiVersions, Metadata, Heartbeat, OffsetCommit, small Produce) is received there and
  never waits here: that buffer is the connection's reserved slice, paid for by
  ``max.connections``, not by this budget.
- **A bounded share per connection.**  One connection receives one frame at a time, and a
  frame larger than ``share`` (half the budget) is refused at its prefix, so one client can
  never hold more than half of it.
- **No head-of-line blocking.**  Waiters are served in the order their frames began, but one
  that fits what is available is granted even while an older, larger one waits.
- **No deadlock.**  Charging as bytes arrive means frames hold part of what they need, and if
  all of them waited for more, none could finish.  So when the budget is spent, the oldest
  waiting frame that already holds some of it becomes the one frame that may overdraw it, by up to one ``share``, until it
  has been handled: it can always finish (if its client sends) and give its bytes back.
  Memory stays within ``capacity + share``.
- **Waiting is bounded.**  A connection waits for memory within its frame's read timeout;
  past it the connection is closed (``broker.network.frames``).
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import trio


class RequestTooLarge(Exception):
    """A frame larger than one connection's share of the budget: refused instead of read."""


@dataclass(order=True)
class _Waiter:
    started: float  # when its frame began: the order in which waiters are served
    size: int = field(compare=False)
    frame: Hashable = field(compare=False)
    held: int = field(compare=False)  # what the frame holds already: only such may overdraw
    granted: trio.Event = field(compare=False, default_factory=trio.Event)


class MemoryBudget:
    """Counts charged request bytes against ``capacity``; ``None`` means unbounded.

    ``on_wait`` hears, once per request, how long its frame waited for memory, in seconds
    (0 for most): the request queue time of the broker's metrics.
    """

    def __init__(self, capacity: int | None, on_wait: Callable[[float], None] = lambda seconds: None) -> None:
        self.capacity = capacity
        self.share = capacity // 2 if capacity is not None else None
        self.available = capacity if capacity is not None else 0
        self.on_wait = on_wait
        self._waiters: list[_Waiter] = []
        self._overdrawing: Hashable | None = None  # the frame that may overdraw, until released

    def check_frame(self, size: int) -> None:
        """Refuse, before anything is read, a frame that one connection may not hold."""
        if self.share is not None and size > self.share:
            raise RequestTooLarge(
                f"frame of {size} bytes exceeds one connection's share of the request memory budget "
                f"({self.share} bytes, half of queued.max.request.bytes={self.capacity}); "
                "raise queued.max.request.bytes to accept it"
            )

    async def charge(self, size: int, started: float, frame: Hashable, held: int) -> float:
        """Take ``size`` more bytes for ``frame`` (any token naming it until it is released),
        which began at ``started`` (trio time) and holds ``held`` bytes already; returns how
        long it waited.

        The fast path (budget available, nobody waiting) does not yield: charging must not add
        a scheduler round trip to every request."""
        if self.capacity is None:
            return 0.0
        if not self._waiters and size <= self.available:
            self.available -= size
            return 0.0
        waiter = _Waiter(started, size, frame, held)
        insort(self._waiters, waiter)
        self._grant()
        waiting_since = trio.current_time()
        try:
            await waiter.granted.wait()
        except BaseException:
            if waiter.granted.is_set():
                self.release(size, frame)
            else:
                self._waiters.remove(waiter)
                self._grant()
            raise
        return trio.current_time() - waiting_since

    def release(self, size: int, frame: Hashable) -> None:
        """Give back what ``frame`` held (all of it, or what a cancelled step took) and grant
        what now fits."""
        if self.capacity is None:
            return
        if self._overdrawing == frame:
            self._overdrawing = None
        self.available += size
        self._grant()

    def _grant(self) -> None:
        overdraft = self.share or 0
        oldest_holder = next((waiter for waiter in self._waiters if waiter.held), None)
        for waiter in list(self._waiters):
            if waiter.size > self.available:
                owner = self._overdrawing
                may_overdraw = owner == waiter.frame or (owner is None and waiter is oldest_holder)
                if not may_overdraw or self.available - waiter.size < -overdraft:
                    continue
                self._overdrawing = waiter.frame
            self._waiters.remove(waiter)
            self.available -= waiter.size
            waiter.granted.set()
