"""The in-flight records of one share-partition: batches of runs, contiguous from the start offset.

Kafka's SharePartition keeps a map from first offset to ``InFlightBatch``: one batch per range
acquired together, holding a single state while all its records share it and exploding into
one state per offset (``offsetState``) once they diverge.  Here a batch holds *runs* instead:
maximal ranges of offsets in the same state, with the same delivery count, owner and lock
deadline.  A uniform batch is one run; a batch whose records diverged is several, split only
where they differ and merged back where they agree again.  The behaviour is Kafka's
per-offset behaviour, but memory grows with the number of distinct ranges rather than with
the number of offsets, so no state read back or sent by a client can make a split cost more
than the ranges it names.

The batches are kept contiguous from the share-partition start offset (SPSO) to the end
offset (exclusive): offsets Kafka would leave as holes in its map (a gap in persisted state,
offsets a compacted log no longer has) are held as explicit AVAILABLE or ARCHIVED runs, which
is how Kafka ends up treating them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, replace

from coordinator.share.model import RecordState

NO_MEMBER = ""


@dataclass(slots=True)
class Run:
    """Offsets ``first``..``last`` in one state; ``member_id``/``deadline_ms`` only while ACQUIRED."""

    first: int
    last: int
    state: RecordState
    delivery_count: int
    member_id: str = NO_MEMBER
    deadline_ms: int = 0

    def same_state(self, other: Run) -> bool:
        return (
            self.state is other.state
            and self.delivery_count == other.delivery_count
            and self.member_id == other.member_id
            and self.deadline_ms == other.deadline_ms
        )


@dataclass(slots=True)
class InFlightBatch:
    """Offsets acquired together (Kafka's ``InFlightBatch``), as contiguous runs."""

    first: int
    last: int
    runs: list[Run]

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    def overlapping(self, lo: int, hi: int) -> Iterator[Run]:
        """The runs that hold any offset of ``lo``..``hi`` (unsplit: read only)."""
        for run in self.runs:
            if run.first > hi:
                return
            if run.last >= lo:
                yield run

    def split(self, lo: int, hi: int) -> list[Run]:
        """Cut runs at ``lo`` and ``hi + 1`` and return those inside ``lo``..``hi``.

        The caller changes the returned runs and then calls :meth:`merge`.
        """
        runs: list[Run] = []
        inside: list[Run] = []
        for run in self.runs:
            if run.last < lo or run.first > hi:
                runs.append(run)
                continue
            if run.first < lo:
                runs.append(replace(run, last=lo - 1))
                run = replace(run, first=lo)
            tail = None
            if run.last > hi:
                tail = replace(run, first=hi + 1)
                run = replace(run, last=hi)
            runs.append(run)
            inside.append(run)
            if tail is not None:
                runs.append(tail)
        self.runs = runs
        return inside

    def merge(self) -> None:
        """Join neighbouring runs that agree again (a batch acknowledged offset by offset)."""
        merged = [self.runs[0]]
        for run in self.runs[1:]:
            if merged[-1].same_state(run):
                merged[-1].last = run.last
            else:
                merged.append(run)
        self.runs = merged

    def drop_before(self, offset: int) -> None:
        """Forget the offsets below ``offset`` (the start offset moved into this batch)."""
        self.first = offset
        runs = [run for run in self.runs if run.last >= offset]
        runs[0].first = max(runs[0].first, offset)
        self.runs = runs


class InFlightRecords:
    """The batches from ``start`` (SPSO) to ``end`` (exclusive), without holes."""

    def __init__(self, start: int) -> None:
        self.start = start
        self.end = start
        self.batches: list[InFlightBatch] = []
        # First offsets of the batches, for bisecting (kept in step with ``batches``).
        self._firsts: list[int] = []

    def append(self, last: int, runs: list[Run]) -> InFlightBatch:
        """Add the batch ``end``..``last`` made of ``runs`` at the end."""
        batch = InFlightBatch(self.end, last, runs)
        self.batches.append(batch)
        self._firsts.append(batch.first)
        self.end = last + 1
        return batch

    def batches_between(self, lo: int, hi: int) -> list[InFlightBatch]:
        """The batches holding any offset of ``lo``..``hi``, in offset order."""
        if hi < lo or hi < self.start or lo >= self.end:
            return []
        index = max(bisect.bisect_right(self._firsts, lo) - 1, 0)
        stop = bisect.bisect_right(self._firsts, hi)
        return self.batches[index:stop]

    def runs(self) -> Iterator[Run]:
        for batch in self.batches:
            yield from batch.runs

    def runs_between(self, lo: int, hi: int) -> Iterator[Run]:
        for batch in self.batches_between(lo, hi):
            yield from batch.overlapping(lo, hi)

    def move_start(self, offset: int) -> None:
        """Move the start forward to ``offset``, forgetting every record below it.

        Past the end, the end moves along: nothing is in flight any more.
        """
        if offset >= self.end:
            self.batches.clear()
        else:
            del self.batches[: bisect.bisect_right(self._firsts, offset) - 1]
            if self.batches[0].first < offset:
                self.batches[0].drop_before(offset)
        self._firsts = [batch.first for batch in self.batches]
        self.start = offset
        self.end = max(self.end, offset)
