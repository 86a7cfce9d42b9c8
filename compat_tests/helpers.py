"""Waiting helpers shared by the scenarios.

Brokers and clients are asynchronous (rebalances, metadata propagation, fetch long-polls), so
scenarios wait for a condition with a deadline rather than sleeping a fixed time: fast when the
broker is fast, and a clear failure instead of a hang when it never happens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from compat_tests.drivers.base import ClientError, Consumer, Received

T = TypeVar("T")
WAIT_S = 30.0


def now_ms() -> int:
    return int(time.time() * 1000)


def poll_until(consumer: Consumer, count: int, timeout_s: float = WAIT_S) -> list[Received]:
    """Poll until exactly ``count`` records arrived (never asks for more), or fail at the deadline."""
    deadline = time.monotonic() + timeout_s
    received: list[Received] = []
    while len(received) < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(
                f"got {len(received)} of {count} records within {timeout_s}s: {received[-3:]}"
            )
        received += consumer.poll(count - len(received), min(remaining, 1.0))
    return received


def poll_for_error(consumer: Consumer, timeout_s: float = WAIT_S) -> ClientError:
    """Poll until the consumer reports an error; records arriving instead fail the scenario."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            records = consumer.poll(10, 1.0)
        except ClientError as exc:
            return exc
        assert not records, f"expected an error, got records {records[:3]}"
    raise AssertionError(f"no error within {timeout_s}s")


def eventually(check: Callable[[], T], timeout_s: float = WAIT_S, interval_s: float = 0.2) -> T:
    """Call ``check`` until it returns without AssertionError/ClientError; re-raise the last one."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return check()
        except (AssertionError, ClientError):
            if time.monotonic() >= deadline:
                raise
        time.sleep(interval_s)
