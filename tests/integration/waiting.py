"""Waiting for an effect the broker or a client produces some time after an answer (a
rebalance, a cleaner pass, a released descriptor): poll a condition, fail after a generous bound.

The bound only limits how long a broken broker keeps a test waiting; no test asserts on how long
anything takes.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` once ``timeout_s`` have passed."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        time.sleep(0.05)
