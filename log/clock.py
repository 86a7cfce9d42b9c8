"""The wall clock, in Kafka's unit: milliseconds since the epoch.

One function type for every wall-clock reading the broker makes (record append times, segment
roll and retention ages, file deletion delays, group and offset expiry), injected from the
top (``Broker(config, clock=...)``) rather than read from ``time`` in each module, so that a
test can move time for all of them at once and no module keeps a clock of its own.
Durations and timeouts use trio's monotonic clock instead; this one is only for times that
are persisted or compared with record timestamps.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    """The system's wall clock, the default ``Clock``."""
    return time.time_ns() // 1_000_000
