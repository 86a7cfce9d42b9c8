"""CPU time of one call, for the micro-benchmarks that compare two ways of doing one thing
(``bench.record_validation``, ``bench.strict_encoding``): process time rather than wall time,
so another process on the machine does not count, averaged over ``repeat`` calls."""

from __future__ import annotations

import time
from collections.abc import Callable


def cpu_seconds_per_call(call: Callable[[], object], repeat: int) -> float:
    started = time.process_time()
    for _ in range(repeat):
        call()
    return (time.process_time() - started) / repeat
