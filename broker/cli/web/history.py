"""The last hour of the console's samples, in a fixed amount of memory.

Each series (a topic's summed end offsets, its summed committed offsets, a group's lag) is a
ring of ``POINTS`` 64-bit integers beside one shared ring of sample times: 720 points (an hour
at one sample per 5 s) take 5.6 KiB per series, and at most ``MAX_SERIES`` series are kept, so
the history never holds more than about 11 MiB whatever the cluster's size.  A series whose
topic or group disappears is dropped at the next sample.
"""

from __future__ import annotations

import threading
from array import array

Key = tuple[str, str]
"""(kind, name): ("end", topic), ("committed", topic) or ("lag", group)."""
POINTS = 720
MAX_SERIES = 2000
MISSING = -1


class History:
    """Rings of samples, written by the sampler and read by pages (under one lock)."""

    def __init__(self, points: int = POINTS, max_series: int = MAX_SERIES) -> None:
        self.points = points
        self.max_series = max_series
        self.times = array("d", [0.0] * points)
        self.rounds = 0
        self.untracked = 0
        """How many series the last sample could not keep (beyond ``max_series``)."""
        self._series: dict[Key, array] = {}
        self._lock = threading.Lock()

    def record(self, when: float, values: dict[Key, int]) -> None:
        """One sample: ``values`` of every series at time ``when`` (epoch seconds)."""
        with self._lock:
            slot = self.rounds % self.points
            self.times[slot] = when
            for gone in [key for key in self._series if key not in values]:
                del self._series[gone]
            self.untracked = 0
            for key, value in values.items():
                ring = self._series.get(key)
                if ring is None:
                    if len(self._series) >= self.max_series:
                        self.untracked += 1
                        continue
                    ring = self._series[key] = array("q", [MISSING] * self.points)
                ring[slot] = value
            self.rounds += 1

    def series(self, key: Key) -> list[tuple[float, int]]:
        """The (time, value) samples of ``key``, oldest first."""
        with self._lock:
            ring = self._series.get(key)
            if ring is None:
                return []
            count = min(self.rounds, self.points)
            first = self.rounds - count
            slots = [(first + i) % self.points for i in range(count)]
            return [(self.times[slot], ring[slot]) for slot in slots if ring[slot] != MISSING]

    def rate(self, key: Key) -> list[tuple[float, float]]:
        """Per-second growth between consecutive samples (a counter's rate; never negative)."""
        samples = self.series(key)
        return [
            (t1, max(v1 - v0, 0) / (t1 - t0))
            for (t0, v0), (t1, v1) in zip(samples, samples[1:], strict=False)
            if t1 > t0
        ]

    def latest_rate(self, key: Key) -> float | None:
        rates = self.rate(key)
        return rates[-1][1] if rates else None

    def latest(self, key: Key) -> int | None:
        samples = self.series(key)
        return samples[-1][1] if samples else None
