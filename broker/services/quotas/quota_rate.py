"""Kafka's windowed rate and its throttle time, sans-IO (times are milliseconds passed in).

A quota is checked against a ``Rate`` over ``quota.window.num`` samples of
``quota.window.size.seconds`` each (Kafka's ``SampledStat``/``Rate``): a value is added to the
current sample (a new one starts once the current one is a window old), samples older than
all windows together are reset, and the rate is the samples' sum over the time they span — at
least ``samples - 1`` whole windows, so a new client is not throttled for its first burst.
A recording that takes the rate above the bound is throttled for
``(rate - bound) / bound * window`` milliseconds (``QuotaUtils.throttleTime``): the time after
which, with nothing more recorded, the rate is back at the bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Windows:
    """``quota.window.num`` samples of ``quota.window.size.seconds`` (as milliseconds)."""

    samples: int = 11
    size_ms: int = 1000


class _Sample:
    __slots__ = ("start_ms", "value")

    def __init__(self, start_ms: int) -> None:
        self.start_ms, self.value = start_ms, 0.0


class Rate:
    """The sum of recorded values per second over Kafka's sampled windows."""

    __slots__ = ("_windows", "_samples", "_current", "last_used_ms")

    def __init__(self, windows: Windows, now_ms: int) -> None:
        self._windows = windows
        self._samples = [_Sample(now_ms)]
        self._current = 0
        self.last_used_ms = now_ms

    def record(self, value: float, now_ms: int) -> None:
        self.last_used_ms = now_ms
        sample = self._samples[self._current]
        if now_ms - sample.start_ms >= self._windows.size_ms:
            self._current = (self._current + 1) % self._windows.samples
            if self._current >= len(self._samples):
                sample = _Sample(now_ms)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.start_ms, sample.value = now_ms, 0.0
        sample.value += value

    def _purge(self, now_ms: int) -> None:
        expire_ms = self._windows.samples * self._windows.size_ms
        for sample in self._samples:
            if now_ms - sample.start_ms >= expire_ms:
                sample.start_ms, sample.value = now_ms, 0.0

    def window_ms(self, now_ms: int) -> float:
        """The time the rate is measured over (Kafka's ``Rate.windowSize``)."""
        self._purge(now_ms)
        elapsed = now_ms - min(sample.start_ms for sample in self._samples)
        size = self._windows.size_ms
        full_windows = elapsed // size
        if full_windows < self._windows.samples - 1:
            elapsed += (self._windows.samples - 1 - full_windows) * size
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> tuple[float, float]:
        """(per-second rate, the window it was measured over in ms)."""
        window = self.window_ms(now_ms)
        return sum(sample.value for sample in self._samples) * 1000 / window, window

    def throttle_ms(self, bound: float, now_ms: int) -> int:
        """How long to hold the client so the rate falls back to ``bound``; 0 within it."""
        rate, window = self.measure(now_ms)
        if rate <= bound:
            return 0
        return round((rate - bound) / bound * window) if bound > 0 else round(window)


class TokenBucket:
    """Kafka's ``TokenBucket`` (KIP-599), for ``controller_mutation_rate``: credits refill at the
    bound per second up to a burst of ``samples x window x bound``; a recording may take them
    below zero, and the quota is exceeded while they are, for ``-credits / bound`` seconds.
    A new bucket starts full, as Kafka's does."""

    __slots__ = ("_windows", "_tokens", "_last_ms", "last_used_ms")

    def __init__(self, windows: Windows, now_ms: int) -> None:
        self._windows = windows
        self._tokens = math.inf
        self._last_ms = self.last_used_ms = now_ms

    def _refill(self, bound: float, now_ms: int) -> float:
        burst = self._windows.samples * self._windows.size_ms / 1000 * bound
        self._tokens = min(burst, self._tokens + bound * (now_ms - self._last_ms) / 1000)
        self._last_ms = self.last_used_ms = now_ms
        return burst

    def record(self, value: float, bound: float, now_ms: int) -> None:
        self._tokens = min(self._refill(bound, now_ms), self._tokens - value)

    def throttle_ms(self, bound: float, now_ms: int) -> int:
        """How long until the credits are back at zero; 0 while there are any."""
        self._refill(bound, now_ms)
        return round(-self._tokens / bound * 1000) if self._tokens < 0 else 0
