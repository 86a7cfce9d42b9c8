"""Where a segment's latest appends start, so that a read at the tail finds its batch at once.

The offset index is sparse (an entry per ``index.interval.bytes``, 4 KiB by default), so finding
the batch that holds an offset walks the batch headers after the nearest entry.  Followers and
consumers read at the tail, where that walk is longest for small batches: with one-record
batches of a replicated low-rate produce, each follower fetch walked about 30 headers in Python,
an eighth of a replicated record's CPU.  The segment notes each append here, from its last
index entry on (a bounded, contiguous run ending at the segment's end), and a lookup in the run
is one bisection.
"""

from __future__ import annotations

from bisect import bisect_left

MAX_NOTED = 512
"""Appends noted at most; the run starts again after it (older offsets use the index)."""


class RecentAppends:
    """The last offsets and start positions of a contiguous run of appends that ends at the
    segment's end."""

    __slots__ = ("_end", "_last_offsets", "_positions")

    def __init__(self) -> None:
        self._last_offsets: list[int] = []
        self._positions: list[int] = []
        self._end = 0

    def note(self, last_offset: int, position: int, end: int) -> None:
        """An append of batches up to ``last_offset``, written from ``position`` to ``end``."""
        if len(self._positions) >= MAX_NOTED or (self._positions and position != self._end):
            self.clear()
        self._last_offsets.append(last_offset)
        self._positions.append(position)
        self._end = end

    def clear(self) -> None:
        """Forget the run (the segment was cut, rebuilt, or a new index entry starts one)."""
        self._last_offsets.clear()
        self._positions.clear()

    def walk_start(self, offset: int) -> int | None:
        """Where the first batch whose last offset is >= ``offset`` starts (the segment's end
        when there is none), if the run tells: every batch before the append found is in a
        noted append ending below ``offset``. None when the run does not reach back that far."""
        found = bisect_left(self._last_offsets, offset)
        if found == 0:
            return None
        return self._positions[found] if found < len(self._positions) else self._end
